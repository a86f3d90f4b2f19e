//! The heartbeat one node's membership actor casts to every other node's
//! every interval: who it is, its roles, its load and when it was sent.

use ractor::BytesConvertable;
use serde::{Deserialize, Serialize};

/// A node's load: `busy` of `slots` project slots in use, and (on a
/// worker) `stages` stage jobs running or queued for `stage_slots` slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Load {
    pub busy: u32,
    pub slots: u32,
    #[serde(default)]
    pub stages: u32,
    #[serde(default)]
    pub stage_slots: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub node: String,
    /// "api", "worker", "scheduler".
    pub roles: Vec<String>,
    pub load: Load,
    /// The sender's wall clock (ms since the Unix epoch); informative only,
    /// liveness is judged on the receiver's clock.
    pub sent_ms: u64,
    /// The sender's cluster address (`host:port`).
    pub addr: String,
    /// Addresses of the peers the sender has heard from (with TLS, nodes
    /// dial these themselves instead of ractor_cluster's transitive mode).
    #[serde(default)]
    pub peers: Vec<String>,
}

/// JSON on the wire: readable, and a peer of another version that adds
/// fields still decodes. A frame that does not decode becomes a heartbeat
/// with an empty node name, which the receiver drops (with a warning).
impl BytesConvertable for Heartbeat {
    fn into_bytes(self) -> Vec<u8> {
        serde_json::to_vec(&self).unwrap_or_default()
    }
    fn from_bytes(bytes: Vec<u8>) -> Self {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cluster: undecodable heartbeat");
            Heartbeat {
                node: String::new(),
                roles: Vec::new(),
                load: Load::default(),
                sent_ms: 0,
                addr: String::new(),
                peers: Vec::new(),
            }
        })
    }
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
