//! Connected platform accounts (one per user and platform).
//!
//! | tree | key | value |
//! |---|---|---|
//! | `integrations` | `user/provider` | [`IntegrationRecord`], tokens AES-GCM encrypted |
//! | `oauth_states` | state | [`OAuthState`]: who started the flow (account and session), PKCE verifier; single use, 10 min |

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::engine::Publishing;
use super::error::{PublishError, Result};
use super::http::PubError;
use super::oauth::{self, TokenSet};
use super::post::{self, PostStatus};
use super::provider::Provider;
use crate::accounts::{iso8601, now_ms};
use crate::housekeeping::Periodic;
use crate::storage::kv::{self, KvOp};

pub const INTEGRATIONS: &str = "integrations";
pub const OAUTH_STATES: &str = "oauth_states";
const STATE_TTL_MS: i64 = 10 * 60 * 1000;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IntegrationRecord {
    pub user_id: String,
    pub provider: Provider,
    pub account_id: String,
    pub account_name: String,
    pub access_token: Vec<u8>,
    pub refresh_token: Option<Vec<u8>>,
    pub expires_at: i64,
    pub refresh_expires_at: Option<i64>,
    pub scope: String,
    pub connected_at: i64,
    pub refreshed_at: i64,
}
crate::record!(IntegrationRecord, "integration", 1);

impl IntegrationRecord {
    /// Usable now, or can be made usable by a refresh.
    pub fn active(&self, now: i64) -> bool {
        self.expires_at > now
            || (self.refresh_token.is_some() && self.refresh_expires_at.is_none_or(|t| t > now))
    }

