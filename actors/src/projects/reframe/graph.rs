//! The ffmpeg filter graph of each layout, from the crop boxes and paths
//! worked out for the clip ([`Composition`]). Every graph ends in `[v]` with
//! the captions burned in at the output size.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::speaker::{SpeakerTimeline, STEP};
use super::tracks::Track;
use crate::media::face::{self, shot_ranges, FaceSamples, SAMPLE_FPS};

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
    /// still centre crop. During the `fit` spans (s, s) — shots in which no
    /// face was found — the whole frame is shown over a blurred copy
    /// instead of a blind crop.
    Follow {
        w: u32,
        h: u32,
        y: u32,
        path: Vec<(f64, f64)>,
        #[serde(default)]
        fit: Vec<(f64, f64)>,
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
pub(crate) fn crop_top(cy: f64, ch: u32, src_h: u32) -> u32 {
    (cy * src_h as f64 - ch as f64 / 2.0)
        .clamp(0.0, (src_h - ch.min(src_h)) as f64)
        .round() as u32
        / 2
        * 2
}

pub(crate) fn left_edge(cx: f64, cw: u32, src_w: u32) -> f64 {
    (cx * src_w as f64 - cw as f64 / 2.0)
        .clamp(0.0, (src_w - cw.min(src_w)) as f64)
        .round()
}

/// Single: follow the face of each shot (`samples`, one per 1/SAMPLE_FPS
/// s; `cuts` in seconds): a smoothed path within a shot, a jump at each
/// cut, and the whole frame fitted during a shot without a face. No face
/// at all → a centre crop.
pub fn follow_face(
    samples: &FaceSamples,
    cuts: &[f64],
    src: (u32, u32),
    out: (u32, u32),
) -> Composition {
    let (cw, ch) = crop_box(src.0, src.1, out.0, out.1);
    let seen: Vec<f64> = samples.iter().flatten().map(|f| f.cy).collect();
    if seen.is_empty() {
        return Composition::Follow {
            w: cw,
            h: ch,
            y: crop_top(0.5, ch, src.1),
            path: vec![(0.0, left_edge(0.5, cw, src.0))],
            fit: Vec::new(),
        };
    }
    let cy = seen.iter().sum::<f64>() / seen.len() as f64;
    let mut path: Vec<(f64, f64)> = Vec::new();
    let mut fit = Vec::new();
    for (k, shot) in shot_ranges(samples.len(), cuts).into_iter().enumerate() {
        let (t0, t1) = shot_times(k, cuts, samples.len());
        let part = &samples[shot.clone()];
        if part.iter().all(Option::is_none) {
            fit.push((t0, t1));
            continue;
        }
        let xs: Vec<f64> = face::smooth_path(part)
            .iter()
            .map(|cx| left_edge(*cx, cw, src.0))
            .collect();
        push_shot(&mut path, t0, &xs, shot.start);
    }
    Composition::Follow {
        w: cw,
        h: ch,
        y: crop_top(cy, ch, src.1),
        path: simplify(path),
        fit: merge_spans(fit),
    }
}

/// Shot `k`'s time span (the last shot ends a second after the last sample).
fn shot_times(k: usize, cuts: &[f64], samples: usize) -> (f64, f64) {
    let t0 = if k == 0 { 0.0 } else { cuts[k - 1] };
    let t1 = cuts
        .get(k)
        .copied()
        .unwrap_or(samples as f64 / SAMPLE_FPS + 1.0);
    (t0, t1)
}

/// Appends a shot's crop positions (`xs`, from sample `first`, starting at
/// `t0`) to `path`: the previous position is held up to the cut, then the
/// crop jumps.
fn push_shot(path: &mut Vec<(f64, f64)>, t0: f64, xs: &[f64], first: usize) {
    if let (Some(&(t_last, x_last)), Some(&x0)) = (path.last(), xs.first()) {
        if t0 - 0.001 > t_last {
            path.push((t0 - 0.001, x_last));
        }
        if t0 > t_last {
            path.push((t0, x0));
        }
    }
    for (j, x) in xs.iter().enumerate() {
        let t = (first + j) as f64 / SAMPLE_FPS;
        if path.last().is_none_or(|&(tl, _)| t > tl) {
            path.push((t, *x));
        }
    }
}

/// Joins touching spans.
pub(crate) fn merge_spans(spans: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in spans {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1e-6 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The speaker crop's width as a share of the source's when the output's
/// shape leaves no room to move across (a vertical two-shot into 9:16).
pub const SPEAKER_ZOOM: f64 = 2.0 / 3.0;

/// The speaker crop: the output's shape in the source, or, when that is
/// the source's whole width, [`SPEAKER_ZOOM`] of it, so that cutting to the
/// talker still changes the picture.
pub fn speaker_box(src: (u32, u32), out: (u32, u32)) -> (u32, u32) {
    let (cw, ch) = crop_box(src.0, src.1, out.0, out.1);
    if cw + 2 < src.0 {
        return (cw, ch);
    }
    let even = |v: f64| ((v / 2.0).floor() as u32 * 2).max(2);
    let w = even(src.0 as f64 * SPEAKER_ZOOM);
    (w, even(w as f64 * ch as f64 / cw as f64).min(ch))
}

/// Speaker: the crop cuts to the active face and follows its smoothed path
/// while it talks; a shot in which neither face is seen is fitted.
pub fn follow_speaker(
    pair: [&Track; 2],
    timeline: &SpeakerTimeline,
    cuts: &[f64],
    src: (u32, u32),
    out: (u32, u32),
) -> Composition {
    let (cw, ch) = speaker_box(src, out);
    // A gap in a track takes the nearest face of the same shot (one from
    // the shot before a cut put the crop where that shot had the face);
    // a shot the track is not in at all, the nearest anywhere.
    let samples_of = |t: &Track| -> FaceSamples {
        let filled = t.filled();
        let mut out: FaceSamples = t.positions.iter().map(|p| p.map(|(_, f)| f)).collect();
        for r in shot_ranges(out.len(), cuts) {
            if !t.seen_in(r.clone()) {
                for i in r {
                    out[i] = Some(filled[i]);
                }
            }
        }
        out
    };
    let paths: Vec<Vec<f64>> = pair
        .iter()
        .map(|t| smooth_by_shot(&samples_of(t), cuts))
        .collect();
    // The sample that frames time `t`: the one before it, unless a shot
    // change falls between the two (then the new shot's first).
    let sample_at = |t: f64| {
        let s = (t * SAMPLE_FPS) as usize;
        match cuts.iter().rev().find(|&&c| c <= t) {
            Some(&c) if (s as f64) < c * SAMPLE_FPS => (c * SAMPLE_FPS).ceil() as usize,
            _ => s,
        }
    };
    let x_of = |who: usize, t: f64| {
        let p = &paths[who];
        let s = sample_at(t).min(p.len().saturating_sub(1));
        left_edge(p.get(s).copied().unwrap_or(0.5), cw, src.0)
    };
    let mut points = Vec::new();
    let mut prev: Option<usize> = None;
    for (k, &who) in timeline.active.iter().enumerate() {
        let t = k as f64 * STEP;
        let cut = k > 0 && cuts.iter().any(|&c| c > t - STEP && c <= t);
        if let Some(p) = prev.filter(|p| *p != who || cut) {
            // A switch or a shot change: hold the old framing up to it.
            points.push((t - 0.001, x_of(p, t - STEP)));
        }
        points.push((t, x_of(who, t)));
        prev = Some(who);
    }
    if points.is_empty() {
        points.push((0.0, left_edge(pair[0].cx, cw, src.0)));
    }
    let samples = pair[0].positions.len().max(pair[1].positions.len());
    let fit = shot_ranges(samples, cuts)
        .into_iter()
        .enumerate()
        .filter(|(_, r)| !r.is_empty() && !pair.iter().any(|t| t.seen_in(r.clone())))
        .map(|(k, _)| shot_times(k, cuts, samples))
        .collect();
    let cy = (pair[0].cy + pair[1].cy) / 2.0;
    Composition::Follow {
        w: cw,
        h: ch,
        y: crop_top(cy, ch, src.1),
        path: simplify(points),
        fit: merge_spans(fit),
    }
}

/// [`face::smooth_path`] within each shot: the path jumps at a cut
/// instead of gliding across it.
pub(crate) fn smooth_by_shot(samples: &FaceSamples, cuts: &[f64]) -> Vec<f64> {
    shot_ranges(samples.len(), cuts)
        .into_iter()
        .flat_map(|r| face::smooth_path(&samples[r]))
        .collect()
}

/// A box of aspect `aw`:`ah` around a face, about `scale` face widths wide,
/// inside the source.
fn box_around(track: &Track, scale: f64, aw: f64, ah: f64, src: (u32, u32)) -> CropBox {
    box_within(track, scale, (aw, ah), src, (0.0, src.0 as f64))
}

/// [`box_around`] kept between the columns `left..right` (source px).
fn box_within(
    track: &Track,
    scale: f64,
    (aw, ah): (f64, f64),
    src: (u32, u32),
    (left, right): (f64, f64),
) -> CropBox {
    let (sw, sh) = (src.0 as f64, src.1 as f64);
    let room = (right - left).clamp(2.0, sw);
    let mut w = (track.size * sw * scale).max(32.0).min(room);
    let mut h = w * ah / aw;
    if h > sh {
        h = sh;
        w = h * aw / ah;
    }
    let even = |v: f64| (v / 2.0).floor() as u32 * 2;
    let (w, h) = (even(w).max(2), even(h).max(2));
    let x = (track.cx * sw - w as f64 / 2.0)
        .clamp(left.ceil(), (right.floor() - w as f64).max(left.ceil()));
    let y = (track.cy * sh - h as f64 / 2.0).clamp(0.0, sh - h as f64);
    CropBox {
        x: even(x),
        y: even(y),
        w,
        h,
    }
}

/// The size of each half of the output in a split: stacked in a portrait
/// frame (9:16, 4:5), side by side in a square or landscape one — a square
/// cut in two stacked halves gets two 2:1 strips that a face fills, with no
/// room for the caption line off a face; side by side each person keeps
/// head and shoulders and the line goes below the faces.
pub(crate) fn halves(out: (u32, u32)) -> [(u32, u32); 2] {
    let (w, h) = out;
    if h > w {
        let top = h / 2 / 2 * 2;
        [(w, top), (w, h - top)]
    } else {
        let left = w / 2 / 2 * 2;
        [(left, h), (w - left, h)]
    }
}

/// Split: each face (left one first) framed about 3.5 face widths wide;
/// on a split-screen source (a `seam`, share of the width, between the two
/// faces) each box stays inside its own panel. Without two faces, the
/// source's left and right halves.
pub fn split(
    pair: Option<[&Track; 2]>,
    seam: Option<f64>,
    src: (u32, u32),
    out: (u32, u32),
) -> Composition {
    let hs = halves(out);
    let boxes = match pair {
        Some(mut p) => {
            p.sort_by(|a, b| a.cx.total_cmp(&b.cx));
            let sw = src.0 as f64;
            // The seam line itself (a few px) belongs to neither panel.
            let panels = match seam {
                Some(s) if p[0].cx < s && s < p[1].cx => [(0.0, s * sw - 3.0), (s * sw + 3.0, sw)],
                _ => [(0.0, sw), (0.0, sw)],
            };
            [0, 1].map(|i| {
                let shape = (hs[i].0 as f64, hs[i].1 as f64);
                box_within(p[i], 3.5, shape, src, panels[i])
            })
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

/// The value of [`piecewise`]'s expression at `t`.
pub fn piecewise_at(points: &[(f64, f64)], t: f64) -> f64 {
    match points.iter().position(|(pt, _)| *pt > t) {
        None => points.last().map_or(0.0, |p| p.1),
        Some(0) => points[0].1,
        Some(i) => {
            let ((t0, x0), (t1, x1)) = (points[i - 1], points[i]);
            x0 + (x1 - x0) * (t - t0) / (t1 - t0).max(0.001)
        }
    }
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
        Composition::Follow { w, h, y, path, fit } if fit.is_empty() => {
            let _ = write!(
                g,
                "[0:v]crop=w={w}:h={h}:x='{}':y={y},{tail}",
                piecewise(path)
            );
        }
        Composition::Follow { w, h, y, path, fit } => {
            // The crop, and over it the fitted frame during `fit` spans.
            let spans = fit
                .iter()
                .map(|(a, b)| format!("between(t,{a:.3},{b:.3})"))
                .collect::<Vec<_>>()
                .join("+");
            let _ = write!(
                g,
                "[0:v]split=2[csrc][fitsrc];\
                 [csrc]crop=w={w}:h={h}:x='{}':y={y},scale={out_w}:{out_h}:flags=bicubic,setsar=1[crop];\
                 {};\
                 [crop][fitted]overlay=0:0:enable='{spans}',{tail}",
                piecewise(path),
                fit_chain("fitsrc", out, "fitted"),
            );
        }
        Composition::Split(boxes) => {
            let hs = halves(out);
            let stack = if out_h > out_w { "vstack" } else { "hstack" };
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
        Composition::Fit { inset } => match inset {
            Some(b) => {
                let (side, x, y) = inset_place(out);
                let _ = write!(
                    g,
                    "[0:v]split=2[fitsrc][facesrc];{};\
                     [facesrc]{},scale={side}:{side}:flags=bicubic,setsar=1[face];\
                     [base][face]overlay={x}:{y},{tail}",
                    fit_chain("fitsrc", out, "base"),
                    crop(b)
                );
            }
            None => {
                let _ = write!(g, "{},{tail}", fit_chain("0:v", out, ""));
            }
        },
    }
    g
}

/// `[input]` fitted into the output over a blurred, filled copy of itself,
/// ending in `[label]` (or open, to be continued with `,`, when `label` is
/// empty).
fn fit_chain(input: &str, (out_w, out_h): (u32, u32), label: &str) -> String {
    let (bw, bh) = (out_w / 4 / 2 * 2, out_h / 4 / 2 * 2);
    let end = if label.is_empty() {
        String::new()
    } else {
        format!("[{label}]")
    };
    format!(
        "[{input}]split=2[bgsrc][fgsrc];\
         [bgsrc]scale={bw}:{bh}:force_original_aspect_ratio=increase,crop={bw}:{bh},boxblur=10:2,scale={out_w}:{out_h}[bg];\
         [fgsrc]scale={out_w}:{out_h}:force_original_aspect_ratio=decrease[fg];\
         [bg][fg]overlay=(W-w)/2:(H-h)/2{end}"
    )
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
#[path = "graph_tests.rs"]
mod tests;
