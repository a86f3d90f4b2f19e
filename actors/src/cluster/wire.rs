//! What travels between nodes: JSON payloads inside ractor_cluster
//! messages, and the process-group names the stage workers join.

use ractor::BytesConvertable;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Every node's stage worker.
pub const WORKERS: &str = "clipforge.workers";

/// The group holding only `node`'s stage worker.
pub fn worker_group(node: &str) -> String {
    format!("clipforge.worker.{node}")
}

/// A JSON-encoded payload on the cluster wire; `None` when a frame does not
/// decode (a peer of another version), which the receiver drops.
#[derive(Clone, Debug)]
pub struct Wire<T>(pub Option<T>);

impl<T: Serialize + DeserializeOwned> BytesConvertable for Wire<T> {
    fn into_bytes(self) -> Vec<u8> {
        serde_json::to_vec(&self.0).unwrap_or_default()
    }
    fn from_bytes(bytes: Vec<u8>) -> Self {
        match serde_json::from_slice(&bytes) {
            Ok(v) => Wire(v),
            Err(e) => {
                tracing::warn!(error = %e, "cluster: undecodable stage message");
                Wire(None)
            }
        }
    }
}
