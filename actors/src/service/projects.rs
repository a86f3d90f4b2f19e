//! Project and clip records: what is stored (bincode in the KV store) and the
//! contract's JSON views of them.

use serde::{Deserialize, Serialize};

use crate::captions::template::CaptionStyle;
use crate::project::stages::reasons::ClipScores;
use crate::project::stages::Stage;
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

    /// The contract's localized status (pt-BR).
    pub fn localized(self) -> &'static str {
        match self {
            ProjectState::Queued => "Na fila",
            ProjectState::Downloading
            | ProjectState::Transcribing
            | ProjectState::Cutting
            | ProjectState::Captioning => "Processando",
            ProjectState::Completed => "Concluído",
            ProjectState::Failed => "Falhou",
            ProjectState::Cancelled => "Cancelado",
        }
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
    /// What the clips should be about (`project::stages::steer`), as given.
    pub prompt: Option<String>,
}

/// A project as stored before `language` existed (read, never written):
/// its fields in order, as two tuples (serde's tuples stop at 16; bincode
/// encodes nested tuples exactly like one sequence).
type ProjectRecordV1 = (
    (
        String,
        String,
        String,
        Source,
        String,
        f64,
        String,
        String,
        CaptionStyle,
        bool,
    ),
    (
        ProjectState,
        [u8; 4],
        Option<String>,
        u64,
        u32,
        Vec<Stage>,
        i64,
        i64,
        u64,
    ),
);

/// Decodes a stored project (of any version this build reads).
pub fn decode_project(bytes: &[u8]) -> Result<ProjectRecord> {
    kv::decode::<ProjectRecord>(bytes)
}

/// Version 3 added `prompt`, version 2 `language`; version 1 (stored before
/// both, also the unversioned layout) is read as `None` for both.
impl crate::storage::record::Record for ProjectRecord {
    const KIND: &'static str = "project";
    const VERSION: u16 = 3;

    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        if version == 2 {
            // Version 2 is version 3 without the last field (`prompt`):
            // append the encoding of `None` and read it as version 3.
            return crate::storage::record::decode_payload(&appended(payload, &None::<String>)?);
        }
        if version != 1 {
            return Err(crate::storage::error::StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            });
        }
        let (head, tail): ProjectRecordV1 = crate::storage::record::decode_payload(payload)?;
        let (
            id,
            user_id,
            title,
            source,
            thumbnail,
            duration_sec,
            preset,
            caption_template,
            style,
            skip_cuts,
        ) = head;
        let (
            state,
            step_progress,
            error,
            reserved_credits,
            clip_count,
            finished,
            created_at,
            updated_at,
            last_event,
        ) = tail;
        Ok(ProjectRecord {
            id,
            user_id,
            title,
            source,
            thumbnail,
            duration_sec,
            preset,
            caption_template,
            style,
            skip_cuts,
            state,
            step_progress,
            error,
            reserved_credits,
            clip_count,
            finished,
            created_at,
            updated_at,
            last_event,
            language: None,
            prompt: None,
        })
    }
}

/// `payload` followed by the bincode encoding of `extra`: an older record
/// whose layout lacks only trailing fields, completed with their defaults.
fn appended<T: Serialize>(payload: &[u8], extra: &T) -> Result<Vec<u8>> {
    let tail = bincode::serde::encode_to_vec(extra, bincode::config::standard())
        .map_err(|e| crate::storage::error::StorageError::Encode(e.to_string()))?;
    Ok([payload, &tail].concat())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentRecord {
    pub id: String,
    pub start: f64,
    pub end: f64,
    pub text: String,
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
    /// Why the clip was picked (one sentence); empty for clips of version 1.
    pub reason: String,
    /// Sub-scores 0–100; zeros for clips of version 1.
    pub scores: ClipScores,
}

/// Version 2 added `reason` and `scores` at the end; version 1 is read with
/// an empty reason and zero sub-scores (what it did not record).
impl crate::storage::record::Record for ClipRecord {
    const KIND: &'static str = "clip";
    const VERSION: u16 = 2;

    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        if version != 1 {
            return Err(crate::storage::error::StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            });
        }
        let defaults = (String::new(), ClipScores::default());
        crate::storage::record::decode_payload(&appended(payload, &defaults)?)
    }
}

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
pub fn count_projects(kv: &dyn KvStore, user_id: &str) -> Result<usize> {
    kv.count_prefix(PROJECT_ORDER, format!("{user_id}/").as_bytes())
}

