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
    use chrono::{Datelike, Timelike};
    let Some(t) = chrono::DateTime::from_timestamp_millis(ms) else {
        return String::new();
    };
    let year = t.year();
    if !(0..=9999).contains(&year) {
        return t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    }
    // Written digit by digit: chrono's format strings cost more than the
    // rest of a balance request (`make bench-api`).
    let mut out = String::with_capacity(24);
    let mut push = |n: u32, width: u32, after: Option<char>| {
        for place in (0..width).rev() {
            let digit = (n / 10u32.pow(place)) % 10;
            out.push(char::from(b'0' + digit as u8));
        }
        if let Some(c) = after {
            out.push(c);
        }
    };
    push(year as u32, 4, Some('-'));
    push(t.month(), 2, Some('-'));
    push(t.day(), 2, Some('T'));
    push(t.hour(), 2, Some(':'));
    push(t.minute(), 2, Some(':'));
    push(t.second(), 2, Some('.'));
    push(t.timestamp_subsec_millis() % 1000, 3, Some('Z'));
    out
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
        // Outside four-digit years, chrono's own form.
        assert_eq!(iso8601(253_402_300_800_000), "+10000-01-01T00:00:00.000Z");
        // The digit-by-digit form is chrono's over a sweep of times.
        let mut ms = -62_167_219_200_000i64; // 0000-01-01
        while ms < 253_402_300_799_999 {
            let chrono = chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string();
            assert_eq!(iso8601(ms), chrono);
            ms += 97_654_321_987;
        }
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
