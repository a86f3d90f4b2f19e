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

pub mod crypto;
pub mod engine;
mod error;
mod handoff;
pub mod host;
pub mod http;
pub mod instagram;
pub mod integrations;
pub mod oauth;
pub mod post;
mod provider;
pub mod run;
pub mod schedule_actor;
pub mod schedules;
mod settings;
pub mod supervision;
pub mod tiktok;
pub mod youtube;

pub use engine::Publishing;
pub use error::{PublishError, Result};
pub use provider::Provider;
pub use settings::{ProviderSettings, PublishSettings};

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
