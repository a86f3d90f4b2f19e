//! The clip editor's rules (issue 29), apart from running anything: where
//! an edited range may lie and how it snaps to the words, which transcript
//! word each of a clip's caption words is, and the plan a re-render draws.
//! The clip editor (`projects::clip_edit`) applies them to stored clips.

use super::clip_history::ClipEdits;
use super::stages::cut::ClipPlan;
use super::stages::fillers;
use crate::transcript::{Transcript, Word};

/// Why an edit cannot be made (the user's to fix).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct EditInvalid {
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: String) -> EditInvalid {
    EditInvalid { field, message }
}

/// Shortest and longest clip an edit may make for a project of `preset`:
/// the preset's range ±50 % (`auto`: from 1 s, since the service makes
/// clips of whatever short speech a video has).
pub fn length_bounds(preset: &str) -> (f64, f64) {
    let (min, max) = super::stages::score::preset_range(preset).unwrap_or((20.0, 60.0));
    let shortest = if preset == "auto" { 1.0 } else { min * 0.5 };
    (shortest, max * 1.5)
}

/// A start inside a word moves back to the word's start; one in a pause
/// between words stays (it already cuts no word).
pub fn snap_start(words: &[Word], t: f64) -> f64 {
    match words.iter().find(|w| w.start < t && t < w.end) {
        Some(w) => w.start,
        None => t,
    }
}

/// An end inside a word moves on to the word's end; one in a pause stays.
pub fn snap_end(words: &[Word], t: f64) -> f64 {
    match words.iter().find(|w| w.start < t && t < w.end) {
        Some(w) => w.end,
        None => t,
    }
}

/// The range `[start, end)` an edit asks for, snapped to the words and
/// checked: inside the source's processed `span`, and as long as
/// [`length_bounds`] allows.
pub fn checked_range(
    transcript: &Transcript,
    span: (f64, f64),
    preset: &str,
    start: f64,
    end: f64,
) -> Result<(f64, f64), EditInvalid> {
    if !start.is_finite() || !end.is_finite() {
        return Err(invalid("startSec", "must be a number of seconds".into()));
    }
    if start < span.0 - 1e-6 || end > span.1 + 0.05 {
        return Err(invalid(
            "endSec",
            format!(
                "the range must lie within the processed source, {:.2}–{:.2} s",
                span.0, span.1
            ),
        ));
    }
    let start = snap_start(&transcript.words, start.max(span.0));
    let end = snap_end(&transcript.words, end.min(span.1));
    let (shortest, longest) = length_bounds(preset);
    let length = end - start;
    if !(shortest - 1e-6..=longest + 1e-6).contains(&length) {
        return Err(invalid(
            "endSec",
            format!(
                "the clip would last {length:.1} s; clips of this project last {shortest:.0} to {longest:.0} s"
            ),
        ));
    }
    if !transcript
        .words
        .iter()
        .any(|w| w.end > start && w.start < end)
    {
        return Err(invalid("startSec", "the range holds no speech".into()));
    }
    Ok((start, end))
}

/// The transcript index of each of the clip's caption words, in order:
/// the words of `[start, end)` not inside a cut (the words
/// `fillers::clip_words` keeps).
pub fn clip_word_indices(words: &[Word], start: f64, end: f64, cuts: &[(f64, f64)]) -> Vec<usize> {
    (0..words.len())
        .filter(|&i| words[i].end > start && words[i].start < end)
        .filter(|&i| {
            let mid = (words[i].start + words[i].end) / 2.0;
            !cuts.iter().any(|&(a, b)| a <= mid && mid < b)
        })
        .collect()
}

/// The clip's caption words on the clip's timeline with their transcript
/// indices and the text the version shows (a fixed word's new text, empty
/// for a word left out), for the editor.
pub fn clip_words(
    transcript: &Transcript,
    start: f64,
    end: f64,
    cuts: &[(f64, f64)],
    edits: &ClipEdits,
) -> Vec<(usize, Word)> {
    let index = clip_word_indices(&transcript.words, start, end, cuts);
    let timed = fillers::clip_words(&transcript.words, start, end, cuts);
    index
        .into_iter()
        .zip(timed)
        .map(|(i, mut w)| {
            if let Some(text) = edits.word(i) {
                w.text = text.to_string();
            }
            (i, w)
        })
        .collect()
}

/// `fixes` (index among the clip's caption words, new text) as transcript
/// word fixes merged into `edits`; an index the clip does not have is an
/// error, text is trimmed and must be one line of at most 100 characters.
pub fn merge_word_fixes(
    words: &[Word],
    clip: (f64, f64, &[(f64, f64)]),
    fixes: &[(usize, String)],
    edits: &mut ClipEdits,
) -> Result<(), EditInvalid> {
    let index = clip_word_indices(words, clip.0, clip.1, clip.2);
    for (i, text) in fixes {
        let Some(&at) = index.get(*i) else {
            return Err(invalid(
                "words",
                format!("the clip has {} words; there is no word {i}", index.len()),
            ));
        };
        let text = text.trim();
        if text.chars().count() > 100 || !crate::accounts::text::line_ok(text) {
            return Err(invalid(
                "words",
                "a word's text is one line of at most 100 characters, without control characters"
                    .into(),
            ));
        }
        edits.words.retain(|(w, _)| *w as usize != at);
        if words[at].text.trim() != text {
            edits.words.push((at as u32, text.to_string()));
        }
    }
    edits.words.sort_by_key(|(i, _)| *i);
    Ok(())
}

