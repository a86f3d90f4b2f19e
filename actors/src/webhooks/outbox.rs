//! The outbox: the writes that put an event on its way, made in the same
//! atomic write as the change the event reports, and the bell that wakes
//! this node's delivery actor when it did.

use std::sync::OnceLock;

use tokio::sync::Notify;

use super::records::{
    delete, deliveries_prefix, delivery_key, put, queue_key, stored_webhooks_async, DeliveryStatus,
    EventType, StoredDelivery, StoredWebhook, Subject, DELIVERIES, MAX_DELIVERIES, MAX_PENDING,
    QUEUE,
};
use crate::storage::kv::{self, decode, KvOp, KvStore};

/// Oldest deliveries looked at for pruning per event.
const PRUNE_LOOK: usize = 32;

fn bell() -> &'static Notify {
    static BELL: OnceLock<Notify> = OnceLock::new();
    BELL.get_or_init(Notify::new)
}

/// Wakes the delivery actor (which also looks on its own every poll
/// interval: an event written by another node is found that way).
pub fn ring() {
    bell().notify_one();
}

/// Waits for [`ring`].
pub async fn rung() {
    bell().notified().await
}

/// The writes that deliver event `event` about `subject` to every enabled
/// webhook of `user_id` subscribed to it (none when there is none). Add
/// them to the write that makes the change, then [`ring`]. A webhook with
/// [`MAX_PENDING`] deliveries waiting gets no more (logged).
pub async fn enqueue(
    kv: &dyn KvStore,
    user_id: &str,
    event: EventType,
    subject: &Subject,
    now: i64,
) -> kv::Result<Vec<KvOp>> {
    let mut ops = Vec::new();
    let id = super::records::new_id();
    for hook in stored_webhooks_async(kv, user_id).await? {
        if hook.disabled || !hook.events.contains(&event) {
            continue;
        }
        match delivery_ops(kv, &hook, &id, event, subject, now).await? {
            Some((more, _)) => ops.extend(more),
            None => tracing::warn!(
                webhook = %hook.id,
                event = event.as_str(),
                "webhook backlog full: event not queued for it"
            ),
        }
    }
    Ok(ops)
}

/// One delivery of event `id` to `hook`, due now, dropping the webhook's
/// oldest finished deliveries beyond [`MAX_DELIVERIES`] (a waiting one is
/// never dropped). `None` when [`MAX_PENDING`] are waiting already.
#[allow(clippy::type_complexity)]
pub(crate) async fn delivery_ops(
    kv: &dyn KvStore,
    hook: &StoredWebhook,
    id: &str,
    event: EventType,
    subject: &Subject,
    now: i64,
) -> kv::Result<Option<(Vec<KvOp>, StoredDelivery)>> {
    let prefix = deliveries_prefix(&hook.user_id, &hook.id);
    let kept = kv.count_prefix_async(DELIVERIES, &prefix).await?;
    let oldest = match prune_window(kept) {
        Some((skip, look)) => {
            kv.scan_prefix_page_async(DELIVERIES, &prefix, skip, look)
                .await?
        }
        None => Vec::new(),
    };
    build(hook, id, event, subject, now, kept, oldest)
}

/// Which of a webhook's `kept` deliveries to look at for pruning (`skip`,
/// `take` of its prefix), when it has too many. Newest first: the oldest
/// are at the end of the prefix. Looking at a few of them each time keeps
/// this cheap; finished ones further up go on later events.
fn prune_window(kept: usize) -> Option<(usize, usize)> {
    (kept >= MAX_DELIVERIES).then(|| {
        let look = (kept + 1 - MAX_DELIVERIES).min(PRUNE_LOOK);
        (kept - look, look)
    })
}

/// The writes of one delivery, given how many the webhook keeps and the
/// oldest of them ([`prune_window`]).
#[allow(clippy::type_complexity)]
fn build(
    hook: &StoredWebhook,
    id: &str,
    event: EventType,
    subject: &Subject,
    now: i64,
    mut kept: usize,
    oldest: kv::Rows,
) -> kv::Result<Option<(Vec<KvOp>, StoredDelivery)>> {
    let key = delivery_key(&hook.user_id, &hook.id, now, id);
    let queue = queue_key(now, &key);
    let delivery = StoredDelivery {
        id: id.into(),
        webhook_id: hook.id.clone(),
        user_id: hook.user_id.clone(),
        event,
        subject: subject.clone(),
        created_at: now,
        status: DeliveryStatus::Pending,
        attempts: 0,
        retry_from: now,
        next_attempt_at: Some(now),
        queue_key: Some(queue.clone()),
        response_code: None,
        last_error: None,
        delivered_at: None,
    };
    let mut ops = Vec::new();
    if kept >= MAX_DELIVERIES {
        for (k, v) in oldest {
            let old = decode::<StoredDelivery>(&v)?;
            if old.status != DeliveryStatus::Pending {
                ops.push(delete(DELIVERIES, k));
                kept -= 1;
            }
        }
        if kept >= MAX_DELIVERIES + MAX_PENDING {
            return Ok(None);
        }
    }
    ops.push(put(DELIVERIES, key.clone(), &delivery)?);
    ops.push(KvOp::Put {
        tree: QUEUE.into(),
        key: queue,
        value: key,
    });
    Ok(Some((ops, delivery)))
}
