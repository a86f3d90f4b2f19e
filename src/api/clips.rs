//! The clip editor's operations (issue 29): edit a clip of a completed
//! project (its title at once; its range, words, layout, frame shape or
//! caption template as a new rendered version), list its caption words,
//! list and restore its versions, list the faces its framing saw and
//! reframe it by hand (`reframe` spans: a crop position or a face).

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};

use clipforge_actors::projects::clip_edit::{ClipChange, Edited};
use clipforge_actors::projects::clip_reframe::{ReframeRequest, ReframeTarget};
use clipforge_actors::projects::records::iso8601;
use clipforge_actors::projects::reframe::ParseError;

use super::formats::{AspectRatio, ClipLayout, DateTime, Text, Uri};
use super::projects::project_error;
use super::projects_types::{clip_view, Clip};
use super::{ApiError, ApiResult, Auth, State};

#[derive(Tags)]
pub(super) enum Tag {
    /// Editing clips.
    Clips,
}

pub struct ClipsApi;

/// One caption word's new text.
#[derive(Object)]
#[oai(deny_unknown_fields)]
struct WordFix {
    /// The word's position among the clip's caption words
    /// (`GET …/clips/{clipId}/words`, before this edit).
    index: u32,
    /// Its new text (one line, at most 100 characters); empty leaves the
    /// word out of the captions. Its timing is kept.
    #[oai(validator(max_length = 100))]
    text: String,
}

/// What to change of a clip; at least one field.
#[derive(Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
struct ClipEdit {
    /// New start in the source, seconds: a start inside a word moves to
    /// the word's start. May lie outside the original pick, anywhere in
    /// the processed source; the clip must last the project's preset
    /// range ±50 % (`auto`: 1 to 90 s).
    #[oai(nullable)]
    start_sec: Option<f64>,
    /// New end in the source, seconds: an end inside a word moves to the
    /// word's end.
    #[oai(nullable)]
    end_sec: Option<f64>,
    /// The clip's new title: one line, 1 to 100 characters (trimmed).
    /// Alone, it is saved at once (200, no render).
    #[oai(
        nullable,
        validator(
            min_length = 1,
            max_length = 100,
            pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
        )
    )]
    title: Option<Text>,
    /// Caption words to fix.
    #[oai(nullable, validator(max_items = 500))]
    words: Option<Vec<WordFix>>,
    #[oai(nullable)]
    layout: Option<ClipLayout>,
    #[oai(nullable)]
    aspect_ratio: Option<AspectRatio>,
    /// A saved template's id or name, or a preset name.
    #[oai(nullable, validator(min_length = 1, max_length = 100))]
    caption_template: Option<String>,
    /// Spans whose crop you set by hand (replacing the clip's earlier
    /// ones; `[]` removes them): in each, the crop centred at `x` or
    /// following a face of `GET …/clips/{clipId}/faces`; elsewhere the
    /// automatic framing. A layout without a crop (`split`, `screen`,
    /// `fit`) becomes `single`; asking for one together with `reframe` is
    /// a 400, and asking for one alone drops the spans.
    #[oai(nullable, validator(max_items = 50))]
    reframe: Option<Vec<ReframeSpan>>,
}

#[derive(ApiResponse)]
enum EditAnswer {
    /// Saved (a title alone: no render).
    #[oai(status = 200)]
    Saved(Json<Clip>),
    /// A new version is rendering: `status` is `rendering` and `version`
    /// the new one; the project's status stream reports `render` events,
    /// then `clip` and `completed`.
    #[oai(status = 202)]
    Rendering(Json<Clip>),
}

/// A caption word of a clip, on the clip's timeline.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ClipWord {
    index: u32,
    /// As the current version shows it (empty: left out).
    text: Text,
    start_sec: f64,
    end_sec: f64,
}

#[derive(Object)]
struct ClipWords {
    words: Vec<ClipWord>,
}

/// One version of a clip.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ClipVersionView {
    version: u32,
    /// True for the version the clip plays.
    current: bool,
    title: Text,
    start_sec: f64,
    end_sec: f64,
    layout: ClipLayout,
    quality: Text,
    url: Uri,
    thumbnail: Uri,
    created_at: DateTime,
}

#[derive(Object)]
struct ClipVersions {
    /// Oldest first.
    versions: Vec<ClipVersionView>,
}

/// A clip to add, picked by its range in the source.
#[derive(Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
struct NewClip {
    /// Start in the source, seconds (a start inside a word moves to the
    /// word's start).
    start_sec: f64,
    /// End in the source, seconds (an end inside a word moves to its end).
    end_sec: f64,
    /// Default: a title made from what is said, as for the other clips.
    #[oai(
        nullable,
        validator(
            min_length = 1,
            max_length = 100,
            pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
        )
    )]
    title: Option<Text>,
}

