//! Work done ahead: beside the Whisper model, the transcribe stage does
//! what later stages need from the source alone, on the CPU the model
//! leaves idle (`media::spare_cpu`: `SCHED_IDLE`, put back at normal
//! priority once the words are in), and leaves it in work files:
//!
//! - the scene changes of the processed range (`scenes.json`), which the
//!   cut stage would otherwise look for after the words;
//! - with skip cuts, where the one clip is the whole range and known
//!   before its words are, the clip's framing (`framing.json`: face
//!   analysis and layout, `projects::reframe`), which the caption stage
//!   would otherwise find before the clip's encode.
//!
//! Nothing is done ahead when the process may not put a lowered thread
//! back (the stages then do it as before), and work that fails ahead is
//! logged and left to its stage, which does it (and reports a failure)
//! itself. A stage uses a result only when it was made for what the stage
//! would ask (range, output size, layout).

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::media::ffprobe::MediaInfo;
use crate::media::scenes;
use crate::media::spare_cpu::SpareCpu;
use crate::projects::reframe::{self, Framing, Layout};
use crate::stage::{Progress, StageError};

/// What was done ahead (each `None` when it was not).
#[derive(Debug, Default)]
pub struct Ahead {
    pub scenes: Option<Scenes>,
    pub framing: Option<Preframed>,
}

/// Scene changes found ahead, with the range they were looked for in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenes {
    pub start: f64,
    pub duration: f64,
    /// Seconds from `start`, as `media::scenes::detect` gives them.
    pub changes: Vec<f64>,
    /// Wall time of the search (it ran beside the model).
    pub seconds: f64,
}

impl Scenes {
    /// The changes when they were looked for in `[start, start + duration)`.
    pub fn for_range(self, start: f64, duration: f64) -> Option<Vec<f64>> {
        same_range((self.start, self.duration), (start, duration)).then_some(self.changes)
    }
}

/// A framing found ahead, with what it was found for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Preframed {
    pub start: f64,
    pub duration: f64,
    /// The output size and the layout asked for (`auto` or forced).
    pub width: u32,
    pub height: u32,
    pub requested: Layout,
    /// As the analysis chose it: spans framed by hand (`manual`, source
    /// seconds) are drawn over it.
    pub framing: Framing,
    /// Wall time of the framing (it ran beside the model).
    pub seconds: f64,
    #[serde(default)]
    pub manual: Vec<reframe::manual::ManualSpan>,
}

impl Preframed {
    /// True when this is the framing of `[start, start + duration)` into
    /// an `out` frame with the `requested` layout.
    pub fn fits(&self, (start, duration): (f64, f64), out: (u32, u32), requested: Layout) -> bool {
        same_range((self.start, self.duration), (start, duration))
            && (self.width, self.height) == out
            && self.requested == requested
    }

    /// The framing of `[start, start + duration)` into `out` with the
    /// `requested` layout, drawn from the faces this one saw when the range
    /// lies inside the range they were seen over (nothing decoded again);
    /// `None` when it does not, when they were not kept, or when the layout
    /// needs to know who talks ([`reframe::frame_from_seen`]).
    pub fn within(
        &self,
        (start, duration): (f64, f64),
        out: (u32, u32),
        requested: Layout,
    ) -> Option<Preframed> {
        let seen = self.framing.seen.as_ref()?;
        let offset = start - self.start;
        if offset < -1e-6 || offset + duration > self.duration + 1e-6 {
            return None;
        }
        let framing = reframe::frame_from_seen(seen, offset.max(0.0), duration, out, requested)?;
        Some(Preframed {
            start,
            duration,
            width: out.0,
            height: out.1,
            requested,
            framing,
            seconds: 0.0,
            manual: self.manual.clone(),
        })
    }
}

/// Whether two (start, duration) ranges are the same (made from the same
/// numbers; the tolerance only absorbs a round trip through JSON).
fn same_range(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6
}

/// What the clip is framed into: the output size and the layout asked for.
#[derive(Clone, Copy, Debug)]
pub struct FrameInto {
    pub out: (u32, u32),
    pub layout: Layout,
}

/// Looks for the scene changes of `[0, span)` of `src` and, given `clip`
/// (skip cuts), frames that range as one clip, both on `spare` CPU.
pub async fn run(
    src: &Path,
    media: &MediaInfo,
    span: f64,
    clip: Option<FrameInto>,
    spare: &SpareCpu,
    cancel: &CancellationToken,
) -> Ahead {
    let framing = async {
        match clip {
            Some(into) => frame(src, media, span, into, spare, cancel).await,
            None => None,
        }
    };
    let (scenes, framing) = tokio::join!(find_scenes(src, span, spare, cancel), framing);
    Ahead { scenes, framing }
}

async fn find_scenes(
    src: &Path,
    span: f64,
    spare: &SpareCpu,
    cancel: &CancellationToken,
) -> Option<Scenes> {
    let started = Instant::now();
    let found = scenes::detect(src, (0.0, span), cancel, &Progress::silent(), Some(spare)).await;
    let changes = left_to_stage(found, "looking for scene changes", "cut", cancel)?;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(
        changes = changes.len(),
        seconds,
        "scene changes found ahead"
    );
    Some(Scenes {
        start: 0.0,
        duration: span,
        changes,
        seconds,
    })
}

async fn frame(
    src: &Path,
    media: &MediaInfo,
    span: f64,
    into: FrameInto,
    spare: &SpareCpu,
    cancel: &CancellationToken,
) -> Option<Preframed> {
    let video = media.video.as_ref()?;
    let started = Instant::now();
    let framed = reframe::frame_clip(
        src,
        0.0,
        span,
        (video.width, video.height),
        into.out,
        into.layout,
        cancel,
        Some(spare),
    )
    .await;
    let framing = left_to_stage(framed, "framing the clip", "caption", cancel)?;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(layout = %framing.layout, seconds, "clip framed ahead");
    Some(Preframed {
        start: 0.0,
        duration: span,
        width: into.out.0,
        height: into.out.1,
        requested: into.layout,
        framing,
        seconds,
        manual: Vec::new(),
    })
}

/// The result of work done ahead; a failure (not a cancellation) is logged
/// and left to `stage`, which does the work itself.
fn left_to_stage<T>(
    result: Result<T, StageError>,
    work: &str,
    stage: &str,
    cancel: &CancellationToken,
) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            if !cancel.is_cancelled() {
                tracing::warn!(error = %e, work, stage, "work ahead failed; its stage does it");
            }
            None
        }
    }
}
