//! Word-level text tools shared by scoring, titles, steering and topic
//! boundaries: the word lists, tokenising, a light English stemmer, the hook
//! strength of a sentence, and two similarity measures (word-shingle Jaccard
//! for near-duplicate clips, bag-of-words cosine for vocabulary shifts).
//!
//! Pure and language-tolerant: words of other languages pass through
//! unstemmed and are never stop words, so matching still works on them.

use std::collections::{HashMap, HashSet};

/// Words that signal emphasis or strong claims (compared lower-case, punctuation stripped).
#[rustfmt::skip]
pub const EMPHASIS_WORDS: &[&str] = &[
    "absolutely", "actually", "always", "amazing", "best", "biggest", "critical", "crazy",
    "definitely", "easy", "essential", "everyone", "everything", "exactly", "huge", "important",
    "impossible", "incredible", "insane", "key", "literally", "massive", "mistake", "mistakes",
    "must", "never", "nobody", "nothing", "powerful", "problem", "really", "secret", "secrets",
    "shocking", "simple", "stop", "surprising", "terrible", "totally", "truth", "ultimate",
    "worst", "wrong",
];

/// Openers that make a first sentence a hook (matched at its start, after fillers).
#[rustfmt::skip]
const HOOK_OPENERS: &[&str] = &[
    "here's why", "here is why", "here's how", "here is how", "here's what", "here's the thing",
    "the secret", "the truth", "the problem", "the biggest", "the reason", "the real reason",
    "the number one", "the best", "the worst", "the one thing", "stop", "never", "don't",
    "how to", "how do", "why", "what if", "what happens", "imagine", "nobody", "no one",
    "most people", "everyone", "if you", "you need", "you have to", "you should", "this is why",
    "this is how", "did you know", "let me tell you", "i bet", "want to", "listen",
    // Openers that name the topic: the viewer learns at once what it is about.
    "let's talk about", "let us talk about", "we need to talk about", "i want to talk about",
    "today we're talking about", "today we are talking about", "let me explain", "let me show you",
];

/// Leading fillers skipped before matching a hook opener ("So, here's why…").
#[rustfmt::skip]
pub const FILLERS: &[&str] = &[
    "so", "okay", "ok", "alright", "well", "now", "and", "but", "um", "uh", "look", "yeah",
];

/// Words addressing the viewer.
#[rustfmt::skip]
const SECOND_PERSON: &[&str] = &[
    "you", "your", "you're", "you'll", "you've", "yourself", "yours",
];

/// Spelled-out numbers that make a hook concrete ("three mistakes").
#[rustfmt::skip]
const NUMBER_WORDS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "fifteen", "twenty", "thirty", "fifty", "hundred", "thousand", "million", "billion",
];

/// Words that make a clip start in the middle of a thought.
#[rustfmt::skip]
pub const CONNECTIVES: &[&str] = &[
    "and", "but", "so", "because", "cause", "or", "also", "then", "plus", "which", "anyway",
    "however", "although", "though", "nor", "therefore", "otherwise", "besides", "whereas",
];

/// Function words: ignored by prompt matching and vocabulary comparison.
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does",
    "doing", "don't", "for", "from", "get", "got", "had", "has", "have", "he", "her", "here",
    "him", "his", "how", "i", "i'm", "if", "in", "into", "is", "it", "it's", "its", "just",
    "let", "like", "me", "more", "most", "my", "no", "not", "now", "of", "on", "one", "only",
    "or", "our", "out", "over", "really", "she", "should", "so", "some", "than", "that",
    "that's", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to",
    "too", "up", "us", "very", "was", "we", "were", "what", "when", "where", "which", "while",
    "who", "why", "will", "with", "would", "you", "your", "you're", "yeah", "um", "uh", "okay",
    "well", "want", "know", "think", "going", "thing", "things", "way", "make", "said", "say",
    "clip", "clips", "moment", "moments", "part", "parts", "talk", "talks", "video", "videos",
];

/// Lower-case, curly apostrophes straightened, surrounding punctuation removed.
pub fn normalize(token: &str) -> String {
    token
        .replace('’', "'")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// The normalised, non-empty words of `text`.
pub fn tokens(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(normalize)
        .filter(|t| !t.is_empty())
        .collect()
}

pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.contains(&token)
}

