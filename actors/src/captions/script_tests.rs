//! Captions in every script, rendered for real: the ASS documents of
//! `build_ass` burned by ffmpeg's `ass` filter (libass with fontconfig
//! fallback to the Noto fonts that `scripts/setup.sh` installs).

use std::path::Path;
use std::process::Command;

use super::ass::{build_ass, AssOptions};
use super::subtitles::cues_from_words;
use super::template::CaptionStyle;
use crate::media::fonts;
use crate::transcript::Word;

const W: u32 = 540;
const H: u32 = 960;

/// One word every 0.5 s.
fn words(list: &[&str]) -> Vec<Word> {
    list.iter()
        .enumerate()
        .map(|(i, t)| Word {
            text: t.to_string(),
            start: i as f64 * 0.5,
            end: i as f64 * 0.5 + 0.4,
            probability: 1.0,
        })
        .collect()
}

fn style() -> CaptionStyle {
    CaptionStyle {
        font_color: "#FFFFFF".into(),
        highlight_color: "#FFFF00".into(),
        animation: "none".into(),
        position_y: 50.0,
        ..CaptionStyle::default()
    }
}

fn document(words: &[Word], style: &CaptionStyle) -> String {
    build_ass(
        words,
        style,
        &AssOptions {
            width: W,
            height: H,
            font_name: fonts::resolve(&style.font_candidates()),
            watermark_text: String::new(),
            duration: 30.0,
        },
    )
}

/// The frame at `at` seconds of `doc` burned on mid grey, as RGB bytes.
fn render(dir: &Path, doc: &str, at: f64) -> Vec<u8> {
    let ass = dir.join(format!("doc-{}.ass", doc.len()));
    std::fs::write(&ass, doc).unwrap();
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-f", "lavfi", "-i"])
        .arg(format!("color=c=0x808080:s={W}x{H}:d=30:r=10"))
        .args(["-ss", &format!("{at:.2}"), "-vf"])
        .arg(format!("ass=filename='{}'", ass.display()))
        .args(["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), (W * H * 3) as usize);
    out.stdout
}

fn pixels(rgb: &[u8]) -> impl Iterator<Item = (u32, u32, [u8; 3])> + '_ {
    rgb.chunks_exact(3)
        .enumerate()
        .map(|(i, p)| (i as u32 % W, i as u32 / W, [p[0], p[1], p[2]]))
}

fn is_background(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c.abs_diff(0x80) < 8)
}

/// Each word with its characters in reverse order (the word order and so the
/// spaces stay where they were).
fn scrambled(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.chars().rev().collect()).collect()
}

/// Share of pixels that differ between two renderings.
fn difference(a: &[u8], b: &[u8]) -> f64 {
    let differing = a
        .chunks_exact(3)
        .zip(b.chunks_exact(3))
        .filter(|(x, y)| x.iter().zip(y.iter()).any(|(p, q)| p.abs_diff(*q) > 40))
        .count();
    differing as f64 / (W * H) as f64
}

const SAMPLES: [(&str, &[&str]); 6] = [
    ("arabic", &["مرحبا", "بالعالم", "الجميل"]),
    ("hebrew", &["שלום", "עולם", "יפה"]),
    ("devanagari", &["नमस्ते", "दुनिया", "सुंदर"]),
    ("chinese", &["你好", "世界", "朋友们"]),
    ("japanese", &["こんにちは", "世界", "ですね"]),
    ("thai", &["สวัสดี", "ชาวโลก", "ครับ"]),
];

/// Real glyphs, not boxes: with every word's characters reversed the picture
/// changes (missing glyphs all draw the same box, so a line of tofu looks the
/// same however its characters are ordered), and text is drawn at all.
#[test]
fn every_script_renders_real_glyphs() {
    let dir = tempfile::tempdir().unwrap();
    let style = CaptionStyle {
        highlight_color: "#FFFFFF".into(),
        ..style()
    };
    for (script, list) in SAMPLES {
        let ws = words(list);
        let a = render(dir.path(), &document(&ws, &style), 1.2);
        let rev = scrambled(list);
        let rev: Vec<&str> = rev.iter().map(String::as_str).collect();
        let b = render(dir.path(), &document(&words(&rev), &style), 1.2);
        let inked = pixels(&a).filter(|p| !is_background(p.2)).count();
        assert!(
            inked > 2000,
            "{script}: almost nothing drawn ({inked} pixels)"
        );
        let d = difference(&a, &b);
        assert!(
            d > 0.002,
            "{script}: reordering the characters changes nothing ({d:.4}): tofu boxes?"
        );
    }
}

