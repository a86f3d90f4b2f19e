//! Notifications (contract 2.7, 4.7): newest first, each read once.
//!
//! Keys are `user/T/id` where `T` is `u64::MAX - created_at` in hex, so a
//! prefix scan yields the newest first. An index maps each id to its key.
//! An account keeps its newest [`MAX_NOTIFICATIONS`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::clock::iso8601;
use super::error::{AccountError, Result};
use super::held::Held;
use super::held_parts::HeldNotifications;
use super::store::{user_key, user_prefix, Batch, NOTIFICATIONS, NOTIFICATION_IDS};
use super::{new_id, Accounts};
use crate::storage::kv::{KvOp, StorageError};
use crate::storage::record::{decode_payload, Record};
use crate::webhooks::{outbox, EventType, Subject};

/// Most notifications kept per account; older ones are dropped.
pub const MAX_NOTIFICATIONS: usize = 200;
const TITLE_MAX_CHARS: usize = 200;
/// Attempts of a notification written outside the account's actor that
/// meets concurrent writes of the account.
const OUTSIDE_ATTEMPTS: usize = 5;
const MESSAGE_MAX_CHARS: usize = 2000;
/// Most params a notification keeps.
const MAX_PARAMS: usize = 8;

/// The type of a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    ProjectCompleted,
    ProjectFailed,
    PostPublished,
    PostFailed,
    PlanChanged,
    CreditsLow,
    PaymentFailed,
    WebhookDisabled,
    /// An edited or added clip's new version is ready.
    ClipRendered,
}

impl NotificationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::ProjectCompleted => "project_completed",
            NotificationKind::ProjectFailed => "project_failed",
            NotificationKind::PostPublished => "post_published",
            NotificationKind::PostFailed => "post_failed",
            NotificationKind::PlanChanged => "plan_changed",
            NotificationKind::CreditsLow => "credits_low",
            NotificationKind::PaymentFailed => "payment_failed",
            NotificationKind::WebhookDisabled => "webhook_disabled",
            NotificationKind::ClipRendered => "clip_rendered",
        }
    }

    /// The webhook event a notification of this kind is sent as, if any.
    pub fn event(self) -> Option<EventType> {
        match self {
            NotificationKind::ProjectCompleted => Some(EventType::ProjectCompleted),
            NotificationKind::ProjectFailed => Some(EventType::ProjectFailed),
            NotificationKind::PostPublished => Some(EventType::PostPublished),
            NotificationKind::PostFailed => Some(EventType::PostFailed),
            NotificationKind::CreditsLow => Some(EventType::CreditsLow),
            NotificationKind::ClipRendered => Some(EventType::ClipRendered),
            _ => None,
        }
    }
}

/// What a notification says: its title and message in English, and the
/// values they name (`params`: the project's title, a clip count, a
/// platform, …), with which a client words them in its own language.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Said {
    pub title: String,
    pub message: String,
    pub params: Vec<(String, String)>,
}

impl Said {
    pub fn new(title: impl Into<String>, message: impl Into<String>) -> Self {
        Said {
            title: title.into(),
            message: message.into(),
            params: Vec::new(),
        }
    }

    /// Names a value the title or message says.
    pub fn with(mut self, key: &str, value: impl ToString) -> Self {
        self.params.push((key.to_string(), value.to_string()));
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredNotification {
    id: String,
    kind: NotificationKind,
    title: String,
    message: String,
    read: bool,
    created_at: i64,
    params: Vec<(String, String)>,
}

/// A version-1 notification's fields in order (before `params`).
type NotificationV1 = (String, NotificationKind, String, String, bool, i64);

/// Version 2 added `params`; a version-1 notification reads with none.
impl Record for StoredNotification {
    const KIND: &'static str = "notification";
    const VERSION: u16 = 2;

    fn upgrade(version: u16, payload: &[u8]) -> crate::storage::kv::Result<Self> {
        if version != 1 {
            return Err(StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            });
        }
        let (id, kind, title, message, read, created_at): NotificationV1 = decode_payload(payload)?;
        Ok(StoredNotification {
            id,
            kind,
            title,
            message,
            read,
            created_at,
            params: Vec::new(),
        })
    }
}

impl StoredNotification {
    fn view(&self) -> Notification {
        Notification {
            id: self.id.clone(),
            kind: self.kind,
            title: self.title.clone(),
            message: self.message.clone(),
            read: self.read,
            created_at: iso8601(self.created_at),
            params: self.params.iter().cloned().collect(),
        }
    }
}

/// A notification as the API shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: NotificationKind,
    pub title: String,
    pub message: String,
    pub read: bool,
    pub created_at: String,
    /// The values the title and message name ([`Said::params`]).
    pub params: std::collections::BTreeMap<String, String>,
}

