//! Scheduling (contract 4.4): schedule one clip, bulk-schedule a project,
//! list, change and cancel scheduled posts.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};
use serde_json::Value;

use super::formats::{Checked, DateTime, PostStatus, Provider, Text, Uuid};
use super::{paging, ApiError, ApiResult, Auth, State};
use clipforge_actors::accounts::iso8601;
use clipforge_actors::posts::engine::{BulkRequest, NewPost};
use clipforge_actors::posts::post::{PostRecord, PostStatus as Status};
use clipforge_actors::posts::PublishError;

#[derive(Tags)]
enum Tag {
    /// Scheduled posts to TikTok, Instagram and YouTube.
    Scheduling,
}

pub struct ScheduleApi;

#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
struct ScheduleBody {
    /// Needs a connected account for the platform (else 403 `integration_required`).
    provider: Checked<Provider, true>,
    /// Title/caption of the post: not blank; YouTube at most 100
    /// characters, Instagram 2,200, TikTok 2,200.
    title: Checked<Text, true>,
    /// ISO 8601 UTC, e.g. 2026-05-01T18:00:00Z: from now (60 s grace) to
    /// 365 days ahead.
    scheduled_at: Checked<DateTime, true>,
}

impl poem_openapi::types::Example for ScheduleBody {
    fn example() -> Self {
        ScheduleBody {
            provider: Checked::of("youtube".into()),
            title: Checked::of("The first three seconds".into()),
            scheduled_at: Checked::of("2030-05-01T18:00:00Z".into()),
        }
    }
}

#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
struct BulkBody {
    /// Time of the first publication, ISO 8601 UTC (as for one post).
    scheduled_at: Checked<DateTime, true>,
    /// Hours between consecutive clips, 0 to 2160.
    interval_hours: Checked<f64, true>,
    /// Target platforms, at least one; each needs a connected account.
    providers: Checked<Vec<Provider>, true>,
    /// Caption for every post (default: each clip's title); the platforms'
    /// title limits apply.
    #[oai(nullable)]
    caption: Checked<Text>,
}

impl poem_openapi::types::Example for BulkBody {
    fn example() -> Self {
        BulkBody {
            scheduled_at: Checked::of("2030-05-01T18:00:00Z".into()),
            interval_hours: Checked::of(24.into()),
            providers: Checked::of(serde_json::json!(["tiktok", "youtube"])),
            caption: Checked::default(),
        }
    }
}

/// What to change of a pending post (or a failed one, to try it again);
/// omitted fields stay.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ChangeBody {
    #[oai(nullable)]
    title: Checked<Text>,
    #[oai(nullable)]
    scheduled_at: Checked<DateTime>,
}

/// A scheduled post (contract 2.5) with its publication details.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ScheduledPost {
    id: Uuid,
    user_id: Uuid,
    clip_id: Uuid,
    project_id: Uuid,
    provider: Provider,
    title: Text,
    scheduled_at: DateTime,
    status: PostStatus,
    created_at: DateTime,
    updated_at: DateTime,
    /// Failed attempts so far.
    attempts: u32,
    /// Why the last attempt or the post failed; `null` otherwise.
    #[oai(nullable)]
    error: Option<Text>,
    /// The platform's id of the published video; `null` until published.
    #[oai(nullable)]
    platform_post_id: Option<Text>,
    #[oai(nullable)]
    published_at: Option<DateTime>,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct PostPage {
    /// By `scheduledAt`.
    scheduled_posts: Vec<ScheduledPost>,
    total: u64,
    page: u64,
    limit: u64,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct BulkScheduled {
    scheduled_posts: Vec<ScheduledPost>,
    count: u64,
}

#[derive(Object)]
struct CancelledPost {
    id: Uuid,
    /// Always true.
    deleted: bool,
}

#[derive(ApiResponse)]
enum Created {
    /// Scheduled: the post is `pending`.
    #[oai(status = 201)]
    Created(Json<ScheduledPost>),
}

/// A post as the API shows it, as JSON (webhook events).
pub fn post_json(p: &PostRecord) -> Option<serde_json::Value> {
    poem_openapi::types::ToJSON::to_json(&view(p))
}

fn view(p: &PostRecord) -> ScheduledPost {
    ScheduledPost {
        id: p.id.clone().into(),
        user_id: p.user_id.clone().into(),
        clip_id: p.clip_id.clone().into(),
        project_id: p.project_id.clone().into(),
        provider: p.provider.as_str().into(),
        title: p.title.clone().into(),
        scheduled_at: iso8601(p.scheduled_at).into(),
        status: p.status.as_str().into(),
        created_at: iso8601(p.created_at).into(),
        updated_at: iso8601(p.updated_at).into(),
        attempts: p.attempts,
        error: p.error.clone().map(Text),
        platform_post_id: p.remote_id.clone().map(Text),
        published_at: (p.status == Status::Published)
            .then(|| p.finished_at.map(|t| DateTime(iso8601(t))))
            .flatten(),
    }
}

/// A text field checked here: missing or `null` is `None`, another type is
/// refused naming the field.
fn string<'a, T, const R: bool>(field: &str, v: &'a Checked<T, R>) -> ApiResult<Option<&'a str>> {
    match v.value() {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(PublishError::invalid(field, "must be a string").into()),
    }
}

