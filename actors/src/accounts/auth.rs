//! Sign-up, sign-in, sessions, password changes and the profile.
//!
//! Passwords are hashed with argon2id (the crate's defaults: 19 MiB, two
//! passes) into PHC strings. Session tokens are 32 random bytes in base64url;
//! only their SHA-256 (hex) is stored, and they expire 30 days after
//! sign-in.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::clock::DAY_MS;
use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::model::{Account, Plan, SessionInfo, StoredAccount, StoredSession};
use super::store::new_id;
use super::store::{
    user_key, user_prefix, Batch, EMAILS, SESSIONS, TEMPLATES, USERS, USER_SESSIONS,
};
use super::templates::StoredTemplate;
use crate::storage::kv::StorageError;

/// How long a session lasts after sign-in.
pub const SESSION_TTL_MS: i64 = 30 * DAY_MS;

const PASSWORD_CHARS: (usize, usize) = (8, 128);
const EMAIL_MAX_LEN: usize = 254;
const AVATAR_KEY_MAX_LEN: usize = 1024;

/// Trims and lower-cases an email address and checks its shape.
pub fn normalize_email(raw: &str) -> Result<String> {
    let email = raw.trim().to_lowercase();
    let invalid = || AccountError::InvalidInput("email: not a valid email address".to_string());
    if email.len() > EMAIL_MAX_LEN || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    let domain_ok = domain.contains('.')
        && !domain.contains('@')
        && domain
            .split('.')
            .all(|label| !label.is_empty() && !label.starts_with('-') && !label.ends_with('-'));
    if local.is_empty() || local.len() > 64 || !domain_ok {
        return Err(invalid());
    }
    Ok(email)
}

fn validate_password(password: &str) -> Result<()> {
    let (min, max) = PASSWORD_CHARS;
    let chars = password.chars().count();
    if chars < min {
        return Err(AccountError::InvalidInput(format!(
            "password: must be at least {min} characters"
        )));
    }
    if chars > max {
        return Err(AccountError::InvalidInput(format!(
            "password: must be at most {max} characters"
        )));
    }
    Ok(())
}

