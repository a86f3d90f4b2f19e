//! An account's state held in memory by its actor (`accounts::actor`),
//! and the versioned writes that keep memory and store in step.
//!
//! [`HeldAccount`] holds the account record, its credit state and the
//! account's version, loaded once from the store (on the first command
//! that needs them), and, each loaded on the first command that needs it
//! (`held_parts.rs`), its sessions, caption templates, notifications and
//! storage counter. [`Accounts::acting_for`] gives the actor an
//! [`Accounts`] whose reads of that account's state come from memory and
//! whose every commit is one store batch that
//!
//! - expects the account's version (`accounts.versions`) to be the one
//!   held, and writes the next (optimistic concurrency: the batch fails
//!   with a conflict, writing nothing, if anyone else wrote the account
//!   since it was loaded);
//! - changes memory only once it succeeded ([`Held::after`] applies the
//!   batch's own writes to the parts loaded): a failed write leaves memory
//!   and store as they were.
//!
//! A conflict marks the held state stale; the actor reloads it and runs
//! the command again ([`HeldAccount::take_stale`]). Accounts created
//! before versions existed have none stored: version 0, "absent".
//! [`HeldAccount::unload`] drops the memory from anywhere (a write made
//! outside the actor, [`Accounts::commit_outside`]): a load or commit under
//! way when it happens keeps its result out of memory (generations).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use super::credits::CreditState;
use super::error::{AccountError, Result};
use super::held_parts::{HeldNotifications, HeldSessions, HeldTemplates};
use super::keys::{HeldKey, HeldKeys, StoredKey};
use super::model::{StoredAccount, StoredSession};
use super::store::{
    user_prefix, Batch, API_KEYS, CREDITS, NOTIFICATIONS, SESSIONS, STORAGE, TEMPLATES, USERS,
    VERSIONS,
};
use super::{Account, Accounts};
use crate::storage::kv::{decode, encode, KvOp, StorageError};

/// The stored version of an account: grows by one with every write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Revision(pub u64);
crate::record!(Revision, "account revision", 1);

/// The state of one account as last written (or loaded). The parts after
/// `credits` are `None` until a command needs them.
#[derive(Clone, Debug, Default)]
pub struct Held {
    /// The account's version in the store (0: none stored yet).
    pub version: u64,
    pub(crate) account: Option<StoredAccount>,
    pub(crate) credits: Option<CreditState>,
    /// Its sessions by token hash (expired ones included until dropped).
    pub(crate) sessions: Option<Arc<HeldSessions>>,
    /// Its caption templates by id.
    pub(crate) templates: Option<Arc<HeldTemplates>>,
    /// Its notifications by key (newest first; at most
    /// [`super::MAX_NOTIFICATIONS`] are kept).
    pub(crate) notifications: Option<Arc<HeldNotifications>>,
    /// Bytes of its stored uploads.
    pub(crate) storage: Option<u64>,
    /// Its API keys by hash.
    pub(crate) keys: Option<Arc<HeldKeys>>,
}

impl Held {
    /// The account, without its secrets; `None` before sign-up.
    pub fn account(&self) -> Option<Account> {
        self.account.as_ref().map(Account::from)
    }

    /// Bytes of the account's stored uploads, once loaded.
    pub fn storage(&self) -> Option<u64> {
        self.storage
    }

    /// Whether the sessions are held (else the actor may be asked to load
    /// them: `UserRegistry::ask`).
    pub fn holds_sessions(&self) -> bool {
        self.sessions.is_some()
    }

