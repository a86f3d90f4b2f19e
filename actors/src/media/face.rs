//! Face analysis for reframing: every face found by `rustface` (SeetaFace,
//! model embedded in the binary) on small grey frames sampled from the clip
//! at [`SAMPLE_FPS`], the motion of each face's mouth region measured on
//! frames in between (at [`MOTION_FPS`], only when asked: the active
//! speaker needs it, a crop that follows a face does not), and a smoothed
//! crop path that follows one face.
//!
//! The whole frame is searched on every [`FULL_EVERY`]th sample and on every
//! sample after one without a face; in between only a square around each
//! face of the previous sample is ([`ROI_SCALE`] face widths a side, at
//! least [`ROI_MARGIN`] of the frame's width around the face), which finds
//! the same faces at about a tenth of the cost while they move less than
//! that margin (or a face width) per sample. A face that appears elsewhere
//! is found by the next full search, at most `FULL_EVERY - 1` samples later.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use tokio_util::sync::CancellationToken;

use super::process::{kill_group, std_command};
use crate::stage::StageError;

static MODEL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seeta_fd_frontal_v1.0.bin"));

/// Detections per second.
pub const SAMPLE_FPS: f64 = 1.0;
/// Frames per second decoded for mouth motion (a multiple of `SAMPLE_FPS`).
pub const MOTION_FPS: f64 = 5.0;
const FRAMES_PER_SAMPLE: usize = (MOTION_FPS / SAMPLE_FPS) as usize;
/// Width of the grey frames the detector sees.
const DETECT_WIDTH: u32 = 640;
/// Decoded frames queued ahead of the detector (2 s at `MOTION_FPS`).
const READ_AHEAD: usize = 10;
/// Every this many samples the whole frame is searched.
pub const FULL_EVERY: usize = 5;
/// Side of the square searched around a known face: this many face
/// widths…
pub const ROI_SCALE: f64 = 3.0;
/// …but at least the face plus this share of the frame's width on each
/// side (how far a face may move in a sample's time and still be found).
pub const ROI_MARGIN: f64 = 0.08;
/// Smallest such square (px of the detection frame): the detector's
/// window is 40 px.
const ROI_MIN: u32 = 96;

/// A face in one sampled frame, in 0..1 frame coordinates (`size` is the
/// box's width as a share of the frame's width).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Face {
    pub cx: f64,
    pub cy: f64,
    pub size: f64,
}

/// The largest face of each sample, one per 1/SAMPLE_FPS seconds.
pub type FaceSamples = Vec<Option<Face>>;

/// What the detector saw over a clip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaceAnalysis {
    /// Every face of each sample (1/SAMPLE_FPS s apart), largest first.
    pub faces: Vec<Vec<Face>>,
    /// Per frame at MOTION_FPS: the mouth-region motion (mean absolute grey
    /// difference from the previous frame, 0..255) of each face of the
    /// sample the frame belongs to (`faces[frame / FRAMES_PER_SAMPLE]`).
    /// Empty when motion was not asked for ([`track_faces`]).
    pub mouth: Vec<Vec<f64>>,
    /// Source frame size, for pixel conversions.
    pub width: u32,
    pub height: u32,
}

impl FaceAnalysis {
    /// The largest face of each sample.
    pub fn largest(&self) -> FaceSamples {
        self.faces.iter().map(|f| f.first().copied()).collect()
    }

    /// The sample a motion frame belongs to.
    pub fn sample_of_frame(frame: usize) -> usize {
        frame / FRAMES_PER_SAMPLE
    }
}

/// Samples the clip `[start, start+duration)` of `input`: every face of each
/// sample and the mouth motion in between.
pub async fn track(
    input: &Path,
    start: f64,
    duration: f64,
    src_w: u32,
    src_h: u32,
    cancel: &CancellationToken,
) -> Result<FaceAnalysis, StageError> {
    track_with(input, start, duration, (src_w, src_h), true, cancel).await
}

