//! Clips added after processing (issue 29): one the user picks by range,
//! scored and titled like the pipeline's own, and "more clips" — the next
//! best candidates of the kept transcript and signals that do not overlap
//! the clips the project has. Nothing is transcribed or analysed again.

use super::stages::cut::ClipPlan;
use super::stages::score::{self, Signals};
use super::stages::steer::Prompt;
use crate::media::audio::LOUDNESS_STEP;
use crate::transcript::Transcript;

/// The scoring signals of a project processed from the source's start:
/// the kept loudness series and scene changes (none when they were not
/// kept: the scene term then scores every clip alike).
pub fn signals(loudness_db: Vec<f32>, scene_changes: Option<Vec<f64>>) -> Signals {
    Signals {
        loudness_db,
        loudness_step: LOUDNESS_STEP,
        scene_changes: scene_changes.unwrap_or_default(),
    }
}

/// The clip `[start, end)` the user picked, scored and titled on the
/// sentences it covers.
pub fn user_clip(
    t: &Transcript,
    signals: &Signals,
    start: f64,
    end: f64,
    prompt: Option<&str>,
) -> ClipPlan {
    let prompt = prompt.and_then(Prompt::parse);
    let first = t
        .sentences
        .iter()
        .position(|s| s.end > start)
        .unwrap_or(t.sentences.len());
    let last = t
        .sentences
        .iter()
        .rposition(|s| s.start < end)
        .map_or(first, |i| (i + 1).max(first));
    let scored = score::score_span(t, signals, first, last, start, end, prompt.as_ref());
    ClipPlan {
        start,
        end,
        ..ClipPlan::from(scored)
    }
}

/// Share of either clip two clips may have in common and still both be
/// offered.
const MAX_OVERLAP: f64 = 0.3;

/// Up to `count` of the best candidates of `range` length that overlap no
/// clip of `existing` (source ranges) by more than [`MAX_OVERLAP`].
pub fn more_clips(
    t: &Transcript,
    signals: &Signals,
    range: (f64, f64),
    existing: &[(f64, f64)],
    count: usize,
    prompt: Option<&str>,
) -> Vec<ClipPlan> {
    let prompt = prompt.and_then(Prompt::parse);
    let overlaps = |a: (f64, f64), b: (f64, f64)| {
        let common = (a.1.min(b.1) - a.0.max(b.0)).max(0.0);
        common > MAX_OVERLAP * (a.1 - a.0).min(b.1 - b.0).max(0.001)
    };
    // Ask for enough that the ones kept can still fill `count`.
    let wanted = existing.len() * 3 + count * 3;
    let mut out: Vec<ClipPlan> = Vec::new();
    for c in score::select_clips_steered(t, signals, range, wanted, prompt.as_ref()) {
        let span = (c.start, c.end);
        let taken = existing.iter().any(|&e| overlaps(span, e))
            || out.iter().any(|p| overlaps(span, (p.start, p.end)));
        if !taken {
            out.push(ClipPlan::from(c));
        }
        if out.len() == count {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{sentences_from_words, Word};

    fn talk() -> Transcript {
        let text = "Why do short clips win? Because people decide fast. \
                    The first three seconds matter most. Open with a question! \
                    Nobody cares about your name. They care about your idea. \
                    Keep every sentence short. Cut the words that do not earn their place. \
                    Captions keep people watching. Most people watch without sound.";
        let words: Vec<Word> = text
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| Word {
                text: w.into(),
                start: i as f64 * 0.5,
                end: i as f64 * 0.5 + 0.4,
                probability: 0.9,
            })
            .collect();
        Transcript {
            language: "en".into(),
            language_probability: None,
            duration: words.len() as f64 * 0.5,
            sentences: sentences_from_words(&words),
            words,
        }
    }

    #[test]
    fn more_clips_do_not_repeat_the_clips_there_are() {
        let t = talk();
        let s = signals(vec![-20.0; 400], None);
        let first = more_clips(&t, &s, (5.0, 12.0), &[], 1, None);
        assert_eq!(first.len(), 1);
        let taken = [(first[0].start, first[0].end)];
        let next = more_clips(&t, &s, (5.0, 12.0), &taken, 2, None);
        assert!(!next.is_empty());
        for p in &next {
            let common = (p.end.min(taken[0].1) - p.start.max(taken[0].0)).max(0.0);
            assert!(
                common <= MAX_OVERLAP * (p.end - p.start),
                "{p:?} overlaps {taken:?}"
            );
            assert!(!p.title.is_empty() && p.score > 0);
        }
    }

    #[test]
    fn a_picked_range_is_scored_and_titled() {
        let t = talk();
        let s = signals(vec![-20.0; 400], None);
        let p = user_clip(&t, &s, 5.0, 12.0, Some("question"));
        assert_eq!((p.start, p.end), (5.0, 12.0));
        assert!(!p.title.is_empty() && !p.reason.is_empty(), "{p:?}");
    }
}
