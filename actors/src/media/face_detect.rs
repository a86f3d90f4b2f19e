//! The face search of the sampled frames: `rustface` (SeetaFace, model
//! embedded in the binary) run by two searcher threads, each with its own
//! detector, and the mouth motion of the frames in between, measured once
//! their sample's faces are known. How the samples are taken and what they
//! become (a crop path, an active speaker) is [`super::face`].
//!
//! The whole frame is searched on every [`FULL_EVERY`]th sample and on every
//! sample after one without a face; in between only a square around each
//! face of the previous sample is ([`ROI_SCALE`] face widths a side, at
//! least [`ROI_MARGIN`] of the frame's width around the face, for faces up
//! to [`ROI_GROWTH`] times as wide), which finds
//! the same faces at about a tenth of the cost while they move less than
//! that margin (or a face width) per sample. A face that appears elsewhere
//! is found by the next full search, at most `FULL_EVERY - 1` samples later.

use crate::stage::StageError;

static MODEL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/seeta_fd_frontal_v1.0.bin"));

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
/// Around a known face only faces up to this many times its width are
/// looked for: the detector's pyramid then stops at that size (its
/// smaller levels, which find the larger faces, are skipped), about a
/// quarter less work a square (4.3 vs 5.8 ms for a 151 px square, measured).
/// A face that grows faster than that is found by the next full search.
const ROI_GROWTH: f64 = 1.5;
/// The detector's window (px): the smallest face it finds.
const WINDOW: f64 = 40.0;

/// A face in one sampled frame, in 0..1 frame coordinates (`size` is the
/// box's width as a share of the frame's width).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Face {
    pub cx: f64,
    pub cy: f64,
    pub size: f64,
}

/// Most frames held for mouth motion while their sample is searched (about
/// what the two searchers' queues hold: 64 frames of 640x360 are 15 MB).
pub(super) const MOTION_HELD: usize = 64;

/// The mouth motion of each frame, measured once its sample's faces are
/// known: frames wait in order, with the one before the first of them.
pub(super) struct Motion {
    w: u32,
    h: u32,
    waiting: std::collections::VecDeque<(usize, Vec<u8>)>,
    prev: Option<Vec<u8>>,
    pub(super) mouth: Vec<Vec<f64>>,
}

impl Motion {
    pub(super) fn new(w: u32, h: u32) -> Self {
        Self {
            w,
            h,
            waiting: Default::default(),
            prev: None,
            mouth: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, sample: usize, frame: Vec<u8>) {
        self.waiting.push_back((sample, frame));
    }

    pub(super) fn held(&self) -> usize {
        self.waiting.len()
    }

    /// Measures the waiting frames whose sample's faces are in `faces`, in
    /// order, up to the first whose are not.
    pub(super) fn measure(&mut self, faces: &[Option<Vec<Face>>]) {
        while let Some((sample, _)) = self.waiting.front() {
            let Some(Some(found)) = faces.get(*sample) else {
                break;
            };
            let (_, frame) = self.waiting.pop_front().expect("a front frame");
            let moved = found
                .iter()
                .map(|f| match &self.prev {
                    Some(p) => mouth_motion(p, &frame, self.w, self.h, f),
                    None => 0.0,
                })
                .collect();
            self.mouth.push(moved);
            self.prev = Some(frame);
        }
    }
}

/// Searchers of the samples of a clip on [`SEARCHERS`] threads. The samples
/// fall into runs of [`FULL_EVERY`] that each begin with a full search, and
/// run `r` goes to searcher `r % SEARCHERS`, which takes its samples in
/// order: every sample is searched exactly as one detector going through
/// them all would (the same faces), in about half the time on two cores.
pub(super) struct Searchers {
    to: Vec<std::sync::mpsc::SyncSender<(usize, Vec<u8>)>>,
    from: std::sync::mpsc::Receiver<(usize, Vec<Face>)>,
    threads: Vec<std::thread::JoinHandle<Result<(), StageError>>>,
    sent: usize,
    answered: usize,
    /// The faces of each sample sent, once its searcher has answered.
    pub(super) faces: Vec<Option<Vec<Face>>>,
}

const SEARCHERS: usize = 2;

impl Searchers {
    pub(super) fn start(w: u32, h: u32) -> Self {
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
            answered: 0,
            faces: Vec::new(),
        }
    }

    /// Queues the next sample (waits while its searcher is a run behind).
    pub(super) fn send(&mut self, frame: Vec<u8>) -> Result<(), StageError> {
        let n = self.sent;
        self.sent += 1;
        self.faces.push(None);
        self.to[(n / FULL_EVERY) % self.to.len()]
            .send((n, frame))
            .map_err(|_| StageError::Io("the face search stopped".into()))
    }

    /// Takes in the answers there are; with `wait`, at least one (when one
    /// is still due). A searcher ends only when its queue closes, so one
    /// that has ended while answers are due has failed (and would leave
    /// this waiting for ever).
    pub(super) fn collect(&mut self, wait: bool) -> Result<(), StageError> {
        use std::sync::mpsc::RecvTimeoutError;
        if wait && self.answered < self.sent {
            loop {
                match self
                    .from
                    .recv_timeout(std::time::Duration::from_millis(100))
                {
                    Ok(answer) => {
                        self.take(answer);
                        break;
                    }
                    Err(RecvTimeoutError::Timeout)
                        if !self.threads.iter().any(|t| t.is_finished()) => {}
                    Err(_) => return Err(StageError::Io("the face search stopped".into())),
                }
            }
        }
        while let Ok(answer) = self.from.try_recv() {
            self.take(answer);
        }
        Ok(())
    }

    fn take(&mut self, (n, faces): (usize, Vec<Face>)) {
        if let Some(slot) = self.faces.get_mut(n) {
            self.answered += usize::from(slot.is_none());
            *slot = Some(faces);
        }
    }

    /// Every sample's faces, in order (each `Some`).
    pub(super) fn finish(self) -> Result<Vec<Option<Vec<Face>>>, StageError> {
        let Self {
            to,
            from,
            threads,
            mut faces,
            ..
        } = self;
        drop(to);
        for (n, f) in from.iter() {
            if let Some(slot) = faces.get_mut(n) {
                *slot = Some(f);
            }
        }
        for t in threads {
            t.join()
                .map_err(|_| StageError::Io("the face search failed".into()))??;
        }
        if faces.iter().any(Option::is_none) {
            return Err(StageError::Io("a face sample was not searched".into()));
        }
        Ok(faces)
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
        let largest = (px * ROI_GROWTH).max(WINDOW * ROI_GROWTH) as u32;
        self.inner.set_max_face_size(largest);
        let found = self.search(&roi, x0, y0, side, side);
        self.inner.set_max_face_size(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_model_loads() {
        assert!(rustface::read_model(MODEL).is_ok());
    }
}
