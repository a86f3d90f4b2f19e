//! Clip titles as headlines: a complete phrase at most [`MAX_TITLE_CHARS`]
//! wide, taken from the clip's strongest sentence.
//!
//! Every sentence of the clip is weighed by its hook strength (question,
//! hook opener, "you", numbers, emphasis words, brevity); the title comes
//! from the strongest sentence that has a headline of at least three words
//! (ties: the earlier sentence). Within a sentence, a headline is a run of
//! whole clauses that fits and is a complete phrase (`phrase.rs` says where
//! clauses begin and which runs are complete); among those, a run that asks
//! or exclaims comes first, then the whole sentence, then a run from the
//! sentence's start (from its end in Korean and Japanese, whose predicates
//! come last), then the widest. Width counts a CJK or Hangul character as
//! two Latin letters, so a Chinese title has at most 30 characters. Only
//! when no sentence has such a run is the strongest sentence cut at a word
//! boundary.

use std::cmp::Reverse;

use super::lexicon::{ends_terminal, hook_strength, is_stop_word, normalize, EMPHASIS_WORDS};
use super::phrase::{
    bad_end, cjk_fragment_opener, clause_starts, complete_en, ends_with_clause_mark, lead_skip,
    open_subordinate, width, Lang,
};

/// The widest title [`make_title`] returns, in Latin letters (a CJK or
/// Hangul character counts two).
pub const MAX_TITLE_CHARS: usize = 60;

/// A clause shorter than this many distinct words is not a headline on its own.
const MIN_HEADLINE_WORDS: usize = 3;
/// A CJK or Korean headline is at least this wide (four characters).
const MIN_WIDE_HEADLINE: usize = 8;

/// Words opening a clause that cannot start a title mid-sentence.
const RELATIVES: &[&str] = &["which", "who", "whom", "whose", "where", "when"];

/// Width of a title: a CJK or Hangul character counts as two letters.
pub fn title_width(title: &str) -> usize {
    width(title)
}

/// A headline for a clip whose sentences (in order) are `sentence_texts`,
/// the language guessed from the script. Capitalised, no trailing
/// punctuation other than `?` or `!`.
pub fn make_title(sentence_texts: &[&str]) -> String {
    let lang = Lang::of("", &sentence_texts.concat());
    let sentences: Vec<Vec<&str>> = sentence_texts.iter().map(|t| split_words(t)).collect();
    title_of(lang, &sentences)
}

/// [`make_title`] for sentences given as their transcript words, in the
/// transcript's `language` (a Chinese title is then never cut inside a word).
pub fn make_title_words(language: &str, sentences: &[Vec<&str>]) -> String {
    let sample: String = sentences.iter().flatten().take(64).copied().collect();
    title_of(Lang::of(language, &sample), sentences)
}

/// Whitespace-separated words; a run written without spaces (Chinese,
/// Japanese) becomes one word per character, punctuation kept with the
/// character before it.
fn split_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for token in text.split_whitespace() {
        if !token.chars().any(crate::script::unspaced) {
            out.push(token);
            continue;
        }
        let mut start = 0;
        let mut prev_latin = false;
        for (i, c) in token.char_indices() {
            let latin = c.is_alphanumeric() && !crate::script::unspaced(c);
            let new_piece = i > 0 && c.is_alphanumeric() && !(latin && prev_latin);
            if new_piece {
                out.push(&token[start..i]);
                start = i;
            }
            if c.is_alphanumeric() {
                prev_latin = latin;
            }
        }
        out.push(&token[start..]);
    }
    out
}

/// How strongly a sentence grabs a viewer: its hook strength plus 0.1 per
/// emphasis word (at most two).
fn strength(words: &[&str]) -> f64 {
    let text = crate::script::join(words.iter().copied());
    let emphasis = words
        .iter()
        .filter(|w| EMPHASIS_WORDS.contains(&normalize(w).as_str()))
        .count()
        .min(2);
    hook_strength(&text) + 0.1 * emphasis as f64
}

/// How a candidate title ranks (higher first).
type TitleRank = (bool, i64, Reverse<usize>);

fn title_of(lang: Lang, sentences: &[Vec<&str>]) -> String {
    let mut best: Option<(TitleRank, String)> = None;
    for (i, words) in sentences.iter().enumerate() {
        let Some((headline, title)) = sentence_headline(words, lang) else {
            continue;
        };
        let key = (
            headline,
            (strength(words) * 100.0).round() as i64,
            Reverse(i),
        );
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, title));
        }
    }
    if let Some((_, title)) = best {
        return title;
    }
    // No complete run anywhere: the strongest sentence, cut at a word.
    sentences
        .iter()
        .enumerate()
        .filter(|(_, w)| !w.is_empty())
        .max_by_key(|(i, w)| ((strength(w) * 100.0).round() as i64, Reverse(*i)))
        .map(|(_, w)| cut_at_word(&w[lead_skip(w, lang)..], lang))
        .unwrap_or_default()
}

