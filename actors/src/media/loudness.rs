//! Loudness normalization to the level short-video platforms play at
//! (−14 LUFS integrated, EBU R128 as measured by ffmpeg), in two passes: a
//! first ffmpeg run measures the clip's audio with `loudnorm`, and the encode
//! applies `loudnorm` with those measured values (linear gain when the
//! target is reachable without passing the true-peak ceiling, so the dynamics
//! are kept).

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::media::process::{last_error_line, run};
use crate::project::stages::StageError;

/// Integrated loudness every clip is normalized to (LUFS).
pub const TARGET_LUFS: f64 = -14.0;
/// True-peak ceiling (dBTP).
pub const TRUE_PEAK: f64 = -1.0;
/// Loudness range target (LU); loudnorm only compresses above it.
pub const LOUDNESS_RANGE: f64 = 11.0;
/// Audio quieter than this (LUFS) is silence: it is left alone rather than
/// amplified into noise.
pub const SILENCE_LUFS: f64 = -60.0;

/// What the measuring pass found.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub integrated: f64,
    pub true_peak: f64,
    pub range: f64,
    pub threshold: f64,
    pub offset: f64,
}

/// loudnorm's JSON report; it prints every number as a string.
#[derive(Deserialize)]
struct Report {
    input_i: String,
    input_tp: String,
    input_lra: String,
    input_thresh: String,
    target_offset: String,
}

fn target() -> String {
    format!("I={TARGET_LUFS}:TP={TRUE_PEAK}:LRA={LOUDNESS_RANGE}")
}

/// Measures the audio of `input` between `start` and `start + duration`
/// seconds after the audio filters `pre` (e.g. the cuts of filler removal;
/// empty for none). `None` when the audio is silent.
pub async fn measure(
    input: &std::path::Path,
    start: f64,
    duration: f64,
    pre: &str,
    cancel: &CancellationToken,
) -> Result<Option<Measured>, StageError> {
    let chain = if pre.is_empty() {
        format!("loudnorm={}:print_format=json", target())
    } else {
        format!("{pre},loudnorm={}:print_format=json", target())
    };
    let args: Vec<String> = [
        "-nostdin",
        "-hide_banner",
        "-nostats",
        "-v",
        "info",
        "-ss",
        &format!("{start:.3}"),
        "-t",
        &format!("{duration:.3}"),
        "-i",
        &input.to_string_lossy(),
        "-map",
        "0:a:0",
        "-af",
        &chain,
        "-f",
        "null",
        "-",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let finished = run("ffmpeg", &args, cancel).await?;
    if !finished.status.success() {
        return Err(StageError::tool(
            "ffmpeg",
            format!("measuring loudness: {}", last_error_line(&finished.stderr)),
        ));
    }
    parse_report(&finished.stderr)
        .map_err(|e| StageError::tool("ffmpeg", format!("reading the loudness report: {e}")))
}

/// The last JSON object in loudnorm's output; `None` for silence.
pub fn parse_report(stderr: &str) -> Result<Option<Measured>, String> {
    let open = stderr.rfind('{').ok_or("no report")?;
    let close = stderr[open..].find('}').ok_or("unterminated report")? + open;
    let report: Report = serde_json::from_str(&stderr[open..=close]).map_err(|e| e.to_string())?;
    // Silence reads "-inf"; Rust parses that as negative infinity.
    let num = |s: &str| s.trim().parse::<f64>().unwrap_or(f64::NEG_INFINITY);
    let m = Measured {
        integrated: num(&report.input_i),
        true_peak: num(&report.input_tp),
        range: num(&report.input_lra),
        threshold: num(&report.input_thresh),
        offset: num(&report.target_offset),
    };
    let usable = m.integrated.is_finite()
        && m.integrated > SILENCE_LUFS
        && m.true_peak.is_finite()
        && m.range.is_finite()
        && m.threshold.is_finite()
        && m.offset.is_finite();
    Ok(usable.then_some(m))
}

/// The second-pass filter for measured audio, resampled back to `rate` Hz
/// (loudnorm works at 192 kHz).
pub fn normalize_filter(m: &Measured, rate: u32) -> String {
    format!(
        "loudnorm={}:measured_I={:.2}:measured_TP={:.2}:measured_LRA={:.2}:measured_thresh={:.2}:offset={:.2}:linear=true:print_format=none,aresample={rate}",
        target(),
        m.integrated,
        m.true_peak,
        m.range,
        m.threshold,
        m.offset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"[Parsed_loudnorm_0 @ 0x55] 
{
	"input_i" : "-27.61",
	"input_tp" : "-9.58",
	"input_lra" : "0.10",
	"input_thresh" : "-37.62",
	"output_i" : "-14.36",
	"output_tp" : "-1.00",
	"output_lra" : "0.00",
	"output_thresh" : "-24.37",
	"normalization_type" : "dynamic",
	"target_offset" : "0.36"
}
"#;

    #[test]
    fn report_is_parsed_and_becomes_the_second_pass() {
        let m = parse_report(REPORT).unwrap().unwrap();
        assert_eq!(m.integrated, -27.61);
        assert_eq!(m.offset, 0.36);
        let f = normalize_filter(&m, 48000);
        assert!(
            f.starts_with("loudnorm=I=-14:TP=-1:LRA=11:measured_I=-27.61:"),
            "{f}"
        );
        assert!(
            f.ends_with(":linear=true:print_format=none,aresample=48000"),
            "{f}"
        );
    }

    #[test]
    fn silence_is_not_normalized() {
        let silent = REPORT.replace("\"-27.61\"", "\"-inf\"");
        assert_eq!(parse_report(&silent).unwrap(), None);
        assert!(parse_report("no json here").is_err());
    }

    /// A quiet tone, normalized the way the caption stage does it, measures
    /// −14 LUFS ±1 LU afterwards (ffmpeg's ebur128).
    #[tokio::test]
    async fn a_quiet_tone_comes_out_at_minus_14_lufs() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("quiet.wav");
        let ok = std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
            .arg("sine=frequency=440:duration=8:sample_rate=44100,volume=0.1")
            .arg(&src)
            .status()
            .unwrap();
        assert!(ok.success());
        let cancel = CancellationToken::new();
        let before = integrated_lufs(&src);
        assert!(before < -30.0, "the source is quiet: {before}");
        let m = measure(&src, 1.0, 6.0, "", &cancel).await.unwrap().unwrap();
        assert!((m.integrated - before).abs() < 1.5, "{m:?} vs {before}");
        let out = dir.path().join("out.m4a");
        let ok = std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-y", "-v", "error", "-ss", "1", "-t", "6", "-i"])
            .arg(&src)
            .args(["-af", &normalize_filter(&m, 48000)])
            .args(["-c:a", "aac", "-b:a", "128k", "-ac", "2", "-ar", "48000"])
            .arg(&out)
            .status()
            .unwrap();
        assert!(ok.success());
        let after = integrated_lufs(&out);
        assert!((after - TARGET_LUFS).abs() <= 1.0, "output at {after} LUFS");
    }

    /// Integrated loudness of a file by ffmpeg's ebur128 filter.
    pub(crate) fn integrated_lufs(path: &std::path::Path) -> f64 {
        let out = std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-hide_banner", "-nostats", "-i"])
            .arg(path)
            .args(["-map", "0:a:0", "-af", "ebur128", "-f", "null", "-"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        let summary = &text[text.rfind("Summary:").expect("ebur128 summary")..];
        let line = summary
            .lines()
            .find(|l| l.trim_start().starts_with("I:"))
            .expect("integrated loudness line");
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}
