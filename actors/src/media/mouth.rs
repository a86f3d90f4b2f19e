//! Mouth motion: how much each face's mouth moves between two decoded
//! frames, against how much its head moves — the picture's half of the
//! active-speaker evidence (`projects::reframe::speaker`).
//!
//! A talker's head moves too (nods, turns, gestures), often more than the
//! mouth, so the raw motion of the mouth region says little. The head's
//! shift between the frames is found first, by matching the upper face
//! (brow to nose) within a few pixels; the mouth region is then compared at
//! that shift, and what is left — the mouth moving on its own — is divided
//! by what is left of the upper face (at least [`NOISE`]). The ratio is
//! about 1 for a still face, a nod or a turn, and well above 1 while the
//! mouth opens and closes. On the split-screen debate of the real-footage
//! corpus, whose two voices are known from the separated tracks, a
//! prototype of this (fixed face boxes, 10 frames a second, one-second
//! windows) read the louder talker right in 32 of 38 quarter-seconds,
//! against 17 of 38 for the raw motion less the eyes' at 5 frames a second.

use std::collections::VecDeque;

use super::face_detect::Face;

/// Most frames held for mouth motion while their sample is searched (about
/// what the two searchers' queues hold: 64 frames of 640x360 are 15 MB).
pub(super) const MOTION_HELD: usize = 64;

/// Grey levels of difference that compression noise alone leaves in a
/// still region: the least the upper face's residual counts for.
const NOISE: f64 = 1.0;

/// The mouth motion of each frame, measured once its sample's faces are
/// known: frames wait in order, with the one before the first of them.
pub(super) struct Motion {
    w: u32,
    h: u32,
    waiting: VecDeque<(usize, Vec<u8>)>,
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

/// A rectangle of frame pixels, `x0..x1` by `y0..y1`.
#[derive(Clone, Copy, Debug)]
struct Rect {
    x0: i64,
    y0: i64,
    x1: i64,
    y1: i64,
}

impl Rect {
    /// The part of `self` that stays inside a `w`x`h` frame when shifted by
    /// up to `margin` px in any direction.
    fn inside(self, w: u32, h: u32, margin: i64) -> Option<Rect> {
        let r = Rect {
            x0: self.x0.max(margin),
            y0: self.y0.max(margin),
            x1: self.x1.min(w as i64 - margin),
            y1: self.y1.min(h as i64 - margin),
        };
        (r.x1 > r.x0 && r.y1 > r.y0).then_some(r)
    }
}

/// Mean absolute difference between `a` inside `r` and `b` at the same
/// place shifted by (`dx`, `dy`), on every `step`th row and column.
fn residual(a: &[u8], b: &[u8], w: u32, r: Rect, (dx, dy): (i64, i64), step: usize) -> f64 {
    let w = w as i64;
    let (mut sum, mut n) = (0u64, 0u64);
    for y in (r.y0..r.y1).step_by(step) {
        let (ra, rb) = (y * w, (y + dy) * w + dx);
        for x in (r.x0..r.x1).step_by(step) {
            sum += a[(ra + x) as usize].abs_diff(b[(rb + x) as usize]) as u64;
            n += 1;
        }
    }
    sum as f64 / n.max(1) as f64
}

/// The mouth's own motion between grey frames `a` and `b` (`w`x`h`) for
/// `face` (its box spans brows to chin, about square): the mouth region's
/// residual at the head's shift over the upper face's (module docs). The
/// shift is searched up to 12 % of the face's width (at least 2 px, at
/// most 12): in a tenth of a second a head moves further only on a cut.
pub(super) fn mouth_motion(a: &[u8], b: &[u8], w: u32, h: u32, face: &Face) -> f64 {
    let side = face.size * w as f64;
    let (cx, cy) = (face.cx * w as f64, face.cy * h as f64);
    let reach = ((side * 0.12).round() as i64).clamp(2, 12);
    let rect = |left: f64, top: f64, right: f64, bottom: f64| Rect {
        x0: (cx + left * side) as i64,
        y0: (cy + top * side) as i64,
        x1: (cx + right * side) as i64,
        y1: (cy + bottom * side) as i64,
    };
    let Some(mouth) = rect(-0.25, 0.25, 0.25, 0.65).inside(w, h, reach) else {
        return 0.0;
    };
    // Large faces are matched on a sparser grid: ~50 px a side is enough.
    let step = ((side / 100.0).round() as usize).max(1);
    let (head, shift) = match rect(-0.35, -0.45, 0.35, 0.05).inside(w, h, reach) {
        Some(upper) => {
            let at = |shift: (i64, i64), step: usize| residual(a, b, w, upper, shift, step);
            // Every other shift on every other pixel, then the neighbours
            // of the best one on the finer grid.
            let mut coarse = ((0, 0), f64::MAX);
            for dy in (-reach..=reach).step_by(2) {
                for dx in (-reach..=reach).step_by(2) {
                    let d = at((dx, dy), 2 * step);
                    if d < coarse.1 {
                        coarse = ((dx, dy), d);
                    }
                }
            }
            let mut fine = ((0, 0), f64::MAX);
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let s = (coarse.0 .0 + dx, coarse.0 .1 + dy);
                    if s.0.abs() > reach || s.1.abs() > reach {
                        continue;
                    }
                    let d = at(s, step);
                    if d < fine.1 {
                        fine = (s, d);
                    }
                }
            }
            // The residual at the chosen shift, on every pixel.
            let head = if step == 1 { fine.1 } else { at(fine.0, 1) };
            (head, fine.0)
        }
        None => (0.0, (0, 0)),
    };
    residual(a, b, w, mouth, shift, 1) / head.max(NOISE)
}

#[cfg(test)]
mod tests {
    use super::super::face_detect::tests::{detect, frame_with_photo};
    use super::*;

    /// A nod moves the whole head and counts for nothing; a mouth that
    /// opens while the head stays still, or while it nods, counts fully.
    #[test]
    fn a_moving_head_is_not_a_talking_mouth() {
        let still = frame_with_photo(240, 100, 40);
        let face = detect(&still)[0];
        let nodded = frame_with_photo(240, 103, 45);
        let side = face.size * 640.0;
        let (cx, cy) = (face.cx * 640.0, face.cy * 360.0);
        let open = |frame: &[u8], dx: f64, dy: f64| {
            let mut out = frame.to_vec();
            for y in (cy + dy + side / 4.0) as usize..(cy + dy + side * 0.4) as usize {
                for x in (cx + dx - side / 6.0) as usize..(cx + dx + side / 6.0) as usize {
                    out[y * 640 + x] = out[y * 640 + x].wrapping_add(60);
                }
            }
            out
        };
        let nod = mouth_motion(&still, &nodded, 640, 360, &face);
        let talk = mouth_motion(&still, &open(&still, 0.0, 0.0), 640, 360, &face);
        let both = mouth_motion(&still, &open(&nodded, 3.0, 5.0), 640, 360, &face);
        assert!(nod < 1.5, "a nod: {nod}");
        assert!(talk > 5.0, "talking: {talk}");
        assert!(both > 5.0, "talking while nodding: {both}");
    }

    #[test]
    fn a_face_at_the_edge_is_measured_inside_the_frame() {
        let frame = frame_with_photo(240, 100, 40);
        let edge = Face {
            cx: 0.01,
            cy: 0.99,
            size: 0.3,
        };
        let m = mouth_motion(&frame, &frame, 640, 360, &edge);
        assert_eq!(m, 0.0);
    }
}
