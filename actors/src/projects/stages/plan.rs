//! One clip to render, on the source's timeline ([`ClipPlan`]): what the
//! cut stage chooses and every later stage and edit works on.

use serde::{Deserialize, Serialize};

use super::fillers;
use super::reasons::ClipScores;

/// One clip to render, on the source's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClipPlan {
    pub start: f64,
    pub end: f64,
    pub score: u8,
    pub title: String,
    pub first_word: usize,
    pub end_word: usize,
    /// Why it was picked (one sentence). Empty in plans written before reasons existed.
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub scores: ClipScores,
    /// Spans of the source (seconds, sorted) cut out of the clip: its
    /// filler words (`fillers::clip_cuts`). Empty without filler removal.
    #[serde(default)]
    pub cuts: Vec<(f64, f64)>,
}

impl ClipPlan {
    /// Seconds of the source range (cuts included).
    pub fn duration(&self) -> f64 {
        self.end - self.start
    }

    /// Seconds of the rendered clip: the source range less the cuts.
    pub fn kept_duration(&self) -> f64 {
        (self.duration() - fillers::removed_secs(&self.cuts)).max(0.0)
    }
}
