//! Probe: ffprobe the input and refuse, with a readable reason, anything the
//! pipeline cannot clip (not a video, corrupt, truncated, empty, silent).

use std::path::Path;

use super::{StageCtx, StageError};
use crate::media::ffprobe::{self, MediaInfo};

/// Probes `input`; `name` is how the user knows the file (upload name or URL).
pub async fn run(input: &Path, name: &str, ctx: &StageCtx) -> Result<MediaInfo, StageError> {
    ctx.check_cancelled()?;
    let info = ffprobe::probe(input, &ctx.cancel)
        .await
        .map_err(|e| match e {
            StageError::InvalidInput(m) => {
                StageError::InvalidInput(m.replace(&file_name(input), name))
            }
            other => other,
        })?;
    ctx.progress.set(0.5);
    ffprobe::require_video_with_audio(name, &info)?;
    ffprobe::check_tail(input, &info, &ctx.cancel)
        .await
        .map_err(|e| match e {
            StageError::InvalidInput(m) => {
                StageError::InvalidInput(m.replace(&file_name(input), name))
            }
            other => other,
        })?;
    ctx.progress.done();
    Ok(info)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
