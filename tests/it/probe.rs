//! `hookbin probe`, the real binary, against receivers written here: a correct Standard
//! Webhooks receiver (its own HMAC check, a 5-minute window both ways, re-deliveries accepted)
//! passes every case; each broken variant is caught by the case made for its flaw. (Receivers
//! built on the providers' own libraries are in `providers.rs`.)

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::receiver::{Received, Receiver};
use super::send::{hmac_sha256_b64, hookbin};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// What is wrong with a receiver.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flaw {
    None,
    /// Checks that the headers are there and the timestamp is fresh, never the signature.
    AcceptsTamperedBody,
    /// Checks the signature but not how old (or new) its timestamp is.
    AcceptsStaleTimestamp,
    /// Processes every delivery, and fails on an id it has already processed.
    FailsOnDuplicateId,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A Standard Webhooks receiver, as its spec asks: the three headers, the HMAC over
/// `id.timestamp.body` with the base64-decoded `whsec_` key, any `v1` entry, ±300 s.
fn standard_webhooks_receiver(flaw: Flaw) -> Receiver {
    let key = BASE64.decode(&SECRET["whsec_".len()..]).unwrap();
    Receiver::start(move |req, before| {
        let (Some(id), Some(ts), Some(signatures)) = (
            req.header("webhook-id"),
            req.header("webhook-timestamp"),
            req.header("webhook-signature"),
        ) else {
            return (400, b"missing headers".to_vec());
        };
        let Ok(ts_value) = ts.parse::<i64>() else {
            return (400, b"bad timestamp".to_vec());
        };
        if flaw != Flaw::AcceptsTamperedBody {
            let expected = format!(
                "v1,{}",
                hmac_sha256_b64(&key, &[format!("{id}.{ts}.").as_bytes(), &req.body])
            );
            if !signatures.split(' ').any(|entry| entry == expected) {
                return (401, b"bad signature".to_vec());
            }
        }
        if flaw != Flaw::AcceptsStaleTimestamp && (now() - ts_value).abs() > 300 {
            return (400, b"timestamp out of tolerance".to_vec());
        }
        let seen = before
            .iter()
            .any(|r: &Received| r.header("webhook-id") == Some(id));
        if seen && flaw == Flaw::FailsOnDuplicateId {
            return (
                500,
                b"duplicate key value violates unique constraint".to_vec(),
            );
        }
        (200, b"{\"received\":true}".to_vec())
    })
}

fn probe(receiver: &Receiver, extra: &[&str]) -> (i32, String) {
    let url = receiver.url("/webhooks");
    let mut args = vec![
        "probe",
        &url,
        "--scheme",
        "standard-webhooks",
        "--secret",
        SECRET,
        "--timeout",
        "5s",
    ];
    args.extend(extra);
    let run = hookbin(&args);
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
    (run.code, run.stdout)
}

/// `(case, result)` per row of the table.
fn table_results(table: &str) -> Vec<(String, String)> {
    let mut lines = table.lines();
    let header = lines.next().expect("a header line");
    assert!(header.starts_with("CASE"), "{table}");
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            let result = cells
                .iter()
                .find(|c| ["PASS", "FAIL", "n/a"].contains(c))
                .unwrap_or_else(|| panic!("no result in {line:?}"));
            (cells[0].to_owned(), (*result).to_owned())
        })
        .collect()
}

const CASES: [&str; 8] = [
    "valid",
    "duplicate",
    "tampered-body",
    "reserialized-body",
    "wrong-secret",
    "missing-signature",
    "stale-timestamp",
    "future-timestamp",
];

/// The expected table: every case PASS except those named as failing.
fn expected(failing: &[&str]) -> Vec<(String, String)> {
    CASES
        .iter()
        .map(|c| {
            let result = if failing.contains(c) { "FAIL" } else { "PASS" };
            ((*c).to_owned(), result.to_owned())
        })
        .collect()
}

