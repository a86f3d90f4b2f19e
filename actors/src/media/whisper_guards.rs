//! Decoding guards for Whisper, as faster-whisper's `generate_with_fallback`
//! applies them: a decoded window whose text compresses too well (a loop) or
//! whose average log-probability is too low is decoded again at rising
//! temperatures; a window that is probably silence and was decoded with low
//! confidence carries no words; and a repetition loop (an n-gram repeated
//! beyond a bound) sends the window to the next temperature and, if every
//! temperature loops, is cut. See docs/internals/pipeline.md, "Decoding guards".

use std::ffi::{c_int, c_ulong};

/// faster-whisper's `compression_ratio_threshold`.
pub const COMPRESSION_RATIO_THRESHOLD: f64 = 2.4;
/// faster-whisper's `log_prob_threshold`.
pub const LOG_PROB_THRESHOLD: f64 = -1.0;
/// faster-whisper's `no_speech_threshold`.
pub const NO_SPEECH_THRESHOLD: f32 = 0.6;
/// faster-whisper's default temperatures: the first decode is beam search,
/// each fallback samples at the next temperature.
pub const TEMPERATURES: [f32; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
/// Candidates sampled per window at a temperature above 0 (faster-whisper's
/// `best_of`); CTranslate2 returns them best first.
pub const BEST_OF: usize = 5;
/// A run of this many consecutive occurrences of the same n-gram is a loop.
pub const LOOP_OCCURRENCES: usize = 5;
/// Longest n-gram (in tokens or words) checked for loops.
pub const MAX_LOOP_NGRAM: usize = 16;

#[link(name = "z")]
extern "C" {
    fn compressBound(source_len: c_ulong) -> c_ulong;
    fn compress(
        dest: *mut u8,
        dest_len: *mut c_ulong,
        source: *const u8,
        source_len: c_ulong,
    ) -> c_int;
}

/// UTF-8 length ÷ zlib-compressed length, as faster-whisper's
/// `get_compression_ratio` (`zlib.compress` at its default level, which is
/// zlib's `compress`): the same system zlib, so the same ratios.
pub fn compression_ratio(text: &str) -> f64 {
    let src = text.as_bytes();
    // SAFETY: `compressBound` is a pure function of the length; `compress`
    // writes at most `dest_len` bytes into `dest`, a buffer of that size,
    // and reads `src.len()` bytes from `src`.
    let compressed = unsafe {
        let mut dest_len = compressBound(src.len() as c_ulong);
        let mut dest = vec![0u8; dest_len as usize];
        let rc = compress(
            dest.as_mut_ptr(),
            &mut dest_len,
            src.as_ptr(),
            src.len() as c_ulong,
        );
        if rc != 0 {
            // Z_OK is 0; the only failures are out of memory or a buffer
            // too small, neither possible with compressBound's size.
            return 1.0;
        }
        dest_len as f64
    };
    src.len() as f64 / compressed
}

/// faster-whisper's average log-probability from CTranslate2's score (the
/// cumulative log-probability divided by the length, with length penalty 1):
/// `score × len / (len + 1)`.
pub fn avg_logprob(score: f32, tokens: usize) -> f64 {
    let cumulative = score as f64 * tokens as f64;
    cumulative / (tokens as f64 + 1.0)
}

/// One decoding of one window, with what the guards look at.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Text tokens (no special tokens).
    pub tokens: Vec<usize>,
    pub avg_logprob: f64,
    pub compression_ratio: f64,
    pub no_speech_prob: f32,
    pub temperature: f32,
    /// The tokens hold a repetition loop (see [`find_loops`]).
    pub looped: bool,
}

impl Attempt {
    /// `text` is the decoded text of `tokens`; `avg_logprob` from
    /// [`avg_logprob`].
    pub fn new(
        tokens: Vec<usize>,
        text: &str,
        avg_logprob: f64,
        no_speech_prob: f32,
        temperature: f32,
    ) -> Self {
        let looped = !find_loops(&tokens).is_empty();
        Self {
            avg_logprob,
            compression_ratio: compression_ratio(text.trim()),
            no_speech_prob,
            temperature,
            looped,
            tokens,
        }
    }

