//! Small text formatting for the pages: sizes, times, method badges.
//!
//! The JavaScript in `static/app.js` formats live rows the same way (`humanSize`); keep the two
//! in step.

use time::OffsetDateTime;
use time::macros::format_description;

/// `0 B`, `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

/// `1 234 567 bytes` style exact count for tooltips.
pub fn exact_bytes(bytes: u64) -> String {
    let digits = bytes.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} bytes")
}

fn datetime(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// `2026-11-29 19:32:56.123 UTC`: the absolute time shown without JavaScript and in tooltips.
pub fn absolute_time(ms: i64) -> String {
    let format = format_description!(
        "[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:3] UTC"
    );
    datetime(ms).format(&format).unwrap_or_default()
}

/// A compact absolute time for list rows: `19:32:56 UTC` on the day of `now`, else
/// `2026-11-28 19:32 UTC`.
pub fn row_time(ms: i64, now: i64) -> String {
    let t = datetime(ms);
    if t.date() == datetime(now).date() {
        let format = format_description!("[hour]:[minute]:[second] UTC");
        t.format(&format).unwrap_or_default()
    } else {
        let format = format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
        t.format(&format).unwrap_or_default()
    }
}

/// `in 6 days`, `in 3 hours`, `in 12 minutes`, `in 40 seconds`, `now`.
pub fn time_until(ms: i64, now: i64) -> String {
    if ms - now < 1000 {
        return "now".to_owned();
    }
    format!("in {}", duration_words(ms - now))
}

/// `7 days`, `3 hours`, `12 minutes`, `40 seconds` (rounded to the nearest unit).
pub fn duration_words(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    let (n, unit) = match secs {
        s if s < 90 => (s, "second"),
        s if s < 3570 => ((s + 30) / 60, "minute"),
        s if s < 36 * 3600 => ((s + 1800) / 3600, "hour"),
        s => ((s + 43_200) / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// The CSS class of a method badge; unknown methods share a neutral colour.
pub fn method_class(method: &str) -> &'static str {
    match method {
        "GET" => "m-get",
        "POST" => "m-post",
        "PUT" => "m-put",
        "PATCH" => "m-patch",
        "DELETE" => "m-delete",
        "HEAD" | "OPTIONS" => "m-meta",
        _ => "m-other",
    }
}

/// What a list row shows as the target: the subpath (or `/`) and the raw query.
pub fn row_target(subpath: &str, query: &str) -> String {
    let path = if subpath.is_empty() { "/" } else { subpath };
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(20 * 1024), "20 KiB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(exact_bytes(1_234_567), "1,234,567 bytes");
        assert_eq!(exact_bytes(12), "12 bytes");
    }

    #[test]
    fn times() {
        let t = 1_750_000_000_123; // 2025-06-15T15:06:40.123Z
        assert_eq!(absolute_time(t), "2025-06-15 15:06:40.123 UTC");
        assert_eq!(row_time(t, t + 1000), "15:06:40 UTC");
        assert_eq!(row_time(t, t + 86_400_000), "2025-06-15 15:06 UTC");
        assert_eq!(time_until(t, t), "now");
        assert_eq!(time_until(t + 1000, t), "in 1 second");
        assert_eq!(time_until(t + 12 * 60_000, t), "in 12 minutes");
        assert_eq!(time_until(t + 5 * 3_600_000, t), "in 5 hours");
        assert_eq!(time_until(t + 7 * 86_400_000 - 5000, t), "in 7 days");
        assert_eq!(duration_words(7 * 86_400_000), "7 days");
        assert_eq!(duration_words(3_600_000), "1 hour");
    }

    #[test]
    fn targets_and_methods() {
        assert_eq!(row_target("", ""), "/");
        assert_eq!(row_target("/a", "x=1"), "/a?x=1");
        assert_eq!(method_class("POST"), "m-post");
        assert_eq!(method_class("PROPFIND"), "m-other");
    }
}