#[derive(ApiResponse)]
enum AddedClip {
    /// Added: `status` is `rendering` (version 1); its files appear when
    /// the project's status stream sends its `clip` event. If the render
    /// fails, the clip is removed again (a `render` event says why).
    #[oai(status = 202)]
    Rendering(Json<Clip>),
}

/// How many more clips to look for.
#[derive(Object)]
#[oai(deny_unknown_fields)]
struct MoreClips {
    /// 1 to 5 (default 1).
    #[oai(default = "one", validator(minimum(value = "1"), maximum(value = "5")))]
    count: u32,
}

fn one() -> u32 {
    1
}

#[derive(Object)]
struct FoundClips {
    /// The clips added, each `rendering`, best first.
    clips: Vec<Clip>,
}

#[derive(ApiResponse)]
enum FoundAnswer {
    /// Added and rendering.
    #[oai(status = 202)]
    Rendering(Json<FoundClips>),
}

#[OpenApi(prefix_path = "/projects", tag = "Tag::Clips")]
impl ClipsApi {
    /// Add a clip to a completed project by its range in the source: it is
    /// scored and titled like the others from the kept transcript (no
    /// credits, nothing transcribed again) and rendered (202). The range
    /// follows the rules of an edit's; 409 `project_processing`,
    /// `too_many_clips` (50 per project); 429 `too_many_renders`.
    #[oai(path = "/:id/clips", method = "post", operation_id = "addClip")]
    async fn add(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<NewClip>,
    ) -> ApiResult<AddedClip> {
        let b = body.0;
        let clip = state
            .projects
            .add_clip(
                &auth.user().account.id,
                &id.0,
                b.start_sec,
                b.end_sec,
                b.title.map(|t| t.0),
            )
            .await
            .map_err(project_error)?;
        Ok(AddedClip::Rendering(Json(clip_view(&clip, &state.links))))
    }

