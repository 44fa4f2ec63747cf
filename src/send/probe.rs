//! `hookbin probe`: does a receiver accept a correctly signed request and reject the forgeries a
//! real attacker (or a broken proxy) would send? The cases of API.md, in its order, each with a
//! fresh id unless stated:
//!
//! | case | sends | expects |
//! |---|---|---|
//! | `valid` | a correctly signed request | `2xx` |
//! | `duplicate` | the `valid` request again, same id, signed again | `2xx` |
//! | `tampered-body` | one byte of the body changed, signature of the original | `4xx` |
//! | `reserialized-body` | JSON only: the same JSON re-serialized, signature of the original | `4xx` |
//! | `wrong-secret` | signed with another secret of the same form | `4xx` |
//! | `missing-signature` | the scheme's signature header(s) removed | `4xx` |
//! | `stale-timestamp` | correctly signed, timestamp 1 hour old | `4xx` |
//! | `future-timestamp` | correctly signed, timestamp 1 hour ahead | `4xx` |
//!
//! `n/a` where a case cannot say anything: no timestamp signed (GitHub, Shopify, Twilio,
//! generic), no body signed (Twilio with a body that is not a form), no body, no JSON. Stripe's
//! own library accepts future timestamps ([`crate::signing::Window::PastOnly`]), so a receiver
//! built on it is right either way: that case is sent and shown, and counts as `n/a`.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::deliver::{Clock, escape};
use super::plan::{Plan, fresh_id};
use super::transport::{Outgoing, Transport};
use crate::signing::{self, Role, Scheme, Signer, Window};

/// How far the stale and future timestamps are from now.
const SKEW_SECONDS: i64 = 3600;

/// What a case expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Expect {
    #[serde(rename = "2xx")]
    Accepted,
    #[serde(rename = "4xx")]
    Rejected,
    /// Any answer is right (or the case was not sent).
    #[serde(rename = "n/a")]
    Nothing,
}

impl Expect {
    fn label(self) -> &'static str {
        match self {
            Expect::Accepted => "2xx",
            Expect::Rejected => "4xx",
            Expect::Nothing => "n/a",
        }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotApplicable => "n/a",
        }
    }
}

/// One case's row (and JSON object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub case: &'static str,
    pub expected: Expect,
    /// The answer's status; `None` when nothing was sent or no answer came.
    pub status: Option<u16>,
    pub ms: Option<u64>,
    pub result: Verdict,
    /// What was sent, in words (or why nothing was).
    pub sent: String,
    /// The connection error or timeout, when no answer came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The probe's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    pub cases: Vec<Row>,
    /// No case failed.
    pub passed: bool,
}

/// Runs every case against `plan`'s target. `secret` is the one the plan signs with (for a
/// look-alike); `random` fills buffers with random bytes (ids, the wrong secret).
pub async fn probe(
    plan: &Plan,
    secret: &str,
    transport: &impl Transport,
    clock: &impl Clock,
    random: &mut dyn FnMut(&mut [u8]),
    timeout: Duration,
) -> Report {
    let scheme = plan.scheme();
    let mut rows = Vec::new();
    let valid_id = fresh_id(scheme, random);
    for case in Case::ALL {
        let built = build(case, plan, secret, &valid_id, clock.now(), random);
        let case = case.name();
        let row = match built {
            Built::NotApplicable(why) => Row {
                case,
                expected: Expect::Nothing,
                status: None,
                ms: None,
                result: Verdict::NotApplicable,
                sent: why,
                error: None,
            },
            Built::Send {
                request,
                expect,
                sent,
            } => {
                let started = Instant::now();
                let (status, error, elapsed) = match transport.send(&request, timeout).await {
                    Ok(reply) => (Some(reply.status), None, reply.elapsed),
                    Err(e) => (None, Some(e.message), started.elapsed()),
                };
                let ms = elapsed.as_millis() as u64;
                Row {
                    case,
                    expected: expect,
                    status,
                    ms: Some(ms),
                    result: judge(expect, status),
                    sent,
                    error,
                }
            }
        };
        rows.push(row);
    }
    Report {
        passed: rows.iter().all(|r| r.result != Verdict::Fail),
        cases: rows,
    }
}

