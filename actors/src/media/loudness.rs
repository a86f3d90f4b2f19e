//! Loudness normalization to the level short-video platforms play at
//! (−14 LUFS integrated, EBU R128 as measured by ffmpeg). ffmpeg's `loudnorm`
//! measures the clip's audio (pass 1); its second pass with those values is
//! linear where the −1 dBTP ceiling allows, but on short, peaky speech it
//! falls back to dynamic mode and lands 1–2 LU short, so that second pass is
//! run once on the audio alone (pass 2) and what it still misses is made up
//! by a gain and a peak limiter after it. The encode applies the result.

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::media::process::{last_error_line, run};
use crate::stage::StageError;

/// Integrated loudness every clip is normalized to (LUFS).
pub const TARGET_LUFS: f64 = -14.0;
/// True-peak ceiling (dBTP).
pub const TRUE_PEAK: f64 = -1.0;
/// Loudness range target (LU); loudnorm only compresses above it.
pub const LOUDNESS_RANGE: f64 = 11.0;
/// Audio quieter than this (LUFS) is silence: it is left alone rather than
/// amplified into noise.
pub const SILENCE_LUFS: f64 = -60.0;
/// A second pass this close to the target (LU) needs no correction.
const CLOSE_ENOUGH: f64 = 0.2;

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
    output_i: String,
}

fn target() -> String {
    format!("I={TARGET_LUFS}:TP={TRUE_PEAK}:LRA={LOUDNESS_RANGE}")
}

/// The audio filter chain that brings the audio of `input` between `start`
/// and `start + duration` seconds, after the audio filters `pre` (empty for
/// none), to [`TARGET_LUFS`], resampled to `rate` Hz; `None` when the audio
/// is silent (nothing to do).
pub async fn normalize_chain(
    input: &std::path::Path,
    start: f64,
    duration: f64,
    pre: &str,
    rate: u32,
    cancel: &CancellationToken,
) -> Result<Option<String>, StageError> {
    let range = Range {
        input,
        start,
        duration,
        pre,
    };
    let first = format!("loudnorm={}:print_format=json", target());
    let Some(m) = parse_report(&range.loudnorm(&first, cancel).await?).map_err(report_error)?
    else {
        return Ok(None);
    };
    let second = normalize_filter(&m);
    let checked = range
        .loudnorm(
            &second.replace("print_format=none", "print_format=json"),
            cancel,
        )
        .await?;
    let reached = output_loudness(&checked).map_err(report_error)?;
    Ok(Some(format!(
        "{second}{},aresample={rate}",
        correction(reached)
    )))
}

fn report_error(e: String) -> StageError {
    StageError::tool("ffmpeg", format!("reading the loudness report: {e}"))
}

/// The clip's audio, as ffmpeg input options and filters.
struct Range<'a> {
    input: &'a std::path::Path,
    start: f64,
    duration: f64,
    pre: &'a str,
}

impl Range<'_> {
    /// Runs `loudnorm` (in `filter`) over the range; its report is in the
    /// returned stderr.
    async fn loudnorm(
        &self,
        filter: &str,
        cancel: &CancellationToken,
    ) -> Result<String, StageError> {
        let chain = if self.pre.is_empty() {
            filter.to_string()
        } else {
            format!("{},{filter}", self.pre)
        };
        let args: Vec<String> = [
            "-nostdin",
            "-hide_banner",
            "-nostats",
            "-v",
            "info",
            "-ss",
            &format!("{:.3}", self.start),
            "-t",
            &format!("{:.3}", self.duration),
            "-i",
            &self.input.to_string_lossy(),
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
        Ok(finished.stderr)
    }
}

/// What follows the second pass when it ended at `reached` LUFS: the missing
/// gain and a limiter that keeps the peaks under [`TRUE_PEAK`] (nothing when
/// it is close enough).
pub fn correction(reached: f64) -> String {
    let gain = TARGET_LUFS - reached;
    if !gain.is_finite() || gain.abs() <= CLOSE_ENOUGH {
        return String::new();
    }
    let ceiling = 10f64.powf(TRUE_PEAK / 20.0);
    format!(",volume={gain:.2}dB,alimiter=limit={ceiling:.3}:level=false")
}

