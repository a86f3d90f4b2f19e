//! Cuts at quiet points. A clip's bounds are chosen on word times, which
//! Whisper gets wrong by a tenth of a second or more, so a start padded
//! before the first word can land on the end of the word before it, or on a
//! breath or a laugh the transcript does not hold. Each cut moves to the
//! quietest 50 ms of the silence it sits in, measured on the audio itself:
//!
//! * a start, between the end of the word before (or 0.5 s before the
//!   first word, whichever is later) and the first word's start;
//! * an end, between the last word's end plus its trailing breath
//!   ([`TAIL_SECS`], or up to the next word when it comes sooner) and the
//!   next word's start (or 0.8 s after the last word, whichever is
//!   sooner).
//!
//! Where the audio is about as quiet in several places (within
//! [`QUIET_SLACK`] of the quietest), the one nearest the padded cut wins, so
//! clean silences keep today's padding. A cut with no room to move stays.

use std::path::Path;

use super::plan::ClipPlan;
use super::StageError;
use crate::media::audio::PcmStream;
use crate::media::whisper::SAMPLE_RATE;
use crate::transcript::Transcript;

/// The RMS window a cut is judged on (seconds).
const WINDOW_SECS: f64 = 0.05;
/// Positions are tried this far apart (seconds).
const STEP_SECS: f64 = 0.01;
/// How far before the first word a start may move.
const LEAD_SECS: f64 = 0.5;
/// How far after the last word an end may move.
const TRAIL_SECS: f64 = 0.8;
/// The breath kept after a clip's last word (or up to the next word).
pub const TAIL_SECS: f64 = 0.25;
/// A place this much louder than the quietest still counts as as quiet.
const QUIET_SLACK: f64 = 1.25;
/// A range narrower than this leaves the cut where it is.
const MIN_ROOM_SECS: f64 = 0.03;

/// Moves every plan's start and end to the quietest point of its silence
/// (see the module). `span`: the processed range of the source (seconds),
/// which no cut leaves. Plans over the whole range (skipped cuts) are left
/// as they are.
pub fn snap_plans(input: &Path, t: &Transcript, span: (f64, f64), plans: &mut [ClipPlan]) {
    for plan in plans.iter_mut() {
        if plan.end_word <= plan.first_word || plan.end_word > t.words.len() {
            continue;
        }
        let first = &t.words[plan.first_word];
        let last = &t.words[plan.end_word - 1];
        let floor = plan
            .first_word
            .checked_sub(1)
            .map_or(span.0, |i| t.words[i].end);
        let lo = floor.max(first.start - LEAD_SECS).max(span.0);
        if let Some(at) = quietest_or_keep(input, (lo, first.start), plan.start) {
            plan.start = at;
        }
        let ceiling = t.words.get(plan.end_word).map_or(span.1, |w| w.start);
        let tail = TAIL_SECS.min((ceiling - last.end).max(0.0));
        let hi = ceiling.min(last.end + TRAIL_SECS).min(span.1);
        if let Some(at) = quietest_or_keep(input, (last.end + tail, hi), plan.end) {
            plan.end = at;
        }
    }
}

/// Silence after a clip's last word below which its end is inside speech.
pub const MIN_END_PAUSE: f64 = 0.25;
/// Silence before a clip's first word below which its start is inside
/// speech (one voice running into another, a run-on).
pub const MIN_START_PAUSE: f64 = 0.15;

/// Whether the word before `end_word` is followed by at least
/// [`MIN_END_PAUSE`] of silence (or ends the speech).
pub(crate) fn ends_at_pause(t: &Transcript, end_word: usize) -> bool {
    silence_before(t, end_word).is_none_or(|s| s >= MIN_END_PAUSE)
}

/// Whether the word at `first_word` follows at least [`MIN_START_PAUSE`] of
/// silence (or begins the speech).
pub(crate) fn starts_at_pause(t: &Transcript, first_word: usize) -> bool {
    silence_before(t, first_word).is_none_or(|s| s >= MIN_START_PAUSE)
}

/// Seconds between word `i - 1`'s end and word `i`'s start; `None` at the
/// speech's edges.
fn silence_before(t: &Transcript, i: usize) -> Option<f64> {
    let before = t.words.get(i.checked_sub(1)?)?;
    Some(t.words.get(i)?.start - before.end)
}

