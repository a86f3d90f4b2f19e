//! Tests of `ass`.

use super::*;
use crate::transcript::test_words::{w, words};

fn opts() -> AssOptions {
    AssOptions {
        width: 1080,
        height: 1920,
        font_name: "DejaVu Sans".into(),
        watermark_text: "clipforge".into(),
        duration: 30.0,
    }
}

fn style(animation: &str) -> CaptionStyle {
    CaptionStyle {
        animation: animation.into(),
        ..CaptionStyle::default()
    }
}

#[derive(Debug)]
struct Dialogue {
    layer: u32,
    start: String,
    end: String,
    style: String,
    text: String,
}

fn dialogues(doc: &str) -> Vec<Dialogue> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("Dialogue: "))
        .map(|l| {
            let f: Vec<&str> = l.splitn(10, ',').collect();
            assert_eq!(f.len(), 10, "malformed dialogue {l}");
            Dialogue {
                layer: f[0].parse().unwrap(),
                start: f[1].into(),
                end: f[2].into(),
                style: f[3].into(),
                text: f[9].into(),
            }
        })
        .collect()
}

fn captions(doc: &str) -> Vec<Dialogue> {
    dialogues(doc)
        .into_iter()
        .filter(|d| d.style == CAPTION_STYLE)
        .collect()
}

fn style_line<'a>(doc: &'a str, name: &str) -> Option<Vec<&'a str>> {
    doc.lines()
        .find_map(|l| {
            l.strip_prefix("Style: ")
                .filter(|s| s.starts_with(&format!("{name},")))
        })
        .map(|s| s.split(',').collect())
}

/// Centiseconds of `H:MM:SS.cc`.
fn cs(t: &str) -> u64 {
    let (hms, c) = t.split_once('.').unwrap();
    let p: Vec<u64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    ((p[0] * 60 + p[1]) * 60 + p[2]) * 100 + c.parse::<u64>().unwrap()
}

/// The caption text without override blocks.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[test]
fn colors_convert_to_ass_order_and_inverted_alpha() {
    let red = AssColor::from_css("#FF0000").unwrap();
    assert_eq!(red.style_value(), "&H000000FF&");
    assert_eq!(red.override_value(), "&H0000FF&");
    let green = AssColor::from_css("#00FF0080").unwrap();
    assert_eq!(green.style_value(), "&H7F00FF00&");
    assert_eq!(
        AssColor::from_css("#11223300").unwrap().style_value(),
        "&HFF332211&"
    );
    assert_eq!(
        AssColor::from_css("#abc").unwrap().style_value(),
        "&H00CCBBAA&"
    );
    assert_eq!(AssColor::from_css("blue"), None);
}

#[test]
fn grouping_covers_every_word_once_within_limits() {
    let text = "so this is a fairly long stretch of speech without any punctuation at all and it keeps \
                going with words like incomprehensibilities and internationalization mixed in between";
    let ws = words(text, 0.3);
    let s = CaptionStyle {
        font_size: 96.0,
        ..CaptionStyle::default()
    };
    let frame = Frame::new(&s, &opts());
    let groups = group_words(&ws, &s, &opts());
    let mut next = 0;
    for g in &groups {
        assert_eq!(g.start, next, "groups must be contiguous");
        assert!(!g.is_empty() && g.len() <= MAX_WORDS_PER_LINE, "{g:?}");
        let line: Vec<&str> = ws[g.clone()].iter().map(|w| w.text.as_str()).collect();
        let units = text_units(&line.join(" "));
        assert!(
            g.len() == 1 || frame.text_width(units) <= frame.max_line_width(),
            "{line:?} too wide"
        );
        next = g.end;
    }
    assert_eq!(next, ws.len());
    assert!(
        groups.iter().any(|g| g.len() < MAX_WORDS_PER_LINE),
        "width never limited a line"
    );
}