fn notification_key(user_id: &str, created_at: i64, id: &str) -> Vec<u8> {
    // Times before 1970 sort as 1970; the service does not make any.
    let newest_first = u64::MAX - u64::try_from(created_at).unwrap_or(0);
    user_key(user_id, &format!("{newest_first:016x}/{id}"))
}

fn truncate(text: &str, max_chars: usize) -> String {
    text.trim().chars().take(max_chars).collect()
}

impl Accounts {
    /// Adds a notification for the user; title and message are trimmed and
    /// cut to 200 and 2000 characters (each param's value to 200, at most
    /// 8 params). With a `subject`, the webhooks subscribed to the kind's
    /// event get it in the same write.
    pub fn notify(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        subject: Option<&Subject>,
    ) -> Result<Notification> {
        let _guard = self.lock(user_id);
        self.stored_account(user_id)?;
        let mut batch = Batch::new();
        let now = self.now();
        let notification = self.push_notification(&mut batch, user_id, kind, said, now)?;
        let rings = self.push_event(&mut batch, user_id, kind, subject, now)?;
        self.commit(batch)?;
        if rings {
            outbox::ring();
        }
        Ok(notification)
    }

    /// Adds to `batch` the webhook deliveries of a `kind` notification
    /// about `subject`; true when there are some (ring the outbox's bell
    /// once the batch is written).
    pub(crate) fn push_event(
        &self,
        batch: &mut Batch,
        user_id: &str,
        kind: NotificationKind,
        subject: Option<&Subject>,
        now: i64,
    ) -> Result<bool> {
        let (Some(event), Some(subject)) = (kind.event(), subject) else {
            return Ok(false);
        };
        let ops = outbox::enqueue(&*self.kv, user_id, event, subject, now)?;
        let any = !ops.is_empty();
        batch.extend(ops);
        Ok(any)
    }

    /// Adds a notification and applies `with` in the same atomic write, so
    /// the change it reports and the notification appear together. An
    /// account that no longer exists gets no notification; `with` is still
    /// applied. Under `fence`, all of it only while that lease is held.
    /// Outside the account's actor, the write is conditional on the
    /// account's version and moves it on ([`Accounts::commit_outside`]),
    /// retried on a conflict; the caller then drops the actor's memory of
    /// the account (`UserRegistry::unload`).
    pub fn notify_with(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        with: Vec<KvOp>,
        subject: Option<&Subject>,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<Option<Notification>> {
        let _guard = self.lock(user_id);
        let outside = self.slot_for(user_id).is_none();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut batch = Batch::new();
            batch.extend(with.clone());
            let now = self.now();
            let mut rings = false;
            let notification = match self.stored_account(user_id) {
                Ok(_) => {
                    let n = self.push_notification(&mut batch, user_id, kind, said, now)?;
                    rings = self.push_event(&mut batch, user_id, kind, subject, now)?;
                    Some(n)
                }
                Err(AccountError::NotFound(_)) => None,
                Err(e) => return Err(e),
            };
            let written = match &notification {
                Some(_) if outside => self.commit_outside(user_id, batch, fence),
                _ => self.commit_batch(batch, fence),
            };
            match written {
                Err(AccountError::Storage(StorageError::Conflict(why)))
                    if outside && attempt < OUTSIDE_ATTEMPTS =>
                {
                    tracing::info!(user_id, %why, "account written meanwhile: notifying again");
                }
                written => {
                    if rings && written.is_ok() {
                        outbox::ring();
                    }
                    return written.map(|()| notification);
                }
            }
        }
    }