/// The first word spoken is on the right in Hebrew and Arabic, on the left
/// in English: its highlight colour is found there.
#[test]
fn right_to_left_lines_read_from_the_right() {
    let dir = tempfile::tempdir().unwrap();
    for (script, list, rtl) in [
        ("english", &["Hello", "beautiful", "world"][..], false),
        ("hebrew", &["שלום", "עולם", "יפה"][..], true),
        ("arabic", &["مرحبا", "بالعالم", "الجميل"][..], true),
    ] {
        let rgb = render(dir.path(), &document(&words(list), &style()), 0.2);
        let xs: Vec<u32> = pixels(&rgb)
            .filter(|(_, _, p)| p[0] > 200 && p[1] > 200 && p[2] < 90)
            .map(|(x, _, _)| x)
            .collect();
        assert!(xs.len() > 200, "{script}: no highlighted word drawn");
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
        if rtl {
            assert!(
                mean > W as f64 * 0.55,
                "{script}: first word at x={mean:.0}"
            );
        } else {
            assert!(
                mean < W as f64 * 0.45,
                "{script}: first word at x={mean:.0}"
            );
        }
    }
}

/// A long Chinese sentence (Whisper may give it as a few long words) is cut
/// between characters into lines that fit the frame at the template's size:
/// no spaces inserted, no shrunken font, no text past the frame's edges.
#[test]
fn cjk_lines_break_between_characters_within_the_width() {
    let dir = tempfile::tempdir().unwrap();
    let sentence = [
        "我们今天要讨论的是人工智能",
        "在日常生活中的各种应用以及它对未来社会的影响",
    ];
    let ws = words(&sentence);
    let doc = document(&ws, &style());
    let texts: Vec<String> = doc
        .lines()
        .filter(|l| l.starts_with("Dialogue: 1,"))
        .map(|l| {
            let text = l.splitn(10, ',').nth(9).unwrap();
            // Drop override blocks.
            let mut plain = String::new();
            let mut depth = 0;
            for c in text.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    c if depth == 0 => plain.push(c),
                    _ => {}
                }
            }
            plain
        })
        .collect();
    assert!(texts.len() >= 3, "{doc}");
    assert!(!doc.contains("\\fs"), "the font was shrunk instead: {doc}");
    let mut all = String::new();
    for t in &texts {
        assert!(!t.contains(' '), "space in a CJK line: {t:?}");
        if !all.ends_with(t.as_str()) {
            all.push_str(t);
        }
    }
    assert_eq!(
        all,
        sentence.concat(),
        "every character shown once, in order"
    );
    for at in [0.1, 0.3, 0.6, 0.8] {
        let rgb = render(dir.path(), &doc, at);
        let xs: Vec<u32> = pixels(&rgb)
            .filter(|p| !is_background(p.2))
            .map(|p| p.0)
            .collect();
        assert!(!xs.is_empty(), "nothing drawn at {at}");
        let (lo, hi) = (xs.iter().min().unwrap(), xs.iter().max().unwrap());
        assert!(
            *lo > W / 50 && *hi < W - W / 50,
            "text reaches the frame's edge at {at}: x {lo}..{hi}"
        );
    }
}

#[test]
fn cjk_subtitles_have_no_spaces_and_fit_two_lines() {
    let ws = words(&[
        "我们今天要讨论的是人工智能",
        "在日常生活中的各种应用",
        "以及它对未来社会的影响。",
    ]);
    let cues = cues_from_words(&ws);
    assert!(!cues.is_empty());
    for cue in &cues {
        assert!(!cue.text.contains(' '), "{:?}", cue.text);
        for line in cue.text.lines() {
            assert!(line.chars().count() <= 21, "{line:?} is too long");
        }
    }
    let all: String = cues.iter().map(|c| c.text.replace('\n', "")).collect();
    assert_eq!(
        all,
        "我们今天要讨论的是人工智能在日常生活中的各种应用以及它对未来社会的影响。"
    );
}
