//! Reframing by hand (issue 29): the faces a clip's framing saw, listed as
//! tracks with ids for the editor ([`face_tracks`]), and spans of the clip
//! whose crop the user set — a fixed position or a face followed
//! ([`ManualSpan`]) — drawn over the automatic framing ([`apply`]).
//!
//! Spans are kept in source seconds, so they stay where they were put when
//! the clip's range changes later; a face picked is kept as the path of its
//! crop centre (not as an id), so it survives a new face analysis.

use serde::{Deserialize, Serialize};

use super::graph::{self, Composition};
pub use super::seen::SeenFaces;
use super::{keepout, tracks, Framing, Layout};
use crate::media::face::{shot_ranges, Face, SAMPLE_FPS};

/// At most this many hand-set spans per clip.
pub const MAX_SPANS: usize = 50;

/// The people of a framing, as the editor lists them: every face track
/// (faces linked across samples and shots, `reframe::tracks`) seen in at
/// least two samples (one in a clip of fewer than four), most present and
/// largest first. A track's id is its position in this list, which is the
/// same for the same analysis.
pub fn face_tracks(seen: &SeenFaces) -> Vec<tracks::Track> {
    let min = if seen.faces.len() < 4 { 1 } else { 2 };
    let mut out = tracks::build(&seen.analysis(), 0.0);
    out.retain(|t| t.positions.iter().flatten().count() >= min);
    out
}

/// A span of a clip whose crop the user set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManualSpan {
    /// Source seconds.
    pub from: f64,
    pub to: f64,
    /// The face followed (its id in the listing it was picked from), or
    /// `None` for a fixed position.
    pub face: Option<u32>,
    /// Where the crop is centred (source px) over time (source seconds):
    /// one point for a fixed position, the face's smoothed path for a
    /// face; held before the first point and after the last.
    pub centre: Vec<(f64, f64)>,
}

impl ManualSpan {
    /// A crop held centred at `x` (source px).
    pub fn fixed(from: f64, to: f64, x: f64) -> Self {
        Self {
            from,
            to,
            face: None,
            centre: vec![(from, x)],
        }
    }

    /// A crop following face track `id` of `seen` (whose range starts at
    /// source second `range_start`); `None` when there is no such face.
    pub fn following(
        seen: &SeenFaces,
        range_start: f64,
        id: u32,
        from: f64,
        to: f64,
    ) -> Option<Self> {
        let track = face_tracks(seen).into_iter().nth(id as usize)?;
        let filled: Vec<Option<Face>> = track.filled().into_iter().map(Some).collect();
        let xs = graph::smooth_by_shot(&filled, &seen.cuts);
        let centre = xs
            .iter()
            .enumerate()
            .map(|(i, cx)| (range_start + i as f64 / SAMPLE_FPS, cx * seen.width as f64))
            .collect();
        Some(Self {
            from,
            to,
            face: Some(id),
            centre,
        })
    }

    /// The crop centre (source px) at source second `t`.
    fn centre_at(&self, t: f64) -> f64 {
        graph::piecewise_at(&self.centre, t)
    }
}

