//! API keys (issue 31): a program acts for an account with a key instead of
//! a session. A key is `cf_<secret>_<account id>` — the secret 32 random
//! bytes in unpadded base64url, the account id at the end so a cluster
//! routes the request to the account's node without a lookup
//! ([`super::account_of_token`]). It is shown once, at creation; only its
//! SHA-256 is stored, as for sessions. Each key carries scopes (what it may
//! do; which operation needs which scope is the HTTP layer's rule) and the
//! time it was last used (written at most once a minute).
//!
//! | tree | key | value |
//! |---|---|---|
//! | `accounts.api_keys` | SHA-256 hex of the key | [`StoredKey`] |
//! | `accounts.user_keys` | `user/key id` | the SHA-256 hex |

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;
use serde::{Deserialize, Serialize};

use super::auth::token_hash;
use super::clock::iso8601;
use super::error::{AccountError, Result};
use super::held::Held;
use super::model::{Account, StoredAccount};
use super::store::{user_key, user_prefix, Batch, API_KEYS, USERS, USER_KEYS};
use super::{new_id, Accounts};
use crate::storage::kv::{encode, KvOp};

/// Most keys one account may hold.
pub const MAX_API_KEYS: usize = 50;
/// The prefix of every key.
pub const KEY_PREFIX: &str = "cf_";
/// Characters of the key shown in listings (`cf_` and 8 of the secret).
const SHOWN_CHARS: usize = 11;
/// `last_used_at` is rewritten only when it is older than this.
const LAST_USED_EVERY_MS: i64 = 60_000;

/// What a key may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    /// Reads (GET) of projects, clips, templates, credits, posts…
    Read,
    /// Projects, uploads, caption templates and clip edits.
    Write,
    /// Platform connections and scheduling.
    Publish,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Publish];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Publish => "publish",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A key as stored under its hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredKey {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// The key's first characters (`cf_` and 8 of the secret).
    pub shown: String,
    pub scopes: Vec<Scope>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}
crate::record!(StoredKey, "API key", 1);

impl StoredKey {
    fn view(&self) -> ApiKeyView {
        ApiKeyView {
            id: self.id.clone(),
            name: self.name.clone(),
            prefix: self.shown.clone(),
            scopes: self.scopes.clone(),
            created_at: iso8601(self.created_at),
            last_used_at: self.last_used_at.map(iso8601),
        }
    }
}

/// A key as listings show it: never its secret.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKeyView {
    pub id: String,
    pub name: String,
    /// The key's first characters, to tell keys apart.
    pub prefix: String,
    pub scopes: Vec<Scope>,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

/// The key a request was made with.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKeyInfo {
    pub id: String,
    pub user_id: String,
    pub scopes: Vec<Scope>,
}

impl ApiKeyInfo {
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// Whether `token` has the form of an API key (not whether it is one).
pub fn is_api_key(token: &str) -> bool {
    token.starts_with(KEY_PREFIX)
}

/// The scopes named, each once, in a fixed order.
pub fn parse_scopes<S: AsRef<str>>(names: &[S]) -> Result<Vec<Scope>> {
    let mut scopes = Vec::new();
    for n in names {
        let s = Scope::parse(n.as_ref()).ok_or_else(|| {
            AccountError::InvalidInput(format!(
                "scopes: {:?} is not one of read, write, publish",
                n.as_ref()
            ))
        })?;
        scopes.push(s);
    }
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() {
        return Err(AccountError::InvalidInput(
            "scopes: name at least one of read, write, publish".into(),
        ));
    }
    Ok(scopes)
}

impl Accounts {
    /// A new key for `user_id`: its view and the key itself (shown once).
    pub fn create_api_key(
        &self,
        user_id: &str,
        name: &str,
        scopes: &[Scope],
    ) -> Result<(ApiKeyView, String)> {
        let name = super::text::name(name)?;
        let mut scopes = scopes.to_vec();
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() {
            return Err(AccountError::InvalidInput(
                "scopes: name at least one of read, write, publish".into(),
            ));
        }
        let _guard = self.lock(user_id);
        self.stored_account(user_id)?;
        if self.kv.count_prefix(USER_KEYS, &user_prefix(user_id))? >= MAX_API_KEYS {
            return Err(AccountError::Conflict(format!(
                "an account can hold at most {MAX_API_KEYS} API keys: revoke one first"
            )));
        }
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let key = format!("{KEY_PREFIX}{}_{user_id}", URL_SAFE_NO_PAD.encode(secret));
        let hash = token_hash(&key);
        let stored = StoredKey {
            id: new_id(),
            user_id: user_id.to_string(),
            name,
            shown: key.chars().take(SHOWN_CHARS).collect(),
            scopes,
            created_at: self.now(),
            last_used_at: None,
        };
        let mut batch = Batch::new();
        batch.put(API_KEYS, hash.as_bytes(), &stored)?;
        batch.put(USER_KEYS, user_key(user_id, &stored.id), &hash)?;
        self.commit(batch)?;
        Ok((stored.view(), key))
    }

