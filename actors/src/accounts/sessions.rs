//! The session check of a request. Answered from the memory of the
//! account's actor when that actor is active on this node, this node owns
//! the account and the actor holds the account's sessions; otherwise from
//! the store, which is the truth: for an inactive account, on a node that
//! does not own the account (its memory would be stale), and for a token
//! the memory does not know or whose session has expired (the store path
//! deletes an expired session). Sign-out and password changes run in the
//! actor, so memory and store drop a revoked session in the same commit
//! (`accounts::held`).
//!
//! A lookup that misses memory reads the store with its async side
//! ([`KvStore::get_async`](crate::storage::kv::KvStore::get_async)): inline
//! on sled (two reads from its cache, cheaper than a hand-off to another
//! thread), and on PostgreSQL as queries awaited on the request's own task,
//! so it never holds a thread for the round-trip.
//!
//! An active actor that does not hold the sessions yet is asked once to
//! load them, without waiting: the check that asked is answered from the
//! store, the next ones from memory.

use super::actor::Part;
use super::auth::account_of_token;
use super::error::Result;
use super::keys::{is_api_key, ApiKeyInfo};
use super::model::{Account, SessionInfo, StoredAccount};
use super::registry::AccountDesk;
use super::store::USERS;

/// What a request is authenticated with.
#[derive(Clone, Debug, PartialEq)]
pub enum Credential {
    /// A signed-in session (the console, or a token from sign-in).
    Session(SessionInfo),
    /// An API key (`accounts::keys`): limited to its scopes.
    Key(ApiKeyInfo),
}

impl AccountDesk {
    /// The account and session of `token`; `None` for unknown, revoked or
    /// expired tokens (see the module documentation).
    pub async fn session(&self, token: &str) -> Result<Option<(Account, SessionInfo)>> {
        if let Some(found) = self.held_session(token) {
            return Ok(Some(found));
        }
        self.accounts.session(token).await
    }

    /// The account `token` acts for: a session (see [`Self::session`]) or
    /// an API key (from the memory of its account's actor when that may
    /// answer, as for sessions, else from the store).
    pub async fn caller(&self, token: &str) -> Result<Option<(Account, Credential)>> {
        if !is_api_key(token) {
            let found = self.session(token).await?;
            return Ok(found.map(|(a, s)| (a, Credential::Session(s))));
        }
        if let Some(found) = self.held_key(token).await {
            return Ok(Some(found));
        }
        let Some(key) = self.accounts.api_key_info(token).await? else {
            return Ok(None);
        };
        // The account from its actor's memory when that may answer (as
        // for sessions), else from the store.
        let held = Some(key.user_id.as_str())
            .filter(|u| self.owns(u))
            .and_then(|u| self.users.held(u))
            .and_then(|h| h.account());
        let account = match held {
            Some(a) => a,
            None => match self
                .accounts
                .read::<StoredAccount>(USERS, key.user_id.as_bytes())
                .await?
            {
                Some(a) => Account::from(&a),
                None => return Ok(None),
            },
        };
        Ok(Some((account, Credential::Key(key))))
    }

    /// The key `token` is, with its account, as the memory of the
    /// account's actor holds them, when that memory may answer (as for
    /// sessions: the actor is asked once to load its keys).
    async fn held_key(&self, token: &str) -> Option<(Account, Credential)> {
        let user_id = account_of_token(token)?;
        let memory = self.users.memory(user_id)?;
        if !self.owns(user_id) {
            return None;
        }
        if let Some(held) = self.users.held(user_id).filter(|h| h.holds_keys()) {
            let key = self.accounts.held_api_key(&held, token).await?;
            return Some((held.account()?, Credential::Key(key)));
        }
        if memory.should_ask_keys() && !self.users.load(user_id, Part::Keys) {
            memory.keys_not_asked();
        }
        None
    }

    /// The session of `token` as the memory of its account's actor holds
    /// it, when that memory may answer.
    fn held_session(&self, token: &str) -> Option<(Account, SessionInfo)> {
        let user_id = account_of_token(token)?;
        let memory = self.users.memory(user_id)?;
        if !self.owns(user_id) {
            return None;
        }
        if let Some(held) = self.users.held(user_id).filter(|h| h.holds_sessions()) {
            return self.accounts.held_session(&held, token);
        }
        if memory.should_ask_sessions() && !self.users.load(user_id, Part::Sessions) {
            memory.sessions_not_asked();
        }
        None
    }
}
