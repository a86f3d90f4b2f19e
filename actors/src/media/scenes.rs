//! Scene changes from ffmpeg's scene detection (`select='gt(scene,T)'`),
//! measured on downscaled key frames only. Encoders put a key frame at every
//! shot change they see (x264's scenecut, libvpx's auto alt-ref), so comparing
//! consecutive key frames finds cuts at a small fraction of the cost of
//! decoding every frame of a long video (on one decoding thread).

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::process::{last_error_line, progress_seconds, run_on};
use super::spare_cpu::SpareCpu;
use crate::stage::{Progress, StageError};

/// Scene score above which a frame starts a new shot.
pub const SCENE_THRESHOLD: f64 = 0.3;

/// Times (seconds from `start`) of scene changes in `[start, start + duration)`;
/// with `spare`, ffmpeg runs on spare CPU only (until it is raised).
pub async fn detect(
    input: &Path,
    (start, duration): (f64, f64),
    cancel: &CancellationToken,
    progress: &Progress,
    spare: Option<&SpareCpu>,
) -> Result<Vec<f64>, StageError> {
    let list = tempfile::NamedTempFile::new().map_err(|e| StageError::io("temp file", e))?;
    let list_path = list
        .path()
        .to_string_lossy()
        .replace('\\', "/")
        .replace('\'', "");
    let filter = format!(
        "scale=160:-2:flags=area,select='gt(scene\\,{SCENE_THRESHOLD})',metadata=print:file='{list_path}'"
    );
    let mut args: Vec<String> = vec!["-nostdin".into(), "-v".into(), "error".into()];
    if start > 0.0 {
        args.extend(["-ss".into(), format!("{start:.3}")]);
    }
    // One decoding thread: with frame threads, skipping the frames between
    // key frames made the decode over twice as slow (a 10-minute 720p video
    // with 60 key frames: 1.46–1.54 s against 0.66–0.71 s, measured).
    args.extend([
        "-skip_frame".into(),
        "nokey".into(),
        "-threads".into(),
        "1".into(),
        "-i".into(),
        input.to_string_lossy().into_owned(),
    ]);
    args.extend(["-t".into(), format!("{duration:.3}")]);
    args.extend(
        [
            "-an",
            "-sn",
            "-dn",
            "-vf",
            &filter,
            "-f",
            "null",
            "-progress",
            "pipe:1",
            "-nostats",
            "-",
        ]
        .map(String::from),
    );
    let out = run_on("ffmpeg", &args, cancel, spare, |line| {
        if let Some(t) = progress_seconds(line) {
            progress.set(t / duration.max(0.001));
        }
    })
    .await?;
    if !out.status.success() {
        return Err(StageError::tool(
            "ffmpeg",
            format!("scene detection: {}", last_error_line(&out.stderr)),
        ));
    }
    let text = std::fs::read_to_string(list.path())
        .map_err(|e| StageError::io("reading scene list", e))?;
    Ok(parse_metadata_times(&text))
}

/// Reads `pts_time:` values from ffmpeg's `metadata=print` output.
pub(crate) fn parse_metadata_times(text: &str) -> Vec<f64> {
    let mut times: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find_map(|f| f.strip_prefix("pts_time:"))
        })
        .filter_map(|v| v.parse::<f64>().ok())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times.dedup();
    times
}

#[cfg(test)]
mod tests {
    #[test]
    fn metadata_lines_parse() {
        let text = "frame:0    pts:38400   pts_time:3.2\nlavfi.scene_score=0.41\nframe:1 pts:80 pts_time:1.5\n";
        assert_eq!(super::parse_metadata_times(text), vec![1.5, 3.2]);
    }

    /// A test pattern, then colour bars from 3 s on (x264 puts a key
    /// frame at the cut): the one change is found, on one decoding thread.
    #[tokio::test]
    async fn the_cut_between_two_shots_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let video = dir.path().join("shots.mp4");
        let ok = std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
            .arg("testsrc2=s=320x240:r=25:d=3")
            .args(["-f", "lavfi", "-i", "smptehdbars=s=320x240:r=25:d=3"])
            .args([
                "-filter_complex",
                "[0:v]format=yuv420p[a];[1:v]format=yuv420p[b];[a][b]concat=n=2:v=1:a=0[v]",
                "-map",
                "[v]",
            ])
            .args([
                "-c:v", "libx264", "-preset", "veryfast", "-g", "250", "-pix_fmt", "yuv420p",
            ])
            .arg(&video)
            .status()
            .unwrap();
        assert!(ok.success());
        let cancel = tokio_util::sync::CancellationToken::new();
        let progress = crate::stage::Progress::new(|_| {});
        let cuts = super::detect(&video, (0.0, 6.0), &cancel, &progress, None)
            .await
            .unwrap();
        assert_eq!(cuts.len(), 1, "{cuts:?}");
        assert!((cuts[0] - 3.0).abs() < 0.1, "{cuts:?}");
        // The same on spare CPU (as the transcribe stage runs it).
        if let Some(spare) = crate::media::spare_cpu::SpareCpu::new() {
            let spare_cuts = super::detect(&video, (0.0, 6.0), &cancel, &progress, Some(&spare))
                .await
                .unwrap();
            assert_eq!(spare_cuts, cuts);
        }
    }
}
