//! The stages a project runs, in order: download (fetch + probe),
//! transcribe, cut, caption — one file each. Each reports progress 0–100, can be
//! cancelled (its child processes are killed and its partial files removed)
//! and fails with a [`StageError`] a user can read. `table.rs` describes
//! every stage once (files read and written, progress share, remote,
//! fault point); `run.rs` runs one stage in a work folder by that table.

use std::fmt;

pub use crate::stage::{Progress, StageCtx, StageError};

pub mod ahead;
pub mod boundaries;
pub mod breakdown;
pub mod caption;
pub mod cut;
pub mod download;
pub mod fillers;
pub mod lexicon;
pub mod phrase;
pub mod plan;
pub mod probe;
pub mod quiet;
pub mod reasons;
pub mod rerank;
pub mod run;
pub mod score;
pub mod signals;
pub mod steer;
pub mod table;
pub mod titles;
pub mod transcribe;

/// The pipeline's stages, in order.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Download,
    Transcribe,
    Cut,
    Caption,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Download,
        Stage::Transcribe,
        Stage::Cut,
        Stage::Caption,
    ];

    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
