//! The transcript model shared by every stage: words with times, sentences
//! rebuilt from words and punctuation, and the display helpers of the contract.

use serde::{Deserialize, Serialize};

/// One recognised word. `text` keeps its punctuation ("world," / "why?").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Word {
    pub text: String,
    /// Seconds from the start of the source.
    pub start: f64,
    pub end: f64,
    pub probability: f32,
}

/// A sentence: a run of words ending with terminal punctuation (or a long pause).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sentence {
    pub text: String,
    pub start: f64,
    pub end: f64,
    /// Index of the first word in `Transcript::words`.
    pub first_word: usize,
    /// Index one past the last word in `Transcript::words`.
    pub end_word: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    /// ISO 639-1 code, e.g. "en".
    pub language: String,
    /// How sure detection was of `language` (the model's probability,
    /// averaged over the first speech windows); 1 when the user chose it;
    /// `None` in transcripts made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_probability: Option<f64>,
    /// Seconds of audio that were transcribed.
    pub duration: f64,
    pub sentences: Vec<Sentence>,
    pub words: Vec<Word>,
}

/// A pause longer than this closes a sentence even without punctuation.
const SENTENCE_PAUSE_SECS: f64 = 1.2;
/// A sentence longer than this many words is closed at the next comma or pause.
const MAX_SENTENCE_WORDS: usize = 40;

/// Whether `text` (a word, or words) ends a sentence: a final stop,
/// question or exclamation mark (closing quotes and brackets aside) that is
/// not an abbreviation's.
pub fn ends_sentence(text: &str) -> bool {
    let t = text
        .trim()
        .trim_end_matches(['"', '\'', ')', ']', '»', '”', '’']);
    t.ends_with(['.', '?', '!', '…', '。', '？', '！'])
        && !is_abbreviation(t.rsplit(char::is_whitespace).next().unwrap_or(t))
}

/// English abbreviations whose full stop is not a sentence's ("Roe v.
/// Wade", "Mr. Smith"); only those that hardly ever end one.
fn is_abbreviation(word: &str) -> bool {
    const ABBREVIATIONS: [&str; 9] = [
        "mr.", "mrs.", "ms.", "dr.", "prof.", "v.", "vs.", "e.g.", "i.e.",
    ];
    ABBREVIATIONS.iter().any(|a| word.eq_ignore_ascii_case(a))
}

impl Transcript {
    /// Rebuilds `sentences` from `words` using punctuation and pauses.
    pub fn rebuild_sentences(&mut self) {
        self.sentences = sentences_from_words(&self.words);
    }

    /// The words whose middle lies inside `[start, end)`.
    pub fn words_in(&self, start: f64, end: f64) -> &[Word] {
        let lo = self
            .words
            .partition_point(|w| (w.start + w.end) / 2.0 < start);
        let hi = self
            .words
            .partition_point(|w| (w.start + w.end) / 2.0 < end);
        &self.words[lo..hi.max(lo)]
    }

    pub fn text(&self) -> String {
        join_words(&self.words)
    }
}

/// Joins words into display text (words carry their own punctuation).
/// The words' text, joined with spaces except between words written without
/// them (CJK, Thai).
pub fn join_words(words: &[Word]) -> String {
    crate::script::join(words.iter().map(|w| w.text.as_str()))
}

pub fn sentences_from_words(words: &[Word]) -> Vec<Sentence> {
    let gap = |i: usize| {
        words
            .get(i + 1)
            .map_or(f64::INFINITY, |n| n.start - words[i].end)
    };
    let mut out = Vec::new();
    let mut first = 0usize;
    let mut i = 0usize;
    while i < words.len() {
        let last = i + 1 == words.len();
        let count = i + 1 - first;
        let pause = !last && gap(i) >= SENTENCE_PAUSE_SECS;
        let soft = count >= MAX_SENTENCE_WORDS
            && (words[i]
                .text
                .ends_with([',', ';', ':', '，', '、', '；', '：'])
                || pause);
        let mut end = i;
        if !(last || ends_sentence(&words[i].text) || pause || soft) {
            if count < 2 * MAX_SENTENCE_WORDS {
                i += 1;
                continue;
            }
            // Too long without a comma or pause (Whisper often writes
            // Chinese without punctuation): closed after the word followed
            // by the longest silence in its second half, never inside a
            // word written as several pieces ("接" "下来").
            end = (first + MAX_SENTENCE_WORDS - 1..=i)
                .max_by(|&a, &b| gap(a).total_cmp(&gap(b)))
                .unwrap_or(i);
        }
        let slice = &words[first..=end];
        out.push(Sentence {
            text: join_words(slice),
            start: slice[0].start,
            end: slice[slice.len() - 1].end,
            first_word: first,
            end_word: end + 1,
        });
        first = end + 1;
        i = first;
    }
    out
}