    pub fn view(&self, now: i64) -> Value {
        json!({
            "provider": self.provider.as_str(),
            "accountId": self.account_id,
            "accountName": self.account_name,
            "scope": self.scope,
            "connectedAt": iso8601(self.connected_at),
            "expiresAt": iso8601(self.expires_at),
            "refreshedAt": iso8601(self.refreshed_at),
            "active": self.active(now),
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OAuthState {
    pub user_id: String,
    /// SHA-256 (hex) of the session token that started the flow; the
    /// callback must come with the same session.
    #[serde(default)]
    pub session: String,
    pub provider: Provider,
    pub verifier: Option<String>,
    pub created_at: i64,
}
crate::record!(OAuthState, "oauth state", 1);

pub fn key(user_id: &str, p: Provider) -> Vec<u8> {
    format!("{user_id}/{}", p.as_str()).into_bytes()
}

/// What a callback found under its `state`.
enum Taken {
    /// The caller's own flow, now consumed.
    Mine(OAuthState),
    /// A live flow of another session: left in place.
    WrongSession,
    /// Absent, used, expired or for another platform.
    Unknown,
}

/// What a flow records of the session that started it.
fn session_digest(token: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(token.as_bytes()))
}

impl Publishing {
    /// The periodic token work, for the node's `housekeeping` branch:
    /// every `refresh_every`, the tokens expiring within the margin are
    /// refreshed and expired OAuth states removed.
    pub fn token_refresh(self: &Arc<Self>) -> Periodic {
        let p = self.clone();
        Periodic::new_async(
            super::engine::TOKEN_REFRESH,
            self.settings.refresh_every,
            move || {
                let p = p.clone();
                async move {
                    p.refresh_expiring().await;
                    let kv = p.host.kv();
                    if let Ok(rows) = kv.scan_prefix_async(OAUTH_STATES, b"").await {
                        let expired = expired_state_ops(rows);
                        if !expired.is_empty() {
                            let _ = kv.apply_async(expired).await;
                        }
                    }
                }
            },
        )
    }

    fn ensure_configured(&self, p: Provider) -> Result<()> {
        if self.settings.provider(p).configured() {
            Ok(())
        } else {
            Err(PublishError::NotConfigured(p))
        }
    }

    pub async fn integration(
        &self,
        user_id: &str,
        p: Provider,
    ) -> Result<Option<IntegrationRecord>> {
        let k = key(user_id, p);
        Ok(kv::get_value_async(self.host.kv(), INTEGRATIONS, &k).await?)
    }

    /// The platforms this server can connect: those whose OAuth client is
    /// configured (connecting any other answers `provider_not_configured`).
    pub fn available_providers(&self) -> Vec<Provider> {
        Provider::ALL
            .into_iter()
            .filter(|p| self.settings.provider(*p).configured())
            .collect()
    }

    /// The caller's connected accounts.
    pub async fn list_integrations(&self, user_id: &str) -> Result<Vec<Value>> {
        let prefix = format!("{user_id}/");
        let rows = self
            .host
            .kv()
            .scan_prefix_async(INTEGRATIONS, prefix.as_bytes())
            .await?;
        let now = now_ms();
        rows.iter()
            .map(|(_, v)| Ok(kv::decode::<IntegrationRecord>(v)?.view(now)))
            .collect()
    }

    /// Starts the flow: a single-use `state` bound to the user and the
    /// session `session_token` (and a PKCE verifier where the platform uses
    /// it); returns the authorize URL.
    pub async fn connect(&self, user_id: &str, session_token: &str, p: Provider) -> Result<Value> {
        self.ensure_configured(p)?;
        let state = oauth::random_token(32);
        let verifier = oauth::uses_pkce(p).then(|| oauth::random_token(48));
        let rec = OAuthState {
            user_id: user_id.to_string(),
            session: session_digest(session_token),
            provider: p,
            verifier: verifier.clone(),
            created_at: now_ms(),
        };
        let url = oauth::authorize_url(p, &self.settings, &state, verifier.as_deref());
        let put = KvOp::Put {
            tree: OAUTH_STATES.into(),
            key: state.clone().into_bytes(),
            value: kv::encode(&rec)?,
        };
        self.host.kv().apply_async(vec![put]).await?;
        Ok(json!({
            "provider": p.as_str(),
            "authorizeUrl": url,
            "state": state,
            "redirectUri": self.settings.redirect_uri(p),
            "expiresAt": iso8601(rec.created_at + STATE_TTL_MS),
        }))
    }

    /// The platform's redirect: checks `state` and that `caller` (the
    /// account and session token the redirect came with) is the session that
    /// started the flow, exchanges the code, stores the encrypted tokens.
    /// Without that check an attacker could start a flow and have a victim
    /// finish it, connecting the victim's platform account to the attacker's.
    pub async fn callback(
        &self,
        p: Provider,
        caller: Option<(&str, &str)>,
        code: Option<&str>,
        state: Option<&str>,
        error: Option<&str>,
    ) -> Result<Value> {
        let state = state
            .filter(|s| !s.is_empty())
            .ok_or_else(|| PublishError::invalid("state", "missing"))?;
        let k = state.as_bytes().to_vec();
        let caller = caller.map(|(user, token)| (user.to_string(), session_digest(token)));
        // Single use, but only for the session that started it: a state
        // shown with another session (or none) stays, so whoever else holds
        // it cannot spoil the owner's flow. The delete is conditional on the
        // value read, so two callbacks of the same flow cannot both pass.
        let kv = self.host.kv();
        let taken = async {
            let Some(raw) = kv.get_async(OAUTH_STATES, &k).await? else {
                return Ok(Taken::Unknown);
            };
            let st: OAuthState = kv::decode(&raw)?;
            if st.provider != p || now_ms() - st.created_at >= STATE_TTL_MS {
                return Ok(Taken::Unknown);
            }
            let same_session = caller.is_some_and(|(user, digest)| {
                !st.session.is_empty() && user == st.user_id && digest == st.session
            });
            if !same_session {
                return Ok(Taken::WrongSession);
            }
            let ops = vec![
                KvOp::Expect {
                    tree: OAUTH_STATES.into(),
                    key: k.clone(),
                    value: Some(raw),
                },
                KvOp::Delete {
                    tree: OAUTH_STATES.into(),
                    key: k,
                },
            ];
            match kv.apply_async(ops).await {
                Ok(()) => Ok(Taken::Mine(st)),
                Err(kv::StorageError::Conflict(_)) => Ok(Taken::Unknown),
                Err(e) => Err(e),
            }
        };
        let taken: Taken = taken.await?;
        let st = match taken {
            Taken::Mine(st) => st,
            Taken::WrongSession => return Err(PublishError::WrongSession),
            Taken::Unknown => {
                return Err(PublishError::invalid(
                    "state",
                    "unknown, used or expired: start again with connect",
                ))
            }
        };
        if let Some(e) = error {
            return Err(PublishError::OAuth(format!(
                "{} refused access: {e}",
                p.display()
            )));
        }
        let code = code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| PublishError::invalid("code", "missing"))?;
        self.ensure_configured(p)?;
        let t = oauth::exchange_code(&self.http, p, &self.settings, code, st.verifier.as_deref())
            .await
            .map_err(upstream)?;
        let (mut account_id, mut account_name) = (t.account_id.clone(), String::new());
        if p == Provider::YouTube {
            if let Ok((id, title)) =
                oauth::youtube_channel(&self.http, &self.settings, &t.access_token).await
            {
                (account_id, account_name) = (id, title);
            }
        }
        let now = now_ms();
        let rec = self.sealed(&st.user_id, p, &t, account_id, account_name, now, now);
        let view = rec.view(now);
        self.store_integration(rec).await?;
        Ok(view)
    }

    #[allow(clippy::too_many_arguments)]
    fn sealed(
        &self,
        user: &str,
        p: Provider,
        t: &TokenSet,
        account_id: String,
        account_name: String,
        connected_at: i64,
        now: i64,
    ) -> IntegrationRecord {
        let aad = key(user, p);
        IntegrationRecord {
            user_id: user.to_string(),
            provider: p,
            account_id,
            account_name,
            access_token: self.cipher.seal(&aad, &t.access_token),
            refresh_token: t
                .refresh_token
                .as_deref()
                .map(|r| self.cipher.seal(&aad, r)),
            expires_at: now + t.expires_in * 1000,
            refresh_expires_at: t.refresh_expires_in.map(|s| now + s * 1000),
            scope: t.scope.clone(),
            connected_at,
            refreshed_at: now,
        }
    }

    async fn store_integration(&self, rec: IntegrationRecord) -> Result<()> {
        let put = KvOp::Put {
            tree: INTEGRATIONS.into(),
            key: key(&rec.user_id, rec.provider),
            value: kv::encode(&rec)?,
        };
        self.host.kv().apply_async(vec![put]).await?;
        Ok(())
    }

    /// Disconnects; the user's pending posts for the platform fail with the reason.
    pub async fn disconnect(
        self: &std::sync::Arc<Self>,
        user_id: &str,
        p: Provider,
    ) -> Result<usize> {
        if self.integration(user_id, p).await?.is_none() {
            return Err(PublishError::NotFound("integration"));
        }
        let delete = KvOp::Delete {
            tree: INTEGRATIONS.into(),
            key: key(user_id, p),
        };
        self.host.kv().apply_async(vec![delete]).await?;
        let all = post::all_of_user(self.host.kv(), user_id).await?;
        let reason = format!(
            "the {} account was disconnected before publication",
            p.display()
        );
        let mut failed = 0;
        for post in all
            .into_iter()
            .filter(|x| x.provider == p && x.status == PostStatus::Pending)
        {
            if self.fail_if_pending(&post.id, &reason).await? {
                failed += 1;
            }
        }
        Ok(failed)
    }

    /// A usable access token: refreshed first when it expires within the
    /// margin, or when `force` (the platform refused it). Refreshes of one
    /// account are serialised.
    pub(crate) async fn access_token(
        &self,
        user_id: &str,
        p: Provider,
        force: bool,
    ) -> Result<(String, String), PubError> {
        let _guard = self.token_lock(user_id, p).await;
        let rec = self
            .integration(user_id, p)
            .await
            .map_err(|e| PubError::transient(e.to_string()))?
            .ok_or_else(|| {
                PubError::Permanent(format!(
                    "the {} account is not connected (connect it again and reschedule)",
                    p.display()
                ))
            })?;
        let aad = key(user_id, p);
        let open = |v: &[u8]| {
            self.cipher
                .open(&aad, v)
                .map_err(|e| PubError::Permanent(e.to_string()))
        };
        let access = open(&rec.access_token)?;
        let margin = self.settings.refresh_margin.as_millis() as i64;
        if !force && rec.expires_at - margin > now_ms() {
            return Ok((access, rec.account_id));
        }
        let refresh = rec.refresh_token.as_deref().map(open).transpose()?;
        let t = oauth::refresh(&self.http, p, &self.settings, &access, refresh.as_deref())
            .await
            .map_err(|e| match e {
                PubError::Permanent(m) => PubError::Permanent(format!(
                    "{} authorization expired, reconnect the account ({m})",
                    p.display()
                )),
                other => other,
            })?;
        let mut t2 = t.clone();
        if t2.refresh_token.is_none() {
            t2.refresh_token = refresh;
            t2.refresh_expires_in = rec.refresh_expires_at.map(|r| (r - now_ms()) / 1000);
        }
        let now = now_ms();
        let new = self.sealed(
            user_id,
            p,
            &t2,
            rec.account_id.clone(),
            rec.account_name.clone(),
            rec.connected_at,
            now,
        );
        self.store_integration(new)
            .await
            .map_err(|e| PubError::transient(e.to_string()))?;
        tracing::info!(user_id, provider = p.as_str(), "platform token refreshed");
        Ok((t.access_token, rec.account_id))
    }

    /// Refreshes every token that expires within the margin (run periodically).
    pub async fn refresh_expiring(&self) -> usize {
        let rows = match self.host.kv().scan_prefix_async(INTEGRATIONS, b"").await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "cannot scan integrations");
                return 0;
            }
        };
        let margin = self.settings.refresh_margin.as_millis() as i64;
        let mut n = 0;
        for (_, v) in rows {
            let Ok(rec) = kv::decode::<IntegrationRecord>(&v) else {
                continue;
            };
            if rec.expires_at - margin <= now_ms() && rec.active(now_ms()) {
                match self.access_token(&rec.user_id, rec.provider, false).await {
                    Ok(_) => n += 1,
                    Err(e) => tracing::warn!(
                        provider = rec.provider.as_str(),
                        error = e.message(),
                        "token refresh failed"
                    ),
                }
            }
        }
        n
    }
}

fn upstream(e: PubError) -> PublishError {
    match e {
        PubError::Permanent(m) | PubError::Unauthorized(m) => PublishError::OAuth(m),
        PubError::Transient { message, .. } => PublishError::Upstream(message),
    }
}

/// The deletes of the expired OAuth states among `states` (the whole
/// tree, scanned periodically).
fn expired_state_ops(states: kv::Rows) -> Vec<KvOp> {
    let now = now_ms();
    let mut ops = Vec::new();
    for (k, v) in states {
        let old = kv::decode::<OAuthState>(&v)
            .map(|s| now - s.created_at >= STATE_TTL_MS)
            .unwrap_or(true);
        if old {
            ops.push(KvOp::Delete {
                tree: OAUTH_STATES.into(),
                key: k,
            });
        }
    }
    ops
}
