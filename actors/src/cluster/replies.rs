//! The requests this node forwarded to other nodes, waiting for their
//! responses ([`Replies`]), and the response head that comes back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

/// A forwarded request waiting for (the rest of) its response.
pub(super) struct Pending {
    pub(super) owner: String,
    /// The owner's relay the request went to: if it is not in the relay
    /// group any more (it failed and was restarted) the request is lost.
    pub(super) relay: ractor::ActorId,
    pub(super) head: Option<oneshot::Sender<WireHead>>,
    pub(super) body: mpsc::UnboundedSender<Vec<u8>>,
    pub(super) started: Instant,
}

/// This node's forwarded requests by id, shared by [`Cluster::forward`](super::Cluster::forward)
/// (which adds them) and the [`ReplyRouter`](super::relay::ReplyRouter) (which answers them).
#[derive(Default)]
pub struct Replies(Mutex<HashMap<String, Pending>>);

impl Replies {
    pub(super) fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
