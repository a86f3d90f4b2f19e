//! The ffmpeg filter graph of each layout, from the crop boxes and paths
//! worked out for the clip ([`Composition`]). Every graph ends in `[v]` with
//! the captions burned in at the output size.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::speaker::{SpeakerTimeline, STEP};
use super::tracks::Track;
use crate::media::face::{self, FaceSamples, SAMPLE_FPS};

/// A box in source pixels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CropBox {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

/// How the source is drawn into the output frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Composition {
    /// A `w`x`h` crop (the output's shape) whose left edge follows `path`
    /// (time s, x px) at a fixed top `y`: single face, active speaker, or a
    /// still centre crop.
    Follow {
        w: u32,
        h: u32,
        y: u32,
        path: Vec<(f64, f64)>,
    },
    /// Two crops, each filling half of the output (stacked top/bottom when
    /// the output is at least as tall as wide, else side by side).
    Split([CropBox; 2]),
    /// The whole frame scaled to fit over a blurred copy of itself, with a
    /// square face inset when there is one.
    Fit { inset: Option<CropBox> },
}

/// The crop box (width, height) of the largest out_w:out_h region of the source.
pub fn crop_box(src_w: u32, src_h: u32, out_w: u32, out_h: u32) -> (u32, u32) {
    let target = out_w as f64 / out_h as f64;
    let even = |v: f64| ((v / 2.0).floor() as u32 * 2).max(2);
    if src_w as f64 / src_h as f64 > target {
        (even(src_h as f64 * target).min(src_w), src_h / 2 * 2)
    } else {
        (src_w / 2 * 2, even(src_w as f64 / target).min(src_h))
    }
}

/// The crop's top edge: centred on the face's mean height when the crop is
/// shorter than the source, else 0.
fn crop_top(cy: f64, ch: u32, src_h: u32) -> u32 {
    (cy * src_h as f64 - ch as f64 / 2.0)
        .clamp(0.0, (src_h - ch.min(src_h)) as f64)
        .round() as u32
        / 2
        * 2
}

fn left_edge(cx: f64, cw: u32, src_w: u32) -> f64 {
    (cx * src_w as f64 - cw as f64 / 2.0)
        .clamp(0.0, (src_w - cw.min(src_w)) as f64)
        .round()
}

/// Single: follow the largest face's smoothed path; no face → centre crop.
pub fn follow_face(samples: &FaceSamples, src: (u32, u32), out: (u32, u32)) -> Composition {
    let (cw, ch) = crop_box(src.0, src.1, out.0, out.1);
    let seen: Vec<f64> = samples.iter().flatten().map(|f| f.cy).collect();
    let cy = if seen.is_empty() {
        0.5
    } else {
        seen.iter().sum::<f64>() / seen.len() as f64
    };
    let path: Vec<(f64, f64)> = if seen.is_empty() {
        vec![(0.0, left_edge(0.5, cw, src.0))]
    } else {
        face::smooth_path(samples)
            .iter()
            .enumerate()
            .map(|(i, cx)| (i as f64 / SAMPLE_FPS, left_edge(*cx, cw, src.0)))
            .collect()
    };
    Composition::Follow {
        w: cw,
        h: ch,
        y: crop_top(cy, ch, src.1),
        path: simplify(path),
    }
}

/// Speaker: the crop cuts to the active face and follows its smoothed path
/// while it talks.
pub fn follow_speaker(
    pair: [&Track; 2],
    timeline: &SpeakerTimeline,
    src: (u32, u32),
    out: (u32, u32),
) -> Composition {
    let (cw, ch) = crop_box(src.0, src.1, out.0, out.1);
    let paths: Vec<Vec<f64>> = pair
        .iter()
        .map(|t| face::smooth_path(&t.filled().into_iter().map(Some).collect()))
        .collect();
    let x_of = |who: usize, k: usize| {
        let p = &paths[who];
        let s = ((k as f64 * STEP * SAMPLE_FPS) as usize).min(p.len().saturating_sub(1));
        left_edge(p.get(s).copied().unwrap_or(0.5), cw, src.0)
    };
    let mut points = Vec::new();
    let mut prev: Option<usize> = None;
    for (k, &who) in timeline.active.iter().enumerate() {
        let t = k as f64 * STEP;
        if let Some(p) = prev.filter(|p| *p != who) {
            // A cut: hold the old framing up to the switch.
            points.push((t - 0.001, x_of(p, k)));
        }
        points.push((t, x_of(who, k)));
        prev = Some(who);
    }
    if points.is_empty() {
        points.push((0.0, left_edge(pair[0].cx, cw, src.0)));
    }
    let cy = (pair[0].cy + pair[1].cy) / 2.0;
    Composition::Follow {
        w: cw,
        h: ch,
        y: crop_top(cy, ch, src.1),
        path: simplify(points),
    }
}

