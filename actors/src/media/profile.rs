//! Faces turned to the side: OpenCV's Haar profile cascade
//! (`model/haarcascade_profileface.xml`, 20x20 windows, 26 boosted stages
//! of stumps, embedded in the binary; provenance in `model/README.md`),
//! evaluated here as OpenCV's `detectMultiScale` does it: the image is
//! shrunk by 1.2 a step, every window of each level (every 2nd pixel below
//! 2x, every pixel above) passes the stages or is rejected at the first
//! whose sum falls below its threshold, each feature's value taken against
//! the window's contrast; the windows kept are grouped (OpenCV's
//! `groupRectangles`, eps 0.2) and a group is a face when at least
//! [`MIN_NEIGHBOURS`] windows agree. The cascade sees faces looking one way;
//! its mirror (every feature flipped) sees the other.
//!
//! SeetaFace (the frontal detector, [`super::face_detect`]) misses a face
//! seen from the side: an interviewer in profile in a two-shot, found in 2
//! of 17 samples. With this he is found in all 18 samples of it
//! (`tests/real_framing.rs`).

use std::sync::OnceLock;

static XML: &str = include_str!("../../model/haarcascade_profileface.xml");

/// Windows that must agree for a face. Measured on the real-footage corpus
/// (OpenCV, the same steps, 1 frame a second): faces in profile gather
/// 8–44 (the debate's turned candidate 8–15, the vertical interviewer
/// 11–25), the false hits (hands, a slide's drawing, a microphone) 2–6,
/// one hand 9–10, which the whole-frame search's smallest size leaves out.
/// Faces near frontal, which SeetaFace finds, often gather fewer (the
/// Korean interviewee 2–9).
pub const MIN_NEIGHBOURS: usize = 8;
/// A profile box is larger than SeetaFace's box of the same face (forehead
/// to chin and the back of the head): its width times this is about the
/// frontal detector's (0.57–0.83 in the 9 corpus frames where both found
/// the same face, the debate's and the vertical interview's; median 0.76).
pub const TO_FRONTAL: f64 = 0.78;
const SCALE_STEP: f64 = 1.2;
const GROUP_EPS: f64 = 0.2;

/// A face box in the searched image's pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Found {
    pub x: f64,
    pub y: f64,
    pub side: f64,
    /// Windows that agreed on it.
    pub neighbours: usize,
}

struct Rect {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
    weight: f32,
}

struct Weak {
    feature: usize,
    threshold: f32,
    left: f32,
    right: f32,
}

struct Stage {
    threshold: f32,
    weak: std::ops::Range<usize>,
}

struct Cascade {
    win: u32,
    stages: Vec<Stage>,
    weak: Vec<Weak>,
    /// The features, and the same mirrored (x → win - x - w).
    features: [Vec<Vec<Rect>>; 2],
}

fn cascade() -> &'static Cascade {
    static CASCADE: OnceLock<Cascade> = OnceLock::new();
    CASCADE.get_or_init(|| parse(XML).expect("the embedded profile cascade parses"))
}

/// The inner texts of every `<tag>…</tag>` in `s`, in order.
fn texts<'a>(s: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(rest[..j].trim());
        rest = &rest[j + close.len()..];
    }
    out
}

fn numbers(s: &str) -> Result<Vec<f32>, String> {
    s.split_whitespace()
        .map(|t| t.parse::<f32>().map_err(|e| format!("{t:?}: {e}")))
        .collect()
}

