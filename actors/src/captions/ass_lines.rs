//! Caption lines on the clip's timeline: how wide text is estimated to be,
//! where sentences end, when each line shows, and the karaoke sweep.

use std::fmt::Write as _;
use std::ops::Range;

use super::ass_format::{escape_text, to_cs};
use super::emphasis::salient;
use crate::script::{join, separator};
use crate::transcript::Word;

/// A line stays on screen until the next one if the gap is shorter than this.
const LINE_HOLD_GAP: f64 = 0.5;
/// Otherwise it lingers this long after its last word.
const LINE_LINGER: f64 = 0.3;
/// Estimated advance of one character, as a share of the font size.
pub(crate) const CHAR_WIDTH_EM: f64 = 0.6;

/// Width of text in "average characters": CJK and other wide characters count
/// for about one em, the rest for [`CHAR_WIDTH_EM`].
pub(crate) fn text_units(text: &str) -> f64 {
    text.chars()
        .map(|c| if is_wide(c) { 1.0 / CHAR_WIDTH_EM } else { 1.0 })
        .sum()
}

pub(crate) fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6 | 0x1F300..=0x1FAFF | 0x20000..=0x3FFFD)
}

/// One word of a caption line, times in centiseconds.
pub(crate) struct TimedWord {
    pub(crate) text: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// A keyword drawn in the highlight colour (see `captions::emphasis`).
    pub(crate) salient: bool,
}

/// A caption line with its display interval.
pub(crate) struct TimedLine {
    pub(crate) words: Vec<TimedWord>,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// Turns the groups into lines with display intervals (marking the salient
/// words, see `captions::emphasis`): empty words are
/// dropped, starts made monotonic, a line is held until the next one across
/// short gaps, and nothing lasts past `limit`.
pub(crate) fn timed_lines(
    words: &[Word],
    groups: &[Range<usize>],
    limit: Option<u64>,
) -> Vec<TimedLine> {
    let salient = salient(&words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>());
    let mut lines: Vec<TimedLine> = Vec::new();
    let mut floor = 0u64;
    for range in groups {
        let mut line_words = Vec::new();
        for (word, &salient) in words[range.clone()].iter().zip(&salient[range.clone()]) {
            let text = escape_text(word.text.trim());
            if text.trim().is_empty() {
                continue;
            }
            let start = to_cs(word.start).max(floor);
            let end = to_cs(word.end).max(start);
            floor = start;
            line_words.push(TimedWord {
                text,
                start,
                end,
                salient,
            });
        }
        if let Some(first) = line_words.first() {
            let start = first.start;
            lines.push(TimedLine {
                start,
                end: start,
                words: line_words,
            });
        }
    }
    let linger = to_cs(LINE_LINGER);
    let hold_gap = to_cs(LINE_HOLD_GAP);
    let next_starts: Vec<Option<u64>> = (0..lines.len())
        .map(|i| lines.get(i + 1).map(|l| l.start))
        .collect();
    for (line, next_start) in lines.iter_mut().zip(next_starts) {
        let last_end = line.words.iter().map(|w| w.end).max().unwrap_or(line.start);
        let mut end = match next_start {
            Some(next) if next < last_end + hold_gap => next,
            _ => last_end + linger,
        };
        if let Some(limit) = limit {
            end = end.min(limit);
        }
        line.end = end;
    }
    lines.retain(|l| l.end > l.start);
    lines
}

/// `{\kf<cs>}word` for each word: a word fills from its start until the
/// next word starts (the last one until it ends), and an empty `\k` covers
/// the rest of the line, so the durations sum to the line's duration.
/// Salient words are wrapped in `emphasis` (open, close) tags.
pub(crate) fn karaoke_words(
    out: &mut String,
    line: &TimedLine,
    emphasis: Option<&(String, String)>,
) {
    let mut at = line.start;
    for (j, word) in line.words.iter().enumerate() {
        let end = line
            .words
            .get(j + 1)
            .map_or(word.end, |next| next.start)
            .clamp(at, line.end);
        if j > 0 {
            out.push_str(separator(&line.words[j - 1].text, &word.text));
        }
        match emphasis.filter(|_| word.salient) {
            Some((open, close)) => {
                let _ = write!(
                    out,
                    "{{\\kf{}}}{{{open}}}{}{{{close}}}",
                    end - at,
                    word.text
                );
            }
            None => {
                let _ = write!(out, "{{\\kf{}}}{}", end - at, word.text);
            }
        }
        at = end;
    }
    if line.end > at {
        let _ = write!(out, "{{\\k{}}}", line.end - at);
    }
}

/// The plain text of a line, words joined as their script wants.
pub(crate) fn line_text(line: &TimedLine) -> String {
    join(line.words.iter().map(|w| w.text.as_str()))
}