/// One page of a user's projects, newest first.
pub fn list_projects_page(
    kv: &dyn KvStore,
    user_id: &str,
    skip: usize,
    take: usize,
) -> Result<Vec<ProjectRecord>> {
    let prefix = format!("{user_id}/");
    let mut page = Vec::new();
    for (_, id) in kv.scan_prefix_page(PROJECT_ORDER, prefix.as_bytes(), skip, take)? {
        let id = String::from_utf8_lossy(&id).into_owned();
        if let Some(p) = load_project(kv, user_id, &id)? {
            page.push(p);
        }
    }
    Ok(page)
}

/// Builds the listing index for projects stored before it existed (once).
pub fn ensure_order_index(kv: &dyn KvStore) -> Result<usize> {
    const DONE: &[u8] = b"project_order_v1";
    if kv.get("meta", DONE)?.is_some() {
        return Ok(0);
    }
    let mut ops = Vec::new();
    for (_, v) in kv.scan_prefix(PROJECTS, b"")? {
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
    kv.apply(ops)?;
    Ok(n)
}

pub fn put_project_op(p: &ProjectRecord) -> Result<KvOp> {
    Ok(KvOp::Put {
        tree: PROJECTS.into(),
        key: project_key(&p.user_id, &p.id),
        value: kv::encode(p)?,
    })
}

pub fn owner_of(kv: &dyn KvStore, project_id: &str) -> Result<Option<String>> {
    Ok(kv
        .get(PROJECT_OWNER, project_id.as_bytes())?
        .map(|v| String::from_utf8_lossy(&v).into_owned()))
}

pub fn load_project(
    kv: &dyn KvStore,
    user_id: &str,
    project_id: &str,
) -> Result<Option<ProjectRecord>> {
    kv.get(PROJECTS, &project_key(user_id, project_id))?
        .map(|v| decode_project(&v))
        .transpose()
}

/// A user's projects, newest first.
pub fn list_projects(kv: &dyn KvStore, user_id: &str) -> Result<Vec<ProjectRecord>> {
    let mut out: Vec<ProjectRecord> = kv
        .scan_prefix(PROJECTS, format!("{user_id}/").as_bytes())?
        .into_iter()
        .map(|(_, v)| decode_project(&v))
        .collect::<Result<_>>()?;
    out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    Ok(out)
}

pub fn load_clips(kv: &dyn KvStore, project_id: &str) -> Result<Vec<ClipRecord>> {
    kv.scan_prefix(CLIPS, format!("{project_id}/").as_bytes())?
        .into_iter()
        .map(|(_, v)| kv::decode(&v))
        .collect()
}

/// Every project not in a terminal state (to resume after a restart).
pub fn unfinished_projects(kv: &dyn KvStore) -> Result<Vec<ProjectRecord>> {
    let mut out = Vec::new();
    for (_, v) in kv.scan_prefix(PROJECTS, b"")? {
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

/// Overall percent: stages weighted by their usual share of the work.
pub fn overall_percent(p: &[u8; 4]) -> u8 {
    const WEIGHTS: [f64; 4] = [10.0, 40.0, 5.0, 45.0];
    let done: f64 = p.iter().zip(WEIGHTS).map(|(v, w)| *v as f64 * w).sum();
    (done / 100.0).round().clamp(0.0, 100.0) as u8
}

pub fn duration_display(secs: f64) -> String {
    display_duration(secs)
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
    fn first_version_records_are_upgraded_on_read() {
        let style = CaptionStyle::default();
        let v1: ProjectRecordV1 = (
            (
                "p1".into(),
                "u1".into(),
                "Talk".into(),
                Source::Upload("uploads/x/talk.mp4".into()),
                String::new(),
                12.5,
                "auto".into(),
                "default".into(),
                style.clone(),
                false,
            ),
            (
                ProjectState::Completed,
                [100; 4],
                None,
                1,
                2,
                vec![Stage::Download],
                10,
                20,
                7,
            ),
        );
        // A version-1 value: the bincode payload without a header.
        let v1 = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
        let p = decode_project(&v1).expect("upgraded");
        assert_eq!((p.id.as_str(), p.clip_count, p.last_event), ("p1", 2, 7));
        assert_eq!((&p.style, &p.language), (&style, &None));
        assert_eq!(p.prompt, None);
        let mut current = p.clone();
        current.language = Some("de".into());
        current.prompt = Some("the part about pricing".into());
        let again = decode_project(&kv::encode(&current).unwrap()).expect("current");
        assert_eq!(again, current);
        assert!(decode_project(b"garbage").is_err());
    }

    #[test]
    fn version_2_projects_and_version_1_clips_are_upgraded_on_read() {
        // A version-2 project: every field but `prompt`, behind a v2 header.
        let mut p = decode_project(&kv::encode(&sample_project()).unwrap()).unwrap();
        p.prompt = Some("ignored".into());
        let full = bincode::serde::encode_to_vec(&p, bincode::config::standard()).unwrap();
        // `Some(String)` is 1 tag byte, a 1-byte length and the text.
        let v2_payload = &full[..full.len() - 2 - "ignored".len()];
        let v2 = [&crate::storage::record::header(2)[..], v2_payload].concat();
        let read = decode_project(&v2).expect("upgraded from version 2");
        assert_eq!(read.prompt, None);
        assert_eq!(read.language, p.language);

        // A version-1 clip: the fields before `reason` and `scores`.
        let clip = ClipRecord {
            id: "c1".into(),
            project_id: "p1".into(),
            index: 0,
            title: "Why it works".into(),
            score: 77,
            start: 1.0,
            end: 21.0,
            quality: "1080p".into(),
            video_key: "v".into(),
            subtitle_key: "s".into(),
            vtt_key: "t".into(),
            thumbnail_key: "j".into(),
            segments: vec![],
            created_at: 5,
            reason: String::new(),
            scores: ClipScores::default(),
        };
        let full = bincode::serde::encode_to_vec(&clip, bincode::config::standard()).unwrap();
        let defaults = bincode::serde::encode_to_vec(
            (String::new(), ClipScores::default()),
            bincode::config::standard(),
        )
        .unwrap();
        let v1 = &full[..full.len() - defaults.len()]; // no header: version 1
        let read: ClipRecord = kv::decode(v1).expect("upgraded from version 1");
        assert_eq!(read, clip);
        let mut now = clip.clone();
        now.reason = "Opens with a strong hook (hook 80).".into();
        now.scores.prompt_match = Some(40);
        assert_eq!(
            kv::decode::<ClipRecord>(&kv::encode(&now).unwrap()).unwrap(),
            now
        );
    }

    fn sample_project() -> ProjectRecord {
        ProjectRecord {
            id: "p1".into(),
            user_id: "u1".into(),
            title: "Talk".into(),
            source: Source::Upload("uploads/x/talk.mp4".into()),
            thumbnail: String::new(),
            duration_sec: 12.5,
            preset: "auto".into(),
            caption_template: "default".into(),
            style: CaptionStyle::default(),
            skip_cuts: false,
            state: ProjectState::Queued,
            step_progress: [0; 4],
            error: None,
            reserved_credits: 1,
            clip_count: 0,
            finished: vec![],
            created_at: 1,
            updated_at: 2,
            last_event: 0,
            language: Some("en".into()),
            prompt: None,
        }
    }

    #[test]
    fn localized_status_and_overall() {
        assert_eq!(ProjectState::Queued.localized(), "Na fila");
        assert_eq!(ProjectState::Cutting.localized(), "Processando");
        assert_eq!(ProjectState::Completed.localized(), "Concluído");
        assert_eq!(overall_percent(&[100, 100, 100, 100]), 100);
        assert_eq!(overall_percent(&[100, 50, 0, 0]), 30);
    }
}

/// A clip of one of the user's projects.
pub fn find_clip(kv: &dyn KvStore, user_id: &str, clip_id: &str) -> kv::Result<Option<ClipRecord>> {
    for p in list_projects(kv, user_id)? {
        if let Some(c) = load_clips(kv, &p.id)?.into_iter().find(|c| c.id == clip_id) {
            return Ok(Some(c));
        }
    }
    Ok(None)
}
