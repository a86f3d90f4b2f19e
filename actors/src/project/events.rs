//! Project events for Server-Sent Events: every event is written to the KV
//! store (so a client reconnecting with `Last-Event-ID` gets what it missed,
//! even after a restart) and then broadcast to live subscribers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::records::{event_key, EVENTS};
use crate::storage::kv::{self, KvStore, Result};

/// One SSE event: `id:`, `event:` and a JSON `data:` line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectEvent {
    pub id: u64,
    /// progress, clip, completed, failed, cancelled.
    pub kind: String,
    /// JSON text.
    pub data: String,
}
crate::record!(ProjectEvent, "project event", 1);

impl ProjectEvent {
    pub fn is_terminal(&self) -> bool {
        matches!(self.kind.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// Live subscribers per project.
#[derive(Clone, Default)]
pub struct EventHub {
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<ProjectEvent>>>>,
}

impl EventHub {
    pub fn new() -> Self {
        Self::default()
    }

    /// A receiver for events published from now on.
    pub fn subscribe(&self, project_id: &str) -> broadcast::Receiver<ProjectEvent> {
        let mut map = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(project_id.to_string())
            .or_insert_with(|| broadcast::channel(256).0)
            .subscribe()
    }

    /// Sends to live subscribers (the event must already be stored).
    pub fn publish(&self, project_id: &str, event: ProjectEvent) {
        let mut map = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = map.get(project_id) {
            let _ = tx.send(event.clone());
            if event.is_terminal() || tx.receiver_count() == 0 {
                map.remove(project_id);
            }
        }
    }

    /// Number of projects with live subscribers.
    pub fn channels(&self) -> usize {
        self.channels.lock().map(|m| m.len()).unwrap_or(0)
    }
}

/// Stored events of a project with an id greater than `after`, in order.
pub fn events_after(kv: &dyn KvStore, project_id: &str, after: u64) -> Result<Vec<ProjectEvent>> {
    let prefix = format!("{project_id}/");
    let mut out = Vec::new();
    for (k, v) in kv.scan_prefix(EVENTS, prefix.as_bytes())? {
        let id_bytes: [u8; 8] = k[prefix.len()..].try_into().unwrap_or([0; 8]);
        if u64::from_be_bytes(id_bytes) > after {
            out.push(kv::decode(&v)?);
        }
    }
    Ok(out)
}

pub fn event_op(project_id: &str, event: &ProjectEvent) -> Result<kv::KvOp> {
    Ok(kv::KvOp::Put {
        tree: EVENTS.into(),
        key: event_key(project_id, event.id),
        value: kv::encode(event)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::MemoryStore;

    #[test]
    fn events_replay_after_an_id() {
        let kv = MemoryStore::new();
        for id in 1..=5 {
            let e = ProjectEvent {
                id,
                kind: "progress".into(),
                data: format!("{{\"n\":{id}}}"),
            };
            kv.apply(vec![event_op("p1", &e).unwrap()]).unwrap();
        }
        let other = ProjectEvent {
            id: 9,
            kind: "progress".into(),
            data: "{}".into(),
        };
        kv.apply(vec![event_op("p10", &other).unwrap()]).unwrap();
        let ids: Vec<u64> = events_after(&kv, "p1", 2)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, [3, 4, 5]);
    }

    #[tokio::test]
    async fn subscribers_get_published_events() {
        let hub = EventHub::new();
        let mut a = hub.subscribe("p");
        let mut b = hub.subscribe("p");
        hub.publish(
            "p",
            ProjectEvent {
                id: 1,
                kind: "completed".into(),
                data: "{}".into(),
            },
        );
        assert_eq!(a.recv().await.unwrap().id, 1);
        assert_eq!(b.recv().await.unwrap().kind, "completed");
        assert_eq!(hub.channels(), 0, "a terminal event closes the channel");
    }
}