/// `framing` (of the range `[start, start + duration)` of a `src` frame,
/// into `out`) with `spans` drawn by hand: inside each, a crop of the
/// output's shape centred where the span says; outside, the automatic
/// framing when it is a crop (single, speaker), else the whole frame over
/// its blurred copy. The faces the captions avoid are worked out again for
/// the new crop. No span inside the range: the framing unchanged.
pub fn apply(
    framing: &Framing,
    spans: &[ManualSpan],
    (start, duration): (f64, f64),
    src: (u32, u32),
    out: (u32, u32),
) -> Framing {
    let rel: Vec<(f64, f64, &ManualSpan)> = spans
        .iter()
        .map(|s| ((s.from - start).max(0.0), (s.to - start).min(duration), s))
        .filter(|(a, b, _)| b - a > 1e-3)
        .collect();
    if rel.is_empty() {
        return framing.clone();
    }
    let (cw, ch) = graph::crop_box(src.0, src.1, out.0, out.1);
    let edge = |centre: f64| graph::left_edge(centre / src.0.max(1) as f64, cw, src.0);
    let (layout, y, base, fit) = match &framing.composition {
        Composition::Follow { w, h, y, path, fit } if (*w, *h) == (cw, ch) => {
            (framing.layout, *y, path.clone(), fit.clone())
        }
        _ => {
            let cy = framing
                .seen
                .as_ref()
                .and_then(|s| mean_cy(&s.faces))
                .unwrap_or(0.5);
            let y = graph::crop_top(cy, ch, src.1);
            (
                Layout::Single,
                y,
                vec![(0.0, edge(src.0 as f64 / 2.0))],
                vec![(0.0, duration + 1.0)],
            )
        }
    };
    // Spans are half-open: a span that starts where another ends takes
    // over there.
    let inside = |t: f64| rel.iter().any(|(a, b, _)| t >= *a && t < *b);
    let mut points: Vec<(f64, f64)> = base.iter().copied().filter(|(t, _)| !inside(*t)).collect();
    for (a, b, span) in &rel {
        // The automatic crop held up to the span, then a jump (as at a cut).
        if *a > 0.0 && !inside(a - 0.001) {
            points.push((a - 0.001, graph::piecewise_at(&base, a - 0.001)));
        }
        points.push((*a, edge(span.centre_at(start + a))));
        let last = (b - 0.001).max(*a);
        for &(t, x) in &span.centre {
            let t = t - start;
            if t > *a && t < last {
                points.push((t, edge(x)));
            }
        }
        if last > *a {
            points.push((last, edge(span.centre_at(start + last))));
        }
        if *b < duration && !inside(*b) {
            points.push((*b, graph::piecewise_at(&base, *b)));
        }
    }
    points.sort_by(|p, q| p.0.total_cmp(&q.0));
    points.dedup_by(|p, q| (p.0 - q.0).abs() < 1e-6);
    let composition = Composition::Follow {
        w: cw,
        h: ch,
        y,
        path: graph::simplify(points),
        fit: subtract(
            &fit,
            &rel.iter().map(|(a, b, _)| (*a, *b)).collect::<Vec<_>>(),
        ),
    };
    let faces = match &framing.seen {
        Some(seen) => keepout::face_boxes(&seen.analysis(), &composition, src, out),
        None => framing.faces.clone(),
    };
    Framing {
        layout,
        reason: format!("{}; {} span(s) framed by hand", framing.reason, rel.len()),
        composition,
        faces,
        seen: framing.seen.clone(),
    }
}

fn mean_cy(faces: &[Vec<Face>]) -> Option<f64> {
    let ys: Vec<f64> = faces
        .iter()
        .filter_map(|f| f.first())
        .map(|f| f.cy)
        .collect();
    (!ys.is_empty()).then(|| ys.iter().sum::<f64>() / ys.len() as f64)
}

/// `spans` without the parts inside any of `holes`.
fn subtract(spans: &[(f64, f64)], holes: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = spans.to_vec();
    for &(ha, hb) in holes {
        out = out
            .into_iter()
            .flat_map(|(a, b)| {
                let mut parts = Vec::new();
                if a < ha {
                    parts.push((a, b.min(ha)));
                }
                if b > hb {
                    parts.push((a.max(hb), b));
                }
                parts
            })
            .filter(|(a, b)| b - a > 1e-3)
            .collect();
    }
    out
}

/// Source second of second `t` of a clip that starts at `start` and has
/// `cuts` (source seconds, ascending) dropped.
pub fn played_to_source(t: f64, start: f64, cuts: &[(f64, f64)]) -> f64 {
    let mut s = start + t;
    for &(a, b) in cuts {
        if a < s {
            s += b - a;
        }
    }
    s
}

/// Second of the played clip at source second `s` (`None`: inside a cut).
pub fn source_to_played(s: f64, start: f64, cuts: &[(f64, f64)]) -> Option<f64> {
    let mut t = s - start;
    for &(a, b) in cuts {
        if s >= b {
            t -= b - a;
        } else if s > a {
            return None;
        }
    }
    Some(t)
}

/// Shot `k` of `seen`'s sample range.
pub fn shot_of(seen: &SeenFaces, sample: usize) -> usize {
    shot_ranges(seen.faces.len(), &seen.cuts)
        .iter()
        .position(|r| r.contains(&sample))
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "manual_tests.rs"]
mod tests;
