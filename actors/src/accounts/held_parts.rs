//! Loading an account's held state (`held.rs`) and committing to it: the
//! versioned writes ([`Accounts::acting_for`] and the commits below), and
//! the parts loaded on first need, once per
//! activation of its actor: sessions, caption templates,
//! notifications and the storage counter. Each accessor answers from
//! memory when this [`Accounts`] acts for the account (loading the part
//! the first time) and `None` otherwise: the caller reads the store.
//!
//! A part is loaded at the version held: when the store's version moved
//! on (the account was written elsewhere since the rest was loaded), the
//! whole state is loaded again first, so the parts held never mix an old
//! record with newer parts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::auth::token_hash;
use super::credits::CreditState;
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::held::*;
use super::keys::HeldKeys;
use super::model::{Account, SessionInfo, StoredAccount, StoredSession};
use super::store::{
    user_prefix, Batch, CREDITS, NOTIFICATIONS, SESSIONS, STORAGE, TEMPLATES, USERS, USER_SESSIONS,
    VERSIONS,
};
use super::templates::StoredTemplate;
use crate::storage::kv::{encode, StorageError};

impl Accounts {
    /// A part of the held state of `user_id` (`get`), loaded (`load`) and
    /// held (`put`) on first need; `None` when not acting for `user_id`.
    async fn held_part<T: Clone>(
        &self,
        user_id: &str,
        get: impl Fn(&Held) -> Option<T>,
        load: impl std::future::Future<Output = Result<T>>,
        put: impl FnOnce(&mut Held, T),
    ) -> Result<Option<T>> {
        let Some(slot) = self.slot_for(user_id) else {
            return Ok(None);
        };
        let (mut held, mut generation) = self.load_held(slot).await?;
        if let Some(part) = get(&held) {
            return Ok(Some(part));
        }
        if self.stored_version(user_id).await? != held.version {
            // Written elsewhere since loaded: everything again, then this.
            slot.unload();
            (held, generation) = self.load_held(slot).await?;
        }
        let part = load.await?;
        let kept = part.clone();
        self.hold_part(slot, generation, &held, |h| put(h, kept));
        Ok(Some(part))
    }

    /// The sessions of `user_id`, held.
    pub(crate) async fn held_sessions(&self, user_id: &str) -> Result<Option<Arc<HeldSessions>>> {
        self.held_part(
            user_id,
            |h| h.sessions.clone(),
            async { self.load_sessions(user_id).await.map(Arc::new) },
            |h, s| h.sessions = Some(s),
        )
        .await
    }

    /// The caption templates of `user_id`, held.
    pub(crate) async fn held_templates(&self, user_id: &str) -> Result<Option<Arc<HeldTemplates>>> {
        self.held_part(
            user_id,
            |h| h.templates.clone(),
            async { self.load_templates(user_id).await.map(Arc::new) },
            |h, t| h.templates = Some(t),
        )
        .await
    }

    /// The notifications of `user_id`, held.
    pub(crate) async fn held_notifications(
        &self,
        user_id: &str,
    ) -> Result<Option<Arc<HeldNotifications>>> {
        self.held_part(
            user_id,
            |h| h.notifications.clone(),
            async { self.load_notifications(user_id).await.map(Arc::new) },
            |h, n| h.notifications = Some(n),
        )
        .await
    }

    /// The storage counter of `user_id`, held.
    pub(crate) async fn held_storage(&self, user_id: &str) -> Result<Option<u64>> {
        self.held_part(
            user_id,
            |h| h.storage,
            async { Ok(self.read(STORAGE, user_id.as_bytes()).await?.unwrap_or(0)) },
            |h, n| h.storage = Some(n),
        )
        .await
    }

    /// The sessions of `user_id` from the store (its index, then each).
    pub(crate) async fn load_sessions(&self, user_id: &str) -> Result<HeldSessions> {
        let prefix = user_prefix(user_id);
        let mut sessions = HeldSessions::new();
        for (key, _) in self.kv.scan_prefix_async(USER_SESSIONS, &prefix).await? {
            let hash = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            if let Some(s) = self
                .read::<StoredSession>(SESSIONS, hash.as_bytes())
                .await?
            {
                sessions.insert(hash, s);
            }
        }
        Ok(sessions)
    }

