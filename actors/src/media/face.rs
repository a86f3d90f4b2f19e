//! Face analysis for reframing: every face of small grey frames sampled
//! from the clip at [`SAMPLE_FPS`] (searched as [`super::face_detect`]
//! describes), the motion of each face's mouth measured on frames in
//! between ([`super::mouth`], at [`MOTION_FPS`], only when asked: the active speaker needs it,
//! a crop that follows a face does not), and a smoothed crop path that
//! follows one face.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;

use tokio_util::sync::CancellationToken;

use super::face_detect::Searchers;
pub use super::face_detect::{Face, FULL_EVERY, ROI_MARGIN, ROI_SCALE};
use super::mouth::{Motion, MOTION_HELD};
use super::process::{kill_group, std_command};
use super::scenes::parse_metadata_times;
use super::spare_cpu::SpareCpu;
use crate::stage::StageError;

/// Detections per second.
pub const SAMPLE_FPS: f64 = 1.0;
/// Frames per second decoded for mouth motion (a multiple of `SAMPLE_FPS`).
pub const MOTION_FPS: f64 = 10.0;
const FRAMES_PER_SAMPLE: usize = (MOTION_FPS / SAMPLE_FPS) as usize;
/// Width of the grey frames the detector sees.
const DETECT_WIDTH: u32 = 640;
/// Scene score (ffmpeg's `scene`, on every decoded frame at 160 px) above
/// which the face pass starts a new shot: lower than the clip selection's
/// [`super::scenes::SCENE_THRESHOLD`], which compares key frames only. On
/// the corpus its real cuts score 0.18–0.89 (the debate's cut from one
/// candidate to the split screen, both on the same blue, 0.18; the
/// vertical interview's close-up to two-shot 0.27); its shots without a
/// cut, handheld ones too, stay under 0.08.
const SHOT_THRESHOLD: f64 = 0.15;
/// Decoded frames queued ahead of the detector (2 s at `MOTION_FPS`).
const READ_AHEAD: usize = 20;

/// The largest face of each sample, one per 1/SAMPLE_FPS seconds.
pub type FaceSamples = Vec<Option<Face>>;

/// What the detector saw over a clip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaceAnalysis {
    /// Every face of each sample (1/SAMPLE_FPS s apart), largest first.
    pub faces: Vec<Vec<Face>>,
    /// Per frame at MOTION_FPS: how much each face's mouth moved since the
    /// previous frame against its head (about 1 still or nodding, well
    /// above while talking: [`super::mouth`]), for the faces of the sample
    /// the frame belongs to (`faces[frame / FRAMES_PER_SAMPLE]`).
    /// Empty when motion was not asked for ([`track_faces`]).
    pub mouth: Vec<Vec<f64>>,
    /// Source frame size, for pixel conversions.
    pub width: u32,
    pub height: u32,
    /// Shot changes (seconds from the clip's start, ascending), found on
    /// the frames decoded for the faces (every reference frame, not only
    /// the samples): a shot change starts a new subject to follow.
    pub cuts: Vec<f64>,
    /// Where a split-screen source divides its panels (share of the width),
    /// when it has a hard vertical seam near the middle.
    pub seam: Option<f64>,
}

impl FaceAnalysis {
    /// The shot (0 = before the first cut) of each sample.
    pub fn shots(&self) -> Vec<usize> {
        let mut out = vec![0; self.faces.len()];
        for (k, range) in shot_ranges(self.faces.len(), &self.cuts)
            .into_iter()
            .enumerate()
        {
            out[range].fill(k);
        }
        out
    }

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
    track_with(input, start, duration, (src_w, src_h), true, cancel, None).await
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
    track_with(input, start, duration, (src_w, src_h), false, cancel, None).await
}

/// [`track`] (`motion`) or [`track_faces`]; with `spare`, the decode and
/// the searches run on spare CPU only (until it is raised).
pub async fn track_with(
    input: &Path,
    start: f64,
    duration: f64,
    src: (u32, u32),
    motion: bool,
    cancel: &CancellationToken,
    spare: Option<&SpareCpu>,
) -> Result<FaceAnalysis, StageError> {
    let input = input.to_path_buf();
    let cancel = cancel.clone();
    let spare = spare.cloned();
    crate::tasks::blocking(move || {
        track_blocking(&input, start, duration, src, motion, &cancel, spare)
    })
    .await
}