/// A scheduling error's status and code in the uniform error body.
impl From<PublishError> for ApiError {
    fn from(e: PublishError) -> Self {
        use PublishError as E;
        let msg = e.to_string();
        let unavailable = |code: &str, message: String| {
            ApiError::Unavailable(Json(super::ErrorBody {
                error: code.into(),
                message,
            }))
        };
        match e {
            E::Invalid { .. } => ApiError::bad_request("invalid_field", msg),
            E::OAuth(_) => ApiError::bad_request("oauth_failed", msg),
            E::IntegrationRequired(_) => ApiError::forbidden("integration_required", msg),
            E::WrongSession => ApiError::forbidden("oauth_session_mismatch", msg),
            E::NotFound(what) => ApiError::not_found(what),
            E::Conflict { code, .. } => ApiError::conflict(code, msg),
            E::NotConfigured(_) => unavailable("provider_not_configured", msg),
            E::Upstream(_) => unavailable("provider_unavailable", msg),
            E::Storage(_) | E::Supervision(_) => ApiError::internal("scheduling", msg),
        }
    }
}

#[OpenApi(tag = "Tag::Scheduling")]
impl ScheduleApi {
    /// Schedule a clip: 201 with the ScheduledPost (`pending`). 404 when the
    /// clip is not the caller's; 403 `integration_required` without a
    /// connected account for the provider.
    #[oai(
        path = "/clips/:clip_id/schedule",
        method = "post",
        operation_id = "scheduleClip"
    )]
    async fn schedule(
        &self,
        state: Data<&State>,
        auth: Auth,
        clip_id: Path<String>,
        body: Json<ScheduleBody>,
    ) -> ApiResult<Created> {
        let b = body.0;
        let provider = string("provider", &b.provider)?;
        let title = string("title", &b.title)?;
        let scheduled_at = string("scheduledAt", &b.scheduled_at)?;
        let post = state
            .publishing
            .schedule(
                &auth.user().account.id,
                &clip_id.0,
                NewPost {
                    provider,
                    title,
                    scheduled_at,
                },
            )
            .await?;
        Ok(Created::Created(Json(view(&post))))
    }

    /// The caller's scheduled posts by `scheduledAt`: `{scheduledPosts, total, page, limit}`.
    #[oai(
        path = "/clips/scheduled",
        method = "get",
        operation_id = "listScheduledPosts"
    )]
    async fn list(
        &self,
        state: Data<&State>,
        auth: Auth,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<PostPage>> {
        let (page, limit) = paging(page.0, limit.0);
        let (posts, total) = state
            .publishing
            .list(&auth.user().account.id, page, limit)
            .await?;
        Ok(Json(PostPage {
            scheduled_posts: posts.iter().map(view).collect(),
            total: total as u64,
            page: page as u64,
            limit: limit as u64,
        }))
    }

    /// One scheduled post (its status, attempts, error and platform id).
    #[oai(
        path = "/clips/scheduled/:id",
        method = "get",
        operation_id = "getScheduledPost"
    )]
    async fn get(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<ScheduledPost>> {
        Ok(Json(view(
            &state.publishing.get(&auth.user().account.id, &id.0).await?,
        )))
    }

    /// Change the time and/or title while the post is `pending`; a `failed`
    /// post given a new `scheduledAt` is tried again (back to `pending`, its
    /// error cleared; the platform account must still be connected). Else
    /// 409 `not_pending`.
    #[oai(
        path = "/clips/scheduled/:id",
        method = "patch",
        operation_id = "changeScheduledPost"
    )]
    async fn change(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<ChangeBody>,
    ) -> ApiResult<Json<ScheduledPost>> {
        let b = body.0;
        let title = string("title", &b.title)?;
        let scheduled_at = string("scheduledAt", &b.scheduled_at)?;
        let post = state
            .publishing
            .change(&auth.user().account.id, &id.0, title, scheduled_at)
            .await?;
        Ok(Json(view(&post)))
    }

    /// Cancel a `pending` post or remove a `failed` one (else 409
    /// `not_pending`): `{id, deleted: true}`.
    #[oai(
        path = "/clips/scheduled/:id",
        method = "delete",
        operation_id = "cancelScheduledPost"
    )]
    async fn cancel(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<CancelledPost>> {
        state
            .publishing
            .cancel(&auth.user().account.id, &id.0)
            .await?;
        Ok(Json(CancelledPost {
            id: id.0.into(),
            deleted: true,
        }))
    }

    /// Schedule every clip of a project, best score first: clip i at
    /// `scheduledAt + i × intervalHours`, one post per provider; all or
    /// nothing. `{scheduledPosts, count}`.
    #[oai(
        path = "/projects/:id/bulk-schedule",
        method = "post",
        operation_id = "bulkSchedule"
    )]
    async fn bulk(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<BulkBody>,
    ) -> ApiResult<Json<BulkScheduled>> {
        let b = body.0;
        let scheduled_at = string("scheduledAt", &b.scheduled_at)?;
        let caption = string("caption", &b.caption)?;
        let interval_hours = match b.interval_hours.value() {
            None => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| {
                ApiError::from(PublishError::invalid(
                    "intervalHours",
                    "must be a number of hours",
                ))
            })?),
        };
        let providers: Option<Vec<String>> = match b.providers.value() {
            None => None,
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|_| {
                ApiError::from(PublishError::invalid(
                    "providers",
                    "must be an array of tiktok, instagram, youtube",
                ))
            })?),
        };
        let posts = state
            .publishing
            .bulk_schedule(
                &auth.user().account.id,
                &id.0,
                BulkRequest {
                    scheduled_at,
                    interval_hours,
                    providers: providers.as_deref(),
                    caption,
                },
            )
            .await?;
        Ok(Json(BulkScheduled {
            count: posts.len() as u64,
            scheduled_posts: posts.iter().map(view).collect(),
        }))
    }
}
