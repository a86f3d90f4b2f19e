//! What the clip editor's timeline draws from (issue 29): the sound's
//! loudness over the stretch of source a clip can reach
//! (`getClipWaveform`), and the faces its current version's framing saw
//! per shot (`listClipFaces`), with the ids an edit's `reframe` spans take.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use clipforge_actors::projects::clip_edit::WAVEFORM_STEP;
use clipforge_actors::projects::clip_reframe::ClipFaces;

use super::clips::Tag;
use super::formats::ClipLayout;
use super::projects::project_error;
use super::{ApiResult, Auth, State};

pub struct ClipTimelineApi;

/// The loudness of the source around a clip.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Waveform {
    /// Source seconds of the first value.
    from_sec: f64,
    /// Seconds per value.
    step_sec: f64,
    /// Loudness of each step, dBFS (about -90 silent to 0 full scale).
    db: Vec<f32>,
}

/// A stretch of the clip, seconds on its timeline.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct TimeSpan {
    from_sec: f64,
    to_sec: f64,
}

/// Where a face is in one sampled frame (source pixels).
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct FaceBox {
    at_sec: f64,
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

/// One person: a face followed across the samples (one a second) and
/// shots of the clip.
#[derive(Object)]
struct ClipFace {
    /// What `reframe` spans name (most present and largest first).
    id: u32,
    /// Where it is seen.
    spans: Vec<TimeSpan>,
    boxes: Vec<FaceBox>,
}

/// A span of the current version framed by hand.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ReframeView {
    from_sec: f64,
    to_sec: f64,
    /// The crop's centre (source px) for a fixed crop.
    x: Option<f64>,
    /// The face followed, by the id it had when picked.
    face_id: Option<u32>,
}

/// The faces of a clip's current version.
#[derive(Object)]
struct ClipFacesView {
    /// The source frame (px), which `x` and the boxes are in.
    width: u32,
    height: u32,
    /// The layout drawn.
    layout: ClipLayout,
    /// Shots (a cut starts a new one), on the clip's timeline.
    shots: Vec<TimeSpan>,
    faces: Vec<ClipFace>,
    /// The current version's hand-set spans.
    reframe: Vec<ReframeView>,
}

fn view(f: ClipFaces) -> ClipFacesView {
    let (sw, sh) = (f.width as f64, f.height as f64);
    let span = |(a, b): (f64, f64)| TimeSpan {
        from_sec: a,
        to_sec: b,
    };
    ClipFacesView {
        width: f.width,
        height: f.height,
        layout: f.layout.as_str().into(),
        shots: f.shots.into_iter().map(span).collect(),
        faces: f
            .faces
            .into_iter()
            .map(|c| ClipFace {
                id: c.id,
                spans: c.spans.into_iter().map(span).collect(),
                boxes: c
                    .boxes
                    .into_iter()
                    .map(|(t, face)| {
                        let w = (face.size * sw).clamp(2.0, sw);
                        let h =
                            (w * clipforge_actors::projects::reframe::keepout::FACE_HEIGHT).min(sh);
                        let x = (face.cx * sw - w / 2.0).clamp(0.0, sw - w);
                        let y = (face.cy * sh - h / 2.0).clamp(0.0, sh - h);
                        FaceBox {
                            at_sec: t,
                            x: x.round() as u32,
                            y: y.round() as u32,
                            w: w.round() as u32,
                            h: h.round() as u32,
                        }
                    })
                    .collect(),
            })
            .collect(),
        reframe: f
            .reframe
            .into_iter()
            .map(|r| ReframeView {
                from_sec: r.from,
                to_sec: r.to,
                x: r.x,
                face_id: r.face,
            })
            .collect(),
    }
}

#[OpenApi(prefix_path = "/projects", tag = "Tag::Clips")]
impl ClipTimelineApi {
    /// The faces the clip's current version was framed from: each a person
    /// followed across the clip's samples (one a second) and shots, with
    /// its boxes in source pixels and an id that an edit's `reframe` spans
    /// take (`faceId`), and the version's hand-set spans. 409
    /// `faces_not_analysed` for a version rendered before faces were kept
    /// (change its layout once), `project_processing` while it runs.
    #[oai(
        path = "/:id/clips/:clip_id/faces",
        method = "get",
        operation_id = "listClipFaces"
    )]
    async fn faces(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
    ) -> ApiResult<Json<ClipFacesView>> {
        let faces = state
            .projects
            .clip_faces(&auth.user().account.id, &id.0, &clip_id.0)
            .await
            .map_err(project_error)?;
        Ok(Json(view(faces)))
    }

    /// The sound's loudness (dBFS, ten values a second) over the stretch of
    /// the source the clip can reach in an edit (its end less the longest
    /// length its preset allows, to its start plus that length): what the
    /// editor's timeline draws under the range handles.
    #[oai(
        path = "/:id/clips/:clip_id/waveform",
        method = "get",
        operation_id = "getClipWaveform"
    )]
    async fn waveform(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
    ) -> ApiResult<Json<Waveform>> {
        let (from_sec, db) = state
            .projects
            .clip_waveform(&auth.user().account.id, &id.0, &clip_id.0)
            .await
            .map_err(project_error)?;
        Ok(Json(Waveform {
            from_sec,
            step_sec: WAVEFORM_STEP,
            db: db
                .into_iter()
                .map(|v| if v.is_finite() { v } else { -90.0 })
                .collect(),
        }))
    }
}