    /// The next best clips of a completed project: candidates of its
    /// length preset from the kept transcript and signals that overlap no
    /// clip it has (by more than 30 %), scored and titled as processing
    /// does, then rendered (202; no credits). 409 `no_more_clips` when
    /// nothing is left, `project_processing` while it runs; 429
    /// `too_many_renders`.
    #[oai(
        path = "/:id/more-clips",
        method = "post",
        operation_id = "findMoreClips"
    )]
    async fn more(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<MoreClips>,
    ) -> ApiResult<FoundAnswer> {
        let clips = state
            .projects
            .find_more_clips(&auth.user().account.id, &id.0, body.0.count as usize)
            .await
            .map_err(project_error)?;
        Ok(FoundAnswer::Rendering(Json(FoundClips {
            clips: clips.iter().map(|c| clip_view(c, &state.links)).collect(),
        })))
    }

    /// Edit a clip of a completed project. `title` alone is saved at once
    /// (200). A new range, fixed `words`, `layout`, `aspectRatio` or
    /// `captionTemplate` renders version n + 1 from the kept transcript
    /// (202; no credits): until it is done the clip plays version n; if it
    /// fails, version n stays and `renderError` says why. 409
    /// `project_processing` while the project runs, `clip_rendering` while
    /// the clip's last edit renders, `not_editable` for projects made
    /// before editing existed; 429 `too_many_renders` (with `Retry-After`)
    /// beyond two renders per account.
    #[oai(
        path = "/:id/clips/:clip_id",
        method = "patch",
        operation_id = "editClip"
    )]
    async fn edit(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
        body: Json<ClipEdit>,
    ) -> ApiResult<EditAnswer> {
        let b = body.0;
        let layout = match b.layout.as_deref() {
            None => None,
            Some(l) => Some(
                l.parse()
                    .map_err(|e: ParseError| bad("layout", &e.to_string()))?,
            ),
        };
        let aspect_ratio = match b.aspect_ratio.as_deref() {
            None => None,
            Some(a) => Some(
                a.parse()
                    .map_err(|e: ParseError| bad("aspectRatio", &e.to_string()))?,
            ),
        };
        let change = ClipChange {
            start: b.start_sec,
            end: b.end_sec,
            title: b.title.map(|t| t.0),
            words: b
                .words
                .unwrap_or_default()
                .into_iter()
                .map(|w| (w.index as usize, w.text))
                .collect(),
            layout,
            aspect_ratio,
            caption_template: b.caption_template,
            reframe: match b.reframe {
                None => None,
                Some(spans) => Some(
                    spans
                        .into_iter()
                        .map(reframe_request)
                        .collect::<Result<Vec<_>, _>>()?,
                ),
            },
        };
        let edited = state
            .projects
            .edit_clip(&auth.user().account.id, &id.0, &clip_id.0, change)
            .await
            .map_err(project_error)?;
        Ok(match edited {
            Edited::Saved(c) => EditAnswer::Saved(Json(clip_view(&c, &state.links))),
            Edited::Rendering(c) => EditAnswer::Rendering(Json(clip_view(&c, &state.links))),
        })
    }

    /// The clip's caption words as its current version shows them, with
    /// their times on the clip's timeline: `index` is what `words` edits
    /// name.
    #[oai(
        path = "/:id/clips/:clip_id/words",
        method = "get",
        operation_id = "listClipWords"
    )]
    async fn words(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
    ) -> ApiResult<Json<ClipWords>> {
        let words = state
            .projects
            .clip_words(&auth.user().account.id, &id.0, &clip_id.0)
            .await
            .map_err(project_error)?;
        Ok(Json(ClipWords {
            words: words
                .into_iter()
                .enumerate()
                .map(|(i, w)| ClipWord {
                    index: i as u32,
                    text: w.text.into(),
                    start_sec: w.start,
                    end_sec: w.end,
                })
                .collect(),
        }))
    }

    /// The clip's versions, oldest first; their files are kept until the
    /// project is deleted.
    #[oai(
        path = "/:id/clips/:clip_id/versions",
        method = "get",
        operation_id = "listClipVersions"
    )]
    async fn versions(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
    ) -> ApiResult<Json<ClipVersions>> {
        let clip = state
            .projects
            .clip(&auth.user().account.id, &id.0, &clip_id.0)
            .await
            .map_err(project_error)?;
        let current = clip.current(clip.current_bytes);
        let mut all = clip.history.clone();
        all.push(current);
        all.sort_by_key(|v| v.version);
        let links = &state.links;
        Ok(Json(ClipVersions {
            versions: all
                .into_iter()
                .map(|v| ClipVersionView {
                    current: v.version == clip.version,
                    version: v.version,
                    title: v.title.into(),
                    start_sec: v.start,
                    end_sec: v.end,
                    layout: v.layout.as_str().into(),
                    quality: v.quality.into(),
                    url: links.link(&v.video_key).into(),
                    thumbnail: links.link(&v.thumbnail_key).into(),
                    created_at: iso8601(v.created_at).into(),
                })
                .collect(),
        }))
    }

    /// Make an earlier version current again (as a new version sharing its
    /// files: nothing is rendered). 404 for a version the clip never had;
    /// 409 `clip_rendering` while an edit renders.
    #[oai(
        path = "/:id/clips/:clip_id/versions/:version/restore",
        method = "post",
        operation_id = "restoreClipVersion"
    )]
    async fn restore(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        clip_id: Path<String>,
        #[oai(validator(minimum(value = "1"), maximum(value = "4294967295")))] version: Path<u32>,
    ) -> ApiResult<Json<Clip>> {
        let clip = state
            .projects
            .restore_clip_version(&auth.user().account.id, &id.0, &clip_id.0, version.0)
            .await
            .map_err(project_error)?;
        Ok(Json(clip_view(&clip, &state.links)))
    }
}

/// A span of the clip whose crop is set by hand: give `x` or `faceId`.
#[derive(Object)]
#[oai(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReframeSpan {
    /// Seconds of the clip as it plays after the edit (0 to its length;
    /// at least 0.1 s long; spans must not overlap).
    #[oai(validator(minimum(value = "0")))]
    pub from_sec: f64,
    #[oai(validator(minimum(value = "0")))]
    pub to_sec: f64,
    /// The crop's horizontal centre, source pixels (0 to the source's
    /// width).
    #[oai(nullable, validator(minimum(value = "0")))]
    pub x: Option<f64>,
    /// A face of `GET …/clips/{clipId}/faces`: the crop follows it.
    #[oai(nullable)]
    pub face_id: Option<u32>,
}

fn reframe_request(s: ReframeSpan) -> Result<ReframeRequest, ApiError> {
    let target = match (s.x, s.face_id) {
        (Some(x), None) => ReframeTarget::X(x),
        (None, Some(id)) => ReframeTarget::Face(id),
        _ => return Err(bad("reframe", "give each span either x or faceId")),
    };
    Ok(ReframeRequest {
        from: s.from_sec,
        to: s.to_sec,
        target,
    })
}

fn bad(field: &str, msg: &str) -> ApiError {
    ApiError::bad_request("invalid_field", format!("{field}: {msg}"))
}
