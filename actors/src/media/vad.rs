//! Speech windows for Whisper: the stream is cut into windows of at most 30 s
//! at quiet points, and long silences (≥ 2 s) are dropped, so no word is cut
//! in half at a window edge and no time is spent decoding silence. Each
//! window keeps its offset in the source, so word times map back exactly,
//! and carries its voicing (`media::voicing`): whether it holds speech at
//! all, and where inside it there is no voice.

use super::voicing::{self, Voicing, FRAME};
use super::whisper::{SAMPLE_RATE, WINDOW_SAMPLES};

const WINDOW_FRAMES: usize = WINDOW_SAMPLES / FRAME;
/// A silence this long is dropped instead of transcribed.
const DROP_SILENCE_FRAMES: usize = 100; // 2 s
/// Speech kept around a dropped silence.
const PAD_FRAMES: usize = 10; // 200 ms
/// Where to look for a cut point when a window reaches 30 s: its last 8 s.
const CUT_SEARCH_FRAMES: usize = 400;
/// Audio kept beyond a full window before deciding its cut.
const LOOKAHEAD: usize = 2 * SAMPLE_RATE;

/// A run of samples to transcribe, `offset` seconds into the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub offset: f64,
    pub samples: Vec<f32>,
    /// Syllables and voiceless stretches (times from `offset`).
    pub voicing: Voicing,
}

impl Window {
    pub fn duration(&self) -> f64 {
        self.samples.len() as f64 / SAMPLE_RATE as f64
    }
}

/// Incremental splitter: `push` samples as they are decoded, then `finish`.
#[derive(Default)]
pub struct SpeechWindows {
    buf: Vec<f32>,
    /// Stream index of `buf[0]`.
    buf_start: u64,
}

fn frame_db(frame: &[f32]) -> f32 {
    let e: f32 = frame.iter().map(|s| s * s).sum::<f32>() / frame.len().max(1) as f32;
    10.0 * e.max(1e-12).log10()
}

impl SpeechWindows {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, samples: &[f32], out: &mut Vec<Window>) {
        self.buf.extend_from_slice(samples);
        while self.buf.len() >= WINDOW_SAMPLES + LOOKAHEAD {
            if !self.cut(false, out) {
                break;
            }
        }
    }

    pub fn finish(&mut self, out: &mut Vec<Window>) {
        while !self.buf.is_empty() {
            if !self.cut(true, out) {
                break;
            }
        }
        self.buf.clear();
    }

    fn consume(&mut self, frames: usize) {
        let n = (frames * FRAME).min(self.buf.len());
        self.buf.drain(..n);
        self.buf_start += n as u64;
    }

    /// Emits at most one window from the buffer's head. Returns false when
    /// more audio is needed.
    fn cut(&mut self, finishing: bool, out: &mut Vec<Window>) -> bool {
        let frames: Vec<f32> = self.buf.chunks(FRAME).map(frame_db).collect();
        if frames.is_empty() {
            return false;
        }
        let threshold = silence_threshold(&frames);
        let Some(first_voiced) = frames.iter().position(|&db| db > threshold) else {
            // All silence: keep a little in case speech starts right after.
            let keep = if finishing { 0 } else { PAD_FRAMES };
            let drop = frames.len().saturating_sub(keep);
            self.consume(drop);
            return drop > 0;
        };
        let start = first_voiced.saturating_sub(PAD_FRAMES);
        let limit = (start + WINDOW_FRAMES).min(frames.len());
        let mut end = None;
        let mut run = 0;
        for (i, &db) in frames.iter().enumerate().take(limit).skip(first_voiced) {
            if db <= threshold {
                run += 1;
                if run >= DROP_SILENCE_FRAMES {
                    end = Some(i + 1 - run + PAD_FRAMES);
                    break;
                }
            } else {
                run = 0;
            }
        }
        let end = match end {
            Some(e) => e,
            None if limit - start < WINDOW_FRAMES => {
                if !finishing {
                    return false;
                }
                // Stream ends inside this window: trim trailing silence.
                let last_voiced = frames[..limit]
                    .iter()
                    .rposition(|&db| db > threshold)
                    .unwrap_or(start);
                (last_voiced + 1 + PAD_FRAMES).min(limit)
            }
            None => quietest_cut(&frames[start..limit], threshold) + start,
        };
        let end = end.clamp(start + 1, frames.len());
        let from = start * FRAME;
        let to = (end * FRAME).min(self.buf.len());
        let samples = self.buf[from..to].to_vec();
        out.push(Window {
            offset: (self.buf_start + from as u64) as f64 / SAMPLE_RATE as f64,
            voicing: voicing::analyse(&samples, &frames[start..end], threshold),
            samples,
        });
        self.consume(end);
        true
    }
}

