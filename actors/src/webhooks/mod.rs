//! Signed webhooks (issue 31): an account registers URLs that hear about
//! its projects, posts and credits as they change.
//!
//! An event is written in the same atomic store write as the change that
//! causes it ([`outbox::enqueue`], called where the notification of that
//! change is written): one delivery per subscribed webhook, and a queue
//! entry that says when to try it. The node's delivery actor
//! ([`delivery`]) takes due entries, POSTs the event signed with the
//! webhook's secret (Stripe's scheme, [`signing`]) and records the outcome;
//! a failure is tried again with exponential backoff for 24 hours. A node
//! killed mid-delivery leaves the entry in the queue: the next start (or
//! another node, once the claim expired) delivers it. Delivery is at least
//! once; the `Clipforge-Delivery` header (the event id) lets a receiver drop
//! a repeat.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `webhooks` | `user/webhook id` | [`StoredWebhook`] |
//! | `webhook_deliveries` | `user/webhook id/newest-first time/event id` | [`StoredDelivery`] |
//! | `webhook_queue` | `due time (16 hex)/delivery key` | the delivery key |

pub mod delivery;
pub mod outbox;
mod records;
pub mod signing;
pub mod target;

use std::fmt;

use rand::RngCore as _;

use records::stored_webhooks_async;
use records::{delete, deliveries_prefix, expect, put, webhook_key};
pub(crate) use records::{new_id, queue_key, StoredDelivery, StoredWebhook};
pub use records::{DeliveryStatus, EventType, Subject, MAX_DELIVERIES, MAX_PENDING};
pub(crate) use records::{DELIVERIES, QUEUE, WEBHOOKS};

use crate::storage::kv::{self, decode, KvOp, KvStore, StorageError};

/// Most webhooks one account may register.
pub const MAX_WEBHOOKS: usize = 10;
/// Longest webhook URL accepted.
pub const URL_MAX_CHARS: usize = 2048;

/// A webhook as listings show it (the secret only at creation).
#[derive(Clone, Debug, PartialEq)]
pub struct WebhookView {
    pub id: String,
    pub url: String,
    pub events: Vec<EventType>,
    pub enabled: bool,
    pub created_at: i64,
    /// Since when it has been failing; `None` when its last attempt worked.
    pub failing_since: Option<i64>,
    /// Shown once, by [`create`].
    pub secret: Option<String>,
}

/// A delivery as listings show it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryView {
    pub id: String,
    pub event: EventType,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub response_code: Option<u16>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub next_attempt_at: Option<i64>,
    pub delivered_at: Option<i64>,
}

/// Why a webhook request was refused.
#[derive(Debug)]
pub enum WebhookError {
    Invalid(String),
    /// The URL points at a private, loopback or link-local address.
    PrivateTarget(String),
    NotFound(&'static str),
    TooMany,
    /// [`MAX_PENDING`] deliveries are waiting already.
    Backlog,
    Storage(StorageError),
}

impl fmt::Display for WebhookError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WebhookError::Invalid(m) | WebhookError::PrivateTarget(m) => f.write_str(m),
            WebhookError::NotFound(what) => write!(f, "{what} not found"),
            WebhookError::TooMany => write!(f, "at most {MAX_WEBHOOKS} webhooks per account"),
            WebhookError::Backlog => write!(
                f,
                "{MAX_PENDING} deliveries are waiting for this webhook; wait for them or delete it"
            ),
            WebhookError::Storage(e) => write!(f, "storage: {e}"),
        }
    }
}

impl From<StorageError> for WebhookError {
    fn from(e: StorageError) -> Self {
        WebhookError::Storage(e)
    }
}

pub type Result<T> = std::result::Result<T, WebhookError>;

impl StoredWebhook {
    fn view(&self) -> WebhookView {
        WebhookView {
            id: self.id.clone(),
            url: self.url.clone(),
            events: self.events.clone(),
            enabled: !self.disabled,
            created_at: self.created_at,
            failing_since: self.failing_since,
            secret: None,
        }
    }
}

impl StoredDelivery {
    fn view(&self) -> DeliveryView {
        DeliveryView {
            id: self.id.clone(),
            event: self.event,
            status: self.status,
            attempts: self.attempts,
            response_code: self.response_code,
            last_error: self.last_error.clone(),
            created_at: self.created_at,
            next_attempt_at: self.next_attempt_at,
            delivered_at: self.delivered_at,
        }
    }
}

async fn stored_webhook(kv: &dyn KvStore, user_id: &str, id: &str) -> Result<StoredWebhook> {
    match kv.get_async(WEBHOOKS, &webhook_key(user_id, id)).await? {
        Some(v) => Ok(decode(&v)?),
        None => Err(WebhookError::NotFound("webhook")),
    }
}

/// The event types named, each once; at least one.
pub fn parse_events<S: AsRef<str>>(names: &[S]) -> Result<Vec<EventType>> {
    let mut events = Vec::new();
    for n in names {
        let known = EventType::SUBSCRIBABLE.map(EventType::as_str).join(", ");
        events.push(EventType::parse(n.as_ref()).ok_or_else(|| {
            WebhookError::Invalid(format!("events: {:?} is not one of {known}", n.as_ref()))
        })?);
    }
    events.sort();
    events.dedup();
    if events.is_empty() {
        return Err(WebhookError::Invalid(
            "events: name at least one event type".into(),
        ));
    }
    Ok(events)
}

