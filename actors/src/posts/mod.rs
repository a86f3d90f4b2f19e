//! Scheduling and publishing clips to TikTok, Instagram and YouTube.
//!
//! - [`post`]: scheduled-post records and their durable indexes in the KV
//!   store (`posts`, `posts_by_user`, `posts_due`).
//! - [`schedule_actor`]: one `ScheduleActor` per unfinished post, holding
//!   the post's timer; runs `pending → publishing → published | failed`
//!   ([`run`]). [`schedules`] is the registry of the live ones, re-armed
//!   from `posts_due` at start.
//! - [`integrations`] and [`oauth`]: OAuth 2.0 connections per platform,
//!   tokens encrypted at rest ([`crypto`]) and refreshed before they expire.
//! - [`youtube`], [`tiktok`], [`instagram`]: each platform's upload flow.
//!
//! Crash safety: a post is marked `publishing` (with an idempotency key)
//! before any upload, and every platform handle (upload session, publish id,
//! media container) is persisted as soon as the platform returns it and
//! before anything that could publish. A post found `publishing` at start is
//! reconciled with the platform through those handles before any new upload.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod crypto;
pub mod engine;
mod handoff;
pub mod host;
pub mod http;
pub mod instagram;
pub mod integrations;
pub mod oauth;
pub mod post;
pub mod run;
pub mod schedule_actor;
pub mod schedules;
pub mod supervision;
pub mod tiktok;
pub mod youtube;

pub use engine::Publishing;

/// A platform clips are published to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Provider {
    TikTok,
    Instagram,
    YouTube,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::TikTok, Provider::Instagram, Provider::YouTube];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tiktok" => Some(Provider::TikTok),
            "instagram" => Some(Provider::Instagram),
            "youtube" => Some(Provider::YouTube),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::TikTok => "tiktok",
            Provider::Instagram => "instagram",
            Provider::YouTube => "youtube",
        }
    }

    pub fn display(self) -> &'static str {
        match self {
            Provider::TikTok => "TikTok",
            Provider::Instagram => "Instagram",
            Provider::YouTube => "YouTube",
        }
    }

    /// Longest title/caption the platform accepts.
    pub fn max_title_chars(self) -> usize {
        match self {
            Provider::YouTube => 100,
            Provider::TikTok | Provider::Instagram => 2200,
        }
    }
}

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

/// Errors at the API boundary of scheduling and integrations.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// A request field is invalid; the message starts with the field name.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error("connect your {} account first (no active integration)", .0.display())]
    IntegrationRequired(Provider),
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    #[error("{} publishing is not configured on this server", .0.display())]
    NotConfigured(Provider),
    /// The platform refused the OAuth exchange (bad or used code, denied).
    #[error("{0}")]
    OAuth(String),
    /// The OAuth callback came without the session that started the flow.
    #[error("finish connecting in the browser session that started it (sign in there first)")]
    WrongSession,
    /// The platform could not be reached or failed.
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Storage(#[from] crate::storage::kv::StorageError),
    /// The `scheduler` branch of the supervision tree is not running.
    #[error(transparent)]
    Supervision(#[from] crate::supervisor::SupervisionError),
}

impl PublishError {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        PublishError::Invalid {
            field: field.to_string(),
            message: message.into(),
        }
    }
}

pub type Result<T, E = PublishError> = std::result::Result<T, E>;

pub use crate::accounts::parse_utc;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounts::iso8601;

    #[test]
    fn utc_timestamps() {
        for ms in [0, 951_782_400_000, 1_795_305_006_123] {
            assert_eq!(parse_utc(&iso8601(ms)), Some(ms));
        }
        assert_eq!(
            parse_utc("2026-01-02T03:04:05+00:00"),
            parse_utc("2026-01-02T03:04:05.000Z")
        );
        for bad in [
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05+02:00",
            "2026-02-30T00:00:00Z",
            "tomorrow",
            "2026-1-2T03:04:05Z",
            "2026-01-02T24:00:00Z",
        ] {
            assert_eq!(parse_utc(bad), None, "{bad}");
        }
    }
}
