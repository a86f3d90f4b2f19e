//! API keys (issue 31): a program acts for an account with a key instead of
//! a session. A key is `cf_<secret>_<account id>` — the secret 32 random
//! bytes in unpadded base64url, the account id at the end so a cluster
//! routes the request to the account's node without a lookup
//! ([`super::auth::account_of_token`]). It is shown once, at creation; only its
//! SHA-256 is stored, as for sessions. Each key carries scopes (what it may
//! do; which operation needs which scope is the HTTP layer's rule) and the
//! time it was last used (written at most once a minute).
//!
//! | tree | key | value |
//! |---|---|---|
//! | `accounts.api_keys` | SHA-256 hex of the key | [`StoredKey`] |
//! | `accounts.user_keys` | `user/key id` | the SHA-256 hex |

use std::collections::BTreeMap;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::clock::iso8601;
use super::error::{AccountError, Result};

/// Most keys one account may hold.
pub const MAX_API_KEYS: usize = 50;
/// The prefix of every key.
pub const KEY_PREFIX: &str = "cf_";
/// Characters of the key shown in listings (`cf_` and 8 of the secret).
pub(super) const SHOWN_CHARS: usize = 11;
/// `last_used_at` is rewritten only when it is older than this.
pub(super) const LAST_USED_EVERY_MS: i64 = 60_000;

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
    pub(super) fn view(&self) -> ApiKeyView {
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
    pub(super) fn info(&self) -> ApiKeyInfo {
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
