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
pub mod signing;
pub mod target;

use std::fmt;

use rand::RngCore as _;
use serde::{Deserialize, Serialize};

use crate::storage::kv::{self, decode, encode, KvOp, KvStore, StorageError};

pub(crate) const WEBHOOKS: &str = "webhooks";
pub(crate) const DELIVERIES: &str = "webhook_deliveries";
pub(crate) const QUEUE: &str = "webhook_queue";

/// Most webhooks one account may register.
pub const MAX_WEBHOOKS: usize = 10;
/// Finished deliveries kept per webhook (the oldest go first).
pub const MAX_DELIVERIES: usize = 100;
/// Deliveries that may wait for a webhook; beyond, new events are not
/// queued for it (a test is refused).
pub const MAX_PENDING: usize = 1000;
/// Longest webhook URL accepted.
pub const URL_MAX_CHARS: usize = 2048;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum EventType {
    ProjectCompleted,
    ProjectFailed,
    PostPublished,
    PostFailed,
    CreditsLow,
    /// Sent only by `POST /api/webhooks/{id}/test`, to that webhook.
    Test,
    /// An edited or added clip's new version was rendered (after `Test`:
    /// bincode numbers variants in order).
    ClipRendered,
}

impl EventType {
    /// The types a webhook may subscribe to.
    pub const SUBSCRIBABLE: [EventType; 6] = [
        EventType::ProjectCompleted,
        EventType::ProjectFailed,
        EventType::ClipRendered,
        EventType::PostPublished,
        EventType::PostFailed,
        EventType::CreditsLow,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::ProjectCompleted => "project.completed",
            EventType::ProjectFailed => "project.failed",
            EventType::PostPublished => "post.published",
            EventType::PostFailed => "post.failed",
            EventType::CreditsLow => "credits.low",
            EventType::Test => "webhook.test",
            EventType::ClipRendered => "clip.rendered",
        }
    }

    pub fn parse(s: &str) -> Option<EventType> {
        Self::SUBSCRIBABLE.into_iter().find(|t| t.as_str() == s)
    }
}

/// What an event is about, as it was when the event was written: the
/// stored record (encoded), which the API layer renders in the shape its
/// endpoints answer with ([`delivery::Render`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Subject {
    /// An encoded `ProjectRecord`.
    Project(Vec<u8>),
    /// An encoded `PostRecord`.
    Post(Vec<u8>),
    Credits {
        remaining: u64,
        monthly: u64,
    },
    Test {
        webhook_id: String,
    },
    /// An encoded `ClipRecord`.
    Clip(Vec<u8>),
}

/// A registered endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredWebhook {
    pub id: String,
    pub user_id: String,
    pub url: String,
    pub events: Vec<EventType>,
    /// The signing secret (`whsec_…`).
    pub secret: String,
    pub created_at: i64,
    /// Since when every attempt failed; `None` after a success.
    pub failing_since: Option<i64>,
    /// Disabled after failing for `disable_after` (a notification says so).
    pub disabled: bool,
}
crate::record!(StoredWebhook, "webhook", 1);

/// Where a delivery stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeliveryStatus {
    /// Waiting for its next attempt.
    Pending,
    /// A 2xx answer came back.
    Delivered,
    /// Given up (24 hours of failures, or the webhook was disabled).
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }
}

/// One event for one webhook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredDelivery {
    /// The event id (the same for every webhook the event goes to).
    pub id: String,
    pub webhook_id: String,
    pub user_id: String,
    pub event: EventType,
    pub subject: Subject,
    pub created_at: i64,
    pub status: DeliveryStatus,
    pub attempts: u32,
    /// When the current run of retries began (creation, or a redelivery).
    pub retry_from: i64,
    pub next_attempt_at: Option<i64>,
    /// The queue entry that stands for the next attempt.
    pub queue_key: Option<Vec<u8>>,
    pub response_code: Option<u16>,
    pub last_error: Option<String>,
    pub delivered_at: Option<i64>,
}
crate::record!(StoredDelivery, "webhook delivery", 1);

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

fn webhook_key(user_id: &str, id: &str) -> Vec<u8> {
    format!("{user_id}/{id}").into_bytes()
}

fn deliveries_prefix(user_id: &str, webhook_id: &str) -> Vec<u8> {
    format!("{user_id}/{webhook_id}/").into_bytes()
}

pub(crate) fn delivery_key(user_id: &str, webhook_id: &str, created_at: i64, id: &str) -> Vec<u8> {
    let newest_first = u64::MAX - u64::try_from(created_at).unwrap_or(0);
    format!("{user_id}/{webhook_id}/{newest_first:016x}/{id}").into_bytes()
}

pub(crate) fn queue_key(due: i64, delivery_key: &[u8]) -> Vec<u8> {
    let mut k = format!("{:016x}/", u64::try_from(due).unwrap_or(0)).into_bytes();
    k.extend_from_slice(delivery_key);
    k
}

fn put<T: kv::Record>(tree: &str, key: Vec<u8>, value: &T) -> kv::Result<KvOp> {
    Ok(KvOp::Put {
        tree: tree.into(),
        key,
        value: encode(value)?,
    })
}

fn delete(tree: &str, key: Vec<u8>) -> KvOp {
    KvOp::Delete {
        tree: tree.into(),
        key,
    }
}