    /// Adds a notification's writes to `batch`, dropping the oldest beyond
    /// [`MAX_NOTIFICATIONS`]. The caller holds the user's lock.
    pub(crate) fn push_notification(
        &self,
        batch: &mut Batch,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        now: i64,
    ) -> Result<Notification> {
        let stored = StoredNotification {
            id: new_id(),
            kind,
            title: truncate(&said.title, TITLE_MAX_CHARS),
            message: truncate(&said.message, MESSAGE_MAX_CHARS),
            read: false,
            created_at: now,
            params: said
                .params
                .iter()
                .take(MAX_PARAMS)
                .map(|(k, v)| (k.clone(), truncate(v, TITLE_MAX_CHARS)))
                .collect(),
        };
        let key = notification_key(user_id, now, &stored.id);
        let held = self.held_notifications(user_id)?;
        let count = match &held {
            Some(held) => held.len(),
            None => self.kv.count_prefix(NOTIFICATIONS, &user_prefix(user_id))?,
        };
        if count >= MAX_NOTIFICATIONS {
            let existing = match held {
                Some(held) => held,
                None => Arc::new(self.load_notifications(user_id)?),
            };
            for (old_key, old) in existing.iter().skip(MAX_NOTIFICATIONS - 1) {
                batch.delete(NOTIFICATIONS, old_key.clone());
                batch.delete(NOTIFICATION_IDS, old.id.clone().into_bytes());
            }
        }
        batch.put(NOTIFICATIONS, key.clone(), &stored)?;
        batch.put(NOTIFICATION_IDS, stored.id.as_bytes(), &key)?;
        Ok(stored.view())
    }

    /// The user's notifications, newest first.
    pub fn notifications(&self, user_id: &str) -> Result<Vec<Notification>> {
        self.stored_account(user_id)?;
        Ok(self
            .notifications_of(user_id)?
            .values()
            .map(StoredNotification::view)
            .collect())
    }

    /// The user's notifications, newest first, from `held` (the memory of
    /// the user's actor); `None` when they are not held.
    pub fn held_notification_list(&self, held: &Held) -> Option<Vec<Notification>> {
        held.account.as_ref()?;
        Some(
            held.notifications
                .as_ref()?
                .values()
                .map(StoredNotification::view)
                .collect(),
        )
    }

    /// The user's notifications by key: held by the account's actor, else
    /// read from the store.
    fn notifications_of(&self, user_id: &str) -> Result<Arc<HeldNotifications>> {
        match self.held_notifications(user_id)? {
            Some(held) => Ok(held),
            None => Ok(Arc::new(self.load_notifications(user_id)?)),
        }
    }

    /// Marks every notification of the user read; returns how many were
    /// unread.
    pub fn mark_all_read(&self, user_id: &str) -> Result<usize> {
        let _guard = self.lock(user_id);
        self.stored_account(user_id)?;
        let mut batch = Batch::new();
        let mut marked = 0;
        for (key, n) in self.notifications_of(user_id)?.iter() {
            if !n.read {
                let n = StoredNotification {
                    read: true,
                    ..n.clone()
                };
                batch.put(NOTIFICATIONS, key.clone(), &n)?;
                marked += 1;
            }
        }
        self.commit(batch)?;
        Ok(marked)
    }