    /// faster-whisper's silence rule: probably no speech, and decoded with
    /// low confidence. Such a window carries no words and is not decoded
    /// again.
    pub fn is_silent(&self) -> bool {
        self.no_speech_prob > NO_SPEECH_THRESHOLD && self.avg_logprob < LOG_PROB_THRESHOLD
    }

    fn too_repetitive(&self) -> bool {
        self.compression_ratio > COMPRESSION_RATIO_THRESHOLD || self.looped
    }

    /// Whether the window is decoded again at the next temperature.
    pub fn needs_fallback(&self) -> bool {
        !self.is_silent() && (self.too_repetitive() || self.avg_logprob < LOG_PROB_THRESHOLD)
    }
}

/// The attempt kept when every temperature needed a fallback: as
/// faster-whisper, the highest average log-probability among the attempts
/// that were not too repetitive, else among all. Its loops are then cut
/// (see [`cut_loops`]).
pub fn best_attempt(attempts: Vec<Attempt>) -> Option<Attempt> {
    let pick = |it: Vec<Attempt>| {
        it.into_iter()
            .max_by(|a, b| a.avg_logprob.total_cmp(&b.avg_logprob))
    };
    let (calm, repetitive): (Vec<_>, Vec<_>) =
        attempts.into_iter().partition(|a| !a.too_repetitive());
    if calm.is_empty() {
        pick(repetitive)
    } else {
        pick(calm)
    }
}

/// Ranges of `items` to drop so that no n-gram (1 ≤ n ≤ [`MAX_LOOP_NGRAM`])
/// occurs [`LOOP_OCCURRENCES`] or more times in a row: of each such run only
/// its first occurrence is kept. Scans left to right, shortest n first.
pub fn find_loops<T: PartialEq>(items: &[T]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    'scan: while i < items.len() {
        for n in 1..=MAX_LOOP_NGRAM {
            if i + n * LOOP_OCCURRENCES > items.len() {
                break;
            }
            let gram = &items[i..i + n];
            let mut k = 1;
            while i + (k + 1) * n <= items.len() && items[i + k * n..i + (k + 1) * n] == *gram {
                k += 1;
            }
            if k >= LOOP_OCCURRENCES {
                out.push(i + n..i + k * n);
                i += k * n;
                continue 'scan;
            }
        }
        i += 1;
    }
    out
}

/// Drops the repetitions [`find_loops`] finds. Returns whether any was.
pub fn cut_loops<T: PartialEq + Clone>(items: &mut Vec<T>) -> bool {
    cut_loops_by(items, |a, b| a == b)
}

