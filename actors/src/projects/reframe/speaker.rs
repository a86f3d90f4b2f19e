//! Active speaker: which of two faces is talking, moment by moment, from
//!
//! - the stereo balance of the sound (a face on the left gains when the
//!   left channel is louder; a mono or centred mix says nothing), and
//! - the motion of each face's mouth against its own head while the sound
//!   is voiced (the mouth that moves on its own when there is speech is
//!   the talker's: `media::mouth`),
//!
//! then the face shown over the whole clip is chosen at once: the sequence
//! that agrees best with the evidence, less [`SWITCH_COST`] per change, in
//! which every shot of a face lasts at least [`MIN_HOLD`] (half that at
//! the clip's start and end), so a one-second "mm-hm" does not switch the
//! crop and nothing flickers. A source's own shot changes bound this: in a
//! shot that shows only one of the two (a close-up, a reaction shot of a
//! cut-edited interview) that one is shown, and at a shot change the face
//! shown may change however short the shot before was. Seen whole, the
//! crop cuts when the talk turns, not a second of evidence later as a
//! running hysteresis would. The crop cuts to the talker (podcast framing)
//! and stays still while the same person talks.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::tracks::Track;
use crate::media::face::{shot_ranges, FaceAnalysis, MOTION_FPS};
use crate::media::process::{last_error_line, run};
use crate::projects::stages::StageError;

/// Seconds per analysis step (one motion frame).
pub const STEP: f64 = 1.0 / MOTION_FPS;
/// Sample rate of the energy analysis.
const RATE: usize = 8000;
/// A step is voiced when its loudness is within this factor of the clip's
/// loud steps (the 90th percentile).
const VOICED_SHARE: f64 = 0.2;
/// Evidence (−2..2) one face must lead the other by to count as talking.
const LEAD: f64 = 0.25;
/// Evidence is averaged over this many steps (1 s).
const SMOOTH_STEPS: usize = MOTION_FPS as usize;
/// What a change of the face shown costs, in steps of full evidence (a
/// switch must be paid for by about a second of a 0.05 lead, or a tenth of
/// a second of one face's mouth alone moving).
pub const SWITCH_COST: f64 = 1.0;
/// Every shot of a face lasts at least this long (seconds).
pub const MIN_HOLD: f64 = 2.0;

/// RMS of each channel per step (equal channels for a mono source).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StereoEnergy {
    pub left: Vec<f64>,
    pub right: Vec<f64>,
}

