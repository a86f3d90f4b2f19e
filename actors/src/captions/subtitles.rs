//! Subtitle files for a clip: cues built from its words, written and read as
//! SubRip (SRT) and WebVTT.

use super::ass_lines::is_wide;
use super::split_unspaced_words;
pub use super::subtitle_error::{SubtitleError, TimingError};
use crate::script::join;
use crate::transcript::{ends_sentence, Word};

/// One subtitle cue; `text` may hold one '\n' between its two lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Cue {
    /// Seconds on the clip's timeline.
    pub start: f64,
    pub end: f64,
    pub text: String,
}

/// At most this many characters on one line of a cue.
pub const MAX_LINE_CHARS: usize = 42;
/// At most this long (seconds) a cue, unless a single word is longer.
pub const MAX_CUE_SECS: f64 = 6.0;
/// A pause longer than this (seconds) between two words starts a new cue.
const CUE_BREAK_PAUSE: f64 = 1.0;
/// A short cue stays up at least this long when the next one leaves room.
const MIN_CUE_SECS: f64 = 1.0;

/// Subtitle cues from words on the clip's timeline: a new cue at each
/// sentence end, long pause or clause break (`,;:` once the cue fills a line),
/// and whenever the next word would not fit in two lines of
/// [`MAX_LINE_CHARS`] or would make the cue longer than [`MAX_CUE_SECS`].
/// Words are never split; cue i ends no later than cue i+1 starts.
pub fn cues_from_words(words: &[Word]) -> Vec<Cue> {
    // Text written without spaces (CJK) may break between any characters.
    let words = split_unspaced_words(words, MAX_LINE_CHARS / 2);
    let words: Vec<(&str, f64, f64)> = words
        .iter()
        .filter(|w| w.start.is_finite() && w.end.is_finite())
        .map(|w| (w.text.trim(), w.start.max(0.0), w.end.max(w.start).max(0.0)))
        .filter(|(text, _, _)| !text.is_empty())
        .collect();

    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut first = 0usize;
    for i in 1..words.len() {
        let (prev_text, _, prev_end) = words[i - 1];
        let (_, start, end) = words[i];
        let texts: Vec<&str> = words[first..=i].iter().map(|w| w.0).collect();
        let cue_chars = columns(&join(texts[..texts.len() - 1].iter().copied())) + 1;
        let break_here = ends_sentence(prev_text)
            || start - prev_end > CUE_BREAK_PAUSE
            || (ends_clause(prev_text) && cue_chars > MAX_LINE_CHARS)
            || end - words[first].1 > MAX_CUE_SECS
            || layout_lines(&texts).is_none();
        if break_here {
            groups.push((first, i));
            first = i;
        }
    }
    if first < words.len() {
        groups.push((first, words.len()));
    }

    let mut cues: Vec<Cue> = groups
        .iter()
        .map(|&(a, b)| {
            let slice = &words[a..b];
            let texts: Vec<&str> = slice.iter().map(|w| w.0).collect();
            Cue {
                start: slice[0].1,
                end: slice.iter().map(|w| w.2).fold(slice[0].1, f64::max),
                // A single word longer than a line is a cue of its own.
                text: layout_lines(&texts).unwrap_or_else(|| join(texts.iter().copied())),
            }
        })
        .collect();
    for i in 0..cues.len() {
        let next_start = cues.get(i + 1).map(|c| c.start);
        let cue = &mut cues[i];
        if cue.end - cue.start < MIN_CUE_SECS {
            cue.end = cue.start + MIN_CUE_SECS;
        }
        if let Some(next) = next_start {
            cue.end = cue.end.min(next);
        }
        cue.end = cue.end.max(cue.start);
    }
    cues
}

/// The words as at most two lines of at most [`MAX_LINE_CHARS`] columns
/// (a CJK character takes two), split where the lines are most even; `None`
/// when they do not fit. Words are joined as their script wants (no spaces
/// between CJK words).
fn layout_lines(words: &[&str]) -> Option<String> {
    let line = |part: &[&str]| join(part.iter().copied());
    let whole = line(words);
    if columns(&whole) <= MAX_LINE_CHARS {
        return Some(whole);
    }
    (1..words.len())
        .map(|split| {
            let (a, b) = (line(&words[..split]), line(&words[split..]));
            let (ca, cb) = (columns(&a), columns(&b));
            (a, b, ca, cb)
        })
        .filter(|(_, _, a, b)| *a <= MAX_LINE_CHARS && *b <= MAX_LINE_CHARS)
        .min_by_key(|(_, _, a, b)| a.abs_diff(*b))
        .map(|(a, b, _, _)| format!("{a}\n{b}"))
}