#[test]
fn grouping_breaks_after_sentences_and_pauses() {
    let ws = vec![
        w("Hi", 0.0, 0.2),
        w("there.", 0.3, 0.5),
        w("How", 0.6, 0.8),
        w("are", 0.9, 1.0),
        w("you", 2.0, 2.2),
        w("doing?", 2.3, 2.6),
    ];
    assert_eq!(
        group_words(&ws, &style("none"), &opts()),
        vec![0..2, 2..4, 4..6]
    );
}

#[test]
fn an_overlong_word_is_its_own_line_and_shrunk_to_fit() {
    let ws = vec![
        w("a", 0.0, 0.2),
        w("Pneumonoultramicroscopicsilicovolcanoconiosis", 0.3, 1.5),
        w("b", 1.6, 1.8),
    ];
    let s = style("none");
    assert_eq!(group_words(&ws, &s, &opts()), vec![0..1, 1..2, 2..3]);
    let doc = build_ass(&ws, &s, &opts());
    let long = captions(&doc)
        .into_iter()
        .find(|d| d.text.contains("Pneumono"))
        .unwrap();
    assert!(long.text.contains("\\fs"), "{}", long.text);
    assert!(!captions(&doc)
        .iter()
        .any(|d| d.text.contains("\\fs") && !d.text.contains("Pneumono")));
}

#[test]
fn header_has_frame_size_and_font() {
    let o = AssOptions {
        width: 720,
        height: 1280,
        font_name: "Liberation Sans".into(),
        ..opts()
    };
    let doc = build_ass(&words("one two", 0.5), &style("none"), &o);
    for needle in [
        "[Script Info]",
        "PlayResX: 720\n",
        "PlayResY: 1280\n",
        "ScaledBorderAndShadow: yes",
        "WrapStyle: 2",
    ] {
        assert!(doc.contains(needle), "missing {needle}");
    }
    assert!(doc.contains("[V4+ Styles]") && doc.contains("[Events]"));
    let caption = style_line(&doc, CAPTION_STYLE).unwrap();
    assert_eq!(caption[1], "Liberation Sans");
    // 72 px on 1920 → 48 on 1280; stroke 4 → 2.67.
    assert_eq!(caption[2], "48");
    assert_eq!(caption[16], "2.67");
}

#[test]
fn current_word_is_highlighted_in_its_own_event() {
    let s = CaptionStyle {
        highlight_color: "#00FF00".into(),
        font_color: "#FFFFFF".into(),
        ..style("none")
    };
    let ws = words("alpha beta gamma", 0.5);
    let events = captions(&build_ass(&ws, &s, &opts()));
    assert_eq!(events.len(), 3);
    for (i, e) in events.iter().enumerate() {
        let (_, after) = e.text.split_once("{\\c&H00FF00&}").unwrap();
        assert!(
            after.starts_with(&ws[i].text),
            "event {i} highlights the wrong word: {}",
            e.text
        );
        assert_eq!(e.text.matches("\\c&H00FF00&").count(), 1);
        assert_eq!(cs(&e.start), (i as u64) * 50);
        assert_eq!(plain(&e.text), "alpha beta gamma");
    }
    // The highlight is reset to the font colour after the current word.
    assert!(events[0].text.contains("alpha{\\c&HFFFFFF&} beta"));
    // Events of a line meet exactly; the last lingers after the last word.
    assert_eq!(events[0].end, events[1].start);
    assert_eq!(cs(&events[2].end), 50 * 2 + 40 + 30);
}

#[test]
fn lines_hold_through_short_gaps_and_stop_at_the_clip_end() {
    let ws = vec![
        w("One.", 0.0, 0.5),
        w("Two.", 0.8, 1.2),
        w("Three.", 3.0, 3.5),
        w("Four.", 9.8, 10.4),
    ];
    let o = AssOptions {
        duration: 10.0,
        ..opts()
    };
    let events = captions(&build_ass(&ws, &style("none"), &o));
    let spans: Vec<(u64, u64)> = events.iter().map(|e| (cs(&e.start), cs(&e.end))).collect();
    assert_eq!(spans, vec![(0, 80), (80, 150), (300, 380), (980, 1000)]);
}

