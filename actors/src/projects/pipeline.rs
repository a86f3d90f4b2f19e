//! The stages run one after the other on a local file or URL, writing
//! the clips and `clips.json` / `transcript.json` into an output folder.
//! The `clipforge clip` command is this; the project actor
//! (`projects/actor.rs`) runs the same per-stage code
//! (`stages::run::run_in`) one stage at a time under supervision.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::stages::caption::{CaptionOptions, RenderedClip, Segment};
use super::stages::reasons::ClipScores;
use super::stages::rerank::RerankConfig;
use super::stages::run::{run_in, Captioned, Outcome, SourceRef, StageEnv, StageParams};
use super::stages::table::TABLE;
use super::stages::{Progress, Stage, StageCtx, StageError};
use crate::captions::template::CaptionStyle;
use crate::media::ffprobe::MediaInfo;
use crate::media::whisper::WhisperModel;
use crate::storage::objects::ObjectStore;
use crate::transcript::{display_duration, Transcript, Word};

#[derive(Clone, Debug)]
pub struct PipelineOptions {
    pub out_dir: PathBuf,
    /// (min, max) clip length.
    pub range: (f64, f64),
    /// The `auto` preset: shorter clips, or one clip of all the speech,
    /// when none of `range` fits.
    pub flexible_range: bool,
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
    /// Skip cuts: the wall time of the clip's framing found beside the
    /// model in `transcribe` (`stages/ahead.rs`); the clip's
    /// `caption_faces` is then 0.
    pub transcribe_framing: f64,
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

/// The CLI's stage environment: the model (loading on its own task from
/// the start), no object storage.
struct CliEnv {
    model: tokio::sync::OnceCell<Arc<WhisperModel>>,
    /// The load, until it has ended.
    loading: tokio::sync::Mutex<Option<Loading>>,
}

type Loading = tokio::task::JoinHandle<Result<Arc<WhisperModel>, StageError>>;

impl CliEnv {
    fn new(loading: Loading) -> Self {
        Self {
            model: tokio::sync::OnceCell::new(),
            loading: tokio::sync::Mutex::new(Some(loading)),
        }
    }

    /// The load's error, once it has failed; pending while it loads or
    /// after it has loaded.
    async fn failed(&self) -> StageError {
        match self.model().await {
            Err(e) => e,
            Ok(_) => std::future::pending().await,
        }
    }
}

impl Drop for CliEnv {
    fn drop(&mut self) {
        if let Some(h) = self.loading.get_mut().take() {
            h.abort();
        }
    }
}

impl StageEnv for CliEnv {
    fn objects(&self) -> Option<&dyn ObjectStore> {
        None
    }

    /// Waits for the load (a wait given up leaves the load running).
    async fn model(&self) -> Result<Arc<WhisperModel>, StageError> {
        self.model
            .get_or_try_init(|| async {
                let mut loading = self.loading.lock().await;
                let Some(handle) = loading.as_mut() else {
                    return Err(StageError::Model("the model failed to load".into()));
                };
                let loaded = handle.await;
                *loading = None;
                loaded.map_err(|e| StageError::Model(format!("loading the model stopped: {e}")))?
            })
            .await
            .cloned()
    }
}

/// Runs every stage, in the order of the stage table, in a scratch work
/// folder (the same per-stage code as the service: `stages::run`); the
/// clips go to `opts.out_dir`. `on_progress(stage, percent)` sees each
/// stage's progress.
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

/// [`run`] with the model still loading: `model` runs on its own task while
/// the input is fetched and probed and transcription starts its audio; a
/// model that fails to load ends the run at once.
pub async fn run_loading(
    input: &str,
    model: impl std::future::Future<Output = Result<Arc<WhisperModel>, StageError>> + Send + 'static,
    opts: &PipelineOptions,
    cancel: CancellationToken,
    on_progress: Arc<dyn Fn(Stage, u8) + Send + Sync>,
) -> Result<PipelineResult, StageError> {
    let scratch = tempfile::Builder::new()
        .prefix("clipforge-work-")
        .tempdir()
        .map_err(|e| StageError::io("creating a temp folder", e))?;
    let is_url = input.starts_with("http://") || input.starts_with("https://");
    let params = StageParams {
        source: if is_url {
            SourceRef::Url(input.to_string())
        } else {
            SourceRef::Local(PathBuf::from(input))
        },
        duration: opts.duration,
        language: opts.language.clone(),
        language_hint: None,
        batch_size: opts.batch_size,
        range: opts.range,
        flexible_range: opts.flexible_range,
        max_clips: opts.max_clips,
        skip_cuts: opts.skip_cuts,
        rerank: opts.rerank.clone(),
        prompt: opts.prompt.clone(),
        remove_fillers: opts.remove_fillers,
        caption: opts
            .caption
            .clone()
            .unwrap_or_else(|| CaptionOptions::new(opts.out_dir.clone(), opts.style.clone())),
    };
    let env = CliEnv::new(tokio::spawn(model));
    let mut times = StageTimes::default();
    let mut captioned = None;
    for spec in &TABLE {
        let stage = spec.stage;
        let ctx = {
            let f = on_progress.clone();
            StageCtx::new(cancel.clone(), Progress::new(move |p| f(stage, p)))
        };
        let t = std::time::Instant::now();
        // A model that fails to load ends the run without waiting for the
        // stage (the download of a long video, say).
        let outcome = tokio::select! {
            out = run_in(stage, scratch.path(), &params, &env, &ctx) => out?,
            e = env.failed() => return Err(e),
        };
        let took = t.elapsed().as_secs_f64();
        match stage {
            Stage::Download => times.download = took,
            Stage::Transcribe => times.transcribe = took,
            Stage::Cut => times.cut = took,
            Stage::Caption => times.caption = took,
        }
        match outcome {
            Outcome::Transcribed {
                model_secs,
                framing_secs,
            } => {
                times.transcribe_model = model_secs;
                times.transcribe_framing = framing_secs.unwrap_or(0.0);
            }
            Outcome::Captioned(c) => captioned = Some(c),
            Outcome::Downloaded | Outcome::Cut => {}
        }
    }
    let Captioned {
        clips,
        media,
        transcript,
    } = captioned.ok_or_else(|| StageError::Io("the caption stage did not run".into()))?;
    for c in &clips {
        times.caption_faces += c.seconds.faces;
        times.caption_loudness += c.seconds.loudness;
        times.caption_prepare += c.seconds.prepare;
        times.caption_encode += c.seconds.encode;
    }
    write_json(&opts.out_dir, &transcript, &clips)?;
    Ok(PipelineResult {
        media,
        transcript,
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