/// Decodes the clip's sound as 8 kHz stereo and measures each channel.
pub async fn stereo_energy(
    input: &Path,
    start: f64,
    duration: f64,
    cancel: &CancellationToken,
) -> Result<StereoEnergy, StageError> {
    let pcm = tempfile::NamedTempFile::new().map_err(|e| StageError::io("temp file", e))?;
    let args: Vec<String> = [
        "-nostdin",
        "-y",
        "-v",
        "error",
        "-ss",
        &format!("{start:.3}"),
        "-i",
        &input.to_string_lossy(),
        "-t",
        &format!("{duration:.3}"),
        "-vn",
        "-sn",
        "-dn",
        "-ac",
        "2",
        "-ar",
        &RATE.to_string(),
        "-f",
        "s16le",
        &pcm.path().to_string_lossy(),
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let done = run("ffmpeg", &args, cancel).await?;
    if !done.status.success() {
        return Err(StageError::tool(
            "ffmpeg",
            format!("measuring the sound: {}", last_error_line(&done.stderr)),
        ));
    }
    let bytes = std::fs::read(pcm.path()).map_err(|e| StageError::io("reading the sound", e))?;
    Ok(energy_of(&bytes))
}

/// RMS per step of interleaved s16le stereo samples.
fn energy_of(bytes: &[u8]) -> StereoEnergy {
    let per_step = (RATE as f64 * STEP) as usize;
    let frames: Vec<(f64, f64)> = bytes
        .chunks_exact(4)
        .map(|c| {
            let l = i16::from_le_bytes([c[0], c[1]]) as f64 / 32768.0;
            let r = i16::from_le_bytes([c[2], c[3]]) as f64 / 32768.0;
            (l, r)
        })
        .collect();
    let mut out = StereoEnergy::default();
    for chunk in frames.chunks(per_step) {
        let n = chunk.len().max(1) as f64;
        out.left
            .push((chunk.iter().map(|(l, _)| l * l).sum::<f64>() / n).sqrt());
        out.right
            .push((chunk.iter().map(|(_, r)| r * r).sum::<f64>() / n).sqrt());
    }
    out
}

/// Who talks when, for two tracks (indices 0 and 1 into the given slice).
#[derive(Clone, Debug, PartialEq)]
pub struct SpeakerTimeline {
    /// The face shown at each step.
    pub active: Vec<usize>,
    /// Share of voiced steps in which one face clearly led.
    pub confidence: f64,
    /// How often the shown face changes.
    pub switches: usize,
}

/// Evidence per step that face 0 (positive) or face 1 (negative) talks, and
/// whether the step is voiced.
fn evidence(pair: [&Track; 2], analysis: &FaceAnalysis, energy: &StereoEnergy) -> Vec<(f64, bool)> {
    let steps = analysis.mouth.len();
    let loud: Vec<f64> = (0..steps)
        .map(|k| {
            let l = energy.left.get(k).copied().unwrap_or(0.0);
            let r = energy.right.get(k).copied().unwrap_or(0.0);
            (l + r) / 2.0
        })
        .collect();
    let mut sorted = loud.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let p90 = sorted
        .get((sorted.len() as f64 * 0.9) as usize)
        .copied()
        .unwrap_or(0.0);
    let floor = (p90 * VOICED_SHARE).max(1e-4);
    (0..steps)
        .map(|k| {
            let voiced = loud[k] > floor;
            if !voiced {
                return (0.0, false);
            }
            let l = energy.left.get(k).copied().unwrap_or(0.0);
            let r = energy.right.get(k).copied().unwrap_or(0.0);
            // −1 (all left) .. 1 (all right).
            let balance = (r - l) / (r + l).max(1e-9);
            // Where each face sits: −1 (left edge) .. 1 (right edge).
            let side = |t: &Track| 2.0 * t.cx - 1.0;
            let stereo = balance * (side(pair[0]) - side(pair[1])) / 2.0;
            let sample = FaceAnalysis::sample_of_frame(k);
            let motion = |t: &Track| {
                t.index_in(sample)
                    .and_then(|i| analysis.mouth[k].get(i).copied())
            };
            // Each mouth's motion against its own head (about 1 when still
            // or nodding): the one that moves more on its own talks. A face
            // not seen in this sample says nothing either way.
            let mouth = match (motion(pair[0]), motion(pair[1])) {
                (Some(m0), Some(m1)) if m0 + m1 > 0.0 => (m0 - m1) / (m0 + m1),
                _ => 0.0,
            };
            (stereo + mouth, true)
        })
        .collect()
}

/// The face shown per step ([`best_sequence`] of the evidence) and how sure
/// the evidence is.
pub fn timeline(
    pair: [&Track; 2],
    analysis: &FaceAnalysis,
    energy: &StereoEnergy,
) -> SpeakerTimeline {
    let ev = evidence(pair, analysis, energy);
    let n = ev.len();
    let smoothed: Vec<(f64, bool)> = (0..n)
        .map(|k| {
            let (a, b) = (
                k.saturating_sub(SMOOTH_STEPS / 2),
                (k + SMOOTH_STEPS / 2 + 1).min(n),
            );
            let voiced: Vec<f64> = ev[a..b].iter().filter(|e| e.1).map(|e| e.0).collect();
            let mean = voiced.iter().sum::<f64>() / voiced.len().max(1) as f64;
            (mean, ev[k].1)
        })
        .collect();
    let lead = |e: f64| {
        if e > LEAD {
            Some(0)
        } else if e < -LEAD {
            Some(1)
        } else {
            None
        }
    };
    let voiced = smoothed.iter().filter(|e| e.1).count();
    let decided = smoothed
        .iter()
        .filter(|e| e.1 && lead(e.0).is_some())
        .count();
    let scores: Vec<f64> = ev.iter().map(|e| if e.1 { e.0 } else { 0.0 }).collect();
    let shots = on_screen(pair, analysis, n);
    let active = best_sequence(&scores, &shots, (MIN_HOLD / STEP).round() as usize);
    let switches = active.windows(2).filter(|p| p[0] != p[1]).count();
    SpeakerTimeline {
        active,
        confidence: decided as f64 / voiced.max(1) as f64,
        switches,
    }
}

/// Per step: which of the pair may be shown (a face is on screen in a shot
/// when its track is in any sample of the shot; a shot with neither leaves
/// both, and is fitted by the graph), and whether a new shot starts there.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Shown {
    allowed: [bool; 2],
    cut: bool,
}

fn on_screen(pair: [&Track; 2], analysis: &FaceAnalysis, steps: usize) -> Vec<Shown> {
    // Shot `k` lies between cuts `k - 1` and `k`.
    let seen: Vec<[bool; 2]> = shot_ranges(analysis.faces.len(), &analysis.cuts)
        .into_iter()
        .map(|r| [pair[0].seen_in(r.clone()), pair[1].seen_in(r)])
        .collect();
    let mut shot = 0;
    (0..steps)
        .map(|k| {
            let t = k as f64 * STEP;
            let before = shot;
            while analysis.cuts.get(shot).is_some_and(|c| *c <= t + 1e-9) {
                shot += 1;
            }
            let allowed = match seen[shot] {
                [false, false] => [true, true],
                a => a,
            };
            Shown {
                allowed,
                cut: shot != before,
            }
        })
        .collect()
}