#[test]
fn position_y_moves_the_line() {
    let ws = words("hello world", 0.5);
    let at = |y: f64| {
        let s = CaptionStyle {
            position_y: y,
            ..style("none")
        };
        captions(&build_ass(&ws, &s, &opts()))[0].text.clone()
    };
    assert!(at(50.0).starts_with("{\\an5\\pos(540,960)"));
    assert!(at(25.0).starts_with("{\\an5\\pos(540,480)"));
}

#[test]
fn karaoke_sweeps_with_durations_summing_to_the_line() {
    let s = CaptionStyle {
        font_color: "#FFFFFF".into(),
        highlight_color: "#FF3B8D".into(),
        ..style("karaoke")
    };
    let ws = vec![
        w("sing", 0.0, 0.4),
        w("along", 0.6, 1.1),
        w("now", 1.2, 1.5),
        w("Next", 4.0, 4.4),
    ];
    let doc = build_ass(&ws, &s, &opts());
    let caption = style_line(&doc, CAPTION_STYLE).unwrap();
    assert_eq!(caption[3], "&H008D3BFF&", "primary = highlight");
    assert_eq!(caption[4], "&H00FFFFFF&", "secondary = font");
    let events = captions(&doc);
    assert_eq!(events.len(), 2, "one event per line");
    for e in &events {
        let total: u64 = e
            .text
            .split('{')
            .filter_map(|b| b.strip_prefix("\\kf").or_else(|| b.strip_prefix("\\k")))
            .map(|b| b.split('}').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, cs(&e.end) - cs(&e.start), "{}", e.text);
    }
    assert!(
        events[0]
            .text
            .contains("{\\kf60}sing {\\kf60}along {\\kf30}now"),
        "{}",
        events[0].text
    );
}

#[test]
fn fade_fades_the_line_in_and_out() {
    let events = captions(&build_ass(
        &words("one two three", 0.5),
        &style("fade"),
        &opts(),
    ));
    assert!(events[0].text.contains("\\fad(180,0)"));
    assert!(!events[1].text.contains("\\fad"));
    assert!(events[2].text.contains("\\fad(0,180)"));
}

#[test]
fn pop_and_bounce_animate_only_the_current_word() {
    for anim in ["pop", "bounce"] {
        let events = captions(&build_ass(
            &words("one two three", 0.5),
            &style(anim),
            &opts(),
        ));
        for e in &events {
            assert_eq!(
                e.text.matches("\\t(").count(),
                if anim == "pop" { 2 } else { 3 },
                "{}",
                e.text
            );
            assert!(e.text.contains("\\fscy"));
        }
        // The words after the current one are back to normal size.
        assert!(events[1].text.contains("\\fscx100\\fscy100} three"));
    }
}

#[test]
fn typewriter_hides_words_not_spoken_yet() {
    let events = captions(&build_ass(
        &words("one two three", 0.5),
        &style("typewriter"),
        &opts(),
    ));
    let hidden_after = |t: &str| {
        t.split_once("\\alpha&HFF&}")
            .map(|(_, rest)| rest.to_string())
    };
    assert_eq!(hidden_after(&events[0].text).as_deref(), Some(" two three"));
    assert_eq!(hidden_after(&events[1].text).as_deref(), Some(" three"));
    assert_eq!(hidden_after(&events[2].text), None);
    assert!(
        events.iter().all(|e| plain(&e.text) == "one two three"),
        "layout must not move"
    );
}

#[test]
fn unknown_animation_is_static() {
    let plain_doc = build_ass(&words("one two", 0.5), &style("none"), &opts());
    let unknown = build_ass(&words("one two", 0.5), &style("spin"), &opts());
    assert_eq!(plain_doc, unknown);
    assert!(!unknown.contains("\\t(") && !unknown.contains("\\fad") && !unknown.contains("\\k"));
}