/// Display width of `text` in columns: wide (CJK) characters take two.
fn columns(text: &str) -> usize {
    text.chars().map(|c| if is_wide(c) { 2 } else { 1 }).sum()
}

fn ends_clause(text: &str) -> bool {
    text.ends_with([',', ';', ':', '，', '、', '—'])
}

/// SubRip: numbered cues, `HH:MM:SS,mmm --> HH:MM:SS,mmm`.
pub fn to_srt(cues: &[Cue]) -> String {
    let mut out = String::new();
    for (i, cue) in cues.iter().enumerate() {
        out.push_str(&format!(
            "{}\n{} --> {}\n{}\n\n",
            i + 1,
            timestamp(cue.start, ','),
            timestamp(cue.end, ','),
            cue_lines(&cue.text).join("\n")
        ));
    }
    out
}

/// WebVTT: header, then `HH:MM:SS.mmm --> HH:MM:SS.mmm` cues; `&`, `<`, `>`
/// are escaped as entities.
pub fn to_vtt(cues: &[Cue]) -> String {
    let mut out = String::from("WEBVTT\n\n");
    for cue in cues {
        let text: Vec<String> = cue_lines(&cue.text)
            .iter()
            .map(|l| {
                l.replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            })
            .collect();
        out.push_str(&format!(
            "{} --> {}\n{}\n\n",
            timestamp(cue.start, '.'),
            timestamp(cue.end, '.'),
            text.join("\n")
        ));
    }
    out
}

/// The non-blank lines of a cue's text (a blank line would end the cue).
fn cue_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// `HH:MM:SS<sep>mmm`; negative or non-finite times are 0.
fn timestamp(secs: f64, sep: char) -> String {
    let ms = if secs.is_finite() && secs > 0.0 {
        (secs * 1000.0).round() as u64
    } else {
        0
    };
    format!(
        "{:02}:{:02}:{:02}{sep}{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// Parses SubRip text: blocks of an index line, a timing line and text lines,
/// separated by blank lines. Errors name the line.
pub fn parse_srt(text: &str) -> Result<Vec<Cue>, SubtitleError> {
    let lines = normalized_lines(text);
    let mut cues = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim().is_empty() {
            i += 1;
            continue;
        }
        let index = lines[i].trim();
        if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
            return Err(SubtitleError::NotCueNumber {
                line: i + 1,
                found: index.to_string(),
            });
        }
        let timing = lines
            .get(i + 1)
            .filter(|l| !l.trim().is_empty())
            .ok_or_else(|| SubtitleError::NoTimingLine {
                line: i + 1,
                index: index.to_string(),
            })?;
        let (start, end) = parse_timing(timing, TimeFormat::Srt).map_err(|e| e.on_line(i + 2))?;
        i += 2;
        let mut body = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() {
            body.push(lines[i].trim_end());
            i += 1;
        }
        cues.push(Cue {
            start,
            end,
            text: body.join("\n"),
        });
    }
    Ok(cues)
}

