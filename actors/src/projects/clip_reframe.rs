//! Reframing a clip by hand (issue 29): the faces its current version's
//! framing saw, listed with ids (`GET …/clips/{clipId}/faces`), and the
//! spans an edit sets (`reframe`: a crop position or a face to follow per
//! span), checked and turned into source-time spans
//! (`reframe::manual::ManualSpan`) that the render draws over the
//! automatic framing and keeps with the new version's framing.

use std::sync::Arc;

use super::api::ProjectError;
use super::domain::Projects;
use crate::media::face::{Face, SAMPLE_FPS};
use crate::projects::clip_history::framing_key;
use crate::projects::edit_kit::Kit;
use crate::projects::records::ClipRecord;
use crate::projects::reframe::manual::{self, ManualSpan, SeenFaces};
use crate::projects::reframe::Layout;
use crate::projects::stages::ahead::Preframed;

/// What a span of a `reframe` edit asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReframeTarget {
    /// The crop's horizontal centre, source pixels.
    X(f64),
    /// A face of `GET …/faces`, followed.
    Face(u32),
}

/// One span of a `reframe` edit, seconds of the clip as it will play after
/// the edit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReframeRequest {
    pub from: f64,
    pub to: f64,
    pub target: ReframeTarget,
}

/// One face track of a clip, on the clip's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipFace {
    pub id: u32,
    /// Where it is seen: (from, to) seconds.
    pub spans: Vec<(f64, f64)>,
    /// Its box in each sample it is in: (second, face in 0..1 frame
    /// coordinates).
    pub boxes: Vec<(f64, Face)>,
}

/// A hand-set span of the current version, on the clip's timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipReframe {
    pub from: f64,
    pub to: f64,
    /// The face followed (its id when picked), or the crop centre (px).
    pub face: Option<u32>,
    pub x: Option<f64>,
}

/// The faces of a clip's current version.
#[derive(Clone, Debug, PartialEq)]
pub struct ClipFaces {
    /// Source frame size (px).
    pub width: u32,
    pub height: u32,
    pub layout: String,
    pub shots: Vec<(f64, f64)>,
    pub faces: Vec<ClipFace>,
    pub reframe: Vec<ClipReframe>,
}

fn invalid(message: impl Into<String>) -> ProjectError {
    ProjectError::Invalid {
        field: "reframe",
        message: message.into(),
    }
}

fn not_analysed() -> ProjectError {
    ProjectError::Conflict {
        code: "faces_not_analysed",
        message: "this version's faces were not kept (it was rendered by an older build); \
                  change its layout once to analyse them"
            .into(),
    }
}