    /// Whether the API keys are held (else the actor may be asked to load
    /// them).
    pub fn holds_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// `self` after `ops` (this account's batch) were applied: the parts
    /// not loaded stay unloaded (loaded later, they are read after it).
    fn after(&self, user_id: &str, ops: &[KvOp]) -> Result<Held> {
        let mut next = self.clone();
        next.version += 1;
        let prefix = user_prefix(user_id);
        for op in ops {
            let (tree, key, value) = match op {
                KvOp::Put { tree, key, value } => (tree.as_str(), key, Some(value.as_slice())),
                KvOp::Delete { tree, key } => (tree.as_str(), key, None),
                KvOp::Expect { .. } => continue,
            };
            let own = key.as_slice() == user_id.as_bytes();
            match tree {
                USERS if own => next.account = value.map(decode).transpose()?,
                CREDITS if own => next.credits = value.map(decode).transpose()?,
                STORAGE if own && next.storage.is_some() => {
                    next.storage = Some(value.map(decode).transpose()?.unwrap_or(0));
                }
                SESSIONS => {
                    let Some(sessions) = &mut next.sessions else {
                        continue;
                    };
                    let hash = String::from_utf8_lossy(key).into_owned();
                    match value.map(decode::<StoredSession>).transpose()? {
                        Some(s) if s.user_id == user_id => {
                            Arc::make_mut(sessions).insert(hash, s);
                        }
                        Some(_) => {}
                        None if sessions.contains_key(&hash) => {
                            Arc::make_mut(sessions).remove(&hash);
                        }
                        None => {}
                    }
                }
                TEMPLATES => {
                    let (Some(templates), Some(id)) =
                        (&mut next.templates, key.strip_prefix(prefix.as_slice()))
                    else {
                        continue;
                    };
                    let id = String::from_utf8_lossy(id).into_owned();
                    match value.map(decode).transpose()? {
                        Some(t) => Arc::make_mut(templates).insert(id, t),
                        None => Arc::make_mut(templates).remove(&id),
                    };
                }
                API_KEYS => {
                    let Some(keys) = &mut next.keys else {
                        continue;
                    };
                    let hash = String::from_utf8_lossy(key).into_owned();
                    match value.map(decode::<StoredKey>).transpose()? {
                        Some(k) if k.user_id == user_id => {
                            // The time of use is noted outside the actor:
                            // a key already held keeps its mark.
                            let held = keys.get(&hash).map(|h| h.noted.clone());
                            let mut entry = HeldKey::from(&k);
                            if let Some(noted) = held {
                                entry.noted = noted;
                            }
                            Arc::make_mut(keys).insert(hash, entry);
                        }
                        Some(_) => {}
                        None if keys.contains_key(&hash) => {
                            Arc::make_mut(keys).remove(&hash);
                        }
                        None => {}
                    }
                }
                NOTIFICATIONS if key.starts_with(&prefix) => {
                    let Some(notifications) = &mut next.notifications else {
                        continue;
                    };
                    match value.map(decode).transpose()? {
                        Some(n) => Arc::make_mut(notifications).insert(key.clone(), n),
                        None => Arc::make_mut(notifications).remove(key),
                    };
                }
                _ => {}
            }
        }
        Ok(next)
    }
}

/// The memory slot and its generation (moved on by every unload).
#[derive(Debug, Default)]
struct Slot {
    state: Option<Arc<Held>>,
    generation: u64,
}

/// The memory of one account's actor: its [`Held`] state once loaded.
#[derive(Debug)]
pub struct HeldAccount {
    user_id: String,
    slot: Mutex<Slot>,
    stale: AtomicBool,
    /// Whether the actor was asked to load the sessions (once per load).
    sessions_asked: AtomicBool,
    /// Whether the actor was asked to load the API keys (once per load).
    keys_asked: AtomicBool,
}

impl HeldAccount {
    /// Nothing loaded yet.
    pub fn new(user_id: &str) -> Self {
        Self {
            user_id: user_id.to_string(),
            slot: Mutex::new(Slot::default()),
            stale: AtomicBool::new(false),
            sessions_asked: AtomicBool::new(false),
            keys_asked: AtomicBool::new(false),
        }
    }

    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state held, if loaded (readers outside the actor).
    pub fn loaded(&self) -> Option<Arc<Held>> {
        self.slot().state.clone()
    }

    /// The state held, if loaded, and the generation it belongs to.
    fn current(&self) -> (Option<Arc<Held>>, u64) {
        let slot = self.slot();
        (slot.state.clone(), slot.generation)
    }

    /// Holds `held` unless the memory was dropped since `generation`.
    fn install(&self, generation: u64, held: Arc<Held>) {
        let mut slot = self.slot();
        if slot.generation == generation {
            slot.state = Some(held);
        }
    }

    /// Whether a write met a newer version since the last call (the
    /// command must run again on reloaded state); clears the mark.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::AcqRel)
    }

    /// Forgets the state; the next command loads it again from the store.
    /// Safe from outside the actor: what a load or commit under way read
    /// before this is not held afterwards.
    pub fn unload(&self) {
        let mut slot = self.slot();
        slot.state = None;
        slot.generation += 1;
        self.sessions_asked.store(false, Ordering::Release);
        self.keys_asked.store(false, Ordering::Release);
    }

    /// True once until the sessions are loaded or the state unloaded: the
    /// caller asks the actor to load them (`UserRegistry::ask`).
    pub fn should_ask_sessions(&self) -> bool {
        !self.sessions_asked.swap(true, Ordering::AcqRel)
    }

    /// A later session check may ask again (the load failed).
    pub(crate) fn sessions_not_asked(&self) {
        self.sessions_asked.store(false, Ordering::Release);
    }

    /// True once until the API keys are loaded or the state unloaded: the
    /// caller asks the actor to load them (`UserRegistry::ask`).
    pub fn should_ask_keys(&self) -> bool {
        !self.keys_asked.swap(true, Ordering::AcqRel)
    }

    /// A later key check may ask again (the load failed).
    pub(crate) fn keys_not_asked(&self) {
        self.keys_asked.store(false, Ordering::Release);
    }
}

