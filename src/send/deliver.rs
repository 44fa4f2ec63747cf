//! `hookbin send`'s attempts: sign, send, print one line; on a connection error, a timeout, a
//! `5xx` or a `429`, wait for the schedule's next delay and try again, signed again with a fresh
//! timestamp and the same id (as Standard Webhooks senders retry). A `2xx` ends it with success,
//! any other answer (another `4xx`, a `3xx`) ends it without.
//!
//! Time goes through [`Clock`], so the tests run a `30s,5m,30m` schedule without waiting.

use std::future::Future;
use std::io::Write;
use std::time::Duration;

use super::plan::Plan;
use super::transport::{Failure, Reply, Transport};

/// How many bytes of an answer a line shows.
pub const ANSWER_PREVIEW: usize = 80;

/// The wall clock and the way to wait.
pub trait Clock {
    /// Unix seconds.
    fn now(&self) -> i64;
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()>;
}

/// The real clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        crate::clock::now_ms().div_euclid(1000)
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> {
        tokio::time::sleep(duration)
    }
}

/// One delivery and its retries.
pub struct Delivery<'a> {
    pub plan: &'a Plan,
    pub id: &'a str,
    /// `--timestamp`: the first attempt's; a retry adds the delays waited since (whole seconds),
    /// so a pinned run sends the same bytes every time and still moves forward like a clock.
    pub timestamp: Option<i64>,
    /// The delays before each retry.
    pub schedule: &'a [Duration],
    pub timeout: Duration,
}

/// Runs the attempts, printing one line each to `out` and a note before each wait to `notes`.
/// `true` when an attempt got a `2xx`.
pub async fn deliver(
    delivery: &Delivery<'_>,
    transport: &impl Transport,
    clock: &impl Clock,
    out: &mut dyn Write,
    notes: &mut dyn Write,
) -> bool {
    let mut waited = Duration::ZERO;
    let mut delays = delivery.schedule.iter();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let timestamp = match delivery.timestamp {
            Some(first) => first.saturating_add(waited.as_secs() as i64),
            None => clock.now(),
        };
        let request = delivery.plan.signed(delivery.id, timestamp);
        let result = transport.send(&request, delivery.timeout).await;
        let _ = writeln!(out, "{}", line(attempt, &result));
        let _ = out.flush();
        match &result {
            Ok(reply) if (200..300).contains(&reply.status) => return true,
            Ok(reply) if !retryable(reply.status) => return false,
            Err(failure) if !failure.transient => return false,
            _ => {}
        }
        let Some(&delay) = delays.next() else {
            return false;
        };
        let _ = writeln!(
            notes,
            "hookbin send: retrying in {} (attempt {} of {})",
            humantime::format_duration(delay),
            attempt + 1,
            delivery.schedule.len() + 1
        );
        clock.sleep(delay).await;
        waited += delay;
    }
}

