//! One stage in a work folder: read the inputs the stage table lists, run
//! the stage, write its outputs there. The service (a project's work folder,
//! or a worker's scratch folder filled from object storage) and
//! `clipforge clip` (a scratch folder) run the stages through [`run_in`];
//! what happens to the rendered clips afterwards is theirs (the service
//! stores them as records and objects, the CLI writes `clips.json`).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ahead::{self, Ahead, FrameInto};
use super::caption::{self, CaptionOptions, RenderedClip};
use super::cut::{self, ClipPlan, CutOptions};
use super::rerank::RerankConfig;
use super::table::WorkFile;
use super::transcribe::{self, TranscribeOptions};
use super::{download, Stage, StageCtx, StageError};
use crate::media::ffprobe::MediaInfo;
use crate::media::spare_cpu::SpareCpu;
use crate::media::whisper::WhisperModel;
use crate::storage::objects::ObjectStore;
use crate::transcript::Transcript;

/// Where the video comes from (owned form of [`download::Input`]).
#[derive(Clone, Debug)]
pub enum SourceRef {
    Url(String),
    /// An upload's key in object storage.
    Object(String),
    /// A file on this machine (the CLI); linked into the work folder.
    Local(PathBuf),
}

/// What the stages need to know besides the work folder.
#[derive(Clone, Debug)]
pub struct StageParams {
    pub source: SourceRef,
    /// Process only the first `duration` seconds (all of it when `None`).
    pub duration: Option<f64>,
    /// The spoken language the user chose (used only if the model knows
    /// it; otherwise detected).
    pub language: Option<String>,
    /// The source's declared language: a prior for detection.
    pub language_hint: Option<String>,
    pub batch_size: usize,
    /// (min, max) clip length.
    pub range: (f64, f64),
    /// The length is the service's choice (`auto`): see
    /// `cut::CutOptions::flexible_range`.
    pub flexible_range: bool,
    pub max_clips: usize,
    pub skip_cuts: bool,
    pub rerank: Option<RerankConfig>,
    pub prompt: Option<String>,
    pub remove_fillers: bool,
    /// Where and how the caption stage renders the clips.
    pub caption: CaptionOptions,
}

/// What a stage needs from the program around it.
pub trait StageEnv: Sync {
    /// Object storage, for uploaded sources.
    fn objects(&self) -> Option<&dyn ObjectStore>;
    /// The Whisper model (loaded on first use).
    fn model(&self) -> impl Future<Output = Result<Arc<WhisperModel>, StageError>> + Send;
}

/// What a stage hands back besides its work files.
#[expect(clippy::large_enum_variant, reason = "one value per stage run")]
pub enum Outcome {
    Downloaded,
    Transcribed {
        /// Of the stage's time, the time spent inside the Whisper model.
        model_secs: f64,
        /// Wall time of the framing found beside it (skip cuts), if any.
        framing_secs: Option<f64>,
    },
    Cut,
    Captioned(Captioned),
}

/// The caption stage's clips, with the inputs they were made from.
pub struct Captioned {
    pub clips: Vec<RenderedClip>,
    pub media: MediaInfo,
    pub transcript: Transcript,
}

/// The stage's view of the work folder: only the files the table lists.
struct Folder<'a> {
    stage: Stage,
    dir: &'a Path,
}

impl Folder<'_> {
    fn input(&self, f: WorkFile) -> Result<PathBuf, StageError> {
        if !self.stage.spec().reads.contains(&f) {
            return Err(StageError::Io(format!(
                "the {} stage does not list {} among its inputs",
                self.stage,
                f.name()
            )));
        }
        f.locate(self.dir).ok_or_else(|| {
            StageError::Io(format!(
                "the {} stage's input {} is missing",
                self.stage,
                f.name()
            ))
        })
    }

    /// `None` when `f` is an optional input the folder does not have.
    fn read_optional<T: serde::de::DeserializeOwned>(
        &self,
        f: WorkFile,
    ) -> Result<Option<T>, StageError> {
        if self.stage.spec().optional.contains(&f) && f.locate(self.dir).is_none() {
            return Ok(None);
        }
        self.read(f).map(Some)
    }

    fn read<T: serde::de::DeserializeOwned>(&self, f: WorkFile) -> Result<T, StageError> {
        let path = self.input(f)?;
        let bytes = std::fs::read(&path)
            .map_err(|e| StageError::io(&format!("reading {}", path.display()), e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| StageError::io(&format!("parsing {}", path.display()), e))
    }

    fn check_output(&self, f: WorkFile) -> Result<(), StageError> {
        if self.stage.spec().writes.contains(&f) {
            return Ok(());
        }
        Err(StageError::Io(format!(
            "the {} stage does not list {} among its outputs",
            self.stage,
            f.name()
        )))
    }

    fn write<T: serde::Serialize>(&self, f: WorkFile, value: &T) -> Result<(), StageError> {
        self.check_output(f)?;
        let path = f.path(self.dir);
        let tmp = path.with_extension("part");
        let bytes = serde_json::to_vec(value).map_err(|e| StageError::io("encoding", e))?;
        std::fs::write(&tmp, bytes)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| StageError::io(&format!("writing {}", path.display()), e))
    }
}

