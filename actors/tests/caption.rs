//! The caption stage on real encodes: captions are burned in where the
//! template says, in its colours, with the watermark when enabled; the face
//! is followed; cancelling leaves neither processes nor files.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clipforge_actors::captions::template::CaptionStyle;
use clipforge_actors::media::face;
use clipforge_actors::media::ffprobe;
use clipforge_actors::projects::reframe::Layout;
use clipforge_actors::projects::stages::caption::{run_stage, CaptionOptions};
use clipforge_actors::projects::stages::cut::ClipPlan;
use clipforge_actors::projects::stages::{Progress, StageCtx, StageError};
use clipforge_actors::transcript::{Transcript, Word};
use tokio_util::sync::CancellationToken;

/// Words spoken from 0.2 s to 2.8 s, all on screen around t = 1.5 s.
fn transcript(words: bool) -> Transcript {
    let list = if words {
        ["Bright", "words", "follow", "the", "speaker"]
            .iter()
            .enumerate()
            .map(|(i, w)| Word {
                text: w.to_string(),
                start: 0.2 + i as f64 * 0.5,
                end: 0.65 + i as f64 * 0.5,
                probability: 1.0,
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut t = Transcript {
        language: "en".into(),
        language_probability: None,
        duration: 3.0,
        sentences: Vec::new(),
        words: list,
    };
    t.rebuild_sentences();
    t
}

async fn render(
    input: &Path,
    out: &Path,
    style: CaptionStyle,
    words: bool,
    layout: Layout,
) -> PathBuf {
    let media = ffprobe::probe(input, &CancellationToken::new())
        .await
        .unwrap();
    let t = transcript(words);
    let plan = ClipPlan {
        start: 0.0,
        end: 3.0,
        score: 50,
        title: "t".into(),
        first_word: 0,
        end_word: t.words.len(),
        reason: String::new(),
        scores: Default::default(),
        cuts: Vec::new(),
    };
    let mut opts = CaptionOptions::new(out.to_path_buf(), style);
    opts.layout = layout;
    opts.x264_preset = "ultrafast".into();
    let ctx = StageCtx::new(CancellationToken::new(), Progress::silent());
    let clips = run_stage(input, &media, &t, &[plan], None, &opts, &ctx)
        .await
        .expect("caption stage");
    clips[0].video.clone()
}

/// Pixels (as a fraction of a band of rows) that differ by more than a
/// small threshold between two frames.
fn diff_in_rows(a: &[u8], b: &[u8], w: u32, rows: std::ops::Range<u32>) -> f64 {
    let mut n = 0usize;
    let mut total = 0usize;
    for y in rows {
        for x in 0..w {
            let i = ((y * w + x) * 3) as usize;
            let d: i32 = (0..3)
                .map(|k| (a[i + k] as i32 - b[i + k] as i32).abs())
                .sum();
            total += 1;
            if d > 60 {
                n += 1;
            }
        }
    }
    n as f64 / total.max(1) as f64
}

/// Pixels in rows that are strongly red (the caption colour under test).
fn red_in_rows(f: &[u8], w: u32, rows: std::ops::Range<u32>) -> usize {
    let mut n = 0;
    for y in rows {
        for x in 0..w {
            let i = ((y * w + x) * 3) as usize;
            if f[i] > 180 && f[i + 1] < 80 && f[i + 2] < 80 {
                n += 1;
            }
        }
    }
    n
}

fn plain_video(dir: &Path) -> PathBuf {
    let wav = common::speech_wav(dir, "tone", "bright words follow the speaker");
    common::video(
        dir,
        "plain",
        "color=c=0x336699",
        "1280x720",
        Some(&wav),
        3.0,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn captions_are_burned_in_where_and_how_the_template_says() {
    let dir = tempfile::tempdir().unwrap();
    let input = plain_video(dir.path());
    let base = render(
        &input,
        &dir.path().join("none"),
        CaptionStyle::default(),
        false,
        Layout::Single,
    )
    .await;
    let (w, h, plain) = common::frame_rgb(&base, 1.5);
    assert_eq!((w, h), (1080, 1920));

    let red_low = CaptionStyle {
        font_color: "#FF0000".into(),
        highlight_color: "#FF0000".into(),
        stroke_width: 0.0,
        position_y: 80.0,
        animation: "none".into(),
        ..CaptionStyle::default()
    };
    let low = render(
        &input,
        &dir.path().join("low"),
        red_low.clone(),
        true,
        Layout::Single,
    )
    .await;
    let (_, _, low_f) = common::frame_rgb(&low, 1.5);
    let band = |p: f64| ((h as f64 * p / 100.0) as u32 - 80)..((h as f64 * p / 100.0) as u32 + 80);

    // Burned in: the caption band differs from the uncaptioned frame…
    assert!(
        diff_in_rows(&plain, &low_f, w, band(80.0)) > 0.01,
        "no caption pixels at 80%"
    );
    // …in the template's colour…
    assert!(
        red_in_rows(&low_f, w, band(80.0)) > 500,
        "caption is not red"
    );
    assert_eq!(red_in_rows(&plain, w, 0..h), 0);
    // …and nowhere else.
    assert!(
        diff_in_rows(&plain, &low_f, w, band(20.0)) < 0.001,
        "pixels changed away from the caption"
    );

    let high = render(
        &input,
        &dir.path().join("high"),
        CaptionStyle {
            position_y: 20.0,
            ..red_low.clone()
        },
        true,
        Layout::Single,
    )
    .await;
    let (_, _, high_f) = common::frame_rgb(&high, 1.5);
    assert!(
        red_in_rows(&high_f, w, band(20.0)) > 500,
        "positionY 20 puts the caption high"
    );
    assert_eq!(red_in_rows(&high_f, w, band(80.0)), 0, "and not low");

    // Another fontColor changes the pixels' colour.
    let green = CaptionStyle {
        font_color: "#00FF00".into(),
        highlight_color: "#00FF00".into(),
        ..red_low.clone()
    };
    let green_v = render(
        &input,
        &dir.path().join("green"),
        green,
        true,
        Layout::Single,
    )
    .await;
    let (_, _, green_f) = common::frame_rgb(&green_v, 1.5);
    assert_eq!(red_in_rows(&green_f, w, band(80.0)), 0);
    assert!(diff_in_rows(&plain, &green_f, w, band(80.0)) > 0.01);

    // The watermark appears (bottom-right) only when enabled.
    let wm = CaptionStyle {
        watermark_enabled: true,
        watermark_opacity: 1.0,
        watermark_position: "top-right".into(),
        ..CaptionStyle::default()
    };
    let wm_v = render(&input, &dir.path().join("wm"), wm, false, Layout::Single).await;
    let (_, _, wm_f) = common::frame_rgb(&wm_v, 1.5);
    assert!(
        diff_in_rows(&plain, &wm_f, w, 0..(h / 8)) > 0.005,
        "watermark missing at the top"
    );
    assert!(
        diff_in_rows(&plain, &wm_f, w, (h / 4)..h) < 0.001,
        "watermark drawn elsewhere"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_crop_follows_a_face() {
    let photo = common::cache_dir().join("testdata").join("astronaut.png");
    assert!(
        photo.is_file(),
        "{} missing: run `make setup-test`",
        photo.display()
    );
    let dir = tempfile::tempdir().unwrap();
    // The 512x512 portrait on the right-hand side of a 1280x720 frame.
    let input = dir.path().join("face.mp4");
    let wav = common::speech_wav(dir.path(), "f", "hello from orbit");
    let status = std::process::Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-y",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "color=c=0x202020:s=1280x720:r=25:d=3",
            "-loop",
            "1",
            "-i",
        ])
        .arg(&photo)
        .arg("-i")
        .arg(&wav)
        .args([
            "-filter_complex",
            "[1:v]scale=560:560[p];[0:v][p]overlay=700:80:shortest=1[v]",
            "-map",
            "[v]",
            "-map",
            "2:a",
        ])
        .args([
            "-af",
            "apad",
            "-t",
            "3",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ])
        .arg(&input)
        .status()
        .unwrap();
    assert!(status.success());

    let samples = face::track(&input, 0.0, 3.0, 1280, 720, &CancellationToken::new())
        .await
        .unwrap()
        .largest();
    assert!(
        face::face_ratio(&samples) > 0.8,
        "face found in too few samples: {samples:?}"
    );
    let path = face::smooth_path(&samples);
    let cx = path[path.len() / 2];
    // The face's centre is in the right half, near x = (700 + 560/2) / 1280 ≈ 0.77.
    assert!((0.65..0.9).contains(&cx), "crop centre {cx}");

    let video = render(
        &input,
        &dir.path().join("out"),
        CaptionStyle::default(),
        false,
        Layout::Auto,
    )
    .await;
    let (w, h, f) = common::frame_rgb(&video, 1.5);
    // The crop sits on the portrait: across the middle row (source y = 360,
    // inside the portrait) almost no pixel is the dark background, which a
    // centre crop (source x 437..842, the portrait starts at 700) would show.
    let row = (h / 2) as usize;
    let line = &f[row * w as usize * 3..(row + 1) * w as usize * 3];
    let dark = line
        .chunks_exact(3)
        .filter(|p| p.iter().all(|c| (0x10..0x30).contains(c)))
        .count();
    assert!(
        dark < (w as usize) / 5,
        "the crop missed the face: {dark} of {w} background pixels in the middle row"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_kills_ffmpeg_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(dir.path(), "long", &common::TALK.join(" "));
    let input = common::video(dir.path(), "long", "testsrc2", "1280x720", Some(&wav), 40.0);
    let media = ffprobe::probe(&input, &CancellationToken::new())
        .await
        .unwrap();
    let out = dir.path().join("out");
    let t = transcript(false);
    let plan = ClipPlan {
        start: 0.0,
        end: 40.0,
        score: 1,
        title: "t".into(),
        first_word: 0,
        end_word: 0,
        reason: String::new(),
        scores: Default::default(),
        cuts: Vec::new(),
    };
    let mut opts = CaptionOptions::new(out.clone(), CaptionStyle::default());
    opts.x264_preset = "medium".into();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = StageCtx::new(
        cancel.clone(),
        Progress::new(move |p| {
            let _ = tx.send(p);
        }),
    );
    let task =
        tokio::spawn(
            async move { run_stage(&input, &media, &t, &[plan], None, &opts, &ctx).await },
        );
    // Wait until the encode is under way, then cancel.
    while let Some(p) = rx.recv().await {
        if p >= 10 {
            break;
        }
    }
    let marker = dir.path().to_string_lossy().into_owned();
    assert!(
        !common::processes_matching(&marker).is_empty(),
        "ffmpeg should be running before the cancel"
    );
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("cancel is prompt")
        .unwrap();
    assert!(matches!(result, Err(StageError::Cancelled)), "{result:?}");
    let left = common::processes_matching(&marker);
    assert!(left.is_empty(), "processes left: {left}");
    let files: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(files.is_empty(), "files left after cancel: {files:?}");
}
