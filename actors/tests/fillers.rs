//! Filler-word removal on real media: espeak-ng speech with "um", "uh" and
//! a "you know" set off by commas, the real Whisper model (with the
//! disfluency prompt), real ffmpeg cuts. The same input without removal is
//! rendered whole.

mod common;

use std::path::Path;
use std::sync::Arc;

use clipforge_actors::captions::subtitles::parse_srt;
use clipforge_actors::captions::template::CaptionStyle;
use clipforge_actors::projects::pipeline::{self, PipelineOptions, PipelineResult};
use clipforge_actors::projects::stages::caption::CaptionOptions;
use clipforge_actors::projects::stages::fillers::{
    filler_marks, is_filler_word, removed_secs, to_clip_time,
};
use tokio_util::sync::CancellationToken;

const TEXT: &str = "So, um, today we talk about the launch. Uh, the plan is simple. \
    We ship the product, um, on Monday morning. It was hard, you know, to start. \
    Uh, then we measure everything and we learn.";

fn options(out: &Path, remove_fillers: bool) -> PipelineOptions {
    let mut caption = CaptionOptions::new(out.to_path_buf(), CaptionStyle::default());
    (caption.width, caption.height) = (360, 640);
    caption.x264_preset = "ultrafast".into();
    PipelineOptions {
        out_dir: out.to_path_buf(),
        flexible_range: false,
        range: (5.0, 60.0),
        max_clips: 1,
        skip_cuts: true,
        duration: None,
        language: Some("en".into()),
        style: CaptionStyle::default(),
        caption: Some(caption),
        batch_size: 8,
        rerank: None,
        prompt: None,
        remove_fillers,
    }
}

async fn run(input: &Path, opts: &PipelineOptions) -> PipelineResult {
    pipeline::run(
        &input.to_string_lossy(),
        common::model(),
        opts,
        CancellationToken::new(),
        Arc::new(|_, _| {}),
    )
    .await
    .expect("pipeline")
}

#[tokio::test(flavor = "multi_thread")]
async fn fillers_are_transcribed_and_cut_out_of_the_clip() {
    let dir = tempfile::tempdir().unwrap();
    let wav = common::speech_wav(dir.path(), "fillers", TEXT);
    let secs = common::duration_of(&wav) + 0.5;
    let input = common::video(
        dir.path(),
        "fillers",
        "testsrc2",
        "640x360",
        Some(&wav),
        secs,
    );

    let on = run(&input, &options(&dir.path().join("on"), true)).await;
    let words = &on.transcript.words;
    let marks = filler_marks(words);
    let said: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    eprintln!("with removal: {said:?}");
    let single = words.iter().filter(|w| is_filler_word(&w.text)).count();
    assert!(
        single >= 2,
        "the disfluency prompt should bring \"um\"/\"uh\" into the transcript: {said:?}"
    );

    let clip = &on.clips[0];
    let plan = &clip.plan;
    let cut = removed_secs(&plan.cuts);
    eprintln!("cuts {:?} ({cut:.3} s)", plan.cuts);
    assert!(cut >= 0.3, "fillers cut: {:?}", plan.cuts);
    // Every cut covers fillers only: a transcript word whose middle lies in
    // a cut is a filler, and every filler of the range is cut.
    for (w, &m) in words.iter().zip(&marks) {
        let mid = (w.start + w.end) / 2.0;
        if mid < plan.start || mid >= plan.end {
            continue;
        }
        let inside = plan.cuts.iter().any(|&(a, b)| a <= mid && mid < b);
        assert!(!inside || m, "{w:?} is not a filler but was cut");
    }
    // The clip's words: the kept transcript words, shifted by the time cut
    // before them; none is a filler.
    let kept: Vec<_> = words
        .iter()
        .zip(&marks)
        .filter(|(w, _)| {
            let mid = (w.start + w.end) / 2.0;
            mid >= plan.start
                && mid < plan.end
                && !plan.cuts.iter().any(|&(a, b)| a <= mid && mid < b)
        })
        .map(|(w, _)| w)
        .collect();
    assert_eq!(clip.words.len(), kept.len(), "{:?}", clip.words);
    for (cw, w) in clip.words.iter().zip(&kept) {
        assert!(!is_filler_word(&cw.text), "{cw:?} left in the captions");
        assert_eq!(
            cw.text.to_lowercase().trim_end_matches(['.', ',']),
            w.text.to_lowercase().trim_end_matches(['.', ',']),
        );
        let expected = to_clip_time(&plan.cuts, plan.start, w.start.max(plan.start));
        assert!((cw.start - expected).abs() < 1e-6, "{cw:?} vs {w:?}");
        assert!(cw.end <= plan.kept_duration() + 1e-6, "{cw:?}");
    }
    // The MP4 is shorter by the cuts, and the subtitles fit it.
    let on_secs = common::duration_of(&clip.video);
    assert!(
        (on_secs - plan.kept_duration()).abs() <= 0.25,
        "clip lasts {on_secs:.3} s, planned {:.3} s",
        plan.kept_duration()
    );
    let srt = parse_srt(&std::fs::read_to_string(&clip.srt).unwrap()).expect("SRT");
    for cue in &srt {
        assert!(cue.end <= on_secs + 0.05, "{cue:?} past the clip");
        for w in cue.text.split_whitespace() {
            assert!(!is_filler_word(w), "{cue:?} says a filler");
        }
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("on").join("clips.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["clips"][0]["cuts"].as_array().map(Vec::len),
        Some(plan.cuts.len())
    );

    // Without removal: no cuts, the whole range, captions the plain shift.
    let off = run(&input, &options(&dir.path().join("off"), false)).await;
    let clip_off = &off.clips[0];
    assert!(clip_off.plan.cuts.is_empty());
    let off_secs = common::duration_of(&clip_off.video);
    assert!(
        (off_secs - clip_off.plan.duration()).abs() <= 0.25,
        "{off_secs} vs {}",
        clip_off.plan.duration()
    );
    let p = &clip_off.plan;
    let plain: Vec<_> = off
        .transcript
        .words
        .iter()
        .filter(|w| w.end > p.start && w.start < p.end)
        .map(|w| (w.text.clone(), (w.start - p.start).max(0.0)))
        .collect();
    let got: Vec<_> = clip_off
        .words
        .iter()
        .map(|w| (w.text.clone(), w.start))
        .collect();
    assert_eq!(got, plain);
    eprintln!(
        "without removal {off_secs:.3} s, with removal {on_secs:.3} s, cut {cut:.3} s \
         ({} words vs {})",
        off.transcript.words.len(),
        on.transcript.words.len()
    );
    assert!(
        ((off_secs - on_secs) - cut).abs() <= 0.3,
        "the clip is shorter by {:.3} s, the cuts are {cut:.3} s",
        off_secs - on_secs
    );
}
