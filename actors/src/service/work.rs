//! A project's stages as the service runs them: each reads what the previous
//! stage left in the project's work folder and writes its own result there,
//! so a project resumes from its last finished stage after a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Services;
use crate::media::ffprobe::MediaInfo;
use crate::project::records::{ClipRecord, ProjectRecord, SegmentRecord, Source};
use crate::project::stages::caption::{self, CaptionOptions};
use crate::project::stages::cut::{self, ClipPlan, CutOptions};
use crate::project::stages::download;
use crate::project::stages::score::preset_range;
use crate::project::stages::transcribe::{self, TranscribeOptions};
use crate::project::stages::{Progress, Stage, StageCtx, StageError};
use crate::transcript::Transcript;

/// The work folder of a project.
pub fn work_dir(services: &Services, project_id: &str) -> PathBuf {
    services.settings.data_dir.join("work").join(project_id)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, StageError> {
    let bytes = std::fs::read(path)
        .map_err(|e| StageError::io(&format!("reading {}", path.display()), e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| StageError::io(&format!("parsing {}", path.display()), e))
}

fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<(), StageError> {
    let tmp = path.with_extension("part");
    let bytes = serde_json::to_vec(value).map_err(|e| StageError::io("encoding", e))?;
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| StageError::io(&format!("writing {}", path.display()), e))
}

pub(crate) fn source_path(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_stem().map(|s| s == "source").unwrap_or(false)
                && p.extension().map(|e| e != "part").unwrap_or(false)
        })
}

/// What a finished caption stage hands back to the project actor (also
/// over the cluster, from a worker).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CaptionResult {
    pub clips: Vec<ClipRecord>,
    /// The language transcription used (given or detected).
    pub language: String,
}

/// Runs one stage of `project` in its work folder.
pub async fn run_stage(
    services: Arc<Services>,
    project: ProjectRecord,
    stage: Stage,
    cancel: tokio_util::sync::CancellationToken,
    progress: Progress,
) -> Result<Option<CaptionResult>, StageError> {
    let dir = work_dir(&services, &project.id);
    run_stage_in(services, project, stage, &dir, cancel, progress).await
}

/// Runs one stage of `project` in `dir`, which holds what the earlier
/// stages left (a cluster worker fetches it from object storage first).
pub async fn run_stage_in(
    services: Arc<Services>,
    project: ProjectRecord,
    stage: Stage,
    dir: &Path,
    cancel: tokio_util::sync::CancellationToken,
    progress: Progress,
) -> Result<Option<CaptionResult>, StageError> {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| StageError::io("creating the work folder", e))?;
    let ctx = StageCtx::new(cancel, progress);
    match stage {
        Stage::Download => {
            download_stage(&services, &project, &dir, &ctx).await?;
            Ok(None)
        }
        Stage::Transcribe => {
            let src = source_path(&dir)
                .ok_or_else(|| StageError::Io("the downloaded source is missing".into()))?;
            let media: MediaInfo = read_json(&dir.join("media.json"))?;
            let model = services
                .model()
                .await
                .map_err(|e| StageError::Model(e.to_string()))?;
            let span = project.duration_sec.min(media.duration);
            // The source's language when the model knows it; else detected.
            let language = project.language.clone().filter(|l| model.knows_language(l));
            let out = transcribe::run(
                &src,
                model,
                TranscribeOptions {
                    language,
                    start: 0.0,
                    duration: Some(span),
                    expected_secs: span,
                    batch_size: services.settings.batch_size,
                    keep_fillers: project.remove_fillers,
                },
                &ctx,
            )
            .await?;
            write_json(&dir.join("transcript.json"), &out.transcript)?;
            write_json(&dir.join("loudness.json"), &out.loudness_db)?;
            Ok(None)
        }
        Stage::Cut => {
            let src = source_path(&dir)
                .ok_or_else(|| StageError::Io("the downloaded source is missing".into()))?;
            let transcript: Transcript = read_json(&dir.join("transcript.json"))?;
            let loudness: Vec<f32> = read_json(&dir.join("loudness.json"))?;
            let range = preset_range(&project.preset).unwrap_or((20.0, 60.0));
            let plans = cut::run(
                &src,
                &transcript,
                &loudness,
                &CutOptions {
                    range,
                    max_clips: services.settings.max_clips,
                    skip_cuts: project.skip_cuts,
                    start: 0.0,
                    duration: project.duration_sec,
                    rerank: services.settings.rerank.clone(),
                    prompt: project.prompt.clone(),
                    remove_fillers: project.remove_fillers,
                },
                &ctx,
            )
            .await?;
            write_json(&dir.join("plans.json"), &plans)?;
            Ok(None)
        }
        Stage::Caption => caption_stage(&services, &project, &dir, &ctx)
            .await
            .map(Some),
    }
}