/// The framing the clip's current version was drawn with, if kept.
pub(super) async fn current_framing(projects: &Projects, clip: &ClipRecord) -> Option<Preframed> {
    let bytes = projects
        .objects
        .get_bytes(&framing_key(&clip.video_key))
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Second `t` of the analysed range on the clip's timeline (`None`:
/// inside a filler cut, or outside the clip).
fn on_clip(framed: &Preframed, clip: &ClipRecord, t: f64) -> Option<f64> {
    let s = framed.start + t;
    manual::source_to_played(s, clip.start, &clip.cuts)
        .filter(|p| *p >= -1e-6 && s <= clip.end + 1e-6)
        .map(|p| p.max(0.0))
}

impl Projects {
    /// The faces the current version of the clip was framed from, as face
    /// tracks with ids (the ids `reframe` takes), and its hand-set spans.
    pub async fn clip_faces(
        &self,
        user_id: &str,
        project_id: &str,
        clip_id: &str,
    ) -> Result<ClipFaces, ProjectError> {
        let (_, clip, _) = self.editable_clip(user_id, project_id, clip_id).await?;
        let framed = current_framing(self, &clip).await;
        let Some((framed, seen)) = framed.and_then(|f| f.framing.seen.clone().map(|s| (f, s)))
        else {
            return Err(not_analysed());
        };
        let step = 1.0 / SAMPLE_FPS;
        let faces = manual::face_tracks(&seen)
            .iter()
            .enumerate()
            .map(|(id, track)| {
                let boxes: Vec<(f64, Face)> = track
                    .positions
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| {
                        let (_, f) = (*p)?;
                        Some((on_clip(&framed, &clip, i as f64 * step)?, f))
                    })
                    .collect();
                let mut spans: Vec<(f64, f64)> = Vec::new();
                for (t, _) in &boxes {
                    match spans.last_mut() {
                        Some(last) if *t <= last.1 + 1e-6 => last.1 = t + step,
                        _ => spans.push((*t, t + step)),
                    }
                }
                let length = clip.duration();
                for s in &mut spans {
                    s.1 = s.1.min(length);
                }
                ClipFace {
                    id: id as u32,
                    spans,
                    boxes,
                }
            })
            .collect();
        let shots = seen
            .shots()
            .into_iter()
            .filter_map(|(a, b)| {
                let a = on_clip(&framed, &clip, a).unwrap_or(0.0);
                let b = on_clip(&framed, &clip, b)
                    .unwrap_or(clip.duration())
                    .min(clip.duration());
                (b > a).then_some((a, b))
            })
            .collect();
        let reframe = framed
            .manual
            .iter()
            .map(|m| ClipReframe {
                from: played(m.from, &clip),
                to: played(m.to, &clip),
                face: m.face,
                x: m.face
                    .is_none()
                    .then(|| m.centre.first().map_or(0.0, |c| c.1)),
            })
            .collect();
        Ok(ClipFaces {
            width: seen.width,
            height: seen.height,
            layout: clip.layout.clone(),
            shots,
            faces,
            reframe,
        })
    }

    /// The `reframe` of an edit as source-time spans, checked: each span
    /// inside the clip as it will play (`start`, `length` s, filler `cuts`),
    /// at least 0.1 s long, none overlapping, at most `MAX_SPANS`; `x`
    /// inside the source frame; a face id one of the current version's
    /// (`GET …/faces`).
    pub(super) async fn reframe_spans(
        self: &Arc<Self>,
        kit: &Kit,
        clip: &ClipRecord,
        (start, length, cuts): (f64, f64, &[(f64, f64)]),
        asked: &[ReframeRequest],
    ) -> Result<Vec<ManualSpan>, ProjectError> {
        if asked.len() > manual::MAX_SPANS {
            return Err(invalid(format!("at most {} spans", manual::MAX_SPANS)));
        }
        let width = kit.media.video.as_ref().map_or(0, |v| v.width) as f64;
        let mut sorted = asked.to_vec();
        sorted.sort_by(|a, b| a.from.total_cmp(&b.from));
        let mut seen: Option<(Preframed, SeenFaces)> = None;
        let mut out = Vec::with_capacity(sorted.len());
        for (i, r) in sorted.iter().enumerate() {
            let ok = r.from.is_finite()
                && r.to.is_finite()
                && r.from >= 0.0
                && r.to <= length + 0.05
                && r.to - r.from >= 0.1;
            if !ok {
                return Err(invalid(format!(
                    "a span must lie inside the clip (0 to {length:.2} s) and last at least 0.1 s"
                )));
            }
            if i > 0 && r.from < sorted[i - 1].to - 1e-6 {
                return Err(invalid("spans must not overlap"));
            }
            let (from, to) = (
                manual::played_to_source(r.from, start, cuts),
                manual::played_to_source(r.to.min(length), start, cuts),
            );
            let span = match r.target {
                ReframeTarget::X(x) => {
                    if !(0.0..=width).contains(&x) {
                        return Err(invalid(format!(
                            "x is the crop's centre in source pixels, 0 to {width}"
                        )));
                    }
                    ManualSpan::fixed(from, to, x)
                }
                ReframeTarget::Face(id) => {
                    if seen.is_none() {
                        let framed = current_framing(self, clip).await;
                        seen = framed.and_then(|f| f.framing.seen.clone().map(|s| (f, s)));
                    }
                    let (framed, faces) = seen.as_ref().ok_or_else(not_analysed)?;
                    ManualSpan::following(faces, framed.start, id, from, to).ok_or_else(|| {
                        invalid(format!(
                            "no face {id}: use an id of GET …/clips/{{clipId}}/faces"
                        ))
                    })?
                }
            };
            out.push(span);
        }
        Ok(out)
    }
}

/// Source second `s` on the clip's timeline (a second inside a filler cut
/// is where the cut is).
fn played(s: f64, clip: &ClipRecord) -> f64 {
    let mut t = s - clip.start;
    for &(a, b) in &clip.cuts {
        if s >= b {
            t -= b - a;
        } else if s > a {
            t -= s - a;
        }
    }
    t.clamp(0.0, clip.duration())
}

/// The layout an edit with hand-set spans draws: the one asked for when it
/// is a crop (single, speaker) or chosen per clip; otherwise single (a
/// hand-set crop needs one). `Err` when the edit itself asks for a layout
/// that shows the whole frame or two people.
pub(super) fn layout_for_reframe(
    asked: Option<Layout>,
    kept: Layout,
) -> Result<Layout, ProjectError> {
    let crop = |l: Layout| matches!(l, Layout::Single | Layout::Speaker | Layout::Auto);
    match asked {
        Some(l) if !crop(l) => Err(invalid(format!(
            "a hand-set crop needs the single, speaker or auto layout, not {l}"
        ))),
        Some(l) => Ok(l),
        None if crop(kept) => Ok(kept),
        None => Ok(Layout::Single),
    }
}
