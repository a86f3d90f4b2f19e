//! The four stages run one after the other on a local file or URL, writing
//! the clips and `clips.json` / `transcript.json` into an output folder. The
//! `clipforge clip` command is this; the service's project actor runs the same
//! stage functions one by one under supervision.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::stages::caption::{self, CaptionOptions, RenderedClip, Segment};
use super::stages::cut::{self, CutOptions};
use super::stages::reasons::ClipScores;
use super::stages::rerank::RerankConfig;
use super::stages::transcribe::{self, TranscribeOptions};
use super::stages::{download, Progress, Stage, StageCtx, StageError};
use crate::captions::template::CaptionStyle;
use crate::media::ffprobe::MediaInfo;
use crate::media::whisper::WhisperModel;
use crate::transcript::{display_duration, Transcript, Word};

#[derive(Clone, Debug)]
pub struct PipelineOptions {
    pub out_dir: PathBuf,
    /// (min, max) clip length.
    pub range: (f64, f64),
    pub max_clips: usize,
    pub skip_cuts: bool,
    /// Process only the first `duration` seconds.
    pub duration: Option<f64>,
    pub language: Option<String>,
    pub style: CaptionStyle,
    pub caption: Option<CaptionOptions>,
    pub batch_size: usize,
    pub rerank: Option<RerankConfig>,
    /// What the clips should be about (`stages::steer`).
    pub prompt: Option<String>,
    /// Cut filler words out of the clips (`stages::fillers`).
    pub remove_fillers: bool,
}

/// Per-stage wall times, for progress displays and benchmarks.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageTimes {
    pub download: f64,
    pub transcribe: f64,
    pub cut: f64,
    pub caption: f64,
    /// Of `transcribe`, the time spent inside the Whisper model.
    pub transcribe_model: f64,
    /// Of `caption`, summed over the clips (see `caption::ClipSeconds`):
    /// face analysis, loudness normalization (both at once, while the
    /// previous clip encodes), and the encodes.
    pub caption_faces: f64,
    pub caption_loudness: f64,
    pub caption_prepare: f64,
    pub caption_encode: f64,
}

pub struct PipelineResult {
    pub media: MediaInfo,
    pub transcript: Transcript,
    pub clips: Vec<RenderedClip>,
    pub times: StageTimes,
}

/// One clip in `clips.json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ClipJson<'a> {
    index: usize,
    title: &'a str,
    score: u8,
    /// Why the clip was picked, from its sub-scores and prompt matches.
    reason: &'a str,
    /// Sub-scores 0–100: hook, completeness, emotion, pace, promptMatch.
    scores: &'a ClipScores,
    start_sec: f64,
    end_sec: f64,
    duration: String,
    /// Spans of the input (seconds) cut out of the clip (filler words).
    cuts: &'a [(f64, f64)],
    quality: &'a str,
    layout: &'a str,
    layout_reason: &'a str,
    video: String,
    subtitle_srt: String,
    subtitle_vtt: String,
    thumbnail: String,
    transcripts: &'a [Segment],
    words: &'a [Word],
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Runs every stage. `on_progress(stage, percent)` sees each stage's progress.
pub async fn run(
    input: &str,
    model: Arc<WhisperModel>,
    opts: &PipelineOptions,
    cancel: CancellationToken,
    on_progress: Arc<dyn Fn(Stage, u8) + Send + Sync>,
) -> Result<PipelineResult, StageError> {
    run_loading(
        input,
        async { Ok::<_, StageError>(model) },
        opts,
        cancel,
        on_progress,
    )
    .await
}

