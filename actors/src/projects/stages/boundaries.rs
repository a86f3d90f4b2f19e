//! Topic boundaries: the sentence starts a clip must not run across.
//!
//! At each sentence start (never inside a sentence) three signals are read:
//!
//! - a **long pause**: at least [`LONG_PAUSE_SECS`] of silence before it;
//! - a **vocabulary shift**: the cosine between the bags of content-word
//!   stems of the [`WINDOW_WORDS`] words before and after it (each window
//!   ending at a boundary already found) is below [`SHIFT_COSINE`] (both
//!   windows with at least [`MIN_WINDOW_WORDS`] words and
//!   [`MIN_WINDOW_STEMS`] content words); the
//!   sharpest shift is taken first (see [`find`]);
//! - a **scene cut** in the silence between the two sentences (±
//!   [`SCENE_TOLERANCE_SECS`]) that comes with a change of subject: a
//!   cosine (as above) below [`SCENE_COSINE`], or a pause of at least
//!   [`SCENE_PAUSE_SECS`]. A cut alone is not a boundary: jump-cut editing
//!   puts one between most sentences of a talk.
//!
//! Two recordings joined together typically show all three at the join.

use std::collections::HashSet;

use serde::Serialize;

use super::lexicon::{bag, content_stems, cosine};
use crate::transcript::{Sentence, Transcript};

/// Silence before a sentence that ends a topic on its own.
pub const LONG_PAUSE_SECS: f64 = 1.5;
/// Words on each side of a sentence start compared for a vocabulary shift.
pub const WINDOW_WORDS: usize = 80;
/// Fewer words than this on a side (a window cut short by the start or end
/// of the speech, or by a boundary): no vocabulary evidence. Two halves of
/// a shorter stretch share few words even on one subject.
pub const MIN_WINDOW_WORDS: usize = WINDOW_WORDS / 2;
/// Fewer content words than this on a side: no vocabulary evidence.
pub const MIN_WINDOW_STEMS: usize = 10;
/// Below this cosine the vocabulary changed sharply.
pub const SHIFT_COSINE: f64 = 0.08;
/// With a scene cut, a cosine below this is a change of subject.
pub const SCENE_COSINE: f64 = 0.15;
/// With a scene cut, a pause this long is a change of subject.
pub const SCENE_PAUSE_SECS: f64 = 0.7;
/// How far outside the silence between two sentences a scene cut may be
/// detected (frame and word timings are both approximate).
pub const SCENE_TOLERANCE_SECS: f64 = 0.25;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum BoundaryKind {
    Pause,
    Vocabulary,
    Scene,
}

/// A topic boundary before word `word` (the first word of a sentence).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Boundary {
    pub word: usize,
    /// Start of that word, in seconds.
    pub at: f64,
    pub kind: BoundaryKind,
}

/// The topic boundaries of `t`, in order; `scene_changes` in seconds.
///
/// Long pauses first; then, greedily, the sentence start with the sharpest
/// change of vocabulary below its threshold ([`SHIFT_COSINE`], or
/// [`SCENE_COSINE`] at a scene cut) becomes a boundary, and the windows of
/// the starts around it are cut at it before the next pick — so a change of
/// subject near another one is measured on its own topic's words, and one
/// change is one boundary.
pub fn find(t: &Transcript, scene_changes: &[f64]) -> Vec<Boundary> {
    let starts: Vec<&Sentence> = t
        .sentences
        .iter()
        .filter(|s| s.first_word > 0 && s.first_word < t.words.len())
        .collect();
    if starts.is_empty() {
        return Vec::new();
    }
    // Each word's content stem (if it is a content word), once.
    let stems: Vec<Option<String>> = t
        .words
        .iter()
        .map(|w| content_stems(&w.text).into_iter().next())
        .collect();
    let mut scenes: Vec<f64> = scene_changes
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    scenes.sort_by(f64::total_cmp);

    // Per start: its word, time, pause before it and whether a cut is there.
    let info: Vec<(usize, f64, f64, bool)> = starts
        .iter()
        .map(|s| {
            let p = s.first_word;
            let (prev_end, start) = (t.words[p - 1].end, t.words[p].start);
            let lo = scenes.partition_point(|&x| x < prev_end - SCENE_TOLERANCE_SECS);
            let cut = scenes
                .get(lo)
                .is_some_and(|&x| x <= start + SCENE_TOLERANCE_SECS);
            (p, start, start - prev_end, cut)
        })
        .collect();
    let mut kinds: Vec<Option<BoundaryKind>> = info
        .iter()
        .map(|&(_, _, pause, cut)| {
            if pause >= LONG_PAUSE_SECS {
                Some(BoundaryKind::Pause)
            } else if cut && pause >= SCENE_PAUSE_SECS {
                Some(BoundaryKind::Scene)
            } else {
                None
            }
        })
        .collect();
    let window = |lo: usize, hi: usize| {
        if hi - lo < MIN_WINDOW_WORDS {
            return None;
        }
        let bag = bag(stems[lo..hi].iter().flatten());
        (bag.values().sum::<u32>() as usize >= MIN_WINDOW_STEMS).then_some(bag)
    };
    loop {
        let taken: Vec<usize> = info
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| k.is_some())
            .map(|(i, _)| i.0)
            .collect();
        let mut best: Option<(f64, usize, BoundaryKind)> = None;
        for (i, &(p, _, _, cut)) in info.iter().enumerate() {
            if kinds[i].is_some() {
                continue;
            }
            // Windows end at the boundaries already found.
            let lo = taken
                .iter()
                .copied()
                .filter(|&q| q < p)
                .max()
                .unwrap_or(0)
                .max(p.saturating_sub(WINDOW_WORDS));
            let hi = taken
                .iter()
                .copied()
                .filter(|&q| q > p)
                .min()
                .unwrap_or(t.words.len())
                .min(p + WINDOW_WORDS);
            let (Some(before), Some(after)) = (window(lo, p), window(p, hi)) else {
                continue;
            };
            let c = cosine(&before, &after);
            let (limit, kind) = if cut {
                (SCENE_COSINE, BoundaryKind::Scene)
            } else {
                (SHIFT_COSINE, BoundaryKind::Vocabulary)
            };
            // The sharpest change relative to its threshold wins (ties: earlier).
            if c < limit && best.is_none_or(|(m, _, _)| c - limit < m) {
                best = Some((c - limit, i, kind));
            }
        }
        match best {
            Some((_, i, kind)) => kinds[i] = Some(kind),
            None => break,
        }
    }
    info.iter()
        .zip(kinds)
        .filter_map(|(&(word, at, _, _), kind)| {
            Some(Boundary {
                word,
                at,
                kind: kind?,
            })
        })
        .collect()
}

