//! Wall-clock time in the one representation we store (unix milliseconds) and the one we print
//! (RFC 3339 UTC with milliseconds).
//!
//! Code below the HTTP layer takes `now` as an argument instead of reading the clock, so expiry
//! and reaping are testable without sleeping.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::macros::format_description;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-11-29T19:32:56.123Z`.
pub fn rfc3339_ms(ms: i64) -> String {
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_in_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_750_000_000_123), "2025-06-15T15:06:40.123Z");
    }
}
