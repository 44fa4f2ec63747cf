//! The replay window: is a signed timestamp close enough to "now"?
//!
//! The window is inclusive (|now - ts| <= tolerance passes, as every reference library does). Its
//! direction is the scheme's: Standard Webhooks, Svix, Slack and BOTIX reject timestamps too far
//! in the past *or* the future; Stripe's library rejects only old ones (see [`Window::PastOnly`],
//! which [`crate::signing::Scheme::replay_window`] assigns).

use super::text;
pub(crate) use crate::signing::Window;

/// The clock a check runs against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    /// Unix seconds.
    pub now: i64,
    /// Whether `now` came from the caller rather than the wall clock.
    pub now_given: bool,
    pub tolerance: u64,
    /// When the request arrived (Unix seconds), for the "it was fresh on arrival" hint.
    pub arrived: i64,
}

/// The outcome of a freshness check, with a sentence for `detail`.
#[derive(Debug, Clone)]
pub(crate) struct Freshness {
    pub ok: bool,
    pub sentence: String,
}

/// Checks `ts` against `clock` under `window`.
pub(crate) fn check(clock: &Clock, ts: i64, window: Window) -> Freshness {
    let ok = within(clock.now, ts, clock.tolerance, window);
    let age = describe(clock.now, ts);
    let tolerance = clock.tolerance;
    let future_beyond = ts
        > clock
            .now
            .saturating_add(i64::try_from(tolerance).unwrap_or(i64::MAX));
    let mut sentence = if !ok {
        format!("{age}, outside the {tolerance} s tolerance.")
    } else if future_beyond {
        // Only reachable with Window::PastOnly (Stripe).
        format!(
            "{age}, beyond the {tolerance} s tolerance, but Stripe's library rejects only old \
             timestamps, so it passes; the sender's clock or this server's may be off."
        )
    } else {
        format!("{age}, within the {tolerance} s tolerance.")
    };
    if !ok && !clock.now_given && within(clock.arrived, ts, clock.tolerance, window) {
        sentence.push_str(&format!(
            " It was within the tolerance when the request arrived; pass \"now\": {} to check it \
             as of arrival.",
            clock.arrived
        ));
    }
    if looks_like_milliseconds(ts) {
        sentence.push_str(" The timestamp looks like milliseconds; this scheme uses seconds.");
    }
    Freshness { ok, sentence }
}

fn within(now: i64, ts: i64, tolerance: u64, window: Window) -> bool {
    let distance = now.abs_diff(ts);
    match window {
        Window::BothWays => distance <= tolerance,
        Window::PastOnly => ts >= now || distance <= tolerance,
    }
}

fn looks_like_milliseconds(ts: i64) -> bool {
    // 10^11 seconds is the year 5138; 10^12 milliseconds is 2001.
    ts > 100_000_000_000
}

/// "timestamp is 7 minutes old (420 s)", "timestamp is 45 seconds in the future".
pub(crate) fn describe(now: i64, ts: i64) -> String {
    let distance = now.abs_diff(ts);
    if distance == 0 {
        return "timestamp is exactly the current time".to_owned();
    }
    let side = if ts < now { "old" } else { "in the future" };
    if distance < 120 {
        format!("timestamp is {} {side}", span(distance))
    } else {
        format!("timestamp is {} {side} ({distance} s)", span(distance))
    }
}

/// A duration in the two largest units that matter: "45 seconds", "5 minutes 1 second",
/// "3 hours 2 minutes", "12 days".
pub(crate) fn span(seconds: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    let two = |big: u64, big_noun: &str, small: u64, small_noun: &str| {
        if small == 0 {
            text::count(big as usize, big_noun)
        } else {
            format!(
                "{} {}",
                text::count(big as usize, big_noun),
                text::count(small as usize, small_noun)
            )
        }
    };
    match seconds {
        s if s < 2 * MINUTE => text::count(s as usize, "second"),
        s if s < HOUR => two(s / MINUTE, "minute", s % MINUTE, "second"),
        s if s < DAY => two(s / HOUR, "hour", s % HOUR / MINUTE, "minute"),
        s => two(s / DAY, "day", s % DAY / HOUR, "hour"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(now: i64) -> Clock {
        Clock {
            now,
            now_given: true,
            tolerance: 300,
            arrived: now,
        }
    }

    #[test]
    fn window_is_inclusive_on_both_sides() {
        let c = clock(1_000_000);
        assert!(check(&c, 1_000_000 - 300, Window::BothWays).ok);
        assert!(check(&c, 1_000_000 + 300, Window::BothWays).ok);
        assert!(!check(&c, 1_000_000 - 301, Window::BothWays).ok);
        assert!(!check(&c, 1_000_000 + 301, Window::BothWays).ok);
    }

    #[test]
    fn past_only_accepts_any_future_timestamp() {
        let c = clock(1_000_000);
        assert!(!check(&c, 1_000_000 - 301, Window::PastOnly).ok);
        let future = check(&c, 1_000_000 + 600, Window::PastOnly);
        assert!(future.ok);
        assert!(future.sentence.contains("10 minutes in the future"));
        assert!(future.sentence.contains("beyond the 300 s tolerance"));
        assert!(future.sentence.contains("rejects only old"));
        let near_future = check(&c, 1_000_000 + 30, Window::PastOnly);
        assert!(near_future.sentence.contains("within the 300 s tolerance"));
    }

    #[test]
    fn wording_of_old_and_future_timestamps() {
        assert_eq!(describe(1000, 580), "timestamp is 7 minutes old (420 s)");
        assert_eq!(
            describe(1000, 1300),
            "timestamp is 5 minutes in the future (300 s)"
        );
        assert_eq!(
            describe(1000, 699),
            "timestamp is 5 minutes 1 second old (301 s)"
        );
        assert_eq!(
            describe(1000, 1000),
            "timestamp is exactly the current time"
        );
        assert_eq!(describe(1000, 983), "timestamp is 17 seconds old");
        assert_eq!(span(45), "45 seconds");
        assert_eq!(span(3 * 3600 + 120), "3 hours 2 minutes");
        assert_eq!(span(12 * 86400), "12 days");
        assert_eq!(span(3600), "1 hour");
        assert_eq!(span(90 * 60), "1 hour 30 minutes");
        assert_eq!(span(26 * 3600), "1 day 2 hours");
    }

    #[test]
    fn extreme_timestamps_do_not_overflow() {
        let c = clock(1_750_000_000);
        assert!(!check(&c, i64::MIN, Window::BothWays).ok);
        assert!(!check(&c, i64::MAX, Window::BothWays).ok);
        assert!(check(&c, i64::MAX, Window::PastOnly).ok);
        let huge = Clock {
            tolerance: u64::MAX,
            ..c
        };
        assert!(check(&huge, i64::MIN, Window::BothWays).ok);
    }

    #[test]
    fn hints_when_fresh_on_arrival_or_in_milliseconds() {
        let wall = Clock {
            now: 2_000_000,
            now_given: false,
            tolerance: 300,
            arrived: 1_000_000,
        };
        let stale = check(&wall, 999_990, Window::BothWays);
        assert!(!stale.ok);
        assert!(stale.sentence.contains("pass \"now\": 1000000"));
        let millis = check(&clock(1_750_000_000), 1_750_000_000_000, Window::BothWays);
        assert!(millis.sentence.contains("looks like milliseconds"));
    }
}
