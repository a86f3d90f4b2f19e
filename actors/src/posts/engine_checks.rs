//! The checks a scheduling request goes through before anything is stored
//! (when, where, which title) and the record a valid one becomes: part of
//! [`Publishing`], kept apart from the engine's actors and storage.

use super::{Publishing, MAX_AHEAD_MS};
use crate::accounts::now_ms;
use crate::accounts::parse_utc;
use crate::posts::error::{PublishError, Result};
use crate::posts::provider::Provider;

impl Publishing {
    pub(super) fn parse_time(&self, field: &str, s: Option<&str>) -> Result<i64> {
        let s = s.ok_or_else(|| PublishError::invalid(field, "is required"))?;
        let t = parse_utc(s).ok_or_else(|| {
            PublishError::invalid(
                field,
                "must be an ISO 8601 UTC timestamp, e.g. 2026-05-01T18:00:00Z",
            )
        })?;
        let now = now_ms();
        if t < now - self.settings.past_grace.as_millis() as i64 {
            return Err(PublishError::invalid(field, "is in the past"));
        }
        if t > now + MAX_AHEAD_MS {
            return Err(PublishError::invalid(
                field,
                "must be within the next 365 days",
            ));
        }
        Ok(t)
    }

    pub(super) fn parse_provider(field: &str, s: Option<&str>) -> Result<Provider> {
        let s = s.ok_or_else(|| PublishError::invalid(field, "is required"))?;
        Provider::parse(s).ok_or_else(|| {
            PublishError::invalid(
                field,
                format!("{s:?} is not one of tiktok, instagram, youtube"),
            )
        })
    }

    pub(super) fn check_title(field: &str, title: &str, p: Provider) -> Result<String> {
        let t = title.trim();
        if t.is_empty() {
            return Err(PublishError::invalid(field, "must not be empty"));
        }
        if !crate::accounts::text::text_ok(t) {
            return Err(PublishError::invalid(
                field,
                "must not contain control or bidi override characters",
            ));
        }
        if t.chars().count() > p.max_title_chars() {
            return Err(PublishError::invalid(
                field,
                format!(
                    "{} allows at most {} characters",
                    p.display(),
                    p.max_title_chars()
                ),
            ));
        }
        if p == Provider::YouTube && t.contains(['<', '>']) {
            return Err(PublishError::invalid(
                field,
                "YouTube titles cannot contain < or >",
            ));
        }
        Ok(t.to_string())
    }
}
