//! What publishing is configured with: each platform's OAuth client and
//! the scheduler's limits ([`PublishSettings`]).

use std::time::Duration;

use super::provider::Provider;

/// One platform's OAuth client and endpoints (base URLs, so tests and
/// proxies can point them elsewhere).
#[derive(Clone, Default)]
pub struct ProviderSettings {
    pub client_id: String,
    pub client_secret: String,
    /// Browser authorization page.
    pub auth_url: String,
    /// Token endpoint.
    pub token_url: String,
    /// API base URL (Graph API host, Content Posting API host, Data API host).
    pub api_url: String,
    /// Upload host (YouTube's `/upload` lives on the API host by default).
    pub upload_url: String,
    pub scopes: String,
}

impl ProviderSettings {
    pub fn configured(&self) -> bool {
        !self.client_id.is_empty() && !self.client_secret.is_empty()
    }
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &"***")
            .field("auth_url", &self.auth_url)
            .field("token_url", &self.token_url)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

/// Knobs of scheduling and publishing.
#[derive(Clone, Debug)]
pub struct PublishSettings {
    /// Base of the OAuth redirect URIs: `<base>/api/integrations/<provider>/callback`.
    pub redirect_base: String,
    /// Attempts of one publication (transient failures) before it fails.
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    pub request_timeout: Duration,
    /// Publications uploading at once on this node.
    pub concurrency: usize,
    /// How far in the past `scheduledAt` may be (clock skew, slow clients).
    pub past_grace: Duration,
    /// Platform processing status polls: interval and count.
    pub poll_interval: Duration,
    pub poll_limit: u32,
    /// TikTok chunk size (the platform wants 5–64 MB except for small files).
    pub tiktok_chunk_bytes: u64,
    /// YouTube `status.privacyStatus`: public, unlisted or private.
    pub youtube_privacy: String,
    /// Graph API version in Instagram URLs, e.g. `v21.0`.
    pub instagram_api_version: String,
    /// Tokens expiring within this margin are refreshed before use.
    pub refresh_margin: Duration,
    /// How often the tokens expiring within the margin are refreshed.
    pub refresh_every: Duration,
    /// Lifetime of the signed clip URL handed to Instagram.
    pub media_url_ttl: Duration,
    pub youtube: ProviderSettings,
    pub tiktok: ProviderSettings,
    pub instagram: ProviderSettings,
}

impl Default for PublishSettings {
    fn default() -> Self {
        Self {
            redirect_base: "http://127.0.0.1:8080".into(),
            max_attempts: 5,
            backoff_base: Duration::from_secs(2),
            backoff_max: Duration::from_secs(300),
            request_timeout: Duration::from_secs(120),
            concurrency: 8,
            past_grace: Duration::from_secs(60),
            poll_interval: Duration::from_secs(5),
            poll_limit: 120,
            tiktok_chunk_bytes: 10 * 1024 * 1024,
            youtube_privacy: "public".into(),
            instagram_api_version: "v21.0".into(),
            refresh_margin: Duration::from_secs(300),
            refresh_every: Duration::from_secs(60),
            media_url_ttl: Duration::from_secs(6 * 3600),
            youtube: ProviderSettings {
                auth_url: "https://accounts.google.com/o/oauth2/v2/auth".into(),
                token_url: "https://oauth2.googleapis.com/token".into(),
                api_url: "https://www.googleapis.com".into(),
                upload_url: "https://www.googleapis.com".into(),
                scopes: "https://www.googleapis.com/auth/youtube.upload https://www.googleapis.com/auth/youtube.readonly".into(),
                ..Default::default()
            },
            tiktok: ProviderSettings {
                auth_url: "https://www.tiktok.com/v2/auth/authorize/".into(),
                token_url: "https://open.tiktokapis.com/v2/oauth/token/".into(),
                api_url: "https://open.tiktokapis.com".into(),
                scopes: "user.info.basic,video.publish,video.upload".into(),
                ..Default::default()
            },
            instagram: ProviderSettings {
                auth_url: "https://www.instagram.com/oauth/authorize".into(),
                token_url: "https://api.instagram.com/oauth/access_token".into(),
                api_url: "https://graph.instagram.com".into(),
                scopes: "instagram_business_basic,instagram_business_content_publish".into(),
                ..Default::default()
            },
        }
    }
}

impl PublishSettings {
    pub fn provider(&self, p: Provider) -> &ProviderSettings {
        match p {
            Provider::TikTok => &self.tiktok,
            Provider::Instagram => &self.instagram,
            Provider::YouTube => &self.youtube,
        }
    }

    pub fn redirect_uri(&self, p: Provider) -> String {
        format!(
            "{}/api/integrations/{}/callback",
            self.redirect_base.trim_end_matches('/'),
            p.as_str()
        )
    }
}