    /// `user_id`'s keys, oldest first.
    pub fn list_api_keys(&self, user_id: &str) -> Result<Vec<ApiKeyView>> {
        let mut out = Vec::new();
        for (_, hash) in self.scan::<String>(USER_KEYS, &user_prefix(user_id))? {
            if let Some(k) = self.read::<StoredKey>(API_KEYS, hash.as_bytes())? {
                out.push(k.view());
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Revokes `user_id`'s key `key_id`: requests with it fail from now on.
    pub fn revoke_api_key(&self, user_id: &str, key_id: &str) -> Result<()> {
        let _guard = self.lock(user_id);
        let index = user_key(user_id, key_id);
        let Some(hash) = self.read::<String>(USER_KEYS, &index)? else {
            return Err(AccountError::NotFound("API key"));
        };
        let mut batch = Batch::new();
        batch.delete(API_KEYS, hash.as_bytes());
        batch.delete(USER_KEYS, index);
        self.commit(batch)
    }

    /// The account and key of `token`; `None` for an unknown or revoked
    /// key. Notes the time of use (see [`Self::api_key_info`]).
    pub fn api_key(&self, token: &str) -> Result<Option<(Account, ApiKeyInfo)>> {
        let Some(info) = self.api_key_info(token)? else {
            return Ok(None);
        };
        let account = self.read::<StoredAccount>(USERS, info.user_id.as_bytes())?;
        Ok(account.map(|a| (Account::from(&a), info)))
    }

    /// The key `token` is, without its account (which the caller may have
    /// in memory); `None` for an unknown or revoked key. Notes the time of
    /// use, at most once a minute and never bringing back a key revoked
    /// meanwhile.
    pub fn api_key_info(&self, token: &str) -> Result<Option<ApiKeyInfo>> {
        if !is_api_key(token) {
            return Ok(None);
        }
        let hash = token_hash(token);
        let Some(bytes) = self.kv.get(API_KEYS, hash.as_bytes())? else {
            return Ok(None);
        };
        let key: StoredKey = crate::storage::kv::decode(&bytes)?;
        let now = self.now();
        if key
            .last_used_at
            .is_none_or(|t| now.saturating_sub(t) >= LAST_USED_EVERY_MS)
        {
            self.note_use(&hash, bytes, &key, now)?;
        }
        Ok(Some(key.info()))
    }

    /// Writes `now` as the last use of `key` (stored as `bytes` under
    /// `hash`), unless the record changed meanwhile.
    fn note_use(&self, hash: &str, bytes: Vec<u8>, key: &StoredKey, now: i64) -> Result<()> {
        let mut used = key.clone();
        used.last_used_at = Some(now);
        let ops = vec![
            KvOp::Expect {
                tree: API_KEYS.into(),
                key: hash.as_bytes().to_vec(),
                value: Some(bytes),
            },
            KvOp::Put {
                tree: API_KEYS.into(),
                key: hash.as_bytes().to_vec(),
                value: encode(&used)?,
            },
        ];
        // Another request of the same minute, or a revocation, won:
        // either way there is nothing to note.
        if let Err(e) = self.kv.apply(ops) {
            tracing::debug!(error = %e, "last use of an API key not noted");
        }
        Ok(())
    }

    /// The keys of `user_id` from the store, by hash.
    pub(crate) fn load_keys(&self, user_id: &str) -> Result<HeldKeys> {
        let mut keys = HeldKeys::new();
        for (_, hash) in self.scan::<String>(USER_KEYS, &user_prefix(user_id))? {
            if let Some(k) = self.read::<StoredKey>(API_KEYS, hash.as_bytes())? {
                if k.user_id == user_id {
                    keys.insert(hash, HeldKey::from(&k));
                }
            }
        }
        Ok(keys)
    }

    /// The key `token` is, answered from `held` (the memory of the key's
    /// account, which every key change goes through: `Held::after`);
    /// `None` when the keys are not held or `token` is not among them (the
    /// store has the last word then: [`Self::api_key_info`]). Notes the
    /// time of use in the store at most once a minute per node.
    pub fn held_api_key(&self, held: &Held, token: &str) -> Option<ApiKeyInfo> {
        let hash = token_hash(token);
        let key = held.keys.as_ref()?.get(&hash)?;
        let account = held.account.as_ref()?;
        if key.info.user_id != account.id {
            return None;
        }
        let now = self.now();
        let noted = key.noted.load(Ordering::Acquire);
        if now.saturating_sub(noted) >= LAST_USED_EVERY_MS
            && key
                .noted
                .compare_exchange(noted, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            let note = || -> Result<()> {
                if let Some(bytes) = self.kv.get(API_KEYS, hash.as_bytes())? {
                    let stored: StoredKey = crate::storage::kv::decode(&bytes)?;
                    self.note_use(&hash, bytes, &stored, now)?;
                }
                Ok(())
            };
            if let Err(e) = note() {
                tracing::debug!(error = %e, "last use of an API key not noted");
            }
        }
        Some(key.info.clone())
    }
}

/// An account's API keys by hash, as its actor holds them.
pub(crate) type HeldKeys = BTreeMap<String, HeldKey>;

/// A key held in memory: what a request needs of it, and when its use was
/// last noted in the store (shared by every copy of the map).
#[derive(Clone, Debug)]
pub(crate) struct HeldKey {
    pub info: ApiKeyInfo,
    pub noted: Arc<AtomicI64>,
}

impl From<&StoredKey> for HeldKey {
    fn from(k: &StoredKey) -> Self {
        HeldKey {
            info: k.info(),
            noted: Arc::new(AtomicI64::new(k.last_used_at.unwrap_or(i64::MIN))),
        }
    }
}

impl StoredKey {
    fn info(&self) -> ApiKeyInfo {
        ApiKeyInfo {
            id: self.id.clone(),
            user_id: self.user_id.clone(),
            scopes: self.scopes.clone(),
        }
    }
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
