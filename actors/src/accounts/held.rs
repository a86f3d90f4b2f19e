//! An account's state held in memory by its actor (`service::user_actor`),
//! and the versioned writes that keep memory and store in step.
//!
//! [`HeldAccount`] holds the account record, its credit state and the
//! account's version, loaded once from the store (on the first command
//! that needs them). [`Accounts::acting_for`] gives the actor an
//! [`Accounts`] whose reads of that account's record and credit state come
//! from memory and whose every commit is one store batch that
//!
//! - expects the account's version (`accounts.versions`) to be the one
//!   held, and writes the next (optimistic concurrency: the batch fails
//!   with a conflict, writing nothing, if anyone else wrote the account
//!   since it was loaded);
//! - changes memory only once it succeeded: a failed write leaves memory
//!   and store as they were.
//!
//! A conflict marks the held state stale; the actor reloads it and runs
//! the command again ([`HeldAccount::take_stale`]). Accounts created
//! before versions existed have none stored: version 0, "absent".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::credits::CreditState;
use super::error::{AccountError, Result};
use super::model::StoredAccount;
use super::store::{Batch, CREDITS, USERS, VERSIONS};
use super::{Account, Accounts};
use crate::storage::kv::{decode, encode, KvOp, StorageError};

/// The stored version of an account: grows by one with every write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Revision(pub u64);
crate::record!(Revision, "account revision", 1);

/// The state of one account as last written (or loaded).
#[derive(Clone, Debug, Default)]
pub struct Held {
    /// The account's version in the store (0: none stored yet).
    pub version: u64,
    pub(crate) account: Option<StoredAccount>,
    pub(crate) credits: Option<CreditState>,
}

impl Held {
    /// The account, without its secrets; `None` before sign-up.
    pub fn account(&self) -> Option<Account> {
        self.account.as_ref().map(Account::from)
    }

    /// `self` after `ops` (this account's batch) were applied.
    fn after(&self, user_id: &str, ops: &[KvOp]) -> Result<Held> {
        let mut next = self.clone();
        next.version += 1;
        for op in ops {
            match op {
                KvOp::Put { tree, key, value } if key == user_id.as_bytes() => {
                    if tree == USERS {
                        next.account = Some(decode(value)?);
                    } else if tree == CREDITS {
                        next.credits = Some(decode(value)?);
                    }
                }
                KvOp::Delete { tree, key } if key == user_id.as_bytes() => {
                    if tree == USERS {
                        next.account = None;
                    } else if tree == CREDITS {
                        next.credits = None;
                    }
                }
                _ => {}
            }
        }
        Ok(next)
    }
}

/// The memory of one account's actor: its [`Held`] state once loaded.
#[derive(Debug)]
pub struct HeldAccount {
    user_id: String,
    held: Mutex<Option<Arc<Held>>>,
    stale: AtomicBool,
}

impl HeldAccount {
    /// Nothing loaded yet.
    pub fn new(user_id: &str) -> Self {
        Self {
            user_id: user_id.to_string(),
            held: Mutex::new(None),
            stale: AtomicBool::new(false),
        }
    }

    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The state held, if loaded (readers outside the actor).
    pub fn loaded(&self) -> Option<Arc<Held>> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, held: Option<Held>) {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = held.map(Arc::new);
    }

    /// Whether a write met a newer version since the last call (the
    /// command must run again on reloaded state); clears the mark.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }

    /// Forgets the state; the next command loads it again from the store.
    pub fn unload(&self) {
        self.set(None);
    }
}

impl Accounts {
    /// `self` acting for the account `held` (used by its actor only): that
    /// account's record and credit state are read from memory and every
    /// commit is versioned (module documentation).
    pub fn acting_for(&self, held: Arc<HeldAccount>) -> Accounts {
        Accounts {
            held: Some(held),
            ..self.clone_shared()
        }
    }

    /// The state held by the account this `Accounts` acts for, loading it
    /// when not loaded yet; `None` when it acts for no account.
    pub fn held_state(&self) -> Result<Option<Arc<Held>>> {
        let Some(slot) = &self.held else {
            return Ok(None);
        };
        if let Some(held) = slot.loaded() {
            return Ok(Some(held));
        }
        // The version first: data read after it is at least as new, so a
        // write based on it is refused rather than losing a newer change.
        let key = slot.user_id.as_bytes();
        let version = self.read::<Revision>(VERSIONS, key)?.map_or(0, |r| r.0);
        let held = Held {
            version,
            account: self.read(USERS, key)?,
            credits: self.read(CREDITS, key)?,
        };
        slot.set(Some(held));
        Ok(slot.loaded())
    }

    /// The held state when this `Accounts` acts for `user_id`.
    fn held_for(&self, user_id: &str) -> Result<Option<Arc<Held>>> {
        match &self.held {
            Some(slot) if slot.user_id == user_id => self.held_state(),
            _ => Ok(None),
        }
    }

    /// The stored account of `user_id`; [`AccountError::NotFound`] when
    /// there is none.
    pub(crate) fn stored_account(&self, user_id: &str) -> Result<StoredAccount> {
        let account = match self.held_for(user_id)? {
            Some(held) => held.account.clone(),
            None => self.read(USERS, user_id.as_bytes())?,
        };
        account.ok_or(AccountError::NotFound("account"))
    }

    /// The credit state of `user_id` (every account has one).
    pub(crate) fn credit_state(&self, user_id: &str) -> Result<CreditState> {
        let state = match self.held_for(user_id)? {
            Some(held) => held.credits.clone(),
            None => self.read(CREDITS, user_id.as_bytes())?,
        };
        state.ok_or_else(|| {
            StorageError::Corrupt(format!("account {user_id} has no credit state")).into()
        })
    }

    /// Applies `batch` atomically (under `fence` when given); acting for an
    /// account, conditional on its version, updating memory after.
    pub(crate) fn commit_batch(
        &self,
        mut batch: Batch,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<()> {
        let Some(slot) = &self.held else {
            return batch.commit_under(&*self.kv, fence);
        };
        let held = self.held_state()?.unwrap_or_default();
        let key = slot.user_id.as_bytes();
        let expected = match held.version {
            0 => None,
            v => Some(encode(&Revision(v))?),
        };
        batch.expect(VERSIONS, key, expected);
        batch.put(VERSIONS, key, &Revision(held.version + 1))?;
        let next = held.after(&slot.user_id, batch.ops())?;
        match batch.commit_under(&*self.kv, fence) {
            Ok(()) => {
                slot.set(Some(next));
                Ok(())
            }
            Err(AccountError::Storage(StorageError::Conflict(why))) => {
                tracing::info!(user_id = %slot.user_id, %why, "account changed elsewhere");
                slot.stale.store(true, Ordering::Release);
                Err(AccountError::Conflict(
                    "the account changed meanwhile; try again".to_string(),
                ))
            }
            Err(e) => Err(e),
        }
    }
}