/// The last JSON object in loudnorm's output; `None` for silence.
pub fn parse_report(stderr: &str) -> Result<Option<Measured>, String> {
    let report = last_report(stderr)?;
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

/// The integrated loudness a second pass reached (`output_i` of its report).
pub fn output_loudness(stderr: &str) -> Result<f64, String> {
    let report = last_report(stderr)?;
    Ok(report
        .output_i
        .trim()
        .parse::<f64>()
        .unwrap_or(f64::NEG_INFINITY))
}

fn last_report(stderr: &str) -> Result<Report, String> {
    let open = stderr.rfind('{').ok_or("no report")?;
    let close = stderr[open..].find('}').ok_or("unterminated report")? + open;
    serde_json::from_str(&stderr[open..=close]).map_err(|e| e.to_string())
}

/// loudnorm's second pass with the measured values (linear when possible).
pub fn normalize_filter(m: &Measured) -> String {
    format!(
        "loudnorm={}:measured_I={:.2}:measured_TP={:.2}:measured_LRA={:.2}:measured_thresh={:.2}:offset={:.2}:linear=true:print_format=none",
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
        let f = normalize_filter(&m);
        assert!(
            f.starts_with("loudnorm=I=-14:TP=-1:LRA=11:measured_I=-27.61:"),
            "{f}"
        );
        assert!(f.ends_with(":linear=true:print_format=none"), "{f}");
        assert_eq!(output_loudness(REPORT).unwrap(), -14.36);
    }

    #[test]
    fn a_short_second_pass_is_made_up_under_the_ceiling() {
        assert_eq!(correction(-14.1), "");
        assert_eq!(
            correction(-15.37),
            ",volume=1.37dB,alimiter=limit=0.891:level=false"
        );
        assert_eq!(correction(f64::NEG_INFINITY), "");
    }

    #[test]
    fn silence_is_not_normalized() {
        let silent = REPORT.replace("\"-27.61\"", "\"-inf\"");
        assert_eq!(parse_report(&silent).unwrap(), None);
        assert!(parse_report("no json here").is_err());
    }

    /// Quiet audio normalized the way the caption stage does it (chain from
    /// [`normalize_chain`], AAC at 48 kHz) measures −14 LUFS ±1 LU afterwards
    /// by ffmpeg's ebur128: a steady tone (loudnorm's linear case) and
    /// espeak-ng speech, whose peaks make loudnorm fall back to dynamic mode.
    #[tokio::test]
    async fn quiet_audio_comes_out_at_minus_14_lufs() {
        let dir = tempfile::tempdir().unwrap();
        let tone = dir.path().join("tone.wav");
        let ok = std::process::Command::new("ffmpeg")
            .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
            .arg("sine=frequency=440:duration=8:sample_rate=44100,volume=0.1")
            .arg(&tone)
            .status()
            .unwrap();
        assert!(ok.success());
        let speech = dir.path().join("speech.wav");
        let ok = std::process::Command::new("espeak-ng")
            .args(["-v", "en-us", "-a", "60", "-w"])
            .arg(&speech)
            .arg("Short clips win attention. Captions keep people watching. Try it today!")
            .status()
            .unwrap();
        assert!(ok.success());
        let cancel = CancellationToken::new();
        for (src, start, len) in [(&tone, 1.0, 6.0), (&speech, 0.0, 4.0)] {
            let before = integrated_lufs(src);
            assert!(before < -17.0, "{src:?} is quiet: {before}");
            let chain = normalize_chain(src, start, len, "", 48000, &cancel)
                .await
                .unwrap()
                .unwrap();
            let out = dir.path().join("out.m4a");
            let ok = std::process::Command::new("ffmpeg")
                .args(["-nostdin", "-y", "-v", "error", "-ss", &start.to_string()])
                .args(["-t", &len.to_string(), "-i"])
                .arg(src)
                .args(["-af", &chain])
                .args(["-c:a", "aac", "-b:a", "128k", "-ac", "2", "-ar", "48000"])
                .arg(&out)
                .status()
                .unwrap();
            assert!(ok.success());
            let after = integrated_lufs(&out);
            assert!(
                (after - TARGET_LUFS).abs() <= 1.0,
                "{src:?}: {before} LUFS became {after} LUFS with {chain}"
            );
        }
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