/// A light English stemmer: strips common inflections of ASCII words
/// ("cooking", "cooked", "cooks" → "cook"; "stories" → "story"; "sauces",
/// "sauce" → "sauc"). Other words are returned unchanged.
pub fn stem(token: &str) -> String {
    if !token.bytes().all(|b| b.is_ascii_lowercase()) || token.len() <= 3 {
        return token.to_string();
    }
    let mut w = token.to_string();
    if w.ends_with("ies") && w.len() > 4 {
        w.truncate(w.len() - 3);
        w.push('y');
        return w;
    }
    for suffix in ["ing", "ed"] {
        if w.ends_with(suffix) && w.len() >= suffix.len() + 3 {
            w.truncate(w.len() - suffix.len());
            // "running" → "runn" → "run"
            let b = w.as_bytes();
            let n = b.len();
            if n >= 2 && b[n - 1] == b[n - 2] && !b"aeiouls".contains(&b[n - 1]) {
                w.pop();
            }
            return w;
        }
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    if w.ends_with('e') && w.len() > 4 {
        w.pop();
    }
    w
}

/// The stems of the content words (not stop words, not numbers alone) of `text`.
pub fn content_stems(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !is_stop_word(t) && t.chars().any(char::is_alphabetic))
        .map(|t| stem(&t))
        .collect()
}

pub fn starts_with_phrase(tokens: &[String], phrase: &str) -> bool {
    let mut words = phrase.split(' ');
    let mut rest = tokens.iter();
    words.all(|w| rest.next().is_some_and(|t| t == w))
}

pub fn is_question(text: &str) -> bool {
    text.contains(['?', '？'])
}

pub fn is_exclamation(text: &str) -> bool {
    text.contains(['!', '！'])
}

pub fn ends_terminal(text: &str) -> bool {
    crate::transcript::ends_sentence(text)
}

/// How strongly a sentence grabs attention as a clip's opening, 0..=1.
pub fn hook_strength(text: &str) -> f64 {
    let tokens = tokens(text);
    if tokens.is_empty() {
        return 0.0;
    }
    let fillers = tokens
        .iter()
        .take_while(|t| FILLERS.contains(&t.as_str()))
        .count();
    let opening = &tokens[fillers.min(tokens.len() - 1)..];

    let mut score = 0.0;
    if is_question(text) {
        score += 0.30;
    }
    if HOOK_OPENERS.iter().any(|p| starts_with_phrase(opening, p)) {
        score += 0.35;
    }
    if tokens.iter().any(|t| SECOND_PERSON.contains(&t.as_str())) {
        score += 0.15;
    }
    if tokens
        .iter()
        .any(|t| t.chars().any(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&t.as_str()))
    {
        score += 0.15;
    }
    if is_exclamation(text) {
        score += 0.10;
    }
    score += match tokens.len() {
        0..=8 => 0.15,
        9..=14 => 0.08,
        _ => 0.0,
    };
    f64::min(score, 1.0)
}

/// Word shingles (runs of `n` consecutive normalised words) of `text`, as
/// hashes; a text shorter than `n` words is one shingle.
pub fn shingles(text: &str, n: usize) -> HashSet<u64> {
    use std::hash::{Hash, Hasher};
    let words = tokens(text);
    let hash = |ws: &[String]| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        ws.hash(&mut h);
        h.finish()
    };
    if words.is_empty() {
        return HashSet::new();
    }
    if words.len() < n {
        return HashSet::from([hash(&words)]);
    }
    words.windows(n).map(hash).collect()
}

/// |a ∩ b| / |a ∪ b| (0 when both are empty).
pub fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// A bag of words: stem → count.
pub type Bag = HashMap<String, u32>;

pub fn bag<'a>(stems: impl IntoIterator<Item = &'a String>) -> Bag {
    let mut bag = Bag::new();
    for s in stems {
        *bag.entry(s.clone()).or_default() += 1;
    }
    bag
}

/// Cosine similarity of two bags of words, 0..=1 (0 when either is empty).
pub fn cosine(a: &Bag, b: &Bag) -> f64 {
    let dot: f64 = a
        .iter()
        .filter_map(|(k, x)| b.get(k).map(|y| f64::from(*x) * f64::from(*y)))
        .sum();
    let norm = |m: &Bag| {
        m.values()
            .map(|v| f64::from(*v).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}