/// The face (0 or 1) shown at each step: of all sequences in which every
/// run within a shot lasts at least `hold` steps (the first and the last
/// at least half that, unless the clip is shorter), and which show at each
/// step a face `shown` allows, the one with the most evidence for the face
/// shown (`score[k]` for face 0, `-score[k]` for face 1) less
/// [`SWITCH_COST`] per change within a shot (a change at a shot change is
/// free, whatever the run before it). Exact, by dynamic programming over
/// (face, steps in the run so far, counted up to `hold`); ties go to face 0
/// (the larger). Steps past the end of `shown` allow both faces.
fn best_sequence(score: &[f64], shown: &[Shown], hold: usize) -> Vec<usize> {
    let n = score.len();
    let hold = hold.max(1);
    if n == 0 {
        return Vec::new();
    }
    let free = Shown {
        allowed: [true, true],
        cut: false,
    };
    let shown = |k: usize| shown.get(k).copied().unwrap_or(free);
    // State `face * hold + (run - 1)`; run is capped at `hold`.
    let states = 2 * hold;
    let gain = |face: usize, k: usize| match (shown(k).allowed[face], face) {
        (false, _) => f64::NEG_INFINITY,
        (true, 0) => score[k],
        (true, _) => -score[k],
    };
    // The first run starts half a hold in: it may end after half a hold
    // (the clip's start is no cut to flicker against), and so may the last.
    let edge = hold / 2;
    let mut best = vec![f64::NEG_INFINITY; states];
    for face in 0..2 {
        best[face * hold + (hold - edge).max(1) - 1] = gain(face, 0);
    }
    let mut from = vec![usize::MAX; n * states];
    for k in 1..n {
        let mut next = vec![f64::NEG_INFINITY; states];
        for (state, &here) in best.iter().enumerate() {
            if here == f64::NEG_INFINITY {
                continue;
            }
            let (face, run) = (state / hold, state % hold + 1);
            let mut offer = |to: usize, value: f64| {
                if value > next[to] {
                    next[to] = value;
                    from[k * states + to] = state;
                }
            };
            offer(face * hold + run.min(hold - 1), here + gain(face, k));
            let other = 1 - face;
            if shown(k).cut {
                offer(other * hold, here + gain(other, k));
            } else if run == hold {
                offer(other * hold, here - SWITCH_COST + gain(other, k));
            }
        }
        best = next;
    }
    // End on a run of at least half a hold when one can (a clip shorter
    // than that cannot).
    let pick = |candidates: &[usize]| {
        candidates
            .iter()
            .copied()
            .filter(|&s| best[s] > f64::NEG_INFINITY)
            .fold(None::<usize>, |b, s| match b {
                Some(b) if best[b] >= best[s] => Some(b),
                _ => Some(s),
            })
    };
    let all: Vec<usize> = (0..states).collect();
    let long: Vec<usize> = (0..states).filter(|s| s % hold + 1 >= edge).collect();
    let mut state = pick(&long).or_else(|| pick(&all)).unwrap_or(0);
    let mut out = vec![0; n];
    for k in (0..n).rev() {
        out[k] = state / hold;
        if k > 0 {
            state = from[k * states + state];
        }
    }
    out
}

/// Crop-centre movement along a path of (time, x px) points sampled at
/// `fps`: the mean absolute frame-to-frame move, not counting cuts (moves
/// larger than `cut_px` in one frame), and the number of cuts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jitter {
    pub mean_px_per_frame: f64,
    pub cuts: usize,
}

/// Measures a piecewise-linear path (as the filter graph draws it).
pub fn jitter(points: &[(f64, f64)], duration: f64, fps: f64, cut_px: f64) -> Jitter {
    let at = |t: f64| -> f64 {
        match points.iter().position(|(pt, _)| *pt > t) {
            None => points.last().map(|p| p.1).unwrap_or(0.0),
            Some(0) => points[0].1,
            Some(i) => {
                let ((t0, x0), (t1, x1)) = (points[i - 1], points[i]);
                x0 + (x1 - x0) * (t - t0) / (t1 - t0).max(1e-9)
            }
        }
    };
    let frames = (duration * fps).floor() as usize;
    let mut sum = 0.0;
    let mut moves = 0usize;
    let mut cuts = 0usize;
    let mut prev = at(0.0);
    for f in 1..frames.max(1) {
        let x = at(f as f64 / fps);
        let d = (x - prev).abs();
        if d > cut_px {
            cuts += 1;
        } else {
            sum += d;
            moves += 1;
        }
        prev = x;
    }
    Jitter {
        mean_px_per_frame: sum / moves.max(1) as f64,
        cuts,
    }
}

#[cfg(test)]
#[path = "speaker_tests.rs"]
mod tests;
