//! The pipeline on real media: espeak-ng speech over ffmpeg test pictures,
//! the real Whisper model, real ffmpeg encodes.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use clipforge_actors::captions::subtitles::{parse_srt, parse_vtt};
use clipforge_actors::captions::template::CaptionStyle;
use clipforge_actors::projects::pipeline::{self, PipelineOptions, PipelineResult};
use clipforge_actors::projects::stages::transcribe::{self, TranscribeOptions};
use clipforge_actors::projects::stages::{probe, Progress, Stage, StageCtx, StageError};
use clipforge_actors::transcript::join_words;
use tokio_util::sync::CancellationToken;

fn ctx() -> StageCtx {
    StageCtx::new(CancellationToken::new(), Progress::silent())
}

fn options(out: &Path, range: (f64, f64)) -> PipelineOptions {
    PipelineOptions {
        out_dir: out.to_path_buf(),
        flexible_range: false,
        range,
        max_clips: 2,
        skip_cuts: false,
        duration: None,
        language: None,
        style: CaptionStyle::default(),
        caption: None,
        batch_size: 8,
        rerank: None,
        prompt: None,
        remove_fillers: false,
    }
}

async fn run_pipeline(
    input: &Path,
    opts: &PipelineOptions,
) -> (Result<PipelineResult, StageError>, Vec<(Stage, u8)>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let r = pipeline::run(
        &input.to_string_lossy(),
        common::model(),
        opts,
        CancellationToken::new(),
        Arc::new(move |s, p| s2.lock().unwrap().push((s, p))),
    )
    .await;
    let seen = seen.lock().unwrap().clone();
    (r, seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn transcript_matches_the_spoken_text() {
    let dir = tempfile::tempdir().unwrap();
    let text = common::TALK[..6].join(" ");
    let wav = common::speech_wav(dir.path(), "speech", &text);
    let secs = common::duration_of(&wav);
    let input = common::video(
        dir.path(),
        "speech",
        "testsrc2",
        "640x360",
        Some(&wav),
        secs + 0.5,
    );

    let info = probe::run(&input, "speech.mp4", &ctx())
        .await
        .expect("probe");
    let out = transcribe::run(
        &input,
        common::model(),
        TranscribeOptions {
            expected_secs: info.duration,
            ..TranscribeOptions::default()
        },
        &ctx(),
    )
    .await
    .expect("transcribe");
    let t = out.transcript;
    assert_eq!(t.language, "en", "language detection");
    let hyp = join_words(&t.words);
    let wer = common::wer(&text, &hyp);
    assert!(
        wer <= 0.15,
        "word error rate {wer:.3}\nref: {text}\nhyp: {hyp}"
    );
    let mut last = 0.0;
    for w in &t.words {
        assert!(w.start >= last - 1e-9, "word times go backwards at {w:?}");
        assert!(w.end >= w.start, "{w:?}");
        assert!(
            w.end <= info.duration + 0.05,
            "{w:?} is past the audio ({})",
            info.duration
        );
        last = w.start;
    }
    assert!(
        t.sentences.len() >= 5,
        "sentences rebuilt from punctuation: {:?}",
        t.sentences
    );
    assert!(!out.loudness_db.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn clips_are_cut_on_words_inside_the_preset_and_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let input = common::talk_video(dir.path());
    let out = dir.path().join("out");
    let opts = options(&out, (15.0, 30.0));
    let (result, progress) = run_pipeline(&input, &opts).await;
    let r = result.expect("pipeline");
    assert!(!r.clips.is_empty(), "no clips");
    for stage in Stage::ALL {
        assert!(
            progress.contains(&(stage, 100)),
            "{stage} never reported 100%: {progress:?}"
        );
    }
    let words = &r.transcript.words;
    let mut spans: Vec<(f64, f64)> = Vec::new();
    let mut last_score = u8::MAX;
    for c in &r.clips {
        let p = &c.plan;
        let len = p.end - p.start;
        assert!(
            (15.0..=30.0).contains(&len),
            "clip {} is {len:.2} s",
            c.index
        );
        assert!(
            p.score <= 100 && p.score <= last_score,
            "scores must be best first"
        );
        last_score = p.score;
        // Word boundaries: no word straddles the clip's start or end.
        for w in words {
            let straddles = |t: f64| w.start + 0.02 < t && t < w.end - 0.02;
            assert!(
                !straddles(p.start) && !straddles(p.end),
                "clip {} cuts through {w:?}",
                c.index
            );
        }
        assert!(p.end_word > p.first_word);
        assert!(
            words[p.first_word].start >= p.start - 1e-6
                && words[p.end_word - 1].end <= p.end + 1e-6
        );
        for (s, e) in &spans {
            assert!(p.end <= *s || p.start >= *e, "clips overlap");
        }
        spans.push((p.start, p.end));

        let info = common::probe_json(&c.video);
        let streams = info["streams"].as_array().unwrap();
        let v = streams
            .iter()
            .find(|s| s["codec_type"] == "video")
            .expect("video stream");
        let a = streams
            .iter()
            .find(|s| s["codec_type"] == "audio")
            .expect("audio stream");
        assert_eq!(
            (v["width"].as_u64(), v["height"].as_u64()),
            (Some(1080), Some(1920))
        );
        assert_eq!(v["codec_name"], "h264");
        assert_eq!(a["codec_name"], "aac");
        let dur: f64 = info["format"]["duration"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (dur - len).abs() <= 0.2,
            "clip {} lasts {dur:.3} s, plan {len:.3} s",
            c.index
        );
        assert_eq!(c.quality, "1080p");

        let srt = parse_srt(&std::fs::read_to_string(&c.srt).unwrap()).expect("valid SRT");
        let vtt = parse_vtt(&std::fs::read_to_string(&c.vtt).unwrap()).expect("valid VTT");
        assert_eq!(srt.len(), vtt.len());
        assert!(!srt.is_empty());
        for (s, v) in srt.iter().zip(&vtt) {
            assert!((s.start - v.start).abs() < 0.002 && (s.end - v.end).abs() < 0.002);
            assert!(
                s.start >= 0.0 && s.end <= len + 0.01,
                "cue {s:?} outside the clip"
            );
        }
        let first_word = &c.words[0];
        assert!(
            (srt[0].start - first_word.start).abs() < 0.01,
            "subtitles on the clip's timeline"
        );
        let jpg = std::fs::read(&c.thumbnail).unwrap();
        assert_eq!(&jpg[..2], &[0xFF, 0xD8], "thumbnail is a JPEG");
    }
    let clips_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clips.json")).unwrap()).unwrap();
    let first = &clips_json["clips"][0];
    for key in [
        "title",
        "score",
        "reason",
        "scores",
        "startSec",
        "endSec",
        "duration",
        "quality",
        "transcripts",
        "words",
    ] {
        assert!(!first[key].is_null(), "clips.json lacks {key}");
    }
    assert!(first["duration"].as_str().unwrap().contains(':'));
    let transcript_json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("transcript.json")).unwrap()).unwrap();
    assert_eq!(transcript_json["language"], "en");
    assert!(transcript_json["words"].as_array().unwrap().len() > 100);
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // Deterministic: the same input gives the same cuts.
    let cut_only = clipforge_actors::projects::stages::score::select_clips(
        &r.transcript,
        &Default::default(),
        (15.0, 30.0),
        2,
    );
    let again = clipforge_actors::projects::stages::score::select_clips(
        &r.transcript,
        &Default::default(),
        (15.0, 30.0),
        2,
    );
    assert_eq!(cut_only, again);
}

#[tokio::test(flavor = "multi_thread")]
async fn skip_cuts_captions_the_selected_range_as_one_clip() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(dir.path(), "s", &common::TALK[..4].join(" "));
    let input = common::video(
        dir.path(),
        "s",
        "testsrc2",
        "1280x720",
        Some(&wav),
        common::duration_of(&wav) + 0.5,
    );
    let out = dir.path().join("out");
    let mut opts = options(&out, (20.0, 60.0));
    opts.skip_cuts = true;
    opts.duration = Some(8.0);
    let (result, _) = run_pipeline(&input, &opts).await;
    let r = result.expect("pipeline");
    assert_eq!(r.clips.len(), 1);
    let c = &r.clips[0];
    assert_eq!((c.plan.start, c.plan.end), (0.0, 8.0));
    let dur = common::duration_of(&c.video);
    assert!((dur - 8.0).abs() <= 0.2, "{dur}");
    assert!(
        r.transcript.words.iter().all(|w| w.end <= 8.05),
        "only the first 8 s are transcribed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_inputs_are_refused_with_clear_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = common::video(
        d,
        "good",
        "testsrc2",
        "320x240",
        Some(&common::speech_wav(d, "g", "hello there")),
        3.0,
    );

    let text = d.join("notes.mp4");
    std::fs::write(&text, "these are my notes, not a video\n".repeat(50)).unwrap();
    let empty = d.join("empty.mp4");
    std::fs::write(&empty, b"").unwrap();
    let corrupt = d.join("corrupt.mp4");
    std::fs::write(
        &corrupt,
        (0..200_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let truncated = d.join("truncated.mp4");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let silent = common::video(d, "silent", "testsrc2", "320x240", None, 2.0);

    let cases = [
        (text, "not a video"),
        (empty, "empty"),
        (corrupt, "not a video file"),
        (truncated, "truncated"),
        (silent, "no audio track"),
    ];
    for (path, expected) in cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let err = probe::run(&path, &name, &ctx()).await.expect_err(&name);
        assert!(
            matches!(err, StageError::InvalidInput(_)),
            "{name}: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(expected) && msg.contains(&name),
            "{name}: {msg}"
        );
    }
    probe::run(&good, "good.mp4", &ctx())
        .await
        .expect("a good video passes");
}

/// A batch larger than the encoder's sub-batch (its outputs are joined into
/// one decoder batch, and the language is detected from the first
/// sub-batch) gives each window the words it gives when decoded alone.
#[test]
fn a_batch_decodes_each_window_as_alone() {
    let dir = tempfile::tempdir().unwrap();
    let windows: Vec<Vec<f32>> = (0..3)
        .map(|i| {
            let text = common::TALK[i * 2..i * 2 + 2].join(" ");
            common::pcm(&common::speech_wav(dir.path(), &format!("w{i}"), &text))
        })
        .collect();
    let model = common::model();
    let slices: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
    let (language, batched) = model.transcribe_batch(&slices, None).expect("batch");
    assert_eq!(language, "en");
    assert_eq!(batched.len(), 3);
    let norm = |w: &clipforge_actors::transcript::Word| {
        w.text
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
    };
    for (i, window) in slices.iter().enumerate() {
        let (_, alone) = model
            .transcribe_batch(&[window], Some("en"))
            .expect("alone");
        let a: Vec<String> = alone[0].words.iter().map(norm).collect();
        let b: Vec<String> = batched[i].words.iter().map(norm).collect();
        assert!(a.len() >= 10, "window {i} alone: {a:?}");
        assert_eq!(a, b, "window {i}: alone vs in the batch");
        for (x, y) in alone[0].words.iter().zip(&batched[i].words) {
            assert!(
                (x.start - y.start).abs() < 0.2 && (x.end - y.end).abs() < 0.2,
                "window {i}: {x:?} alone vs {y:?} in the batch"
            );
        }
    }
}

/// Cancelling transcription mid-way (audio decoding runs ahead on its own
/// thread) ends the stage promptly with `Cancelled` and leaves no ffmpeg.
#[tokio::test(flavor = "multi_thread")]
async fn cancelled_transcription_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(dir.path(), "talk", &common::TALK.join(" "));
    // ~25 minutes: far more than the reader may run ahead of the model.
    let long = dir.path().join("long.m4a");
    common::run(
        std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-stream_loop", "30", "-i"])
            .arg(&wav)
            .args(["-ac", "1", "-ar", "16000", "-c:a", "aac", "-b:a", "32k"])
            .arg(&long),
    );

    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = StageCtx::new(
        cancel.clone(),
        Progress::new(move |p| {
            let _ = tx.send(p);
        }),
    );
    let input = long.clone();
    let task = tokio::spawn(async move {
        transcribe::run(
            &input,
            common::model(),
            TranscribeOptions {
                expected_secs: 1500.0,
                ..TranscribeOptions::default()
            },
            &ctx,
        )
        .await
    });
    // The first batch is recognised: decoding is well under way.
    while let Some(p) = rx.recv().await {
        if p >= 1 {
            break;
        }
    }
    let marker = long.to_string_lossy().into_owned();
    assert!(
        !common::processes_matching(&marker).is_empty(),
        "ffmpeg should still be decoding before the cancel"
    );
    cancel.cancel();
    // A hang guard, not a timing assertion: the token is checked between
    // batches, and a batch can take tens of seconds on a loaded machine. A
    // cancel that is not honoured still fails below (the result is Ok).
    let result = tokio::time::timeout(std::time::Duration::from_secs(300), task)
        .await
        .expect("cancel is prompt")
        .unwrap();
    assert!(matches!(result, Err(StageError::Cancelled)), "{result:?}");
    let left = common::processes_matching(&marker);
    assert!(left.is_empty(), "processes left: {left}");
}
