//! One frame of a video as a JPEG: clip thumbnails and the preview of an
//! uploaded source.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::process::{last_error_line, run};
use crate::stage::StageError;

/// Writes the frame of `video` at `at` seconds to `out` (JPEG), scaled
/// down to at most `max_width` pixels wide when given. `what` names the
/// frame in the error ("thumbnail of clip 2").
pub async fn grab(
    video: &Path,
    at: f64,
    out: &Path,
    max_width: Option<u32>,
    what: &str,
    cancel: &CancellationToken,
) -> Result<(), StageError> {
    let mut args: Vec<String> = ["-nostdin", "-y", "-v", "error", "-ss"]
        .into_iter()
        .map(String::from)
        .collect();
    args.push(format!("{:.3}", at.max(0.0)));
    args.push("-i".into());
    args.push(video.to_string_lossy().into_owned());
    args.extend(["-frames:v", "1", "-q:v", "3"].map(String::from));
    if let Some(w) = max_width {
        args.push("-vf".into());
        args.push(format!("scale='min({w},iw)':-2"));
    }
    args.push(out.to_string_lossy().into_owned());
    let done = run("ffmpeg", &args, cancel).await?;
    if !done.status.success() || !out.is_file() {
        let _ = std::fs::remove_file(out);
        return Err(StageError::tool(
            "ffmpeg",
            format!("{what}: {}", last_error_line(&done.stderr)),
        ));
    }
    Ok(())
}
