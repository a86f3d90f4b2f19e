//! Layouts on synthetic videos made from a real face photo: two people with
//! the sound alternating between them (active speaker), a moving face
//! (single), a slide with a small face cam (screen), and every aspect ratio
//! through the caption stage (ffprobe sizes).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clipforge_actors::captions::template::CaptionStyle;
use clipforge_actors::media::spare_cpu::SpareCpu;
use clipforge_actors::media::{face, ffprobe};
use clipforge_actors::projects::reframe::graph::Composition;
use clipforge_actors::projects::reframe::speaker::jitter;
use clipforge_actors::projects::reframe::{frame_clip, AspectRatio, Framing, Layout};
use clipforge_actors::projects::stages::caption::{run_stage, CaptionOptions};
use clipforge_actors::projects::stages::cut::ClipPlan;
use clipforge_actors::projects::stages::{Progress, StageCtx};
use clipforge_actors::transcript::Transcript;
use tokio_util::sync::CancellationToken;

const SRC: (u32, u32) = (1280, 720);
const VERTICAL: (u32, u32) = (1080, 1920);

fn photo() -> PathBuf {
    let p = common::cache_dir().join("testdata").join("astronaut.png");
    assert!(
        p.is_file(),
        "{} missing: run `make setup-test`",
        p.display()
    );
    p
}

fn ffmpeg(args: &[&str], out: &Path) {
    let st = Command::new("ffmpeg")
        .args(["-nostdin", "-y", "-v", "error"])
        .args(args)
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ])
        .arg(out)
        .status()
        .unwrap();
    assert!(st.success(), "ffmpeg failed making {}", out.display());
}

/// Two copies of the photo side by side on a 1280x720 frame, 12 s. The
/// left person talks for the first 6 s, the right one after. `stereo`: each
/// voice on its own side's channel (faces still); else a mono mix and the
/// talking photo's mouth opens and closes while it talks.
fn two_people(dir: &Path, stereo: bool) -> PathBuf {
    let a = common::speech_wav(
        dir,
        "a",
        "Welcome back to the show. Today we talk about rockets and orbits.",
    );
    let b = common::speech_wav(
        dir,
        "b",
        "Thanks for having me. Orbits are simpler than they look, honestly.",
    );
    let out = dir.join(if stereo {
        "two-stereo.mp4"
    } else {
        "two-mono.mp4"
    });
    let fmt = "aformat=sample_fmts=fltp:sample_rates=22050:channel_layouts=mono";
    let voice = |i: usize| format!("[{i}:a]{fmt},apad=whole_dur=6,atrim=0:6[v{i}]");
    let silence = |name: &str| format!("aevalsrc=0:s=22050:d=6,{fmt}[{name}]");
    let audio = if stereo {
        format!(
            "{};{};{};{};[v2][s1]concat=n=2:v=0:a=1[left];[s2][v3]concat=n=2:v=0:a=1[right];\
             [left][right]join=inputs=2:channel_layout=stereo[aout]",
            voice(2),
            voice(3),
            silence("s1"),
            silence("s2")
        )
    } else {
        format!("{};{};[v2][v3]concat=n=2:v=0:a=1[aout]", voice(2), voice(3))
    };
    // Without stereo, the talker's mouth opens and closes (a dark box over
    // it, on and off at 3.7 Hz) while both heads stay still.
    let mouth = |x: u32, talking: &str| {
        if stereo {
            String::new()
        } else {
            format!(
                ",drawbox=x={x}:y=241:w=40:h=23:color=black@0.7:t=fill:\
                 enable='{talking}*gt(sin(2*PI*3.7*t),0)'"
            )
        }
    };
    let video = format!(
        "[1:v]scale=520:520,split=2[p1][p2];\
         [0:v][p1]overlay=x=50:y=100:shortest=1[l];[l][p2]overlay=x=710:y=100{}{}[vout]",
        mouth(257, "lt(t,6)"),
        mouth(917, "gte(t,6)")
    );
    let photo = photo();
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=0x202020:s=1280x720:r=25:d=12",
            "-loop",
            "1",
            "-i",
            &photo.to_string_lossy(),
            "-i",
            &a.to_string_lossy(),
            "-i",
            &b.to_string_lossy(),
            "-filter_complex",
            &format!("{video};{audio}"),
            "-map",
            "[vout]",
            "-map",
            "[aout]",
            "-t",
            "12",
        ],
        &out,
    );
    out
}