/// OpenCV's cascade XML (the new format; BOOST stages of stumps, HAAR
/// features, none tilted).
fn parse(xml: &str) -> Result<Cascade, String> {
    let body = &xml[xml.find("<opencv_storage>").ok_or("no <opencv_storage>")?..];
    if !body.contains("<featureType>HAAR</featureType>") || body.contains("<tilted>1") {
        return Err("not a cascade of upright Haar features".into());
    }
    let win = texts(body, "width")
        .first()
        .and_then(|w| w.parse().ok())
        .ok_or("no <width>")?;
    let at = body.find("<features>").ok_or("no <features>")?;
    let (stages_xml, features_xml) = body.split_at(at);
    let mut stages = Vec::new();
    let mut weak = Vec::new();
    // Each stage's text runs from its threshold to the next one's.
    for chunk in stages_xml.split("<stageThreshold>").skip(1) {
        let end = chunk.find("</stageThreshold>").ok_or("bad stage")?;
        let threshold = chunk[..end]
            .trim()
            .parse::<f32>()
            .map_err(|e| e.to_string())?;
        let nodes = texts(chunk, "internalNodes");
        let leaves = texts(chunk, "leafValues");
        let first = weak.len();
        for (n, l) in nodes.iter().zip(&leaves) {
            let (n, l) = (numbers(n)?, numbers(l)?);
            if n.len() != 4 || l.len() != 2 || n[0] != 0.0 || n[1] != -1.0 {
                return Err("only stumps are read".into());
            }
            weak.push(Weak {
                feature: n[2] as usize,
                threshold: n[3],
                left: l[0],
                right: l[1],
            });
        }
        if nodes.len() != leaves.len() || weak.len() == first {
            return Err("a stage without its classifiers".into());
        }
        stages.push(Stage {
            threshold,
            weak: first..weak.len(),
        });
    }
    let mut features = Vec::new();
    for rects in texts(features_xml, "rects") {
        let mut f = Vec::new();
        for r in texts(rects, "_") {
            let v = numbers(r)?;
            if v.len() != 5 {
                return Err(format!("a rectangle of {} numbers", v.len()));
            }
            f.push(Rect {
                x: v[0] as u32,
                y: v[1] as u32,
                w: v[2] as u32,
                h: v[3] as u32,
                weight: v[4],
            });
        }
        if f.is_empty() || f.len() > 3 {
            return Err(format!("a feature of {} rectangles", f.len()));
        }
        features.push(f);
    }
    if weak.iter().any(|w| w.feature >= features.len()) {
        return Err("a classifier names a missing feature".into());
    }
    let mirrored = features
        .iter()
        .map(|f| {
            f.iter()
                .map(|r| Rect {
                    x: win - r.x - r.w,
                    y: r.y,
                    w: r.w,
                    h: r.h,
                    weight: r.weight,
                })
                .collect()
        })
        .collect();
    Ok(Cascade {
        win,
        stages,
        weak,
        features: [features, mirrored],
    })
}

/// Profile faces (looking either way) in the `w`x`h` grey `image`, with
/// sides from `min` to `max` px.
pub fn detect(image: &[u8], w: u32, h: u32, min: f64, max: f64) -> Vec<Found> {
    let c = cascade();
    let mut found: [Vec<(f64, f64, f64)>; 2] = [Vec::new(), Vec::new()];
    let mut level = Level::default();
    let mut weak = Vec::new();
    let mut factor = 1.0f64;
    loop {
        let side = (c.win as f64 * factor).round();
        let (sw, sh) = (
            (w as f64 / factor).round() as u32,
            (h as f64 / factor).round() as u32,
        );
        if side > max || sw < c.win || sh < c.win {
            break;
        }
        if side >= min {
            level.build(image, w, h, sw, sh);
            let step = if factor > 2.0 { 1 } else { 2 };
            for (mirror, out) in found.iter_mut().enumerate() {
                weak_at(c, mirror, level.stride, &mut weak);
                for y in (0..=sh - c.win).step_by(step) {
                    for x in (0..=sw - c.win).step_by(step) {
                        if level.passes(c, &weak, x, y) {
                            out.push((x as f64 * factor, y as f64 * factor, side));
                        }
                    }
                }
            }
        }
        factor *= SCALE_STEP;
    }
    let mut faces: Vec<Found> = found.iter().flat_map(|f| group(f)).collect();
    faces.retain(|f| f.neighbours >= MIN_NEIGHBOURS);
    faces
}

