//! Project events for Server-Sent Events: every event is written to the KV
//! store (so a client reconnecting with `Last-Event-ID` gets what it missed,
//! even after a restart) and then broadcast to live subscribers. The engine
//! makes and reads them typed ([`ProjectEventBody`]); each payload's serde
//! form is the event's JSON `data` as the stream sends it (the HTTP edge adds
//! the localized `status`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::records::{event_key, overall_percent, ClipRecord, ProjectRecord, ProjectState, EVENTS};
use super::stages::reasons::ClipScores;
use super::stages::Stage;
use crate::storage::kv::{self, KvStore, Result};

/// One SSE event: `id:`, `event:` ([`ProjectEventBody::name`]) and the
/// body's JSON as `data:`. Stored as version 2 (version 1 kept the name
/// and the JSON text; `versions.rs` reads it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectEvent {
    pub id: u64,
    pub body: ProjectEventBody,
}

/// A project state as its name (`queued`, …, `cancelled`), in the JSON and
/// in the stored event alike.
mod state_name {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::projects::records::ProjectState;

    pub fn serialize<S: Serializer>(state: &ProjectState, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(state.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ProjectState, D::Error> {
        let name = String::deserialize(d)?;
        ProjectState::parse(&name).ok_or_else(|| D::Error::custom(format!("unknown state {name}")))
    }
}

/// What happened, one variant per SSE event name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ProjectEventBody {
    Progress(ProgressEvent),
    Clip(ClipEvent),
    Completed(CompletedEvent),
    Failed(FailedEvent),
    Cancelled(CancelledEvent),
    /// Added last: bincode numbers variants in order.
    Render(RenderEvent),
}

/// `progress`: the project's state and each stage's percent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressEvent {
    pub project_id: String,
    #[serde(with = "state_name")]
    pub state: ProjectState,
    /// The stage running or just finished (none while queued).
    pub stage: Option<Stage>,
    #[serde(default)]
    pub step_progress: StepProgress,
    /// Overall, weighted by the stage table.
    #[serde(default)]
    pub percent: u8,
}

/// Each stage's own percent, 0–100.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepProgress {
    pub download: u8,
    pub transcribe: u8,
    pub cut: u8,
    pub caption: u8,
}

impl From<&[u8; 4]> for StepProgress {
    fn from(p: &[u8; 4]) -> Self {
        let at = |s: Stage| p[s as usize];
        Self {
            download: at(Stage::Download),
            transcribe: at(Stage::Transcribe),
            cut: at(Stage::Cut),
            caption: at(Stage::Caption),
        }
    }
}

/// `clip`: a rendered clip was stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClipEvent {
    pub project_id: String,
    pub clip_id: String,
    pub index: u32,
    pub title: String,
    pub score: u8,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub scores: ClipScores,
}

/// `render`: an edited clip's new version is rendering (`percent`), was
/// rendered, or failed (`message`; the previous version stays current).
/// After the last render of a project ends, `completed` is sent again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderEvent {
    pub project_id: String,
    pub clip_id: String,
    pub version: u32,
    /// `rendering`, `rendered` or `failed`.
    pub state: String,
    pub percent: u8,
    pub message: Option<String>,
}

/// `completed`: every clip is ready (`state` is always `completed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletedEvent {
    pub project_id: String,
    #[serde(with = "state_name")]
    pub state: ProjectState,
    pub clips: u32,
}

/// `failed`: why (`state` is always `failed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedEvent {
    pub project_id: String,
    #[serde(with = "state_name")]
    pub state: ProjectState,
    pub message: String,
}

/// `cancelled` (`state` is always `cancelled`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledEvent {
    pub project_id: String,
    #[serde(with = "state_name")]
    pub state: ProjectState,
}

impl ProjectEventBody {
    /// The project's progress as it stands (`stage`: the one running or
    /// just finished).
    pub fn progress(p: &ProjectRecord, stage: Option<Stage>) -> Self {
        Self::Progress(ProgressEvent {
            project_id: p.id.clone(),
            state: p.state,
            stage,
            step_progress: (&p.step_progress).into(),
            percent: overall_percent(&p.step_progress),
        })
    }

    /// A stored clip of project `project_id`.
    pub fn clip(project_id: &str, c: &ClipRecord) -> Self {
        Self::Clip(ClipEvent {
            project_id: project_id.to_string(),
            clip_id: c.id.clone(),
            index: c.index,
            title: c.title.clone(),
            score: c.score,
            reason: c.reason.clone(),
            scores: c.scores.clone(),
        })
    }

    pub fn completed(p: &ProjectRecord) -> Self {
        Self::Completed(CompletedEvent {
            project_id: p.id.clone(),
            state: ProjectState::Completed,
            clips: p.clip_count,
        })
    }

