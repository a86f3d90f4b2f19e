//! Subtitle files for a clip: cues built from its words, written and read as
//! SubRip (SRT) and WebVTT.

use super::ass_lines::is_wide;
use super::split_unspaced_words;
use crate::script::join;
use crate::transcript::Word;

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

fn ends_sentence(text: &str) -> bool {
    let t = text.trim_end_matches(['"', '\'', ')', ']', '»', '”', '’']);
    t.ends_with(['.', '?', '!', '…', '。', '？', '！'])
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
pub fn parse_srt(text: &str) -> Result<Vec<Cue>, String> {
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
            return Err(format!(
                "line {}: expected a cue number, found {:?}",
                i + 1,
                index
            ));
        }
        let timing = lines
            .get(i + 1)
            .filter(|l| !l.trim().is_empty())
            .ok_or_else(|| format!("line {}: cue {index} has no timing line", i + 1))?;
        let (start, end) =
            parse_timing(timing, TimeFormat::Srt).map_err(|e| format!("line {}: {e}", i + 2))?;
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
pub fn parse_vtt(text: &str) -> Result<Vec<Cue>, String> {
    let lines = normalized_lines(text);
    let header = lines.first().copied().unwrap_or("");
    let valid_header = header
        .strip_prefix("WEBVTT")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']));
    if !valid_header {
        return Err("line 1: missing WEBVTT header".to_string());
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
        let timing = block.get(timing_at).ok_or_else(|| {
            format!(
                "line {}: cue {:?} has no timing line",
                block_start + 1,
                first.trim()
            )
        })?;
        let (start, end) = parse_timing(timing, TimeFormat::Vtt)
            .map_err(|e| format!("line {}: {e}", block_start + timing_at + 1))?;
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
fn parse_timing(line: &str, format: TimeFormat) -> Result<(f64, f64), String> {
    let (start, rest) = line
        .split_once("-->")
        .ok_or_else(|| format!("expected \"start --> end\", found {:?}", line.trim()))?;
    let end = rest.split_whitespace().next().unwrap_or("");
    let start = parse_time(start.trim(), format)?;
    let end = parse_time(end, format)?;
    if end < start {
        return Err(format!("cue ends ({end:.3}) before it starts ({start:.3})"));
    }
    Ok((start, end))
}

fn parse_time(text: &str, format: TimeFormat) -> Result<f64, String> {
    let bad = || format!("bad timestamp {text:?}");
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
    let number = |field: &str, digits: Option<usize>, max: u64| -> Result<u64, String> {
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
mod tests {
    use super::*;

    fn w(text: &str, start: f64, end: f64) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            probability: 1.0,
        }
    }

    fn words(text: &str, step: f64) -> Vec<Word> {
        text.split_whitespace()
            .enumerate()
            .map(|(i, t)| w(t, i as f64 * step, i as f64 * step + step * 0.8))
            .collect()
    }

    fn cue(start: f64, end: f64, text: &str) -> Cue {
        Cue {
            start,
            end,
            text: text.into(),
        }
    }

    fn assert_same(a: &[Cue], b: &[Cue]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x.start - y.start).abs() < 1e-6 && (x.end - y.end).abs() < 1e-6,
                "{x:?} vs {y:?}"
            );
            assert_eq!(x.text, y.text);
        }
    }

    const SPEECH: &str = "Well, I think the most important thing about building a product is that you talk \
        to your users every single week, because otherwise you drift. And then nobody wants it! Right? \
        Supercalifragilisticexpialidocious-and-then-some-more-letters appears here too";

    #[test]
    fn cues_keep_words_whole_and_respect_limits() {
        let ws = words(SPEECH, 0.4);
        let cues = cues_from_words(&ws);
        let rebuilt: Vec<&str> = cues
            .iter()
            .flat_map(|c| c.text.split_whitespace())
            .collect();
        let original: Vec<&str> = ws.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(rebuilt, original, "words reordered, lost or split");
        for (i, c) in cues.iter().enumerate() {
            let lines: Vec<&str> = c.text.split('\n').collect();
            assert!(lines.len() <= 2, "{c:?}");
            let single_word = !c.text.contains(char::is_whitespace);
            assert!(
                single_word || lines.iter().all(|l| l.chars().count() <= MAX_LINE_CHARS),
                "{c:?}"
            );
            assert!(c.end - c.start <= MAX_CUE_SECS + 1e-9, "{c:?}");
            assert!(c.end >= c.start);
            if let Some(next) = cues.get(i + 1) {
                assert!(c.end <= next.start, "{c:?} overlaps {next:?}");
            }
        }
    }

    #[test]
    fn cues_break_at_sentences_and_long_pauses() {
        let ws = vec![
            w("Hello", 0.0, 0.3),
            w("there.", 0.4, 0.7),
            w("General", 0.8, 1.2),
            w("Kenobi", 1.3, 1.8),
            w("indeed", 4.0, 4.5),
        ];
        let texts: Vec<String> = cues_from_words(&ws).into_iter().map(|c| c.text).collect();
        assert_eq!(texts, ["Hello there.", "General Kenobi", "indeed"]);
    }

    #[test]
    fn cues_are_at_most_six_seconds() {
        let ws = words(
            "slow speech that goes on and on without any end in sight",
            1.0,
        );
        let cues = cues_from_words(&ws);
        assert!(cues.len() >= 2);
        assert!(cues.iter().all(|c| c.end - c.start <= MAX_CUE_SECS));
    }

    #[test]
    fn two_lines_are_balanced() {
        let ws = words(
            "this sentence is long enough that it has to be wrapped onto two lines",
            0.2,
        );
        let cues = cues_from_words(&ws);
        assert_eq!(cues.len(), 1);
        let (a, b) = cues[0].text.split_once('\n').unwrap();
        assert!(a.len().abs_diff(b.len()) <= 8, "{:?}", cues[0].text);
    }

    #[test]
    fn short_cues_linger_until_the_next_one() {
        let ws = vec![
            w("Yes.", 0.0, 0.3),
            w("No.", 0.6, 0.9),
            w("Maybe.", 5.0, 5.4),
        ];
        let cues = cues_from_words(&ws);
        assert_same(
            &cues,
            &[
                cue(0.0, 0.6, "Yes."),
                cue(0.6, 1.6, "No."),
                cue(5.0, 6.0, "Maybe."),
            ],
        );
    }

    #[test]
    fn srt_and_vtt_formats() {
        let cues = [cue(1.0, 2.5, "text"), cue(3661.0015, 3662.0, "two\nlines")];
        assert_eq!(
            to_srt(&cues),
            "1\n00:00:01,000 --> 00:00:02,500\ntext\n\n2\n01:01:01,002 --> 01:01:02,000\ntwo\nlines\n\n"
        );
        assert_eq!(
            to_vtt(&cues),
            "WEBVTT\n\n00:00:01.000 --> 00:00:02.500\ntext\n\n01:01:01.002 --> 01:01:02.000\ntwo\nlines\n\n"
        );
    }

    #[test]
    fn srt_and_vtt_round_trip() {
        let mut cues = cues_from_words(&words(SPEECH, 0.37));
        cues.push(cue(90.0, 91.25, "Tom & Jerry <3 -> fun"));
        let from_srt = parse_srt(&to_srt(&cues)).unwrap();
        let from_vtt = parse_vtt(&to_vtt(&cues)).unwrap();
        let rounded: Vec<Cue> = cues
            .iter()
            .map(|c| Cue {
                start: (c.start * 1000.0).round() / 1000.0,
                end: (c.end * 1000.0).round() / 1000.0,
                ..c.clone()
            })
            .collect();
        assert_same(&from_srt, &rounded);
        assert_same(&from_vtt, &rounded);
        assert!(to_vtt(&cues).contains("Tom &amp; Jerry &lt;3 -&gt; fun"));
    }

    #[test]
    fn srt_parser_accepts_real_world_files() {
        let text = "\u{feff}1\r\n00:00:01,000 --> 00:00:02,000 X1:10 X2:20\r\nHello\r\nworld\r\n\r\n\r\n2\r\n00:00:02.500 --> 00:00:04,000\r\n\r\n";
        let cues = parse_srt(text).unwrap();
        assert_same(&cues, &[cue(1.0, 2.0, "Hello\nworld"), cue(2.5, 4.0, "")]);
        assert_eq!(parse_srt("").unwrap(), vec![]);
    }

    #[test]
    fn srt_parser_rejects_malformed_files() {
        let bad = [
            ("1\n00:00:01,000 -> 00:00:02,000\nx\n", "line 2"),
            ("1\n00:00:01 --> 00:00:02,000\nx\n", "bad timestamp"),
            ("1\n00:61:01,000 --> 00:62:02,000\nx\n", "bad timestamp"),
            ("1\n00:00:01,00 --> 00:00:02,000\nx\n", "bad timestamp"),
            ("1\n00:00:03,000 --> 00:00:02,000\nx\n", "before it starts"),
            ("one\n00:00:01,000 --> 00:00:02,000\nx\n", "cue number"),
            ("1\n", "no timing line"),
            (
                "1\n00:00:01,000 --> 00:00:02,000\nx\n\nstray text\n",
                "line 5",
            ),
        ];
        for (text, expected) in bad {
            let err = parse_srt(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn vtt_parser_skips_header_notes_and_ids() {
        let text = "WEBVTT - clip subtitles\nKind: captions\n\nNOTE made by hand\nover two lines\n\n\
                    STYLE\n::cue { color: red }\n\nintro\n00:01.000 --> 00:02.000 align:start line:90%\n\
                    <v Bob>Hi</v> <b>there</b> &amp; you\n\n00:00:03.000 --> 00:00:04.500\nbye\n";
        let cues = parse_vtt(text).unwrap();
        assert_same(
            &cues,
            &[cue(1.0, 2.0, "Hi there & you"), cue(3.0, 4.5, "bye")],
        );
        assert_eq!(parse_vtt("WEBVTT\n").unwrap(), vec![]);
    }

    #[test]
    fn vtt_parser_rejects_malformed_files() {
        let bad = [
            ("00:00:01.000 --> 00:00:02.000\nx\n", "WEBVTT header"),
            (
                "WEBVTTX\n\n00:00:01.000 --> 00:00:02.000\nx\n",
                "WEBVTT header",
            ),
            (
                "WEBVTT\n\n00:00:01,000 --> 00:00:02,000\nx\n",
                "bad timestamp",
            ),
            (
                "WEBVTT\n\n00:00:05.000 --> 00:00:02.000\nx\n",
                "before it starts",
            ),
            ("WEBVTT\n\nan id\nno timing here\n", "line 4"),
            ("WEBVTT\n\nlonely id\n", "no timing line"),
        ];
        for (text, expected) in bad {
            let err = parse_vtt(text).unwrap_err();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    #[test]
    fn degenerate_words_are_ignored() {
        let ws = vec![
            w(" ", 0.0, 1.0),
            w("ok", f64::NAN, 1.0),
            w("fine", -0.5, 0.4),
        ];
        assert_same(&cues_from_words(&ws), &[cue(0.0, 1.0, "fine")]);
        assert!(cues_from_words(&[]).is_empty());
    }
}