#[test]
fn background_draws_a_box_layer_under_the_text() {
    let ws = words("boxed text", 0.5);
    let none = build_ass(&ws, &style("pop"), &opts());
    assert!(style_line(&none, BOX_STYLE).is_none());
    assert_eq!(style_line(&none, CAPTION_STYLE).unwrap()[15], "1");

    let s = CaptionStyle {
        background: true,
        background_color: Some("#11223380".into()),
        ..style("pop")
    };
    let doc = build_ass(&ws, &s, &opts());
    let boxed = style_line(&doc, BOX_STYLE).unwrap();
    assert_eq!(boxed[15], "3", "BorderStyle");
    assert_eq!(boxed[5], "&H7F332211&", "box colour is the OutlineColour");
    assert!(boxed[16].parse::<f64>().unwrap() >= 10.0, "padding");
    assert!(
        boxed[3].starts_with("&HFF"),
        "box layer glyphs are invisible"
    );
    let boxes: Vec<_> = dialogues(&doc)
        .into_iter()
        .filter(|d| d.style == BOX_STYLE)
        .collect();
    assert_eq!(boxes.len(), captions(&doc).len());
    assert!(boxes
        .iter()
        .all(|b| b.layer < TEXT_LAYER && plain(&b.text) == "boxed text"));
    // One glyph run: no override block inside the line.
    assert!(boxes.iter().all(|b| b.text.matches('{').count() == 1));

    let default_bg = CaptionStyle {
        background: true,
        background_color: None,
        ..style("none")
    };
    let doc = build_ass(&ws, &default_bg, &opts());
    let outline = style_line(&doc, BOX_STYLE).unwrap()[5];
    assert!(
        outline.ends_with("000000&") && outline != "&H00000000&",
        "semi-transparent black: {outline}"
    );
}

#[test]
fn watermark_only_when_enabled_and_placed_by_position() {
    let ws = words("hello", 0.5);
    let doc = build_ass(&ws, &style("none"), &opts());
    assert!(!doc.contains("clipforge") && style_line(&doc, WATERMARK_STYLE).is_none());

    let cases = [
        ("bottom-left", 1),
        ("bottom-center", 2),
        ("bottom-right", 3),
        ("middle-left", 4),
        ("middle-center", 5),
        ("middle-right", 6),
        ("top-left", 7),
        ("top-center", 8),
        ("top-right", 9),
    ];
    for (position, an) in cases {
        let s = CaptionStyle {
            watermark_enabled: true,
            watermark_position: position.into(),
            watermark_opacity: 0.25,
            ..style("none")
        };
        let doc = build_ass(&ws, &s, &opts());
        let marks: Vec<_> = dialogues(&doc)
            .into_iter()
            .filter(|d| d.style == WATERMARK_STYLE)
            .collect();
        assert_eq!(marks.len(), 1);
        let mark = &marks[0];
        assert!(
            mark.text.starts_with(&format!("{{\\an{an}\\pos(")),
            "{position}: {}",
            mark.text
        );
        assert!(
            mark.text.contains("\\alpha&HBF&"),
            "opacity 0.25 → alpha BF"
        );
        assert!(mark.text.ends_with("}clipforge"));
        assert!(mark.layer > TEXT_LAYER);
        assert_eq!(
            (mark.start.as_str(), mark.end.as_str()),
            ("0:00:00.00", "0:00:30.00")
        );
    }
    let (_, x, y) = watermark_anchor("top-left", 1080.0, 1920.0);
    assert!((x - 43.2).abs() < 1e-9 && (y - 76.8).abs() < 1e-9);
}

#[test]
fn watermark_size_scales_its_font() {
    let size = |pct: f64| {
        let s = CaptionStyle {
            watermark_enabled: true,
            watermark_size: pct,
            ..style("none")
        };
        let doc = build_ass(&words("hi", 0.5), &s, &opts());
        style_line(&doc, WATERMARK_STYLE).unwrap()[2]
            .parse::<f64>()
            .unwrap()
    };
    let (small, large) = (size(10.0), size(40.0));
    assert!((large / small - 4.0).abs() < 0.01, "{small} vs {large}");
    // "clipforge": 9 chars × 0.5 em ≈ 40% of 1080 px.
    assert!((large * 9.0 * WATERMARK_CHAR_WIDTH_EM - 432.0).abs() < 1.0);
}

