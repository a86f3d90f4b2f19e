//! Project and clip records: what is stored (bincode in the KV store) and the
//! contract's JSON views of them.

use serde::{Deserialize, Serialize};

pub use super::clip_history::SegmentRecord;
use super::clip_history::{ClipEdits, ClipRender, ClipVersion};
use crate::captions::template::CaptionStyle;
use crate::projects::reframe::{AspectRatio, Layout};
// `ProjectRecord` and `ClipRecord` implement `Record` (schema versions and
// upgrades of older layouts) in `project_versions.rs`.
use crate::projects::stages::reasons::ClipScores;
use crate::projects::stages::Stage;
use crate::storage::kv::{self, KvOp, KvStore, Result};
use crate::transcript::display_duration;

pub const PROJECTS: &str = "projects";
pub const PROJECT_OWNER: &str = "project_owner";
pub const CLIPS: &str = "clips";
/// `user/<newest-first time>/<project>` → project id: listings read one
/// page of keys instead of decoding every project of the user.
pub const PROJECT_ORDER: &str = "project_order";
pub const EVENTS: &str = "project_events";

/// The machine state of a project (DESIGN.md's `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProjectState {
    Queued,
    Downloading,
    Transcribing,
    Cutting,
    Captioning,
    Completed,
    Failed,
    Cancelled,
}

impl ProjectState {
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectState::Queued => "queued",
            ProjectState::Downloading => "downloading",
            ProjectState::Transcribing => "transcribing",
            ProjectState::Cutting => "cutting",
            ProjectState::Captioning => "captioning",
            ProjectState::Completed => "completed",
            ProjectState::Failed => "failed",
            ProjectState::Cancelled => "cancelled",
        }
    }

    /// The state named by [`Self::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [
            ProjectState::Queued,
            ProjectState::Downloading,
            ProjectState::Transcribing,
            ProjectState::Cutting,
            ProjectState::Captioning,
            ProjectState::Completed,
            ProjectState::Failed,
            ProjectState::Cancelled,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ProjectState::Completed | ProjectState::Failed | ProjectState::Cancelled
        )
    }

    pub fn running(stage: Stage) -> Self {
        match stage {
            Stage::Download => ProjectState::Downloading,
            Stage::Transcribe => ProjectState::Transcribing,
            Stage::Cut => ProjectState::Cutting,
            Stage::Caption => ProjectState::Captioning,
        }
    }
}

/// Where the source video comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Source {
    Url(String),
    /// An object key from `POST /upload`.
    Upload(String),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: String,
    pub user_id: String,
    pub title: String,
    pub source: Source,
    pub thumbnail: String,
    /// Seconds to process (the requested segment, bounded by the source).
    pub duration_sec: f64,
    pub preset: String,
    /// As given at creation (id, preset name or JSON).
    pub caption_template: String,
    /// The resolved, clamped style used for rendering.
    pub style: CaptionStyle,
    pub skip_cuts: bool,
    pub state: ProjectState,
    /// download, transcribe, cut, caption: 0–100.
    pub step_progress: [u8; 4],
    pub error: Option<String>,
    pub reserved_credits: u64,
    pub clip_count: u32,
    /// Stages finished so far (resume point after a restart).
    pub finished: Vec<Stage>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Id of the last event written for this project.
    pub last_event: u64,
    /// The spoken language: the source's (from its metadata) until
    /// transcription ran, then the one it used (given or detected).
    pub language: Option<String>,
    /// The clips' layout (`auto`: chosen per clip).
    pub layout: Layout,
    /// The clips' frame shape.
    pub aspect_ratio: AspectRatio,
    /// What the clips should be about (`projects::stages::steer`), as given.
    pub prompt: Option<String>,
    /// Cut filler words ("um", "uh", a "you know" set off by pauses) out
    /// of the clips (`projects::stages::fillers`).
    pub remove_fillers: bool,
    /// `language` is the user's choice: transcription uses it as it is.
    /// Otherwise it is the source's declared language (a prior for
    /// detection) until transcription ran.
    pub language_given: bool,
    /// How sure detection was of `language` (1 when given); `None` until
    /// transcription ran.
    pub language_probability: Option<f64>,
}