/// The cases, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Valid,
    Duplicate,
    TamperedBody,
    ReserializedBody,
    WrongSecret,
    MissingSignature,
    StaleTimestamp,
    FutureTimestamp,
}

impl Case {
    pub const ALL: [Case; 8] = [
        Case::Valid,
        Case::Duplicate,
        Case::TamperedBody,
        Case::ReserializedBody,
        Case::WrongSecret,
        Case::MissingSignature,
        Case::StaleTimestamp,
        Case::FutureTimestamp,
    ];

    /// The name in the table and the JSON, as API.md spells it.
    pub fn name(self) -> &'static str {
        match self {
            Case::Valid => "valid",
            Case::Duplicate => "duplicate",
            Case::TamperedBody => "tampered-body",
            Case::ReserializedBody => "reserialized-body",
            Case::WrongSecret => "wrong-secret",
            Case::MissingSignature => "missing-signature",
            Case::StaleTimestamp => "stale-timestamp",
            Case::FutureTimestamp => "future-timestamp",
        }
    }
}

fn judge(expect: Expect, status: Option<u16>) -> Verdict {
    match (expect, status) {
        (Expect::Nothing, _) => Verdict::NotApplicable,
        (Expect::Accepted, Some(s)) if (200..300).contains(&s) => Verdict::Pass,
        (Expect::Rejected, Some(s)) if (400..500).contains(&s) => Verdict::Pass,
        _ => Verdict::Fail,
    }
}

enum Built {
    Send {
        request: Box<Outgoing>,
        expect: Expect,
        sent: String,
    },
    NotApplicable(String),
}

fn build(
    case: Case,
    plan: &Plan,
    secret: &str,
    valid_id: &str,
    now: i64,
    random: &mut dyn FnMut(&mut [u8]),
) -> Built {
    let scheme = plan.scheme();
    let send = |request, expect, sent: String| Built::Send {
        request: Box::new(request),
        expect,
        sent,
    };
    let id = match case {
        Case::Valid | Case::Duplicate => valid_id.to_owned(),
        _ => fresh_id(scheme, random),
    };
    let original = || plan.sign(&plan.signer, &id, now, &plan.body);
    match case {
        Case::Valid => send(
            plan.signed(&id, now),
            Expect::Accepted,
            with_id(scheme, &id, "a correctly signed request".to_owned()),
        ),
        Case::Duplicate => send(
            plan.signed(&id, now),
            Expect::Accepted,
            "the valid request again: same id, signed again".to_owned(),
        ),
        Case::TamperedBody => match body_not_covered(plan) {
            Some(why) => Built::NotApplicable(why),
            None => {
                let (at, from, to, body) = tamper(&plan.body);
                send(
                    plan.outgoing(original(), body),
                    Expect::Rejected,
                    format!(
                        "byte {at} of the body changed ({} to {}), signature of the original",
                        show_byte(from),
                        show_byte(to)
                    ),
                )
            }
        },
        Case::ReserializedBody => match body_not_covered(plan) {
            Some(why) => Built::NotApplicable(why),
            None => match reserialize(&plan.body) {
                Err(why) => Built::NotApplicable(why.to_owned()),
                Ok(body) => send(
                    plan.outgoing(original(), body),
                    Expect::Rejected,
                    "the same JSON re-serialized (keys sorted, spaces changed), signature of the \
                     original"
                        .to_owned(),
                ),
            },
        },
        Case::WrongSecret => {
            let other = signing::lookalike_secret(secret, |buf| random(buf));
            let signer = match Signer::new(scheme, &other) {
                Ok(signer) => signer.with_signature_header(&signature_header(plan)),
                Err(e) => return Built::NotApplicable(e.to_string()),
            };
            send(
                plan.outgoing(plan.sign(&signer, &id, now, &plan.body), plan.body.clone()),
                Expect::Rejected,
                "signed with another secret of the same form".to_owned(),
            )
        }
        Case::MissingSignature => {
            let (removed, kept): (Vec<_>, Vec<_>) = original()
                .into_iter()
                .partition(|h| h.role == Role::Signature);
            let names: Vec<String> = removed.into_iter().map(|h| h.name).collect();
            send(
                plan.outgoing(kept, plan.body.clone()),
                Expect::Rejected,
                format!("without {}", names.join(" and ")),
            )
        }
        Case::StaleTimestamp | Case::FutureTimestamp => {
            let Some(window) = scheme.replay_window() else {
                return Built::NotApplicable(format!("{} signs no timestamp", scheme.label()));
            };
            let (ts, words) = if case == Case::StaleTimestamp {
                (now - SKEW_SECONDS, "1 hour old")
            } else {
                (now + SKEW_SECONDS, "1 hour ahead")
            };
            let mut sent = format!("correctly signed, timestamp {words} ({ts})");
            let expect = if case == Case::FutureTimestamp && window == Window::PastOnly {
                sent.push_str(
                    "; Stripe's own library accepts future timestamps, so any answer is right",
                );
                Expect::Nothing
            } else {
                Expect::Rejected
            };
            send(plan.signed(&id, ts), expect, sent)
        }
    }
}

