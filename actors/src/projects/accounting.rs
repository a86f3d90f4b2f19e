//! What the project domain asks of its owner's account: credits reserved
//! with a new project's records, charged when it completes and released
//! when it fails or is cancelled; bytes counted against the storage quota;
//! a caption template resolved to a style; a clip's notification written
//! with the clip. The engine hands the accounts domain in as this trait
//! (implemented for [`AccountDesk`] here), so the project code never
//! builds an account actor's message.

use crate::accounts::actor::{AccountMsg, Notice, Reserved};
use crate::accounts::registry::AccountDesk;
use crate::accounts::{NotificationKind, Result, Said};
use crate::captions::template::CaptionStyle;
use crate::storage::kv::KvOp;
use crate::webhooks::Subject;

/// A user's account as the project domain uses it. Each async call is
/// one message to the account's actor (handled one at a time per account,
/// answered within the actor call timeout).
#[async_trait::async_trait]
pub trait Accounting: Send + Sync + 'static {
    /// Whether this node hosts `user_id`'s actors (always, on one node).
    fn owns(&self, user_id: &str) -> bool;

    /// Reserves `credits` for `project_id` and writes `records` with the
    /// caption style `template` resolves to, in one write; answers that
    /// style.
    async fn reserve(
        &self,
        user_id: &str,
        project_id: String,
        credits: u64,
        template: String,
        records: Box<dyn Reserved>,
    ) -> Result<CaptionStyle>;

    /// Charges a completed project's `minutes` (its reservation ends) and
    /// tells the user.
    async fn charge(
        &self,
        user_id: &str,
        project_id: String,
        minutes: u64,
        notice: Notice,
    ) -> Result<()>;

    /// Gives a failed or cancelled project's reservation back, telling the
    /// user when `notice` is given.
    async fn release(
        &self,
        user_id: &str,
        project_id: String,
        notice: Option<Notice>,
    ) -> Result<()>;

    /// Counts `bytes` against the storage quota; answers the new total.
    async fn add_storage(&self, user_id: &str, bytes: u64) -> Result<u64>;

    /// Gives `bytes` of storage back, writing `with` in the same write;
    /// answers the new total.
    async fn remove_storage(&self, user_id: &str, bytes: u64, with: Vec<KvOp>) -> Result<u64>;

    /// The caption style a template's id or name (empty: the default)
    /// gives this user (the free plan's watermark forced).
    async fn resolve_style(&self, user_id: &str, template: String) -> Result<CaptionStyle>;

    /// Writes a notification (and its webhook deliveries for `subject`)
    /// together with `with`, from outside the account's actor, whose
    /// memory is dropped when it succeeds.
    async fn notify_with(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        with: Vec<KvOp>,
        subject: Option<&Subject>,
    ) -> Result<()>;
}

#[async_trait::async_trait]
impl Accounting for AccountDesk {
    fn owns(&self, user_id: &str) -> bool {
        AccountDesk::owns(self, user_id)
    }

    async fn reserve(
        &self,
        user_id: &str,
        project_id: String,
        credits: u64,
        template: String,
        records: Box<dyn Reserved>,
    ) -> Result<CaptionStyle> {
        self.call(user_id, |reply| AccountMsg::Reserve {
            project_id,
            credits,
            template,
            records,
            reply,
        })
        .await
    }

    async fn charge(
        &self,
        user_id: &str,
        project_id: String,
        minutes: u64,
        notice: Notice,
    ) -> Result<()> {
        self.call(user_id, |reply| AccountMsg::Charge {
            project_id,
            minutes,
            notice,
            reply,
        })
        .await
    }

    async fn release(
        &self,
        user_id: &str,
        project_id: String,
        notice: Option<Notice>,
    ) -> Result<()> {
        self.call(user_id, |reply| AccountMsg::Release {
            project_id,
            notice,
            reply,
        })
        .await
    }

    async fn add_storage(&self, user_id: &str, bytes: u64) -> Result<u64> {
        self.call(user_id, |reply| AccountMsg::AddStorage {
            bytes,
            with: Vec::new(),
            reply,
        })
        .await
    }

    async fn remove_storage(&self, user_id: &str, bytes: u64, with: Vec<KvOp>) -> Result<u64> {
        self.call(user_id, |reply| AccountMsg::RemoveStorage {
            bytes,
            with,
            reply,
        })
        .await
    }

    async fn resolve_style(&self, user_id: &str, template: String) -> Result<CaptionStyle> {
        self.call(user_id, |reply| AccountMsg::ResolveStyle {
            template,
            reply,
        })
        .await
    }

    async fn notify_with(
        &self,
        user_id: &str,
        kind: NotificationKind,
        said: &Said,
        with: Vec<KvOp>,
        subject: Option<&Subject>,
    ) -> Result<()> {
        self.accounts
            .notify_with(user_id, kind, said, with, subject, None)
            .await?;
        self.unload(user_id);
        Ok(())
    }
}