/// Parses WebVTT text: requires the `WEBVTT` header; skips the header block,
/// NOTE, STYLE and REGION blocks and cue identifiers; strips cue-text tags and
/// decodes the basic entities. Errors name the line.
pub fn parse_vtt(text: &str) -> Result<Vec<Cue>, SubtitleError> {
    let lines = normalized_lines(text);
    let header = lines.first().copied().unwrap_or("");
    let valid_header = header
        .strip_prefix("WEBVTT")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']));
    if !valid_header {
        return Err(SubtitleError::MissingHeader);
    }
    let mut i = 1;
    // Header metadata lines run until the first blank line.
    while i < lines.len() && !lines[i].trim().is_empty() {
        i += 1;
    }
    let mut cues = Vec::new();
    while i < lines.len() {
        if lines[i].trim().is_empty() {
            i += 1;
            continue;
        }
        let block_start = i;
        let mut block = Vec::new();
        while i < lines.len() && !lines[i].trim().is_empty() {
            block.push(lines[i]);
            i += 1;
        }
        let first = block[0];
        let is_other_block = ["NOTE", "STYLE", "REGION"].iter().any(|kw| {
            first
                .strip_prefix(kw)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
        });
        if is_other_block && !first.contains("-->") {
            continue;
        }
        // An optional cue identifier precedes the timing line.
        let timing_at = usize::from(!first.contains("-->"));
        let timing = block
            .get(timing_at)
            .ok_or_else(|| SubtitleError::NoTimingLineAfterId {
                line: block_start + 1,
                id: first.trim().to_string(),
            })?;
        let (start, end) = parse_timing(timing, TimeFormat::Vtt)
            .map_err(|e| e.on_line(block_start + timing_at + 1))?;
        let text: Vec<String> = block[timing_at + 1..]
            .iter()
            .map(|l| vtt_plain_text(l.trim_end()))
            .collect();
        cues.push(Cue {
            start,
            end,
            text: text.join("\n"),
        });
    }
    Ok(cues)
}

/// Lines without a byte-order mark and with `\r\n` / `\r` endings removed.
fn normalized_lines(text: &str) -> Vec<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TimeFormat {
    /// `HH:MM:SS,mmm` (a '.' is tolerated, as many tools write it).
    Srt,
    /// `[HH:]MM:SS.mmm`.
    Vtt,
}

/// `start --> end [settings]`; `end` may not be before `start`.
fn parse_timing(line: &str, format: TimeFormat) -> Result<(f64, f64), TimingError> {
    let (start, rest) = line
        .split_once("-->")
        .ok_or_else(|| TimingError::NoArrow(line.trim().to_string()))?;
    let end = rest.split_whitespace().next().unwrap_or("");
    let start = parse_time(start.trim(), format)?;
    let end = parse_time(end, format)?;
    if end < start {
        return Err(TimingError::EndsBeforeStart { start, end });
    }
    Ok((start, end))
}

fn parse_time(text: &str, format: TimeFormat) -> Result<f64, TimingError> {
    let bad = || TimingError::BadTimestamp(text.to_string());
    let (clock, millis) = match format {
        TimeFormat::Srt => text.rsplit_once([',', '.']),
        TimeFormat::Vtt => text.rsplit_once('.'),
    }
    .ok_or_else(bad)?;
    let parts: Vec<&str> = clock.split(':').collect();
    let (hours, minutes, seconds) = match (format, parts.as_slice()) {
        (_, [h, m, s]) => (*h, *m, *s),
        (TimeFormat::Vtt, [m, s]) => ("0", *m, *s),
        _ => return Err(bad()),
    };
    let number = |field: &str, digits: Option<usize>, max: u64| -> Result<u64, TimingError> {
        let digits_ok =
            field.chars().all(|c| c.is_ascii_digit()) && digits.is_none_or(|d| field.len() == d);
        if field.is_empty() || !digits_ok {
            return Err(bad());
        }
        field.parse().ok().filter(|&v| v <= max).ok_or_else(bad)
    };
    let h = number(hours, None, 99_999)?;
    let m = number(minutes, Some(2), 59)?;
    let s = number(seconds, Some(2), 59)?;
    let ms = number(millis, Some(3), 999)?;
    Ok((h * 3600 + m * 60 + s) as f64 + ms as f64 / 1000.0)
}

/// WebVTT cue text without its tags (`<b>`, `<c.x>`, `<00:00:01.000>`…)
/// and with the basic character references decoded.
fn vtt_plain_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_tag = false;
    for ch in line.chars() {
        match (in_tag, ch) {
            (false, '<') => in_tag = true,
            (true, '>') => in_tag = false,
            (false, c) => out.push(c),
            (true, _) => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&lrm;", "\u{200e}")
        .replace("&rlm;", "\u{200f}")
        .replace("&amp;", "&")
}

#[cfg(test)]
#[path = "subtitles_tests.rs"]
mod tests;