#[test]
fn a_correct_receiver_passes_every_case() {
    let receiver = standard_webhooks_receiver(Flaw::None);
    let (code, table) = probe(&receiver, &[]);
    assert_eq!(code, 0, "{table}");
    assert_eq!(table_results(&table), expected(&[]), "{table}");

    // What was sent, in the contract's order: the duplicate repeats the valid id; the tampered
    // body differs from the valid one in one byte; every other case has an id of its own.
    let got = receiver.requests();
    assert_eq!(got.len(), 8);
    let id = |i: usize| got[i].header("webhook-id").unwrap().to_owned();
    assert_eq!(id(0), id(1));
    let ids: std::collections::HashSet<String> = (1..8).map(id).collect();
    assert_eq!(ids.len(), 7, "fresh ids for the other cases");
    let differing = got[0]
        .body
        .iter()
        .zip(&got[2].body)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!((differing, got[0].body.len()), (1, got[2].body.len()));
    assert!(got[5].header("webhook-signature").is_none());
    let age = |i: usize| {
        now()
            - got[i]
                .header("webhook-timestamp")
                .unwrap()
                .parse::<i64>()
                .unwrap()
    };
    assert!((3590..=3700).contains(&age(6)), "stale: {}", age(6));
    assert!((-3700..=-3590).contains(&age(7)), "future: {}", age(7));
}

#[test]
fn a_receiver_that_accepts_a_tampered_body_fails_that_case() {
    let receiver = standard_webhooks_receiver(Flaw::AcceptsTamperedBody);
    let (code, table) = probe(&receiver, &[]);
    assert_eq!(code, 1, "{table}");
    // Without a signature check, every forgery that carries a signature header gets through;
    // a request without one, or with an old timestamp, is still refused.
    assert_eq!(
        table_results(&table),
        expected(&["tampered-body", "reserialized-body", "wrong-secret"]),
        "{table}"
    );
}

#[test]
fn a_receiver_that_accepts_a_stale_timestamp_fails_that_case() {
    let receiver = standard_webhooks_receiver(Flaw::AcceptsStaleTimestamp);
    let (code, table) = probe(&receiver, &[]);
    assert_eq!(code, 1, "{table}");
    assert_eq!(
        table_results(&table),
        expected(&["stale-timestamp", "future-timestamp"]),
        "{table}"
    );
}

#[test]
fn a_receiver_that_fails_on_a_duplicate_id_fails_that_case() {
    let receiver = standard_webhooks_receiver(Flaw::FailsOnDuplicateId);
    let (code, table) = probe(&receiver, &[]);
    assert_eq!(code, 1, "{table}");
    assert_eq!(table_results(&table), expected(&["duplicate"]), "{table}");
    let duplicate = table.lines().nth(2).unwrap();
    assert!(duplicate.contains(" 500 "), "{duplicate}");
}

#[test]
fn json_output_has_the_contract_fields() {
    let receiver = standard_webhooks_receiver(Flaw::FailsOnDuplicateId);
    let (code, out) = probe(&receiver, &["--json"]);
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert_eq!(report["passed"], false);
    let cases = report["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(names, CASES);
    for case in cases {
        for field in ["case", "expected", "status", "ms", "result"] {
            assert!(case.get(field).is_some(), "{field} in {case}");
        }
    }
    assert_eq!(cases[1]["expected"], "2xx");
    assert_eq!(cases[1]["status"], 500);
    assert_eq!(cases[1]["result"], "FAIL");
    assert_eq!(cases[2]["expected"], "4xx");
    assert_eq!(cases[2]["status"], 401);
    assert_eq!(cases[2]["result"], "PASS");
}

#[test]
fn a_scheme_without_timestamps_and_an_unreachable_receiver() {
    // GitHub signs no timestamp: those two cases are n/a, and n/a is not a failure.
    let receiver = Receiver::start(|req, _| {
        let expected = {
            use hmac::{Hmac, Mac};
            let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(b"gh-secret").unwrap();
            mac.update(&req.body);
            let digest = mac.finalize().into_bytes();
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("sha256={hex}")
        };
        match req.header("X-Hub-Signature-256") {
            Some(sig) if sig == expected => (202, Vec::new()),
            _ => (403, Vec::new()),
        }
    });
    let url = receiver.url("/github");
    let run = hookbin(&["probe", &url, "--scheme", "github", "--secret", "gh-secret"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let results = table_results(&run.stdout);
    assert_eq!(results[6], ("stale-timestamp".to_owned(), "n/a".to_owned()));
    assert_eq!(
        results[7],
        ("future-timestamp".to_owned(), "n/a".to_owned())
    );
    assert!(
        run.stderr.contains("6 passed, 0 failed, 2 n/a"),
        "{}",
        run.stderr
    );

    // Nothing listening: every case that sends fails with the error in the table.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let run = hookbin(&["probe", &url, "--scheme", "github", "--secret", "gh-secret"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .lines()
            .nth(1)
            .unwrap()
            .contains("error: cannot connect"),
        "{}",
        run.stdout
    );
}