    pub fn failed(p: &ProjectRecord, message: &str) -> Self {
        Self::Failed(FailedEvent {
            project_id: p.id.clone(),
            state: ProjectState::Failed,
            message: message.to_string(),
        })
    }

    pub fn cancelled(p: &ProjectRecord) -> Self {
        Self::Cancelled(CancelledEvent {
            project_id: p.id.clone(),
            state: ProjectState::Cancelled,
        })
    }

    /// The terminal event of a finished project (`None` while it runs).
    pub fn terminal(p: &ProjectRecord) -> Option<Self> {
        match p.state {
            ProjectState::Completed => Some(Self::completed(p)),
            ProjectState::Failed => Some(Self::failed(p, p.error.as_deref().unwrap_or(""))),
            ProjectState::Cancelled => Some(Self::cancelled(p)),
            ProjectState::Queued
            | ProjectState::Downloading
            | ProjectState::Transcribing
            | ProjectState::Cutting
            | ProjectState::Captioning => None,
        }
    }

    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Progress(_) => "progress",
            Self::Clip(_) => "clip",
            Self::Completed(_) => "completed",
            Self::Failed(_) => "failed",
            Self::Cancelled(_) => "cancelled",
            Self::Render(_) => "render",
        }
    }

    /// True for the last event of a stream.
    pub fn is_terminal(&self) -> bool {
        match self {
            Self::Completed(_) | Self::Failed(_) | Self::Cancelled(_) => true,
            Self::Progress(_) | Self::Clip(_) | Self::Render(_) => false,
        }
    }

    /// The project state the event carries (a clip event carries none).
    pub fn state(&self) -> Option<ProjectState> {
        match self {
            Self::Progress(e) => Some(e.state),
            Self::Completed(e) => Some(e.state),
            Self::Failed(e) => Some(e.state),
            Self::Cancelled(e) => Some(e.state),
            Self::Clip(_) | Self::Render(_) => None,
        }
    }

    /// The event's JSON `data` (the payload's serde form).
    pub fn data(&self) -> serde_json::Value {
        let value = match self {
            Self::Progress(e) => serde_json::to_value(e),
            Self::Clip(e) => serde_json::to_value(e),
            Self::Completed(e) => serde_json::to_value(e),
            Self::Failed(e) => serde_json::to_value(e),
            Self::Cancelled(e) => serde_json::to_value(e),
            Self::Render(e) => serde_json::to_value(e),
        };
        // Plain structs with string keys: serializing them cannot fail.
        value.unwrap_or_default()
    }

    /// Reads an event from its name and JSON `data` (how version 1 stored
    /// events).
    pub fn from_json(name: &str, data: &str) -> serde_json::Result<Self> {
        use serde::de::Error;
        Ok(match name {
            "progress" => Self::Progress(serde_json::from_str(data)?),
            "clip" => Self::Clip(serde_json::from_str(data)?),
            "completed" => Self::Completed(serde_json::from_str(data)?),
            "failed" => Self::Failed(serde_json::from_str(data)?),
            "cancelled" => Self::Cancelled(serde_json::from_str(data)?),
            "render" => Self::Render(serde_json::from_str(data)?),
            other => return Err(serde_json::Error::custom(format!("unknown event {other}"))),
        })
    }
}