async fn download_stage(
    services: &Services,
    project: &ProjectRecord,
    dir: &Path,
    ctx: &StageCtx,
) -> Result<(), StageError> {
    if let Some(old) = source_path(dir) {
        let _ = std::fs::remove_file(old);
    }
    let input = match &project.source {
        Source::Url(url) => download::Input::Url(url),
        Source::Upload(key) => download::Input::Object {
            store: services.objects.as_ref(),
            key,
        },
    };
    let got = download::run(input, dir, ctx).await?;
    write_json(&dir.join("media.json"), &got.media)
}

async fn caption_stage(
    services: &Services,
    project: &ProjectRecord,
    dir: &Path,
    ctx: &StageCtx,
) -> Result<CaptionResult, StageError> {
    let src = source_path(dir)
        .ok_or_else(|| StageError::Io("the downloaded source is missing".into()))?;
    let media: MediaInfo = read_json(&dir.join("media.json"))?;
    let transcript: Transcript = read_json(&dir.join("transcript.json"))?;
    let plans: Vec<ClipPlan> = read_json(&dir.join("plans.json"))?;
    // A fresh folder per attempt: an ffmpeg left running by a killed server
    // may still be writing into the previous one, which is removed here.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("out-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let out_dir = dir.join(format!("out-{}", uuid::Uuid::new_v4()));
    let mut opts = CaptionOptions::new(out_dir.clone(), project.style.clone());
    opts.x264_preset = services.settings.x264_preset.clone();
    (opts.width, opts.height) = project.aspect_ratio.size();
    opts.layout = project.layout;
    // Encoding is 95% of this stage; uploads take the rest.
    let encode_progress = {
        let p = ctx.progress.clone();
        Progress::new(move |v| p.set(v as f64 / 100.0 * 0.95))
    };
    let enc_ctx = StageCtx::new(ctx.cancel.clone(), encode_progress);
    let rendered = caption::run_stage(&src, &media, &transcript, &plans, &opts, &enc_ctx).await?;
    let now = crate::project::records::now_ms();
    let mut clips = Vec::with_capacity(rendered.len());
    for c in &rendered {
        ctx.check_cancelled()?;
        let base = format!("projects/{}/clip-{}", project.id, c.index);
        let keys = [
            (format!("{base}.mp4"), &c.video, "video/mp4"),
            (format!("{base}.srt"), &c.srt, "application/x-subrip"),
            (format!("{base}.vtt"), &c.vtt, "text/vtt"),
            (format!("{base}.jpg"), &c.thumbnail, "image/jpeg"),
        ];
        for (key, path, ctype) in &keys {
            services
                .objects
                .put_file(key, path, ctype)
                .await
                .map_err(|e| StageError::Io(format!("storing clip {}: {e}", c.index)))?;
        }
        let segments = crate::transcript::sentences_from_words(&c.words)
            .into_iter()
            .map(|s| SegmentRecord {
                id: uuid::Uuid::new_v4().to_string(),
                start: s.start,
                end: s.end,
                text: s.text,
            })
            .collect();
        clips.push(ClipRecord {
            id: uuid::Uuid::new_v4().to_string(),
            project_id: project.id.clone(),
            index: c.index as u32,
            title: c.plan.title.clone(),
            score: c.plan.score,
            start: c.plan.start,
            end: c.plan.end,
            quality: c.quality.clone(),
            video_key: keys[0].0.clone(),
            subtitle_key: keys[1].0.clone(),
            vtt_key: keys[2].0.clone(),
            thumbnail_key: keys[3].0.clone(),
            segments,
            created_at: now,
            layout: c.layout.as_str().into(),
            reason: c.plan.reason.clone(),
            scores: c.plan.scores.clone(),
            cuts: c.plan.cuts.clone(),
        });
    }
    // What editor exports need to know about the source (service/export.rs).
    let source = super::export::stored_source(project, &media, &transcript.language);
    let bytes = serde_json::to_vec(&source).map_err(|e| StageError::io("encoding", e))?;
    services
        .objects
        .put_bytes(
            &super::export::source_key(&project.id),
            bytes,
            "application/json",
        )
        .await
        .map_err(|e| StageError::Io(format!("storing the source description: {e}")))?;
    ctx.progress.done();
    Ok(CaptionResult {
        clips,
        language: transcript.language.clone(),
    })
}