/// The generic scheme's header name as the plan sends it.
fn signature_header(plan: &Plan) -> String {
    plan.sign(&plan.signer, "", 0, b"")
        .into_iter()
        .find(|h| h.role == Role::Signature)
        .map(|h| h.name)
        .unwrap_or_else(|| signing::GENERIC_SIGNATURE_HEADER.to_owned())
}

fn with_id(scheme: Scheme, id: &str, words: String) -> String {
    match signing::id_header(scheme) {
        Some(header) => format!("{words} ({header} {id})"),
        None => words,
    }
}

/// Why changing the body says nothing, if it does.
fn body_not_covered(plan: &Plan) -> Option<String> {
    if plan.body.is_empty() {
        return Some("the body is empty".to_owned());
    }
    if !signing::covers_body(plan.scheme(), plan.content_type.as_deref()) {
        return Some(
            "Twilio signs the URL and form parameters; this body is not a form, so no signature \
             covers it"
                .to_owned(),
        );
    }
    None
}

/// The body with one byte changed so that it stays well-formed where possible: the last digit
/// (a number stays a number), else the last letter, else the last byte with its low bit flipped.
/// Returns the byte's index, the old and the new value, and the new body.
fn tamper(body: &[u8]) -> (usize, u8, u8, Vec<u8>) {
    let pick = body
        .iter()
        .rposition(u8::is_ascii_digit)
        .or_else(|| body.iter().rposition(u8::is_ascii_alphabetic))
        .unwrap_or(body.len() - 1);
    let from = body[pick];
    let to = match from {
        b'9' => b'8',
        b'0'..=b'8' => from + 1,
        b'z' | b'Z' => from - 1,
        b'a'..=b'y' | b'A'..=b'Y' => from + 1,
        _ => from ^ 1,
    };
    let mut changed = body.to_vec();
    changed[pick] = to;
    (pick, from, to, changed)
}

/// The same JSON written differently: pretty-printed with sorted keys, else compact.
fn reserialize(body: &[u8]) -> Result<Vec<u8>, &'static str> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "the body is not JSON")?;
    let pretty = serde_json::to_vec_pretty(&value).expect("a Value serialises");
    if pretty != body {
        return Ok(pretty);
    }
    let compact = serde_json::to_vec(&value).expect("a Value serialises");
    if compact != body {
        return Ok(compact);
    }
    Err("re-serializing this JSON gives the same bytes")
}

fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", char::from(b))
    } else {
        format!("0x{b:02x}")
    }
}

/// The table: a header line, then one row per case.
pub fn table(report: &Report) -> String {
    let rows: Vec<[String; 5]> = report
        .cases
        .iter()
        .map(|r| {
            let got = match (&r.status, &r.error, r.ms) {
                (Some(status), _, Some(ms)) => format!("{status} {ms} ms"),
                (_, Some(e), _) => format!("error: {}", escape(e.as_bytes())),
                _ => "-".to_owned(),
            };
            [
                r.case.to_owned(),
                r.expected.label().to_owned(),
                got,
                r.result.label().to_owned(),
                escape(r.sent.as_bytes()),
            ]
        })
        .collect();
    let header = ["CASE", "EXPECTED", "GOT", "RESULT", "SENT"].map(str::to_owned);
    let mut widths = [0; 4];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter().zip(row) {
            let _ = write!(out, "{cell:<w$}  ");
        }
        let _ = writeln!(out, "{}", row[4]);
    }
    out
}