/// [`cut_loops`] with an equality of its own (e.g. words compared without
/// case and punctuation).
pub fn cut_loops_by<T: Clone>(items: &mut Vec<T>, same: impl Fn(&T, &T) -> bool) -> bool {
    struct Key<'a, T, F: Fn(&T, &T) -> bool>(&'a T, &'a F);
    impl<T, F: Fn(&T, &T) -> bool> PartialEq for Key<'_, T, F> {
        fn eq(&self, other: &Self) -> bool {
            (self.1)(self.0, other.0)
        }
    }
    let ranges = {
        let keys: Vec<Key<'_, T, _>> = items.iter().map(|x| Key(x, &same)).collect();
        find_loops(&keys)
    };
    if ranges.is_empty() {
        return false;
    }
    let mut kept = Vec::with_capacity(items.len());
    let mut next = 0;
    for r in ranges {
        kept.extend_from_slice(&items[next..r.start]);
        next = r.end;
    }
    kept.extend_from_slice(&items[next..]);
    *items = kept;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python 3.11, zlib 1.2.13:
    /// `len(s.encode()) / len(zlib.compress(s.encode()))` of each text with
    /// trailing spaces stripped.
    #[test]
    fn compression_ratio_matches_pythons_zlib() {
        let cases = [
            ("Hello world.", 12.0 / 20.0),
            (
                "The secret is simple, and most creators never learn it.",
                55.0 / 61.0,
            ),
            (&"or, ".repeat(100), 399.0 / 17.0),
            (&"Thank you for watching. ".repeat(12), 287.0 / 37.0),
            ("Größe – 日本語のテキスト", 36.0 / 47.0),
        ];
        for (text, expected) in cases {
            let got = compression_ratio(text.trim_end());
            assert!(
                (got - expected).abs() < 1e-9,
                "{text:?}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn average_log_probability_is_faster_whispers() {
        // score -0.5 over 9 tokens: cumulative -4.5 over 10.
        assert!((avg_logprob(-0.5, 9) + 0.45).abs() < 1e-9);
        assert_eq!(avg_logprob(-0.5, 0), 0.0);
    }

    #[test]
    fn loops_are_found_and_cut_to_one_occurrence() {
        // "a b" five times inside other tokens.
        let mut t = vec![9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 7];
        assert_eq!(find_loops(&t), vec![3..11]);
        assert!(cut_loops(&mut t));
        assert_eq!(t, vec![9, 1, 2, 7]);
        // A single token 100 times.
        let mut t: Vec<u32> = std::iter::repeat_n(5, 100).chain([6]).collect();
        assert!(cut_loops(&mut t));
        assert_eq!(t, vec![5, 6]);
        // Four occurrences are speech ("no, no, no, no"), not a loop.
        let mut t = vec![1, 2, 1, 2, 1, 2, 1, 2, 3];
        assert!(!cut_loops(&mut t));
        assert_eq!(t.len(), 9);
        // A long phrase repeated, after a normal start.
        let phrase: Vec<u32> = (20..32).collect();
        let mut t: Vec<u32> = (0..10).collect();
        for _ in 0..6 {
            t.extend(&phrase);
        }
        assert!(cut_loops(&mut t));
        assert_eq!(t.len(), 10 + phrase.len());
    }

    #[test]
    fn words_compare_with_a_key() {
        let mut w = vec!["I", "or,", "Or", "or.", "OR", "or", "went"];
        let norm = |s: &&str| {
            s.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        };
        assert!(cut_loops_by(&mut w, |a, b| norm(a) == norm(b)));
        assert_eq!(w, vec!["I", "or,", "went"]);
    }

    fn attempt(avg: f64, cr: f64, nsp: f32, looped: bool) -> Attempt {
        Attempt {
            tokens: vec![1],
            avg_logprob: avg,
            compression_ratio: cr,
            no_speech_prob: nsp,
            temperature: 0.0,
            looped,
        }
    }

    #[test]
    fn fallback_follows_faster_whisper() {
        assert!(!attempt(-0.3, 1.5, 0.1, false).needs_fallback());
        assert!(
            attempt(-0.3, 2.6, 0.1, false).needs_fallback(),
            "repetitive"
        );
        assert!(attempt(-1.2, 1.5, 0.1, false).needs_fallback(), "unsure");
        assert!(attempt(-0.3, 1.5, 0.1, true).needs_fallback(), "loop");
        // Probably silence and unsure: no fallback, no words.
        let silent = attempt(-1.2, 2.6, 0.7, false);
        assert!(silent.is_silent() && !silent.needs_fallback());
        // Probably silence but confident: kept as speech.
        assert!(!attempt(-0.5, 1.5, 0.9, false).is_silent());
    }

    #[test]
    fn best_attempt_prefers_calm_text() {
        let all = vec![
            attempt(-0.2, 3.0, 0.1, false),
            attempt(-1.5, 1.4, 0.1, false),
            attempt(-1.1, 1.6, 0.1, false),
        ];
        let best = best_attempt(all).unwrap();
        assert_eq!(best.avg_logprob, -1.1);
        let all = vec![
            attempt(-0.9, 3.0, 0.1, false),
            attempt(-0.4, 1.0, 0.1, true),
        ];
        assert_eq!(best_attempt(all).unwrap().avg_logprob, -0.4);
    }
}
