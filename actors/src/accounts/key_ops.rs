//! The API key operations on an account: create, list, revoke, and note a
//! key's use (the records are in `keys.rs`).

use super::auth::token_hash;
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::held::Held;
use super::keys::*;
use super::model::{Account, StoredAccount};
use super::store::new_id;
use super::store::{user_key, user_prefix, Batch, API_KEYS, USERS, USER_KEYS};
use crate::storage::kv::{encode, KvOp};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore as _;
use std::sync::atomic::Ordering;

impl Accounts {
    /// A new key for `user_id`: its view and the key itself (shown once).
    pub async fn create_api_key(
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
        let _guard = self.lock(user_id).await;
        self.stored_account(user_id).await?;
        let prefix = user_prefix(user_id);
        if self.kv.count_prefix_async(USER_KEYS, &prefix).await? >= MAX_API_KEYS {
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
        self.commit(batch).await?;
        Ok((stored.view(), key))
    }

    /// `user_id`'s keys, oldest first.
    pub async fn list_api_keys(&self, user_id: &str) -> Result<Vec<ApiKeyView>> {
        let mut out = Vec::new();
        for (_, hash) in self
            .scan::<String>(USER_KEYS, &user_prefix(user_id))
            .await?
        {
            if let Some(k) = self.read::<StoredKey>(API_KEYS, hash.as_bytes()).await? {
                out.push(k.view());
            }
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Revokes `user_id`'s key `key_id`: requests with it fail from now on.
    pub async fn revoke_api_key(&self, user_id: &str, key_id: &str) -> Result<()> {
        let _guard = self.lock(user_id).await;
        let index = user_key(user_id, key_id);
        let Some(hash) = self.read::<String>(USER_KEYS, &index).await? else {
            return Err(AccountError::NotFound("API key"));
        };
        let mut batch = Batch::new();
        batch.delete(API_KEYS, hash.as_bytes());
        batch.delete(USER_KEYS, index);
        self.commit(batch).await
    }

    /// The account and key of `token`; `None` for an unknown or revoked
    /// key. Notes the time of use (see [`Self::api_key_info`]).
    pub async fn api_key(&self, token: &str) -> Result<Option<(Account, ApiKeyInfo)>> {
        let Some(info) = self.api_key_info(token).await? else {
            return Ok(None);
        };
        let account = self
            .read::<StoredAccount>(USERS, info.user_id.as_bytes())
            .await?;
        Ok(account.map(|a| (Account::from(&a), info)))
    }

    /// The key `token` is, without its account (which the caller may have
    /// in memory); `None` for an unknown or revoked key. Notes the time of
    /// use, at most once a minute and never bringing back a key revoked
    /// meanwhile. Async, as [`Self::session`] is.
    pub async fn api_key_info(&self, token: &str) -> Result<Option<ApiKeyInfo>> {
        if !is_api_key(token) {
            return Ok(None);
        }
        let hash = token_hash(token);
        let Some(bytes) = self.kv.get_async(API_KEYS, hash.as_bytes()).await? else {
            return Ok(None);
        };
        let key: StoredKey = crate::storage::kv::decode(&bytes)?;
        let now = self.now();
        if key
            .last_used_at
            .is_none_or(|t| now.saturating_sub(t) >= LAST_USED_EVERY_MS)
        {
            self.note_use(&hash, bytes, &key, now).await?;
        }
        Ok(Some(key.info()))
    }

    /// Writes `now` as the last use of `key` (stored as `bytes` under
    /// `hash`), unless the record changed meanwhile.
    async fn note_use(&self, hash: &str, bytes: Vec<u8>, key: &StoredKey, now: i64) -> Result<()> {
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
        if let Err(e) = self.kv.apply_async(ops).await {
            tracing::debug!(error = %e, "last use of an API key not noted");
        }
        Ok(())
    }

    /// The keys of `user_id` from the store, by hash.
    pub(crate) async fn load_keys(&self, user_id: &str) -> Result<HeldKeys> {
        let mut keys = HeldKeys::new();
        for (_, hash) in self
            .scan::<String>(USER_KEYS, &user_prefix(user_id))
            .await?
        {
            if let Some(k) = self.read::<StoredKey>(API_KEYS, hash.as_bytes()).await? {
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
    pub async fn held_api_key(&self, held: &Held, token: &str) -> Option<ApiKeyInfo> {
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
            let note = async {
                if let Some(bytes) = self.kv.get_async(API_KEYS, hash.as_bytes()).await? {
                    let stored: StoredKey = crate::storage::kv::decode(&bytes)?;
                    self.note_use(&hash, bytes, &stored, now).await?;
                }
                Result::Ok(())
            };
            if let Err(e) = note.await {
                tracing::debug!(error = %e, "last use of an API key not noted");
            }
        }
        Some(key.info.clone())
    }
}
