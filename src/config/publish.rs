//! `[publish]`: scheduling, retries and the three platforms' OAuth clients
//! and base URLs. Environment: `CLIPFORGE_PUBLISH_<FIELD>` and
//! `CLIPFORGE_PUBLISH_<PLATFORM>_<FIELD>`, e.g. `CLIPFORGE_PUBLISH_TIKTOK_CLIENT_ID`.

use super::error::ConfigError;
use std::time::Duration;

use clipforge_actors::posts::{ProviderSettings, PublishSettings};
use serde::Deserialize;

use super::secret::Secret;

#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PublishConfig {
    /// 64 hex digits (AES-256 key for tokens at rest); generated and kept in
    /// the data dir when empty.
    pub token_key: Secret,
    /// Base of OAuth redirect URIs (default: the node's public URL).
    #[serde(deserialize_with = "super::serde_env::opt")]
    pub redirect_base: Option<String>,
    pub max_attempts: u32,
    pub backoff_base_ms: u64,
    pub backoff_max_ms: u64,
    pub request_timeout_secs: u64,
    pub concurrency: usize,
    pub past_grace_secs: u64,
    pub poll_interval_ms: u64,
    pub poll_limit: u32,
    pub tiktok_chunk_bytes: u64,
    pub youtube_privacy: String,
    pub instagram_api_version: String,
    pub refresh_margin_secs: u64,
    pub refresh_every_secs: u64,
    pub youtube: PlatformConfig,
    pub tiktok: PlatformConfig,
    pub instagram: PlatformConfig,
}

/// One platform; empty URLs keep the platform's real endpoints.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlatformConfig {
    pub client_id: String,
    pub client_secret: Secret,
    pub auth_url: String,
    pub token_url: String,
    pub api_url: String,
    pub upload_url: String,
}

impl Default for PublishConfig {
    fn default() -> Self {
        let d = PublishSettings::default();
        Self {
            token_key: Secret::default(),
            redirect_base: None,
            max_attempts: d.max_attempts,
            backoff_base_ms: d.backoff_base.as_millis() as u64,
            backoff_max_ms: d.backoff_max.as_millis() as u64,
            request_timeout_secs: d.request_timeout.as_secs(),
            concurrency: d.concurrency,
            past_grace_secs: d.past_grace.as_secs(),
            poll_interval_ms: d.poll_interval.as_millis() as u64,
            poll_limit: d.poll_limit,
            tiktok_chunk_bytes: d.tiktok_chunk_bytes,
            youtube_privacy: d.youtube_privacy,
            instagram_api_version: d.instagram_api_version,
            refresh_margin_secs: d.refresh_margin.as_secs(),
            refresh_every_secs: d.refresh_every.as_secs(),
            youtube: PlatformConfig::default(),
            tiktok: PlatformConfig::default(),
            instagram: PlatformConfig::default(),
        }
    }
}

fn merge(base: ProviderSettings, c: &PlatformConfig) -> ProviderSettings {
    let or = |v: &str, d: String| if v.is_empty() { d } else { v.to_string() };
    ProviderSettings {
        client_id: c.client_id.clone(),
        client_secret: c.client_secret.expose().to_string(),
        auth_url: or(&c.auth_url, base.auth_url),
        token_url: or(&c.token_url, base.token_url),
        upload_url: or(&c.upload_url, or(&c.api_url, base.upload_url)),
        api_url: or(&c.api_url, base.api_url),
        scopes: base.scopes,
    }
}

impl PublishConfig {
    pub fn settings(&self, public_url: &str, url_ttl: Duration) -> PublishSettings {
        let d = PublishSettings::default();
        PublishSettings {
            redirect_base: self
                .redirect_base
                .clone()
                .unwrap_or_else(|| public_url.to_string()),
            max_attempts: self.max_attempts.max(1),
            backoff_base: Duration::from_millis(self.backoff_base_ms),
            backoff_max: Duration::from_millis(self.backoff_max_ms.max(self.backoff_base_ms)),
            request_timeout: Duration::from_secs(self.request_timeout_secs.max(1)),
            concurrency: self.concurrency.max(1),
            past_grace: Duration::from_secs(self.past_grace_secs),
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            poll_limit: self.poll_limit.max(1),
            tiktok_chunk_bytes: self.tiktok_chunk_bytes.max(1),
            youtube_privacy: self.youtube_privacy.clone(),
            instagram_api_version: self.instagram_api_version.clone(),
            refresh_margin: Duration::from_secs(self.refresh_margin_secs),
            refresh_every: Duration::from_secs(self.refresh_every_secs.max(1)),
            media_url_ttl: url_ttl.max(d.media_url_ttl),
            youtube: merge(d.youtube, &self.youtube),
            tiktok: merge(d.tiktok, &self.tiktok),
            instagram: merge(d.instagram, &self.instagram),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if !["public", "unlisted", "private"].contains(&self.youtube_privacy.as_str()) {
            return Err("publish.youtube_privacy: use public, unlisted or private".into());
        }
        if !self.token_key.is_empty() {
            clipforge_actors::posts::crypto::TokenCipher::from_hex(self.token_key.expose())
                .map_err(|e| format!("publish.token_key: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_and_defaults() {
        let env = vec![
            ("CLIPFORGE_PUBLISH_TIKTOK_CLIENT_SECRET", "tt-secret"),
            ("CLIPFORGE_PUBLISH_TIKTOK_API_URL", "http://127.0.0.1:9"),
            ("CLIPFORGE_PUBLISH_MAX_ATTEMPTS", "3"),
            ("CLIPFORGE_PUBLISH_YOUTUBE_PRIVACY", "unlisted"),
        ];
        let c = crate::config::Config::layered(None, env.into(), &[])
            .unwrap()
            .publish;
        assert_eq!(c.youtube_privacy, "unlisted");
        assert!(!format!("{c:?}").contains("tt-secret"));
        let s = c.settings("http://host", Duration::from_secs(60));
        assert_eq!(s.max_attempts, 3);
        assert_eq!(s.tiktok.api_url, "http://127.0.0.1:9");
        assert_eq!(s.tiktok.client_secret, "tt-secret");
        assert_eq!(s.youtube.token_url, "https://oauth2.googleapis.com/token");
        assert_eq!(
            s.redirect_uri(clipforge_actors::posts::Provider::YouTube),
            "http://host/api/integrations/youtube/callback"
        );
    }
}
