//! Projects (contract 4.3): create, list, get, cancel, delete, and live
//! status as Server-Sent Events.

use std::time::Duration;

use futures_util::stream::{self, BoxStream, StreamExt};
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::{EventStream, Json};
use poem_openapi::types::ToJSON;
use poem_openapi::{OpenApi, Tags};
use tokio_util::sync::CancellationToken;

use super::media::{meta_error, meta_timeout};
use super::projects_types::{
    clip_view, event_data, project_view, status_text, CancelledProject, CreateProject,
    CreatedProject, DeletedProject, NewProject, ProjectPage, ProjectWithClips, SseEvent,
};
use super::templates::TemplateStyle;
use super::{paging, ApiError, ApiResult, Auth, RawJson, State};
use clipforge_actors::media::download;
use clipforge_actors::projects::api::{NewProject as CreateRequest, NewSource, ProjectError};
use clipforge_actors::projects::events::ProjectEvent;
use clipforge_actors::projects::records::{ProjectRecord, ProjectState};
use clipforge_actors::projects::reframe::{AspectRatio, Layout, ParseError};
use clipforge_actors::projects::stages::score::preset_range;
use clipforge_actors::projects::stages::steer::MAX_PROMPT_CHARS;

#[derive(Tags)]
enum Tag {
    /// Projects and their clips.
    Projects,
}

pub struct ProjectsApi;

/// The caller's project, or 404 (also for another user's project).
pub(super) async fn owned_project(
    state: &State,
    user_id: &str,
    id: &str,
) -> ApiResult<ProjectRecord> {
    state
        .projects
        .project(user_id, id)
        .await
        .map_err(project_error)
}

/// The engine's typed refusal as the uniform error body.
pub(super) fn project_error(e: ProjectError) -> ApiError {
    match e {
        ProjectError::Invalid { field, message } => bad(field, &message),
        ProjectError::NotFound(what) => ApiError::not_found(what),
        ProjectError::NotRunning(st) => ApiError::conflict(
            "not_running",
            format!("the project is already {}", status_text(st)),
        ),
        ProjectError::Processing(st) => ApiError::conflict(
            "project_processing",
            format!(
                "the project is still being processed ({}): its clips can be edited once it is done",
                status_text(st)
            ),
        ),
        ProjectError::Account(e) => e.into(),
        ProjectError::Conflict { code, message } => ApiError::conflict(code, message),
        ProjectError::Busy {
            retry_after_secs,
            message,
        } => {
            crate::ratelimit::note_retry_after(retry_after_secs);
            ApiError::TooManyRequests(Json(super::ErrorBody {
                error: "too_many_renders".into(),
                message,
            }))
        }
        ProjectError::Internal(e) => ApiError::internal("project operation", e),
    }
}

fn sse_event(e: ProjectEvent) -> SseEvent {
    SseEvent {
        id: e.id.to_string().into(),
        event: e.body.name().into(),
        data: event_data(&e.body).into(),
    }
}

fn bad(field: &str, msg: &str) -> ApiError {
    ApiError::bad_request("invalid_field", format!("{field}: {msg}"))
}