/// The transcript with a version's word fixes applied (a left-out word
/// keeps its timing with empty text; the caption stage drops it).
pub fn fixed_transcript(transcript: &Transcript, edits: &ClipEdits) -> Transcript {
    let mut t = transcript.clone();
    for (i, text) in &edits.words {
        if let Some(w) = t.words.get_mut(*i as usize) {
            w.text = text.clone();
        }
    }
    t
}

/// The plan a re-render of `[start, end)` draws: the clip's title, score
/// and reason, the words of the range and, with filler removal, the
/// range's filler cuts.
pub fn plan_for(
    transcript: &Transcript,
    base: &ClipPlan,
    start: f64,
    end: f64,
    remove_fillers: bool,
) -> ClipPlan {
    let words = &transcript.words;
    let first_word = words
        .iter()
        .position(|w| w.end > start)
        .unwrap_or(words.len());
    let end_word = words
        .iter()
        .rposition(|w| w.start < end)
        .map_or(first_word, |i| (i + 1).max(first_word));
    let cuts = if remove_fillers {
        fillers::clip_cuts(words, &fillers::filler_marks(words), start, end)
    } else {
        Vec::new()
    };
    ClipPlan {
        start,
        end,
        first_word,
        end_word,
        cuts,
        ..base.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, start: f64, end: f64) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            probability: 0.9,
        }
    }

    fn transcript() -> Transcript {
        let words = vec![
            w("Salt", 1.0, 1.4),
            w("makes", 1.5, 1.9),
            w("pasta", 2.0, 2.6),
            w("um", 2.8, 3.0),
            w("better.", 3.2, 3.9),
            w("Always.", 12.0, 12.8),
        ];
        Transcript {
            language: "en".into(),
            language_probability: None,
            duration: 20.0,
            sentences: crate::transcript::sentences_from_words(&words),
            words,
        }
    }

    #[test]
    fn ranges_snap_to_whole_words() {
        let t = transcript();
        assert_eq!(snap_start(&t.words, 1.7), 1.5);
        assert_eq!(snap_start(&t.words, 1.95), 1.95);
        assert_eq!(snap_end(&t.words, 3.5), 3.9);
        assert_eq!(
            checked_range(&t, (0.0, 20.0), "auto", 1.2, 12.5),
            Ok((1.0, 12.8))
        );
        // Outside the source, too short for the preset, or silent.
        assert!(checked_range(&t, (0.0, 20.0), "auto", 1.0, 25.0).is_err());
        assert_eq!(
            checked_range(&t, (0.0, 20.0), "15-30", 1.0, 4.0)
                .unwrap_err()
                .field,
            "endSec"
        );
        assert!(checked_range(&t, (0.0, 20.0), "auto", 5.0, 9.0).is_err());
        assert!(checked_range(&t, (0.0, 20.0), "auto", f64::NAN, 9.0).is_err());
        assert_eq!(length_bounds("30-60"), (15.0, 90.0));
    }

    #[test]
    fn word_fixes_are_kept_by_transcript_index() {
        let t = transcript();
        let cuts = [(2.7, 3.1)];
        // The filler is cut: caption word 3 is "better.".
        assert_eq!(clip_word_indices(&t.words, 1.0, 4.0, &cuts), [0, 1, 2, 4]);
        let mut edits = ClipEdits::default();
        merge_word_fixes(
            &t.words,
            (1.0, 4.0, &cuts),
            &[(3, " best. ".into()), (0, "".into())],
            &mut edits,
        )
        .unwrap();
        assert_eq!(edits.words, [(0, String::new()), (4, "best.".into())]);
        let shown = clip_words(&t, 1.0, 4.0, &cuts, &edits);
        assert_eq!(shown[3].0, 4);
        assert_eq!(shown[3].1.text, "best.");
        assert_eq!(shown[0].1.text, "");
        // Setting a word back to what was heard drops its fix.
        merge_word_fixes(
            &t.words,
            (1.0, 4.0, &cuts),
            &[(3, "better.".into())],
            &mut edits,
        )
        .unwrap();
        assert_eq!(edits.words, [(0, String::new())]);
        let bad = merge_word_fixes(&t.words, (1.0, 4.0, &cuts), &[(4, "x".into())], &mut edits);
        assert_eq!(bad.unwrap_err().field, "words");
        let two_lines = merge_word_fixes(
            &t.words,
            (1.0, 4.0, &cuts),
            &[(1, "a\nb".into())],
            &mut edits,
        );
        assert!(two_lines.is_err());
        assert_eq!(fixed_transcript(&t, &edits).words[0].text, "");
    }

    #[test]
    fn a_plan_covers_the_words_of_its_range() {
        let t = transcript();
        let base = ClipPlan {
            start: 1.0,
            end: 4.0,
            score: 80,
            title: "Salt".into(),
            first_word: 0,
            end_word: 5,
            reason: String::new(),
            scores: Default::default(),
            cuts: Vec::new(),
        };
        let p = plan_for(&t, &base, 1.5, 12.8, true);
        assert_eq!((p.first_word, p.end_word), (1, 6));
        assert_eq!(p.cuts.len(), 1);
        assert_eq!((p.title.as_str(), p.score), ("Salt", 80));
        assert!(plan_for(&t, &base, 1.5, 12.8, false).cuts.is_empty());
    }
}