    /// Marks one notification read; another user's or a missing one is not
    /// found.
    pub fn mark_read(&self, user_id: &str, notification_id: &str) -> Result<()> {
        let not_found = || AccountError::NotFound("notification");
        let _guard = self.lock(user_id);
        let (key, mut n) = match self.held_notifications(user_id)? {
            Some(held) => held
                .iter()
                .find(|(_, n)| n.id == notification_id)
                .map(|(key, n)| (key.clone(), n.clone()))
                .ok_or_else(not_found)?,
            None => {
                let key: Vec<u8> = self
                    .read(NOTIFICATION_IDS, notification_id.as_bytes())?
                    .ok_or_else(not_found)?;
                if !key.starts_with(&user_prefix(user_id)) {
                    return Err(not_found());
                }
                let n: StoredNotification =
                    self.read(NOTIFICATIONS, &key)?.ok_or_else(not_found)?;
                (key, n)
            }
        };
        if !n.read {
            n.read = true;
            let mut batch = Batch::new();
            batch.put(NOTIFICATIONS, key, &n)?;
            self.commit(batch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::testutil::Fixture;
    use crate::storage::kv::KvStore;

    #[test]
    fn newest_first_with_read_flags() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana");
        let (bob, _) = fx.user("bob");
        let user = ana.id.as_str();
        let first = fx
            .accounts
            .notify(
                user,
                NotificationKind::ProjectCompleted,
                &Said::new("Clips ready", "Talk: 5 clips")
                    .with("projectTitle", "Talk")
                    .with("clips", 5),
                None,
            )
            .expect("notify");
        fx.advance(1000);
        let second = fx
            .accounts
            .notify(
                user,
                NotificationKind::PostFailed,
                &Said::new("  Post failed  ", "TikTok refused it"),
                None,
            )
            .expect("notify");
        assert_eq!(second.title, "Post failed");
        let bobs = fx
            .accounts
            .notify(
                &bob.id,
                NotificationKind::PostPublished,
                &Said::new("Posted", "ok"),
                None,
            )
            .expect("notify bob");

        let list = fx.accounts.notifications(user).expect("list");
        let ids: Vec<&str> = list.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, [second.id.as_str(), first.id.as_str()]);
        assert!(list.iter().all(|n| !n.read));
        let json = serde_json::to_value(&list[1]).expect("json");
        assert_eq!(json["type"], "project_completed");
        assert_eq!(json["createdAt"], "2026-11-21T23:50:06.123Z");
        assert_eq!(json["read"], false);
        assert_eq!(
            json["params"],
            serde_json::json!({"projectTitle": "Talk", "clips": "5"})
        );
        assert_eq!(
            serde_json::to_value(&list[0]).expect("json")["params"],
            serde_json::json!({})
        );

        fx.accounts.mark_read(user, &first.id).expect("mark one");
        fx.accounts
            .mark_read(user, &first.id)
            .expect("mark one again");
        let read: Vec<bool> = fx
            .accounts
            .notifications(user)
            .expect("list")
            .iter()
            .map(|n| n.read)
            .collect();
        assert_eq!(read, [false, true]);

        for (owner, id) in [
            (user, bobs.id.as_str()),
            (user, "missing"),
            (bob.id.as_str(), first.id.as_str()),
        ] {
            let err = fx
                .accounts
                .mark_read(owner, id)
                .expect_err("not the owner's");
            assert!(
                matches!(err, AccountError::NotFound("notification")),
                "{err:?}"
            );
        }
        assert!(!fx.accounts.notifications(&bob.id).expect("bob")[0].read);

        assert_eq!(fx.accounts.mark_all_read(user).expect("all"), 1);
        assert_eq!(fx.accounts.mark_all_read(user).expect("all again"), 0);
        assert!(fx
            .accounts
            .notifications(user)
            .expect("list")
            .iter()
            .all(|n| n.read));
        assert!(!fx.accounts.notifications(&bob.id).expect("bob")[0].read);
    }

    #[test]
    fn keeps_the_newest_notifications() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana");
        let mut ids = Vec::new();
        for i in 0..MAX_NOTIFICATIONS + 5 {
            fx.advance(1);
            let n = fx
                .accounts
                .notify(
                    &ana.id,
                    NotificationKind::ProjectFailed,
                    &Said::new(format!("n{i}"), ""),
                    None,
                )
                .expect("notify");
            ids.push(n.id);
        }
        let list = fx.accounts.notifications(&ana.id).expect("list");
        assert_eq!(list.len(), MAX_NOTIFICATIONS);
        assert_eq!(list[0].title, format!("n{}", MAX_NOTIFICATIONS + 4));
        assert_eq!(list[MAX_NOTIFICATIONS - 1].title, "n5");
        let err = fx
            .accounts
            .mark_read(&ana.id, &ids[0])
            .expect_err("dropped");
        assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
        let index = fx.kv.scan_prefix(NOTIFICATION_IDS, b"").expect("scan");
        assert_eq!(index.len(), MAX_NOTIFICATIONS);
    }

    /// A notification stored before params existed (version 1) reads back
    /// with none; one written now keeps at most 8, each value cut to 200.
    #[test]
    fn params_are_kept_and_old_notifications_read_without() {
        let v1: NotificationV1 = (
            "n1".into(),
            NotificationKind::PlanChanged,
            "Plan changed".into(),
            "You are now on the pro plan.".into(),
            true,
            5,
        );
        let mut bytes = vec![0xFF, 0, 1];
        bytes.extend(bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap());
        let old: StoredNotification = crate::storage::kv::decode(&bytes).expect("v1 reads");
        assert_eq!((old.title.as_str(), old.read), ("Plan changed", true));
        assert!(old.params.is_empty());

        let fx = Fixture::new();
        let (ana, _) = fx.user("ana");
        let mut said = Said::new("Many", "values");
        for i in 0..10 {
            said = said.with(&format!("k{i}"), "x".repeat(300));
        }
        let n = fx
            .accounts
            .notify(&ana.id, NotificationKind::CreditsLow, &said, None)
            .expect("notify");
        assert_eq!(n.params.len(), 8);
        assert!(n.params.values().all(|v| v.chars().count() == 200));
        let listed = fx.accounts.notifications(&ana.id).expect("list");
        assert_eq!(listed[0].params, n.params);
    }
}