/// A box of aspect `aw`:`ah` around a face, about `scale` face widths wide,
/// inside the source.
fn box_around(track: &Track, scale: f64, aw: f64, ah: f64, src: (u32, u32)) -> CropBox {
    let (sw, sh) = (src.0 as f64, src.1 as f64);
    let mut w = (track.size * sw * scale).max(32.0).min(sw);
    let mut h = w * ah / aw;
    if h > sh {
        h = sh;
        w = h * aw / ah;
    }
    let even = |v: f64| (v / 2.0).floor() as u32 * 2;
    let (w, h) = (even(w).max(2), even(h).max(2));
    let x = (track.cx * sw - w as f64 / 2.0).clamp(0.0, sw - w as f64);
    let y = (track.cy * sh - h as f64 / 2.0).clamp(0.0, sh - h as f64);
    CropBox {
        x: even(x),
        y: even(y),
        w,
        h,
    }
}

/// The size of each half of the output in a split.
fn halves(out: (u32, u32)) -> [(u32, u32); 2] {
    let (w, h) = out;
    if h >= w {
        let top = h / 2 / 2 * 2;
        [(w, top), (w, h - top)]
    } else {
        let left = w / 2 / 2 * 2;
        [(left, h), (w - left, h)]
    }
}

/// Split: each face (left one first) framed about 3.5 face widths wide.
/// Without two faces, the source's left and right halves.
pub fn split(pair: Option<[&Track; 2]>, src: (u32, u32), out: (u32, u32)) -> Composition {
    let hs = halves(out);
    let boxes = match pair {
        Some(mut p) => {
            p.sort_by(|a, b| a.cx.total_cmp(&b.cx));
            [0, 1].map(|i| box_around(p[i], 3.5, hs[i].0 as f64, hs[i].1 as f64, src))
        }
        None => [0, 1].map(|i| {
            let half_w = src.0 / 2 / 2 * 2;
            let (cw, ch) = crop_box(half_w, src.1, hs[i].0, hs[i].1);
            CropBox {
                x: i as u32 * half_w + (half_w - cw) / 2 / 2 * 2,
                y: (src.1 - ch) / 2 / 2 * 2,
                w: cw,
                h: ch,
            }
        }),
    };
    Composition::Split(boxes)
}

/// Screen: the whole frame fitted, the face (if any) as a square inset.
pub fn screen(face: Option<&Track>, src: (u32, u32)) -> Composition {
    Composition::Fit {
        inset: face.map(|t| box_around(t, 2.0, 1.0, 1.0, src)),
    }
}

/// A piecewise-linear ffmpeg expression in `t` through `points` (t, x).
pub fn piecewise(points: &[(f64, f64)]) -> String {
    match points {
        [] => "0".into(),
        [(_, x)] => format!("{x:.1}"),
        _ => {
            let mut expr = format!("{:.1}", points[points.len() - 1].1);
            for w in points.windows(2).rev() {
                let ((t0, x0), (t1, x1)) = (w[0], w[1]);
                let seg = if (x1 - x0).abs() < 0.5 {
                    format!("{x0:.1}")
                } else {
                    format!(
                        "{x0:.1}+({:.1})*(t-{t0:.3})/{:.3}",
                        x1 - x0,
                        (t1 - t0).max(0.001)
                    )
                };
                expr = format!("if(lt(t,{t1:.3}),{seg},{expr})");
            }
            format!("if(lt(t,{:.3}),{:.1},{expr})", points[0].0, points[0].1)
        }
    }
}

