//! Caption styling and rendering: templates, ASS documents for libass, SRT/VTT.

pub mod ass;
mod ass_format;
mod ass_lines;
pub mod emphasis;
mod subtitle_error;
pub mod subtitles;
pub mod template;
mod watermark;

use crate::script::split_unspaced;
use crate::transcript::Word;

/// `words` with every word written without spaces (CJK, Thai) that has more
/// than `max_chars` characters cut between characters into pieces that fit
/// (see [`split_unspaced`]); each piece gets a share of the word's time in
/// proportion to its characters.
pub fn split_unspaced_words(words: &[Word], max_chars: usize) -> Vec<Word> {
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let text = w.text.trim();
        let pieces = split_unspaced(text, max_chars);
        if pieces.len() < 2 {
            out.push(w.clone());
            continue;
        }
        let total = text.chars().count().max(1) as f64;
        let span = (w.end - w.start).max(0.0);
        let mut done = 0usize;
        for piece in pieces {
            let n = piece.chars().count();
            out.push(Word {
                text: piece,
                start: w.start + span * done as f64 / total,
                end: w.start + span * (done + n) as f64 / total,
                probability: w.probability,
            });
            done += n;
        }
    }
    out
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod script_tests;
