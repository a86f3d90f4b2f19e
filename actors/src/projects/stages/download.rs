//! Download: the project's video into the stage's folder — a platform link
//! through yt-dlp, an upload from object storage, or (for `clipforge clip`)
//! a local file used in place — then probed. One stage for the service, the
//! CLI and a cluster worker.

use std::path::{Path, PathBuf};

use super::{probe, Progress, StageCtx, StageError};
use crate::media::download;
use crate::media::ffprobe::MediaInfo;
use crate::storage::objects::ObjectStore;

/// Where the video comes from.
pub enum Input<'a> {
    /// A platform link (YouTube, Vimeo…).
    Url(&'a str),
    /// An uploaded file in object storage.
    Object {
        store: &'a dyn ObjectStore,
        key: &'a str,
    },
    /// A file on this machine (the CLI).
    Local(&'a Path),
}

/// The video on disk and what the probe found in it.
pub struct Downloaded {
    pub path: PathBuf,
    pub media: MediaInfo,
}

/// Fetches `input` into `dir` (as `source.<ext>`; a local file is used
/// where it is) and probes it. Fetching is the first 90 % of the progress.
pub async fn run(input: Input<'_>, dir: &Path, ctx: &StageCtx) -> Result<Downloaded, StageError> {
    ctx.check_cancelled()?;
    let (path, name) = match input {
        Input::Url(url) => {
            let p = ctx.progress.clone();
            let fetching = Progress::new(move |v| p.set(v as f64 / 100.0 * 0.9));
            let path = download::download(url, dir, &ctx.cancel, &fetching).await?;
            (path, url.to_string())
        }
        Input::Object { store, key } => {
            let name = key.rsplit('/').next().unwrap_or("upload").to_string();
            let ext = Path::new(&name)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("mp4")
                .to_string();
            let path = dir.join(format!("source.{ext}"));
            store
                .get_to_file(key, &path)
                .await
                .map_err(|e| StageError::Io(format!("fetching the upload: {e}")))?;
            (path, name)
        }
        Input::Local(p) => {
            if !p.is_file() {
                return Err(StageError::InvalidInput(format!(
                    "{}: no such file",
                    p.display()
                )));
            }
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (p.to_path_buf(), name)
        }
    };
    ctx.progress.set(0.9);
    let media = probe::run(&path, &name, ctx).await?;
    ctx.progress.done();
    Ok(Downloaded { path, media })
}
