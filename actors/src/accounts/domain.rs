//! [`Accounts`]: the accounts domain over its store, with the plans, the
//! clock, the sign-in limits and the per-user locks every operation uses.
//! The operations are `impl Accounts` in the files of their records.

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use tokio::sync::{Mutex, MutexGuard};

use super::clock::{system_clock, Clock};
use super::error::Result;
use super::held::HeldAccount;
use super::model::{Plan, PlanLimits, PlanTable};
use super::ratelimit::{SignInLimiter, SignInLimits};
use super::store::Batch;
use crate::storage::kv::{decode, get_value_async, KvStore, Record, StorageError};

/// Number of lock stripes; users whose ids hash alike share one.
const LOCK_STRIPES: usize = 64;

/// The accounts domain: every operation on users and what they own.
pub struct Accounts {
    pub(super) kv: Arc<dyn KvStore>,
    pub(super) plans: Arc<PlanTable>,
    pub(super) clock: Clock,
    pub(super) limiter: Arc<SignInLimiter>,
    pub(super) locks: Arc<[Mutex<()>]>,
    /// The account this value acts for, in that account's actor
    /// ([`Accounts::acting_for`]); `None` in the shared value.
    pub(super) held: Option<Arc<HeldAccount>>,
}

impl fmt::Debug for Accounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accounts")
            .field("plans", &self.plans)
            .finish_non_exhaustive()
    }
}

impl Accounts {
    /// Accounts over `kv` with the given plans, the system clock and the
    /// default sign-in limits.
    pub fn new(kv: Arc<dyn KvStore>, plans: PlanTable) -> Self {
        Self {
            kv,
            plans: Arc::new(plans),
            clock: system_clock(),
            limiter: Arc::new(SignInLimiter::new(SignInLimits::default())),
            locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            held: None,
        }
    }

    /// Another handle on the same store, plans, clock, sign-in limits and
    /// locks, acting for no account.
    pub(super) fn clone_shared(&self) -> Self {
        Self {
            kv: self.kv.clone(),
            plans: self.plans.clone(),
            clock: self.clock.clone(),
            limiter: self.limiter.clone(),
            locks: self.locks.clone(),
            held: None,
        }
    }

    /// Replaces the clock (tests, simulations).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Replaces the sign-in rate limits.
    pub fn with_sign_in_limits(mut self, limits: SignInLimits) -> Self {
        self.limiter = Arc::new(SignInLimiter::new(limits));
        self
    }

    /// The plan table in force.
    pub fn plans(&self) -> &PlanTable {
        &self.plans
    }

    /// The limits of `plan`.
    pub fn plan_limits(&self, plan: Plan) -> &PlanLimits {
        self.plans.get(plan)
    }

    pub(super) fn now(&self) -> i64 {
        (self.clock)()
    }

    /// Serialises read-modify-write sequences on `key` (a user id, or
    /// `email:` plus an address at sign-up). Never hold two at once.
    pub(super) async fn lock(&self, key: &str) -> MutexGuard<'_, ()> {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        // The modulo keeps the value below LOCK_STRIPES, so it fits usize.
        let stripe = (hasher.finish() % LOCK_STRIPES as u64) as usize;
        self.locks[stripe].lock().await
    }
}

impl Accounts {
    /// A typed value, if stored ([`get_value_async`]).
    pub(crate) async fn read<T: Record>(&self, tree: &str, key: &[u8]) -> Result<Option<T>> {
        Ok(get_value_async(&*self.kv, tree, key).await?)
    }

    /// The decoded values under `prefix`, in key order.
    pub(crate) async fn scan<T: Record>(
        &self,
        tree: &str,
        prefix: &[u8],
    ) -> Result<Vec<(Vec<u8>, T)>> {
        self.kv
            .scan_prefix_async(tree, prefix)
            .await?
            .into_iter()
            .map(|(key, bytes)| {
                let value = decode(&bytes).map_err(|e| {
                    StorageError::Corrupt(format!(
                        "{:?} in tree {tree:?}: {e}",
                        String::from_utf8_lossy(&key)
                    ))
                })?;
                Ok((key, value))
            })
            .collect()
    }

    /// Applies `batch` atomically (see [`Accounts::commit_batch`]).
    pub(crate) async fn commit(&self, batch: Batch) -> Result<()> {
        self.commit_batch(batch, None).await
    }
}