/// The filters that drop `cuts` (source seconds; the clip's input starts
/// at `start`) from a clip: for the video (ending in a comma, for
/// [`filter_graph`]) `select` the frames outside every cut and move each
/// later frame back by the time cut before it; for the audio (no trailing
/// comma) `aselect` the same and lay the samples end to end. Both empty
/// without cuts.
pub fn cut_filters(cuts: &[(f64, f64)], start: f64) -> (String, String) {
    if cuts.is_empty() {
        return (String::new(), String::new());
    }
    let rel: Vec<(f64, f64)> = cuts.iter().map(|&(a, b)| (a - start, b - start)).collect();
    let inside = rel
        .iter()
        .map(|(a, b)| format!("between(t,{a:.3},{b:.3})"))
        .collect::<Vec<_>>()
        .join("+");
    let shift = rel
        .iter()
        .map(|(a, b)| format!("{:.3}*gte(T,{b:.3})", b - a))
        .collect::<Vec<_>>()
        .join("+");
    (
        format!("select='not({inside})',setpts='PTS-({shift})/TB',"),
        format!("aselect='not({inside})',asetpts=N/SR/TB"),
    )
}

/// Drops points that lie on the line through their neighbours (within 2 px).
pub fn simplify(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if points.len() <= 2 {
        return points;
    }
    let mut out = vec![points[0]];
    for i in 1..points.len() - 1 {
        let (a, b, c) = (*out.last().unwrap_or(&points[0]), points[i], points[i + 1]);
        let interp = a.1 + (c.1 - a.1) * (b.0 - a.0) / (c.0 - a.0).max(1e-9);
        if (interp - b.1).abs() > 2.0 {
            out.push(b);
        }
    }
    out.push(points[points.len() - 1]);
    out
}

fn crop(b: &CropBox) -> String {
    format!("crop=w={}:h={}:x={}:y={}", b.w, b.h, b.x, b.y)
}

/// The filter graph: `[0:v]` → `[v]` at `out`, captions from `ass`.
/// `cut` (filters ending in a comma, or empty) runs on the composed frames
/// before they are scaled and captioned: see [`cut_filters`].
pub fn filter_graph(c: &Composition, out: (u32, u32), ass: &Path, cut: &str) -> String {
    let (out_w, out_h) = out;
    let ass_path = ass.to_string_lossy().replace('\\', "/").replace('\'', "");
    let tail = format!(
        "{cut}scale={out_w}:{out_h}:flags=bicubic,setsar=1,ass=filename='{ass_path}',format=yuv420p[v]"
    );
    let mut g = String::new();
    match c {
        Composition::Follow { w, h, y, path } => {
            let _ = write!(
                g,
                "[0:v]crop=w={w}:h={h}:x='{}':y={y},{tail}",
                piecewise(path)
            );
        }
        Composition::Split(boxes) => {
            let hs = halves(out);
            let stack = if out_h >= out_w { "vstack" } else { "hstack" };
            let _ = write!(
                g,
                "[0:v]split=2[a][b];\
                 [a]{},scale={}:{}:flags=bicubic,setsar=1[p0];\
                 [b]{},scale={}:{}:flags=bicubic,setsar=1[p1];\
                 [p0][p1]{stack}=inputs=2,{tail}",
                crop(&boxes[0]),
                hs[0].0,
                hs[0].1,
                crop(&boxes[1]),
                hs[1].0,
                hs[1].1,
            );
        }
        Composition::Fit { inset } => {
            let (bw, bh) = (out_w / 4 / 2 * 2, out_h / 4 / 2 * 2);
            let n = if inset.is_some() { 3 } else { 2 };
            let _ = write!(
                g,
                "[0:v]split={n}[bgsrc][fgsrc]{};\
                 [bgsrc]scale={bw}:{bh}:force_original_aspect_ratio=increase,crop={bw}:{bh},boxblur=10:2,scale={out_w}:{out_h}[bg];\
                 [fgsrc]scale={out_w}:{out_h}:force_original_aspect_ratio=decrease[fg];",
                if inset.is_some() { "[facesrc]" } else { "" }
            );
            match inset {
                Some(b) => {
                    let (side, x, y) = inset_place(out);
                    let _ = write!(
                        g,
                        "[bg][fg]overlay=(W-w)/2:(H-h)/2[base];\
                         [facesrc]{},scale={side}:{side}:flags=bicubic,setsar=1[face];\
                         [base][face]overlay={x}:{y},{tail}",
                        crop(b)
                    );
                }
                None => {
                    let _ = write!(g, "[bg][fg]overlay=(W-w)/2:(H-h)/2,{tail}");
                }
            }
        }
    }
    g
}