/// Runs `stage` in `dir`, which holds what the earlier stages left.
pub async fn run_in<E: StageEnv>(
    stage: Stage,
    dir: &Path,
    params: &StageParams,
    env: &E,
    ctx: &StageCtx,
) -> Result<Outcome, StageError> {
    std::fs::create_dir_all(dir).map_err(|e| StageError::io("creating the work folder", e))?;
    let folder = Folder { stage, dir };
    match stage {
        Stage::Download => {
            download_in(&folder, params, env, ctx).await?;
            Ok(Outcome::Downloaded)
        }
        Stage::Transcribe => transcribe_in(&folder, params, env, ctx).await,
        Stage::Cut => {
            let src = folder.input(WorkFile::Source)?;
            let media: MediaInfo = folder.read(WorkFile::Media)?;
            let transcript: Transcript = folder.read(WorkFile::Transcript)?;
            let loudness: Vec<f32> = folder.read(WorkFile::Loudness)?;
            let span = span(params, &media);
            let scenes: Option<ahead::Scenes> = folder.read_optional(WorkFile::Scenes)?.flatten();
            let plans = cut::run(
                &src,
                &transcript,
                &loudness,
                scenes.and_then(|s| s.for_range(0.0, span)),
                &CutOptions {
                    range: params.range,
                    max_clips: params.max_clips,
                    skip_cuts: params.skip_cuts,
                    start: 0.0,
                    duration: span,
                    rerank: params.rerank.clone(),
                    prompt: params.prompt.clone(),
                    remove_fillers: params.remove_fillers,
                    flexible_range: params.flexible_range,
                },
                ctx,
            )
            .await?;
            folder.write(WorkFile::Plans, &plans)?;
            Ok(Outcome::Cut)
        }
        Stage::Caption => {
            let src = folder.input(WorkFile::Source)?;
            let media: MediaInfo = folder.read(WorkFile::Media)?;
            let transcript: Transcript = folder.read(WorkFile::Transcript)?;
            let plans: Vec<ClipPlan> = folder.read(WorkFile::Plans)?;
            let framed: Option<ahead::Preframed> =
                folder.read_optional(WorkFile::Framing)?.flatten();
            let clips = caption::run_stage(
                &src,
                &media,
                &transcript,
                &plans,
                framed,
                &params.caption,
                ctx,
            )
            .await?;
            Ok(Outcome::Captioned(Captioned {
                clips,
                media,
                transcript,
            }))
        }
    }
}

/// The words, and beside them on spare CPU what can be done ahead
/// (`ahead.rs`): scene changes, and with skip cuts the clip's framing.
async fn transcribe_in<E: StageEnv>(
    folder: &Folder<'_>,
    params: &StageParams,
    env: &E,
    ctx: &StageCtx,
) -> Result<Outcome, StageError> {
    let src = folder.input(WorkFile::Source)?;
    let media: MediaInfo = folder.read(WorkFile::Media)?;
    let span = span(params, &media);
    let spare = SpareCpu::new();
    let ahead_cancel = ctx.cancel.child_token();
    let _stop_ahead = ahead_cancel.clone().drop_guard();
    let ahead = async {
        match &spare {
            Some(spare) => {
                // Skip cuts: the one clip is the whole range.
                let clip = params.skip_cuts.then_some(FrameInto {
                    out: (params.caption.width, params.caption.height),
                    layout: params.caption.layout,
                });
                ahead::run(&src, &media, span, clip, spare, &ahead_cancel).await
            }
            None => Ahead::default(),
        }
    };
    // The model may still be loading: the audio starts meanwhile.
    let words = async {
        let out = transcribe::run_loading(
            &src,
            env.model(),
            TranscribeOptions {
                language: params.language.clone(),
                language_hint: params.language_hint.clone(),
                start: 0.0,
                duration: Some(span),
                expected_secs: span,
                batch_size: params.batch_size,
                keep_fillers: params.remove_fillers,
            },
            ctx,
        )
        .await;
        // What is left ahead runs at normal priority; after a failure
        // nothing is left to do.
        match (&out, &spare) {
            (Err(_), _) => ahead_cancel.cancel(),
            (Ok(_), Some(spare)) => spare.raise(),
            (Ok(_), None) => {}
        }
        out
    };
    let (out, done) = tokio::join!(words, ahead);
    let out = out?;
    folder.write(WorkFile::Transcript, &out.transcript)?;
    folder.write(WorkFile::Loudness, &out.loudness_db)?;
    folder.write(WorkFile::Scenes, &done.scenes)?;
    folder.write(WorkFile::Framing, &done.framing)?;
    Ok(Outcome::Transcribed {
        model_secs: out.model_secs,
        framing_secs: done.framing.map(|f| f.seconds),
    })
}

/// The processed span: the requested duration, at most the video's.
fn span(params: &StageParams, media: &MediaInfo) -> f64 {
    params
        .duration
        .map(|d| d.min(media.duration))
        .unwrap_or(media.duration)
        .max(0.0)
}

async fn download_in<E: StageEnv>(
    folder: &Folder<'_>,
    params: &StageParams,
    env: &E,
    ctx: &StageCtx,
) -> Result<(), StageError> {
    folder.check_output(WorkFile::Source)?;
    if let Some(old) = WorkFile::Source.locate(folder.dir) {
        let _ = std::fs::remove_file(old);
    }
    let input = match &params.source {
        SourceRef::Url(url) => download::Input::Url(url),
        SourceRef::Object(key) => download::Input::Object {
            store: env
                .objects()
                .ok_or_else(|| StageError::Io("no object storage for the upload".into()))?,
            key,
        },
        SourceRef::Local(path) => download::Input::Local(path),
    };
    let got = download::run(input, folder.dir, ctx).await?;
    if WorkFile::Source.locate(folder.dir).is_none() {
        // A local file is used where it is: linked in as `source.<ext>`.
        let ext = got
            .path
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| !e.is_empty() && *e != "part")
            .unwrap_or("video");
        let link = folder.dir.join(format!("source.{ext}"));
        let target = std::path::absolute(&got.path)
            .map_err(|e| StageError::io("resolving the source path", e))?;
        std::os::unix::fs::symlink(&target, &link)
            .map_err(|e| StageError::io("linking the source into the work folder", e))?;
    }
    folder.write(WorkFile::Media, &got.media)
}
