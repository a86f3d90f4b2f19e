//! Source videos from URLs through yt-dlp (YouTube, Vimeo, and hosts an
//! operator allows), with progress from its `--newline` output.

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::process::{last_error_line, run_with_lines};
use crate::stage::{Progress, StageError};

/// What a failed yt-dlp run means.
#[derive(Debug, PartialEq)]
enum Failure {
    /// The video cannot be used; the reason is for the user.
    Refused(String),
    /// The platform could not be reached (network, DNS, TLS, its 5xx or 429).
    Network(String),
    /// The platform did not answer in time.
    TimedOut(String),
    /// Anything else yt-dlp reported.
    Other(String),
}

fn classify(stderr: &str) -> Failure {
    let line = last_error_line(stderr);
    let lower = stderr.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| lower.contains(n));
    if has(&["private video", "this video is private"]) {
        Failure::Refused("the video is private".into())
    } else if has(&[
        "sign in to confirm your age",
        "age-restricted",
        "age restricted",
    ]) {
        Failure::Refused("the video is age-restricted".into())
    } else if has(&["unsupported url"]) {
        Failure::Refused("the URL is not a supported video page".into())
    } else if has(&["video unavailable", "http error 404", "http error 410"]) {
        Failure::Refused("the video is unavailable (removed or never existed)".into())
    } else if has(&["timed out", "timeout"]) {
        Failure::TimedOut(line)
    } else if has(&[
        "urlopen error",
        "connection refused",
        "connection reset",
        "connection aborted",
        "remote end closed",
        "name or service not known",
        "temporary failure in name resolution",
        "nodename nor servname",
        "network is unreachable",
        "no route to host",
        "ssl:",
        "certificate verify failed",
        "http error 5",
        "http error 429",
    ]) {
        Failure::Network(line)
    } else {
        Failure::Other(line)
    }
}

/// Turns yt-dlp's error text into the reason a user needs: an unusable
/// video is [`StageError::InvalidInput`], anything else a (retried) tool
/// failure.
pub fn explain_ytdlp_error(stderr: &str) -> StageError {
    match classify(stderr) {
        Failure::Refused(reason) => StageError::InvalidInput(reason),
        Failure::Network(line) | Failure::TimedOut(line) | Failure::Other(line) => {
            StageError::tool("yt-dlp", line)
        }
    }
}

/// Why the metadata of a URL could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// The video cannot be used: private, age-restricted, not found, not a
    /// video page, a live stream. The message is for the user.
    #[error("{0}")]
    Refused(String),
    /// yt-dlp could not reach the platform (network, DNS, TLS, the
    /// platform's 5xx or 429).
    #[error("the video platform could not be reached ({0}); try again later")]
    Unreachable(String),
    /// The platform, or yt-dlp, did not answer in time.
    #[error("the video platform did not answer in time ({0}); try again later")]
    TimedOut(String),
    /// yt-dlp could not be run or answered something unreadable.
    #[error("the video metadata could not be read ({0}); try again later")]
    Failed(String),
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

    #[test]
    fn network_failures_and_timeouts_are_told_apart() {
        let refused = "ERROR: [generic] Unable to download webpage: <urlopen error [Errno 111] Connection refused> (caused by URLError(ConnectionRefusedError(111, 'Connection refused')))";
        assert!(matches!(classify(refused), Failure::Network(_)));
        let dns = "ERROR: [generic] Unable to download webpage: <urlopen error [Errno -2] Name or service not known>";
        assert!(matches!(classify(dns), Failure::Network(_)));
        let down =
            "ERROR: [youtube] abc: Unable to download webpage: HTTP Error 503: Service Unavailable";
        assert!(matches!(classify(down), Failure::Network(_)));
        let slow = "ERROR: [generic] Unable to download webpage: The read operation timed out";
        assert!(matches!(classify(slow), Failure::TimedOut(_)));
        let gone = "ERROR: [generic] Unable to download webpage: HTTP Error 404: Not Found";
        assert!(matches!(classify(gone), Failure::Refused(_)));
        assert!(matches!(classify("ERROR: boom"), Failure::Other(_)));
    }

    #[test]
    fn metadata_languages_become_codes() {
        assert_eq!(language_code("en-US").as_deref(), Some("en"));
        assert_eq!(language_code(" DE ").as_deref(), Some("de"));
        assert_eq!(language_code("pt_BR").as_deref(), Some("pt"));
        assert_eq!(language_code("haw").as_deref(), Some("haw"));
        for none in ["und", "", "x", "english", "e1", "zxx"] {
            assert_eq!(language_code(none), None, "{none}");
        }
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

/// The language code to give transcription for a source's metadata
/// language: its primary subtag in lower case (`en-US` → `en`); `None` for
/// the "no/unknown language" codes (`und`, `zxx`, `mul`, `mis`) and
/// anything that is not 2–3 ASCII letters.
pub fn language_code(raw: &str) -> Option<String> {
    let primary = raw.trim().split(['-', '_']).next()?.to_ascii_lowercase();
    let letters =
        (2..=3).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_lowercase());
    (letters && !matches!(primary.as_str(), "und" | "zxx" | "mul" | "mis")).then_some(primary)
}

/// Metadata from yt-dlp's JSON dump, without downloading the video; gives
/// up after `timeout`.
pub async fn metadata(
    url: &str,
    timeout: std::time::Duration,
    cancel: &CancellationToken,
) -> Result<VideoMeta, MetaError> {
    let socket_timeout = timeout.as_secs().clamp(1, 30).to_string();
    let args: Vec<String> = [
        "-J",
        "--no-playlist",
        "--skip-download",
        "--no-warnings",
        "--socket-timeout",
        &socket_timeout,
        "--",
        url,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = tokio::time::timeout(timeout, super::process::run("yt-dlp", &args, cancel))
        .await
        .map_err(|_| MetaError::TimedOut(format!("no answer within {} s", timeout.as_secs())))?
        .map_err(|e| MetaError::Failed(e.to_string()))?;
    if !out.status.success() {
        return Err(match classify(&out.stderr) {
            Failure::Refused(reason) => MetaError::Refused(reason),
            Failure::Network(line) => MetaError::Unreachable(line),
            Failure::TimedOut(line) => MetaError::TimedOut(line),
            Failure::Other(line) => {
                MetaError::Refused(format!("the video is unavailable: yt-dlp failed: {line}"))
            }
        });
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| MetaError::Failed(format!("unexpected yt-dlp output: {e}")))?;
    if v.get("age_limit").and_then(|a| a.as_u64()).unwrap_or(0) >= 18 {
        return Err(MetaError::Refused("the video is age-restricted".into()));
    }
    if v.get("availability").and_then(|a| a.as_str()) == Some("private") {
        return Err(MetaError::Refused("the video is private".into()));
    }
    let duration_sec = v.get("duration").and_then(|d| d.as_f64()).unwrap_or(0.0);
    if duration_sec <= 0.0 && v.get("is_live").and_then(|l| l.as_bool()) == Some(true) {
        return Err(MetaError::Refused(
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
