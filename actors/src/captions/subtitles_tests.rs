//! Tests of `subtitles`.

use super::*;
use crate::transcript::test_words::{w, words};

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

const SPEECH: &str =
    "Well, I think the most important thing about building a product is that you talk \
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
        let err = parse_srt(text).unwrap_err().to_string();
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
        let err = parse_vtt(text).unwrap_err().to_string();
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