/// Word indexes of boundaries, for fast "does this run cross one" checks.
pub fn word_set(boundaries: &[Boundary]) -> HashSet<usize> {
    boundaries.iter().map(|b| b.word).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{sentences_from_words, Word};

    /// Sentences spoken back to back at 2.5 words/s, `gaps[i]` seconds of
    /// silence after sentence i.
    fn talk(sentences: &[&str], gaps: &[f64]) -> Transcript {
        let mut words = Vec::new();
        let mut t = 0.5;
        for (i, s) in sentences.iter().enumerate() {
            for w in s.split_whitespace() {
                words.push(Word {
                    text: w.into(),
                    start: t,
                    end: t + 0.3,
                    probability: 1.0,
                });
                t += 0.4;
            }
            t += gaps.get(i).copied().unwrap_or(0.3);
        }
        Transcript {
            language: "en".into(),
            language_probability: None,
            duration: t + 1.0,
            sentences: sentences_from_words(&words),
            words,
        }
    }

    const PASTA: &str = "Fresh pasta needs flour, eggs and patience in the kitchen. Knead the pasta dough until the dough feels smooth. Roll the pasta dough thin and cut wide noodles. Boil the noodles in salted water for two minutes. The sauce starts with garlic, olive oil and ripe tomatoes. Simmer the tomato sauce while the pasta water boils.";
    const TIDES: &str = "Ocean tides follow the pull of the moon on the seas. The moon drags a bulge of seawater around the planet. Coastal towns see high tide twice each lunar day. Spring tides happen when sun and moon align. Neap tides are weaker because the sun pulls sideways. Sailors read tide tables before leaving the harbour.";

    fn sentences_of(text: &str) -> Vec<&str> {
        text.split_inclusive(". ").map(str::trim).collect()
    }

    #[test]
    fn a_change_of_subject_is_one_boundary_at_the_join() {
        let mut s = sentences_of(PASTA);
        let join = s.len();
        s.extend(sentences_of(TIDES));
        let t = talk(&s, &[]);
        let b = find(&t, &[]);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!(
            (b[0].word, b[0].kind),
            (t.sentences[join].first_word, BoundaryKind::Vocabulary)
        );
        // One topic throughout: no boundary; with a scene cut between every
        // sentence (jump cuts), at most one, where the vocabulary changes most.
        let one = talk(&sentences_of(PASTA), &[]);
        assert!(find(&one, &[]).is_empty());
        let cuts: Vec<f64> = one.sentences.iter().map(|s| s.start - 0.15).collect();
        assert!(find(&one, &cuts).len() <= 1, "{:?}", find(&one, &cuts));
    }

    #[test]
    fn two_joins_a_window_apart_are_two_boundaries() {
        const BIKES: &str = "A bicycle chain wears out long before the gears do. Measure the chain with a simple gauge every few hundred kilometres. Clean the links with a rag and a little degreaser. Oil each roller, then wipe away everything outside. Check the brake pads for grooves and replace them when thin. Pump the tyres to the pressure printed on the sidewall.";
        let mut s = sentences_of(PASTA);
        let first = s.len();
        s.extend(sentences_of(TIDES));
        let second = s.len();
        s.extend(sentences_of(BIKES));
        let t = talk(&s, &[]);
        let words: Vec<usize> = find(&t, &[]).iter().map(|b| b.word).collect();
        assert_eq!(
            words,
            [
                t.sentences[first].first_word,
                t.sentences[second].first_word
            ]
        );
    }

    #[test]
    fn long_pauses_and_scene_cuts_with_a_pause() {
        let s = sentences_of(PASTA);
        let t = talk(&s, &[0.3, 1.6, 0.3, 0.8, 0.3]);
        assert!(find(&t, &[]).iter().all(|b| b.kind == BoundaryKind::Pause));
        assert_eq!(find(&t, &[]).len(), 1);
        let cut_in_pause = t.sentences[4].start - 0.4;
        let mid_sentence = (t.sentences[2].start + t.sentences[2].end) / 2.0;
        let b = find(&t, &[cut_in_pause, mid_sentence]);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(
            (b[1].word, b[1].kind),
            (t.sentences[4].first_word, BoundaryKind::Scene)
        );
    }
}