/// A classifier of the cascade at one level of the pyramid: its feature's
/// rectangles as the offsets of their corners in the level's integral
/// image (from the window's top-left corner), laid out in stage order so a
/// window's stages read one array front to back.
#[derive(Clone, Copy, Default)]
struct WeakAt {
    rects: [([u32; 4], f32); 3],
    n: usize,
    threshold: f32,
    left: f32,
    right: f32,
}

fn weak_at(c: &Cascade, mirror: usize, stride: usize, out: &mut Vec<WeakAt>) {
    out.clear();
    for weak in &c.weak {
        let mut at = WeakAt {
            threshold: weak.threshold,
            left: weak.left,
            right: weak.right,
            ..WeakAt::default()
        };
        for (slot, r) in at.rects.iter_mut().zip(&c.features[mirror][weak.feature]) {
            let (x, y, w, h) = (r.x as usize, r.y as usize, r.w as usize, r.h as usize);
            let corner = |dx: usize, dy: usize| ((y + dy) * stride + x + dx) as u32;
            *slot = (
                [corner(0, 0), corner(w, 0), corner(0, h), corner(w, h)],
                r.weight,
            );
            at.n += 1;
        }
        out.push(at);
    }
}

/// One level of the pyramid: the image shrunk, its integral and the
/// integral of its squares ((w+1) x (h+1), a zero first row and column).
#[derive(Default)]
struct Level {
    small: Vec<u8>,
    sum: Vec<i32>,
    sq: Vec<f64>,
    stride: usize,
}

impl Level {
    fn build(&mut self, image: &[u8], w: u32, h: u32, sw: u32, sh: u32) {
        resize(image, w, h, sw, sh, &mut self.small);
        let stride = sw as usize + 1;
        self.stride = stride;
        self.sum.clear();
        self.sum.resize(stride * (sh as usize + 1), 0);
        self.sq.clear();
        self.sq.resize(stride * (sh as usize + 1), 0.0);
        for y in 0..sh as usize {
            let (mut row, mut row_sq) = (0i32, 0f64);
            for x in 0..sw as usize {
                let v = self.small[y * sw as usize + x] as i32;
                row += v;
                row_sq += (v * v) as f64;
                let i = (y + 1) * stride + x + 1;
                self.sum[i] = self.sum[i - stride] + row;
                self.sq[i] = self.sq[i - stride] + row_sq;
            }
        }
    }

    /// Whether the window at (`x`, `y`) passes every stage.
    fn passes(&self, c: &Cascade, weak: &[WeakAt], x: u32, y: u32) -> bool {
        let base = y as usize * self.stride + x as usize;
        // The contrast is taken inside a 1-px border, as OpenCV does.
        let inner = c.win as usize - 2;
        let (a, b) = (base + self.stride + 1, base + (inner + 1) * self.stride + 1);
        let area = (inner * inner) as f64;
        let sum = (self.sum[b + inner] - self.sum[a + inner] - self.sum[b] + self.sum[a]) as f64;
        let sq = self.sq[b + inner] - self.sq[a + inner] - self.sq[b] + self.sq[a];
        let nf = area * sq - sum * sum;
        let nf = if nf > 0.0 { nf.sqrt() } else { 1.0 } as f32;
        let window = &self.sum[base..];
        for stage in &c.stages {
            let mut total = 0.0f32;
            for w in &weak[stage.weak.clone()] {
                let mut value = 0.0f32;
                for (o, weight) in &w.rects[..w.n] {
                    let s = window[o[3] as usize] - window[o[1] as usize] - window[o[2] as usize]
                        + window[o[0] as usize];
                    value += weight * s as f32;
                }
                total += if value < w.threshold * nf {
                    w.left
                } else {
                    w.right
                };
            }
            if total < stage.threshold {
                return false;
            }
        }
        true
    }
}

