//! A project's stages as a node runs them (for its own projects, or as a
//! cluster worker): each reads what the previous stage left in the
//! project's work folder and writes its own result there
//! (`projects/stages/run.rs`, by the stage table), so a project resumes from
//! its last finished stage after a restart. The caption stage's clips are
//! stored here as objects and clip records. What a node lends the stages is
//! a [`StageHost`]: object storage, the knobs they read and the model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::media::whisper::{ModelOptions, WhisperModel};
use crate::projects::clip_history::{captions_key, framing_key};
use crate::projects::records::{ClipRecord, ProjectRecord, SegmentRecord, Source};
use crate::projects::stages::caption::{CaptionOptions, RenderedClip};
use crate::projects::stages::run::{run_in, Captioned, Outcome, SourceRef, StageEnv, StageParams};
use crate::projects::stages::score::preset_range;
use crate::projects::stages::{Progress, Stage, StageCtx, StageError};
use crate::storage::kv::StorageError;
use crate::storage::objects::ObjectStore;

/// The node's settings the stages read.
#[derive(Clone, Debug)]
pub struct StageKnobs {
    /// Work folders live under `<data_dir>/work`, a worker's scratch
    /// folders under `<data_dir>/stagework`.
    pub data_dir: PathBuf,
    pub model_dir: PathBuf,
    pub model: ModelOptions,
    pub batch_size: usize,
    pub x264_preset: String,
    pub max_clips: usize,
    /// The optional LLM re-ranker of clip candidates (off when `None`).
    pub rerank: Option<crate::projects::stages::rerank::RerankConfig>,
}

/// What a node lends the stages it runs: object storage, its knobs and its
/// Whisper model, loaded on first use and shared by every stage of the node
/// (clones share it).
#[derive(Clone)]
pub struct StageHost {
    pub objects: Arc<dyn ObjectStore>,
    pub knobs: Arc<StageKnobs>,
    model: Arc<OnceCell<Arc<WhisperModel>>>,
}

impl StageHost {
    pub fn new(objects: Arc<dyn ObjectStore>, knobs: StageKnobs) -> Self {
        Self {
            objects,
            knobs: Arc::new(knobs),
            model: Arc::default(),
        }
    }

    /// The work folder of a project.
    pub fn work_dir(&self, project_id: &str) -> PathBuf {
        self.knobs.data_dir.join("work").join(project_id)
    }
}

/// The object-storage folder of a project's work files (a cluster worker
/// fetches a stage's inputs from there and stores its outputs there).
pub fn work_prefix(project_id: &str) -> String {
    format!("work/{project_id}/")
}

/// What a finished caption stage hands back to the project actor (also
/// over the cluster, from a worker).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CaptionResult {
    pub clips: Vec<ClipRecord>,
    /// The language transcription used (given or detected).
    pub language: String,
    /// How sure detection was of it (1 when given).
    pub language_probability: Option<f64>,
}

/// Runs one stage of `project` in its work folder.
pub async fn run_stage(
    host: &StageHost,
    project: ProjectRecord,
    stage: Stage,
    cancel: tokio_util::sync::CancellationToken,
    progress: Progress,
) -> Result<Option<CaptionResult>, StageError> {
    let dir = host.work_dir(&project.id);
    run_stage_in(host, project, stage, &dir, cancel, progress).await
}

/// The stages' environment on a node: object storage for uploads, the
/// node's Whisper model.
impl StageEnv for StageHost {
    fn objects(&self) -> Option<&dyn ObjectStore> {
        Some(self.objects.as_ref())
    }

    async fn model(&self) -> Result<Arc<WhisperModel>, StageError> {
        self.model
            .get_or_try_init(|| async {
                let (dir, opts) = (self.knobs.model_dir.clone(), self.knobs.model.clone());
                let m = crate::tasks::blocking(move || WhisperModel::load(&dir, &opts)).await?;
                Ok::<_, anyhow::Error>(Arc::new(m))
            })
            .await
            .cloned()
            .map_err(|e| StageError::Model(e.to_string()))
    }
}

/// What the stages of `project` need to know, from the project and the
/// node's settings; the clips are rendered into `out_dir`.
fn stage_params(host: &StageHost, project: &ProjectRecord, out_dir: PathBuf) -> StageParams {
    let mut caption = CaptionOptions::new(out_dir, project.style.clone());
    caption.x264_preset = host.knobs.x264_preset.clone();
    (caption.width, caption.height) = project.aspect_ratio.size();
    caption.layout = project.layout;
    StageParams {
        source: match &project.source {
            Source::Url(url) => SourceRef::Url(url.clone()),
            Source::Upload(key) => SourceRef::Object(key.clone()),
        },
        duration: Some(project.duration_sec),
        // The user's choice is used as it is; the source's declared
        // language only weighs in the detection.
        language: project.language.clone().filter(|_| project.language_given),
        language_hint: project.language.clone().filter(|_| !project.language_given),
        batch_size: host.knobs.batch_size,
        range: preset_range(&project.preset).unwrap_or((20.0, 60.0)),
        flexible_range: project.preset == "auto",
        max_clips: host.knobs.max_clips,
        skip_cuts: project.skip_cuts,
        rerank: host.knobs.rerank.clone(),
        prompt: project.prompt.clone(),
        remove_fillers: project.remove_fillers,
        caption,
    }
}

