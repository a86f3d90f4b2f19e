//! An account's state held in memory by its actor (`accounts::actor`).
//! Loading it and the versioned writes that keep memory and store in step
//! are `impl Accounts` in `held_parts.rs`.
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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use super::credits::CreditState;
use super::error::Result;
use super::keys::{HeldKey, HeldKeys, StoredKey};
use super::model::Account;
use super::model::{StoredAccount, StoredSession};
use super::notifications::StoredNotification;
use super::store::{
    user_prefix, API_KEYS, CREDITS, NOTIFICATIONS, SESSIONS, STORAGE, TEMPLATES, USERS,
};
use super::templates::StoredTemplate;
use crate::storage::kv::{decode, KvOp};

/// An account's sessions by token hash.
pub(crate) type HeldSessions = BTreeMap<String, StoredSession>;
/// An account's caption templates by id.
pub(crate) type HeldTemplates = BTreeMap<String, StoredTemplate>;
/// An account's notifications by key (newest first).
pub(crate) type HeldNotifications = BTreeMap<Vec<u8>, StoredNotification>;

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
    /// [`super::notifications::MAX_NOTIFICATIONS`] are kept).
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
    pub(super) fn after(&self, user_id: &str, ops: &[KvOp]) -> Result<Held> {
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
pub(super) struct Slot {
    pub(super) state: Option<Arc<Held>>,
    pub(super) generation: u64,
}

/// The memory of one account's actor: its [`Held`] state once loaded.
#[derive(Debug)]
pub struct HeldAccount {
    pub(super) user_id: String,
    pub(super) slot: Mutex<Slot>,
    pub(super) stale: AtomicBool,
    /// Whether the actor was asked to load the sessions (once per load).
    pub(super) sessions_asked: AtomicBool,
    /// Whether the actor was asked to load the API keys (once per load).
    pub(super) keys_asked: AtomicBool,
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

    pub(super) fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state held, if loaded (readers outside the actor).
    pub fn loaded(&self) -> Option<Arc<Held>> {
        self.slot().state.clone()
    }

    /// The state held, if loaded, and the generation it belongs to.
    pub(super) fn current(&self) -> (Option<Arc<Held>>, u64) {
        let slot = self.slot();
        (slot.state.clone(), slot.generation)
    }

    /// Holds `held` unless the memory was dropped since `generation`.
    pub(super) fn install(&self, generation: u64, held: Arc<Held>) {
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

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
