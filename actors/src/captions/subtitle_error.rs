//! [`SubtitleError`]: why an SRT or WebVTT file could not be read (see
//! [`super::subtitles::parse_srt`] and [`super::subtitles::parse_vtt`]).

/// A malformed subtitle file; each error names the line (1-based).
#[derive(Debug, thiserror::Error)]
pub enum SubtitleError {
    /// SRT: a block does not start with its cue number.
    #[error("line {line}: expected a cue number, found {found:?}")]
    NotCueNumber { line: usize, found: String },
    /// SRT: a cue number with no timing line after it.
    #[error("line {line}: cue {index} has no timing line")]
    NoTimingLine { line: usize, index: String },
    /// WebVTT: a cue identifier with no timing line after it.
    #[error("line {line}: cue {id:?} has no timing line")]
    NoTimingLineAfterId { line: usize, id: String },
    /// WebVTT: the first line is not `WEBVTT`.
    #[error("line 1: missing WEBVTT header")]
    MissingHeader,
    /// A timing line that does not read.
    #[error("line {line}: {source}")]
    Timing {
        line: usize,
        #[source]
        source: TimingError,
    },
}

/// A timing line (`start --> end`) that does not read.
#[derive(Debug, thiserror::Error)]
pub enum TimingError {
    /// No `-->` between two times.
    #[error("expected \"start --> end\", found {0:?}")]
    NoArrow(String),
    /// A time that is not `HH:MM:SS,mmm` (SRT) / `[HH:]MM:SS.mmm` (WebVTT).
    #[error("bad timestamp {0:?}")]
    BadTimestamp(String),
    /// The end is before the start.
    #[error("cue ends ({end:.3}) before it starts ({start:.3})")]
    EndsBeforeStart { start: f64, end: f64 },
}

impl TimingError {
    /// This error, found on line `line` of the file.
    pub(super) fn on_line(self, line: usize) -> SubtitleError {
        SubtitleError::Timing { line, source: self }
    }
}
