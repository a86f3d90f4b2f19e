//! Time as the accounts layer keeps it: unix milliseconds from a replaceable
//! clock, shown as ISO 8601 UTC.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in unix milliseconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// The system's wall clock.
pub fn system_clock() -> Clock {
    Arc::new(now_ms)
}

/// The current time in unix milliseconds (negative before 1970).
pub fn now_ms() -> i64 {
    let clamp = |ms: u128| i64::try_from(ms).unwrap_or(i64::MAX);
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => clamp(since.as_millis()),
        Err(before) => -clamp(before.duration().as_millis()),
    }
}

/// Formats unix milliseconds as ISO 8601 UTC with milliseconds, e.g.
/// `2026-11-21T23:50:06.123Z`.
pub fn iso8601(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => String::new(),
    }
}

/// The calendar date "YYYY-MM-DD" of unix milliseconds (UTC).
pub fn date_of(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%d").to_string(),
        None => String::new(),
    }
}

/// Parses an ISO 8601 / RFC 3339 timestamp in UTC (`Z` or `+00:00`,
/// optional fraction) into unix milliseconds; other offsets are refused.
pub fn parse_utc(s: &str) -> Option<i64> {
    let s = s.trim();
    if !(s.ends_with('Z') || s.ends_with('z') || s.ends_with("+00:00")) {
        return None;
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_iso8601_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_795_305_006_123), "2026-11-21T23:50:06.123Z");
        assert_eq!(iso8601(1_709_208_000_000), "2024-02-29T12:00:00.000Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_utc_only() {
        assert_eq!(
            parse_utc("2026-11-21T23:50:06.123Z"),
            Some(1_795_305_006_123)
        );
        assert_eq!(
            parse_utc("2026-11-21T23:50:06+00:00"),
            Some(1_795_305_006_000)
        );
        assert_eq!(parse_utc("2024-02-29T12:00:00Z"), Some(1_709_208_000_000));
        assert_eq!(parse_utc("2023-02-29T12:00:00Z"), None);
        assert_eq!(parse_utc("2026-11-21T23:50:06+02:00"), None);
        assert_eq!(parse_utc("2026-11-21"), None);
        assert_eq!(date_of(1_795_305_006_123), "2026-11-21");
    }

    #[test]
    fn system_clock_is_after_2025() {
        assert!(system_clock()() > 1_735_689_600_000);
    }
}