/// A fresh folder for the clips of this attempt: an ffmpeg left running by
/// a killed server may still be writing into a previous one, which is
/// removed here.
fn fresh_out_dir(dir: &Path) -> PathBuf {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("out-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    dir.join(format!("out-{}", uuid::Uuid::new_v4()))
}

/// Runs one stage of `project` in `dir`, which holds what the earlier
/// stages left (a cluster worker fetches it from object storage first):
/// `stages::run` reads and writes the work files the stage table lists;
/// the caption stage's clips are then stored as objects and records.
pub async fn run_stage_in(
    host: &StageHost,
    project: ProjectRecord,
    stage: Stage,
    dir: &Path,
    cancel: tokio_util::sync::CancellationToken,
    progress: Progress,
) -> Result<Option<CaptionResult>, StageError> {
    std::fs::create_dir_all(dir).map_err(|e| StageError::io("creating the work folder", e))?;
    let ctx = StageCtx::new(cancel, progress);
    if stage != Stage::Caption {
        let params = stage_params(host, &project, dir.join("out"));
        run_in(stage, dir, &params, host, &ctx).await?;
        return Ok(None);
    }
    let params = stage_params(host, &project, fresh_out_dir(dir));
    // Encoding is 95% of this stage; uploads take the rest.
    let encode_progress = {
        let p = ctx.progress.clone();
        Progress::new(move |v| p.set(v as f64 / 100.0 * 0.95))
    };
    let enc_ctx = StageCtx::new(ctx.cancel.clone(), encode_progress);
    match run_in(stage, dir, &params, host, &enc_ctx).await? {
        Outcome::Captioned(c) => {
            let stored = store_rendered(host, &project, c, &ctx).await?;
            crate::projects::edit_kit::save(host.objects.as_ref(), &project, dir).await?;
            Ok(Some(stored))
        }
        _ => Err(StageError::Io("the caption stage rendered nothing".into())),
    }
}

/// Stores the rendered clips in object storage and makes their records.
async fn store_rendered(
    host: &StageHost,
    project: &ProjectRecord,
    captioned: Captioned,
    ctx: &StageCtx,
) -> Result<CaptionResult, StageError> {
    let Captioned {
        clips: rendered,
        media,
        transcript,
    } = captioned;
    let now = crate::projects::records::now_ms();
    let mut clips = Vec::with_capacity(rendered.len());
    for c in &rendered {
        ctx.check_cancelled()?;
        let base = format!("projects/{}/clip-{}", project.id, c.index);
        let (keys, _) = store_clip_files(host.objects.as_ref(), &base, c)
            .await
            .map_err(|e| StageError::Io(format!("storing clip {}: {e}", c.index)))?;
        let segments = segments_of(&c.words);
        clips.push(ClipRecord {
            id: uuid::Uuid::new_v4().to_string(),
            project_id: project.id.clone(),
            index: c.index as u32,
            title: c.plan.title.clone(),
            score: c.plan.score,
            start: c.plan.start,
            end: c.plan.end,
            quality: c.quality.clone(),
            video_key: keys[0].clone(),
            subtitle_key: keys[1].clone(),
            vtt_key: keys[2].clone(),
            thumbnail_key: keys[3].clone(),
            segments,
            created_at: now,
            layout: c.layout.as_str().into(),
            reason: c.plan.reason.clone(),
            scores: c.plan.scores.clone(),
            cuts: c.plan.cuts.clone(),
            version: 1,
            edits: Default::default(),
            history: Vec::new(),
            render: None,
            current_bytes: 0,
            version_at: now,
        });
    }
    // What editor exports need to know about the source (projects/export/stored.rs).
    let source =
        crate::projects::export::stored::stored_source(project, &media, &transcript.language);
    let bytes = serde_json::to_vec(&source).map_err(|e| StageError::io("encoding", e))?;
    host.objects
        .put_bytes(
            &crate::projects::export::stored::source_key(&project.id),
            bytes,
            "application/json",
        )
        .await
        .map_err(|e| StageError::Io(format!("storing the source description: {e}")))?;
    ctx.progress.done();
    Ok(CaptionResult {
        clips,
        language: transcript.language.clone(),
        language_probability: transcript.language_probability,
    })
}

/// Why a rendered clip's files could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreClipError {
    /// The object store refused a file.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The framing did not encode as JSON.
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
}

/// Stores a rendered clip's video, SRT, WebVTT and thumbnail as
/// `<base>.mp4|srt|vtt|jpg`, and the captions burned in and the framing it
/// was drawn with next to the video; returns the four keys (in that order)
/// and the bytes stored.
pub(crate) async fn store_clip_files(
    objects: &dyn ObjectStore,
    base: &str,
    c: &RenderedClip,
) -> Result<([String; 4], u64), StoreClipError> {
    let files = [
        (format!("{base}.mp4"), &c.video, "video/mp4"),
        (format!("{base}.srt"), &c.srt, "application/x-subrip"),
        (format!("{base}.vtt"), &c.vtt, "text/vtt"),
        (format!("{base}.jpg"), &c.thumbnail, "image/jpeg"),
    ];
    let mut bytes = 0;
    for (key, path, ctype) in &files {
        bytes += objects.put_file(key, path, ctype).await?;
    }
    if let Some(ass) = &c.captions {
        bytes += objects
            .put_file(&captions_key(&files[0].0), ass, "text/x-ssa")
            .await?;
    }
    if let Some(framing) = &c.framing {
        let json = serde_json::to_vec(framing)?;
        bytes += json.len() as u64;
        objects
            .put_bytes(&framing_key(&files[0].0), json, "application/json")
            .await?;
    }
    Ok((files.map(|(k, _, _)| k), bytes))
}

/// A clip's transcript segments (sentences) from its words.
pub(crate) fn segments_of(words: &[crate::transcript::Word]) -> Vec<SegmentRecord> {
    crate::transcript::sentences_from_words(words)
        .into_iter()
        .map(|s| SegmentRecord {
            id: uuid::Uuid::new_v4().to_string(),
            start: s.start,
            end: s.end,
            text: s.text,
        })
        .collect()
}