fn expect(tree: &str, key: Vec<u8>, value: Option<Vec<u8>>) -> KvOp {
    KvOp::Expect {
        tree: tree.into(),
        key,
        value,
    }
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The webhooks of `user_id`, oldest first.
pub(crate) fn stored_webhooks(kv: &dyn KvStore, user_id: &str) -> kv::Result<Vec<StoredWebhook>> {
    let mut all = kv
        .scan_prefix(WEBHOOKS, format!("{user_id}/").as_bytes())?
        .into_iter()
        .map(|(_, v)| decode::<StoredWebhook>(&v))
        .collect::<kv::Result<Vec<_>>>()?;
    all.sort_by_key(|w| w.created_at);
    Ok(all)
}

fn stored_webhook(kv: &dyn KvStore, user_id: &str, id: &str) -> Result<StoredWebhook> {
    match kv.get(WEBHOOKS, &webhook_key(user_id, id))? {
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
pub fn create(
    kv: &dyn KvStore,
    user_id: &str,
    url: &str,
    events: Vec<EventType>,
    now: i64,
) -> Result<WebhookView> {
    let existing = stored_webhooks(kv, user_id)?;
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
    kv.apply(vec![
        expect(WEBHOOKS, key.clone(), None),
        put(WEBHOOKS, key, &stored)?,
    ])?;
    Ok(WebhookView {
        secret: Some(stored.secret.clone()),
        ..stored.view()
    })
}

/// The user's webhooks, oldest first, without secrets.
pub fn list(kv: &dyn KvStore, user_id: &str) -> Result<Vec<WebhookView>> {
    Ok(stored_webhooks(kv, user_id)?
        .iter()
        .map(StoredWebhook::view)
        .collect())
}

/// Removes a webhook with its deliveries and their pending attempts.
pub fn remove(kv: &dyn KvStore, user_id: &str, id: &str) -> Result<()> {
    let key = webhook_key(user_id, id);
    let Some(bytes) = kv.get(WEBHOOKS, &key)? else {
        return Err(WebhookError::NotFound("webhook"));
    };
    let mut ops = vec![
        expect(WEBHOOKS, key.clone(), Some(bytes)),
        delete(WEBHOOKS, key),
    ];
    for (k, v) in kv.scan_prefix(DELIVERIES, &deliveries_prefix(user_id, id))? {
        let d: StoredDelivery = decode(&v)?;
        if let Some(q) = d.queue_key {
            ops.push(delete(QUEUE, q));
        }
        ops.push(delete(DELIVERIES, k));
    }
    kv.apply(ops)?;
    Ok(())
}

/// A page of a webhook's deliveries, newest first, and how many it has.
pub fn deliveries(
    kv: &dyn KvStore,
    user_id: &str,
    id: &str,
    skip: usize,
    take: usize,
) -> Result<(Vec<DeliveryView>, usize)> {
    stored_webhook(kv, user_id, id)?;
    let prefix = deliveries_prefix(user_id, id);
    let total = kv.count_prefix(DELIVERIES, &prefix)?;
    let page = kv
        .scan_prefix_page(DELIVERIES, &prefix, skip, take)?
        .into_iter()
        .map(|(_, v)| decode::<StoredDelivery>(&v).map(|d| d.view()))
        .collect::<kv::Result<Vec<_>>>()?;
    Ok((page, total))
}

fn find_delivery(
    kv: &dyn KvStore,
    user_id: &str,
    webhook_id: &str,
    delivery_id: &str,
) -> Result<(Vec<u8>, Vec<u8>, StoredDelivery)> {
    let suffix = format!("/{delivery_id}");
    for (k, v) in kv.scan_prefix(DELIVERIES, &deliveries_prefix(user_id, webhook_id))? {
        if k.ends_with(suffix.as_bytes()) {
            let d = decode(&v)?;
            return Ok((k, v, d));
        }
    }
    Err(WebhookError::NotFound("delivery"))
}

/// Sends a delivery again now (a new run of retries), whatever became of
/// it; the receiver sees the same `Clipforge-Delivery` id.
pub fn redeliver(
    kv: &dyn KvStore,
    user_id: &str,
    webhook_id: &str,
    delivery_id: &str,
    now: i64,
) -> Result<DeliveryView> {
    stored_webhook(kv, user_id, webhook_id)?;
    let (key, bytes, old) = find_delivery(kv, user_id, webhook_id, delivery_id)?;
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
    kv.apply(ops)?;
    outbox::ring();
    Ok(new.view())
}

/// Queues a `webhook.test` event for this webhook alone (also when it is
/// disabled: a test that succeeds enables it again).
pub fn test(kv: &dyn KvStore, user_id: &str, webhook_id: &str, now: i64) -> Result<DeliveryView> {
    let hook = stored_webhook(kv, user_id, webhook_id)?;
    let subject = Subject::Test {
        webhook_id: hook.id.clone(),
    };
    let (ops, delivery) =
        outbox::delivery_ops(kv, &hook, &new_id(), EventType::Test, &subject, now)?
            .ok_or(WebhookError::Backlog)?;
    kv.apply(ops)?;
    outbox::ring();
    Ok(delivery.view())
}

#[cfg(test)]
mod tests;