/// The sample at which to split `samples` in two for a second look: the
/// middle of the quietest 100 ms between 35 % and 65 % of its length.
pub fn quiet_middle(samples: &[f32]) -> usize {
    const SPAN: usize = 5; // frames: 100 ms
    let frames: Vec<f32> = samples.chunks(FRAME).map(frame_db).collect();
    let (from, to) = (frames.len() * 35 / 100, frames.len() * 65 / 100);
    let best = (from..to.saturating_sub(SPAN).max(from + 1))
        .filter(|&i| i + SPAN <= frames.len())
        .min_by(|&a, &b| {
            let sum = |i: usize| frames[i..i + SPAN].iter().sum::<f32>();
            sum(a).total_cmp(&sum(b))
        })
        .unwrap_or(frames.len() / 2);
    ((best + SPAN / 2) * FRAME).clamp(1, samples.len().saturating_sub(1).max(1))
}

/// Silence is 30 dB under the loud part of the buffer, between −70 and −45
/// dBFS (so a buffer of codec noise alone is silence, not speech).
fn silence_threshold(frames: &[f32]) -> f32 {
    let mut sorted = frames.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let p95 = sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)];
    (p95 - 30.0).clamp(-70.0, -45.0)
}

/// A pause this long (160 ms, faster-whisper's own VAD minimum) is a safe
/// place to end a window: no word spans it.
const PAUSE_FRAMES: usize = 8;

