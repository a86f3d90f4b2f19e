//! Notifications (contract 2.7, 4.7): newest first, each read once.
//!
//! Keys are `user/T/id` where `T` is `u64::MAX - created_at` in hex, so a
//! prefix scan yields the newest first. An index maps each id to its key.
//! An account keeps its newest [`MAX_NOTIFICATIONS`].

use serde::{Deserialize, Serialize};

use super::clock::iso8601;
use super::store::user_key;
use crate::storage::kv::StorageError;
use crate::storage::record::{decode_payload, Record};
use crate::webhooks::EventType;

/// Most notifications kept per account; older ones are dropped.
pub const MAX_NOTIFICATIONS: usize = 200;
pub(super) const TITLE_MAX_CHARS: usize = 200;
/// Attempts of a notification written outside the account's actor that
/// meets concurrent writes of the account.
pub(super) const OUTSIDE_ATTEMPTS: usize = 5;
pub(super) const MESSAGE_MAX_CHARS: usize = 2000;
/// Most params a notification keeps.
pub(super) const MAX_PARAMS: usize = 8;

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
    pub(super) id: String,
    pub(super) kind: NotificationKind,
    pub(super) title: String,
    pub(super) message: String,
    pub(super) read: bool,
    pub(super) created_at: i64,
    pub(super) params: Vec<(String, String)>,
}

/// A version-1 notification's fields in order (before `params`).
pub(super) type NotificationV1 = (String, NotificationKind, String, String, bool, i64);

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
    pub(super) fn view(&self) -> Notification {
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

pub(super) fn notification_key(user_id: &str, created_at: i64, id: &str) -> Vec<u8> {
    // Times before 1970 sort as 1970; the service does not make any.
    let newest_first = u64::MAX - u64::try_from(created_at).unwrap_or(0);
    user_key(user_id, &format!("{newest_first:016x}/{id}"))
}

pub(super) fn truncate(text: &str, max_chars: usize) -> String {
    text.trim().chars().take(max_chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::store::NOTIFICATION_IDS;
    use crate::accounts::testutil::Fixture;
    use crate::accounts::AccountError;
    use crate::storage::kv::KvStore;

    #[tokio::test]
    async fn newest_first_with_read_flags() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
        let (bob, _) = fx.user("bob").await;
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
            .await
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
            .await
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
            .await
            .expect("notify bob");

        let list = fx.accounts.notifications(user).await.expect("list");
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

        fx.accounts
            .mark_read(user, &first.id)
            .await
            .expect("mark one");
        fx.accounts
            .mark_read(user, &first.id)
            .await
            .expect("mark one again");
        let read: Vec<bool> = fx
            .accounts
            .notifications(user)
            .await
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
                .await
                .expect_err("not the owner's");
            assert!(
                matches!(err, AccountError::NotFound("notification")),
                "{err:?}"
            );
        }
        assert!(!fx.accounts.notifications(&bob.id).await.expect("bob")[0].read);

        assert_eq!(fx.accounts.mark_all_read(user).await.expect("all"), 1);
        assert_eq!(fx.accounts.mark_all_read(user).await.expect("all again"), 0);
        assert!(fx
            .accounts
            .notifications(user)
            .await
            .expect("list")
            .iter()
            .all(|n| n.read));
        assert!(!fx.accounts.notifications(&bob.id).await.expect("bob")[0].read);
    }

    #[tokio::test]
    async fn keeps_the_newest_notifications() {
        let fx = Fixture::new();
        let (ana, _) = fx.user("ana").await;
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
                .await
                .expect("notify");
            ids.push(n.id);
        }
        let list = fx.accounts.notifications(&ana.id).await.expect("list");
        assert_eq!(list.len(), MAX_NOTIFICATIONS);
        assert_eq!(list[0].title, format!("n{}", MAX_NOTIFICATIONS + 4));
        assert_eq!(list[MAX_NOTIFICATIONS - 1].title, "n5");
        let err = fx
            .accounts
            .mark_read(&ana.id, &ids[0])
            .await
            .expect_err("dropped");
        assert!(matches!(err, AccountError::NotFound(_)), "{err:?}");
        let index = fx.kv.scan_prefix(NOTIFICATION_IDS, b"").expect("scan");
        assert_eq!(index.len(), MAX_NOTIFICATIONS);
    }

    /// A notification stored before params existed (version 1) reads back
    /// with none; one written now keeps at most 8, each value cut to 200.
    #[tokio::test]
    async fn params_are_kept_and_old_notifications_read_without() {
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
        let (ana, _) = fx.user("ana").await;
        let mut said = Said::new("Many", "values");
        for i in 0..10 {
            said = said.with(&format!("k{i}"), "x".repeat(300));
        }
        let n = fx
            .accounts
            .notify(&ana.id, NotificationKind::CreditsLow, &said, None)
            .await
            .expect("notify");
        assert_eq!(n.params.len(), 8);
        assert!(n.params.values().all(|v| v.chars().count() == 200));
        let listed = fx.accounts.notifications(&ana.id).await.expect("list");
        assert_eq!(listed[0].params, n.params);
    }
}