/// The sentence's best headline and whether it is headline-sized: among
/// the runs of whole clauses that fit and are complete, a headline-sized
/// one, then one that asks or exclaims, then the best anchored, then the
/// widest.
fn sentence_headline(words: &[&str], lang: Lang) -> Option<(bool, String)> {
    let n = words.len();
    if n == 0 {
        return None;
    }
    let terminal = ends_terminal(words[n - 1]);
    let mut bounds = vec![0];
    bounds.extend(clause_starts(words, lang));
    bounds.push(n);
    let mut best: Option<((bool, bool, u8, usize), String)> = None;
    for (ai, &a) in bounds.iter().enumerate() {
        // A relative clause has no subject of its own ("which uses …").
        if a == n || (a > 0 && RELATIVES.contains(&normalize(words[a]).as_str())) {
            continue;
        }
        for &b in &bounds[ai + 1..] {
            // Chinese and Japanese clauses without a mark between them read
            // as a run-on: a title holds one of them (or the whole sentence).
            let unmarked = |k: usize| !ends_with_clause_mark(words[k - 1]);
            if matches!(lang, Lang::Zh | Lang::Ja)
                && !(a == 0 && b == n)
                && bounds.iter().any(|&k| a < k && k < b && unmarked(k))
            {
                continue;
            }
            let skip = lead_skip(&words[a..b], lang);
            let run = &words[a + skip..b];
            let title = finish(run);
            let wide = width(&title);
            if wide > MAX_TITLE_CHARS {
                if a + skip + 1 < b {
                    break; // longer runs only get wider
                }
                continue;
            }
            let at_end = b == n;
            if !title.chars().any(char::is_alphanumeric)
                || !complete(run, lang, a == 0, at_end, terminal)
            {
                continue;
            }
            let headline = headline_sized(run, lang, wide);
            let asks = title.ends_with(['?', '!', '？', '！']);
            let anchor = if lang.verb_final() {
                2 * u8::from(at_end) + u8::from(a == 0)
            } else {
                2 * u8::from(a == 0) + u8::from(at_end)
            };
            let key = (headline, asks, anchor, wide);
            if best.as_ref().is_none_or(|(k, _)| key > *k) {
                best = Some((key, title));
            }
        }
    }
    best.map(|((headline, ..), title)| (headline, title))
}

/// Is the run a complete phrase that may be a title? `from_start` and
/// `at_end`: it starts and ends where the sentence does; `terminal`: the
/// sentence ends with terminal punctuation.
fn complete(run: &[&str], lang: Lang, from_start: bool, at_end: bool, terminal: bool) -> bool {
    // Where the speaker ended the sentence (a Korean or Japanese predicate
    // ends there even without a full stop).
    let ended = at_end && (terminal || lang.verb_final());
    if bad_end(run, lang, ended, true) {
        return false;
    }
    let one_clause = run[..run.len() - 1]
        .iter()
        .all(|w| !ends_with_clause_mark(w));
    let asks = run.last().is_some_and(|w| w.contains(['?', '？']));
    match lang {
        Lang::En => complete_en(run, from_start && at_end && terminal),
        Lang::Zh | Lang::Ja => !(cjk_fragment_opener(run) && one_clause && !asks),
        Lang::Ko | Lang::Other => true,
    }
}

/// Enough words to say something: three distinct words, one of them not a
/// function word (English); four CJK characters; two Korean words as wide.
fn headline_sized(run: &[&str], lang: Lang, wide: usize) -> bool {
    let mut distinct: Vec<String> = run.iter().map(|w| normalize(w)).collect();
    distinct.retain(|w| !w.is_empty());
    distinct.sort();
    distinct.dedup();
    match lang {
        Lang::Zh | Lang::Ja => wide >= MIN_WIDE_HEADLINE,
        Lang::Ko => distinct.len() >= 2 && wide >= MIN_WIDE_HEADLINE,
        Lang::En => {
            distinct.len() >= MIN_HEADLINE_WORDS && distinct.iter().any(|w| !is_stop_word(w))
        }
        Lang::Other => distinct.len() >= MIN_HEADLINE_WORDS,
    }
}

/// Joins words into a title (no spaces between CJK words): first letter
/// capitalised, trailing punctuation other than `?` and `!` removed.
fn finish(words: &[&str]) -> String {
    let mut title = crate::script::join(words.iter().copied());
    if let Some(pos) = title.find(char::is_alphanumeric) {
        let first = title[pos..].chars().next().unwrap_or_default();
        let upper: String = first.to_uppercase().collect();
        title.replace_range(pos..pos + first.len_utf8(), &upper);
    }
    while title.ends_with(|c: char| !c.is_alphanumeric() && !matches!(c, '?' | '!' | '？' | '！'))
    {
        title.pop();
    }
    title
}

/// The last resort: the longest run of whole words from the sentence's
/// start that fits and ends well (not on "the", "a perfect", "的", nor
/// inside a clause opened by "where", "that", …); a single word wider than a
/// title is cut at a character.
fn cut_at_word(words: &[&str], lang: Lang) -> String {
    let fit = (1..=words.len())
        .take_while(|&b| width(&finish(&words[..b])) <= MAX_TITLE_CHARS)
        .last()
        .unwrap_or(0);
    if fit == 0 {
        let Some(first) = words.first() else {
            return String::new();
        };
        let mut title = String::new();
        for c in finish(&[first]).chars() {
            if width(&title) + width(c.encode_utf8(&mut [0; 4])) > MAX_TITLE_CHARS {
                break;
            }
            title.push(c);
        }
        return title;
    }
    let whole = fit == words.len() && ends_terminal(words[fit - 1]);
    (1..=fit)
        .rev()
        .map(|b| &words[..b])
        .find(|run| {
            !(bad_end(run, lang, whole && run.len() == fit, false)
                || lang == Lang::En && open_subordinate(run))
        })
        .map_or_else(|| finish(&words[..fit]), finish)
}

#[cfg(test)]
#[path = "titles_tests.rs"]
mod tests;