/// The frame to end a full window at: the middle of the latest pause of at
/// least [`PAUSE_FRAMES`] in its last seconds (so windows stay close to
/// 30 s and the encoder, which always sees 30 s, runs as few times as
/// possible), else of the longest quiet run there, else the quietest frame.
fn quietest_cut(frames: &[f32], threshold: f32) -> usize {
    let from = frames.len().saturating_sub(CUT_SEARCH_FRAMES);
    let (mut best_len, mut best_mid) = (0usize, None);
    let mut latest_pause = None;
    let mut run_start = None;
    for i in from..=frames.len() {
        let quiet = i < frames.len() && frames[i] <= threshold + 6.0;
        match (quiet, run_start) {
            (true, None) => run_start = Some(i),
            (false, Some(s)) => {
                let mid = s + (i - s) / 2;
                if i - s >= PAUSE_FRAMES {
                    latest_pause = Some(mid);
                }
                if i - s > best_len {
                    best_len = i - s;
                    best_mid = Some(mid);
                }
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(mid) = latest_pause {
        return mid.max(1);
    }
    if best_len >= 5 {
        if let Some(mid) = best_mid {
            return mid.max(1);
        }
    }
    let (idx, _) = frames[from..]
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
        .unwrap_or((frames.len() - from, &0.0));
    (from + idx).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(secs: f64) -> Vec<f32> {
        (0..(secs * SAMPLE_RATE as f64) as usize)
            .map(|i| 0.3 * (i as f32 * 0.07).sin())
            .collect()
    }

    fn silence(secs: f64) -> Vec<f32> {
        vec![0.0; (secs * SAMPLE_RATE as f64) as usize]
    }

    fn split(parts: &[Vec<f32>], block: usize) -> Vec<Window> {
        let all: Vec<f32> = parts.concat();
        let mut sw = SpeechWindows::new();
        let mut out = Vec::new();
        for c in all.chunks(block) {
            sw.push(c, &mut out);
        }
        sw.finish(&mut out);
        out
    }

    #[test]
    fn long_silences_are_dropped_and_offsets_kept() {
        let w = split(&[silence(3.0), tone(5.0), silence(10.0), tone(4.0)], 7919);
        assert_eq!(
            w.len(),
            2,
            "{:?}",
            w.iter()
                .map(|w| (w.offset, w.duration()))
                .collect::<Vec<_>>()
        );
        assert!((w[0].offset - 2.8).abs() < 0.03, "{}", w[0].offset);
        assert!((w[0].duration() - 5.4).abs() < 0.05, "{}", w[0].duration());
        assert!((w[1].offset - 17.8).abs() < 0.03, "{}", w[1].offset);
        assert!(w[1].duration() <= 4.25);
    }

    #[test]
    fn a_full_window_ends_at_its_latest_pause_not_its_longest() {
        // Pauses at 23 s (0.5 s) and 27.5 s (0.2 s): the later one keeps the
        // window near 30 s, so fewer windows go through the encoder.
        let w = split(
            &[
                tone(23.0),
                silence(0.5),
                tone(4.0),
                silence(0.2),
                tone(10.0),
            ],
            16000,
        );
        let cut = w[0].offset + w[0].duration();
        assert!((27.5..=27.7).contains(&cut), "cut at {cut}");
    }

    #[test]
    fn windows_never_exceed_thirty_seconds_and_cut_in_gaps() {
        // 20 s of sound, a short 0.5 s gap, 20 s of sound: the cut lands in the gap.
        let w = split(&[tone(25.0), silence(0.5), tone(20.0)], 16000);
        assert!(w.iter().all(|w| w.samples.len() <= WINDOW_SAMPLES));
        let cut = w[0].offset + w[0].duration();
        assert!((25.0..=25.5).contains(&cut), "cut at {cut}");
        let total: f64 = w.iter().map(Window::duration).sum();
        assert!((total - 45.5).abs() < 0.1, "{total}");
    }

    #[test]
    fn the_quiet_middle_is_the_gap_near_the_middle() {
        // Gaps at 3.0 s (before 35 % of 12 s) and at 7.0 s (inside).
        let s = [tone(3.0), silence(0.3), tone(3.7), silence(0.3), tone(4.7)].concat();
        let cut = quiet_middle(&s) as f64 / SAMPLE_RATE as f64;
        assert!((7.0..7.3).contains(&cut), "cut at {cut}");
    }

    #[test]
    fn codec_noise_alone_is_silence() {
        let hiss: Vec<f32> = (0..SAMPLE_RATE * 5)
            .map(|i| 2e-5 * ((i * 7919 % 13) as f32 - 6.0))
            .collect();
        let w = split(&[tone(3.0), silence(0.5), hiss], 4000);
        assert_eq!(
            w.len(),
            1,
            "{:?}",
            w.iter()
                .map(|w| (w.offset, w.duration()))
                .collect::<Vec<_>>()
        );
        assert!(w[0].duration() < 4.0);
    }

    #[test]
    fn continuous_sound_is_split_into_full_windows() {
        let w = split(&[tone(70.0)], 12345);
        assert!(w.len() >= 3);
        assert!(w.iter().all(|w| w.samples.len() <= WINDOW_SAMPLES));
        let mut expected = 0.0;
        for win in &w {
            assert!(
                (win.offset - expected).abs() < 1e-6,
                "windows must be contiguous"
            );
            expected = win.offset + win.duration();
        }
        assert!((expected - 70.0).abs() < 0.05);
    }
}
