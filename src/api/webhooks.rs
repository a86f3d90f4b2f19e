//! Signed webhooks (issue 31): register, list and remove endpoints, read
//! their delivery log, redeliver, send a test. Managing webhooks needs a
//! signed-in session (`scopes.rs`). Delivery itself is the engine's
//! (`clipforge_actors::webhooks`); `crate::webhooks` starts it.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};

use super::formats::{DateTime, DeliveryStatus, Text, Uri, Uuid, WebhookEventType};
use super::{paging, ApiError, ApiResult, Auth, State};
use clipforge_actors::accounts::{iso8601, now_ms};
use clipforge_actors::webhooks::{
    self as hooks, target, DeliveryView, WebhookError, WebhookView, MAX_WEBHOOKS,
};

#[derive(Tags)]
enum Tag {
    /// Signed webhooks: events sent to your endpoints.
    Webhooks,
}

pub struct WebhooksApi;

/// A new webhook.
#[derive(Object)]
struct NewWebhook {
    /// Where events are POSTed: http or https, at most 2,048 characters; a
    /// private, loopback or link-local address is refused unless the
    /// server allows private targets.
    #[oai(validator(min_length = 1, max_length = 2048))]
    url: Uri,
    /// The event types to send (`webhook.test` is always sent by
    /// `testWebhook` and cannot be named here).
    #[oai(validator(min_items = 1, max_items = 5))]
    events: Vec<WebhookEventType>,
}

/// A webhook as listed: never its secret.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Webhook {
    id: Uuid,
    url: Uri,
    events: Vec<WebhookEventType>,
    /// False once it failed for 3 days (a notification said so); a test
    /// delivery that succeeds enables it again.
    enabled: bool,
    created_at: DateTime,
    /// Since when every attempt failed; null when the last one worked.
    #[oai(nullable)]
    failing_since: Option<DateTime>,
}

/// A webhook just created: the only time its secret is shown.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct CreatedWebhook {
    #[oai(flatten)]
    info: Webhook,
    /// Verifies `Clipforge-Signature`: `t=<unix seconds>,v1=<hex
    /// HMAC-SHA256(secret, "<t>.<raw body>")>` (Stripe's scheme). Cannot be
    /// shown again.
    secret: Text,
}

#[derive(Object)]
struct WebhookList {
    /// Oldest first.
    webhooks: Vec<Webhook>,
}

/// One event sent (or being sent) to one webhook.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Delivery {
    /// The event id, sent as `Clipforge-Delivery`: the same on every
    /// attempt and redelivery (drop repeats by it).
    id: Uuid,
    event: WebhookEventType,
    status: DeliveryStatus,
    attempts: u32,
    /// The last attempt's HTTP status; null when none came back.
    #[oai(nullable)]
    response_code: Option<u16>,
    /// Why the last attempt failed; null after a success.
    #[oai(nullable)]
    last_error: Option<Text>,
    created_at: DateTime,
    /// Null unless `pending`.
    #[oai(nullable)]
    next_attempt_at: Option<DateTime>,
    #[oai(nullable)]
    delivered_at: Option<DateTime>,
}

#[derive(Object)]
struct DeliveryPage {
    /// Newest first: every waiting one and the last 100 finished.
    deliveries: Vec<Delivery>,
    total: u64,
    page: u64,
    limit: u64,
}

#[derive(Object)]
struct WebhookDeleted {
    /// Always true.
    deleted: bool,
}

#[derive(ApiResponse)]
enum Created {
    /// The webhook, with its secret shown this once.
    #[oai(status = 201)]
    Created(Json<CreatedWebhook>),
}

#[derive(ApiResponse)]
enum Queued {
    /// Queued: it is sent within a moment; follow it in the delivery log.
    #[oai(status = 202)]
    Accepted(Json<Delivery>),
}

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::Invalid(m) => ApiError::bad_request("invalid_webhook", m),
            WebhookError::PrivateTarget(m) => ApiError::bad_request("private_target", m),
            WebhookError::NotFound(what) => ApiError::not_found(what),
            WebhookError::TooMany => ApiError::conflict(
                "too_many_webhooks",
                format!("at most {MAX_WEBHOOKS} webhooks per account; delete one first"),
            ),
            e @ WebhookError::Backlog => ApiError::conflict("webhook_backlog", e.to_string()),
            WebhookError::Storage(e) => ApiError::internal("webhooks", e),
        }
    }
}

fn view(w: WebhookView) -> Webhook {
    Webhook {
        id: w.id.into(),
        url: w.url.into(),
        events: w.events.iter().map(|e| e.as_str().into()).collect(),
        enabled: w.enabled,
        created_at: iso8601(w.created_at).into(),
        failing_since: w.failing_since.map(|t| iso8601(t).into()),
    }
}