impl ProjectEvent {
    pub fn is_terminal(&self) -> bool {
        self.body.is_terminal()
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

/// The stored events of `project_id` with an id above `after`, in order
/// (a subscriber's replay; async: [`KvStore::scan_prefix_async`]).
pub async fn events_after(
    kv: &dyn KvStore,
    project_id: &str,
    after: u64,
) -> Result<Vec<ProjectEvent>> {
    let prefix = format!("{project_id}/");
    later(
        prefix.len(),
        kv.scan_prefix_async(EVENTS, prefix.as_bytes()).await?,
        after,
    )
}

/// The events of `rows` (keys: a prefix of `skip` bytes, then the id)
/// with an id above `after`.
fn later(skip: usize, rows: kv::Rows, after: u64) -> Result<Vec<ProjectEvent>> {
    let mut out = Vec::new();
    for (k, v) in rows {
        let id_bytes: [u8; 8] = k[skip..].try_into().unwrap_or([0; 8]);
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

    use crate::projects::records::test_project as project;

    fn clip() -> ClipRecord {
        ClipRecord {
            id: "c1".into(),
            project_id: "p1".into(),
            index: 2,
            title: "Why pasta needs salt".into(),
            score: 81,
            start: 1.0,
            end: 30.0,
            quality: "1080p".into(),
            video_key: "v".into(),
            subtitle_key: "s".into(),
            vtt_key: "t".into(),
            thumbnail_key: "j".into(),
            segments: Vec::new(),
            created_at: 1,
            layout: "single".into(),
            reason: "Opens with a strong hook (hook 85).".into(),
            scores: ClipScores {
                hook: 85,
                completeness: 100,
                emotion: 40,
                pace: 60,
                prompt_match: None,
            },
            cuts: Vec::new(),
            version: 1,
            edits: Default::default(),
            history: Vec::new(),
            render: None,
            current_bytes: 0,
            version_at: 1,
        }
    }

    fn progress(id: u64) -> ProjectEvent {
        ProjectEvent {
            id,
            body: ProjectEventBody::progress(&project(ProjectState::Cutting), Some(Stage::Cut)),
        }
    }

    #[tokio::test]
    async fn events_replay_after_an_id() {
        let kv = MemoryStore::new();
        for id in 1..=5 {
            kv.apply(vec![event_op("p1", &progress(id)).unwrap()])
                .unwrap();
        }
        kv.apply(vec![event_op("p10", &progress(9)).unwrap()])
            .unwrap();
        let got = events_after(&kv, "p1", 2).await.unwrap();
        let ids: Vec<u64> = got.iter().map(|e| e.id).collect();
        assert_eq!(ids, [3, 4, 5]);
        assert_eq!(got[0], progress(3), "a stored event reads back the same");
    }

    /// The JSON `data` of each event is what the stream sent before events
    /// were typed (built here the way the engine built it then).
    #[test]
    fn the_json_data_is_the_streams() {
        let mut p = project(ProjectState::Cutting);
        p.step_progress = [100, 100, 40, 0];
        let e = ProjectEventBody::progress(&p, Some(Stage::Cut));
        assert_eq!(e.name(), "progress");
        assert_eq!(
            e.data(),
            serde_json::json!({
                "projectId": "p1", "state": "cutting", "stage": "cut",
                "stepProgress": {"download": 100, "transcribe": 100, "cut": 40, "caption": 0},
                "percent": 52,
            })
        );
        let queued = ProjectEventBody::progress(&project(ProjectState::Queued), None);
        assert_eq!(queued.data()["stage"], serde_json::Value::Null);
        assert_eq!(queued.data()["state"], "queued");

        let c = clip();
        assert_eq!(
            ProjectEventBody::clip("p1", &c).data(),
            serde_json::json!({ "projectId": "p1", "clipId": c.id, "index": c.index,
                "title": c.title, "score": c.score, "reason": c.reason, "scores": c.scores })
        );
        p.clip_count = 3;
        assert_eq!(
            ProjectEventBody::completed(&p).data(),
            serde_json::json!({ "projectId": "p1", "state": "completed", "clips": 3 })
        );
        assert_eq!(
            ProjectEventBody::failed(&p, "no speech").data(),
            serde_json::json!({ "projectId": "p1", "state": "failed", "message": "no speech" })
        );
        assert_eq!(
            ProjectEventBody::cancelled(&p).data(),
            serde_json::json!({ "projectId": "p1", "state": "cancelled" })
        );
        for e in [
            ProjectEventBody::completed(&p),
            ProjectEventBody::failed(&p, "x"),
            ProjectEventBody::clip("p1", &c),
            ProjectEventBody::progress(&p, None),
        ] {
            let back = ProjectEventBody::from_json(e.name(), &e.data().to_string()).unwrap();
            assert_eq!(back, e, "{} reads back from its JSON", e.name());
        }
    }

    #[test]
    fn only_the_last_events_are_terminal() {
        let p = project(ProjectState::Completed);
        assert!(ProjectEventBody::completed(&p).is_terminal());
        assert!(ProjectEventBody::failed(&p, "x").is_terminal());
        assert!(ProjectEventBody::cancelled(&p).is_terminal());
        assert!(!ProjectEventBody::progress(&p, None).is_terminal());
        assert_eq!(
            ProjectEventBody::terminal(&p),
            Some(ProjectEventBody::completed(&p))
        );
        assert_eq!(
            ProjectEventBody::terminal(&project(ProjectState::Captioning)),
            None
        );
    }

    #[tokio::test]
    async fn subscribers_get_published_events() {
        let hub = EventHub::new();
        let mut a = hub.subscribe("p");
        let mut b = hub.subscribe("p");
        let done = ProjectEventBody::completed(&project(ProjectState::Completed));
        hub.publish("p", ProjectEvent { id: 1, body: done });
        assert_eq!(a.recv().await.unwrap().id, 1);
        assert_eq!(b.recv().await.unwrap().body.name(), "completed");
        assert_eq!(hub.channels(), 0, "a terminal event closes the channel");
    }
}
