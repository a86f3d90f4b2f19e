//! The notification operations on an account: write, list, mark read,
//! delete (the records are in `notifications.rs`).

use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::held::Held;
use super::held::HeldNotifications;
use super::notifications::*;
use super::store::new_id;
use super::store::{user_prefix, Batch, NOTIFICATIONS, NOTIFICATION_IDS};
use crate::storage::kv::{KvOp, StorageError};
use crate::webhooks::{outbox, Subject};
use std::sync::Arc;

impl Accounts {
    /// Adds a notification for the user; title and message are trimmed and
    /// cut to 200 and 2000 characters (each param's value to 200, at most
    /// 8 params). With a `subject`, the webhooks subscribed to the kind's
    /// event get it in the same write.
    pub async fn notify(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        subject: Option<&Subject>,
    ) -> Result<Notification> {
        let _guard = self.lock(user_id).await;
        self.stored_account(user_id).await?;
        let mut batch = Batch::new();
        let now = self.now();
        let notification = self
            .push_notification(&mut batch, user_id, kind, said, now)
            .await?;
        let rings = self
            .push_event(&mut batch, user_id, kind, subject, now)
            .await?;
        self.commit(batch).await?;
        if rings {
            outbox::ring();
        }
        Ok(notification)
    }

    /// Adds to `batch` the webhook deliveries of a `kind` notification
    /// about `subject`; true when there are some (ring the outbox's bell
    /// once the batch is written).
    pub(crate) async fn push_event(
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
        let ops = outbox::enqueue(&*self.kv, user_id, event, subject, now).await?;
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
    pub async fn notify_with(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        with: Vec<KvOp>,
        subject: Option<&Subject>,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<Option<Notification>> {
        let _guard = self.lock(user_id).await;
        let outside = self.slot_for(user_id).is_none();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut batch = Batch::new();
            batch.extend(with.clone());
            let now = self.now();
            let mut rings = false;
            let notification = match self.stored_account(user_id).await {
                Ok(_) => {
                    let n = self
                        .push_notification(&mut batch, user_id, kind, said, now)
                        .await?;
                    rings = self
                        .push_event(&mut batch, user_id, kind, subject, now)
                        .await?;
                    Some(n)
                }
                Err(AccountError::NotFound(_)) => None,
                Err(e) => return Err(e),
            };
            let written = match &notification {
                Some(_) if outside => self.commit_outside(user_id, batch, fence).await,
                _ => self.commit_batch(batch, fence).await,
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
    pub(crate) async fn push_notification(
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
        let held = self.held_notifications(user_id).await?;
        let count = match &held {
            Some(held) => held.len(),
            None => {
                let prefix = user_prefix(user_id);
                self.kv.count_prefix_async(NOTIFICATIONS, &prefix).await?
            }
        };
        if count >= MAX_NOTIFICATIONS {
            let existing = match held {
                Some(held) => held,
                None => Arc::new(self.load_notifications(user_id).await?),
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
    pub async fn notifications(&self, user_id: &str) -> Result<Vec<Notification>> {
        self.stored_account(user_id).await?;
        Ok(self
            .notifications_of(user_id)
            .await?
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
    async fn notifications_of(&self, user_id: &str) -> Result<Arc<HeldNotifications>> {
        match self.held_notifications(user_id).await? {
            Some(held) => Ok(held),
            None => Ok(Arc::new(self.load_notifications(user_id).await?)),
        }
    }

    /// Marks every notification of the user read; returns how many were
    /// unread.
    pub async fn mark_all_read(&self, user_id: &str) -> Result<usize> {
        let _guard = self.lock(user_id).await;
        self.stored_account(user_id).await?;
        let mut batch = Batch::new();
        let mut marked = 0;
        for (key, n) in self.notifications_of(user_id).await?.iter() {
            if !n.read {
                let n = StoredNotification {
                    read: true,
                    ..n.clone()
                };
                batch.put(NOTIFICATIONS, key.clone(), &n)?;
                marked += 1;
            }
        }
        self.commit(batch).await?;
        Ok(marked)
    }

    /// Marks one notification read; another user's or a missing one is not
    /// found.
    pub async fn mark_read(&self, user_id: &str, notification_id: &str) -> Result<()> {
        let not_found = || AccountError::NotFound("notification");
        let _guard = self.lock(user_id).await;
        let (key, mut n) = match self.held_notifications(user_id).await? {
            Some(held) => held
                .iter()
                .find(|(_, n)| n.id == notification_id)
                .map(|(key, n)| (key.clone(), n.clone()))
                .ok_or_else(not_found)?,
            None => {
                let key: Vec<u8> = self
                    .read(NOTIFICATION_IDS, notification_id.as_bytes())
                    .await?
                    .ok_or_else(not_found)?;
                if !key.starts_with(&user_prefix(user_id)) {
                    return Err(not_found());
                }
                let n: StoredNotification = self
                    .read(NOTIFICATIONS, &key)
                    .await?
                    .ok_or_else(not_found)?;
                (key, n)
            }
        };
        if !n.read {
            n.read = true;
            let mut batch = Batch::new();
            batch.put(NOTIFICATIONS, key, &n)?;
            self.commit(batch).await?;
        }
        Ok(())
    }
}
