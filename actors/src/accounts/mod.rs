//! Accounts: users, sessions, caption templates, plans and credits, storage
//! quotas and notifications, kept in a [`KvStore`].
//!
//! Every operation is async over the store's async side (each acknowledged
//! write is a durable [`KvStore::apply_async`]); argon2id hashing and
//! verification run on the blocking pool (`tasks::blocking`). Every user
//! action is written with one apply, so a failure leaves no partial record.
//!
//! # Concurrency
//!
//! Every change to an account runs in its actor (`accounts::actor`),
//! through [`Accounts::acting_for`]: the account's record and credit state
//! are held in memory and every write is conditional on the account's
//! stored version (`held.rs`), so a write from a stale copy (another node
//! that owned the account a moment ago) is refused, not lost.
//! Read-modify-write sequences are also serialised by an in-process async
//! lock per user (striped), for callers outside an actor. Use one [`Accounts`]
//! per store and process, shared behind an `Arc`.
//!
//! # Layout
//!
//! | tree | key | value |
//! |---|---|---|
//! | `accounts.users` | user id | the account, password hash, default template id |
//! | `accounts.emails` | normalised email | user id |
//! | `accounts.sessions` | SHA-256 hex of the token | user id, expiry |
//! | `accounts.user_sessions` | `user/hash` | (empty) index for revocation |
//! | `accounts.templates` | `user/template` | caption template |
//! | `accounts.credits` | user id | cycle, spent, reserved, ledger length |
//! | `accounts.ledger` | `user/seq` (16 hex digits) | ledger entry |
//! | `accounts.reservations` | `user/project` | a project's credit reservation |
//! | `accounts.notifications` | `user/newest-first-time/id` | notification |
//! | `accounts.notification_ids` | notification id | its key in `accounts.notifications` |
//! | `accounts.storage` | user id | bytes of stored uploads |
//! | `accounts.billing` | user id | payment customer, subscription |
//! | `accounts.stripe_customers` | customer id | user id |
//! | `accounts.stripe_events` | provider event id | user id, time applied |
//! | `accounts.checkouts` | checkout session id | user, plan, frequency, activation |
//! | `accounts.versions` | user id | the account's version, +1 on every write of its actor |
//! | `accounts.api_keys` | SHA-256 hex of an API key | its account, name, scopes, last use (`keys.rs`) |
//! | `accounts.user_keys` | `user/key id` | the key's SHA-256 hex |
//!
//! Timestamps are stored as unix milliseconds and shown as ISO 8601 UTC
//! ([`iso8601`]).

pub mod actor;
mod auth;
mod billing;
mod clock;
mod credit_ops;
mod credits;
mod domain;
mod error;
mod held;
mod held_parts;
mod key_ops;
mod keys;
mod model;
mod notification_ops;
mod notifications;
mod plans;
mod ratelimit;
pub mod registry;
mod sessions;
mod store;
pub mod supervision;
mod template_ops;
mod templates;
pub mod text;

pub use auth::{
    account_id_for_email, account_of_token, hash_password, normalize_email, NewAccount,
    SESSION_TTL_MS,
};
pub use billing::{
    Activation, Applied, BillingFrequency, BillingRecord, CheckoutRecord, SubscriptionRecord,
    SubscriptionUpdate,
};
pub use clock::{date_of, iso8601, now_ms, parse_utc, system_clock, Clock, DAY_MS};
pub use credits::{
    credits_for_seconds, CreditBalance, LedgerEntryView, LedgerKind, LedgerPage, CYCLE_MS,
    SECONDS_PER_CREDIT, UNLIMITED_CREDITS_SHOWN,
};
pub use domain::Accounts;
pub use error::{AccountError, Result};
pub use held::{Held, HeldAccount};
pub use keys::{is_api_key, parse_scopes, ApiKeyInfo, ApiKeyView, Scope, KEY_PREFIX, MAX_API_KEYS};
pub use model::{
    Account, AccountView, Plan, PlanLimits, PlanTable, SessionInfo, FORCED_WATERMARK_MIN_OPACITY,
    FORCED_WATERMARK_MIN_SIZE,
};
pub use notifications::{Notification, NotificationKind, Said, MAX_NOTIFICATIONS};
pub use ratelimit::SignInLimits;
pub use sessions::Credential;
pub use templates::{TemplateInput, TemplateView, MAX_TEMPLATES};

/// Shared set-up of the unit tests: accounts over an in-memory store that
/// can be told to fail its writes, with a clock the test moves by hand.
#[cfg(test)]
pub(crate) mod testutil {
    use crate::storage::kv::KvStore;
    use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::storage::kv::{self, KvOp, MemoryStore, StorageError};