/// [`quietest`]; when the audio cannot be read again (it was read whole by
/// the transcription, so this is unexpected) the padded cut stays.
fn quietest_or_keep(input: &Path, range: (f64, f64), near: f64) -> Option<f64> {
    quietest(input, range, near).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot read the audio around a cut; keeping it");
        None
    })
}

/// The quietest place in `range` (source seconds), preferring the one
/// nearest `near` among places about as quiet; `None` without room.
fn quietest(input: &Path, range: (f64, f64), near: f64) -> Result<Option<f64>, StageError> {
    let (lo, hi) = range;
    #[expect(
        clippy::neg_cmp_op_on_partial_ord,
        reason = "a NaN range has no room either"
    )]
    if !(hi - lo >= MIN_ROOM_SECS) {
        return Ok(None);
    }
    let from = (lo - WINDOW_SECS / 2.0).max(0.0);
    let samples = read(input, from, hi + WINDOW_SECS / 2.0 - from)?;
    Ok(pick(&samples, from, range, near))
}

/// [`quietest`] on samples starting at `from` seconds.
pub(crate) fn pick(samples: &[f32], from: f64, (lo, hi): (f64, f64), near: f64) -> Option<f64> {
    let half = (WINDOW_SECS / 2.0 * SAMPLE_RATE as f64) as usize;
    let rms_at = |t: f64| -> Option<f64> {
        let centre = ((t - from) * SAMPLE_RATE as f64).round() as isize;
        let a = (centre - half as isize).max(0) as usize;
        let b = ((centre + half as isize).max(0) as usize).min(samples.len());
        (b > a).then(|| {
            let sum: f64 = samples[a..b]
                .iter()
                .map(|&s| f64::from(s) * f64::from(s))
                .sum();
            (sum / (b - a) as f64).sqrt()
        })
    };
    let steps = ((hi - lo) / STEP_SECS).floor() as usize;
    let places: Vec<(f64, f64)> = (0..=steps)
        .map(|i| lo + i as f64 * STEP_SECS)
        .chain(std::iter::once(hi))
        .filter_map(|t| rms_at(t).map(|r| (t, r)))
        .collect();
    let quietest = places.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    places
        .into_iter()
        .filter(|p| p.1 <= quietest * QUIET_SLACK + 1e-6)
        .min_by(|a, b| (a.0 - near).abs().total_cmp(&(b.0 - near).abs()))
        .map(|p| p.0)
}

/// `secs` of 16 kHz mono samples of `input` from `from`.
fn read(input: &Path, from: f64, secs: f64) -> Result<Vec<f32>, StageError> {
    let io = |e: std::io::Error| StageError::io("reading audio around a cut", e);
    let mut stream = PcmStream::open(input, from, Some(secs)).map_err(io)?;
    let mut out = Vec::new();
    while stream.read_into(&mut out, SAMPLE_RATE).map_err(io)? > 0 {}
    stream
        .finish()
        .map_err(|e| StageError::tool("ffmpeg", format!("audio around a cut: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tone with a quiet gap at 0.30–0.40 s and a fainter hum elsewhere.
    fn samples() -> Vec<f32> {
        (0..SAMPLE_RATE)
            .map(|i| {
                let t = i as f64 / SAMPLE_RATE as f64;
                let loud = if (0.30..0.40).contains(&t) {
                    0.001
                } else {
                    0.2
                };
                (loud * (t * 2.0 * std::f64::consts::PI * 220.0).sin()) as f32
            })
            .collect()
    }

    #[test]
    fn the_cut_moves_into_the_quiet_gap() {
        let s = samples();
        let at = pick(&s, 0.0, (0.1, 0.8), 0.7).unwrap();
        assert!((0.32..=0.38).contains(&at), "{at}");
    }

    #[test]
    fn in_even_silence_the_padded_cut_stays() {
        let silent = vec![0.0f32; SAMPLE_RATE];
        let at = pick(&silent, 0.0, (0.1, 0.8), 0.42).unwrap();
        assert!((at - 0.42).abs() < STEP_SECS, "{at}");
    }

    #[test]
    fn no_room_no_move() {
        assert_eq!(pick(&samples(), 0.0, (0.5, 0.5), 0.5).map(|_| ()), Some(()));
        assert!(quietest(Path::new("/nonexistent"), (0.5, 0.51), 0.5)
            .unwrap()
            .is_none());
    }
}