/// Decodes a stored project (of any version this build reads; older ones
/// in `project_versions.rs`).
pub fn decode_project(bytes: &[u8]) -> Result<ProjectRecord> {
    kv::decode::<ProjectRecord>(bytes)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipRecord {
    pub id: String,
    pub project_id: String,
    pub index: u32,
    pub title: String,
    pub score: u8,
    pub start: f64,
    pub end: f64,
    pub quality: String,
    pub video_key: String,
    pub subtitle_key: String,
    pub vtt_key: String,
    pub thumbnail_key: String,
    pub segments: Vec<SegmentRecord>,
    pub created_at: i64,
    /// The layout the clip was rendered with (`single`, `split`, …).
    pub layout: String,
    /// Why the clip was picked (one sentence); empty for clips stored
    /// before reasons existed.
    pub reason: String,
    /// Sub-scores 0–100; zeros for clips stored before they existed.
    pub scores: ClipScores,
    /// Spans of the source (seconds) cut out of the clip (filler words);
    /// `segments` are on the cut clip's timeline.
    pub cuts: Vec<(f64, f64)>,
    /// The version the fields above describe (1: as the pipeline made it;
    /// see `clip_history`).
    pub version: u32,
    /// What this version was rendered with beyond its range.
    pub edits: ClipEdits,
    /// Earlier versions, oldest first (their files are kept).
    pub history: Vec<ClipVersion>,
    /// The render the last edit asked for, while it runs or when it failed.
    pub render: Option<ClipRender>,
    /// Bytes of the current version's files counted against the quota.
    pub current_bytes: u64,
    /// When the current version was made (`created_at` for version 1).
    pub version_at: i64,
}

impl ClipRecord {
    /// Seconds of the rendered clip: its source range less the cuts.
    pub fn duration(&self) -> f64 {
        let removed: f64 = self.cuts.iter().map(|(a, b)| (b - a).max(0.0)).sum();
        (self.end - self.start - removed).max(0.0)
    }

    /// The current version as a history entry (`bytes`: its files' bytes
    /// counted against the quota).
    pub fn current(&self, bytes: u64) -> ClipVersion {
        ClipVersion {
            version: self.version,
            title: self.title.clone(),
            start: self.start,
            end: self.end,
            cuts: self.cuts.clone(),
            layout: self.layout.clone(),
            quality: self.quality.clone(),
            video_key: self.video_key.clone(),
            subtitle_key: self.subtitle_key.clone(),
            vtt_key: self.vtt_key.clone(),
            thumbnail_key: self.thumbnail_key.clone(),
            segments: self.segments.clone(),
            edits: self.edits.clone(),
            created_at: self.version_at,
            bytes,
        }
    }

    /// Makes `v` the current version; the one it replaces joins the
    /// history (with `bytes` of its own, kept from its entry).
    pub fn make_current(&mut self, v: ClipVersion) {
        // Version 0 (an added clip before its first render) had no files.
        if self.version > 0 {
            let old = self.current(self.current_bytes);
            self.history.push(old);
        }
        self.version = v.version;
        self.title = v.title;
        self.start = v.start;
        self.end = v.end;
        self.cuts = v.cuts;
        self.layout = v.layout;
        self.quality = v.quality;
        self.video_key = v.video_key;
        self.subtitle_key = v.subtitle_key;
        self.vtt_key = v.vtt_key;
        self.thumbnail_key = v.thumbnail_key;
        self.segments = v.segments;
        self.edits = v.edits;
        self.version_at = v.created_at;
        self.current_bytes = v.bytes;
    }

    /// False for a clip added after processing until its first render is
    /// done (version 0: no files yet).
    pub fn playable(&self) -> bool {
        self.version > 0
    }

    /// The newest version number used so far (a running render's included).
    pub fn latest_version(&self) -> u32 {
        let rendering = self
            .render
            .as_ref()
            .filter(|r| r.state == super::clip_history::RenderState::Rendering)
            .map_or(0, |r| r.version);
        self.history
            .iter()
            .map(|v| v.version)
            .chain([self.version, rendering])
            .max()
            .unwrap_or(1)
    }

    /// Bytes of every version's files counted against the quota.
    pub fn counted_bytes(&self) -> u64 {
        self.current_bytes + self.history.iter().map(|v| v.bytes).sum::<u64>()
    }
}
// Its stored versions (`Record` impl): `project_versions.rs`.

pub fn project_key(user_id: &str, project_id: &str) -> Vec<u8> {
    format!("{user_id}/{project_id}").into_bytes()
}

pub fn clip_key(project_id: &str, index: u32) -> Vec<u8> {
    let mut k = format!("{project_id}/").into_bytes();
    k.extend_from_slice(&index.to_be_bytes());
    k
}

pub fn event_key(project_id: &str, id: u64) -> Vec<u8> {
    let mut k = format!("{project_id}/").into_bytes();
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// Sorts newest first (then by id) under the user's prefix.
pub fn order_key(p: &ProjectRecord) -> Vec<u8> {
    let newest_first = i64::MAX - p.created_at.max(0);
    format!("{}/{newest_first:020}/{}", p.user_id, p.id).into_bytes()
}

/// Everything stored when a project is created: the record, its owner and
/// its place in the user's listing.
pub fn new_project_ops(p: &ProjectRecord) -> Result<Vec<KvOp>> {
    Ok(vec![
        put_project_op(p)?,
        KvOp::Put {
            tree: PROJECT_OWNER.into(),
            key: p.id.as_bytes().to_vec(),
            value: p.user_id.as_bytes().to_vec(),
        },
        KvOp::Put {
            tree: PROJECT_ORDER.into(),
            key: order_key(p),
            value: p.id.as_bytes().to_vec(),
        },
    ])
}

/// How many projects the user has (keys of the listing index).
pub async fn count_projects(kv: &dyn KvStore, user_id: &str) -> Result<usize> {
    let prefix = format!("{user_id}/");
    kv.count_prefix_async(PROJECT_ORDER, prefix.as_bytes())
        .await
}

/// One page of a user's projects, newest first (a request's read, async).
pub async fn list_projects_page(
    kv: &dyn KvStore,
    user_id: &str,
    skip: usize,
    take: usize,
) -> Result<Vec<ProjectRecord>> {
    let prefix = format!("{user_id}/");
    let ids = kv
        .scan_prefix_page_async(PROJECT_ORDER, prefix.as_bytes(), skip, take)
        .await?;
    let mut page = Vec::new();
    for (_, id) in ids {
        let id = String::from_utf8_lossy(&id).into_owned();
        if let Some(p) = load_project_async(kv, user_id, &id).await? {
            page.push(p);
        }
    }
    Ok(page)
}

/// Builds the listing index for projects stored before it existed (once).
pub async fn ensure_order_index(kv: &dyn KvStore) -> Result<usize> {
    const DONE: &[u8] = b"project_order_v1";
    if kv.get_async("meta", DONE).await?.is_some() {
        return Ok(0);
    }
    let mut ops = Vec::new();
    for (_, v) in kv.scan_prefix_async(PROJECTS, b"").await? {
        let p = decode_project(&v)?;
        ops.push(KvOp::Put {
            tree: PROJECT_ORDER.into(),
            key: order_key(&p),
            value: p.id.as_bytes().to_vec(),
        });
    }
    let n = ops.len();
    ops.push(KvOp::Put {
        tree: "meta".into(),
        key: DONE.to_vec(),
        value: Vec::new(),
    });
    kv.apply_async(ops).await?;
    Ok(n)
}

pub fn put_project_op(p: &ProjectRecord) -> Result<KvOp> {
    Ok(KvOp::Put {
        tree: PROJECTS.into(),
        key: project_key(&p.user_id, &p.id),
        value: kv::encode(p)?,
    })
}

/// The user who owns the project.
pub async fn owner_of_async(kv: &dyn KvStore, project_id: &str) -> Result<Option<String>> {
    Ok(kv
        .get_async(PROJECT_OWNER, project_id.as_bytes())
        .await?
        .map(|v| String::from_utf8_lossy(&v).into_owned()))
}

/// The user's project, if stored.
pub async fn load_project_async(
    kv: &dyn KvStore,
    user_id: &str,
    project_id: &str,
) -> Result<Option<ProjectRecord>> {
    let key = project_key(user_id, project_id);
    kv.get_async(PROJECTS, &key)
        .await?
        .map(|v| decode_project(&v))
        .transpose()
}

/// A user's projects, newest first.
pub async fn list_projects_async(kv: &dyn KvStore, user_id: &str) -> Result<Vec<ProjectRecord>> {
    let prefix = format!("{user_id}/");
    let mut out: Vec<ProjectRecord> = kv
        .scan_prefix_async(PROJECTS, prefix.as_bytes())
        .await?
        .into_iter()
        .map(|(_, v)| decode_project(&v))
        .collect::<Result<_>>()?;
    out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    Ok(out)
}

/// A project's clips, in index order.
pub async fn load_clips_async(kv: &dyn KvStore, project_id: &str) -> Result<Vec<ClipRecord>> {
    let prefix = format!("{project_id}/");
    decode_values(kv.scan_prefix_async(CLIPS, prefix.as_bytes()).await?)
}

fn decode_values<T: kv::Record>(rows: kv::Rows) -> Result<Vec<T>> {
    rows.into_iter().map(|(_, v)| kv::decode(&v)).collect()
}

/// Every project not in a terminal state (to resume after a restart).
pub async fn unfinished_projects(kv: &dyn KvStore) -> Result<Vec<ProjectRecord>> {
    let mut out = Vec::new();
    for (_, v) in kv.scan_prefix_async(PROJECTS, b"").await? {
        let p = decode_project(&v)?;
        if !p.state.is_terminal() {
            out.push(p);
        }
    }
    Ok(out)
}

pub use crate::accounts::{date_of, iso8601, now_ms};

/// `stepProgress` as the contract's JSON object.
pub fn step_progress_json(p: &[u8; 4]) -> serde_json::Value {
    serde_json::json!({ "download": p[0], "transcribe": p[1], "cut": p[2], "caption": p[3] })
}

/// Overall percent: stages weighted by their share in the stage table.
pub use super::stages::table::overall_percent;

pub fn duration_display(secs: f64) -> String {
    display_duration(secs)
}

/// A clip of one of the user's projects.
pub async fn find_clip(
    kv: &dyn KvStore,
    user_id: &str,
    clip_id: &str,
) -> kv::Result<Option<ClipRecord>> {
    let prefix = format!("{user_id}/");
    for (_, v) in kv.scan_prefix_async(PROJECTS, prefix.as_bytes()).await? {
        let p = decode_project(&v)?;
        let clips = load_clips_async(kv, &p.id).await?;
        if let Some(c) = clips.into_iter().find(|c| c.id == clip_id) {
            return Ok(Some(c));
        }
    }
    Ok(None)
}

/// A project `p1` of user `u1` in `state` (tests).
#[cfg(test)]
pub(crate) fn test_project(state: ProjectState) -> ProjectRecord {
    ProjectRecord {
        id: "p1".into(),
        user_id: "u1".into(),
        title: "Talk".into(),
        source: Source::Url("https://youtu.be/x".into()),
        thumbnail: String::new(),
        duration_sec: 60.0,
        preset: "auto".into(),
        caption_template: "default".into(),
        style: crate::captions::template::CaptionStyle::default(),
        skip_cuts: false,
        state,
        step_progress: [0; 4],
        error: None,
        reserved_credits: 1,
        clip_count: 0,
        finished: Vec::new(),
        created_at: 1,
        updated_at: 1,
        last_event: 0,
        language: None,
        layout: crate::projects::reframe::Layout::Auto,
        aspect_ratio: crate::projects::reframe::AspectRatio::Vertical,
        prompt: None,
        remove_fillers: false,
        language_given: false,
        language_probability: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_795_391_406_123), "2026-11-22T23:50:06.123Z");
        assert_eq!(date_of(951_782_400_000), "2000-02-29");
    }

    #[test]
    fn state_names_and_overall() {
        for st in ["queued", "cutting", "completed", "cancelled"] {
            assert_eq!(ProjectState::parse(st).map(ProjectState::as_str), Some(st));
        }
        assert_eq!(ProjectState::parse("Concluído"), None);
        assert_eq!(overall_percent(&[100, 100, 100, 100]), 100);
        assert_eq!(overall_percent(&[100, 50, 0, 0]), 30);
    }
}
