//! Filler words ("um", "uh", "erm", "hmm", and "you know" / "I mean" set
//! off by pauses or commas): which words of a transcript are fillers, the
//! spans of a clip to cut out for them, and the mapping between the source
//! timeline and the cut clip's. Conservative on purpose: a phrase that may
//! carry meaning ("I mean it", "you know the answer") is kept; a word is
//! never cut into, and a filler whose cut would be shorter than
//! [`MIN_CUT_SECS`] is kept.
//!
//! Whisper leaves most disfluencies out of its transcript, so transcription
//! with filler removal on gives the decoder [`DISFLUENCY_PROMPT`] as
//! previous text (`media::whisper`), which makes it write them.

use crate::transcript::{sentences_from_words, Transcript, Word};

/// The previous-text prompt that makes Whisper keep disfluencies.
pub const DISFLUENCY_PROMPT: &str =
    "Umm, let me think like, hmm... Okay, here's what I'm, like, thinking.";

/// Words around a multi-word filler must be this far apart (seconds) to
/// count as a pause, when no punctuation sets the phrase off.
pub const SET_OFF_PAUSE_SECS: f64 = 0.25;
/// A cut extends this far past a filler's own times, never into a word.
pub const PAD_SECS: f64 = 0.04;
/// A cut shorter than this is not made (nothing audible to gain).
pub const MIN_CUT_SECS: f64 = 0.08;
/// A kept stretch at a clip's edge shorter than this joins the cut next to it.
pub const MIN_KEEP_SECS: f64 = 0.15;

/// Multi-word fillers, lower case, without punctuation.
const PHRASES: [[&str; 2]; 2] = [["you", "know"], ["i", "mean"]];

/// A word's letters, lower-cased.
fn bare(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphabetic())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `pattern` matches `word` with each pattern letter repeated one or
/// more times ("umm" matches "um", "hmmm" matches "hm").
fn stretched(word: &str, pattern: &str) -> bool {
    let mut w = word.chars().peekable();
    for p in pattern.chars() {
        if w.next() != Some(p) {
            return false;
        }
        while w.peek() == Some(&p) {
            w.next();
        }
    }
    w.next().is_none()
}

/// A single-word filler: um, uh, uhm, erm, er, ah, hm(m), mm (letters may be
/// stretched: "ummm", "uhh").
pub fn is_filler_word(text: &str) -> bool {
    let b = bare(text);
    if b.is_empty() || text.chars().any(|c| c.is_numeric()) {
        return false;
    }
    ["um", "uh", "uhm", "erm", "er", "ah", "hm"]
        .iter()
        .any(|p| stretched(&b, p))
        || (b.len() >= 2 && stretched(&b, "m"))
}

fn ends_with_pause_mark(text: &str) -> bool {
    text.trim_end_matches(['"', '\'', ')', '”', '’'])
        .ends_with([',', ';', ':', '.', '?', '!', '…', '-', '—'])
}

/// Which of `words` are fillers.
pub fn filler_marks(words: &[Word]) -> Vec<bool> {
    let mut marks: Vec<bool> = words.iter().map(|w| is_filler_word(&w.text)).collect();
    for i in 0..words.len().saturating_sub(1) {
        let pair = [bare(&words[i].text), bare(&words[i + 1].text)];
        if !PHRASES.iter().any(|p| p[0] == pair[0] && p[1] == pair[1]) {
            continue;
        }
        let before = i == 0
            || ends_with_pause_mark(&words[i - 1].text)
            || words[i].start - words[i - 1].end >= SET_OFF_PAUSE_SECS;
        let last = &words[i + 1];
        // The phrase's own words run together ("you, know" is not one).
        let joined = !ends_with_pause_mark(&words[i].text);
        let after = ends_with_pause_mark(&last.text)
            || words
                .get(i + 2)
                .is_none_or(|next| next.start - last.end >= SET_OFF_PAUSE_SECS);
        if before && after && joined {
            marks[i] = true;
            marks[i + 1] = true;
        }
    }
    marks
}

/// `transcript` without its fillers, and for each kept word its index in
/// `transcript.words`. A filler's sentence punctuation moves to the kept
/// word before it ("it works, um." → "it works."), and a kept word after a
/// removed capitalised sentence opener is capitalised ("Um, so" → "So").
pub fn without_fillers(transcript: &Transcript) -> (Transcript, Vec<usize>) {
    let marks = filler_marks(&transcript.words);
    let (words, index) = kept_words(&transcript.words, &marks);
    let mut clean = Transcript {
        language: transcript.language.clone(),
        language_probability: transcript.language_probability,
        duration: transcript.duration,
        sentences: Vec::new(),
        words,
    };
    clean.sentences = sentences_from_words(&clean.words);
    (clean, index)
}

/// The words not marked, punctuation and capitals mended (see
/// [`without_fillers`]), with their indices in `words`.
pub fn kept_words(words: &[Word], marks: &[bool]) -> (Vec<Word>, Vec<usize>) {
    let mut out: Vec<Word> = Vec::with_capacity(words.len());
    let mut index = Vec::with_capacity(words.len());
    let mut capitalize = false;
    let mut i = 0;
    while i < words.len() {
        if !marks[i] {
            let mut w = words[i].clone();
            if capitalize {
                w.text = capitalized(&w.text);
                capitalize = false;
            }
            out.push(w);
            index.push(i);
            i += 1;
            continue;
        }
        let run_end = (i..words.len()).find(|&j| !marks[j]).unwrap_or(words.len());
        let first = words[i].text.trim();
        let opens = out.last().is_none_or(|p| ends_sentence(&p.text));
        if opens && first.chars().next().is_some_and(char::is_uppercase) {
            capitalize = true;
        }
        let mark = words[i..run_end]
            .iter()
            .filter_map(|w| sentence_mark(w.text.trim()))
            .next_back();
        if let (Some(prev), Some(mark)) = (out.last_mut(), mark) {
            if !ends_sentence(&prev.text) {
                let t = prev.text.trim_end_matches([',', ';', ':']).to_string();
                prev.text = format!("{t}{mark}");
            }
            capitalize = true;
        }
        i = run_end;
    }
    (out, index)
}

