//! The delivery actor: one per node, under the `webhooks` branch of the
//! supervision tree. It sweeps the queue (when an event is written on this
//! node, and every poll interval for those written elsewhere), sends each
//! due delivery — at most `concurrency` at once, each bounded by the
//! attempt timeout — and records the outcome in one conditional write.
//!
//! In a cluster every node sweeps the same queue; a node first *claims* an
//! entry by moving it, conditionally, to "due at now + claim time": of two
//! nodes only one can make that write, and the other skips the entry. The
//! claim outlives the attempt, so while it runs no other node takes it; a
//! node that dies mid-delivery leaves the claim to expire, and the entry is
//! sent again (at least once). Outcomes are written on condition that the
//! delivery is still as claimed, so a late writer cannot overwrite a newer
//! state. One node alone (sled) has no one to race and does not claim.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::signing::sign;
use super::target::literal_refused;
use super::{
    delete, expect, put, queue_key, DeliveryStatus, StoredDelivery, StoredWebhook, Subject,
    DELIVERIES, QUEUE, WEBHOOKS,
};
use crate::storage::kv::{self, decode, encode, KvOp, KvStore, StorageError};

/// Due entries read per sweep.
const SWEEP_BATCH: usize = 64;
/// Characters of an error or response kept on a delivery.
const ERROR_MAX_CHARS: usize = 300;

/// How the API renders an event's subject in the shape its endpoints
/// answer with (the engine holds records, not HTTP views).
pub trait Render: Send + Sync + 'static {
    fn data(&self, subject: &Subject) -> Result<Value, ViewError>;
}

/// Why an event's subject could not be rendered (the delivery fails with
/// "cannot render the event: …").
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The record the event carries does not decode.
    #[error(transparent)]
    Decode(#[from] StorageError),
    /// The view does not serialize as JSON.
    #[error("the view has no JSON form")]
    NoJson,
}

/// Why a [`Deliverer`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DelivererError {
    /// The HTTP client (its proxy, TLS) could not be built.
    #[error("webhook HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Called once when a webhook is disabled: `(user id, url)`.
pub type OnDisabled = Arc<
    dyn Fn(String, String) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// `[webhooks]` settings.
#[derive(Clone, Debug)]
pub struct DeliverySettings {
    pub attempt_timeout: Duration,
    /// First retry after this; each next one twice as late, up to `retry_max`.
    pub retry_base: Duration,
    pub retry_max: Duration,
    /// A delivery is given up this long after its first attempt.
    pub retry_for: Duration,
    /// A webhook failing for this long is disabled.
    pub disable_after: Duration,
    /// How often the queue is read when nothing rang.
    pub poll: Duration,
    pub concurrency: usize,
    pub allow_private: bool,
    /// Every delivery through this HTTP proxy (an egress proxy that
    /// enforces its own rules); none: direct, without the environment's
    /// proxy variables.
    pub proxy: Option<String>,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(10),
            retry_base: Duration::from_secs(10),
            retry_max: Duration::from_secs(3600),
            retry_for: Duration::from_secs(24 * 3600),
            disable_after: Duration::from_secs(3 * 24 * 3600),
            poll: Duration::from_secs(1),
            concurrency: 8,
            allow_private: false,
            proxy: None,
        }
    }
}

/// What sends deliveries (the actor's state).
pub struct Deliverer {
    kv: Arc<dyn KvStore>,
    client: reqwest::Client,
    settings: DeliverySettings,
    render: Arc<dyn Render>,
    on_disabled: OnDisabled,
    /// Whether other nodes sweep the same queue (claims needed).
    claim: bool,
}

/// How an attempt ended.
struct Outcome {
    ok: bool,
    code: Option<u16>,
    error: Option<String>,
}

pub(crate) fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

fn due_of(queue_key: &[u8]) -> Option<i64> {
    let hex = std::str::from_utf8(queue_key.get(..16)?).ok()?;
    i64::try_from(u64::from_str_radix(hex, 16).ok()?).ok()
}

fn cut(text: &str) -> String {
    text.chars().take(ERROR_MAX_CHARS).collect()
}