    /// The caption templates of `user_id` from the store.
    pub(crate) async fn load_templates(&self, user_id: &str) -> Result<HeldTemplates> {
        let prefix = user_prefix(user_id);
        Ok(self
            .scan::<StoredTemplate>(TEMPLATES, &prefix)
            .await?
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
    /// [`super::notifications::MAX_NOTIFICATIONS`] are kept).
    pub(crate) async fn load_notifications(&self, user_id: &str) -> Result<HeldNotifications> {
        Ok(self
            .scan(NOTIFICATIONS, &user_prefix(user_id))
            .await?
            .into_iter()
            .collect())
    }

    /// The API keys of `user_id`, held.
    pub(crate) async fn held_keys(&self, user_id: &str) -> Result<Option<Arc<HeldKeys>>> {
        self.held_part(
            user_id,
            |h| h.keys.clone(),
            async { self.load_keys(user_id).await.map(Arc::new) },
            |h, k| h.keys = Some(k),
        )
        .await
    }

    /// Loads the sessions of the account this `Accounts` acts for (asked by
    /// a session check that found them not held; `UserRegistry::ask`).
    pub async fn load_held_sessions(&self) -> Result<()> {
        let Some(slot) = self.held.clone() else {
            return Ok(());
        };
        let loaded = self.held_sessions(slot.user_id()).await.map(drop);
        Self::asked(&slot, loaded, HeldAccount::sessions_not_asked)
    }

    /// Loads the API keys of the account this `Accounts` acts for (asked
    /// by a key check that found them not held).
    pub async fn load_held_keys(&self) -> Result<()> {
        let Some(slot) = self.held.clone() else {
            return Ok(());
        };
        let loaded = self.held_keys(slot.user_id()).await.map(drop);
        Self::asked(&slot, loaded, HeldAccount::keys_not_asked)
    }

    /// What loading a part asked for gave; when it failed, a later check
    /// may ask again (`not_asked`).
    fn asked(slot: &HeldAccount, loaded: Result<()>, not_asked: fn(&HeldAccount)) -> Result<()> {
        if loaded.is_err() {
            not_asked(slot);
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
    pub async fn held_state(&self) -> Result<Option<Arc<Held>>> {
        match &self.held {
            Some(slot) => Ok(Some(self.load_held(slot).await?.0)),
            None => Ok(None),
        }
    }

    /// The state of `slot` and its generation, loaded when not held.
    pub(crate) async fn load_held(&self, slot: &HeldAccount) -> Result<(Arc<Held>, u64)> {
        let (state, generation) = slot.current();
        if let Some(held) = state {
            return Ok((held, generation));
        }
        // The version first: data read after it is at least as new, so a
        // write based on it is refused rather than losing a newer change.
        let key = slot.user_id.as_bytes();
        let held = Arc::new(Held {
            version: self.stored_version(&slot.user_id).await?,
            account: self.read(USERS, key).await?,
            credits: self.read(CREDITS, key).await?,
            ..Held::default()
        });
        slot.install(generation, held.clone());
        Ok((held, generation))
    }

    /// The version of `user_id` in the store (0: none stored).
    pub(crate) async fn stored_version(&self, user_id: &str) -> Result<u64> {
        Ok(self
            .read::<Revision>(VERSIONS, user_id.as_bytes())
            .await?
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
    async fn held_for(&self, user_id: &str) -> Result<Option<Arc<Held>>> {
        match self.slot_for(user_id) {
            Some(slot) => Ok(Some(self.load_held(slot).await?.0)),
            None => Ok(None),
        }
    }

    /// The stored account of `user_id`; [`AccountError::NotFound`] when
    /// there is none.
    pub(crate) async fn stored_account(&self, user_id: &str) -> Result<StoredAccount> {
        let account = match self.held_for(user_id).await? {
            Some(held) => held.account.clone(),
            None => self.read(USERS, user_id.as_bytes()).await?,
        };
        account.ok_or(AccountError::NotFound("account"))
    }

    /// The credit state of `user_id` (every account has one).
    pub(crate) async fn credit_state(&self, user_id: &str) -> Result<CreditState> {
        let state = match self.held_for(user_id).await? {
            Some(held) => held.credits.clone(),
            None => self.read(CREDITS, user_id.as_bytes()).await?,
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
    pub(crate) async fn commit_batch(
        &self,
        mut batch: Batch,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<()> {
        let Some(slot) = &self.held else {
            return batch.commit_under(&*self.kv, fence).await;
        };
        let (held, generation) = self.load_held(slot).await?;
        Self::versioned(&mut batch, &slot.user_id, held.version)?;
        let next = held.after(&slot.user_id, batch.ops())?;
        match batch.commit_under(&*self.kv, fence).await {
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
    pub(crate) async fn commit_outside(
        &self,
        user_id: &str,
        mut batch: Batch,
        fence: Option<&crate::storage::leases::Fence>,
    ) -> Result<()> {
        Self::versioned(&mut batch, user_id, self.stored_version(user_id).await?)?;
        batch.commit_under(&*self.kv, fence).await
    }
}
