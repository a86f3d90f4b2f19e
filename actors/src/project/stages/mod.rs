//! The stages a project runs, in order: probe (part of download for the
//! service), transcribe, cut, caption. Each reports progress 0–100, can be
//! cancelled (its child processes are killed and its partial files removed)
//! and fails with a [`StageError`] a user can read.

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub mod boundaries;
pub mod caption;
pub mod cut;
pub mod fillers;
pub mod lexicon;
pub mod probe;
pub mod reasons;
pub mod rerank;
pub mod score;
pub mod signals;
pub mod steer;
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
        match self {
            Stage::Download => "download",
            Stage::Transcribe => "transcribe",
            Stage::Cut => "cut",
            Stage::Caption => "caption",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a stage failed. `Display` is the message shown to the user.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum StageError {
    /// The input is not usable (not a video, corrupt, no audio…). Not retried.
    #[error("{0}")]
    InvalidInput(String),
    /// Nothing to cut (e.g. the speech is shorter than the preset). Not retried.
    #[error("{0}")]
    NoClips(String),
    #[error("cancelled")]
    Cancelled,
    /// An external tool failed (ffmpeg, yt-dlp…). Retried.
    #[error("{tool} failed: {message}")]
    Tool { tool: String, message: String },
    /// Speech recognition failed. Retried.
    #[error("speech recognition failed: {0}")]
    Model(String),
    #[error("{0}")]
    Io(String),
}

impl StageError {
    pub fn tool(tool: &str, message: impl Into<String>) -> Self {
        StageError::Tool {
            tool: tool.to_string(),
            message: message.into(),
        }
    }

    pub fn io(context: &str, e: impl fmt::Display) -> Self {
        StageError::Io(format!("{context}: {e}"))
    }

    /// Whether running the stage again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            StageError::Tool { .. } | StageError::Model(_) | StageError::Io(_)
        )
    }
}

/// Progress reporting for one stage: 0–100, monotonic, de-duplicated.
#[derive(Clone)]
pub struct Progress {
    sink: Arc<dyn Fn(u8) + Send + Sync>,
    last: Arc<std::sync::atomic::AtomicU8>,
}

impl Progress {
    pub fn new(sink: impl Fn(u8) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
            last: Arc::new(std::sync::atomic::AtomicU8::new(0)),
        }
    }

    /// A reporter that drops every report.
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    /// Reports `fraction` (0.0–1.0) of the stage done.
    pub fn set(&self, fraction: f64) {
        let pct = (fraction.clamp(0.0, 1.0) * 100.0).floor() as u8;
        let prev = self
            .last
            .fetch_max(pct, std::sync::atomic::Ordering::Relaxed);
        if pct > prev {
            (self.sink)(pct);
        }
    }

    pub fn done(&self) {
        self.set(1.0);
    }
}

/// What every stage gets from whoever runs it.
#[derive(Clone)]
pub struct StageCtx {
    pub cancel: CancellationToken,
    pub progress: Progress,
}

impl StageCtx {
    pub fn new(cancel: CancellationToken, progress: Progress) -> Self {
        Self { cancel, progress }
    }

    pub fn check_cancelled(&self) -> Result<(), StageError> {
        if self.cancel.is_cancelled() {
            Err(StageError::Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn progress_is_monotonic_and_deduplicated() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let p = Progress::new(move |v| s2.lock().unwrap().push(v));
        for f in [0.1, 0.1, 0.05, 0.5, 2.0, 1.0] {
            p.set(f);
        }
        assert_eq!(*seen.lock().unwrap(), vec![10, 50, 100]);
    }
}
