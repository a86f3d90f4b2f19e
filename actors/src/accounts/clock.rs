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
    let days = ms.div_euclid(DAY_MS);
    let ms_of_day = ms.rem_euclid(DAY_MS);
    let (year, month, day) = civil_from_days(days);
    let secs = ms_of_day / 1000;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ms_of_day % 1000
    )
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
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
    fn system_clock_is_after_2025() {
        assert!(system_clock()() > 1_735_689_600_000);
    }
}
