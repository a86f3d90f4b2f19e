//! Where the captions go so that they never cover a face: every face the
//! detector saw in the clip, mapped through the clip's composition into the
//! output frame ([`face_boxes`]), and the caption line's height placed at
//! the template's position when no face is there, else at the nearest
//! height that is free of faces ([`caption_y`]) — in a split the seam
//! between the two panels comes first.

use super::graph::{halves, inset_place, piecewise_at, Composition, CropBox};
use crate::media::face::{FaceAnalysis, SAMPLE_FPS};

/// A face box's height as a share of its width, and how far below the box
/// the chin and mouth still reach (share of its width): the detector's box
/// ends at about the mouth.
pub const FACE_HEIGHT: f64 = 1.2;
const CHIN: f64 = 0.25;

/// A box in output pixels: left, top, right, bottom.
pub type OutBox = [f64; 4];

/// The output-frame box of every face of every sample, as the composition
/// draws it (`src` and `out` in pixels).
pub fn face_boxes(
    analysis: &FaceAnalysis,
    c: &Composition,
    src: (u32, u32),
    out: (u32, u32),
) -> Vec<OutBox> {
    let (sw, sh) = (src.0 as f64, src.1 as f64);
    let mut boxes = Vec::new();
    for (i, faces) in analysis.faces.iter().enumerate() {
        let t = i as f64 / SAMPLE_FPS;
        for f in faces {
            let (w, h) = (f.size * sw, f.size * sw * FACE_HEIGHT);
            // The face in source pixels: left, top, right, bottom.
            let face = [
                f.cx * sw - w / 2.0,
                f.cy * sh - h / 2.0,
                f.cx * sw + w / 2.0,
                f.cy * sh + h / 2.0 + CHIN * w,
            ];
            match c {
                Composition::Follow { w, h, y, path, fit } => {
                    if fit.iter().any(|(a, b)| (*a..*b).contains(&t)) {
                        boxes.push(fitted(face, src, out));
                    } else {
                        let x = piecewise_at(path, t);
                        let region = CropBox {
                            x: x as u32,
                            y: *y,
                            w: *w,
                            h: *h,
                        };
                        boxes.extend(map(face, &region, [0.0, 0.0, out.0 as f64, out.1 as f64]));
                    }
                }
                Composition::Split(regions) => {
                    let hs = halves(out);
                    let stacked = out.1 > out.0;
                    for (k, r) in regions.iter().enumerate() {
                        let (ox, oy) = match (k, stacked) {
                            (0, _) => (0.0, 0.0),
                            (_, true) => (0.0, hs[0].1 as f64),
                            (_, false) => (hs[0].0 as f64, 0.0),
                        };
                        let panel = [ox, oy, ox + hs[k].0 as f64, oy + hs[k].1 as f64];
                        boxes.extend(map(face, r, panel));
                    }
                }
                Composition::Fit { .. } => boxes.push(fitted(face, src, out)),
            }
        }
    }
    if let Composition::Fit { inset: Some(_) } = c {
        let (side, x, y) = inset_place(out);
        let (x, y, side) = (x as f64, y as f64, side as f64);
        boxes.push([x, y, x + side, y + side]);
    }
    boxes
}

/// `face` (source px) drawn through the crop `region` into `panel` (output
/// px), clipped to the panel; `None` when it falls outside.
fn map(face: [f64; 4], region: &CropBox, panel: [f64; 4]) -> Option<OutBox> {
    let sx = (panel[2] - panel[0]) / region.w.max(1) as f64;
    let sy = (panel[3] - panel[1]) / region.h.max(1) as f64;
    let b = [
        (panel[0] + (face[0] - region.x as f64) * sx).max(panel[0]),
        (panel[1] + (face[1] - region.y as f64) * sy).max(panel[1]),
        (panel[0] + (face[2] - region.x as f64) * sx).min(panel[2]),
        (panel[1] + (face[3] - region.y as f64) * sy).min(panel[3]),
    ];
    (b[2] > b[0] && b[3] > b[1]).then_some(b)
}