#[test]
fn text_is_escaped() {
    assert_eq!(escape_text("a{\\b1}b\\Nc\nd"), "a(/b1)b/Nc d");
    let ws = vec![w("{\\fs200}big", 0.0, 0.5), w("line\nbreak", 0.5, 1.0)];
    let doc = build_ass(&ws, &style("none"), &opts());
    assert!(!doc.contains("\\fs200"));
    for e in captions(&doc) {
        assert_eq!(plain(&e.text), "(/fs200)big line break");
    }
    let o = AssOptions {
        font_name: "Evil,Font".into(),
        watermark_text: "{x}".into(),
        ..opts()
    };
    let s = CaptionStyle {
        watermark_enabled: true,
        ..style("none")
    };
    let doc = build_ass(&ws, &s, &o);
    assert_eq!(style_line(&doc, CAPTION_STYLE).unwrap()[1], "EvilFont");
    assert!(doc.contains("}(x)\n"));
}

#[test]
fn times_are_h_mm_ss_cc() {
    assert_eq!(format_time(0), "0:00:00.00");
    assert_eq!(format_time(6_123), "0:01:01.23");
    assert_eq!(format_time(360_000 + 5), "1:00:00.05");
    assert_eq!(to_cs(-1.0), 0);
    assert_eq!(to_cs(f64::NAN), 0);
    assert_eq!(to_cs(1.234), 123);
}

#[test]
fn empty_and_degenerate_words_are_skipped() {
    let ws = vec![w("  ", 0.0, 0.1), w("ok", 0.2, 0.4), w("late", 40.0, 41.0)];
    let events = captions(&build_ass(&ws, &style("none"), &opts()));
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(plain(&events[0].text), "ok");
    assert!(captions(&build_ass(&[], &style("none"), &opts())).is_empty());
}

#[test]
fn salient_words_keep_the_highlight_when_not_spoken() {
    let ws = words("we raised 5 million", 0.5);
    let doc = build_ass(&ws, &style("none"), &opts());
    let events = captions(&doc);
    // While "we" is spoken, "5" is already in the highlight colour (#FFD700),
    // and the words after it are back in the font colour.
    assert!(
        events[0]
            .text
            .contains("raised {\\1c&H00D7FF&}5{\\1c&HFFFFFF&} million"),
        "{}",
        events[0].text
    );
    // Karaoke colours it before the sweep reaches it.
    let doc = build_ass(&ws, &style("karaoke"), &opts());
    let line = &captions(&doc)[0].text;
    assert!(line.contains("}{\\2c&H00D7FF&}5{\\2c&HFFFFFF&}"), "{line}");
    // A highlight equal to the font colour shows nothing to emphasize.
    let same = CaptionStyle {
        highlight_color: "#FFFFFF".into(),
        ..style("none")
    };
    let doc = build_ass(&ws, &same, &opts());
    assert!(!doc.contains("\\1c"), "{doc}");
}

#[test]
fn keyword_emphasis_can_be_turned_off() {
    let ws = words("we raised 5 million from Sarah", 0.5);
    for animation in ["none", "karaoke", "pop"] {
        let off = CaptionStyle {
            emphasize_keywords: false,
            ..style(animation)
        };
        let doc = build_ass(&ws, &off, &opts());
        for e in captions(&doc) {
            // Only the current word is highlighted (`\c`), never a salient
            // word the voice has not reached ("5", "Sarah").
            assert!(!e.text.contains("\\1c&H00D7FF&}5"), "{}", e.text);
            assert!(!e.text.contains("\\2c&H00D7FF&"), "{}", e.text);
        }
        // The same words with emphasis on do show it.
        let on = build_ass(&ws, &style(animation), &opts());
        assert!(on.contains("c&H00D7FF&}5{"), "{animation}: {on}");
    }
}
