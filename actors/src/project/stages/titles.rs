//! Clip titles as headlines: a complete clause of at most
//! [`MAX_TITLE_CHARS`] characters taken from the clip's own words.
//!
//! A sentence is split into clauses after `, ; : —` and before a
//! subordinating word ("because", "although", "which", …). The title is the
//! whole sentence when it fits, else its longest run of leading clauses that
//! fits — never a clause cut in the middle, never ending on a conjunction,
//! preposition, article or possessive ("because", "and", "of", "my").
//! Only when no sentence of the clip has such a clause is a sentence cut at
//! a word boundary (a single 90-character clause, say).

use super::lexicon::{hook_strength, normalize, CONNECTIVES, FILLERS};

/// The longest title [`make_title`] returns, in characters.
pub const MAX_TITLE_CHARS: usize = 60;

/// A clause shorter than this many words is not a headline on its own.
const MIN_HEADLINE_WORDS: usize = 3;

/// Words a title never ends on.
#[rustfmt::skip]
const DANGLING: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "so", "of", "to", "in", "on", "at", "for", "with",
    "from", "by", "as", "that", "which", "is", "are", "was", "were", "my", "your", "our",
    "their", "its", "his", "because", "cause", "if", "when", "while", "although", "though",
    "unless", "whether", "nor", "about", "into", "onto", "than", "through", "without", "after",
    "before", "over", "under", "between", "i", "we", "you've", "i'm", "it's", "not",
];

/// Words that open a new (subordinate) clause.
#[rustfmt::skip]
const CLAUSE_OPENERS: &[&str] = &[
    "because", "cause", "although", "though", "unless", "whereas", "while", "but", "which",
    "since", "whether", "until",
];

/// A headline for a clip whose sentences (in order) are `sentence_texts`:
/// among the first two sentences, the one with a headline of at least three
/// words, then the stronger hook, then the earlier one; the later sentences
/// only when the first two have none. Capitalised, no trailing punctuation
/// other than `?` or `!`.
pub fn make_title(sentence_texts: &[&str]) -> String {
    let pick = |texts: &[&str]| {
        let mut best: Option<(bool, f64, String)> = None;
        for text in texts {
            let Some(title) = headline(text) else {
                continue;
            };
            let key = (
                title.split_whitespace().count() >= MIN_HEADLINE_WORDS,
                hook_strength(text),
            );
            if best
                .as_ref()
                .is_none_or(|b| key.0 > b.0 || (key.0 == b.0 && key.1 > b.1))
            {
                best = Some((key.0, key.1, title));
            }
        }
        best.map(|b| b.2)
    };
    let head = &sentence_texts[..sentence_texts.len().min(2)];
    pick(head)
        .or_else(|| pick(sentence_texts.get(2..).unwrap_or_default()))
        .or_else(|| {
            sentence_texts
                .iter()
                .map(|s| cut_at_word(&words_of(s)))
                .find(|t| !t.is_empty())
        })
        .unwrap_or_default()
}

/// The sentence's words without leading fillers and connectives ("So, and
/// here's why…" → "here's why…"), but never all of them.
fn words_of(sentence: &str) -> Vec<&str> {
    let mut words: Vec<&str> = sentence.split_whitespace().collect();
    let skip = words
        .iter()
        .take_while(|w| {
            let n = normalize(w);
            FILLERS.contains(&n.as_str()) || CONNECTIVES.contains(&n.as_str())
        })
        .count();
    if skip < words.len() {
        words.drain(..skip);
    }
    words
}