async fn frame(input: &Path, secs: f64, out: (u32, u32), layout: Layout) -> Framing {
    frame_clip(
        input,
        0.0,
        secs,
        SRC,
        out,
        layout,
        &CancellationToken::new(),
        None,
    )
    .await
    .expect("framing")
}

/// The crop centre (source px) at `t` of a followed path (piecewise
/// linear, as the filter graph draws it).
fn centre_at(c: &Composition, t: f64) -> f64 {
    let Composition::Follow { w, path, .. } = c else {
        panic!("not a followed crop: {c:?}");
    };
    let x = match path.iter().position(|(pt, _)| *pt > t) {
        None => path.last().unwrap().1,
        Some(0) => path[0].1,
        Some(i) => {
            let ((t0, x0), (t1, x1)) = (path[i - 1], path[i]);
            x0 + (x1 - x0) * (t - t0) / (t1 - t0)
        }
    };
    x + *w as f64 / 2.0
}

fn path_of(c: &Composition) -> &[(f64, f64)] {
    match c {
        Composition::Follow { path, .. } => path,
        other => panic!("not a followed crop: {other:?}"),
    }
}

async fn speaker_follows_the_talker(stereo: bool) {
    let dir = tempfile::tempdir().unwrap();
    let input = two_people(dir.path(), stereo);
    let f = frame(&input, 12.0, VERTICAL, Layout::Auto).await;
    assert_eq!(f.layout, Layout::Speaker, "{f:?}");
    // The left face's centre is at x ≈ 310, the right one's at ≈ 970.
    for t in [1.0, 3.0, 5.0] {
        let x = centre_at(&f.composition, t);
        assert!(
            x < 640.0,
            "left talks at {t} s but the crop is at {x}: {f:?}"
        );
    }
    for t in [8.5, 10.0, 11.5] {
        let x = centre_at(&f.composition, t);
        assert!(
            x > 640.0,
            "right talks at {t} s but the crop is at {x}: {f:?}"
        );
    }
    let j = jitter(path_of(&f.composition), 12.0, 25.0, 100.0);
    eprintln!("speaker (stereo {stereo}): {j:?}, {}", f.reason);
    assert_eq!(j.cuts, 1, "one switch expected: {j:?} {f:?}");
    assert!(j.mean_px_per_frame < 0.5, "crop jitter {j:?}");

    // Forced split on the same clip: both faces, left one on top.
    let s = frame(&input, 12.0, VERTICAL, Layout::Split).await;
    let Composition::Split(boxes) = s.composition else {
        panic!("{s:?}")
    };
    assert!(
        boxes[0].x + boxes[0].w / 2 < 640 && boxes[1].x + boxes[1].w / 2 > 640,
        "{boxes:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn speaker_follows_the_talking_side_by_stereo_balance() {
    speaker_follows_the_talker(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn speaker_follows_the_moving_mouth_in_mono() {
    speaker_follows_the_talker(false).await;
}

/// The skip-cuts clip is framed during transcription on spare CPU
/// (`SCHED_IDLE`, `stages/preframe.rs`): the framing is the one found at
/// normal priority, for the layouts that need faces and talkers.
#[tokio::test(flavor = "multi_thread")]
async fn framing_on_spare_cpu_is_the_same_framing() {
    let Some(spare) = SpareCpu::new() else {
        eprintln!("skipped: this process may not put a lowered thread back");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = two_people(dir.path(), true);
    for layout in [Layout::Auto, Layout::Single] {
        let normal = frame(&input, 12.0, VERTICAL, layout).await;
        let ahead = frame_clip(
            &input,
            0.0,
            12.0,
            SRC,
            VERTICAL,
            layout,
            &CancellationToken::new(),
            Some(&spare),
        )
        .await
        .expect("framing on spare CPU");
        assert_eq!(ahead, normal, "{layout}");
    }
    // Once raised, the work runs at normal priority, with the same result.
    spare.raise();
    let raised = frame_clip(
        &input,
        0.0,
        12.0,
        SRC,
        VERTICAL,
        Layout::Speaker,
        &CancellationToken::new(),
        Some(&spare),
    )
    .await
    .unwrap();
    assert_eq!(raised, frame(&input, 12.0, VERTICAL, Layout::Speaker).await);
}

/// Between full searches (every fifth sample) the detector looks only around
/// the previous sample's faces: both people are still found in every
/// sample, where they are, with the mouth motion (5 fps) or without (1 fps).
#[tokio::test(flavor = "multi_thread")]
async fn both_faces_are_found_in_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let input = two_people(dir.path(), false);
    let cancel = CancellationToken::new();
    let moving = face::track(&input, 0.0, 12.0, SRC.0, SRC.1, &cancel)
        .await
        .unwrap();
    let still = face::track_faces(&input, 0.0, 12.0, SRC.0, SRC.1, &cancel)
        .await
        .unwrap();
    assert!(
        moving.mouth.len() >= 55,
        "{} motion frames",
        moving.mouth.len()
    );
    assert!(still.mouth.is_empty());
    for a in [&moving, &still] {
        assert!(a.faces.len() >= 11, "{} samples", a.faces.len());
        for (i, faces) in a.faces.iter().enumerate() {
            let mut xs: Vec<f64> = faces.iter().map(|f| f.cx).collect();
            xs.sort_by(f64::total_cmp);
            // The faces' centres are at x ≈ 0.22 and 0.73 of the frame.
            assert!(
                xs.len() == 2 && (xs[0] - 0.22).abs() < 0.04 && (xs[1] - 0.73).abs() < 0.04,
                "sample {i}: {faces:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_moving_face_is_followed_without_jitter() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(
        dir.path(),
        "m",
        "I am walking across the stage while I talk to you all.",
    );
    let input = dir.path().join("moving.mp4");
    let photo = photo();
    // 400 px portrait sliding from x=60 to x=820 over 10 s, with a small
    // tremble (±3 px at 7 Hz) a handheld camera would add.
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=0x202020:s=1280x720:r=25:d=10",
            "-loop",
            "1",
            "-i",
            &photo.to_string_lossy(),
            "-i",
            &wav.to_string_lossy(),
            "-filter_complex",
            "[1:v]scale=400:400[p];[0:v][p]overlay=x='60+76*t+3*sin(2*PI*7*t)':y=160:shortest=1[vout];[2:a]apad[aout]",
            "-map",
            "[vout]",
            "-map",
            "[aout]",
            "-t",
            "10",
        ],
        &input,
    );
    // The face (about 75 px wide) sits 174 px into the portrait: its centre
    // is at x = 234 + 76 t. Searched without mouth motion (1 fps, on two
    // threads), every sample has it where it was at that second, in order.
    let still = face::track_faces(&input, 0.0, 10.0, 1280, 720, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(still.faces.len(), 10, "{still:?}");
    for (t, faces) in still.faces.iter().enumerate() {
        let cx = faces.first().map(|f| f.cx * 1280.0);
        let expected = 234.0 + 76.0 * t as f64;
        assert!(
            cx.is_some_and(|x| (x - expected).abs() < 45.0),
            "sample {t}: face at {cx:?}, expected about {expected}: {still:?}"
        );
    }
    let f = frame(&input, 10.0, VERTICAL, Layout::Auto).await;
    assert_eq!(f.layout, Layout::Single, "{f:?}");
    // As above, the face's centre is at x = 234 + 76 t. It stays inside the 404-px crop all along (the
    // crop trails it by design: 5 s average, 6 % dead zone).
    let Composition::Follow { w, .. } = &f.composition else {
        panic!("{f:?}")
    };
    let room = *w as f64 / 2.0 - 40.0;
    for i in 1..=18 {
        let t = i as f64 * 0.5;
        let (face, crop) = (234.0 + 76.0 * t, centre_at(&f.composition, t));
        assert!(
            (face - crop).abs() < room,
            "at {t} s the face ({face}) left the crop (centre {crop}): {f:?}"
        );
    }
    let j = jitter(path_of(&f.composition), 10.0, 25.0, 100.0);
    eprintln!("moving face: {j:?}");
    assert_eq!(j.cuts, 0, "{j:?}");
    // The face moves 76 px/s = 3.04 px per frame (plus the tremble): a crop
    // that shakes with the tremble would move more than that on average.
    assert!(j.mean_px_per_frame < 3.04, "crop jitter {j:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slide_with_a_small_face_cam_is_a_screen_recording() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(
        dir.path(),
        "s",
        "On this slide you can see the quarterly numbers.",
    );
    let input = dir.path().join("screen.mp4");
    let photo = photo();
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=1280x720:r=25:d=4",
            "-loop",
            "1",
            "-i",
            &photo.to_string_lossy(),
            "-i",
            &wav.to_string_lossy(),
            "-filter_complex",
            "[1:v]scale=320:320[p];[0:v][p]overlay=x=940:y=380:shortest=1[vout];[2:a]apad[aout]",
            "-map",
            "[vout]",
            "-map",
            "[aout]",
            "-t",
            "4",
        ],
        &input,
    );
    let f = frame(&input, 4.0, VERTICAL, Layout::Auto).await;
    assert_eq!(f.layout, Layout::Screen, "{f:?}");
    let Composition::Fit { inset: Some(b) } = f.composition else {
        panic!("no face inset: {f:?}")
    };
    // The inset is around the face cam's face (the photo spans x 940..1260,
    // y 380..700).
    assert!((940..1260).contains(&(b.x + b.w / 2)), "{b:?}");
    assert!((380..700).contains(&(b.y + b.h / 2)), "{b:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_aspect_ratio_through_every_layout_has_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let input = two_people(dir.path(), true);
    let media = ffprobe::probe(&input, &CancellationToken::new())
        .await
        .unwrap();
    let t = Transcript {
        language: "en".into(),
        language_probability: None,
        duration: 2.0,
        sentences: Vec::new(),
        words: Vec::new(),
    };
    let plan = ClipPlan {
        start: 1.0,
        end: 3.0,
        score: 50,
        title: "t".into(),
        first_word: 0,
        end_word: 0,
        reason: String::new(),
        scores: Default::default(),
        cuts: Vec::new(),
    };
    let layouts = [
        Layout::Single,
        Layout::Split,
        Layout::Speaker,
        Layout::Screen,
        Layout::Fit,
    ];
    for (i, aspect) in [
        AspectRatio::Vertical,
        AspectRatio::Square,
        AspectRatio::Portrait,
        AspectRatio::Wide,
    ]
    .into_iter()
    .enumerate()
    {
        // Each aspect with a different layout (all five are covered over
        // the four aspects and the last one twice).
        for layout in [layouts[i], layouts[(i + 4) % 5]] {
            let out = dir.path().join(format!("out-{i}-{layout}"));
            let mut opts = CaptionOptions::new(out, CaptionStyle::default());
            (opts.width, opts.height) = aspect.size();
            opts.layout = layout;
            opts.x264_preset = "ultrafast".into();
            let ctx = StageCtx::new(CancellationToken::new(), Progress::silent());
            let clips = run_stage(
                &input,
                &media,
                &t,
                std::slice::from_ref(&plan),
                None,
                &opts,
                &ctx,
            )
            .await
            .expect("caption stage");
            assert_eq!(clips[0].layout, layout, "{aspect} {layout}");
            let probe = common::probe_json(&clips[0].video);
            let v = probe["streams"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["codec_type"] == "video")
                .unwrap();
            let (w, h) = aspect.size();
            assert_eq!(
                (v["width"].as_u64(), v["height"].as_u64()),
                (Some(w as u64), Some(h as u64)),
                "{aspect} {layout}"
            );
        }
    }
}