/// A `5xx` or a `429` is worth another try; another status is the receiver's final word.
pub fn retryable(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

/// `{attempt} {status} {ms} ms {first 80 bytes of the answer, escaped}` (ms: until the response
/// head) or `{attempt} error: {what went wrong}`.
pub fn line(attempt: u32, result: &Result<Reply, Failure>) -> String {
    match result {
        Ok(reply) => {
            let preview = escape(&reply.body_start[..reply.body_start.len().min(ANSWER_PREVIEW)]);
            let mut line = format!(
                "{attempt} {} {} ms",
                reply.status,
                reply.elapsed.as_millis()
            );
            if !preview.is_empty() {
                line.push(' ');
                line.push_str(&preview);
            }
            line
        }
        Err(e) => format!("{attempt} error: {}", escape(e.message.as_bytes())),
    }
}

/// Bytes made safe for one terminal line: printable text as is, `\n`, `\r`, `\t` and `\\` as
/// such, other control and formatting characters (which could drive the terminal or reorder the
/// text) as `\u{..}`, bytes that are not UTF-8 as `\xNN`. A character cut at the end of the
/// preview shows as its bytes.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() || is_bidi_or_invisible(c) => {
                    out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Characters that change how the rest of a line is displayed.
fn is_bidi_or_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::send::fakes::{FakeClock, Scripted, block_on, plan};

    const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    const SCHEDULE: [Duration; 3] = [
        Duration::from_secs(30),
        Duration::from_secs(300),
        Duration::from_secs(1800),
    ];

    fn run(
        statuses: &[Result<u16, &str>],
        timestamp: Option<i64>,
    ) -> (bool, Scripted, FakeClock, String, String) {
        let plan = plan(&["--scheme", "standard-webhooks", "--secret", WHSEC]);
        let transport = Scripted::new(statuses);
        let clock = FakeClock::at(1_750_000_000);
        let (mut out, mut notes) = (Vec::new(), Vec::new());
        let delivery = Delivery {
            plan: &plan,
            id: "msg_fixed",
            timestamp,
            schedule: &SCHEDULE,
            timeout: Duration::from_secs(30),
        };
        let ok = block_on(deliver(&delivery, &transport, &clock, &mut out, &mut notes));
        (
            ok,
            transport,
            clock,
            String::from_utf8(out).unwrap(),
            String::from_utf8(notes).unwrap(),
        )
    }

    #[test]
    fn retries_on_errors_5xx_and_429_with_the_same_id_and_fresh_timestamps() {
        let (ok, sent, clock, out, notes) =
            run(&[Err("cannot connect"), Ok(503), Ok(429), Ok(200)], None);
        assert!(ok);
        assert_eq!(*clock.slept.borrow(), SCHEDULE);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], "1 error: cannot connect");
        assert!(lines[1].starts_with("2 503 ") && lines[1].ends_with(" ms answer 503"));
        assert!(lines[3].starts_with("4 200 "), "{out}");
        assert_eq!(notes.lines().count(), 3);
        assert!(
            notes.starts_with("hookbin send: retrying in 30s (attempt 2 of 4)"),
            "{notes}"
        );
        let ids: Vec<String> = (0..4).map(|i| sent.header(i, "webhook-id")).collect();
        assert_eq!(ids, ["msg_fixed"; 4]);
        let stamps: Vec<String> = (0..4)
            .map(|i| sent.header(i, "webhook-timestamp"))
            .collect();
        assert_eq!(
            stamps,
            ["1750000000", "1750000030", "1750000330", "1750002130"]
        );
        let signatures: Vec<String> = (0..4)
            .map(|i| sent.header(i, "webhook-signature"))
            .collect();
        assert!(
            signatures.windows(2).all(|w| w[0] != w[1]),
            "re-signed each time"
        );
    }

    #[test]
    fn a_pinned_timestamp_advances_by_the_schedule() {
        let (ok, sent, _, _, _) = run(&[Ok(500), Ok(204)], Some(1_000_000_000));
        assert!(ok);
        assert_eq!(sent.header(0, "webhook-timestamp"), "1000000000");
        assert_eq!(sent.header(1, "webhook-timestamp"), "1000000030");
    }

    #[test]
    fn another_4xx_or_a_redirect_stops_and_fails() {
        for status in [400, 401, 404, 302] {
            let (ok, sent, clock, out, _) = run(&[Ok(status)], None);
            assert!(!ok);
            assert_eq!(sent.sent.borrow().len(), 1);
            assert!(clock.slept.borrow().is_empty());
            assert_eq!(out.lines().count(), 1);
        }
    }

    #[test]
    fn an_error_no_retry_can_fix_stops_at_once() {
        let (ok, sent, clock, out, _) = run(&[Err("setup: unreadable --ca-cert")], None);
        assert!(!ok);
        assert_eq!(sent.sent.borrow().len(), 1);
        assert!(clock.slept.borrow().is_empty());
        assert_eq!(out, "1 error: setup: unreadable --ca-cert\n");
    }

    #[test]
    fn an_exhausted_schedule_fails() {
        let (ok, sent, _, out, _) = run(
            &[Ok(500), Ok(500), Ok(502), Err("timed out after 30s")],
            None,
        );
        assert!(!ok);
        assert_eq!(sent.sent.borrow().len(), 4);
        assert!(out.ends_with("4 error: timed out after 30s\n"), "{out}");
    }

    #[test]
    fn lines_show_the_first_80_bytes_escaped() {
        let reply = Reply {
            status: 200,
            elapsed: Duration::from_millis(12),
            body_start: [
                &b"ok\n\x1b[31m\\ \xff caf\xc3\xa9 \xe2\x80\xae"[..],
                &[b'x'; 100],
            ]
            .concat(),
        };
        let line = line(3, &Ok(reply));
        assert!(
            line.starts_with(r"3 200 12 ms ok\n\u{1b}[31m\\ \xff café \u{202e}xxx"),
            "{line}"
        );
        assert_eq!(line.matches('x').count(), 80 - 21 + 1, "{line}");
        let empty = Reply {
            status: 204,
            elapsed: Duration::from_millis(5),
            body_start: Vec::new(),
        };
        assert_eq!(super::line(1, &Ok(empty)), "1 204 5 ms");
        let failure = Failure {
            message: "cannot connect to h:1: refused\r\n".to_owned(),
            transient: true,
        };
        assert_eq!(
            super::line(2, &Err(failure)),
            r"2 error: cannot connect to h:1: refused\r\n"
        );
        assert_eq!(escape(b"cut \xe2\x82"), r"cut \xe2\x82");
    }
}
