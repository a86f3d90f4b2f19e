//! The requests this node forwarded to other nodes, waiting for their
//! responses ([`Replies`]), and the response that comes back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

/// A forwarded response's body: complete as its head came (every JSON
/// answer, handed over with the head), or streamed in chunks.
#[derive(Debug)]
pub enum ReplyBody {
    Complete(Vec<u8>),
    Stream(mpsc::UnboundedReceiver<Vec<u8>>),
}

impl ReplyBody {
    /// The whole body (a stream is read to its end).
    pub async fn collect(self) -> Vec<u8> {
        match self {
            Self::Complete(b) => b,
            Self::Stream(mut rx) => {
                let mut all = Vec::new();
                while let Some(c) = rx.recv().await {
                    all.extend_from_slice(&c);
                }
                all
            }
        }
    }
}

/// A forwarded request waiting for (the rest of) its response.
pub(super) struct Pending {
    pub(super) owner: String,
    /// The owner's relay the request went to: if it is not in the relay
    /// group any more (it failed and was restarted) the request is lost.
    pub(super) relay: ractor::ActorId,
    pub(super) head: Option<oneshot::Sender<(WireHead, ReplyBody)>>,
    /// Where a streamed body's chunks go; created with the head of a
    /// response that is not complete.
    pub(super) body: Option<mpsc::UnboundedSender<Vec<u8>>>,
    pub(super) started: Instant,
}

/// This node's forwarded requests by id, shared by [`Cluster::forward`](super::Cluster::forward)
/// (which adds them) and the [`ReplyRouter`](super::relay::ReplyRouter) (which answers them).
pub struct Replies {
    waiting: Mutex<HashMap<String, Pending>>,
    /// Ids are this process's random prefix and a count: unique without
    /// a system call per request, and never those of an earlier run of
    /// this node (whose late answers would otherwise match).
    prefix: u64,
    count: AtomicU64,
}

impl Default for Replies {
    fn default() -> Self {
        Self {
            waiting: Mutex::default(),
            prefix: rand::random(),
            count: AtomicU64::new(0),
        }
    }
}

impl Replies {
    pub(super) fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new request id.
    pub(super) fn next_id(&self) -> String {
        let n = self.count.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}.{n:x}", self.prefix)
    }
}