/// `face` in the whole frame scaled to fit the output, centred.
fn fitted(face: [f64; 4], src: (u32, u32), out: (u32, u32)) -> OutBox {
    let (sw, sh, ow, oh) = (src.0 as f64, src.1 as f64, out.0 as f64, out.1 as f64);
    let s = (ow / sw).min(oh / sh);
    let (ox, oy) = ((ow - sw * s) / 2.0, (oh - sh * s) / 2.0);
    [
        ox + face[0] * s,
        oy + face[1] * s,
        ox + face[2] * s,
        oy + face[3] * s,
    ]
}

/// The caption line's centre (% of the output height from the top): the
/// template's `preferred` when a line `band` px tall (and the width of the
/// frame) there covers no face box; else the free height nearest it,
/// searched from 8 % to 92 % in steps of 0.5 % (in a split, the seam
/// between the panels first). Where every height covers a face, the one
/// covering the least of them: the smallest sum over the face boxes of the
/// line's height inside each (in a 1:1 split the two faces fill their
/// panels, and a line on the seam grazing a chin and a forehead beats one
/// across the middle of a face).
pub fn caption_y(boxes: &[OutBox], out: (u32, u32), band: f64, preferred: f64, split: bool) -> f64 {
    let oh = out.1 as f64;
    let covered = |pct: f64| {
        let (top, bottom) = (oh * pct / 100.0 - band / 2.0, oh * pct / 100.0 + band / 2.0);
        let px: f64 = boxes
            .iter()
            .map(|b| (bottom.min(b[3]) - top.max(b[1])).max(0.0))
            .sum();
        px.round() as u64
    };
    let mut candidates: Vec<f64> = Vec::new();
    if split && out.1 > out.0 {
        candidates.push(halves(out)[0].1 as f64 / oh * 100.0);
    }
    candidates.push(preferred);
    let mut grid: Vec<f64> = (16..=184).map(|k| k as f64 * 0.5).collect();
    grid.sort_by(|a, b| (a - preferred).abs().total_cmp(&(b - preferred).abs()));
    candidates.extend(grid);
    candidates
        .iter()
        .copied()
        .min_by_key(|&pct| covered(pct))
        .unwrap_or(preferred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::face::Face;
    use crate::projects::reframe::graph;
    use crate::projects::reframe::tracks::Track;

    fn analysis(faces: Vec<Vec<Face>>) -> FaceAnalysis {
        FaceAnalysis {
            faces,
            ..FaceAnalysis::default()
        }
    }

    fn face(cx: f64, cy: f64, size: f64) -> Face {
        Face { cx, cy, size }
    }

    fn track(f: Face) -> Track {
        Track {
            cx: f.cx,
            cy: f.cy,
            size: f.size,
            presence: 1.0,
            positions: Vec::new(),
        }
    }

    /// Two people stacked in a 9:16 split: the caption goes in the seam,
    /// and its band touches neither face.
    #[test]
    fn in_a_split_the_caption_sits_in_the_seam() {
        let (src, out) = ((1280, 720), (1080, 1920));
        let (a, b) = (face(0.25, 0.45, 0.12), face(0.75, 0.45, 0.12));
        let c = graph::split(Some([&track(a), &track(b)]), None, src, out);
        let boxes = face_boxes(&analysis(vec![vec![a, b]; 4]), &c, src, out);
        assert_eq!(boxes.len(), 8, "{boxes:?}");
        // The template's 72 % falls on the lower person's face.
        let band = 110.0;
        let at = |pct: f64| 1920.0 * pct / 100.0;
        assert!(
            boxes.iter().any(|b| b[1] < at(72.0) && b[3] > at(72.0)),
            "{boxes:?}"
        );
        let y = caption_y(&boxes, out, band, 72.0, true);
        assert_eq!(y, 50.0);
        assert!(boxes
            .iter()
            .all(|b| b[3] < at(y) - band / 2.0 || b[1] > at(y) + band / 2.0));
    }

    /// The corpus debate at 1:1: a split-screen source (a seam in the
    /// middle) whose two faces would each fill a stacked 2:1 strip. Side by
    /// side each keeps head and shoulders, and the template's 72 % covers
    /// no face: the line stays there, off both faces.
    #[test]
    fn a_square_split_sits_side_by_side_with_the_line_below_the_faces() {
        let (src, out) = ((640, 368), (1080, 1080));
        let (a, b) = (face(0.24, 0.33, 0.16), face(0.72, 0.33, 0.16));
        let c = graph::split(Some([&track(a), &track(b)]), Some(0.5), src, out);
        let Composition::Split(regions) = &c else {
            panic!("{c:?}")
        };
        // Each panel 540 wide, the whole height; each crop in its own half.
        assert_eq!(halves(out), [(540, 1080), (540, 1080)]);
        assert!(regions[0].x + regions[0].w <= 320, "{regions:?}");
        assert!(regions[1].x >= 320, "{regions:?}");
        let boxes = face_boxes(&analysis(vec![vec![a, b]; 4]), &c, src, out);
        assert!(boxes.iter().any(|b| b[0] >= 540.0), "{boxes:?}");
        let band = 60.0;
        let y = caption_y(&boxes, out, band, 72.0, true);
        assert_eq!(y, 72.0, "{boxes:?}");
        let (top, bottom) = (
            1080.0 * y / 100.0 - band / 2.0,
            1080.0 * y / 100.0 + band / 2.0,
        );
        assert!(
            boxes.iter().all(|b| b[3] <= top || b[1] >= bottom),
            "{boxes:?}"
        );
    }

    /// A 4:5 split where each face fills its stacked panel: every height
    /// covers a face, and the line goes where it covers the least of them —
    /// the seam, grazing a chin and a forehead — not across the middle of
    /// the lower face at the template's 72 %.
    #[test]
    fn when_every_height_covers_a_face_the_line_covers_the_least() {
        let out = (1080, 1350);
        let boxes = [[300.0, 0.0, 700.0, 680.0], [300.0, 695.0, 700.0, 1350.0]];
        let y = caption_y(&boxes, out, 60.0, 72.0, true);
        assert!((49.0..=52.0).contains(&y), "{y}");
    }

    /// A face low in a single crop moves the caption off it, to the
    /// nearest free height; with no face in the way it stays put.
    #[test]
    fn a_caption_moves_off_a_face_to_the_nearest_free_height() {
        let (src, out) = ((1920, 1080), (1080, 1920));
        let low = face(0.5, 0.7, 0.15);
        let c = graph::follow_face(&vec![Some(low); 3], &[], src, out);
        let boxes = face_boxes(&analysis(vec![vec![low]; 3]), &c, src, out);
        let y = caption_y(&boxes, out, 110.0, 72.0, false);
        assert_ne!(y, 72.0);
        let (top, bottom) = (1920.0 * y / 100.0 - 55.0, 1920.0 * y / 100.0 + 55.0);
        assert!(
            boxes.iter().all(|b| b[3] <= top || b[1] >= bottom),
            "{y} {boxes:?}"
        );
        let high = face(0.5, 0.3, 0.15);
        let c = graph::follow_face(&vec![Some(high); 3], &[], src, out);
        let boxes = face_boxes(&analysis(vec![vec![high]; 3]), &c, src, out);
        assert_eq!(caption_y(&boxes, out, 110.0, 72.0, false), 72.0);
    }

    /// A fitted shot and a face-cam inset are kept out too.
    #[test]
    fn fitted_faces_and_the_inset_are_kept_out() {
        let (src, out) = ((1280, 720), (1080, 1920));
        let f = face(0.5, 0.5, 0.1);
        let c = graph::screen(Some(&track(f)), src);
        let boxes = face_boxes(&analysis(vec![vec![f]]), &c, src, out);
        assert_eq!(boxes.len(), 2);
        let (side, x, y) = inset_place(out);
        assert_eq!(
            boxes[1],
            [x as f64, y as f64, (x + side) as f64, (y + side) as f64]
        );
        // The fitted face sits in the middle band of the frame.
        assert!(boxes[0][1] > 800.0 && boxes[0][3] < 1120.0, "{boxes:?}");
    }
}