/// Like [`track`], without the mouth motion: only the sampled frames are
/// decoded and searched (`mouth` stays empty).
pub async fn track_faces(
    input: &Path,
    start: f64,
    duration: f64,
    src_w: u32,
    src_h: u32,
    cancel: &CancellationToken,
) -> Result<FaceAnalysis, StageError> {
    track_with(input, start, duration, (src_w, src_h), false, cancel).await
}

async fn track_with(
    input: &Path,
    start: f64,
    duration: f64,
    src: (u32, u32),
    motion: bool,
    cancel: &CancellationToken,
) -> Result<FaceAnalysis, StageError> {
    let input = input.to_path_buf();
    let cancel = cancel.clone();
    tokio::task::spawn_blocking(move || {
        track_blocking(&input, start, duration, src, motion, &cancel)
    })
    .await
    .map_err(|e| StageError::Io(format!("face tracking stopped: {e}")))?
}

fn track_blocking(
    input: &Path,
    start: f64,
    duration: f64,
    (src_w, src_h): (u32, u32),
    motion: bool,
    cancel: &CancellationToken,
) -> Result<FaceAnalysis, StageError> {
    let w = DETECT_WIDTH.min(src_w.max(2)) / 2 * 2;
    let h = ((w as f64 * src_h as f64 / src_w.max(1) as f64 / 2.0).round() as u32 * 2).max(2);
    let (fps, per_sample) = match motion {
        true => (MOTION_FPS, FRAMES_PER_SAMPLE),
        false => (SAMPLE_FPS, 1),
    };
    let mut cmd = std_command("ffmpeg");
    cmd.args(["-nostdin", "-v", "error", "-ss", &format!("{start:.3}")])
        .arg("-i")
        .arg(input)
        .args(["-t", &format!("{duration:.3}"), "-an", "-sn", "-dn"])
        .args(["-vf", &format!("fps={fps},scale={w}:{h},format=gray")])
        .args(["-f", "rawvideo", "pipe:1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| StageError::tool("ffmpeg", e.to_string()))?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    // Without mouth motion every frame is a sample: they are searched on
    // two threads, each with its own detector; with it, here in order.
    let (mut detector, mut searchers) = match motion {
        true => (Some(Detector::new(w, h)?), None),
        false => (None, Some(Searchers::start(w, h))),
    };

    let frame_len = (w * h) as usize;
    // Frames are read on their own thread so ffmpeg keeps decoding while a
    // sample is being searched for faces (the pipe holds less than a frame).
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(READ_AHEAD);
    let reader = std::thread::spawn(move || loop {
        let mut frame = vec![0u8; frame_len];
        match stdout.read_exact(&mut frame) {
            Ok(()) => {
                if tx.send(Ok(frame)).is_err() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => {
                let _ = tx.send(Err(e));
                break;
            }
        }
    });
    let mut prev: Option<Vec<u8>> = None;
    let mut out = FaceAnalysis {
        width: src_w,
        height: src_h,
        ..FaceAnalysis::default()
    };
    let mut index = 0usize;
    loop {
        if cancel.is_cancelled() {
            kill_group(child.id());
            let _ = child.wait();
            drop(rx);
            let _ = reader.join();
            return Err(StageError::Cancelled);
        }
        let frame = match rx.recv() {
            Ok(Ok(frame)) => frame,
            Ok(Err(e)) => {
                kill_group(child.id());
                let _ = child.wait();
                return Err(StageError::io("reading frames", e));
            }
            Err(_) => break,
        };
        if let Some(s) = searchers.as_mut() {
            if let Err(e) = s.send(frame) {
                kill_group(child.id());
                let _ = child.wait();
                return Err(e);
            }
            index += 1;
            continue;
        }
        if let (0, Some(d)) = (index % per_sample, detector.as_mut()) {
            let faces = d.sample(&frame, out.faces.len(), out.faces.last());
            out.faces.push(faces);
        }
        if motion {
            let faces = out.faces.last().map(Vec::as_slice).unwrap_or(&[]);
            let moved = faces
                .iter()
                .map(|f| match &prev {
                    Some(p) => mouth_motion(p, &frame, w, h, f),
                    None => 0.0,
                })
                .collect();
            out.mouth.push(moved);
            prev = Some(frame);
        }
        index += 1;
    }
    let _ = reader.join();
    let _ = child.wait();
    if let Some(s) = searchers {
        out.faces = s.finish()?;
    }
    Ok(out)
}

/// Searchers of the samples of a clip on [`SEARCHERS`] threads. The samples
/// fall into runs of [`FULL_EVERY`] that each begin with a full search, and
/// run `r` goes to searcher `r % SEARCHERS`, which takes its samples in
/// order: every sample is searched exactly as one detector going through
/// them all would (the same faces), in about half the time on two cores.
struct Searchers {
    to: Vec<std::sync::mpsc::SyncSender<(usize, Vec<u8>)>>,
    from: std::sync::mpsc::Receiver<(usize, Vec<Face>)>,
    threads: Vec<std::thread::JoinHandle<Result<(), StageError>>>,
    sent: usize,
}

const SEARCHERS: usize = 2;

impl Searchers {
    fn start(w: u32, h: u32) -> Self {
        let (done, from) = std::sync::mpsc::channel();
        let mut to = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..SEARCHERS {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(FULL_EVERY);
            let done = done.clone();
            threads.push(std::thread::spawn(move || {
                // rustface's detector cannot move between threads: each
                // searcher makes its own.
                let mut detector = Detector::new(w, h)?;
                let mut last: Option<Vec<Face>> = None;
                for (n, frame) in rx {
                    let faces = detector.sample(&frame, n, last.as_ref());
                    last = Some(faces.clone());
                    if done.send((n, faces)).is_err() {
                        break;
                    }
                }
                Ok(())
            }));
            to.push(tx);
        }
        Self {
            to,
            from,
            threads,
            sent: 0,
        }
    }

    /// Queues the next sample (waits while its searcher is a run behind).
    fn send(&mut self, frame: Vec<u8>) -> Result<(), StageError> {
        let n = self.sent;
        self.sent += 1;
        self.to[(n / FULL_EVERY) % self.to.len()]
            .send((n, frame))
            .map_err(|_| StageError::Io("the face search stopped".into()))
    }

    /// Every sample's faces, in order.
    fn finish(self) -> Result<Vec<Vec<Face>>, StageError> {
        let Self {
            to,
            from,
            threads,
            sent,
        } = self;
        drop(to);
        let mut faces: Vec<Option<Vec<Face>>> = vec![None; sent];
        for (n, f) in from.iter() {
            if let Some(slot) = faces.get_mut(n) {
                *slot = Some(f);
            }
        }
        for t in threads {
            t.join()
                .map_err(|_| StageError::Io("the face search failed".into()))??;
        }
        faces
            .into_iter()
            .map(|f| f.ok_or_else(|| StageError::Io("a face sample was not searched".into())))
            .collect()
    }
}

/// The face detector on `w`x`h` grey frames: a full search or one around
/// the previous sample's faces (see the module's documentation).
struct Detector {
    inner: Box<dyn rustface::Detector>,
    w: u32,
    h: u32,
    /// The square around a face, copied out of the frame.
    roi: Vec<u8>,
}

impl Detector {
    fn new(w: u32, h: u32) -> Result<Self, StageError> {
        let model =
            rustface::read_model(MODEL).map_err(|e| StageError::Io(format!("face model: {e}")))?;
        let mut inner = rustface::create_detector_with_model(model);
        inner.set_score_thresh(2.0);
        inner.set_pyramid_scale_factor(0.8);
        inner.set_slide_window_step(4, 4);
        Ok(Self {
            inner,
            w,
            h,
            roi: Vec::new(),
        })
    }

    /// Every face of sample number `n`, largest first.
    fn sample(&mut self, frame: &[u8], n: usize, previous: Option<&Vec<Face>>) -> Vec<Face> {
        let mut faces = match previous {
            Some(prev) if n % FULL_EVERY != 0 && !prev.is_empty() => {
                let mut found: Vec<Face> = Vec::new();
                for p in prev {
                    for f in self.around(frame, p) {
                        if !found.iter().any(|o| self.same_face(o, &f)) {
                            found.push(f);
                        }
                    }
                }
                found
            }
            _ => self.search(frame, 0, 0, self.w, self.h),
        };
        faces.sort_by(|a, b| b.size.total_cmp(&a.size));
        faces
    }

    /// Faces inside the square around `face`.
    fn around(&mut self, frame: &[u8], face: &Face) -> Vec<Face> {
        let (w, h) = (self.w, self.h);
        let px = face.size * w as f64;
        let side = ((px * ROI_SCALE).max(px + 2.0 * ROI_MARGIN * w as f64) as u32)
            .max(ROI_MIN)
            .min(w.min(h));
        let x0 = ((face.cx * w as f64 - side as f64 / 2.0).round().max(0.0) as u32).min(w - side);
        let y0 = ((face.cy * h as f64 - side as f64 / 2.0).round().max(0.0) as u32).min(h - side);
        let mut roi = std::mem::take(&mut self.roi);
        roi.clear();
        for y in y0..y0 + side {
            let row = (y * w + x0) as usize;
            roi.extend_from_slice(&frame[row..row + side as usize]);
        }
        let found = self.search(&roi, x0, y0, side, side);
        self.roi = roi;
        found
    }

    /// Two detections of one face (from overlapping squares): centres
    /// closer than half the larger box, in pixels.
    fn same_face(&self, a: &Face, b: &Face) -> bool {
        let half = a.size.max(b.size) * self.w as f64 / 2.0;
        (a.cx - b.cx).abs() * (self.w as f64) < half && (a.cy - b.cy).abs() * (self.h as f64) < half
    }

    /// Faces in `image` (`iw`x`ih`, at `(x0, y0)` of the frame), in frame
    /// coordinates.
    fn search(&mut self, image: &[u8], x0: u32, y0: u32, iw: u32, ih: u32) -> Vec<Face> {
        let (w, h) = (self.w as f64, self.h as f64);
        self.inner
            .detect(&rustface::ImageData::new(image, iw, ih))
            .into_iter()
            .map(|f| {
                let b = f.bbox();
                Face {
                    cx: (x0 as f64 + b.x() as f64 + b.width() as f64 / 2.0) / w,
                    cy: (y0 as f64 + b.y() as f64 + b.height() as f64 / 2.0) / h,
                    size: b.width() as f64 / w,
                }
            })
            .collect()
    }
}

/// Mean absolute difference between two grey frames in the mouth region of
/// `face`: the lower third of the box, its middle half horizontally (the
/// detector's box is about square and spans brows to chin).
fn mouth_motion(a: &[u8], b: &[u8], w: u32, h: u32, face: &Face) -> f64 {
    let side = face.size * w as f64;
    let (cx, cy) = (face.cx * w as f64, face.cy * h as f64);
    let x0 = (cx - side / 4.0).max(0.0) as usize;
    let x1 = ((cx + side / 4.0) as usize).min(w as usize);
    let y0 = (cy + side / 6.0).max(0.0) as usize;
    let y1 = ((cy + side / 2.0) as usize).min(h as usize);
    let mut sum = 0u64;
    let mut n = 0u64;
    for y in y0..y1 {
        let row = y * w as usize;
        for x in x0..x1 {
            sum += (a[row + x] as i32 - b[row + x] as i32).unsigned_abs() as u64;
            n += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        sum as f64 / n as f64
    }
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