/// The face inset's side and top-left corner: a third of the short side,
/// at the bottom-right corner, 4 % in from the edges, above where captions
/// sit on a landscape frame and in the blurred band on a tall one (the
/// fitted content fills the middle).
pub fn inset_place(out: (u32, u32)) -> (u32, u32, u32) {
    let (w, h) = out;
    let side = (w.min(h) / 3) / 2 * 2;
    let margin = (w.min(h) as f64 * 0.04) as u32;
    let x = w - side - margin;
    let y = if h > w {
        // Just above the bottom band's captions region.
        h - side - h / 5
    } else {
        margin
    };
    (side, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(cx: f64, size: f64) -> Track {
        Track {
            cx,
            cy: 0.4,
            size,
            presence: 1.0,
            positions: Vec::new(),
        }
    }

    #[test]
    fn crop_box_has_the_output_shape() {
        assert_eq!(crop_box(1920, 1080, 1080, 1920), (606, 1080));
        assert_eq!(crop_box(1080, 1920, 1080, 1920), (1080, 1920));
        assert_eq!(crop_box(500, 2000, 1080, 1920), (500, 888));
        assert_eq!(crop_box(1920, 1080, 1080, 1080), (1080, 1080));
        assert_eq!(crop_box(1920, 1080, 1920, 1080), (1920, 1080));
    }

    #[test]
    fn piecewise_expression_interpolates() {
        let e = piecewise(&[(0.0, 10.0), (1.0, 20.0)]);
        assert_eq!(
            e,
            "if(lt(t,0.000),10.0,if(lt(t,1.000),10.0+(10.0)*(t-0.000)/1.000,20.0))"
        );
        assert_eq!(piecewise(&[(0.0, 5.0)]), "5.0");
    }

    #[test]
    fn simplify_drops_collinear_points() {
        let pts = vec![(0.0, 0.0), (1.0, 10.0), (2.0, 20.0), (3.0, 20.0)];
        assert_eq!(simplify(pts), vec![(0.0, 0.0), (2.0, 20.0), (3.0, 20.0)]);
    }

    #[test]
    fn split_boxes_have_each_half_shape_and_left_face_first() {
        let (a, b) = (track(0.75, 0.15), track(0.25, 0.15));
        let Composition::Split(boxes) = split(Some([&a, &b]), (1280, 720), (1080, 1920)) else {
            panic!("not a split");
        };
        // Left face on top.
        assert!(boxes[0].x < boxes[1].x, "{boxes:?}");
        for bx in boxes {
            let aspect = bx.w as f64 / bx.h as f64;
            assert!((aspect - 1080.0 / 960.0).abs() < 0.02, "{bx:?}");
            assert!(bx.x + bx.w <= 1280 && bx.y + bx.h <= 720);
        }
        let Composition::Split(halves) = split(None, (1280, 720), (1920, 1080)) else {
            panic!("not a split");
        };
        assert_eq!(halves[0].x, 0);
        assert!(halves[1].x >= 640);
    }

    #[test]
    fn every_graph_ends_in_v_at_the_output_size() {
        let ass = Path::new("/tmp/c.ass");
        let t = track(0.9, 0.08);
        for c in [
            follow_face(&vec![None; 3], (1280, 720), (1080, 1350)),
            split(None, (1280, 720), (1080, 1920)),
            screen(Some(&t), (1280, 720)),
            screen(None, (1280, 720)),
        ] {
            let g = filter_graph(&c, (1080, 1350), ass, "");
            assert!(g.ends_with("format=yuv420p[v]"), "{g}");
            assert!(g.contains("scale=1080:1350:flags=bicubic"), "{g}");
            let (cut, _) = cut_filters(&[(11.0, 11.5)], 10.0);
            let g = filter_graph(&c, (1080, 1350), ass, &cut);
            assert!(g.contains(&format!("{cut}scale=1080:1350")), "{g}");
        }
    }

    #[test]
    fn cut_filters_drop_the_spans_and_close_the_gaps() {
        assert_eq!(cut_filters(&[], 3.0), (String::new(), String::new()));
        let (v, a) = cut_filters(&[(11.0, 11.5), (14.0, 14.25)], 10.0);
        assert_eq!(
            v,
            "select='not(between(t,1.000,1.500)+between(t,4.000,4.250))',\
             setpts='PTS-(0.500*gte(T,1.500)+0.250*gte(T,4.250))/TB',"
        );
        assert_eq!(
            a,
            "aselect='not(between(t,1.000,1.500)+between(t,4.000,4.250))',asetpts=N/SR/TB"
        );
    }
}