fn ends_sentence(text: &str) -> bool {
    sentence_mark(text.trim()).is_some()
}

fn sentence_mark(text: &str) -> Option<char> {
    text.trim_end_matches(['"', '\'', ')', '”', '’'])
        .chars()
        .last()
        .filter(|c| matches!(c, '.' | '?' | '!' | '…'))
}

fn capitalized(text: &str) -> String {
    let lead = text.len() - text.trim_start().len();
    let (space, rest) = text.split_at(lead);
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c.is_lowercase() => format!("{space}{}{}", c.to_uppercase(), chars.as_str()),
        _ => text.to_string(),
    }
}

/// The spans of the source (seconds, sorted, disjoint) to cut out of the
/// clip `[start, end)` for the filler words among `words`: each run of
/// fillers from its first word's start to its last word's end, padded by
/// [`PAD_SECS`] but never past the kept words on either side, at least
/// [`MIN_CUT_SECS`] long; a kept stretch shorter than [`MIN_KEEP_SECS`]
/// at the clip's edge is cut with it. None when the clip is all fillers.
pub fn clip_cuts(words: &[Word], marks: &[bool], start: f64, end: f64) -> Vec<(f64, f64)> {
    let inside: Vec<usize> = (0..words.len())
        .filter(|&i| {
            let mid = (words[i].start + words[i].end) / 2.0;
            mid >= start && mid < end
        })
        .collect();
    if inside.iter().all(|&i| marks[i]) {
        return Vec::new();
    }
    let mut cuts: Vec<(f64, f64)> = Vec::new();
    let mut k = 0;
    while k < inside.len() {
        if !marks[inside[k]] {
            k += 1;
            continue;
        }
        let run_start = k;
        while k < inside.len() && marks[inside[k]] {
            k += 1;
        }
        let (first, last) = (inside[run_start], inside[k - 1]);
        let floor = match run_start.checked_sub(1) {
            Some(p) => words[inside[p]].end,
            None => start,
        };
        let ceil = inside.get(k).map_or(end, |&n| words[n].start);
        let a = (words[first].start - PAD_SECS).max(floor).max(start);
        let b = (words[last].end + PAD_SECS).min(ceil).min(end);
        if b - a >= MIN_CUT_SECS {
            cuts.push((a, b));
        }
    }
    if let Some(first) = cuts.first_mut() {
        if first.0 - start < MIN_KEEP_SECS {
            first.0 = start;
        }
    }
    if let Some(last) = cuts.last_mut() {
        if end - last.1 < MIN_KEEP_SECS {
            last.1 = end;
        }
    }
    cuts
}

/// Seconds cut out in total.
pub fn removed_secs(cuts: &[(f64, f64)]) -> f64 {
    cuts.iter().map(|(a, b)| (b - a).max(0.0)).sum()
}

/// A source time `t` on the timeline of the clip starting at `start` with
/// `cuts` removed (a time inside a cut maps to where the cut is).
pub fn to_clip_time(cuts: &[(f64, f64)], start: f64, t: f64) -> f64 {
    let removed: f64 = cuts.iter().map(|&(a, b)| (t.min(b) - a).max(0.0)).sum();
    (t - start - removed).max(0.0)
}

/// The inverse of [`to_clip_time`]: a time on the cut clip's timeline as
/// seconds from `start` in the source (a cut's instant maps to its end).
pub fn to_source_offset(cuts: &[(f64, f64)], start: f64, t: f64) -> f64 {
    let mut out = t;
    for &(a, b) in cuts {
        if out >= a - start {
            out += b - a;
        }
    }
    out
}

/// The words of the clip `[start, end)` with `cuts` removed: words inside a
/// cut dropped (punctuation and capitals mended as [`kept_words`] does),
/// times on the cut clip's timeline, within `[0, kept duration]`.
pub fn clip_words(words: &[Word], start: f64, end: f64, cuts: &[(f64, f64)]) -> Vec<Word> {
    let duration = (end - start - removed_secs(cuts)).max(0.0);
    let inside: Vec<Word> = words
        .iter()
        .filter(|w| w.end > start && w.start < end)
        .cloned()
        .collect();
    let marks: Vec<bool> = inside
        .iter()
        .map(|w| {
            let mid = (w.start + w.end) / 2.0;
            cuts.iter().any(|&(a, b)| a <= mid && mid < b)
        })
        .collect();
    let (kept, _) = if cuts.is_empty() {
        (inside, Vec::new())
    } else {
        kept_words(&inside, &marks)
    };
    kept.into_iter()
        .map(|w| Word {
            start: to_clip_time(cuts, start, w.start.max(start)).min(duration),
            end: to_clip_time(cuts, start, w.end).min(duration),
            ..w
        })
        .collect()
}

#[cfg(test)]
#[path = "fillers_tests.rs"]
mod tests;
