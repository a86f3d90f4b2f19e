//! What a finished project keeps so its clips can be edited without
//! running the pipeline again (issue 29): the transcript, the probe, the
//! clip plans, the loudness and scene changes (`projects/<id>/edit/…`),
//! the source video (an upload stays where it is; a downloaded one is kept
//! as `projects/<id>/edit/source.<ext>`) and, next to each clip's video,
//! the framing it was drawn with. Removed with the project's other media.

use std::path::{Path, PathBuf};

use crate::media::ffprobe::MediaInfo;
use crate::projects::records::{ProjectRecord, Source};
use crate::projects::stages::cut::ClipPlan;
use crate::projects::stages::table::WorkFile;
use crate::projects::stages::StageError;
use crate::storage::objects::ObjectStore;
use crate::transcript::Transcript;

/// The work files kept, besides the source.
const KEPT: [WorkFile; 5] = [
    WorkFile::Media,
    WorkFile::Transcript,
    WorkFile::Plans,
    WorkFile::Loudness,
    WorkFile::Scenes,
];

fn prefix(project_id: &str) -> String {
    format!("projects/{project_id}/edit/")
}

/// Key of a kept work file.
fn key(project_id: &str, file: WorkFile) -> String {
    format!("{}{}", prefix(project_id), file.name())
}

/// Keeps the work files of `dir` (the caption stage's inputs) for edits.
/// Called once the clips are stored; on a cluster worker too.
pub async fn save(
    objects: &dyn ObjectStore,
    project: &ProjectRecord,
    dir: &Path,
) -> Result<(), StageError> {
    let store = |e: crate::storage::error::StorageError| {
        StageError::Io(format!("keeping the files for editing: {e}"))
    };
    for file in KEPT {
        let Some(path) = file.locate(dir) else {
            continue;
        };
        objects
            .put_file(&key(&project.id, file), &path, "application/json")
            .await
            .map_err(store)?;
    }
    if let Source::Url(_) = project.source {
        let source = WorkFile::Source
            .locate(dir)
            .ok_or_else(|| StageError::Io("the source video is missing".into()))?;
        let name = source.file_name().unwrap_or_default().to_string_lossy();
        objects
            .put_file(
                &format!("{}{name}", prefix(&project.id)),
                &source,
                "application/octet-stream",
            )
            .await
            .map_err(store)?;
    }
    Ok(())
}

/// A kept project, read back.
pub struct Kit {
    pub media: MediaInfo,
    pub transcript: Transcript,
    pub plans: Vec<ClipPlan>,
}

/// Why a kit cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    /// The project finished before edits existed (nothing was kept).
    #[error("this project was made before clips could be edited")]
    Missing,
    #[error("{0}")]
    Storage(String),
}

async fn json<T: serde::de::DeserializeOwned>(
    objects: &dyn ObjectStore,
    project_id: &str,
    file: WorkFile,
) -> Result<T, KitError> {
    let k = key(project_id, file);
    match objects.size(&k).await {
        Ok(Some(_)) => {}
        Ok(None) => return Err(KitError::Missing),
        Err(e) => return Err(KitError::Storage(e.to_string())),
    }
    let bytes = objects
        .get_bytes(&k)
        .await
        .map_err(|e| KitError::Storage(e.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|e| KitError::Storage(format!("{}: {e}", file.name())))
}

/// The kept transcript, probe and plans of `project_id`.
pub async fn load(objects: &dyn ObjectStore, project_id: &str) -> Result<Kit, KitError> {
    let media = json(objects, project_id, WorkFile::Media).await?;
    let transcript = json(objects, project_id, WorkFile::Transcript).await?;
    let plans = json(objects, project_id, WorkFile::Plans).await?;
    Ok(Kit {
        media,
        transcript,
        plans,
    })
}

/// The kept loudness series (per 100 ms of the processed range) and scene
/// changes (seconds from its start), for finding more clips.
pub async fn signals(
    objects: &dyn ObjectStore,
    project_id: &str,
) -> Result<(Vec<f32>, Option<Vec<f64>>), KitError> {
    let loudness: Vec<f32> = json(objects, project_id, WorkFile::Loudness).await?;
    let scenes: Option<crate::projects::stages::ahead::Scenes> =
        match json(objects, project_id, WorkFile::Scenes).await {
            Ok(s) => s,
            Err(KitError::Missing) => None,
            Err(e) => return Err(e),
        };
    Ok((loudness, scenes.map(|s| s.changes)))
}

/// Copies the project's source video into `dir`; returns its path.
pub async fn fetch_source(
    objects: &dyn ObjectStore,
    project: &ProjectRecord,
    dir: &Path,
) -> Result<PathBuf, KitError> {
    let key = match &project.source {
        Source::Upload(key) => key.clone(),
        Source::Url(_) => {
            let listed = objects
                .list_prefix(&prefix(&project.id))
                .await
                .map_err(|e| KitError::Storage(e.to_string()))?;
            listed
                .into_iter()
                .map(|(k, _)| k)
                .find(|k| {
                    k.rsplit('/')
                        .next()
                        .is_some_and(|name| WorkFile::Source.matches(name))
                })
                .ok_or(KitError::Missing)?
        }
    };
    let ext = key
        .rsplit('/')
        .next()
        .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_string()))
        .filter(|e| !e.is_empty() && e.len() <= 8 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| "mp4".into());
    let path = dir.join(format!("source.{ext}"));
    objects
        .get_to_file(&key, &path)
        .await
        .map_err(|e| KitError::Storage(e.to_string()))?;
    Ok(path)
}