#[OpenApi(prefix_path = "/projects", tag = "Tag::Projects")]
impl ProjectsApi {
    /// The user's projects, newest first: `{projects, total, page, limit}`.
    #[oai(path = "/", method = "get", operation_id = "listProjects")]
    async fn list(
        &self,
        state: Data<&State>,
        auth: Auth,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<RawJson<ProjectPage>> {
        let (page, limit) = paging(page.0, limit.0);
        let uid = auth.user().account.id.clone();
        let body = state
            .projects
            .listing_page(&uid, (page - 1) * limit, limit, |items, total| {
                let page = ProjectPage {
                    projects: items
                        .iter()
                        .map(|p| project_view(p, &state.links))
                        .collect(),
                    total: total as u64,
                    page: page as u64,
                    limit: limit as u64,
                };
                serde_json::to_vec(&page.to_json())
                    .unwrap_or_default()
                    .into()
            })
            .await
            .map_err(|e| ApiError::internal("listing projects", e))?;
        Ok(RawJson::new(body))
    }

    /// Create a project: credits are checked and reserved (402 when short), the
    /// template is clamped, then processing is queued.
    #[oai(path = "/", method = "post", operation_id = "createProject")]
    async fn create(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<CreateProject>,
    ) -> ApiResult<CreatedProject> {
        let user = auth.user().account.clone();
        let b = body.0;
        let preset = b
            .clip_duration_preset
            .clone()
            .map(|p| p.0)
            .unwrap_or_else(|| "auto".into());
        if preset_range(&preset).is_none() {
            return Err(bad("clipDurationPreset", "use auto, 15-30, 30-60 or 60-90"));
        }
        if let Some(d) = b.duration_sec {
            if !(d.is_finite() && d > 0.0) {
                return Err(bad("durationSec", "must be a positive number of seconds"));
            }
        }
        let layout: Layout = match b.layout.as_deref() {
            None => Layout::Auto,
            Some(l) => l
                .parse()
                .map_err(|e: ParseError| bad("layout", &e.to_string()))?,
        };
        let aspect_ratio: AspectRatio = match b.aspect_ratio.as_deref() {
            None => AspectRatio::Vertical,
            Some(a) => a
                .parse()
                .map_err(|e: ParseError| bad("aspectRatio", &e.to_string()))?,
        };
        let prompt = b
            .prompt
            .as_deref()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty());
        if prompt
            .as_ref()
            .is_some_and(|p| p.chars().count() > MAX_PROMPT_CHARS)
        {
            return Err(bad(
                "prompt",
                &format!("at most {MAX_PROMPT_CHARS} characters"),
            ));
        }
        let source = match (b.source_url.as_deref(), b.file_key.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(bad("sourceUrl", "send sourceUrl or fileKey, not both"))
            }
            (None, None) => return Err(bad("sourceUrl", "sourceUrl or fileKey is required")),
            (Some(url), None) => {
                let url = url.trim().to_string();
                if !download::is_supported_url(&url, &state.config.sources.extra_hosts) {
                    return Err(ApiError::bad_request(
                        "unsupported_platform",
                        "sourceUrl: not a supported platform (YouTube or Vimeo)",
                    ));
                }
                let meta =
                    download::metadata(&url, meta_timeout(&state), &CancellationToken::new())
                        .await
                        .map_err(meta_error)?;
                NewSource::Url {
                    url,
                    duration_sec: meta.duration_sec,
                    title: meta.title,
                    thumbnail: meta.thumbnail,
                    language: download::language_code(&meta.language),
                }
            }
            (None, Some(key)) => NewSource::Upload(key.to_string()),
        };
        let record = state
            .projects
            .create_project(CreateRequest {
                user_id: user.id.clone(),
                source,
                title: b.title.map(|t| t.0),
                thumbnail: b.thumbnail.map(|t| t.0),
                duration_sec: b.duration_sec,
                preset,
                caption_template: b.caption_template.map(|t| t.0).unwrap_or_default(),
                skip_cuts: b.skip_cuts.unwrap_or(false),
                layout,
                aspect_ratio,
                prompt,
                remove_fillers: b.remove_fillers.unwrap_or(false),
                language: b.language.clone(),
            })
            .await
            .map_err(project_error)?;
        Ok(CreatedProject::Created(Json(NewProject {
            project_id: record.id.clone().into(),
            project: project_view(&record, &state.links),
        })))
    }

    /// A project, its clips and the caption style they are rendered in. Media
    /// URLs are stable links that redirect (307) to fresh signed URLs.
    #[oai(path = "/:id", method = "get", operation_id = "getProject")]
    async fn get(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<ProjectWithClips>> {
        let (p, clips) = state
            .projects
            .project_with_clips(&auth.user().account.id, &id.0)
            .await
            .map_err(project_error)?;
        Ok(Json(ProjectWithClips {
            project: project_view(&p, &state.links),
            clips: clips.iter().map(|c| clip_view(c, &state.links)).collect(),
            caption_style: TemplateStyle::from(&p.style),
        }))
    }

    /// Cancel processing: stops the running stage and its processes, releases
    /// the reserved credits and removes the project.
    #[oai(path = "/:id/cancel", method = "post", operation_id = "cancelProject")]
    async fn cancel(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<CancelledProject>> {
        let p = state
            .projects
            .cancel_project_of(&auth.user().account.id, &id.0)
            .await
            .map_err(project_error)?;
        Ok(Json(CancelledProject {
            project_id: p.id.into(),
            status: status_text(ProjectState::Cancelled).into(),
        }))
    }

    /// Delete a project, its clips and their media; its pending scheduled
    /// posts are cancelled (removed, never published), and its upload is
    /// deleted and leaves the storage quota unless another project uses it.
    #[oai(path = "/:id", method = "delete", operation_id = "deleteProject")]
    async fn delete(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<DeletedProject>> {
        let p = owned_project(&state, &auth.user().account.id, &id.0).await?;
        state
            .publishing
            .cancel_project_posts(&p.user_id, &p.id)
            .await
            .map_err(|e| ApiError::internal("cancelling the project's posts", e))?;
        state
            .projects
            .delete_project_of(&p)
            .await
            .map_err(project_error)?;
        Ok(Json(DeletedProject {
            project_id: p.id.into(),
            deleted: true,
        }))
    }

    /// Live progress as Server-Sent Events: `progress`, `clip`, then one of
    /// `completed`, `failed`, `cancelled`, after which the stream ends. Every
    /// event has an id; reconnect with `Last-Event-ID` to get what was missed.
    #[oai(path = "/:id/status", method = "get", operation_id = "projectStatus")]
    async fn status(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        #[oai(name = "Last-Event-ID")] last_event_id: Header<Option<String>>,
    ) -> ApiResult<EventStream<BoxStream<'static, SseEvent>>> {
        // Held by the stream: at most `limits.sse_per_account` open at once.
        let permit = state
            .guard
            .sse_permit(&auth.user().account.id)
            .ok_or_else(|| {
                ApiError::TooManyRequests(Json(super::ErrorBody {
                    error: "too_many_streams".into(),
                    message: "too many open status streams for this account; close one first"
                        .into(),
                }))
            })?;
        let after: u64 = last_event_id
            .0
            .as_deref()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let sub = state
            .projects
            .subscribe_project(&auth.user().account.id, &id.0, after)
            .await
            .map_err(project_error)?;
        let (backlog, last) = (sub.backlog, sub.last);
        let head = stream::iter(backlog.into_iter().map(sse_event));
        let live = match sub.live {
            None => stream::empty().boxed(),
            Some(rx) => stream::unfold((rx, last, false), |(mut rx, last, done)| async move {
                if done {
                    return None;
                }
                loop {
                    match rx.recv().await {
                        Ok(e) if e.id <= last && !e.is_terminal() => continue,
                        Ok(e) => {
                            let terminal = e.is_terminal();
                            let id = e.id.max(last);
                            return Some((sse_event(e), (rx, id, terminal)));
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(_) => return None,
                    }
                }
            })
            .boxed(),
        };
        let events = head.chain(live).map(move |e| {
            let _held = &permit;
            e
        });
        Ok(EventStream::new(events.boxed())
            .keep_alive(Duration::from_secs(15))
            .to_event(|e| {
                poem::web::sse::Event::message(e.data.0)
                    .event_type(e.event.0)
                    .id(e.id.0)
            }))
    }
}