/// `--json`: `{"cases": [{"case", "expected", "status", "ms", "result", "sent"}...], "passed"}`.
pub fn json(report: &Report) -> String {
    serde_json::to_string_pretty(report).expect("a report serialises")
}

/// "6 passed, 0 failed, 2 n/a".
pub fn summary(report: &Report) -> String {
    let count = |v| report.cases.iter().filter(|r| r.result == v).count();
    format!(
        "{} passed, {} failed, {} n/a",
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::NotApplicable)
    )
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashSet;

    use super::*;
    use crate::model::{HeaderPair, StoredRequest};
    use crate::send::fakes::{FakeClock, Receiver, block_on, plan};
    use crate::verify::{self, VerifyInput};

    const NOW: i64 = 1_750_000_000;

    /// A receiver that checks signatures with hookbin's verifier and remembers ids.
    fn checks(scheme: &str, secret: &str, req: &Outgoing) -> bool {
        let stored = StoredRequest {
            headers: req
                .headers
                .iter()
                .map(|(n, v)| HeaderPair::new(n.as_str(), v.as_str()))
                .collect(),
            ..StoredRequest::sample::<&str>("abc", "", "", &[], &req.body)
        };
        let input = VerifyInput {
            secret: secret.to_owned(),
            scheme: Some(scheme.to_owned()),
            now: Some(NOW),
            ..VerifyInput::default()
        };
        verify::verify(&stored, &input, req.url.as_str(), NOW)
            .expect("no input error")
            .valid
    }

    fn run(flags: &[&str], receiver: impl FnMut(&Outgoing) -> u16) -> Report {
        let plan = plan(flags);
        let secret = flags[flags.iter().position(|f| *f == "--secret").unwrap() + 1];
        let mut counter = 0u8;
        let mut random = |buf: &mut [u8]| {
            for b in buf {
                counter = counter.wrapping_add(101);
                *b = counter;
            }
        };
        block_on(probe(
            &plan,
            secret,
            &Receiver(RefCell::new(receiver)),
            &FakeClock::at(NOW),
            &mut random,
            Duration::from_secs(1),
        ))
    }

    fn results(report: &Report) -> Vec<(&str, &str)> {
        report
            .cases
            .iter()
            .map(|r| (r.case, r.result.label()))
            .collect()
    }

    fn correct(scheme: &'static str, secret: &'static str) -> impl FnMut(&Outgoing) -> u16 {
        move |req| {
            if checks(scheme, secret, req) {
                200
            } else {
                400
            }
        }
    }

    #[test]
    fn a_correct_receiver_passes_every_case_that_applies() {
        for (scheme, secret, verifier_secret, not_applicable) in [
            (
                "standard-webhooks",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                &[][..],
            ),
            (
                "standard-webhooks",
                "whsk_WqCM/pffJoxM68eV2w2e1+SsQtDKUkRRbkASGkulrm0=",
                "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=",
                &[],
            ),
            (
                "svix",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                &[],
            ),
            (
                "stripe",
                "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
                "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
                &["future-timestamp"],
            ),
            (
                "github",
                "gh-secret",
                "gh-secret",
                &["stale-timestamp", "future-timestamp"],
            ),
            (
                "slack",
                "8f742231b10e8888abcd99yyyzzz85a5",
                "8f742231b10e8888abcd99yyyzzz85a5",
                &[],
            ),
            (
                "shopify",
                "shpss_1234",
                "shpss_1234",
                &["stale-timestamp", "future-timestamp"],
            ),
            (
                "botix",
                "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
                "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
                &[],
            ),
            (
                "hmac-sha256",
                "s3cret",
                "s3cret",
                &["stale-timestamp", "future-timestamp"],
            ),
            // Twilio with the default JSON body: nothing signs the body.
            (
                "twilio",
                "12345",
                "12345",
                &[
                    "tampered-body",
                    "reserialized-body",
                    "stale-timestamp",
                    "future-timestamp",
                ],
            ),
        ] {
            let report = run(
                &["--scheme", scheme, "--secret", secret],
                correct(scheme, verifier_secret),
            );
            for row in &report.cases {
                let expected = if not_applicable.contains(&row.case) {
                    Verdict::NotApplicable
                } else {
                    Verdict::Pass
                };
                assert_eq!(row.result, expected, "{scheme} {}: {row:?}", row.case);
            }
            assert!(report.passed, "{scheme}");
        }
    }

    #[test]
    fn twilio_form_bodies_are_tampered_with_too() {
        let form = [
            "--content-type",
            "application/x-www-form-urlencoded",
            "--data",
            "From=%2B1555&Body=hi+42",
        ];
        let flags = [&["--scheme", "twilio", "--secret", "tok"][..], &form].concat();
        let report = run(&flags, correct("twilio", "tok"));
        assert_eq!(results(&report)[2], ("tampered-body", "PASS"));
        assert_eq!(results(&report)[3], ("reserialized-body", "n/a"));
        assert!(
            report.cases[2].sent.contains("('2' to '3')"),
            "{:?}",
            report.cases[2]
        );
    }

    #[test]
    fn each_broken_receiver_is_caught_by_its_case() {
        let flags = [
            "--scheme",
            "standard-webhooks",
            "--secret",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ];
        let secret = flags[3];
        // Checks that a signature header is there and the timestamp fresh, but never the MAC.
        let accepts_tampered = |req: &Outgoing| {
            let header = |name| crate::send::fakes::header(req, name);
            let fresh = header("webhook-timestamp").is_some_and(|ts| ts == NOW.to_string());
            if fresh && header("webhook-signature").is_some() {
                200
            } else {
                400
            }
        };
        let report = run(&flags, accepts_tampered);
        let verdicts = results(&report);
        assert_eq!(verdicts[2], ("tampered-body", "FAIL"));
        assert_eq!(verdicts[5], ("missing-signature", "PASS"));
        assert_eq!(verdicts[6], ("stale-timestamp", "PASS"));
        assert!(!report.passed);
        // Verifies the signature but not the timestamp.
        let accepts_stale = |req: &Outgoing| {
            let ts: i64 = crate::send::fakes::header(req, "webhook-timestamp")
                .and_then(|ts| ts.parse().ok())
                .unwrap_or(NOW);
            // Only a timestamp from the future is refused.
            let clock = ts.min(NOW);
            if ts <= NOW + 300 && checks_at(clock, secret, req) {
                200
            } else {
                400
            }
        };
        let report = run(&flags, accepts_stale);
        let verdicts = results(&report);
        assert_eq!(verdicts[6], ("stale-timestamp", "FAIL"));
        assert_eq!(verdicts[7], ("future-timestamp", "PASS"));
        assert!(
            verdicts[..6].iter().all(|(_, r)| *r == "PASS"),
            "{verdicts:?}"
        );
        // Answers 500 to an id it has seen.
        let mut seen = HashSet::new();
        let dedup_500 = move |req: &Outgoing| {
            let id = req
                .headers
                .iter()
                .find(|(n, _)| n == "webhook-id")
                .map(|(_, v)| v.clone());
            if !checks("standard-webhooks", secret, req) {
                400
            } else if !seen.insert(id) {
                500
            } else {
                200
            }
        };
        let report = run(&flags, dedup_500);
        let verdicts = results(&report);
        assert_eq!(verdicts[1], ("duplicate", "FAIL"));
        assert!(
            verdicts.iter().filter(|(_, r)| *r == "FAIL").count() == 1,
            "{verdicts:?}"
        );
    }

    /// Verifies as if the clock read `ts`.
    fn checks_at(ts: i64, secret: &str, req: &Outgoing) -> bool {
        let stored = StoredRequest {
            headers: req
                .headers
                .iter()
                .map(|(n, v)| HeaderPair::new(n.as_str(), v.as_str()))
                .collect(),
            ..StoredRequest::sample::<&str>("abc", "", "", &[], &req.body)
        };
        let input = VerifyInput {
            secret: secret.to_owned(),
            scheme: Some("standard-webhooks".to_owned()),
            now: Some(ts),
            ..VerifyInput::default()
        };
        verify::verify(&stored, &input, req.url.as_str(), ts)
            .unwrap()
            .valid
    }

    #[test]
    fn requests_of_each_case_differ_as_described() {
        let flags = ["--scheme", "github", "--secret", "k"];
        let sent = RefCell::new(Vec::new());
        let report = run(&flags, |req| {
            sent.borrow_mut().push(req.clone());
            200
        });
        let sent = sent.into_inner();
        // valid, duplicate, tampered, reserialized, wrong secret, missing signature.
        assert_eq!(sent.len(), 6, "{report:?}");
        let header = |i: usize, name: &str| crate::send::fakes::header(&sent[i], name);
        assert_eq!(
            header(0, "X-GitHub-Delivery"),
            header(1, "X-GitHub-Delivery")
        );
        assert_ne!(
            header(0, "X-GitHub-Delivery"),
            header(2, "X-GitHub-Delivery")
        );
        assert_eq!(
            sent[2].body,
            br#"{"type":"hookbin.test","data":{"id":"evt_test","amount":4201,"currency":"usd"}}"#
        );
        let reserialized: serde_json::Value = serde_json::from_slice(&sent[3].body).unwrap();
        assert_eq!(
            reserialized,
            serde_json::from_slice::<serde_json::Value>(&sent[0].body).unwrap()
        );
        assert_ne!(sent[3].body, sent[0].body);
        assert_ne!(
            header(4, "X-Hub-Signature-256"),
            header(0, "X-Hub-Signature-256")
        );
        assert_eq!(header(5, "X-Hub-Signature-256"), None);
        assert_eq!(header(5, "X-Hub-Signature"), None);
        assert!(header(5, "X-GitHub-Delivery").is_some());
        assert_eq!(
            report.cases[5].sent,
            "without X-Hub-Signature and X-Hub-Signature-256"
        );
        // An accept-everything receiver fails every case that expects a rejection.
        assert_eq!(
            results(&report),
            [
                ("valid", "PASS"),
                ("duplicate", "PASS"),
                ("tampered-body", "FAIL"),
                ("reserialized-body", "FAIL"),
                ("wrong-secret", "FAIL"),
                ("missing-signature", "FAIL"),
                ("stale-timestamp", "n/a"),
                ("future-timestamp", "n/a"),
            ]
        );
    }

    #[test]
    fn table_and_json_carry_the_same_rows() {
        let report = run(&["--scheme", "github", "--secret", "k"], |_| 401);
        let table = table(&report);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 9);
        assert!(lines[0].starts_with("CASE "), "{table}");
        assert!(
            lines[1].starts_with("valid ")
                && lines[1].contains(" 2xx ")
                && lines[1].contains(" 401 "),
            "{table}"
        );
        assert!(lines[1].contains(" FAIL "), "{table}");
        assert!(
            lines[3].contains(" 4xx ") && lines[3].contains(" PASS "),
            "{table}"
        );
        assert!(
            lines[7].contains(" n/a ") && lines[7].contains("GitHub signs no timestamp"),
            "{table}"
        );
        let json: serde_json::Value = serde_json::from_str(&json(&report)).unwrap();
        assert_eq!(json["passed"], false);
        assert_eq!(json["cases"].as_array().unwrap().len(), 8);
        assert_eq!(json["cases"][0]["case"], "valid");
        assert_eq!(json["cases"][0]["expected"], "2xx");
        assert_eq!(json["cases"][0]["status"], 401);
        assert!(json["cases"][0]["ms"].is_u64());
        assert_eq!(json["cases"][0]["result"], "FAIL");
        assert_eq!(json["cases"][6]["expected"], "n/a");
        assert_eq!(json["cases"][6]["status"], serde_json::Value::Null);
        assert_eq!(summary(&report), "4 passed, 2 failed, 2 n/a");
    }

    #[test]
    fn tampering_keeps_the_body_well_formed() {
        assert_eq!(tamper(b"{\"a\":19}").3, b"{\"a\":18}");
        assert_eq!(tamper(b"{\"a\":\"xyz\"}").3, b"{\"a\":\"xyy\"}");
        assert_eq!(tamper(b"{}").3, b"{|");
        assert_eq!(
            reserialize(b"{\"b\":1,\"a\":[1, 2]}").unwrap(),
            b"{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": 1\n}"
        );
        assert_eq!(
            reserialize(b"1"),
            Err("re-serializing this JSON gives the same bytes")
        );
        assert_eq!(reserialize(b"a=1"), Err("the body is not JSON"));
    }
}
