//! Editing a project's clips (issue 29): for now a clip's title. The other
//! edits of the editor (range, words, layout, reframing, versions) are not
//! built yet, so the body refuses any other field (400) instead of
//! ignoring it.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, Tags};

use super::formats::Text;
use super::projects::project_error;
use super::projects_types::{clip_view, Clip};
use super::{ApiResult, Auth, State};

#[derive(Tags)]
enum Tag {
    /// Editing clips.
    Clips,
}

pub struct ClipsApi;

/// What to change of a clip.
#[derive(Object)]
#[oai(deny_unknown_fields)]
struct ClipEdit {
    /// The clip's new title: one line, 1 to 100 characters (trimmed).
    #[oai(validator(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
    ))]
    title: Text,
}

#[OpenApi(prefix_path = "/projects", tag = "Tag::Clips")]
impl ClipsApi {
    /// Edit a clip of a completed project: its `title` (no render needed;
    /// exports and new posts use it). 409 `project_processing` while the
    /// project is still being processed; another user's clip is 404.
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
    ) -> ApiResult<Json<Clip>> {
        let clip = state
            .services
            .retitle_clip(&auth.user().account.id, &id.0, &clip_id.0, &body.0.title.0)
            .await
            .map_err(project_error)?;
        Ok(Json(clip_view(&clip, &state.links)))
    }
}