/// `src` (`w`x`h` grey) resized to `sw`x`sh`, bilinear with pixel centres
/// aligned (OpenCV's INTER_LINEAR).
fn resize(src: &[u8], w: u32, h: u32, sw: u32, sh: u32, out: &mut Vec<u8>) {
    out.clear();
    let (kx, ky) = (w as f64 / sw as f64, h as f64 / sh as f64);
    let (w, h) = (w as usize, h as usize);
    let at = |k: f64, i: u32, n: usize| {
        let f = ((i as f64 + 0.5) * k - 0.5).max(0.0);
        let i0 = (f as usize).min(n - 1);
        (i0, (i0 + 1).min(n - 1), (f - i0 as f64) as f32)
    };
    let cols: Vec<_> = (0..sw).map(|x| at(kx, x, w)).collect();
    for y in 0..sh {
        let (y0, y1, wy) = at(ky, y, h);
        let (r0, r1) = (&src[y0 * w..y0 * w + w], &src[y1 * w..y1 * w + w]);
        for &(x0, x1, wx) in &cols {
            let top = r0[x0] as f32 + wx * (r0[x1] as f32 - r0[x0] as f32);
            let bottom = r1[x0] as f32 + wx * (r1[x1] as f32 - r1[x0] as f32);
            out.push((top + wy * (bottom - top) + 0.5) as u8);
        }
    }
}

/// OpenCV's `groupRectangles` (eps 0.2): windows that nearly coincide form
/// a group, a group is its windows' mean with their count, and a group
/// inside a larger one with more windows (or with fewer than 3 itself) is
/// dropped.
fn group(windows: &[(f64, f64, f64)]) -> Vec<Found> {
    let n = windows.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            let ((x1, y1, s1), (x2, y2, s2)) = (windows[i], windows[j]);
            let delta = GROUP_EPS * s1.min(s2);
            if (x1 - x2).abs() <= delta
                && (y1 - y2).abs() <= delta
                && (x1 + s1 - x2 - s2).abs() <= delta
                && (y1 + s1 - y2 - s2).abs() <= delta
            {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, (f64, f64, f64, usize)> =
        std::collections::BTreeMap::new();
    for (i, &(x, y, s)) in windows.iter().enumerate() {
        let g = groups.entry(root(&mut parent, i)).or_default();
        *g = (g.0 + x, g.1 + y, g.2 + s, g.3 + 1);
    }
    let boxes: Vec<Found> = groups
        .values()
        .map(|&(x, y, s, k)| Found {
            x: x / k as f64,
            y: y / k as f64,
            side: s / k as f64,
            neighbours: k,
        })
        .collect();
    boxes
        .iter()
        .filter(|a| {
            !boxes.iter().any(|b| {
                let d = b.side * GROUP_EPS;
                !std::ptr::eq(*a, b)
                    && a.x >= b.x - d
                    && a.y >= b.y - d
                    && a.x + a.side <= b.x + b.side + d
                    && a.y + a.side <= b.y + b.side + d
                    && (b.neighbours > a.neighbours.max(3) || a.neighbours < 3)
            })
        })
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_cascade_parses() {
        let c = cascade();
        assert_eq!(c.win, 20);
        assert_eq!(c.stages.len(), 26);
        assert_eq!(c.weak.len(), 2609);
        assert_eq!(c.features[0].len(), c.features[1].len());
    }

    #[test]
    fn a_flat_image_has_no_face() {
        assert!(detect(&[90u8; 200 * 150], 200, 150, 20.0, f64::MAX).is_empty());
    }

    #[test]
    fn nearby_windows_group_and_count() {
        let g = group(&[
            (100.0, 100.0, 50.0),
            (102.0, 101.0, 50.0),
            (98.0, 99.0, 52.0),
            (300.0, 40.0, 50.0),
        ]);
        assert_eq!(g.len(), 2, "{g:?}");
        let big = g
            .iter()
            .find(|b| b.neighbours == 3)
            .expect("the group of 3");
        assert!((big.x - 100.0).abs() < 1.0 && (big.side - 50.67).abs() < 0.1);
    }
}
