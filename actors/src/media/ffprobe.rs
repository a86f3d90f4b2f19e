//! `ffprobe` as a typed function, and the checks that turn its answer into a
//! readable reason when an input cannot be used.

use std::path::Path;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::process::{last_error_line, run};
use crate::stage::StageError;

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VideoInfo {
    pub codec: String,
    /// Display width and height (after rotation metadata is applied).
    pub width: u32,
    pub height: u32,
    pub fps: f64,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioInfo {
    pub codec: String,
    pub sample_rate: u32,
    pub channels: u32,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaInfo {
    /// ffprobe's format name, e.g. "mov,mp4,m4a,3gp,3g2,mj2".
    pub format: String,
    pub duration: f64,
    pub size: u64,
    pub video: Option<VideoInfo>,
    pub audio: Option<AudioInfo>,
}

#[derive(Deserialize)]
struct Probe {
    #[serde(default)]
    streams: Vec<ProbeStream>,
    format: Option<ProbeFormat>,
}

#[derive(Deserialize)]
struct ProbeFormat {
    format_name: Option<String>,
    duration: Option<String>,
    size: Option<String>,
}

#[derive(Deserialize, Default)]
struct ProbeStream {
    codec_type: Option<String>,
    codec_name: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    avg_frame_rate: Option<String>,
    r_frame_rate: Option<String>,
    sample_rate: Option<String>,
    channels: Option<u32>,
    duration: Option<String>,
    #[serde(default)]
    disposition: std::collections::BTreeMap<String, i64>,
    #[serde(default)]
    tags: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    side_data_list: Vec<serde_json::Value>,
}

fn ratio(r: Option<&str>) -> Option<f64> {
    let (n, d) = r?.split_once('/')?;
    let (n, d): (f64, f64) = (n.parse().ok()?, d.parse().ok()?);
    (d > 0.0 && n > 0.0).then_some(n / d)
}

fn rotation(s: &ProbeStream) -> i64 {
    let from_side = s
        .side_data_list
        .iter()
        .find_map(|v| v.get("rotation").and_then(|r| r.as_i64()));
    let from_tag = s.tags.get("rotate").and_then(|r| r.parse::<i64>().ok());
    from_side.or(from_tag).unwrap_or(0).rem_euclid(360)
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Runs ffprobe on `path`. Errors name the problem in words a user knows.
pub async fn probe(path: &Path, cancel: &CancellationToken) -> Result<MediaInfo, StageError> {
    let name = name_of(path);
    let meta = std::fs::metadata(path)
        .map_err(|e| StageError::InvalidInput(format!("cannot read {name}: {e}")))?;
    if meta.len() == 0 {
        return Err(StageError::InvalidInput(format!(
            "{name} is empty (0 bytes)"
        )));
    }
    let args: Vec<String> = [
        "-v",
        "error",
        "-print_format",
        "json",
        "-show_format",
        "-show_streams",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([path.to_string_lossy().into_owned()])
    .collect();
    let out = run("ffprobe", &args, cancel).await?;
    if !out.status.success() {
        let err = last_error_line(&out.stderr);
        let lower = err.to_ascii_lowercase();
        let reason = if lower.contains("moov atom not found") {
            format!("{name} is truncated or corrupt: its index (moov atom) is missing, so the upload or download probably stopped early")
        } else if lower.contains("invalid data found") {
            format!("{name} is not a video file ffmpeg can read (corrupt or an unknown format)")
        } else {
            format!("{name} cannot be read: {err}")
        };
        return Err(StageError::InvalidInput(reason));
    }
    let parsed: Probe = serde_json::from_slice(&out.stdout)
        .map_err(|e| StageError::tool("ffprobe", format!("unexpected output: {e}")))?;
    let format = parsed.format.unwrap_or(ProbeFormat {
        format_name: None,
        duration: None,
        size: None,
    });
    let video = parsed
        .streams
        .iter()
        .find(|s| {
            s.codec_type.as_deref() == Some("video")
                && s.disposition.get("attached_pic") != Some(&1)
        })
        .map(|s| {
            let (w, h) = (s.width.unwrap_or(0), s.height.unwrap_or(0));
            let (width, height) = if rotation(s) % 180 == 90 {
                (h, w)
            } else {
                (w, h)
            };
            VideoInfo {
                codec: s.codec_name.clone().unwrap_or_default(),
                width,
                height,
                fps: ratio(s.avg_frame_rate.as_deref())
                    .or(ratio(s.r_frame_rate.as_deref()))
                    .unwrap_or(0.0),
            }
        });
    let audio = parsed
        .streams
        .iter()
        .find(|s| s.codec_type.as_deref() == Some("audio"))
        .map(|s| AudioInfo {
            codec: s.codec_name.clone().unwrap_or_default(),
            sample_rate: s
                .sample_rate
                .as_deref()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0),
            channels: s.channels.unwrap_or(0),
        });
    let stream_duration = parsed
        .streams
        .iter()
        .filter_map(|s| s.duration.as_deref().and_then(|d| d.parse::<f64>().ok()))
        .fold(0.0f64, f64::max);
    let duration = format
        .duration
        .as_deref()
        .and_then(|d| d.parse::<f64>().ok())
        .unwrap_or(stream_duration);
    Ok(MediaInfo {
        format: format.format_name.unwrap_or_default(),
        duration: if duration.is_finite() { duration } else { 0.0 },
        size: format
            .size
            .and_then(|s| s.parse().ok())
            .unwrap_or(meta.len()),
        video,
        audio,
    })
}

/// Formats that are not videos even though ffprobe opens them.
const NOT_VIDEO_FORMATS: [&str; 5] = ["tty", "image2", "_pipe", "gif", "lavfi"];
/// Codecs ffprobe reports for text or still images posing as video.
const NOT_VIDEO_CODECS: [&str; 7] = ["ansi", "png", "mjpeg", "bmp", "webp", "tiff", "bintext"];

/// Checks that `info` describes a video with sound that the pipeline can
/// clip. `name` is the file's name as the user knows it.
pub fn require_video_with_audio(name: &str, info: &MediaInfo) -> Result<(), StageError> {
    let bad_format = NOT_VIDEO_FORMATS.iter().any(|f| info.format.contains(f));
    let Some(video) = info.video.as_ref() else {
        return Err(StageError::InvalidInput(if info.audio.is_some() {
            format!("{name} has no video track (it is an audio file)")
        } else {
            format!("{name} is not a video file")
        }));
    };
    if bad_format || NOT_VIDEO_CODECS.contains(&video.codec.as_str()) && info.duration < 1.0 {
        return Err(StageError::InvalidInput(format!(
            "{name} is not a video file (it looks like {})",
            if video.codec == "ansi" || info.format == "tty" {
                "text"
            } else {
                "a still image"
            }
        )));
    }
    if video.width == 0 || video.height == 0 {
        return Err(StageError::InvalidInput(format!(
            "{name} has a video track without a picture size (corrupt)"
        )));
    }
    if info.duration <= 0.0 {
        return Err(StageError::InvalidInput(format!("{name} has zero length")));
    }
    if info.audio.is_none() {
        return Err(StageError::InvalidInput(format!(
            "{name} has no audio track: clips are cut and captioned from speech, so the video needs sound"
        )));
    }
    Ok(())
}

/// Decodes the last seconds of the file to catch truncation that the
/// container header hides (e.g. a Matroska file cut short).
pub async fn check_tail(
    path: &Path,
    info: &MediaInfo,
    cancel: &CancellationToken,
) -> Result<(), StageError> {
    let from = (info.duration - 2.0).max(0.0);
    let args: Vec<String> = vec![
        "-nostdin".into(),
        "-v".into(),
        "error".into(),
        "-ss".into(),
        format!("{from:.3}"),
        "-i".into(),
        path.to_string_lossy().into_owned(),
        "-t".into(),
        "2".into(),
        "-f".into(),
        "null".into(),
        "-".into(),
    ];
    let out = run("ffmpeg", &args, cancel).await?;
    let lower = out.stderr.to_ascii_lowercase();
    let truncated = [
        "truncat",
        "partial file",
        "end of file",
        "invalid nal",
        "error while decoding",
        "corrupt",
    ]
    .iter()
    .any(|k| lower.contains(k));
    if !out.status.success() || truncated {
        return Err(StageError::InvalidInput(format!(
            "{} is truncated or corrupt near its end ({})",
            name_of(path),
            last_error_line(&out.stderr)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(format: &str, codec: &str, audio: bool, duration: f64) -> MediaInfo {
        MediaInfo {
            format: format.into(),
            duration,
            size: 10,
            video: Some(VideoInfo {
                codec: codec.into(),
                width: 640,
                height: 360,
                fps: 25.0,
            }),
            audio: audio.then(|| AudioInfo {
                codec: "aac".into(),
                sample_rate: 44100,
                channels: 2,
            }),
        }
    }

    #[test]
    fn text_image_and_silent_inputs_are_refused_with_reasons() {
        let e = require_video_with_audio("a.mp4", &info("tty", "ansi", false, 0.0)).unwrap_err();
        assert!(e.to_string().contains("text"), "{e}");
        let e =
            require_video_with_audio("a.png", &info("png_pipe", "png", false, 0.0)).unwrap_err();
        assert!(e.to_string().contains("still image"), "{e}");
        let e =
            require_video_with_audio("a.mp4", &info("mov,mp4", "h264", false, 5.0)).unwrap_err();
        assert!(e.to_string().contains("no audio track"), "{e}");
        require_video_with_audio("a.mp4", &info("mov,mp4", "h264", true, 5.0)).unwrap();
    }

    #[test]
    fn ratios_parse() {
        assert_eq!(
            ratio(Some("30000/1001")).map(|r| (r * 100.0).round()),
            Some(2997.0)
        );
        assert_eq!(ratio(Some("0/0")), None);
    }
}