impl Accounts {
    /// `self` acting for the account `held` (used by its actor only): that
    /// account's state is read from memory and every commit is versioned
    /// (module documentation).
    pub fn acting_for(&self, held: Arc<HeldAccount>) -> Accounts {
        Accounts {
            held: Some(held),
            ..self.clone_shared()
        }
    }

    /// The slot of `user_id` when this `Accounts` acts for it.
    pub(crate) fn slot_for(&self, user_id: &str) -> Option<&Arc<HeldAccount>> {
        self.held.as_ref().filter(|slot| slot.user_id == user_id)
    }

    /// The state held by the account this `Accounts` acts for, loading it
    /// when not loaded yet; `None` when it acts for no account.
    pub fn held_state(&self) -> Result<Option<Arc<Held>>> {
        match &self.held {
            Some(slot) => Ok(Some(self.load_held(slot)?.0)),
            None => Ok(None),
        }
    }

    /// The state of `slot` and its generation, loaded when not held.
    pub(crate) fn load_held(&self, slot: &HeldAccount) -> Result<(Arc<Held>, u64)> {
        let (state, generation) = slot.current();
        if let Some(held) = state {
            return Ok((held, generation));
        }
        // The version first: data read after it is at least as new, so a
        // write based on it is refused rather than losing a newer change.
        let key = slot.user_id.as_bytes();
        let held = Arc::new(Held {
            version: self.stored_version(&slot.user_id)?,
            account: self.read(USERS, key)?,
            credits: self.read(CREDITS, key)?,
            ..Held::default()
        });
        slot.install(generation, held.clone());
        Ok((held, generation))
    }

    /// The version of `user_id` in the store (0: none stored).
    pub(crate) fn stored_version(&self, user_id: &str) -> Result<u64> {
        Ok(self
            .read::<Revision>(VERSIONS, user_id.as_bytes())?
            .map_or(0, |r| r.0))
    }

    /// Holds `held` with one more part (`put`) when nothing changed
    /// since `generation`.
    pub(crate) fn hold_part(
        &self,
        slot: &HeldAccount,
        generation: u64,
        held: &Held,
        put: impl FnOnce(&mut Held),
    ) {
        let mut next = held.clone();
        put(&mut next);
        slot.install(generation, Arc::new(next));
    }

    /// The held state when this `Accounts` acts for `user_id`.
    fn held_for(&self, user_id: &str) -> Result<Option<Arc<Held>>> {
        match self.slot_for(user_id) {
            Some(slot) => Ok(Some(self.load_held(slot)?.0)),
            None => Ok(None),
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

    /// Makes `batch` conditional on `version` of `user_id` and moves it on.
    fn versioned(batch: &mut Batch, user_id: &str, version: u64) -> Result<()> {
        let key = user_id.as_bytes();
        let expected = match version {
            0 => None,
            v => Some(encode(&Revision(v))?),
        };
        batch.expect(VERSIONS, key, expected);
        batch.put(VERSIONS, key, &Revision(version + 1))
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
        let (held, generation) = self.load_held(slot)?;
        Self::versioned(&mut batch, &slot.user_id, held.version)?;
        let next = held.after(&slot.user_id, batch.ops())?;
        match batch.commit_under(&*self.kv, fence) {
            Ok(()) => {
                slot.install(generation, Arc::new(next));
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

    /// Applies `batch` of `user_id`'s from outside its actor (another
    /// domain's write, e.g. a post's outcome and its notification):
    /// conditional on the version stored now and moving it on, so the
    /// actor's memory is refused as stale at its next write. The caller
    /// then drops that memory (`UserRegistry::unload`). A concurrent write
    /// of the account fails this one with [`AccountError::Storage`]
    /// (`StorageError::Conflict`): build the batch again and retry.
    pub(crate) fn commit_outside(
        &self,
        user_id: &str,
        mut batch: Batch,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<()> {
        Self::versioned(&mut batch, user_id, self.stored_version(user_id)?)?;
        batch.commit_under(&*self.kv, fence)
    }
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