    /// 2026-11-21T23:50:06.123Z
    pub const START_MS: i64 = 1_795_305_006_123;

    /// A [`MemoryStore`] whose writes fail while `failing` is set; counts
    /// the batches it refused for a precondition.
    #[derive(Default)]
    pub struct FlakyStore {
        inner: MemoryStore,
        failing: AtomicBool,
        conflicts: AtomicUsize,
    }

    impl FlakyStore {
        /// Makes every write fail (or succeed again).
        pub fn fail_writes(&self, failing: bool) {
            self.failing.store(failing, Ordering::SeqCst);
        }

        /// Batches refused so far because a precondition did not hold.
        pub fn conflicts(&self) -> usize {
            self.conflicts.load(Ordering::SeqCst)
        }

        fn check(&self) -> kv::Result<()> {
            if self.failing.load(Ordering::SeqCst) {
                return Err(StorageError::Backend("injected failure".into()));
            }
            Ok(())
        }
    }

    impl KvStore for FlakyStore {
        fn get(&self, tree: &str, key: &[u8]) -> kv::Result<Option<Vec<u8>>> {
            self.inner.get(tree, key)
        }
        fn put(&self, tree: &str, key: &[u8], value: &[u8]) -> kv::Result<()> {
            self.check()?;
            self.inner.put(tree, key, value)
        }
        fn delete(&self, tree: &str, key: &[u8]) -> kv::Result<()> {
            self.check()?;
            self.inner.delete(tree, key)
        }
        fn scan_prefix(&self, tree: &str, prefix: &[u8]) -> kv::Result<Vec<(Vec<u8>, Vec<u8>)>> {
            self.inner.scan_prefix(tree, prefix)
        }
        fn count_prefix(&self, tree: &str, prefix: &[u8]) -> kv::Result<usize> {
            self.inner.count_prefix(tree, prefix)
        }
        fn apply(&self, batch: Vec<KvOp>) -> kv::Result<()> {
            self.check()?;
            let applied = self.inner.apply(batch);
            if let Err(StorageError::Conflict(_)) = &applied {
                self.conflicts.fetch_add(1, Ordering::SeqCst);
            }
            applied
        }
        fn flush(&self) -> kv::Result<()> {
            self.inner.flush()
        }
    }

    /// Every tree the accounts layer writes.
    pub const TREES: [&str; 18] = [
        store::USERS,
        store::EMAILS,
        store::SESSIONS,
        store::USER_SESSIONS,
        store::TEMPLATES,
        store::CREDITS,
        store::LEDGER,
        store::RESERVATIONS,
        store::NOTIFICATIONS,
        store::NOTIFICATION_IDS,
        store::STORAGE,
        store::BILLING,
        store::STRIPE_CUSTOMERS,
        store::STRIPE_EVENTS,
        store::CHECKOUTS,
        store::VERSIONS,
        store::API_KEYS,
        store::USER_KEYS,
    ];

    /// Every tree's entries, in order.
    pub type Dump = Vec<(&'static str, Vec<(Vec<u8>, Vec<u8>)>)>;

    pub struct Fixture {
        pub accounts: Accounts,
        pub kv: Arc<FlakyStore>,
        time: Arc<AtomicI64>,
    }

    impl Fixture {
        pub fn new() -> Self {
            let kv = Arc::new(FlakyStore::default());
            let time = Arc::new(AtomicI64::new(START_MS));
            let clock_time = Arc::clone(&time);
            let accounts = Accounts::new(kv.clone(), PlanTable::default())
                .with_clock(Arc::new(move || clock_time.load(Ordering::SeqCst)));
            Self { accounts, kv, time }
        }

        pub fn advance(&self, ms: i64) {
            self.time.fetch_add(ms, Ordering::SeqCst);
        }

        pub fn now(&self) -> i64 {
            self.time.load(Ordering::SeqCst)
        }

        pub fn fail_writes(&self, failing: bool) {
            self.kv.fail_writes(failing);
        }

        /// Every entry of every tree, to compare before and after.
        pub fn dump(&self) -> Dump {
            TREES
                .iter()
                .map(|tree| (*tree, self.kv.scan_prefix(tree, b"").expect("scan")))
                .collect()
        }

        /// Signs up `local@example.com` with the password "correct horse".
        pub async fn user(&self, local: &str) -> (Account, String) {
            self.accounts
                .sign_up(&format!("{local}@example.com"), "correct horse", local)
                .await
                .expect("sign up")
        }
    }
}