impl Deliverer {
    pub fn new(
        kv: Arc<dyn KvStore>,
        settings: DeliverySettings,
        render: Arc<dyn Render>,
        on_disabled: OnDisabled,
    ) -> Result<Self, DelivererError> {
        let client = super::target::client(
            settings.attempt_timeout,
            settings.allow_private,
            settings.proxy.as_deref(),
        )
        .map_err(DelivererError::Client)?;
        let claim = kv.leases().is_some();
        Ok(Self {
            kv,
            client,
            settings,
            render,
            on_disabled,
            claim,
        })
    }

    /// How long a claim keeps other nodes off an entry: longer than an
    /// attempt can take.
    fn claim_ms(&self) -> i64 {
        2 * self.settings.attempt_timeout.as_millis() as i64 + 5_000
    }

    /// The delay before attempt `attempts + 1`.
    pub fn backoff(&self, attempts: u32) -> Duration {
        let base = self.settings.retry_base;
        let factor = 1u32 << attempts.saturating_sub(1).min(20);
        base.saturating_mul(factor).min(self.settings.retry_max)
    }

    /// Sends what is due now; returns how many entries were due (a full
    /// batch means more may be waiting).
    pub async fn sweep(self: &Arc<Self>) -> kv::Result<usize> {
        let now = now_ms();
        let due: Vec<(Vec<u8>, Vec<u8>)> = self
            .kv
            .scan_prefix_page_async(QUEUE, b"", 0, SWEEP_BATCH)
            .await?
            .into_iter()
            .filter(|(k, _)| due_of(k).is_some_and(|d| d <= now))
            .collect();
        let count = due.len();
        let mut running = JoinSet::new();
        for (queue, delivery) in due {
            while running.len() >= self.settings.concurrency.max(1) {
                Self::joined(running.join_next().await);
            }
            let this = self.clone();
            running.spawn(async move { this.attempt(queue, delivery).await });
        }
        while let Some(done) = running.join_next().await {
            Self::joined(Some(done));
        }
        Ok(count)
    }

    fn joined(done: Option<Result<kv::Result<()>, tokio::task::JoinError>>) {
        match done {
            Some(Ok(Err(e))) => tracing::warn!(error = %e, "webhook delivery not recorded"),
            Some(Err(e)) => tracing::error!(error = %e, "webhook delivery task failed"),
            _ => {}
        }
    }

    /// One attempt of the delivery the queue entry `queue` stands for.
    async fn attempt(&self, queue: Vec<u8>, key: Vec<u8>) -> kv::Result<()> {
        let claim_until = self.claim.then(|| now_ms() + self.claim_ms());
        let taken = take(&*self.kv, &queue, &key, claim_until).await?;
        let Some((bytes, delivery, hook, queue)) = taken else {
            return Ok(());
        };
        let outcome = self.send(&delivery, &hook).await;
        let retry = self.backoff(delivery.attempts + 1);
        let (disabled, url) = record(
            &*self.kv,
            &key,
            bytes,
            &queue,
            delivery,
            &outcome,
            retry,
            &self.settings,
        )
        .await?;
        if disabled {
            (self.on_disabled)(hook.user_id.clone(), url).await;
        }
        Ok(())
    }

    /// The event's body, signed, POSTed to the webhook.
    async fn send(&self, d: &StoredDelivery, hook: &StoredWebhook) -> Outcome {
        let failed = |error: String| Outcome {
            ok: false,
            code: None,
            error: Some(cut(&error)),
        };
        let data = match self.render.data(&d.subject) {
            Ok(v) => v,
            Err(e) => return failed(format!("cannot render the event: {e}")),
        };
        let body = json!({
            "id": d.id,
            "type": d.event.as_str(),
            "createdAt": iso(d.created_at),
            "data": data,
        })
        .to_string();
        let url = match reqwest::Url::parse(&hook.url) {
            Ok(u) => u,
            Err(e) => return failed(format!("bad URL: {e}")),
        };
        if let Some(why) = literal_refused(&url, self.settings.allow_private) {
            return failed(format!("refused: {why}"));
        }
        let t = now_ms() / 1000;
        let request = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .header("Clipforge-Event", d.event.as_str())
            .header("Clipforge-Delivery", &d.id)
            .header(
                "Clipforge-Signature",
                sign(body.as_bytes(), &hook.secret, t),
            )
            .body(body);
        match request.send().await {
            Ok(r) if r.status().is_success() => Outcome {
                ok: true,
                code: Some(r.status().as_u16()),
                error: None,
            },
            Ok(r) => {
                let code = r.status().as_u16();
                Outcome {
                    ok: false,
                    code: Some(code),
                    error: Some(format!("answered {code}")),
                }
            }
            Err(e) if e.is_timeout() => failed(format!(
                "no answer within {} s",
                self.settings.attempt_timeout.as_secs_f64()
            )),
            Err(e) => {
                let mut why = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    why = format!("{why}: {s}");
                    source = s.source();
                }
                failed(why)
            }
        }
    }
}

