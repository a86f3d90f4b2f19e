//! Keyword emphasis: the words of a caption that carry the information are
//! drawn in the template's highlight colour even when they are not being
//! spoken. A word is salient when it is
//! - a number: it contains a digit ("2024", "$5", "10%", "٣");
//! - a name: it starts with a capital letter and does not start a sentence
//!   (the pronoun "I" and its contractions excepted); scripts without case
//!   (Arabic, Hebrew, CJK…) have no names by this rule;
//! - a rare word: at least [`RARE_LETTERS`] letters (long words are the rare
//!   ones, Zipf's law of abbreviation) and not one of the frequent long
//!   English words of [`COMMON_LONG`]. Words written without spaces (CJK,
//!   Thai) are never rare by length.

use std::fmt::Write as _;

use super::ass_format::{alpha_value, AssColor};
use crate::script::unspaced_word;
use crate::transcript::ends_sentence;

/// A word of at least this many letters is rare unless listed in [`COMMON_LONG`].
pub const RARE_LETTERS: usize = 8;

/// Frequent English words of [`RARE_LETTERS`] letters or more (lower case).
pub const COMMON_LONG: &[&str] = &[
    "absolutely",
    "actually",
    "although",
    "anything",
    "anywhere",
    "basically",
    "business",
    "certainly",
    "children",
    "complete",
    "completely",
    "consider",
    "continue",
    "definitely",
    "different",
    "directly",
    "discover",
    "everybody",
    "everyone",
    "everything",
    "everywhere",
    "exciting",
    "generally",
    "happened",
    "happening",
    "important",
    "including",
    "increase",
    "instead",
    "interest",
    "interested",
    "interesting",
    "literally",
    "obviously",
    "personal",
    "possible",
    "probably",
    "question",
    "questions",
    "remember",
    "seriously",
    "somebody",
    "something",
    "sometimes",
    "somewhere",
    "starting",
    "straight",
    "thinking",
    "thousand",
    "together",
    "tomorrow",
    "understand",
    "whatever",
    "whenever",
    "wherever",
    "yourself",
    "yourselves",
    "ourselves",
    "themselves",
    "yesterday",
    "beautiful",
    "everyday",
];

/// Which of `words` (in spoken order, so sentence starts can be told) are
/// salient; see the module documentation.
pub fn salient(words: &[&str]) -> Vec<bool> {
    let mut out = Vec::with_capacity(words.len());
    let mut sentence_start = true;
    for w in words {
        let w = w.trim();
        let starts = sentence_start;
        if !w.is_empty() {
            sentence_start = ends_sentence(w);
        }
        out.push(is_number(w) || (!starts && is_name(w)) || is_rare(w));
    }
    out
}

fn is_number(w: &str) -> bool {
    w.chars().any(char::is_numeric)
}

fn is_name(w: &str) -> bool {
    let core = w.trim_start_matches(|c: char| !c.is_alphanumeric());
    let mut chars = core.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let pronoun = core == "I" || core.starts_with("I'") || core.starts_with("I’");
    first.is_uppercase() && chars.next().is_some() && !pronoun
}

fn is_rare(w: &str) -> bool {
    if unspaced_word(w) {
        return false;
    }
    let letters: String = w
        .chars()
        .filter(|c| c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect();
    letters.chars().count() >= RARE_LETTERS && !COMMON_LONG.contains(&letters.as_str())
}

/// Tags (open, close) that draw a salient word in the highlight colour;
/// `None` when the highlight is the font colour (nothing to show). Karaoke
/// sets the colour before the sweep (`\2c`), the others the fill (`\1c`).
pub(crate) fn emphasis_tags(
    font: AssColor,
    highlight: AssColor,
    karaoke: bool,
) -> Option<(String, String)> {
    if font.style_value() == highlight.style_value() {
        return None;
    }
    let tag = if karaoke { "2" } else { "1" };
    let mut open = format!("\\{tag}c{}", highlight.override_value());
    let mut close = format!("\\{tag}c{}", font.override_value());
    if highlight.alpha != font.alpha {
        let _ = write!(open, "\\{tag}a{}", alpha_value(highlight.alpha));
        let _ = write!(close, "\\{tag}a{}", alpha_value(font.alpha));
    }
    Some((open, close))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(text: &str) -> Vec<&str> {
        let words: Vec<&str> = text.split_whitespace().collect();
        words
            .iter()
            .zip(salient(&words))
            .filter(|(_, s)| *s)
            .map(|(w, _)| *w)
            .collect()
    }

    #[test]
    fn numbers_names_and_rare_words_are_salient() {
        assert_eq!(
            marked("So I met Sarah in Lisbon and we raised $5 million for photosynthesis work."),
            ["Sarah", "Lisbon", "$5", "photosynthesis"]
        );
    }

    #[test]
    fn sentence_starts_pronouns_and_common_words_are_not() {
        assert!(
            marked("Today we talk. Everything changes, I think, and I'm excited about it.")
                .is_empty()
        );
        assert!(marked("This is actually something different").is_empty());
    }

    #[test]
    fn scripts_without_case_or_spaces() {
        assert_eq!(marked("שלום עולם 2024"), ["2024"]);
        assert_eq!(
            marked("我们 讨论 人工智能 的 未来 发展 趋势 和 影响"),
            Vec::<&str>::new()
        );
    }
}