/// The whole sentence, or its longest run of leading whole clauses, that
/// fits in a title and does not end on a dangling word; `None` when not even
/// the first clause does.
fn headline(sentence: &str) -> Option<String> {
    let words = words_of(sentence);
    if words.is_empty() {
        return None;
    }
    // Clause ends: after punctuation, before a clause opener, and the end.
    let mut ends: Vec<usize> = (1..words.len())
        .filter(|&i| {
            let prev = words[i - 1].trim_end_matches(['"', '\'', ')', '”', '’']);
            prev.ends_with([',', ';', ':', '—', '–'])
                || CLAUSE_OPENERS.contains(&normalize(words[i]).as_str())
        })
        .collect();
    ends.push(words.len());
    ends.into_iter()
        .rev()
        .map(|end| finish(&words[..end]))
        .find(|t| {
            let n = t.chars().count();
            n > 0
                && n <= MAX_TITLE_CHARS
                && t.rsplit(' ')
                    .next()
                    .is_some_and(|last| !DANGLING.contains(&normalize(last).as_str()))
        })
}

/// Joins words into a title: first letter capitalised, trailing punctuation
/// other than `?` and `!` removed.
fn finish(words: &[&str]) -> String {
    let mut title = String::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            title.push(' ');
        }
        if i == 0 {
            title.push_str(&capitalize(word));
        } else {
            title.push_str(word);
        }
    }
    while title.ends_with(|c: char| !c.is_alphanumeric() && c != '?' && c != '!') {
        title.pop();
    }
    title
}

/// The last resort: as many whole words as fit, without a dangling last word.
fn cut_at_word(words: &[&str]) -> String {
    let mut title = String::new();
    let mut truncated = false;
    for (i, word) in words.iter().enumerate() {
        let word = if i == 0 {
            capitalize(word)
        } else {
            (*word).to_string()
        };
        let extra = word.chars().count() + usize::from(!title.is_empty());
        if title.chars().count() + extra > MAX_TITLE_CHARS {
            if title.is_empty() {
                // A single word longer than a title: nothing better than cutting it.
                title = word.chars().take(MAX_TITLE_CHARS).collect();
            }
            truncated = true;
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(&word);
    }
    if truncated {
        while let Some((head, last)) = title.rsplit_once(' ') {
            if !DANGLING.contains(&normalize(last).as_str()) {
                break;
            }
            title.truncate(head.len());
        }
    }
    while title.ends_with(|c: char| !c.is_alphanumeric() && c != '?' && c != '!') {
        title.pop();
    }
    title
}

fn capitalize(word: &str) -> String {
    let Some(pos) = word.find(char::is_alphanumeric) else {
        return word.to_string();
    };
    let (head, rest) = word.split_at(pos);
    let mut chars = rest.chars();
    let first = chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>())
        .unwrap_or_default();
    format!("{head}{first}{}", chars.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_fragment_becomes_a_complete_clause() {
        // The real two-minute talk of issue 15 gave the fragment "That might
        // seem a bit surprising because my full-time work".
        let title = make_title(&[
            "That might seem a bit surprising because my full-time work is in software engineering, not in video.",
        ]);
        assert_eq!(title, "That might seem a bit surprising");
    }

    #[test]
    fn longest_fitting_run_of_clauses_without_a_dangling_end() {
        assert_eq!(
            make_title(&[
                "If you want to grow, post every day, and answer every single comment you get."
            ]),
            "If you want to grow, post every day"
        );
        // Ends on a clause, not on "my" or "and".
        let t = make_title(&["We tried it for a year, and my team and I learned more than in the ten years before that."]);
        assert_eq!(t, "We tried it for a year");
        // A whole sentence that fits is kept as it is (minus the full stop).
        assert_eq!(
            make_title(&["Salt the water before the pasta goes in."]),
            "Salt the water before the pasta goes in"
        );
    }

    #[test]
    fn never_ends_on_a_conjunction_or_preposition() {
        for s in [
            "The reason this works so well for beginners is simple because it builds on habits you already have.",
            "Most creators give up after a month, but the ones who stay for a year grow ten times faster than the rest.",
        ] {
            let t = make_title(&[s]);
            let last = normalize(t.rsplit(' ').next().unwrap());
            assert!(!DANGLING.contains(&last.as_str()), "{t}");
            assert!(t.chars().count() <= MAX_TITLE_CHARS && !t.ends_with(','), "{t}");
        }
    }
}
