//! The parts of an account's held state loaded on first need, once per
//! activation of its actor (`held.rs`): sessions, caption templates,
//! notifications and the storage counter. Each accessor answers from
//! memory when this [`Accounts`] acts for the account (loading the part
//! the first time) and `None` otherwise: the caller reads the store.
//!
//! A part is loaded at the version held: when the store's version moved
//! on (the account was written elsewhere since the rest was loaded), the
//! whole state is loaded again first, so the parts held never mix an old
//! record with newer parts.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::auth::token_hash;
use super::error::Result;
use super::held::{Held, HeldAccount};
use super::keys::HeldKeys;
use super::model::{Account, SessionInfo, StoredSession};
use super::notifications::StoredNotification;
use super::store::{user_prefix, NOTIFICATIONS, SESSIONS, STORAGE, TEMPLATES, USER_SESSIONS};
use super::templates::StoredTemplate;
use super::Accounts;

/// An account's sessions by token hash.
pub(crate) type HeldSessions = BTreeMap<String, StoredSession>;
/// An account's caption templates by id.
pub(crate) type HeldTemplates = BTreeMap<String, StoredTemplate>;
/// An account's notifications by key (newest first).
pub(crate) type HeldNotifications = BTreeMap<Vec<u8>, StoredNotification>;

impl Accounts {
    /// A part of the held state of `user_id` (`get`), loaded (`load`) and
    /// held (`put`) on first need; `None` when not acting for `user_id`.
    fn held_part<T: Clone>(
        &self,
        user_id: &str,
        get: impl Fn(&Held) -> Option<T>,
        load: impl FnOnce(&Accounts) -> Result<T>,
        put: impl FnOnce(&mut Held, T),
    ) -> Result<Option<T>> {
        let Some(slot) = self.slot_for(user_id) else {
            return Ok(None);
        };
        let (mut held, mut generation) = self.load_held(slot)?;
        if let Some(part) = get(&held) {
            return Ok(Some(part));
        }
        if self.stored_version(user_id)? != held.version {
            // Written elsewhere since loaded: everything again, then this.
            slot.unload();
            (held, generation) = self.load_held(slot)?;
        }
        let part = load(self)?;
        let kept = part.clone();
        self.hold_part(slot, generation, &held, |h| put(h, kept));
        Ok(Some(part))
    }

    /// The sessions of `user_id`, held.
    pub(crate) fn held_sessions(&self, user_id: &str) -> Result<Option<Arc<HeldSessions>>> {
        self.held_part(
            user_id,
            |h| h.sessions.clone(),
            |a| a.load_sessions(user_id).map(Arc::new),
            |h, s| h.sessions = Some(s),
        )
    }

    /// The caption templates of `user_id`, held.
    pub(crate) fn held_templates(&self, user_id: &str) -> Result<Option<Arc<HeldTemplates>>> {
        self.held_part(
            user_id,
            |h| h.templates.clone(),
            |a| a.load_templates(user_id).map(Arc::new),
            |h, t| h.templates = Some(t),
        )
    }

    /// The notifications of `user_id`, held.
    pub(crate) fn held_notifications(
        &self,
        user_id: &str,
    ) -> Result<Option<Arc<HeldNotifications>>> {
        self.held_part(
            user_id,
            |h| h.notifications.clone(),
            |a| a.load_notifications(user_id).map(Arc::new),
            |h, n| h.notifications = Some(n),
        )
    }

    /// The storage counter of `user_id`, held.
    pub(crate) fn held_storage(&self, user_id: &str) -> Result<Option<u64>> {
        self.held_part(
            user_id,
            |h| h.storage,
            |a| Ok(a.read(STORAGE, user_id.as_bytes())?.unwrap_or(0)),
            |h, n| h.storage = Some(n),
        )
    }

    /// The sessions of `user_id` from the store (its index, then each).
    pub(crate) fn load_sessions(&self, user_id: &str) -> Result<HeldSessions> {
        let prefix = user_prefix(user_id);
        let mut sessions = HeldSessions::new();
        for (key, _) in self.kv.scan_prefix(USER_SESSIONS, &prefix)? {
            let hash = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            if let Some(s) = self.read::<StoredSession>(SESSIONS, hash.as_bytes())? {
                sessions.insert(hash, s);
            }
        }
        Ok(sessions)
    }

    /// The caption templates of `user_id` from the store.
    pub(crate) fn load_templates(&self, user_id: &str) -> Result<HeldTemplates> {
        let prefix = user_prefix(user_id);
        Ok(self
            .scan::<StoredTemplate>(TEMPLATES, &prefix)?
            .into_iter()
            .map(|(key, t)| {
                (
                    String::from_utf8_lossy(&key[prefix.len()..]).into_owned(),
                    t,
                )
            })
            .collect())
    }

    /// The notifications of `user_id` from the store (at most
    /// [`super::MAX_NOTIFICATIONS`] are kept).
    pub(crate) fn load_notifications(&self, user_id: &str) -> Result<HeldNotifications> {
        Ok(self
            .scan(NOTIFICATIONS, &user_prefix(user_id))?
            .into_iter()
            .collect())
    }

    /// The API keys of `user_id`, held.
    pub(crate) fn held_keys(&self, user_id: &str) -> Result<Option<Arc<HeldKeys>>> {
        self.held_part(
            user_id,
            |h| h.keys.clone(),
            |a| a.load_keys(user_id).map(Arc::new),
            |h, k| h.keys = Some(k),
        )
    }

    /// Loads the sessions of the account this `Accounts` acts for (asked by
    /// a session check that found them not held; `UserRegistry::ask`).
    pub fn load_held_sessions(&self) -> Result<()> {
        self.load_asked(
            |a, u| a.held_sessions(u).map(drop),
            HeldAccount::sessions_not_asked,
        )
    }

    /// Loads the API keys of the account this `Accounts` acts for (asked
    /// by a key check that found them not held).
    pub fn load_held_keys(&self) -> Result<()> {
        self.load_asked(|a, u| a.held_keys(u).map(drop), HeldAccount::keys_not_asked)
    }

    /// Runs `load` for the account this `Accounts` acts for; when it fails,
    /// a later check may ask again (`not_asked`).
    fn load_asked(
        &self,
        load: impl FnOnce(&Accounts, &str) -> Result<()>,
        not_asked: fn(&HeldAccount),
    ) -> Result<()> {
        let Some(slot) = self.held.clone() else {
            return Ok(());
        };
        let loaded = load(self, slot.user_id());
        if loaded.is_err() {
            not_asked(&slot);
        }
        loaded
    }

    /// The account and session of `token` answered from `held` (the
    /// memory of the token's account): `None` when the sessions are not
    /// held, or the token's session is not among them or has expired (the
    /// store has the last word then: [`Accounts::session`]).
    pub fn held_session(&self, held: &Held, token: &str) -> Option<(Account, SessionInfo)> {
        let session = held.sessions.as_ref()?.get(&token_hash(token))?;
        let account = held.account.as_ref()?;
        (session.user_id == account.id && session.expires_at > self.now())
            .then(|| (Account::from(account), SessionInfo::from(session)))
    }
}
