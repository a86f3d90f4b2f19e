//! Face tracking for the 9:16 reframe: faces found by `rustface` (SeetaFace,
//! model embedded in the binary) on small grey frames sampled from the clip,
//! then a smoothed crop path that follows the main face.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use tokio_util::sync::CancellationToken;

use super::process::{kill_group, std_command};
use crate::project::stages::StageError;

static MODEL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seeta_fd_frontal_v1.0.bin"));

/// Frames per second sampled for face detection.
pub const SAMPLE_FPS: f64 = 1.0;
/// Width of the grey frames the detector sees.
const DETECT_WIDTH: u32 = 480;

/// The main face in one sampled frame, in 0..1 frame coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Face {
    pub cx: f64,
    pub cy: f64,
    pub size: f64,
}

/// One sample per 1/SAMPLE_FPS seconds from the clip's start.
pub type FaceSamples = Vec<Option<Face>>;

/// Samples the clip `[start, start+duration)` of `input` and finds the
/// largest face in each sample.
pub async fn track(
    input: &Path,
    start: f64,
    duration: f64,
    src_w: u32,
    src_h: u32,
    cancel: &CancellationToken,
) -> Result<FaceSamples, StageError> {
    let input = input.to_path_buf();
    let cancel = cancel.clone();
    tokio::task::spawn_blocking(move || {
        track_blocking(&input, start, duration, src_w, src_h, &cancel)
    })
    .await
    .map_err(|e| StageError::Io(format!("face tracking stopped: {e}")))?
}

fn track_blocking(
    input: &Path,
    start: f64,
    duration: f64,
    src_w: u32,
    src_h: u32,
    cancel: &CancellationToken,
) -> Result<FaceSamples, StageError> {
    let w = DETECT_WIDTH.min(src_w.max(2)) / 2 * 2;
    let h = ((w as f64 * src_h as f64 / src_w.max(1) as f64 / 2.0).round() as u32 * 2).max(2);
    let mut cmd = std_command("ffmpeg");
    cmd.args(["-nostdin", "-v", "error", "-ss", &format!("{start:.3}")])
        .arg("-i")
        .arg(input)
        .args(["-t", &format!("{duration:.3}"), "-an", "-sn", "-dn"])
        .args([
            "-vf",
            &format!("fps={SAMPLE_FPS},scale={w}:{h},format=gray"),
        ])
        .args(["-f", "rawvideo", "pipe:1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| StageError::tool("ffmpeg", e.to_string()))?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let model =
        rustface::read_model(MODEL).map_err(|e| StageError::Io(format!("face model: {e}")))?;
    let mut detector = rustface::create_detector_with_model(model);
    detector.set_min_face_size(((h.min(w) as f64) * 0.06).max(20.0) as u32);
    detector.set_score_thresh(2.0);
    detector.set_pyramid_scale_factor(0.8);
    detector.set_slide_window_step(4, 4);

    let frame_len = (w * h) as usize;
    let mut frame = vec![0u8; frame_len];
    let mut out = Vec::new();
    loop {
        if cancel.is_cancelled() {
            kill_group(child.id());
            let _ = child.wait();
            return Err(StageError::Cancelled);
        }
        match stdout.read_exact(&mut frame) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(StageError::io("reading frames", e)),
        }
        let image = rustface::ImageData::new(&frame, w, h);
        let best = detector
            .detect(&image)
            .into_iter()
            .max_by_key(|f| f.bbox().width() * f.bbox().height())
            .map(|f| {
                let b = f.bbox();
                Face {
                    cx: (b.x() as f64 + b.width() as f64 / 2.0) / w as f64,
                    cy: (b.y() as f64 + b.height() as f64 / 2.0) / h as f64,
                    size: b.width() as f64 / w as f64,
                }
            });
        out.push(best);
    }
    let _ = child.wait();
    Ok(out)
}

/// Fraction of samples with a face.
pub fn face_ratio(samples: &FaceSamples) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.iter().filter(|s| s.is_some()).count() as f64 / samples.len() as f64
}

/// A smoothed horizontal path for the crop's centre (0..1 of the source
/// width), one value per sample: gaps take the nearest known face, a moving
/// average removes jitter, and a dead zone keeps the crop still while the
/// face moves only a little.
pub fn smooth_path(samples: &FaceSamples) -> Vec<f64> {
    let n = samples.len();
    if n == 0 {
        return Vec::new();
    }
    let known: Vec<(usize, f64)> = samples
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|f| (i, f.cx)))
        .collect();
    if known.is_empty() {
        return vec![0.5; n];
    }
    // Nearest known sample for every gap.
    let mut filled = vec![0.0; n];
    let mut k = 0;
    for (i, slot) in filled.iter_mut().enumerate() {
        while k + 1 < known.len()
            && (known[k + 1].0 as i64 - i as i64).abs() <= (known[k].0 as i64 - i as i64).abs()
        {
            k += 1;
        }
        *slot = known[k].1;
    }
    // Centred moving average over five samples (5 s at 1 fps).
    let radius = 2usize;
    let avg: Vec<f64> = (0..n)
        .map(|i| {
            let (a, b) = (i.saturating_sub(radius), (i + radius + 1).min(n));
            filled[a..b].iter().sum::<f64>() / (b - a) as f64
        })
        .collect();
    // Dead zone: move only when the face leaves the middle of the crop.
    const DEAD_ZONE: f64 = 0.06;
    let mut out = Vec::with_capacity(n);
    let mut cur = avg[0];
    for &a in &avg {
        if (a - cur).abs() > DEAD_ZONE {
            cur = a - DEAD_ZONE * (a - cur).signum();
        }
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn face(cx: f64) -> Option<Face> {
        Some(Face {
            cx,
            cy: 0.4,
            size: 0.2,
        })
    }

    #[test]
    fn path_fills_gaps_and_ignores_jitter() {
        let samples = vec![
            None,
            face(0.30),
            face(0.32),
            None,
            face(0.29),
            face(0.31),
            face(0.30),
        ];
        let path = smooth_path(&samples);
        assert_eq!(path.len(), samples.len());
        let spread = path.iter().cloned().fold(f64::MIN, f64::max)
            - path.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread < 1e-9, "jitter moved the crop: {path:?}");
        assert!((path[0] - 0.30).abs() < 0.03);
    }

    #[test]
    fn path_follows_a_real_move() {
        let mut samples = vec![face(0.2); 10];
        samples.extend(vec![face(0.8); 10]);
        let path = smooth_path(&samples);
        assert!(path[0] < 0.3 && path[19] > 0.7, "{path:?}");
        assert!(
            path.windows(2).all(|w| w[1] >= w[0] - 1e-12),
            "path must move one way: {path:?}"
        );
    }

    #[test]
    fn no_faces_means_centre() {
        assert_eq!(smooth_path(&vec![None; 3]), vec![0.5; 3]);
        assert_eq!(face_ratio(&vec![None, face(0.1)]), 0.5);
    }

    #[test]
    fn embedded_model_loads() {
        assert!(rustface::read_model(MODEL).is_ok());
    }
}