/// Reads the delivery behind a due entry and, when it is still to be sent,
/// takes it: under `claim_until`, moves the entry there first (conditional:
/// another node that moved it first wins). `None` when there is nothing to
/// send (the entry is stale, the webhook gone or disabled).
#[allow(clippy::type_complexity)]
async fn take(
    kv: &dyn KvStore,
    queue: &[u8],
    key: &[u8],
    claim_until: Option<i64>,
) -> kv::Result<Option<(Vec<u8>, StoredDelivery, StoredWebhook, Vec<u8>)>> {
    let Some(bytes) = kv.get_async(DELIVERIES, key).await? else {
        return drop_stale(kv, queue, key).await;
    };
    let mut delivery: StoredDelivery = decode(&bytes)?;
    if delivery.status != DeliveryStatus::Pending || delivery.queue_key.as_deref() != Some(queue) {
        return drop_stale(kv, queue, key).await;
    }
    let hook_key = format!("{}/{}", delivery.user_id, delivery.webhook_id).into_bytes();
    let Some(hook) = kv.get_async(WEBHOOKS, &hook_key).await? else {
        return drop_stale(kv, queue, key).await;
    };
    let hook: StoredWebhook = decode(&hook)?;
    if hook.disabled && delivery.event != super::EventType::Test {
        let mut failed = delivery.clone();
        failed.status = DeliveryStatus::Failed;
        failed.next_attempt_at = None;
        failed.queue_key = None;
        failed.last_error = Some("the webhook is disabled".into());
        return match kv
            .apply_async(vec![
                expect(DELIVERIES, key.to_vec(), Some(bytes)),
                delete(QUEUE, queue.to_vec()),
                put(DELIVERIES, key.to_vec(), &failed)?,
            ])
            .await
        {
            Err(StorageError::Conflict(_)) | Ok(()) => Ok(None),
            Err(e) => Err(e),
        };
    }
    let Some(until) = claim_until else {
        return Ok(Some((bytes, delivery, hook, queue.to_vec())));
    };
    let claimed = queue_key(until, key);
    delivery.queue_key = Some(claimed.clone());
    let new_bytes = encode(&delivery)?;
    let claim = vec![
        expect(DELIVERIES, key.to_vec(), Some(bytes)),
        expect(QUEUE, queue.to_vec(), Some(key.to_vec())),
        delete(QUEUE, queue.to_vec()),
        KvOp::Put {
            tree: QUEUE.into(),
            key: claimed.clone(),
            value: key.to_vec(),
        },
        KvOp::Put {
            tree: DELIVERIES.into(),
            key: key.to_vec(),
            value: new_bytes.clone(),
        },
    ];
    match kv.apply_async(claim).await {
        Ok(()) => Ok(Some((new_bytes, delivery, hook, claimed))),
        // Another node took it (or the user redelivered it) meanwhile.
        Err(StorageError::Conflict(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes the queue entry `queue` if it still points at `key` (a stale
/// entry: nothing to send).
async fn drop_stale<T>(kv: &dyn KvStore, queue: &[u8], key: &[u8]) -> kv::Result<Option<T>> {
    match kv
        .apply_async(vec![
            expect(QUEUE, queue.to_vec(), Some(key.to_vec())),
            delete(QUEUE, queue.to_vec()),
        ])
        .await
    {
        Err(StorageError::Conflict(_)) | Ok(()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes an attempt's outcome (only if the delivery is still as taken)
/// and the webhook's health; returns whether this disabled the webhook,
/// with its URL.
#[allow(clippy::too_many_arguments)]
async fn record(
    kv: &dyn KvStore,
    key: &[u8],
    bytes: Vec<u8>,
    queue: &[u8],
    mut d: StoredDelivery,
    outcome: &Outcome,
    retry: Duration,
    settings: &DeliverySettings,
) -> kv::Result<(bool, String)> {
    let now = now_ms();
    d.attempts += 1;
    d.response_code = outcome.code;
    d.last_error = outcome.error.clone();
    let mut ops = vec![
        expect(DELIVERIES, key.to_vec(), Some(bytes)),
        delete(QUEUE, queue.to_vec()),
    ];
    let next = now + retry.as_millis() as i64;
    if outcome.ok {
        d.status = DeliveryStatus::Delivered;
        d.delivered_at = Some(now);
        d.next_attempt_at = None;
        d.queue_key = None;
    } else if next - d.retry_from > settings.retry_for.as_millis() as i64 {
        d.status = DeliveryStatus::Failed;
        d.next_attempt_at = None;
        d.queue_key = None;
    } else {
        let q = queue_key(next, key);
        d.next_attempt_at = Some(next);
        d.queue_key = Some(q.clone());
        ops.push(KvOp::Put {
            tree: QUEUE.into(),
            key: q,
            value: key.to_vec(),
        });
    }
    ops.push(put(DELIVERIES, key.to_vec(), &d)?);
    match kv.apply_async(ops).await {
        Ok(()) => {}
        Err(StorageError::Conflict(why)) => {
            tracing::info!(delivery = %d.id, %why, "delivery changed meanwhile: outcome dropped");
            return Ok((false, String::new()));
        }
        Err(e) => return Err(e),
    }
    health(kv, &d, outcome.ok, now, settings).await
}

/// Keeps the webhook's `failing_since` (and disables it after failing for
/// `disable_after`); a success, a test's too, enables it again.
async fn health(
    kv: &dyn KvStore,
    d: &StoredDelivery,
    ok: bool,
    now: i64,
    settings: &DeliverySettings,
) -> kv::Result<(bool, String)> {
    let key = format!("{}/{}", d.user_id, d.webhook_id).into_bytes();
    for _ in 0..3 {
        let Some(bytes) = kv.get_async(WEBHOOKS, &key).await? else {
            return Ok((false, String::new()));
        };
        let old: StoredWebhook = decode(&bytes)?;
        let mut new = old.clone();
        if ok {
            new.failing_since = None;
            new.disabled = false;
        } else {
            let since = *new.failing_since.get_or_insert(now);
            if now - since >= settings.disable_after.as_millis() as i64 {
                new.disabled = true;
            }
        }
        if new == old {
            return Ok((false, String::new()));
        }
        let write = vec![
            expect(WEBHOOKS, key.clone(), Some(bytes)),
            put(WEBHOOKS, key.clone(), &new)?,
        ];
        match kv.apply_async(write).await {
            Ok(()) => return Ok((new.disabled && !old.disabled, new.url)),
            Err(StorageError::Conflict(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok((false, String::new()))
}

/// The actor around a [`Deliverer`].
#[derive(Clone)]
pub struct DeliveryActor;

pub enum DeliveryMsg {
    Sweep,
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for DeliveryMsg {}

impl Actor for DeliveryActor {
    type Msg = DeliveryMsg;
    type State = Arc<Deliverer>;
    type Arguments = Arc<Deliverer>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        deliverer: Arc<Deliverer>,
    ) -> Result<Self::State, ActorProcessingErr> {
        myself.send_message(DeliveryMsg::Sweep)?;
        Ok(deliverer)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        DeliveryMsg::Sweep: Self::Msg,
        deliverer: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let full = match deliverer.sweep().await {
            Ok(n) => n >= SWEEP_BATCH,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the webhook queue");
                false
            }
        };
        if !full {
            tokio::select! {
                _ = super::outbox::rung() => {
                    // The write that rang commits right after ringing.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                _ = tokio::time::sleep(deliverer.settings.poll) => {}
            }
        }
        myself.send_message(DeliveryMsg::Sweep)?;
        Ok(())
    }
}
