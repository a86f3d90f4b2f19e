//! The face search of the sampled frames: `rustface` (SeetaFace, model
//! embedded in the binary) run by two searcher threads, each with its own
//! detector (the mouth motion of the frames in between, measured once their
//! sample's faces are known, is [`super::mouth`]). How the samples are
//! taken and what they become (a crop path, an active speaker) is
//! [`super::face`].
//!
//! The whole frame is searched on every [`FULL_EVERY`]th sample and on every
//! sample after one without a face; in between only a square around each
//! face of the previous sample is ([`ROI_SCALE`] face widths a side, at
//! least [`ROI_MARGIN`] of the frame's width around the face, for faces
//! from 1/[`ROI_GROWTH`] to [`ROI_GROWTH`] times as wide), which finds
//! the same faces at about a tenth of the cost while they move less than
//! that margin (or a face width) per sample. A face that appears elsewhere
//! is found by the next full search, at most `FULL_EVERY - 1` samples later.
//!
//! SeetaFace sees faces from the front. A scheduled full search (or a new
//! shot's first) that finds fewer than two also runs the profile cascade
//! ([`super::profile`]) over the frame, for faces at least 1/[`PROFILE_SHARE`]
//! of its smaller side (a person turned to the other in a two-shot); around
//! a face that SeetaFace no longer finds (turned away, or found in profile
//! before), the profile cascade searches the same square.

use super::profile;
use super::spare_cpu::SpareCpu;
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
/// Around a known face only faces from 1/this to this many times its width
/// are looked for: the detector's pyramid then stops at the largest (its
/// smaller levels, which find the larger faces, are skipped: 4.3 vs 5.8 ms
/// for a 151 px square, measured), and a square around a face over 60 px is
/// first shrunk so the smallest fills the window (26 → 7.9 ms around a
/// 135-px face). A face that grows or shrinks faster than that is found by
/// the next full search.
const ROI_GROWTH: f64 = 1.5;
/// The detector's window (px): the smallest face it finds.
const WINDOW: f64 = 40.0;
/// The profile cascade's window (px).
const PROFILE_MIN: f64 = 20.0;
/// Whole-frame profile searches look for faces at least the frame's
/// smaller side over this.
const PROFILE_SHARE: f64 = 8.0;

/// A face in one sampled frame, in 0..1 frame coordinates (`size` is the
/// box's width as a share of the frame's width).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Face {
    pub cx: f64,
    pub cy: f64,
    pub size: f64,
}

/// Mean absolute grey difference (0..255) between two samples above which
/// the second is taken for a new shot, and searched whole. Measured on the
/// real-footage corpus at 1 sample/s: cuts 51–89, a moving handheld shot up
/// to 42, a still talking head 2–18; a false alarm only costs a full search.
const SHOT_CHANGE_MAD: f64 = 30.0;