fn track_blocking(
    input: &Path,
    start: f64,
    duration: f64,
    (src_w, src_h): (u32, u32),
    motion: bool,
    cancel: &CancellationToken,
    spare: Option<SpareCpu>,
) -> Result<FaceAnalysis, StageError> {
    let w = DETECT_WIDTH.min(src_w.max(2)) / 2 * 2;
    let h = ((w as f64 * src_h as f64 / src_w.max(1) as f64 / 2.0).round() as u32 * 2).max(2);
    let (fps, per_sample) = match motion {
        true => (MOTION_FPS, FRAMES_PER_SAMPLE),
        false => (SAMPLE_FPS, 1),
    };
    // Shot changes are scored on the same decoded frames, at 160 px, scaled
    // by area averaging: swscale's default bicubic widens its filter with
    // the factor (8x for 720p), and cost 0.57 s of CPU for 60 s of 720p25
    // against 0.24 s (the same cuts, scores within 0.004, on the corpus).
    let cut_list = tempfile::NamedTempFile::new().map_err(|e| StageError::io("temp file", e))?;
    let cut_path = cut_list
        .path()
        .to_string_lossy()
        .replace('\\', "/")
        .replace('\'', "");
    let graph = format!(
        "[0:v]split=2[f][s];[f]fps={fps},scale={w}:{h},format=gray[out];\
         [s]scale=160:-2:flags=area,select='gt(scene\\,{SHOT_THRESHOLD})',\
         metadata=print:file='{cut_path}',nullsink"
    );
    let mut cmd = pass_command(input, start, duration, &graph);
    let mut child = cmd
        .spawn()
        .map_err(|e| StageError::tool("ffmpeg", e.to_string()))?;
    if let Some(spare) = &spare {
        spare.adopt(child.id());
    }
    // The motion is measured on this (pool) thread; leaving puts it back.
    // Lowered only now: a child started from a lowered thread would sit at
    // idle priority until it has executed ffmpeg, holding a copy of every
    // open file of the server (the database's lock among them) all along.
    let _lowered = spare.as_ref().map(SpareCpu::enter);
    let mut stdout = child.stdout.take().expect("stdout is piped");
    // The samples are searched on two threads, each with its own detector.
    let mut searchers = Searchers::start(w, h, spare.clone());

    let frame_len = (w * h) as usize;
    // Frames are read on their own thread so ffmpeg keeps decoding while a
    // sample is being searched for faces (the pipe holds less than a frame).
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(READ_AHEAD);
    let reading = spare.clone();
    let reader = std::thread::spawn(move || {
        let _lowered = reading.as_ref().map(SpareCpu::enter);
        loop {
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
        }
    });
    let stop = |child: &mut std::process::Child| {
        kill_group(child.id());
        let _ = child.wait();
    };
    // With mouth motion, the frames whose sample's faces are not known yet
    // wait here (with the frame before the first of them).
    let mut motion_frames = Motion::new(w, h);
    let mut seam = SeamScore::new(w, h);
    let mut index = 0usize;
    loop {
        if cancel.is_cancelled() {
            stop(&mut child);
            drop(rx);
            let _ = reader.join();
            return Err(StageError::Cancelled);
        }
        let frame = match rx.recv() {
            Ok(Ok(frame)) => frame,
            Ok(Err(e)) => {
                stop(&mut child);
                return Err(StageError::io("reading frames", e));
            }
            Err(_) => break,
        };
        let queued = if motion {
            let sent = match index % per_sample {
                0 => {
                    seam.add(&frame);
                    searchers.send(frame.clone())
                }
                _ => Ok(()),
            };
            motion_frames.push(index / per_sample, frame);
            // Measure what can be; wait for the searchers rather than hold
            // more than MOTION_HELD frames.
            sent.and_then(|()| searchers.collect(motion_frames.held() > MOTION_HELD))
                .map(|()| motion_frames.measure(&searchers.faces))
        } else {
            seam.add(&frame);
            searchers.send(frame)
        };
        if let Err(e) = queued {
            stop(&mut child);
            return Err(e);
        }
        index += 1;
    }
    let _ = reader.join();
    let _ = child.wait();
    let faces = searchers.finish()?;
    motion_frames.measure(&faces);
    let text = std::fs::read_to_string(cut_list.path()).unwrap_or_default();
    let mut cuts: Vec<f64> = parse_metadata_times(&text)
        .into_iter()
        .filter(|t| *t > 0.0 && *t < duration)
        .collect();
    cuts.sort_by(f64::total_cmp);
    Ok(FaceAnalysis {
        cuts,
        seam: seam.seam(),
        faces: faces.into_iter().map(Option::unwrap_or_default).collect(),
        mouth: motion_frames.mouth,
        width: src_w,
        height: src_h,
    })
}

