//! The stored shape of webhooks and their deliveries: the trees, keys,
//! records and event types (see the table in the module documentation of
//! `webhooks`), shared by the API (`mod.rs`), the outbox and the delivery
//! actor.

use serde::{Deserialize, Serialize};

use crate::storage::kv::{self, decode, encode, KvOp, KvStore};

pub(crate) const WEBHOOKS: &str = "webhooks";
pub(crate) const DELIVERIES: &str = "webhook_deliveries";
pub(crate) const QUEUE: &str = "webhook_queue";

/// Finished deliveries kept per webhook (the oldest go first).
pub const MAX_DELIVERIES: usize = 100;
/// Deliveries that may wait for a webhook; beyond, new events are not
/// queued for it (a test is refused).
pub const MAX_PENDING: usize = 1000;

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
/// endpoints answer with ([`super::delivery::Render`]).
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

pub(crate) fn webhook_key(user_id: &str, id: &str) -> Vec<u8> {
    format!("{user_id}/{id}").into_bytes()
}

pub(crate) fn deliveries_prefix(user_id: &str, webhook_id: &str) -> Vec<u8> {
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

pub(crate) fn put<T: kv::Record>(tree: &str, key: Vec<u8>, value: &T) -> kv::Result<KvOp> {
    Ok(KvOp::Put {
        tree: tree.into(),
        key,
        value: encode(value)?,
    })
}

pub(crate) fn delete(tree: &str, key: Vec<u8>) -> KvOp {
    KvOp::Delete {
        tree: tree.into(),
        key,
    }
}

pub(crate) fn expect(tree: &str, key: Vec<u8>, value: Option<Vec<u8>>) -> KvOp {
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
pub(crate) async fn stored_webhooks_async(
    kv: &dyn KvStore,
    user_id: &str,
) -> kv::Result<Vec<StoredWebhook>> {
    let prefix = format!("{user_id}/");
    oldest_first(kv.scan_prefix_async(WEBHOOKS, prefix.as_bytes()).await?)
}

fn oldest_first(rows: kv::Rows) -> kv::Result<Vec<StoredWebhook>> {
    let mut all = rows
        .into_iter()
        .map(|(_, v)| decode::<StoredWebhook>(&v))
        .collect::<kv::Result<Vec<_>>>()?;
    all.sort_by_key(|w| w.created_at);
    Ok(all)
}
