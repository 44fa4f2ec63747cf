//! Small text formatting for the pages, in the page's language: sizes, times, method badges.
//!
//! The JavaScript in `static/app.js` formats live rows the same way (`humanSize`, with the
//! units from the catalogs); keep the two in step.

use time::OffsetDateTime;
use time::macros::format_description;

use super::i18n::{Lang, Ui};

/// `0 B`, `512 B`, `1.5 KiB`, `3.2 MiB` (`1,5 КиБ` in Russian).
pub fn human_size(bytes: u64, ui: &Ui) -> String {
    const UNITS: [&str; 4] = ["size-kib", "size-mib", "size-gib", "size-tib"];
    if bytes < 1024 {
        return ui.t1("size-b", "n", ui.lang.int(bytes));
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let places = if value < 10.0 { 1 } else { 0 };
    ui.t1(UNITS[unit], "n", ui.lang.decimal(value, places))
}

/// `1,234,567 bytes` (`1 234 567 байт`): the exact count for tooltips.
pub fn exact_bytes(bytes: u64, ui: &Ui) -> String {
    ui.count("bytes", bytes)
}

fn datetime(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// `2026-11-29 19:32:56.123 UTC` (`29.11.2026 19:32:56,123 UTC` in Russian and Ukrainian): the
/// absolute time shown without JavaScript and in tooltips.
pub fn absolute_time(ms: i64, lang: Lang) -> String {
    let t = datetime(ms);
    match lang {
        Lang::En => t.format(format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second].[subsecond digits:3] UTC"
        )),
        Lang::Ru | Lang::Uk => t.format(format_description!(
            "[day].[month].[year] [hour]:[minute]:[second],[subsecond digits:3] UTC"
        )),
    }
    .unwrap_or_default()
}

/// A compact absolute time for list rows: `19:32:56 UTC` on the day of `now`, else
/// `2026-11-28 19:32 UTC` (`28.11.2026 19:32 UTC`).
pub fn row_time(ms: i64, now: i64, lang: Lang) -> String {
    let t = datetime(ms);
    if t.date() == datetime(now).date() {
        t.format(format_description!("[hour]:[minute]:[second] UTC"))
    } else if lang == Lang::En {
        t.format(format_description!(
            "[year]-[month]-[day] [hour]:[minute] UTC"
        ))
    } else {
        t.format(format_description!(
            "[day].[month].[year] [hour]:[minute] UTC"
        ))
    }
    .unwrap_or_default()
}

/// `in 6 days`, `in 3 hours`, `in 12 minutes`, `in 40 seconds`, `now`.
pub fn time_until(ms: i64, now: i64, ui: &Ui) -> String {
    if ms - now < 1000 {
        return ui.t("time-now");
    }
    ui.t1("time-in", "duration", duration_words(ms - now, ui))
}

/// `7 days`, `3 hours`, `12 minutes`, `40 seconds` (rounded to the nearest unit).
pub fn duration_words(ms: i64, ui: &Ui) -> String {
    let secs = (ms.max(0) / 1000) as u64;
    match secs {
        s if s < 90 => ui.count("duration-seconds", s),
        s if s < 3570 => ui.count("duration-minutes", (s + 30) / 60),
        s if s < 36 * 3600 => ui.count("duration-hours", (s + 1800) / 3600),
        s => ui.count("duration-days", (s + 43_200) / 86_400),
    }
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

    fn en() -> Ui {
        Ui::new(Lang::En, "/")
    }

    #[test]
    fn sizes() {
        let en = &en();
        assert_eq!(human_size(0, en), "0 B");
        assert_eq!(human_size(1023, en), "1,023 B");
        assert_eq!(human_size(1536, en), "1.5 KiB");
        assert_eq!(human_size(20 * 1024, en), "20 KiB");
        assert_eq!(human_size(5 * 1024 * 1024, en), "5.0 MiB");
        assert_eq!(exact_bytes(1_234_567, en), "1,234,567 bytes");
        assert_eq!(exact_bytes(12, en), "12 bytes");
        let ru = &Ui::new(Lang::Ru, "/");
        assert_eq!(human_size(1536, ru), "1,5 КиБ");
        assert_eq!(exact_bytes(1_234_567, ru), "1\u{a0}234\u{a0}567 байт");
        let uk = &Ui::new(Lang::Uk, "/");
        assert_eq!(human_size(3 * 1024 * 1024 * 1024, uk), "3,0 ГіБ");
    }

    #[test]
    fn times() {
        let en = &en();
        let t = 1_750_000_000_123; // 2025-06-15T15:06:40.123Z
        assert_eq!(absolute_time(t, Lang::En), "2025-06-15 15:06:40.123 UTC");
        assert_eq!(absolute_time(t, Lang::Ru), "15.06.2025 15:06:40,123 UTC");
        assert_eq!(row_time(t, t + 1000, Lang::En), "15:06:40 UTC");
        assert_eq!(
            row_time(t, t + 86_400_000, Lang::En),
            "2025-06-15 15:06 UTC"
        );
        assert_eq!(
            row_time(t, t + 86_400_000, Lang::Uk),
            "15.06.2025 15:06 UTC"
        );
        assert_eq!(time_until(t, t, en), "now");
        assert_eq!(time_until(t + 1000, t, en), "in 1 second");
        assert_eq!(time_until(t + 12 * 60_000, t, en), "in 12 minutes");
        assert_eq!(time_until(t + 5 * 3_600_000, t, en), "in 5 hours");
        assert_eq!(time_until(t + 7 * 86_400_000 - 5000, t, en), "in 7 days");
        assert_eq!(duration_words(7 * 86_400_000, en), "7 days");
        assert_eq!(duration_words(3_600_000, en), "1 hour");
        let ru = &Ui::new(Lang::Ru, "/");
        assert_eq!(time_until(t + 7 * 86_400_000, t, ru), "через 7 дней");
        assert_eq!(time_until(t + 60_000 * 21, t, ru), "через 21 минуту");
        assert_eq!(time_until(t + 3_600_000 * 3, t, ru), "через 3 часа");
        let uk = &Ui::new(Lang::Uk, "/");
        assert_eq!(duration_words(2 * 86_400_000, uk), "2 дні");
        assert_eq!(duration_words(5 * 60_000, uk), "5 хвилин");
    }

    #[test]
    fn targets_and_methods() {
        assert_eq!(row_target("", ""), "/");
        assert_eq!(row_target("/a", "x=1"), "/a?x=1");
        assert_eq!(method_class("POST"), "m-post");
        assert_eq!(method_class("PROPFIND"), "m-other");
    }
}