/// The face pass's ffmpeg: `[0:v]` of `[start, start + duration)` through
/// `graph`, its `[out]` as raw frames on stdout.
fn pass_command(input: &Path, start: f64, duration: f64, graph: &str) -> std::process::Command {
    let mut cmd = std_command("ffmpeg");
    // `-t` bounds the input, not the output: the shot branch ends in a
    // sink of its own, which an output's `-t` does not stop, so the input
    // was decoded to its end (a 38 s clip at 36 s of a 240 s video: 9.4 s
    // CPU, against 2.0 s when the input stops at the clip's end, measured).
    cmd.args(["-nostdin", "-v", "error", "-ss", &format!("{start:.3}")])
        .args(["-t", &format!("{duration:.3}")])
        // Frames no other frame refers to (most B-frames) are not decoded:
        // the samples then lie within a frame or two of their tick, and
        // decoding a typical web video (B-frames) costs about half
        // (measured: a 60 s 720p x264 veryfast video, 1.2 → 0.65 s CPU).
        .args(["-skip_frame", "noref"])
        .arg("-i")
        .arg(input)
        .args(["-an", "-sn", "-dn"])
        .args(["-filter_complex", graph, "-map", "[out]"])
        .args(["-f", "rawvideo", "pipe:1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// The samples (one per 1/SAMPLE_FPS s) of each shot (shot `k` lies between cuts `k - 1` and `k`).
pub fn shot_ranges(samples: usize, cuts: &[f64]) -> Vec<std::ops::Range<usize>> {
    let first_at_or_after = |t: f64| ((t * SAMPLE_FPS).ceil().max(0.0) as usize).min(samples);
    (0..=cuts.len())
        .map(|k| {
            let a = if k == 0 {
                0
            } else {
                first_at_or_after(cuts[k - 1])
            };
            let b = cuts.get(k).map_or(samples, |&c| first_at_or_after(c));
            a..b.max(a)
        })
        .collect()
}

/// A grey step this large between neighbouring pixels is an edge…
const SEAM_STEP: u8 = 24;
/// …and a column with one in this share of the rows of every sample is a
/// split screen's seam (a picture's own vertical edges are not straight
/// and full height in every sample).
const SEAM_ROWS: f64 = 0.6;

/// Counts, per column, the rows of the samples with an edge there.
struct SeamScore {
    w: usize,
    hits: Vec<u32>,
    rows: u32,
}

impl SeamScore {
    fn new(w: u32, _h: u32) -> Self {
        Self {
            w: w as usize,
            hits: vec![0; w as usize],
            rows: 0,
        }
    }

    fn add(&mut self, frame: &[u8]) {
        for row in frame.chunks_exact(self.w.max(1)).step_by(2) {
            for (x, pair) in row.windows(2).enumerate() {
                self.hits[x] += u32::from(pair[0].abs_diff(pair[1]) > SEAM_STEP);
            }
            self.rows += 1;
        }
    }

    /// The seam's position (share of the width) in the middle third.
    fn seam(&self) -> Option<f64> {
        let (a, b) = (self.w * 35 / 100, self.w * 65 / 100);
        let (x, hits) = (a..b).map(|x| (x, self.hits[x])).max_by_key(|(_, h)| *h)?;
        (self.rows > 0 && hits as f64 / self.rows as f64 >= SEAM_ROWS)
            .then(|| (x + 1) as f64 / self.w as f64)
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
pub fn smooth_path(samples: &[Option<Face>]) -> Vec<f64> {
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

    /// Two panels side by side (a split screen) have a seam; one picture
    /// with a vertical edge that is not full height has none.
    #[test]
    fn a_split_screen_has_a_seam() {
        let (w, h) = (64u32, 36u32);
        let frame = |edge_rows: u32| -> Vec<u8> {
            (0..h)
                .flat_map(|y| (0..w).map(move |x| if x >= 30 && y < edge_rows { 200 } else { 60 }))
                .collect()
        };
        let mut s = SeamScore::new(w, h);
        s.add(&frame(36));
        s.add(&frame(30));
        assert_eq!(s.seam(), Some(30.0 / 64.0));
        let mut s = SeamScore::new(w, h);
        s.add(&frame(12));
        assert_eq!(s.seam(), None);
    }

    #[test]
    fn no_faces_means_centre() {
        assert_eq!(smooth_path(&[None; 3]), vec![0.5; 3]);
        assert_eq!(face_ratio(&vec![None, face(0.1)]), 0.5);
    }

    /// The clip's length bounds the input: an output's `-t` would not stop
    /// the shot branch's sink, and the input would be decoded to its end.
    #[test]
    fn the_pass_reads_only_the_clip() {
        let cmd = super::pass_command(std::path::Path::new("in.mp4"), 36.0, 37.85, "g");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |flag: &str| args.iter().position(|a| a == flag).unwrap();
        assert!(at("-t") < at("-i"), "{args:?}");
        assert_eq!(args[at("-t") + 1], "37.850");
        assert_eq!(args.iter().filter(|a| *a == "-t").count(), 1, "{args:?}");
    }
}
