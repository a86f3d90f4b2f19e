//! Tree names, key layout and typed reads and batches over the store.

use super::error::Result;
use crate::storage::kv::{encode, KvOp, KvStore, Record};

pub(crate) const USERS: &str = "accounts.users";
pub(crate) const EMAILS: &str = "accounts.emails";
pub(crate) const SESSIONS: &str = "accounts.sessions";
pub(crate) const USER_SESSIONS: &str = "accounts.user_sessions";
pub(crate) const TEMPLATES: &str = "accounts.templates";
pub(crate) const CREDITS: &str = "accounts.credits";
pub(crate) const LEDGER: &str = "accounts.ledger";
pub(crate) const RESERVATIONS: &str = "accounts.reservations";
pub(crate) const NOTIFICATIONS: &str = "accounts.notifications";
pub(crate) const NOTIFICATION_IDS: &str = "accounts.notification_ids";
pub(crate) const STORAGE: &str = "accounts.storage";
pub(crate) const BILLING: &str = "accounts.billing";
pub(crate) const STRIPE_CUSTOMERS: &str = "accounts.stripe_customers";
pub(crate) const STRIPE_EVENTS: &str = "accounts.stripe_events";
pub(crate) const CHECKOUTS: &str = "accounts.checkouts";
pub(crate) const VERSIONS: &str = "accounts.versions";
pub(crate) const API_KEYS: &str = "accounts.api_keys";
pub(crate) const USER_KEYS: &str = "accounts.user_keys";

/// `user/` — the prefix of everything one user owns in a shared tree. User
/// ids are UUIDs, so no user's prefix is a prefix of another's.
pub(crate) fn user_prefix(user_id: &str) -> Vec<u8> {
    format!("{user_id}/").into_bytes()
}

/// `user/rest`.
pub(crate) fn user_key(user_id: &str, rest: &str) -> Vec<u8> {
    format!("{user_id}/{rest}").into_bytes()
}

/// Writes collected for one atomic [`KvStore::apply`].
#[derive(Debug, Default)]
pub(crate) struct Batch {
    ops: Vec<KvOp>,
}

impl Batch {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn put<T: Record>(
        &mut self,
        tree: &str,
        key: impl Into<Vec<u8>>,
        value: &T,
    ) -> Result<()> {
        self.ops.push(KvOp::Put {
            tree: tree.to_string(),
            key: key.into(),
            value: encode(value)?,
        });
        Ok(())
    }

    pub(crate) fn delete(&mut self, tree: &str, key: impl Into<Vec<u8>>) {
        self.ops.push(KvOp::Delete {
            tree: tree.to_string(),
            key: key.into(),
        });
    }

    /// Makes the batch conditional on `key` holding `value` (`None`:
    /// absent) when it is applied ([`KvOp::Expect`]).
    pub(crate) fn expect(&mut self, tree: &str, key: impl Into<Vec<u8>>, value: Option<Vec<u8>>) {
        self.ops.push(KvOp::Expect {
            tree: tree.to_string(),
            key: key.into(),
            value,
        });
    }

    pub(crate) fn ops(&self) -> &[KvOp] {
        &self.ops
    }

    /// Adds writes prepared elsewhere, to be applied with the others.
    pub(crate) fn extend(&mut self, ops: Vec<KvOp>) {
        self.ops.extend(ops);
    }

    /// [`Self::commit`], under a lease when one is given (refused once the
    /// lease is lost; `storage::leases`).
    pub(crate) async fn commit_under(
        self,
        kv: &dyn KvStore,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<()> {
        match (fence, kv.leases()) {
            (Some(f), Some(l)) => l.apply_fenced(f, self.ops).await?,
            _ => kv.apply_async(self.ops).await?,
        }
        Ok(())
    }
}

/// A new random identifier (UUID v4, hyphenated).
pub(super) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