/// [`run`] with the model still loading: the download stage (fetch and
/// probe) runs while `model` resolves, and transcription waits for it.
pub async fn run_loading(
    input: &str,
    model: impl std::future::Future<Output = Result<Arc<WhisperModel>, StageError>>,
    opts: &PipelineOptions,
    cancel: CancellationToken,
    on_progress: Arc<dyn Fn(Stage, u8) + Send + Sync>,
) -> Result<PipelineResult, StageError> {
    let ctx_for = |stage: Stage| {
        let f = on_progress.clone();
        StageCtx::new(cancel.clone(), Progress::new(move |p| f(stage, p)))
    };
    let mut times = StageTimes::default();

    // download: fetch a URL, or take the local file; then probe it.
    let t = std::time::Instant::now();
    let ctx = ctx_for(Stage::Download);
    let scratch = tempfile::Builder::new()
        .prefix("clipforge-src-")
        .tempdir()
        .map_err(|e| StageError::io("creating a temp folder", e))?;
    let is_url = input.starts_with("http://") || input.starts_with("https://");
    let local = PathBuf::from(input);
    let source = if is_url {
        download::Input::Url(input)
    } else {
        download::Input::Local(&local)
    };
    let (got, model) = tokio::try_join!(download::run(source, scratch.path(), &ctx), model)?;
    let (path, media) = (got.path, got.media);
    times.download = t.elapsed().as_secs_f64();

    let available = media.duration;
    let span = opts
        .duration
        .map(|d| d.min(available))
        .unwrap_or(available)
        .max(0.0);

    let t = std::time::Instant::now();
    let ctx = ctx_for(Stage::Transcribe);
    let tr = transcribe::run(
        &path,
        model,
        TranscribeOptions {
            language: opts.language.clone(),
            start: 0.0,
            duration: opts.duration,
            expected_secs: span,
            batch_size: opts.batch_size,
            keep_fillers: opts.remove_fillers,
        },
        &ctx,
    )
    .await?;
    times.transcribe = t.elapsed().as_secs_f64();
    times.transcribe_model = tr.model_secs;

    let t = std::time::Instant::now();
    let ctx = ctx_for(Stage::Cut);
    let plans = cut::run(
        &path,
        &tr.transcript,
        &tr.loudness_db,
        &CutOptions {
            range: opts.range,
            max_clips: opts.max_clips,
            skip_cuts: opts.skip_cuts,
            start: 0.0,
            duration: span,
            rerank: opts.rerank.clone(),
            prompt: opts.prompt.clone(),
            remove_fillers: opts.remove_fillers,
        },
        &ctx,
    )
    .await?;
    times.cut = t.elapsed().as_secs_f64();

    let t = std::time::Instant::now();
    let ctx = ctx_for(Stage::Caption);
    let copts = opts
        .caption
        .clone()
        .unwrap_or_else(|| CaptionOptions::new(opts.out_dir.clone(), opts.style.clone()));
    let clips = caption::run_stage(&path, &media, &tr.transcript, &plans, &copts, &ctx).await?;
    times.caption = t.elapsed().as_secs_f64();
    for c in &clips {
        times.caption_faces += c.seconds.faces;
        times.caption_loudness += c.seconds.loudness;
        times.caption_prepare += c.seconds.prepare;
        times.caption_encode += c.seconds.encode;
    }

    write_json(&opts.out_dir, &tr.transcript, &clips)?;
    Ok(PipelineResult {
        media,
        transcript: tr.transcript,
        clips,
        times,
    })
}

fn write_json(
    dir: &Path,
    transcript: &Transcript,
    clips: &[RenderedClip],
) -> Result<(), StageError> {
    let list: Vec<ClipJson> = clips
        .iter()
        .map(|c| ClipJson {
            index: c.index,
            title: &c.plan.title,
            score: c.plan.score,
            reason: &c.plan.reason,
            scores: &c.plan.scores,
            start_sec: round3(c.plan.start),
            end_sec: round3(c.plan.end),
            duration: display_duration(c.plan.kept_duration()),
            cuts: &c.plan.cuts,
            quality: &c.quality,
            layout: c.layout.as_str(),
            layout_reason: &c.layout_reason,
            video: file_name(&c.video),
            subtitle_srt: file_name(&c.srt),
            subtitle_vtt: file_name(&c.vtt),
            thumbnail: file_name(&c.thumbnail),
            transcripts: &c.segments,
            words: &c.words,
        })
        .collect();
    let write = |name: &str, body: Vec<u8>| {
        let tmp = dir.join(format!(".{name}.part"));
        std::fs::write(&tmp, body)
            .and_then(|_| std::fs::rename(&tmp, dir.join(name)))
            .map_err(|e| StageError::io(&format!("writing {name}"), e))
    };
    let clips_json = serde_json::to_vec_pretty(&serde_json::json!({ "clips": list }))
        .map_err(|e| StageError::io("encoding clips.json", e))?;
    write("clips.json", clips_json)?;
    let transcript_json = serde_json::to_vec_pretty(transcript)
        .map_err(|e| StageError::io("encoding transcript.json", e))?;
    write("transcript.json", transcript_json)?;
    Ok(())
}
