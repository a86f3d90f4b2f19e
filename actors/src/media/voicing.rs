//! Is a speech window speech? Loudness alone cannot tell: breaths, noise and
//! a music tone are as loud as a voice, and Whisper, shown 30 s of them,
//! writes its classic hallucinations ("This is the end of the video.",
//! "Don't forget to subscribe!"). Speech has syllables: short voiced runs
//! (a pitch between 80 and 400 Hz, found by normalised autocorrelation),
//! each well under two seconds, between unvoiced sounds or pauses. Noise and
//! breaths have no pitch; a held tone is one long voiced run.
//!
//! Per window this gives: whether it holds speech at all (no syllable → it is
//! not decoded), and its stretches of at least [`MIN_SILENCE_FRAMES`] without
//! voice nearby, where words are dropped.

use super::whisper::SAMPLE_RATE;

/// Analysis frame (the VAD's): 20 ms.
pub const FRAME: usize = SAMPLE_RATE / 50;
/// Pitch search runs at 8 kHz: samples per frame there.
const FRAME_8K: usize = FRAME / 2;
/// Autocorrelation window at 8 kHz: 40 ms, two frames (≥ 3 periods at 80 Hz).
const WINDOW_8K: usize = 2 * FRAME_8K;
/// Lags at 8 kHz: 400 Hz … 80 Hz.
const MIN_LAG: usize = 20;
const MAX_LAG: usize = 100;
/// A normalised autocorrelation peak this high is a pitch.
const VOICED_PEAK: f32 = 0.5;
/// A syllable: a voiced run of 60 ms … 2 s.
const SYLLABLE_MIN_FRAMES: usize = 3;
const SYLLABLE_MAX_FRAMES: usize = 100;
/// Unvoiced sounds (consonants) lie within 300 ms of a voiced one.
const VOICE_REACH_FRAMES: usize = 15;
/// Stretches without voice this long are silence for words (1 s).
pub const MIN_SILENCE_FRAMES: usize = 50;

/// What a window's voicing says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Voicing {
    /// Voiced runs of syllable length.
    pub syllables: usize,
    /// Spans (seconds from the window's start) of at least
    /// [`MIN_SILENCE_FRAMES`] frames that are quiet or far from any voice.
    pub silences: Vec<(f64, f64)>,
}

impl Voicing {
    /// A window with no syllable holds no speech.
    pub fn is_speech(&self) -> bool {
        self.syllables > 0
    }
}

/// Voicing of `samples` (16 kHz), whose 20 ms frames have loudness
/// `frame_db`; frames at or under `threshold` dB are quiet.
pub fn analyse(samples: &[f32], frame_db: &[f32], threshold: f32) -> Voicing {
    let voiced = voiced_frames(samples, frame_db, threshold);
    let mut syllables = 0;
    let mut run = 0;
    for &v in voiced.iter().chain([&false]) {
        if v {
            run += 1;
        } else {
            if (SYLLABLE_MIN_FRAMES..=SYLLABLE_MAX_FRAMES).contains(&run) {
                syllables += 1;
            }
            run = 0;
        }
    }
    // A frame is voice if it is loud and near a voiced frame.
    let n = voiced.len();
    let mut near = vec![false; n];
    let mut last_voiced: Option<usize> = None;
    for i in 0..n {
        if voiced[i] {
            last_voiced = Some(i);
        }
        near[i] = last_voiced.is_some_and(|v| i - v <= VOICE_REACH_FRAMES);
    }
    let mut next_voiced: Option<usize> = None;
    for i in (0..n).rev() {
        if voiced[i] {
            next_voiced = Some(i);
        }
        near[i] |= next_voiced.is_some_and(|v| v - i <= VOICE_REACH_FRAMES);
    }
    let secs = |f: usize| (f * FRAME) as f64 / SAMPLE_RATE as f64;
    let mut silences = Vec::new();
    let mut start = None;
    #[expect(
        clippy::needless_range_loop,
        reason = "one step past the end closes a trailing silence"
    )]
    for i in 0..=n {
        let voice = i < n && near[i] && frame_db.get(i).is_some_and(|&db| db > threshold);
        match (voice, start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                if i - s >= MIN_SILENCE_FRAMES {
                    silences.push((secs(s), secs(i)));
                }
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        if n - s >= MIN_SILENCE_FRAMES {
            silences.push((secs(s), secs(n)));
        }
    }
    Voicing {
        syllables,
        silences,
    }
}