/// Whether `b` looks like another shot than `a` (frames of width `w`),
/// from every 4th pixel of every 4th row.
pub(super) fn shot_changed(a: &[u8], b: &[u8], w: u32) -> bool {
    let w = w.max(1) as usize;
    let (mut sum, mut n) = (0u64, 0u64);
    for row in (0..a.len().min(b.len()) / w).step_by(4) {
        for x in (0..w).step_by(4) {
            let i = row * w + x;
            sum += a[i].abs_diff(b[i]) as u64;
            n += 1;
        }
    }
    n > 0 && sum as f64 / n as f64 > SHOT_CHANGE_MAD
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
    /// With `spare`, the searchers run on spare CPU (until it is raised).
    pub(super) fn start(w: u32, h: u32, spare: Option<SpareCpu>) -> Self {
        let (done, from) = std::sync::mpsc::channel();
        let mut to = Vec::new();
        let mut threads = Vec::new();
        for _ in 0..SEARCHERS {
            let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(FULL_EVERY);
            let done = done.clone();
            let spare = spare.clone();
            threads.push(std::thread::spawn(move || {
                let _lowered = spare.as_ref().map(SpareCpu::enter);
                // rustface's detector cannot move between threads: each
                // searcher makes its own.
                let mut detector = Detector::new(w, h)?;
                let mut last: Option<Vec<Face>> = None;
                let mut last_frame: Option<Vec<u8>> = None;
                for (n, frame) in rx {
                    // After a shot change the previous faces say nothing
                    // about where this shot's are: search the whole frame.
                    let cut = last_frame
                        .as_ref()
                        .is_some_and(|p| shot_changed(p, &frame, w));
                    let faces = detector.sample(&frame, n, last.as_ref().filter(|_| !cut));
                    last = Some(faces.clone());
                    last_frame = Some(frame);
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
    /// The square around a face, copied out of the frame, and shrunk.
    roi: Vec<u8>,
    small: Vec<u8>,
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
            small: Vec::new(),
        })
    }

    /// Every face of sample number `n`, largest first.
    fn sample(&mut self, frame: &[u8], n: usize, previous: Option<&Vec<Face>>) -> Vec<Face> {
        let mut faces = match previous {
            Some(prev) if !n.is_multiple_of(FULL_EVERY) && !prev.is_empty() => {
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
            _ => {
                let mut faces = self.search(frame);
                // A second person turned to the side (SeetaFace sees faces
                // from the front): the profile cascade, on the scheduled
                // full searches (and a new shot's first) that found fewer
                // than two, not on those after a sample without a face.
                let scheduled = previous.is_none() || n.is_multiple_of(FULL_EVERY);
                if faces.len() < 2 && scheduled {
                    for f in self.profiles(frame, faces.first()) {
                        if !faces.iter().any(|o| self.same_face(o, &f)) {
                            faces.push(f);
                        }
                    }
                }
                faces
            }
        };
        faces.sort_by(|a, b| b.size.total_cmp(&a.size));
        faces
    }

    /// Faces inside the square around `face`, from 1/[`ROI_GROWTH`] to
    /// [`ROI_GROWTH`] times its width. rustface has no smallest-face bound
    /// of its own (its pyramid always begins at full size, where the most
    /// windows are), so the square is first shrunk until the smallest face
    /// looked for fills the detector's window; the pyramid then stops at
    /// the largest (`set_max_face_size`).
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
        let small = shrunk_side(side, px);
        let scale = side as f64 / small as f64;
        let image = if small < side {
            let mut out = std::mem::take(&mut self.small);
            resize(&roi, side, small, &mut out);
            self.small = out;
            &self.small
        } else {
            &roi
        };
        let largest = ((px * ROI_GROWTH).max(WINDOW * ROI_GROWTH) / scale) as u32;
        self.inner.set_max_face_size(largest.max(WINDOW as u32));
        let found = search(
            &mut *self.inner,
            image,
            (x0, y0, small, small),
            scale,
            (w, h),
        );
        self.inner.set_max_face_size(0);
        // Not found from the front: the face may have turned (or be one
        // found in profile before), so the profile cascade looks in the
        // same square, for boxes of the same range of sizes.
        let found = if found.is_empty() {
            let side_px = px / profile::TO_FRONTAL;
            profile::detect(
                &roi,
                side,
                side,
                (side_px / ROI_GROWTH).max(PROFILE_MIN),
                side_px * ROI_GROWTH,
            )
            .iter()
            .map(|b| profile_in_frame(b, x0, y0, (w, h)))
            .collect()
        } else {
            found
        };
        self.roi = roi;
        found
    }

    /// Faces in profile in the whole frame, at least 1/[`PROFILE_SHARE`]
    /// of its smaller side (the cascade's cost grows with its windows, and
    /// a person in a two-shot is larger than that); beside a face found
    /// from the front, only faces from 1/[`ROI_GROWTH`] to [`ROI_GROWTH`]
    /// times its width (a second person of similar size: 17 instead of 51
    /// ms a frame of the corpus' talking head, 640x360 with a 99-px face).
    fn profiles(&self, frame: &[u8], beside: Option<&Face>) -> Vec<Face> {
        let (w, h) = (self.w, self.h);
        let mut min = (w.min(h) as f64 / PROFILE_SHARE).max(2.0 * PROFILE_MIN);
        let mut max = f64::MAX;
        if let Some(f) = beside {
            let side = f.size * w as f64 / profile::TO_FRONTAL;
            min = min.max(side / ROI_GROWTH);
            max = side * ROI_GROWTH;
        }
        profile::detect(frame, w, h, min, max)
            .iter()
            .map(|b| profile_in_frame(b, 0, 0, (w, h)))
            .collect()
    }

    /// Two detections of one face (from overlapping squares): centres
    /// closer than half the larger box, in pixels.
    fn same_face(&self, a: &Face, b: &Face) -> bool {
        let half = a.size.max(b.size) * self.w as f64 / 2.0;
        (a.cx - b.cx).abs() * (self.w as f64) < half && (a.cy - b.cy).abs() * (self.h as f64) < half
    }

    /// Faces in the whole frame.
    fn search(&mut self, frame: &[u8]) -> Vec<Face> {
        let (w, h) = (self.w, self.h);
        search(&mut *self.inner, frame, (0, 0, w, h), 1.0, (w, h))
    }
}

/// Faces in the `iw`x`ih` `image` (the frame's part at `(x0, y0)`, shrunk
/// `scale` times), in frame coordinates.
fn search(
    detector: &mut dyn rustface::Detector,
    image: &[u8],
    (x0, y0, iw, ih): (u32, u32, u32, u32),
    scale: f64,
    (w, h): (u32, u32),
) -> Vec<Face> {
    detector
        .detect(&rustface::ImageData::new(image, iw, ih))
        .into_iter()
        .map(|f| face_in_frame(&f, x0, y0, scale, (w as f64, h as f64)))
        .collect()
}

/// A detection (in an image that is the frame's part at `(x0, y0)`, shrunk
/// `scale` times) in 0..1 frame coordinates.
fn face_in_frame(f: &rustface::FaceInfo, x0: u32, y0: u32, scale: f64, (w, h): (f64, f64)) -> Face {
    let b = f.bbox();
    Face {
        cx: (x0 as f64 + (b.x() as f64 + b.width() as f64 / 2.0) * scale) / w,
        cy: (y0 as f64 + (b.y() as f64 + b.height() as f64 / 2.0) * scale) / h,
        size: b.width() as f64 * scale / w,
    }
}

/// A profile box (in an image that is the frame's part at `(x0, y0)`) as
/// a face in 0..1 frame coordinates, sized as SeetaFace would size it.
fn profile_in_frame(b: &profile::Found, x0: u32, y0: u32, (w, h): (u32, u32)) -> Face {
    Face {
        cx: (x0 as f64 + b.x + b.side / 2.0) / w as f64,
        cy: (y0 as f64 + b.y + b.side / 2.0) / h as f64,
        size: b.side * profile::TO_FRONTAL / w as f64,
    }
}

/// The side a `side` px square around a `px` wide face is shrunk to, so
/// that a face 1/[`ROI_GROWTH`] as wide fills the detector's window (never
/// larger than the square, never smaller than the window).
fn shrunk_side(side: u32, px: f64) -> u32 {
    let s = (WINDOW * ROI_GROWTH / px.max(1.0)).min(1.0);
    ((side as f64 * s).round() as u32).clamp(WINDOW as u32, side)
}

/// `src` (`side`x`side` grey) resized to `to`x`to`, bilinear, as rustface
/// resizes its pyramid's levels.
fn resize(src: &[u8], side: u32, to: u32, out: &mut Vec<u8>) {
    out.clear();
    let k = side as f64 / to as f64;
    let last = side.saturating_sub(2) as usize;
    let side = side as usize;
    for y in 0..to {
        let fy = k * y as f64;
        let ny = (fy as usize).min(last);
        let wy = fy - ny as f64;
        let (r0, r1) = (ny * side, (ny + 1) * side);
        for x in 0..to {
            let fx = k * x as f64;
            let nx = (fx as usize).min(last);
            let wx = fx - nx as f64;
            let top = (1.0 - wx) * src[r0 + nx] as f64 + wx * src[r0 + nx + 1] as f64;
            let bottom = (1.0 - wx) * src[r1 + nx] as f64 + wx * src[r1 + nx + 1] as f64;
            out.push(((1.0 - wy) * top + wy * bottom) as u8);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn embedded_model_loads() {
        assert!(rustface::read_model(MODEL).is_ok());
    }

    /// A 640x360 grey frame with the test photo scaled to `px` a side at
    /// (`x`, `y`) (what falls outside is cut off). Its face is about 0.3 of
    /// its width, centred at about (0.44, 0.23) of it.
    /// The faces the detector finds in a 640x360 frame.
    pub(in crate::media) fn detect(frame: &[u8]) -> Vec<Face> {
        Detector::new(640, 360).unwrap().sample(frame, 0, None)
    }

    pub(in crate::media) fn frame_with_photo(px: u32, x: i64, y: i64) -> Vec<u8> {
        let dir = std::env::var_os("CLIPFORGE_CACHE_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                    .join(".cache/clipforge")
            });
        let path = dir.join("testdata").join("astronaut.png");
        let photo = image::open(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run `make setup-test`)", path.display()))
            .to_luma8();
        let photo = image::imageops::resize(&photo, px, px, image::imageops::FilterType::Triangle);
        let mut frame = vec![32u8; 640 * 360];
        for (dx, dy, p) in photo.enumerate_pixels() {
            let (fx, fy) = (x + dx as i64, y + dy as i64);
            if (0..640).contains(&fx) && (0..360).contains(&fy) {
                frame[(fy * 640 + fx) as usize] = p.0[0];
            }
        }
        frame
    }

    /// Around a known face the shrunk square finds the face a full search
    /// finds: large faces (the square shrunk several times) and small ones
    /// (not shrunk).
    #[test]
    fn the_square_around_a_face_finds_it_shrunk_or_not() {
        for (px, x, y) in [
            (700, 20, -20),
            (500, 100, 40),
            (300, 60, 40),
            (240, 330, 40),
        ] {
            let frame = frame_with_photo(px, x, y);
            let mut d = Detector::new(640, 360).unwrap();
            let full = d.sample(&frame, 0, None);
            let Some(known) = full.first().copied() else {
                panic!("no face in a full search of the photo at {px} px");
            };
            let face_px = known.size * 640.0;
            let side = (face_px * ROI_SCALE)
                .max(face_px + 2.0 * ROI_MARGIN * 640.0)
                .min(360.0) as u32;
            let shrunk = shrunk_side(side.max(ROI_MIN), face_px) < side.max(ROI_MIN);
            assert_eq!(
                shrunk,
                face_px > WINDOW * ROI_GROWTH,
                "{px} px photo, {face_px} px face"
            );
            let near = d.sample(&frame, 1, Some(&full));
            let Some(found) = near.first() else {
                panic!("the square around the {face_px} px face found nothing");
            };
            assert!(
                (found.cx - known.cx).abs() * 640.0 < face_px * 0.15,
                "{px}: {found:?} vs {known:?}"
            );
            assert!(
                (found.cy - known.cy).abs() * 360.0 < face_px * 0.15,
                "{px}: {found:?} vs {known:?}"
            );
            assert!(
                (found.size / known.size - 1.0).abs() < 0.25,
                "{px}: {found:?} vs {known:?}"
            );
        }
    }

    /// A cut that puts the face somewhere else: the next sample searches
    /// the whole frame (the square around the old face would find nothing
    /// until the next full search, up to four samples later).
    #[test]
    fn after_a_cut_the_whole_frame_is_searched() {
        let (left, right) = (frame_with_photo(240, 0, 40), frame_with_photo(240, 400, 40));
        assert!(shot_changed(&left, &right, 640));
        assert!(!shot_changed(&left, &frame_with_photo(240, 4, 40), 640));
        let mut s = Searchers::start(640, 360, None);
        for f in [left.clone(), right.clone(), right] {
            s.send(f).unwrap();
        }
        let faces = s.finish().unwrap();
        let cx = |n: usize| faces[n].as_ref().unwrap().first().map(|f| f.cx);
        assert!(cx(0).unwrap() < 0.3, "{faces:?}");
        assert!(
            cx(1).is_some_and(|x| x > 0.6),
            "the face after the cut: {faces:?}"
        );
        assert!(cx(2).is_some_and(|x| x > 0.6), "{faces:?}");
    }
}
