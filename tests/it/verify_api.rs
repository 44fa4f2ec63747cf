//! Signature verification through the real server: each vector's request is captured over HTTP,
//! then verified with `POST .../verify`. And the secret must leave no trace.

use base64::Engine as _;
use serde_json::json;

use crate::util::Server;
use crate::verify_vectors::{Vector, load, secret_forms};

/// Sends the vector's headers (in order) and exact body to the bin; the request id.
fn capture_vector(s: &Server, bin: &str, v: &Vector) -> String {
    let body = base64::engine::general_purpose::STANDARD
        .decode(&v.body_base64)
        .unwrap();
    let mut head = format!("POST /r/{bin} HTTP/1.1\r\nHost: {}\r\n", s.addr);
    for (name, value) in &v.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut raw = head.into_bytes();
    raw.extend_from_slice(&body);
    let res = s.raw(&raw);
    assert_eq!(res.status, 200, "{}: {}", v.id, res.text());
    res.header("x-request-id").unwrap().to_owned()
}

fn verify(s: &Server, bin: &str, id: &str, body: &serde_json::Value) -> crate::util::Response {
    s.post_json(
        &format!("/api/bins/{bin}/requests/{id}/verify"),
        &body.to_string(),
    )
}

#[test]
fn every_vector_verifies_through_the_api() {
    let s = Server::start(&["--max-requests-per-bin", "1000"]);
    let bin = s.create_bin();
    let mut failures = Vec::new();
    for v in load() {
        let id = capture_vector(&s, &bin, &v);
        for scheme in [Some(v.scheme.as_str()), None] {
            let mut body =
                json!({"secret": v.secret, "now": v.now, "tolerance_seconds": v.tolerance_seconds});
            if let Some(scheme) = scheme {
                body["scheme"] = json!(scheme);
            }
            if let Some(url) = &v.url {
                body["url"] = json!(url);
            }
            let res = verify(&s, &bin, &id, &body);
            if res.status != 200 {
                failures.push(format!(
                    "{} ({scheme:?}): HTTP {} {}",
                    v.id,
                    res.status,
                    res.text()
                ));
                continue;
            }
            let answer = res.json();
            for key in ["scheme", "valid", "timestamp_ok", "detail"] {
                assert!(
                    answer.get(key).is_some(),
                    "{}: answer lacks {key}: {answer}",
                    v.id
                );
            }
            if answer["valid"] != v.expected.valid || answer["reason"] != v.expected.reason.as_str()
            {
                failures.push(format!(
                    "{} ({scheme:?}): expected valid={} reason={}, got {answer}",
                    v.id, v.expected.valid, v.expected.reason
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bad_verify_requests_get_clear_errors() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let id = s.capture(&bin, b"{}");
    verify(&s, &bin, &id, &json!({"scheme": "stripe"})).assert_error(422, "invalid_verify_request");
    verify(&s, &bin, &id, &json!({"secret": 5})).assert_error(422, "invalid_verify_request");
    verify(&s, &bin, &id, &json!({"secret": "x", "extra": 1}))
        .assert_error(422, "invalid_verify_request");
    verify(
        &s,
        &bin,
        &id,
        &json!({"secret": "x", "scheme": "carrier-pigeon"}),
    )
    .assert_error(422, "unknown_scheme");
    verify(
        &s,
        &bin,
        &id,
        &json!({"secret": "whsec_!!!", "scheme": "standard-webhooks"}),
    )
    .assert_error(422, "malformed_secret");
    s.post_json(&format!("/api/bins/{bin}/requests/{id}/verify"), "{")
        .assert_error(400, "invalid_json");
    verify(&s, &bin, "999999", &json!({"secret": "x"})).assert_error(404, "request_not_found");
    // Without `now` the wall clock is used: a GitHub signature has no timestamp and still checks.
    let body = b"Hello, World!";
    let res = s.request(
        "POST",
        &format!("/r/{bin}"),
        &[(
            "X-Hub-Signature-256",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        )],
        body,
    );
    let id = res.header("x-request-id").unwrap();
    let answer = verify(
        &s,
        &bin,
        id,
        &json!({"secret": "It's a Secret to Everybody"}),
    )
    .json();
    assert_eq!(answer["valid"], true, "{answer}");
    assert_eq!(answer["scheme"], "github");
}

#[test]
fn the_secret_is_never_logged_or_stored() {
    let mut s = Server::start(&[]);
    let bin = s.create_bin();
    let secret = "whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3QtbGVhay0xMjM0NTY3OA==";
    let id = s.capture(&bin, b"{\"type\":\"ping\"}");
    for scheme in [
        None,
        Some("standard-webhooks"),
        Some("stripe"),
        Some("github"),
        Some("hmac-sha256"),
    ] {
        let mut body = json!({"secret": secret, "now": 1_750_000_000});
        if let Some(scheme) = scheme {
            body["scheme"] = json!(scheme);
        }
        let res = verify(&s, &bin, &id, &body);
        assert_eq!(res.status, 200, "{}", res.text());
        for form in secret_forms(secret) {
            assert!(!res.text().contains(&form), "answer contains the secret");
        }
    }
    // Bad input paths too: the secret must not be echoed in an error.
    let res = verify(&s, &bin, &id, &json!({"secret": secret, "scheme": "nope"}));
    assert!(!res.text().contains(secret));

    // Every byte hookbin wrote: its whole log (debug level, the server stopped) and the
    // database files.
    let log = s.stop();
    let mut files = Vec::new();
    if let Some(db) = &s.pg {
        // PostgreSQL: everything the database holds, as pg_dump writes it out.
        let dump = std::process::Command::new("pg_dump")
            .arg("-d")
            .arg(&db.url)
            .output()
            .expect("run pg_dump");
        assert!(dump.status.success(), "pg_dump failed");
        files.push(dump.stdout);
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut p = s.db.clone().into_os_string();
        p.push(suffix);
        if let Ok(bytes) = std::fs::read(&p) {
            files.push(bytes);
        }
    }
    assert!(!files.is_empty());
    for form in secret_forms(secret) {
        assert!(!log.contains(&form), "the log contains the secret:\n{log}");
        for bytes in &files {
            assert!(
                !bytes.windows(form.len()).any(|w| w == form.as_bytes()),
                "a database file contains the secret"
            );
        }
    }
}