/// Per 20 ms frame: loud, and periodic with a pitch of 80–400 Hz.
fn voiced_frames(samples: &[f32], frame_db: &[f32], threshold: f32) -> Vec<bool> {
    // 8 kHz by averaging pairs, then pre-emphasis, which whitens rumble and
    // low-pass noise (their autocorrelation otherwise decays slowly and
    // looks periodic at short lags).
    let mut x: Vec<f32> = samples
        .chunks(2)
        .map(|p| p.iter().sum::<f32>() / p.len() as f32)
        .collect();
    for i in (1..x.len()).rev() {
        x[i] -= 0.95 * x[i - 1];
    }
    let frames = samples.len().div_ceil(FRAME);
    let mut out = vec![false; frames];
    let mut r = [0f32; MAX_LAG + 2];
    for (f, v) in out.iter_mut().enumerate() {
        if frame_db.get(f).is_none_or(|&db| db <= threshold) {
            continue;
        }
        let from = f * FRAME_8K;
        let seg = &x[from.min(x.len())..(from + WINDOW_8K).min(x.len())];
        if seg.len() < MAX_LAG + FRAME_8K / 2 {
            continue;
        }
        for (lag, slot) in r.iter_mut().enumerate().take(MAX_LAG + 2).skip(MIN_LAG - 1) {
            let (a, b) = (&seg[..seg.len() - lag], &seg[lag..]);
            let (mut ab, mut aa, mut bb) = (0f32, 0f32, 0f32);
            for (p, q) in a.iter().zip(b) {
                ab += p * q;
                aa += p * p;
                bb += q * q;
            }
            *slot = if aa > 0.0 && bb > 0.0 {
                ab / (aa * bb).sqrt()
            } else {
                0.0
            };
        }
        *v = (MIN_LAG..=MAX_LAG)
            .any(|lag| r[lag] > VOICED_PEAK && r[lag] >= r[lag - 1] && r[lag] >= r[lag + 1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_frames(samples: &[f32]) -> Vec<f32> {
        samples
            .chunks(FRAME)
            .map(|f| {
                let e = f.iter().map(|s| s * s).sum::<f32>() / f.len() as f32;
                10.0 * e.max(1e-12).log10()
            })
            .collect()
    }

    /// A deterministic noise source (xorshift), in −1..1.
    fn noise(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                s as f32 / u32::MAX as f32 * 2.0 - 1.0
            })
            .collect()
    }

    /// Vowel-like bursts: ten harmonics of 120 Hz, 200 ms on, 150 ms of
    /// faint noise between.
    fn syllables(secs: f64) -> Vec<f32> {
        let n = (secs * SAMPLE_RATE as f64) as usize;
        let hiss = noise(n, 7);
        (0..n)
            .map(|i| {
                let on = i % (SAMPLE_RATE * 35 / 100) < SAMPLE_RATE / 5;
                let t = i as f32 / SAMPLE_RATE as f32;
                let vowel: f32 = (1..=10)
                    .map(|k| (2.0 * std::f32::consts::PI * 120.0 * k as f32 * t).sin() / k as f32)
                    .sum();
                let voice = if on { 0.1 * vowel } else { 0.0 };
                voice + 0.002 * hiss[i]
            })
            .collect()
    }

    fn analyse_all(samples: &[f32]) -> Voicing {
        let db = db_frames(samples);
        analyse(samples, &db, -45.0)
    }

    #[test]
    fn syllables_are_speech() {
        let v = analyse_all(&syllables(5.0));
        assert!(v.syllables >= 10, "{v:?}");
        assert!(v.silences.is_empty(), "{v:?}");
    }

    #[test]
    fn noise_and_low_passed_noise_are_not() {
        let white: Vec<f32> = noise(SAMPLE_RATE * 5, 3).iter().map(|s| 0.2 * s).collect();
        let v = analyse_all(&white);
        assert_eq!(v.syllables, 0, "white noise: {v:?}");
        assert_eq!(v.silences, vec![(0.0, 5.0)]);
        // Breath-like: low-passed noise in bursts.
        let mut lp = 0f32;
        let breath: Vec<f32> = noise(SAMPLE_RATE * 5, 9)
            .iter()
            .enumerate()
            .map(|(i, s)| {
                lp = 0.9 * lp + 0.1 * s;
                if i % SAMPLE_RATE < SAMPLE_RATE / 2 {
                    lp
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(analyse_all(&breath).syllables, 0, "breaths");
    }

    #[test]
    fn a_held_tone_is_one_long_run_not_syllables() {
        let tone: Vec<f32> = (0..SAMPLE_RATE * 6)
            .map(|i| 0.3 * (2.0 * std::f32::consts::PI * 220.0 * i as f32 / 16000.0).sin())
            .collect();
        let v = analyse_all(&tone);
        assert_eq!(v.syllables, 0, "{v:?}");
    }

    #[test]
    fn silences_are_found_between_voice() {
        let mut s = syllables(2.0);
        s.extend(vec![0.0; SAMPLE_RATE * 3]);
        s.extend(syllables(2.0));
        let v = analyse_all(&s);
        assert!(v.is_speech());
        assert_eq!(v.silences.len(), 1, "{v:?}");
        let (a, b) = v.silences[0];
        assert!(
            (1.9..2.4).contains(&a) && (4.6..5.1).contains(&b),
            "{a}..{b}"
        );
    }
}
