//! Starts the node's webhook delivery (issue 31): the engine's
//! `DeliveryActor` under the `webhooks` branch of the supervision tree,
//! with the API's views to render events in the shapes the endpoints
//! answer with.

use std::sync::Arc;

use clipforge_actors::accounts::{NotificationKind, Said};
use clipforge_actors::engine::Engine;
use clipforge_actors::posts::post::PostRecord;
use clipforge_actors::projects::records::{ClipRecord, ProjectRecord};
use clipforge_actors::storage::kv::decode;
use clipforge_actors::storage::links::StableLinks;
use clipforge_actors::supervisor::spawner;
use clipforge_actors::webhooks::delivery::{
    Deliverer, DeliveryActor, OnDisabled, Render, ViewError,
};
use clipforge_actors::webhooks::Subject;
use poem_openapi::types::ToJSON;
use serde_json::{json, Value};

use crate::config::Config;

/// Renders subjects with the API's own types.
struct Views(Arc<StableLinks>);

impl Render for Views {
    fn data(&self, subject: &Subject) -> Result<Value, ViewError> {
        let data = match subject {
            Subject::Project(bytes) => {
                let p: ProjectRecord = decode(bytes)?;
                crate::api::projects_types::project_view(&p, &self.0).to_json()
            }
            Subject::Post(bytes) => {
                let p: PostRecord = decode(bytes)?;
                crate::api::posts::post_json(&p)
            }
            Subject::Credits { remaining, monthly } => {
                Some(json!({ "credits": remaining, "totalCredits": monthly }))
            }
            Subject::Clip(bytes) => {
                let c: ClipRecord = decode(bytes)?;
                crate::api::projects_types::clip_view(&c, &self.0).to_json()
            }
            Subject::Test { webhook_id } => Some(json!({
                "webhookId": webhook_id,
                "message": "A test event from Clipforge.",
            })),
        };
        data.ok_or(ViewError::NoJson)
    }
}

/// Starts the delivery actor (the `webhooks` branch).
pub async fn start(
    config: &Config,
    engine: &Arc<Engine>,
    links: Arc<StableLinks>,
) -> anyhow::Result<()> {
    let notify = Arc::downgrade(engine);
    let on_disabled: OnDisabled = Arc::new(move |user: String, url: String| {
        let notify = notify.clone();
        Box::pin(async move {
            let Some(s) = notify.upgrade() else {
                return;
            };
            let msg = format!(
                "Every delivery to {url} failed for 3 days: the webhook is disabled. \
                 Fix the endpoint, then send a test from the Developers page to enable it."
            );
            // Written outside the account's actor (as the publishing engine
            // does): its memory of the account is dropped afterwards.
            let said = Said::new("Webhook disabled", msg).with("url", url);
            let kind = NotificationKind::WebhookDisabled;
            match s
                .accounts()
                .notify_with(&user, kind, &said, Vec::new(), None, None)
                .await
            {
                Ok(_) => s.desk().unload(&user),
                Err(e) => {
                    tracing::error!(user, error = %e, "cannot notify of a disabled webhook")
                }
            }
        })
    });
    let deliverer = Deliverer::new(
        engine.kv().clone(),
        config.webhooks.settings(),
        Arc::new(Views(links)),
        on_disabled,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    engine
        .tree()
        .start_webhooks(
            "webhook-delivery",
            spawner("webhook-delivery", DeliveryActor, Arc::new(deliverer)),
        )
        .await
        .map_err(|e| anyhow::anyhow!("starting webhook delivery: {e}"))
}
