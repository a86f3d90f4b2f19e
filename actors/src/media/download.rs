//! Source videos from URLs through yt-dlp (YouTube, Vimeo, and hosts an
//! operator allows), with progress from its `--newline` output.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::process::{last_error_line, run_with_lines};
use crate::project::stages::{Progress, StageError};

/// Turns yt-dlp's error text into the reason a user needs.
pub fn explain_ytdlp_error(stderr: &str) -> StageError {
    let line = last_error_line(stderr);
    let lower = stderr.to_ascii_lowercase();
    let msg = if lower.contains("private video") || lower.contains("this video is private") {
        "the video is private".to_string()
    } else if lower.contains("sign in to confirm your age")
        || lower.contains("age-restricted")
        || lower.contains("age restricted")
    {
        "the video is age-restricted".to_string()
    } else if lower.contains("unsupported url") {
        "the URL is not a supported video page".to_string()
    } else if lower.contains("video unavailable") || lower.contains("http error 404") {
        "the video is unavailable (removed or never existed)".to_string()
    } else {
        return StageError::tool("yt-dlp", line);
    };
    StageError::InvalidInput(msg)
}

/// Downloads `url` into `dir` as `source.<ext>` and returns its path.
pub async fn download(
    url: &str,
    dir: &Path,
    cancel: &CancellationToken,
    progress: &Progress,
) -> Result<PathBuf, StageError> {
    let template = dir.join("source.%(ext)s");
    let args: Vec<String> = vec![
        "--no-playlist".into(),
        "--newline".into(),
        "--progress-template".into(),
        "download:progress %(progress._percent_str)s".into(),
        "--progress".into(),
        "-f".into(),
        "bv*[height<=1080]+ba/b[height<=1080]/b".into(),
        "--merge-output-format".into(),
        "mp4".into(),
        "-o".into(),
        template.to_string_lossy().into_owned(),
        "--print".into(),
        "after_move:filepath".into(),
        "--".into(),
        url.to_string(),
    ];
    let mut printed = String::new();
    let out = run_with_lines("yt-dlp", &args, cancel, |line| {
        if let Some(p) = line.strip_prefix("progress ") {
            if let Ok(v) = p.trim().trim_end_matches('%').parse::<f64>() {
                progress.set(v / 100.0 * 0.98);
            }
        } else if !line.trim().is_empty() {
            printed = line.trim().to_string();
        }
    })
    .await;
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            remove_partials(dir);
            return Err(e);
        }
    };
    if !out.status.success() {
        remove_partials(dir);
        return Err(explain_ytdlp_error(&out.stderr));
    }
    let path = PathBuf::from(printed);
    if !path.is_file() {
        return Err(StageError::tool(
            "yt-dlp",
            "the download finished but the file is missing",
        ));
    }
    progress.done();
    Ok(path)
}

fn remove_partials(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("source.") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ytdlp_errors_become_reasons() {
        let e = explain_ytdlp_error(
            "ERROR: [youtube] abc: Private video. Sign in if you've been granted access",
        );
        assert_eq!(e.to_string(), "the video is private");
        let e = explain_ytdlp_error(
            "ERROR: [youtube] abc: Sign in to confirm your age. This video may be inappropriate",
        );
        assert_eq!(e.to_string(), "the video is age-restricted");
        let e = explain_ytdlp_error("ERROR: Unsupported URL: https://example.com/x");
        assert!(matches!(e, StageError::InvalidInput(_)));
        assert!(matches!(
            explain_ytdlp_error("ERROR: boom"),
            StageError::Tool { .. }
        ));
    }
}

/// What `POST /meta` returns about a video URL.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VideoMeta {
    pub title: String,
    pub duration_sec: f64,
    pub thumbnail: String,
    pub language: String,
}

/// Whether `url` is on a supported platform (YouTube, Vimeo) or one of the
/// operator's `extra_hosts` ("host" or "host:port").
pub fn is_supported_url(url: &str, extra_hosts: &[String]) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority
        .rsplit('@')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let host = authority.split(':').next().unwrap_or("");
    const PLATFORMS: [&str; 7] = [
        "youtube.com",
        "www.youtube.com",
        "m.youtube.com",
        "youtu.be",
        "vimeo.com",
        "www.vimeo.com",
        "player.vimeo.com",
    ];
    PLATFORMS.contains(&host)
        || extra_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(&authority))
}

/// Metadata from yt-dlp's JSON dump, without downloading the video.
pub async fn metadata(url: &str, cancel: &CancellationToken) -> Result<VideoMeta, StageError> {
    let args: Vec<String> = [
        "-J",
        "--no-playlist",
        "--skip-download",
        "--no-warnings",
        "--",
        url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(90),
        super::process::run("yt-dlp", &args, cancel),
    )
    .await
    .map_err(|_| StageError::tool("yt-dlp", "timed out reading the video's metadata"))??;
    if !out.status.success() {
        return Err(explain_ytdlp_error(&out.stderr));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| StageError::tool("yt-dlp", format!("unexpected output: {e}")))?;
    if v.get("age_limit").and_then(|a| a.as_u64()).unwrap_or(0) >= 18 {
        return Err(StageError::InvalidInput(
            "the video is age-restricted".into(),
        ));
    }
    if v.get("availability").and_then(|a| a.as_str()) == Some("private") {
        return Err(StageError::InvalidInput("the video is private".into()));
    }
    let duration_sec = v.get("duration").and_then(|d| d.as_f64()).unwrap_or(0.0);
    if duration_sec <= 0.0 && v.get("is_live").and_then(|l| l.as_bool()) == Some(true) {
        return Err(StageError::InvalidInput(
            "live streams cannot be clipped until they end".into(),
        ));
    }
    let text = |k: &str| v.get(k).and_then(|t| t.as_str()).unwrap_or("").to_string();
    Ok(VideoMeta {
        title: text("title"),
        duration_sec,
        thumbnail: text("thumbnail"),
        language: v
            .get("language")
            .and_then(|l| l.as_str())
            .unwrap_or("und")
            .to_string(),
    })
}

#[cfg(test)]
mod url_tests {
    use super::is_supported_url;

    #[test]
    fn only_supported_hosts_pass() {
        let extra = vec!["127.0.0.1".to_string()];
        assert!(is_supported_url("https://www.youtube.com/watch?v=abc", &[]));
        assert!(is_supported_url("https://youtu.be/abc", &[]));
        assert!(is_supported_url("https://vimeo.com/123", &[]));
        assert!(is_supported_url("http://127.0.0.1:8000/v.mp4", &extra));
        assert!(!is_supported_url("https://evil.com/youtube.com", &[]));
        assert!(!is_supported_url("https://youtube.com.evil.com/x", &[]));
        assert!(!is_supported_url("ftp://youtube.com/x", &[]));
        assert!(!is_supported_url("http://127.0.0.1:8000/v.mp4", &[]));
    }
}
