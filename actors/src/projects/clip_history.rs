//! What the clip editor keeps in a clip record (issue 29): the edits the
//! current version was rendered with, the earlier versions (their files
//! stay until the project is deleted) and the render under way or the last
//! one that failed. Stored inside [`super::records::ClipRecord`] (version 4).

use serde::{Deserialize, Serialize};

use crate::captions::template::CaptionStyle;
use crate::projects::reframe::{AspectRatio, Layout};

/// One transcript segment of a clip, as stored with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentRecord {
    pub id: String,
    pub start: f64,
    pub end: f64,
    pub text: String,
}

/// What a version was rendered with beyond its range: the fixed words, and
/// the layout, frame shape and caption style when they differ from the
/// project's (`None`: the project's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipEdits {
    /// `(index in the project's transcript, text)`: the word's new text
    /// (empty: left out of the captions). Timings are the transcript's.
    pub words: Vec<(u32, String)>,
    pub layout: Option<Layout>,
    pub aspect_ratio: Option<AspectRatio>,
    /// The caption template as given (id, preset name) and its style.
    pub caption_template: Option<String>,
    pub style: Option<CaptionStyle>,
}

impl ClipEdits {
    /// The text of transcript word `index` in this version (`None`: as
    /// transcribed).
    pub fn word(&self, index: usize) -> Option<&str> {
        self.words
            .iter()
            .find(|(i, _)| *i as usize == index)
            .map(|(_, t)| t.as_str())
    }
}

/// One rendered version of a clip: everything that differs between
/// versions (the clip's id, scores and reason do not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipVersion {
    /// 1: as the pipeline made it; each render or restore adds one.
    pub version: u32,
    pub title: String,
    pub start: f64,
    pub end: f64,
    pub cuts: Vec<(f64, f64)>,
    /// The layout drawn (never `auto`) and the resolution label.
    pub layout: String,
    pub quality: String,
    pub video_key: String,
    pub subtitle_key: String,
    pub vtt_key: String,
    pub thumbnail_key: String,
    pub segments: Vec<SegmentRecord>,
    pub edits: ClipEdits,
    pub created_at: i64,
    /// Bytes of its files counted against the owner's storage quota (0 for
    /// the pipeline's own version 1 and for restores, which share files).
    pub bytes: u64,
}

/// The state of the latest render asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RenderState {
    Rendering,
    Failed,
}

/// A render asked for by an edit: running (on `node`), or failed (the
/// previous version stays current and `error` says why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipRender {
    /// The version it makes.
    pub version: u32,
    pub state: RenderState,
    pub error: Option<String>,
    /// The node running it (a restarted node fails its own unfinished
    /// renders; see `projects::clip_edit`).
    pub node: String,
    pub started_at: i64,
}

/// Object key of the framing a version's video was drawn with, next to it
/// (reused by edits that keep its range, frame and layout).
pub fn framing_key(video_key: &str) -> String {
    format!("{video_key}.framing.json")
}

/// Object key of the ASS captions a version's video has burned in, next
/// to it.
pub fn captions_key(video_key: &str) -> String {
    format!("{video_key}.captions.ass")
}