fn delivery(d: DeliveryView) -> Delivery {
    Delivery {
        id: d.id.into(),
        event: d.event.as_str().into(),
        status: d.status.as_str().into(),
        attempts: d.attempts,
        response_code: d.response_code,
        last_error: d.last_error.map(Text::from),
        created_at: iso8601(d.created_at).into(),
        next_attempt_at: d.next_attempt_at.map(|t| iso8601(t).into()),
        delivered_at: d.delivered_at.map(|t| iso8601(t).into()),
    }
}

#[OpenApi(prefix_path = "/webhooks", tag = "Tag::Webhooks")]
impl WebhooksApi {
    /// Register a webhook for the given events (signed-in session only);
    /// its signing secret is in the answer and nowhere else. At most 10
    /// per account (409 beyond).
    #[oai(path = "/", method = "post", operation_id = "createWebhook")]
    async fn create(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<NewWebhook>,
    ) -> ApiResult<Created> {
        let NewWebhook { url, events } = body.0;
        let names: Vec<&str> = events.iter().map(|e| &**e).collect();
        let events = hooks::parse_events(&names)?;
        let url = target::check_url(&url.0, state.config.webhooks.allow_private_targets)?;
        let uid = auth.user().account.id.clone();
        let created =
            hooks::create(state.engine.kv().as_ref(), &uid, &url, events, now_ms()).await?;
        let secret = created.secret.clone().unwrap_or_default();
        Ok(Created::Created(Json(CreatedWebhook {
            info: view(created),
            secret: secret.into(),
        })))
    }

    /// The account's webhooks, without their secrets.
    #[oai(path = "/", method = "get", operation_id = "listWebhooks")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<WebhookList>> {
        let uid = auth.user().account.id.clone();
        let all = hooks::list(state.engine.kv().as_ref(), &uid).await?;
        Ok(Json(WebhookList {
            webhooks: all.into_iter().map(view).collect(),
        }))
    }

    /// Remove a webhook: nothing more is sent to it (an attempt under way
    /// finishes); its delivery log goes with it.
    #[oai(path = "/:id", method = "delete", operation_id = "deleteWebhook")]
    async fn delete(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<WebhookDeleted>> {
        let uid = auth.user().account.id.clone();
        hooks::remove(state.engine.kv().as_ref(), &uid, &id.0).await?;
        Ok(Json(WebhookDeleted { deleted: true }))
    }

    /// A webhook's deliveries, newest first: status, attempts, the last
    /// answer and the next attempt.
    #[oai(
        path = "/:id/deliveries",
        method = "get",
        operation_id = "listWebhookDeliveries"
    )]
    async fn deliveries(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<DeliveryPage>> {
        let (page, limit) = paging(page.0, limit.0);
        let uid = auth.user().account.id.clone();
        let kv = state.engine.kv().as_ref();
        let (items, total) = hooks::deliveries(kv, &uid, &id.0, (page - 1) * limit, limit).await?;
        Ok(Json(DeliveryPage {
            deliveries: items.into_iter().map(delivery).collect(),
            total: total as u64,
            page: page as u64,
            limit: limit as u64,
        }))
    }

    /// Send a delivery again now, whatever became of it (with the same
    /// `Clipforge-Delivery` id), retried for another 24 hours if it fails.
    #[oai(
        path = "/:id/deliveries/:delivery_id/redeliver",
        method = "post",
        operation_id = "redeliverWebhook"
    )]
    async fn redeliver(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        delivery_id: Path<String>,
    ) -> ApiResult<Queued> {
        let uid = auth.user().account.id.clone();
        let kv = state.engine.kv().as_ref();
        let d = hooks::redeliver(kv, &uid, &id.0, &delivery_id.0, now_ms()).await?;
        Ok(Queued::Accepted(Json(delivery(d))))
    }

    /// Send a `webhook.test` event to this webhook (also when disabled: a
    /// test that succeeds enables it again). 409 `webhook_backlog` while
    /// 1,000 deliveries wait for it.
    #[oai(path = "/:id/test", method = "post", operation_id = "testWebhook")]
    async fn test(&self, state: Data<&State>, auth: Auth, id: Path<String>) -> ApiResult<Queued> {
        let uid = auth.user().account.id.clone();
        let d = hooks::test(state.engine.kv().as_ref(), &uid, &id.0, now_ms()).await?;
        Ok(Queued::Accepted(Json(delivery(d))))
    }
}
