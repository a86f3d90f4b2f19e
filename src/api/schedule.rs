//! Scheduling (contract 4.4): schedule one clip, bulk-schedule a project,
//! list, change and cancel scheduled posts.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};
use serde_json::{json, Value};

use super::{paging, ApiError, ApiResult, Auth, State};
use clipforge_actors::publish::engine::{BulkRequest, NewPost};
use clipforge_actors::publish::PublishError;

#[derive(Tags)]
enum Tag {
    /// Scheduled posts to TikTok, Instagram and YouTube.
    Scheduling,
}

pub struct ScheduleApi;

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ScheduleBody {
    /// tiktok, instagram or youtube (needs a connected account).
    provider: Option<String>,
    /// Title/caption of the post (YouTube: at most 100 characters).
    title: Option<String>,
    /// ISO 8601 UTC, e.g. 2026-05-01T18:00:00Z; not in the past (60 s grace).
    scheduled_at: Option<String>,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct BulkBody {
    /// Time of the first publication, ISO 8601 UTC.
    scheduled_at: Option<String>,
    /// Hours between consecutive clips: a number, 0–2160 (type errors are
    /// reported with the field's name).
    interval_hours: Option<Value>,
    /// Target platforms: an array of tiktok, instagram, youtube.
    providers: Option<Value>,
    /// Caption for every post (default: each clip's title).
    caption: Option<String>,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ChangeBody {
    title: Option<String>,
    scheduled_at: Option<String>,
}

#[derive(ApiResponse)]
enum Created {
    /// The ScheduledPost.
    #[oai(status = 201)]
    Created(Json<Value>),
}

impl From<PublishError> for ApiError {
    fn from(e: PublishError) -> Self {
        let (status, code) = e.status_code();
        let msg = e.to_string();
        match status {
            400 => ApiError::bad_request(code, msg),
            403 => ApiError::forbidden(code, msg),
            404 => ApiError::not_found(match e {
                PublishError::NotFound(what) => what,
                _ => "resource",
            }),
            409 => ApiError::conflict(code, msg),
            503 => ApiError::Unavailable(Json(super::ErrorBody {
                error: code.into(),
                message: msg,
            })),
            _ => ApiError::internal("scheduling", msg),
        }
    }
}

#[OpenApi(tag = "Tag::Scheduling")]
impl ScheduleApi {
    /// Schedule a clip: 201 with the ScheduledPost (`pending`). 404 when the
    /// clip is not the caller's; 403 `integration_required` without a
    /// connected account for the provider.
    #[oai(path = "/clips/:clip_id/schedule", method = "post")]
    async fn schedule(
        &self,
        state: Data<&State>,
        auth: Auth,
        clip_id: Path<String>,
        body: Json<ScheduleBody>,
    ) -> ApiResult<Created> {
        let b = body.0;
        let post = state
            .publishing
            .schedule(
                &auth.user().account.id,
                &clip_id.0,
                NewPost {
                    provider: b.provider.as_deref(),
                    title: b.title.as_deref(),
                    scheduled_at: b.scheduled_at.as_deref(),
                },
            )
            .await?;
        Ok(Created::Created(Json(post.view())))
    }

    /// The caller's scheduled posts by `scheduledAt`: `{scheduledPosts, total, page, limit}`.
    #[oai(path = "/clips/scheduled", method = "get")]
    async fn list(
        &self,
        state: Data<&State>,
        auth: Auth,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<Value>> {
        let (page, limit) = paging(page.0, limit.0);
        let (posts, total) = state
            .publishing
            .list(&auth.user().account.id, page, limit)
            .await?;
        let items: Vec<Value> = posts.iter().map(|p| p.view()).collect();
        Ok(Json(
            json!({ "scheduledPosts": items, "total": total, "page": page, "limit": limit }),
        ))
    }

    /// One scheduled post (its status, attempts, error and platform id).
    #[oai(path = "/clips/scheduled/:id", method = "get")]
    async fn get(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Value>> {
        Ok(Json(
            state
                .publishing
                .get(&auth.user().account.id, &id.0)
                .await?
                .view(),
        ))
    }

    /// Change the time and/or title while the post is `pending` (else 409 `not_pending`).
    #[oai(path = "/clips/scheduled/:id", method = "patch")]
    async fn change(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<ChangeBody>,
    ) -> ApiResult<Json<Value>> {
        let b = body.0;
        let post = state
            .publishing
            .change(
                &auth.user().account.id,
                &id.0,
                b.title.as_deref(),
                b.scheduled_at.as_deref(),
            )
            .await?;
        Ok(Json(post.view()))
    }

    /// Cancel a `pending` post (else 409 `not_pending`): `{id, deleted: true}`.
    #[oai(path = "/clips/scheduled/:id", method = "delete")]
    async fn cancel(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Value>> {
        state
            .publishing
            .cancel(&auth.user().account.id, &id.0)
            .await?;
        Ok(Json(json!({ "id": id.0, "deleted": true })))
    }

    /// Schedule every clip of a project, best score first: clip i at
    /// `scheduledAt + i × intervalHours`, one post per provider; all or
    /// nothing. `{scheduledPosts, count}`.
    #[oai(path = "/projects/:id/bulk-schedule", method = "post")]
    async fn bulk(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<BulkBody>,
    ) -> ApiResult<Json<Value>> {
        let b = body.0;
        let interval_hours = match b.interval_hours {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| {
                ApiError::from(PublishError::invalid(
                    "intervalHours",
                    "must be a number of hours",
                ))
            })?),
        };
        let providers: Option<Vec<String>> = match b.providers {
            None | Some(Value::Null) => None,
            Some(v) => Some(serde_json::from_value(v).map_err(|_| {
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
                    scheduled_at: b.scheduled_at.as_deref(),
                    interval_hours,
                    providers: providers.as_deref(),
                    caption: b.caption.as_deref(),
                },
            )
            .await?;
        let items: Vec<Value> = posts.iter().map(|p| p.view()).collect();
        Ok(Json(
            json!({ "scheduledPosts": items, "count": items.len() }),
        ))
    }
}