/// Registers a webhook; the answer carries its signing secret, shown only
/// here. `url` must already have passed [`target::check_url`].
pub async fn create(
    kv: &dyn KvStore,
    user_id: &str,
    url: &str,
    events: Vec<EventType>,
    now: i64,
) -> Result<WebhookView> {
    let existing = stored_webhooks_async(kv, user_id).await?;
    if existing.len() >= MAX_WEBHOOKS {
        return Err(WebhookError::TooMany);
    }
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let stored = StoredWebhook {
        id: new_id(),
        user_id: user_id.into(),
        url: url.into(),
        events,
        secret: format!("whsec_{}", hex::encode(secret)),
        created_at: now,
        failing_since: None,
        disabled: false,
    };
    let key = webhook_key(user_id, &stored.id);
    kv.apply_async(vec![
        expect(WEBHOOKS, key.clone(), None),
        put(WEBHOOKS, key, &stored)?,
    ])
    .await?;
    Ok(WebhookView {
        secret: Some(stored.secret.clone()),
        ..stored.view()
    })
}

/// The user's webhooks, oldest first, without secrets.
pub async fn list(kv: &dyn KvStore, user_id: &str) -> Result<Vec<WebhookView>> {
    Ok(stored_webhooks_async(kv, user_id)
        .await?
        .iter()
        .map(StoredWebhook::view)
        .collect())
}

/// Removes a webhook with its deliveries and their pending attempts.
pub async fn remove(kv: &dyn KvStore, user_id: &str, id: &str) -> Result<()> {
    let key = webhook_key(user_id, id);
    let Some(bytes) = kv.get_async(WEBHOOKS, &key).await? else {
        return Err(WebhookError::NotFound("webhook"));
    };
    let mut ops = vec![
        expect(WEBHOOKS, key.clone(), Some(bytes)),
        delete(WEBHOOKS, key),
    ];
    let prefix = deliveries_prefix(user_id, id);
    for (k, v) in kv.scan_prefix_async(DELIVERIES, &prefix).await? {
        let d: StoredDelivery = decode(&v)?;
        if let Some(q) = d.queue_key {
            ops.push(delete(QUEUE, q));
        }
        ops.push(delete(DELIVERIES, k));
    }
    kv.apply_async(ops).await?;
    Ok(())
}

/// A page of a webhook's deliveries, newest first, and how many it has.
pub async fn deliveries(
    kv: &dyn KvStore,
    user_id: &str,
    id: &str,
    skip: usize,
    take: usize,
) -> Result<(Vec<DeliveryView>, usize)> {
    stored_webhook(kv, user_id, id).await?;
    let prefix = deliveries_prefix(user_id, id);
    let total = kv.count_prefix_async(DELIVERIES, &prefix).await?;
    let page = kv
        .scan_prefix_page_async(DELIVERIES, &prefix, skip, take)
        .await?
        .into_iter()
        .map(|(_, v)| decode::<StoredDelivery>(&v).map(|d| d.view()))
        .collect::<kv::Result<Vec<_>>>()?;
    Ok((page, total))
}

async fn find_delivery(
    kv: &dyn KvStore,
    user_id: &str,
    webhook_id: &str,
    delivery_id: &str,
) -> Result<(Vec<u8>, Vec<u8>, StoredDelivery)> {
    let suffix = format!("/{delivery_id}");
    let prefix = deliveries_prefix(user_id, webhook_id);
    for (k, v) in kv.scan_prefix_async(DELIVERIES, &prefix).await? {
        if k.ends_with(suffix.as_bytes()) {
            let d = decode(&v)?;
            return Ok((k, v, d));
        }
    }
    Err(WebhookError::NotFound("delivery"))
}

/// Sends a delivery again now (a new run of retries), whatever became of
/// it; the receiver sees the same `Clipforge-Delivery` id.
pub async fn redeliver(
    kv: &dyn KvStore,
    user_id: &str,
    webhook_id: &str,
    delivery_id: &str,
    now: i64,
) -> Result<DeliveryView> {
    stored_webhook(kv, user_id, webhook_id).await?;
    let (key, bytes, old) = find_delivery(kv, user_id, webhook_id, delivery_id).await?;
    let queue = queue_key(now, &key);
    let new = StoredDelivery {
        status: DeliveryStatus::Pending,
        retry_from: now,
        next_attempt_at: Some(now),
        queue_key: Some(queue.clone()),
        ..old.clone()
    };
    let mut ops = vec![expect(DELIVERIES, key.clone(), Some(bytes))];
    if let Some(q) = old.queue_key {
        ops.push(delete(QUEUE, q));
    }
    ops.push(put(DELIVERIES, key.clone(), &new)?);
    ops.push(KvOp::Put {
        tree: QUEUE.into(),
        key: queue,
        value: key,
    });
    kv.apply_async(ops).await?;
    outbox::ring();
    Ok(new.view())
}

/// Queues a `webhook.test` event for this webhook alone (also when it is
/// disabled: a test that succeeds enables it again).
pub async fn test(
    kv: &dyn KvStore,
    user_id: &str,
    webhook_id: &str,
    now: i64,
) -> Result<DeliveryView> {
    let hook = stored_webhook(kv, user_id, webhook_id).await?;
    let subject = Subject::Test {
        webhook_id: hook.id.clone(),
    };
    let (ops, delivery) =
        outbox::delivery_ops(kv, &hook, &new_id(), EventType::Test, &subject, now)
            .await?
            .ok_or(WebhookError::Backlog)?;
    kv.apply_async(ops).await?;
    outbox::ring();
    Ok(delivery.view())
}

#[cfg(test)]
mod tests;