pub fn hash_password(password: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt)
        .map_err(|e| AccountError::Internal(format!("encoding a password salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| AccountError::Internal(format!("hashing a password: {e}")))
}

/// Whether `password` matches the PHC string `stored`.
fn verify_password(stored: &str, password: &str) -> Result<bool> {
    let hash = PasswordHash::new(stored)
        .map_err(|e| StorageError::Corrupt(format!("stored password hash: {e}")))?;
    match Argon2::default().verify_password(password.as_bytes(), &hash) {
        Ok(()) => Ok(true),
        Err(argon2::password_hash::Error::Password) => Ok(false),
        Err(e) => Err(AccountError::Internal(format!("verifying a password: {e}"))),
    }
}

/// Spends the time of a real verification when the email is unknown, so
/// response times do not tell which emails have accounts.
fn verify_against_decoy(password: &str) -> Result<()> {
    static DECOY: OnceLock<String> = OnceLock::new();
    let decoy = match DECOY.get() {
        Some(hash) => hash,
        None => {
            let hash = hash_password("clipforge decoy password")?;
            DECOY.get_or_init(|| hash)
        }
    };
    verify_password(decoy, password).map(drop)
}

/// [`verify_password`] on the blocking pool: argon2id takes tens of
/// milliseconds of CPU, which would stall an async thread.
async fn verify_off_thread(stored: &str, password: &str) -> Result<bool> {
    let (stored, password) = (stored.to_string(), password.to_string());
    crate::tasks::blocking(move || verify_password(&stored, &password)).await
}

/// A new session token: 32 random bytes, base64url without padding.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// An account's id, derived from its normalized email (a UUID, version 8:
/// the first 16 bytes of SHA-256("clipforge-account:" ‖ email)). Every node
/// computes the same id from the same email, so sign-up and sign-in are
/// routed to the data node that owns the account (rendezvous on the id).
pub fn account_id_for_email(normalized_email: &str) -> String {
    let d = Sha256::digest(format!("clipforge-account:{normalized_email}").as_bytes());
    let mut b: [u8; 16] = d[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    uuid::Uuid::from_bytes(b).to_string()
}

/// The account id a session token (`<account id>.<secret>`) or an API key
/// (`cf_<secret>_<account id>`, `keys.rs`) names, so any node can route
/// the request; `None` for a token without one.
pub fn account_of_token(token: &str) -> Option<&str> {
    let id = match token.strip_prefix(super::keys::KEY_PREFIX) {
        // The secret is base64url (it may hold `_`); the id has none.
        Some(key) => key.rsplit_once('_').map(|(_, id)| id),
        None => token.split_once('.').map(|(id, _)| id),
    };
    id.filter(|id| id.len() == 36)
}

/// The key a token's session is stored under: its SHA-256 in hex.
/// Every authenticated request computes it: the hex is written from a
/// table (`hex::encode` collects `char`s, a third of the cost).
pub(crate) fn token_hash(token: &str) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(token.as_bytes());
    let mut out = Vec::with_capacity(digest.len() * 2);
    for b in digest {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0x0f)]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// The checked fields of a sign-up, with the password's hash.
#[derive(Clone, Debug)]
pub struct NewAccount {
    /// Normalised.
    pub email: String,
    pub name: String,
    pub password_hash: String,
}

impl NewAccount {
    /// Checks the fields and hashes the password (argon2id: slow, so the
    /// caller does it before handing the sign-up to the account's actor).
    pub fn prepare(email: &str, password: &str, name: &str) -> Result<Self> {
        let email = normalize_email(email)?;
        validate_password(password)?;
        let name = super::text::name(name)?;
        let password_hash = hash_password(password)?;
        Ok(Self {
            email,
            name,
            password_hash,
        })
    }

    /// The id the account gets ([`account_id_for_email`]).
    pub fn account_id(&self) -> String {
        account_id_for_email(&self.email)
    }
}

impl Accounts {
    /// Creates an account on the free plan with its first credit cycle, its
    /// default caption template and a session, in one write. Returns the
    /// account and the session token.
    pub async fn sign_up(
        &self,
        email: &str,
        password: &str,
        name: &str,
    ) -> Result<(Account, String)> {
        let (e, p, n) = (email.to_string(), password.to_string(), name.to_string());
        let new = crate::tasks::blocking(move || NewAccount::prepare(&e, &p, &n)).await?;
        self.sign_up_hashed(&new.email, new.name, new.password_hash)
            .await
    }

    /// Creates an account whose password is already an argon2id PHC hash
    /// (imports, and the API benchmark's seeder, which cannot afford one
    /// argon2 run per account); opens its first session like `sign_up`.
    pub async fn sign_up_hashed(
        &self,
        email: &str,
        name: String,
        password_hash: String,
    ) -> Result<(Account, String)> {
        let email = normalize_email(email)?;
        let _guard = self.lock(&format!("email:{email}")).await;
        if self.kv.get_async(EMAILS, email.as_bytes()).await?.is_some() {
            return Err(AccountError::Conflict(
                "email: an account with this email already exists".to_string(),
            ));
        }
        let now = self.now();
        let user_id = account_id_for_email(&email);
        let template = StoredTemplate::initial_default(now);
        let account = StoredAccount {
            id: user_id.clone(),
            email: email.clone(),
            name,
            password_hash,
            avatar_key: None,
            plan: Plan::Free,
            entitlements: Vec::new(),
            bonuses_granted: Vec::new(),
            default_template_id: template.id.clone(),
            created_at: now,
            updated_at: now,
        };
        let mut batch = Batch::new();
        // Checked again as the batch commits: of concurrent sign-ups with
        // one email (on any nodes), exactly one creates the account.
        batch.expect(EMAILS, email.as_bytes(), None);
        batch.put(USERS, user_id.as_bytes(), &account)?;
        batch.put(EMAILS, email.as_bytes(), &user_id)?;
        batch.put(TEMPLATES, user_key(&user_id, &template.id), &template)?;
        self.open_first_cycle(&mut batch, &user_id, now)?;
        let token = add_session(&mut batch, &user_id, now)?;
        self.commit(batch).await?;
        Ok((Account::from(&account), token))
    }

    /// Checks the credentials and opens a session. `client_key` identifies
    /// the client for the rate limit (its IP address; empty if unknown).
    pub async fn sign_in(
        &self,
        email: &str,
        password: &str,
        client_key: &str,
    ) -> Result<(Account, String)> {
        let email = self.sign_in_attempt(email, client_key)?;
        self.sign_in_counted(&email, password, client_key).await
    }

    /// Counts a sign-in attempt of `email` from `client_key` against the
    /// rate limits (refused with [`AccountError::RateLimited`] beyond
    /// them) and returns the email as accounts are keyed (trimmed, lower
    /// case), which [`account_id_for_email`] turns into the account id.
    pub fn sign_in_attempt(&self, email: &str, client_key: &str) -> Result<String> {
        // Malformed addresses are limited like any other and then fail as
        // unknown ones.
        let email = email.trim().to_lowercase();
        if email.len() > EMAIL_MAX_LEN {
            // Cannot be an account's; not worth a rate-limit entry.
            return Err(AccountError::InvalidCredentials);
        }
        self.limiter.attempt(&email, client_key, self.now())?;
        Ok(email)
    }

    /// [`Self::sign_in`] once [`Self::sign_in_attempt`] counted the
    /// attempt (the account's actor runs this part).
    pub async fn sign_in_counted(
        &self,
        email: &str,
        password: &str,
        client_key: &str,
    ) -> Result<(Account, String)> {
        let now = self.now();
        let email = email.to_string();
        let user_id: Option<String> = self.read(EMAILS, email.as_bytes()).await?;
        let Some(user_id) = user_id else {
            let password = password.to_string();
            crate::tasks::blocking(move || verify_against_decoy(&password)).await?;
            return Err(AccountError::InvalidCredentials);
        };
        let verified = self.stored_account(&user_id).await?;
        if !verify_off_thread(&verified.password_hash, password).await? {
            return Err(AccountError::InvalidCredentials);
        }

        let _guard = self.lock(&user_id).await;
        let account = self.stored_account(&user_id).await?;
        if account.password_hash != verified.password_hash {
            // Changed since it was verified: the password given is stale.
            return Err(AccountError::InvalidCredentials);
        }
        let mut batch = Batch::new();
        self.drop_expired_sessions(&mut batch, &user_id, now)
            .await?;
        let token = add_session(&mut batch, &user_id, now)?;
        self.commit(batch).await?;
        self.limiter.succeeded(&email, client_key, now);
        Ok((Account::from(&account), token))
    }

    /// The account and session of `token`; `None` for unknown or expired
    /// tokens (an expired session is deleted). Async: it is the lookup of
    /// every request that misses the actors' memory
    /// ([`KvStore::get_async`](crate::storage::kv::KvStore::get_async)).
    pub async fn session(&self, token: &str) -> Result<Option<(Account, SessionInfo)>> {
        let hash = token_hash(token);
        let Some(session) = self
            .read::<StoredSession>(SESSIONS, hash.as_bytes())
            .await?
        else {
            return Ok(None);
        };
        let account: Option<StoredAccount> = self.read(USERS, session.user_id.as_bytes()).await?;
        match account {
            Some(account) if session.expires_at > self.now() => {
                Ok(Some((Account::from(&account), SessionInfo::from(&session))))
            }
            _ => {
                let mut batch = Batch::new();
                delete_session_ops(&mut batch, &session.user_id, &hash);
                self.commit(batch).await?;
                Ok(None)
            }
        }
    }

    /// Ends the session of `token`; unknown tokens are ignored.
    pub async fn sign_out(&self, token: &str) -> Result<()> {
        let hash = token_hash(token);
        if let Some(session) = self
            .read::<StoredSession>(SESSIONS, hash.as_bytes())
            .await?
        {
            self.delete_session(&session.user_id, &hash).await?;
        }
        Ok(())
    }

    /// Replaces the password of `user_id`, whose session is `current_token`.
    /// With `revoke_other_sessions`, every other session of the user ends in
    /// the same write. Wrong current passwords count against the email's
    /// sign-in limit.
    pub async fn change_password(
        &self,
        user_id: &str,
        current_token: &str,
        current_password: &str,
        new_password: &str,
        revoke_other_sessions: bool,
    ) -> Result<()> {
        validate_password(new_password)?;
        let now = self.now();
        let current_hash = token_hash(current_token);
        let session: Option<StoredSession> = self.read(SESSIONS, current_hash.as_bytes()).await?;
        if !session.is_some_and(|s| s.user_id == user_id && s.expires_at > now) {
            return Err(AccountError::Unauthorized);
        }
        let verified = self.stored_account(user_id).await?;
        self.limiter.attempt(&verified.email, "", now)?;
        if !verify_off_thread(&verified.password_hash, current_password).await? {
            return Err(AccountError::InvalidCredentials);
        }
        let new = new_password.to_string();
        let new_hash = crate::tasks::blocking(move || hash_password(&new)).await?;

        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        if account.password_hash != verified.password_hash {
            return Err(AccountError::InvalidCredentials);
        }
        account.password_hash = new_hash;
        account.updated_at = now;
        let mut batch = Batch::new();
        batch.put(USERS, user_id.as_bytes(), &account)?;
        if revoke_other_sessions {
            for hash in self.session_hashes(user_id).await? {
                if hash != current_hash {
                    delete_session_ops(&mut batch, user_id, &hash);
                }
            }
        }
        self.commit(batch).await?;
        self.limiter.succeeded(&account.email, "", now);
        Ok(())
    }

    /// The account of `user_id`.
    pub async fn get_account(&self, user_id: &str) -> Result<Account> {
        Ok(Account::from(&self.stored_account(user_id).await?))
    }

    /// Whether the account `user_id` is stored (async code, outside its
    /// actor: a Stripe event naming it).
    pub async fn account_exists(&self, user_id: &str) -> Result<bool> {
        let key = user_id.as_bytes();
        Ok(self.read::<StoredAccount>(USERS, key).await?.is_some())
    }

    /// Sets the display name (trimmed, 1–100 characters).
    pub async fn update_profile(&self, user_id: &str, name: &str) -> Result<Account> {
        let name = super::text::name(name)?;
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        account.name = name;
        account.updated_at = self.now();
        let mut batch = Batch::new();
        batch.put(USERS, user_id.as_bytes(), &account)?;
        self.commit(batch).await?;
        Ok(Account::from(&account))
    }

    /// Sets or clears the avatar's object key. Returns the previous key, whose
    /// object the caller deletes once this has succeeded.
    pub async fn set_avatar(
        &self,
        user_id: &str,
        avatar_key: Option<String>,
    ) -> Result<Option<String>> {
        if let Some(key) = &avatar_key {
            if key.is_empty() || key.len() > AVATAR_KEY_MAX_LEN {
                return Err(AccountError::InvalidInput(format!(
                    "avatar: the object key must be 1 to {AVATAR_KEY_MAX_LEN} bytes"
                )));
            }
        }
        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        let previous = std::mem::replace(&mut account.avatar_key, avatar_key);
        account.updated_at = self.now();
        let mut batch = Batch::new();
        batch.put(USERS, user_id.as_bytes(), &account)?;
        self.commit(batch).await?;
        Ok(previous)
    }

    /// The token hashes of every session of `user_id`, from the index.
    async fn session_hashes(&self, user_id: &str) -> Result<Vec<String>> {
        let prefix = user_prefix(user_id);
        Ok(self
            .kv
            .scan_prefix_async(USER_SESSIONS, &prefix)
            .await?
            .into_iter()
            .map(|(key, _)| String::from_utf8_lossy(&key[prefix.len()..]).into_owned())
            .collect())
    }

    /// Adds deletions of the user's expired sessions to `batch`.
    async fn drop_expired_sessions(
        &self,
        batch: &mut Batch,
        user_id: &str,
        now: i64,
    ) -> Result<()> {
        for hash in self.session_hashes(user_id).await? {
            let session: Option<StoredSession> = self.read(SESSIONS, hash.as_bytes()).await?;
            if session.is_none_or(|s| s.expires_at <= now) {
                delete_session_ops(batch, user_id, &hash);
            }
        }
        Ok(())
    }

    async fn delete_session(&self, user_id: &str, hash: &str) -> Result<()> {
        let mut batch = Batch::new();
        delete_session_ops(&mut batch, user_id, hash);
        self.commit(batch).await
    }
}

/// Adds a new session of `user_id` to `batch` and returns its token.
fn add_session(batch: &mut Batch, user_id: &str, now: i64) -> Result<String> {
    let token = format!("{user_id}.{}", new_token());
    let hash = token_hash(&token);
    let session = StoredSession {
        id: new_id(),
        user_id: user_id.to_string(),
        created_at: now,
        expires_at: now.saturating_add(SESSION_TTL_MS),
    };
    batch.put(SESSIONS, hash.as_bytes(), &session)?;
    batch.put(USER_SESSIONS, user_key(user_id, &hash), &())?;
    Ok(token)
}

fn delete_session_ops(batch: &mut Batch, user_id: &str, hash: &str) {
    batch.delete(SESSIONS, hash.as_bytes());
    batch.delete(USER_SESSIONS, user_key(user_id, hash));
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