/// Display form "M:SS" of the contract (minutes are not wrapped into hours).
pub fn display_duration(secs: f64) -> String {
    let total = if secs.is_finite() && secs > 0.0 {
        secs.round() as u64
    } else {
        0
    };
    format!("{}:{:02}", total / 60, total % 60)
}

/// Words for tests: `w`, one word (probability 1); `words`, the words of a
/// text, one every `step` seconds, each lasting 80 % of it.
#[cfg(test)]
pub(crate) mod test_words {
    use super::Word;

    pub fn w(text: &str, start: f64, end: f64) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            probability: 1.0,
        }
    }

    pub fn words(text: &str, step: f64) -> Vec<Word> {
        text.split_whitespace()
            .enumerate()
            .map(|(i, t)| w(t, i as f64 * step, i as f64 * step + step * 0.8))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_words::w;
    use super::*;

    /// The zh lecture of ../shared/media: 80 pieces without punctuation
    /// closed a sentence between "接" and "下来".
    #[test]
    fn a_sentence_too_long_closes_at_its_longest_silence() {
        let mut t = 0.0;
        let words: Vec<Word> = (0..100)
            .map(|i| {
                // A short breath after piece 55; none anywhere else.
                t += if i == 56 { 0.15 } else { 0.0 };
                let word = w("字", t, t + 0.2);
                t += 0.2;
                word
            })
            .collect();
        let s = sentences_from_words(&words);
        assert_eq!(s[0].end_word, 56, "{s:?}");
        assert_eq!(s.iter().map(|s| s.end_word).next_back(), Some(100));
        // Every sentence but the last is at least 40 pieces long.
        assert!(s[..s.len() - 1]
            .iter()
            .all(|s| s.end_word - s.first_word >= MAX_SENTENCE_WORDS));
    }

    #[test]
    fn sentences_split_on_punctuation_and_pauses() {
        let words = vec![
            w("Hello", 0.0, 0.4),
            w("there.", 0.5, 0.9),
            w("Why", 1.0, 1.2),
            w("not?", 1.3, 1.6),
            w("Next", 3.5, 3.8),
            w("one", 3.9, 4.1),
        ];
        let s = sentences_from_words(&words);
        let texts: Vec<_> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["Hello there.", "Why not?", "Next one"]);
        assert_eq!((s[1].first_word, s[1].end_word), (2, 4));
        assert_eq!(s[2].start, 3.5);
    }

    /// The debate of ../shared/media: "Roe v." closed a sentence.
    #[test]
    fn an_abbreviation_does_not_close_a_sentence() {
        let words = vec![
            w("her", 0.0, 0.2),
            w("view", 0.2, 0.5),
            w("on", 0.5, 0.6),
            w("Roe", 0.6, 0.9),
            w("v.", 0.9, 1.0),
            w("Wade.", 1.1, 1.4),
            w("Ask", 1.6, 1.8),
            w("Dr.", 1.8, 2.0),
            w("Who.", 2.0, 2.3),
        ];
        let s = sentences_from_words(&words);
        let texts: Vec<_> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["her view on Roe v. Wade.", "Ask Dr. Who."]);
    }

    #[test]
    fn display_duration_is_m_ss() {
        assert_eq!(display_duration(0.0), "0:00");
        assert_eq!(display_duration(59.6), "1:00");
        assert_eq!(display_duration(754.0), "12:34");
        assert_eq!(display_duration(f64::NAN), "0:00");
    }

    #[test]
    fn words_in_uses_word_middles() {
        let t = Transcript {
            words: vec![w("a", 0.0, 1.0), w("b", 1.0, 2.0), w("c", 2.0, 3.0)],
            ..Default::default()
        };
        let got: Vec<_> = t
            .words_in(0.9, 2.6)
            .iter()
            .map(|w| w.text.clone())
            .collect();
        assert_eq!(got, ["b", "c"]);
    }
}
