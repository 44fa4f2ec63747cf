//! `hookbin send`, the real binary: what it sends is checked by hookbin's own verifier (sent
//! into a bin of a real server, then `POST .../verify`), reproduces the shared vectors byte for
//! byte when `--id` and `--timestamp` pin them, and is retried on the schedule. Bad input exits 2
//! with one line, and the secret never shows. (The providers' own libraries judge it in
//! `providers.rs`.)

use std::io::Write;
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use super::receiver::Receiver;
use super::util::Server;
use super::verify_vectors::{self, Vector};

/// What a run of the binary left behind.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Runs `hookbin ARGS` with `stdin` and the environment variables `env`.
pub fn hookbin_with(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookbin"))
        .args(args)
        .env_remove("HOOKBIN_SECRET")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hookbin");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin).expect("write stdin");
    drop(pipe);
    let out = child.wait_with_output().expect("hookbin runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn hookbin(args: &[&str]) -> Run {
    hookbin_with(args, b"", &[])
}

/// A server whose bins can be created without the per-minute limit.
fn server() -> Server {
    Server::start(&["--max-bins-per-minute", "0"])
}

/// The newest request in `bin`, as JSON.
fn newest(server: &Server, bin: &str) -> Value {
    let page = server
        .get(&format!("/api/bins/{bin}/requests?limit=1"))
        .json();
    let id = page["data"][0]["id"].as_str().expect("a captured request");
    server.stored(bin, id)
}

fn header<'a>(req: &'a Value, name: &str) -> Option<&'a str> {
    req["headers"]
        .as_array()?
        .iter()
        .find(|h| h[0].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        .and_then(|h| h[1].as_str())
}

fn verify(server: &Server, bin: &str, req: &Value, input: Value) -> Value {
    let path = format!(
        "/api/bins/{bin}/requests/{}/verify",
        req["id"].as_str().unwrap()
    );
    let res = server.post_json(&path, &input.to_string());
    assert_eq!(res.status, 200, "{}", res.text());
    res.json()
}

/// The header that carries the signature, and how the vector's id and timestamp are given.
fn signature_header(scheme: &str) -> &'static str {
    match scheme {
        "standard-webhooks" | "standard-webhooks-v1a" => "webhook-signature",
        "svix" => "svix-signature",
        "stripe" => "Stripe-Signature",
        "github" => "X-Hub-Signature-256",
        "slack" => "X-Slack-Signature",
        "shopify" => "X-Shopify-Hmac-Sha256",
        "twilio" => "X-Twilio-Signature",
        "botix" => "X-BOTIX-Signature",
        other => panic!("no vectors for {other}"),
    }
}

fn vector_header<'a>(v: &'a Vector, name: &str) -> Option<&'a str> {
    v.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// The flags that pin a vector's variable parts: its id and timestamp, its Content-Type and,
/// for Twilio, the URL it signed.
fn pinning_flags(v: &Vector) -> Vec<String> {
    let mut flags = Vec::new();
    let id = vector_header(v, "webhook-id").or_else(|| vector_header(v, "svix-id"));
    if let Some(id) = id {
        flags.extend(["--id".to_owned(), id.to_owned()]);
    }
    let timestamp = [
        "webhook-timestamp",
        "svix-timestamp",
        "X-Slack-Request-Timestamp",
        "X-BOTIX-Timestamp",
    ]
    .iter()
    .find_map(|name| vector_header(v, name))
    .map(str::to_owned)
    .or_else(|| {
        let stripe = vector_header(v, "Stripe-Signature")?;
        Some(
            stripe
                .split(',')
                .find_map(|item| item.strip_prefix("t="))?
                .to_owned(),
        )
    });
    if let Some(ts) = timestamp {
        flags.extend(["--timestamp".to_owned(), ts]);
    }
    if let Some(ct) = vector_header(v, "Content-Type") {
        flags.extend(["--content-type".to_owned(), ct.to_owned()]);
    }
    if let Some(url) = &v.url {
        flags.extend(["--signed-url".to_owned(), url.clone()]);
    }
    flags
}

/// Whether `ours` is the vector's signature: equal, or (for the vectors that carry several
/// signatures, as during a key rotation, or a `v0` next to the `v1`) one of its entries.
fn reproduces(v: &Vector, ours: &str, theirs: &str) -> bool {
    if ours == theirs {
        return true;
    }
    match v.scheme.as_str() {
        "standard-webhooks" | "standard-webhooks-v1a" | "svix" => {
            theirs.split(' ').any(|entry| entry == ours)
        }
        "stripe" => {
            let items: Vec<&str> = theirs.split(',').collect();
            ours.split(',').all(|item| items.contains(&item))
        }
        // BOTIX accepts a bare hex digest; hookbin sends the documented `sha256=<hex>`.
        "botix" => ours == format!("sha256={theirs}"),
        _ => false,
    }
}

#[test]
fn every_valid_vector_is_reproduced_by_send_and_verified_in_a_bin() {
    let server = server();
    let bin = server.create_bin();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url(&format!("/r/{bin}"));
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    for v in verify_vectors::load().iter().filter(|v| v.expected.valid) {
        let body = BASE64.decode(&v.body_base64).unwrap();
        let file = dir.path().join(format!("{}.body", v.id));
        std::fs::write(&file, &body).unwrap();
        let secret = v.signing_key_for_reference.as_deref().unwrap_or(&v.secret);
        let scheme = v.scheme.as_str();
        let data = format!("@{}", file.display());
        let pins = pinning_flags(v);
        let mut args = vec![
            "send", &url, "--scheme", scheme, "--secret", secret, "--data", &data,
        ];
        args.extend(pins.iter().map(String::as_str));
        let run = hookbin(&args);
        run.assert_code(0);
        assert!(run.stdout.starts_with("1 200 "), "{}: {}", v.id, run.stdout);
        assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));

        let captured = newest(&server, &bin);
        assert_eq!(
            BASE64
                .decode(captured["body_base64"].as_str().unwrap())
                .unwrap(),
            body,
            "{}: the body is sent byte for byte",
            v.id
        );
        let name = signature_header(scheme);
        let ours = header(&captured, name).unwrap_or_else(|| panic!("{}: no {name}", v.id));
        let theirs = vector_header(v, name).unwrap();
        assert!(
            reproduces(v, ours, theirs),
            "{}: sent {ours:?}, vector has {theirs:?}",
            v.id
        );

        let verdict = verify(
            &server,
            &bin,
            &captured,
            json!({
                "secret": v.secret,
                "scheme": scheme,
                "now": v.now,
                "tolerance_seconds": v.tolerance_seconds,
                "url": v.url,
            }),
        );
        assert_eq!(verdict["valid"], true, "{}: {verdict}", v.id);
        *checked.entry(scheme.to_owned()).or_default() += 1;
    }
    println!("vectors reproduced by hookbin send: {checked:?}");
    assert_eq!(checked.len(), 9, "every vector scheme: {checked:?}");
}

/// Unpinned: a fresh id and the current time, the default body, and the generic scheme too.
#[test]
fn every_scheme_sent_with_defaults_verifies_now() {
    let server = server();
    let bin = server.create_bin();
    let url = server.url(&format!("/r/{bin}"));
    for (scheme, secret, verifier_secret) in [
        (
            "standard-webhooks",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ),
        (
            "standard-webhooks",
            "whsk_WqCM/pffJoxM68eV2w2e1+SsQtDKUkRRbkASGkulrm0=",
            "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=",
        ),
        (
            "svix",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ),
        (
            "stripe",
            "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
            "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
        ),
        (
            "github",
            "It's a Secret to Everybody",
            "It's a Secret to Everybody",
        ),
        (
            "slack",
            "8f742231b10e8888abcd99yyyzzz85a5",
            "8f742231b10e8888abcd99yyyzzz85a5",
        ),
        (
            "shopify",
            "23b8b2197a368b11a864def2c8f2a605",
            "23b8b2197a368b11a864def2c8f2a605",
        ),
        (
            "twilio",
            "5f20491516d714049ed85a7737c74682",
            "5f20491516d714049ed85a7737c74682",
        ),
        (
            "botix",
            "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
            "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
        ),
        ("hmac-sha256", "generic-secret", "generic-secret"),
    ] {
        let run = hookbin(&["send", &url, "--scheme", scheme, "--secret", secret]);
        run.assert_code(0);
        let captured = newest(&server, &bin);
        assert_eq!(header(&captured, "Content-Type"), Some("application/json"));
        let verdict = verify(
            &server,
            &bin,
            &captured,
            json!({"secret": verifier_secret, "scheme": scheme}),
        );
        assert_eq!(verdict["valid"], true, "{scheme}: {verdict}");
        if verdict["timestamp_ok"].is_boolean() {
            assert_eq!(verdict["timestamp_ok"], true, "{scheme}: {verdict}");
        }
        // Detection finds the scheme from the headers send wrote (svix and standard webhooks
        // share an algorithm; the generic check is the fallback).
        let detected = verify(&server, &bin, &captured, json!({"secret": verifier_secret}));
        assert_eq!(detected["valid"], true, "{scheme} detected: {detected}");
    }
}

#[test]
fn the_same_flags_send_the_same_bytes() {
    let server = server();
    let bin = server.create_bin();
    let url = server.url(&format!("/r/{bin}"));
    for scheme in [
        "svix",
        "stripe",
        "github",
        "slack",
        "shopify",
        "twilio",
        "botix",
        "hmac-sha256",
    ] {
        let secret = if scheme == "svix" {
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        } else {
            "k3y"
        };
        let args = [
            "send",
            &url,
            "--scheme",
            scheme,
            "--secret",
            secret,
            "--id",
            "evt_42",
            "--timestamp",
            "1750000000",
            "--data",
            "{\"n\":1}",
            "-H",
            "X-Trace: abc",
        ];
        let mut sent = Vec::new();
        for _ in 0..2 {
            hookbin(&args).assert_code(0);
            let captured = newest(&server, &bin);
            sent.push((
                captured["headers_base64"].clone(),
                captured["body_base64"].clone(),
            ));
        }
        assert_eq!(sent[0], sent[1], "{scheme}");
        let headers = sent[0].0.as_array().unwrap();
        let last = headers
            .iter()
            .rposition(|h| h[0] == "X-Trace")
            .expect("X-Trace sent");
        let signature = headers
            .iter()
            .position(|h| {
                let name = h[0].as_str().unwrap().to_ascii_lowercase();
                name.contains("signature") || name.contains("hmac")
            })
            .unwrap_or_else(|| panic!("{scheme}: a signature header"));
        assert!(
            signature < last,
            "{scheme}: --header goes after the scheme's headers"
        );
    }
}

#[test]
fn data_comes_from_a_string_a_file_stdin_or_a_captured_request() {
    let server = server();
    let source = server.create_bin();
    let target = server.create_bin();
    let url = server.url(&format!("/r/{target}"));
    let flags = ["--scheme", "github", "--secret", "k"];

    // A form body with bytes that are not UTF-8, captured once...
    let body = b"a=1&b=caf\xe9&c=%2B\n";
    let res = server.request(
        "POST",
        &format!("/r/{source}"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body,
    );
    assert_eq!(res.status, 200);
    let id = res.header("x-request-id").unwrap().to_owned();
    // ...re-sent from its API URL and from its page URL, byte for byte, signed again.
    for from in [
        server.url(&format!("/api/bins/{source}/requests/{id}")),
        server.url(&format!("/bins/{source}/requests/{id}")),
    ] {
        let mut args = vec!["send", &url, "--from", &from];
        args.extend(flags);
        hookbin(&args).assert_code(0);
        let captured = newest(&server, &target);
        assert_eq!(
            BASE64
                .decode(captured["body_base64"].as_str().unwrap())
                .unwrap(),
            body
        );
        assert_eq!(
            header(&captured, "Content-Type"),
            Some("application/x-www-form-urlencoded")
        );
        let verdict = verify(
            &server,
            &target,
            &captured,
            json!({"secret": "k", "scheme": "github"}),
        );
        assert_eq!(verdict["valid"], true, "{verdict}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("event.json");
    std::fs::write(&file, b"{\"from\":\"file\"}\n").unwrap();
    let data = format!("@{}", file.display());
    for (data, stdin, expected) in [
        ("plain text", &b""[..], &b"plain text"[..]),
        (data.as_str(), b"", b"{\"from\":\"file\"}\n"),
        ("-", b"\x00from stdin\xff", b"\x00from stdin\xff"),
    ] {
        let mut args = vec!["send", &url, "--data", data];
        args.extend(flags);
        hookbin_with(&args, stdin, &[]).assert_code(0);
        let captured = newest(&server, &target);
        assert_eq!(
            BASE64
                .decode(captured["body_base64"].as_str().unwrap())
                .unwrap(),
            expected
        );
    }

    // A request that does not exist: nothing to send, exit 1.
    let missing = server.url(&format!("/api/bins/{source}/requests/999"));
    let mut args = vec!["send", &url, "--from", &missing];
    args.extend(flags);
    let run = hookbin(&args);
    run.assert_code(1);
    assert!(run.stderr.contains("--from"), "{}", run.stderr);
}

#[test]
fn retries_a_receiver_that_fails_twice_then_succeeds() {
    let receiver = Receiver::start(|_, before| match before.len() {
        0 => (500, b"boom".to_vec()),
        1 => (503, b"busy".to_vec()),
        _ => (200, b"{\"ok\":true}".to_vec()),
    });
    let url = receiver.url("/hooks/stripe");
    let run = hookbin(&[
        "send",
        &url,
        "--scheme",
        "standard-webhooks",
        "--secret",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "--retry",
        "50ms,50ms,50ms",
    ]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(
        lines[0].starts_with("1 500 ") && lines[0].ends_with(" ms boom"),
        "{}",
        run.stdout
    );
    assert!(
        lines[1].starts_with("2 503 ") && lines[1].ends_with(" ms busy"),
        "{}",
        run.stdout
    );
    assert!(
        lines[2].starts_with("3 200 ") && lines[2].ends_with(r#" ms {"ok":true}"#),
        "{}",
        run.stdout
    );
    let requests = receiver.requests();
    assert_eq!(requests.len(), 3);
    let ids: Vec<&str> = requests
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0] && id.starts_with("msg_")),
        "{ids:?}"
    );
    // Each attempt is signed again: the signature covers its own timestamp.
    for r in &requests {
        let ts = r.header("webhook-timestamp").unwrap();
        let sig = r.header("webhook-signature").unwrap();
        let key = BASE64.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let expected = hmac_sha256_b64(&key, &[format!("{}.{ts}.", ids[0]).as_bytes(), &r.body]);
        assert_eq!(sig, format!("v1,{expected}"));
    }
}

#[test]
fn retries_stop_on_another_4xx_and_when_the_schedule_runs_out() {
    let rejecting = Receiver::answering(401);
    let run = hookbin(&[
        "send",
        &rejecting.url("/"),
        "--scheme",
        "github",
        "--secret",
        "k",
        "--retry",
        "10ms,10ms",
    ]);
    run.assert_code(1);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert_eq!(rejecting.requests().len(), 1);

    let limited = Receiver::answering(429);
    let run = hookbin(&[
        "send",
        &limited.url("/"),
        "--scheme",
        "github",
        "--secret",
        "k",
        "--retry",
        "10ms,10ms",
    ]);
    run.assert_code(1);
    assert_eq!(limited.requests().len(), 3);
    assert_eq!(
        run.stderr.matches("retrying in 10ms").count(),
        2,
        "{}",
        run.stderr
    );

    // Nothing listens: connection errors are retried and reported one line each.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let run = hookbin(&[
        "send", &url, "--scheme", "github", "--secret", "k", "--retry", "10ms",
    ]);
    run.assert_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    assert!(
        lines[0].starts_with("1 error: ") && lines[1].starts_with("2 error: "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_slow_receiver_times_out_and_the_answer_is_shown_escaped() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let rx = std::sync::Mutex::new(rx);
    let slow = Receiver::start(move |_, before| {
        if before.is_empty() {
            // Hold the first answer until the test has seen the timeout.
            let _ = rx.lock().unwrap().recv_timeout(super::util::PATIENCE);
        }
        (200, b"line1\nline2\x1b[2J\xff".to_vec())
    });
    let run = hookbin(&[
        "send",
        &slow.url("/"),
        "--scheme",
        "slack",
        "--secret",
        "k",
        "--timeout",
        "200ms",
        "--retry",
        "0s",
    ]);
    tx.send(()).unwrap();
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0], "1 error: no response within 200ms",
        "{}",
        run.stdout
    );
    assert!(
        lines[1].ends_with(r" ms line1\nline2\u{1b}[2J\xff"),
        "{}",
        run.stdout
    );
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_problem() {
    let secret = "whsec_c2VjcmV0LWtleS1ieXRlcw==";
    let receiver = Receiver::answering(200);
    let url = receiver.url("/hook");
    // Not a stored request's API URL: refused as usage before any connection (no port is
    // assumed closed; this one is, should a regression ever connect).
    let from = format!("http://{}/nothing", super::util::closed_port());
    for (args, says) in [
        (
            vec!["send", &url, "--scheme", "paypal", "--secret", secret],
            "--scheme",
        ),
        (
            vec![
                "send",
                &url,
                "--scheme",
                "svix",
                "--secret",
                "whsec_%%%not-base64%%%",
            ],
            "secret cannot be used for svix",
        ),
        (
            vec![
                "send",
                &url,
                "--scheme",
                "standard-webhooks",
                "--secret",
                "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=",
            ],
            "whsk_",
        ),
        (
            vec![
                "send",
                "ftp://example.test/hook",
                "--scheme",
                "svix",
                "--secret",
                secret,
            ],
            "http:// or https://",
        ),
        (
            vec![
                "send",
                "localhost:3000/hook",
                "--scheme",
                "svix",
                "--secret",
                secret,
            ],
            "expected http://HOST",
        ),
        (
            vec![
                "send",
                &url,
                "--scheme",
                "svix",
                "--secret",
                secret,
                "--data",
                "@/no/such/file.json",
            ],
            "cannot read file \"/no/such/file.json\"",
        ),
        (
            vec!["send", &url, "--scheme", "svix", "--data", "{}"],
            "--secret",
        ),
        (vec!["send", &url, "--secret", secret], "--scheme"),
        (
            vec!["send", "--scheme", "svix", "--secret", secret],
            "<URL>",
        ),
        (
            vec![
                "send", &url, "--scheme", "svix", "--secret", secret, "--id", "a.b",
            ],
            "--id",
        ),
        (
            vec![
                "send", &url, "--scheme", "svix", "--secret", secret, "--retry", "5m,soon",
            ],
            "--retry",
        ),
        (
            vec![
                "send",
                &url,
                "--scheme",
                "svix",
                "--secret",
                secret,
                "-H",
                "Host: evil",
            ],
            "--header Host",
        ),
        (
            vec![
                "send", &url, "--scheme", "svix", "--secret", secret, "--from", &from,
            ],
            "--from",
        ),
        (vec!["probe", &url, "--scheme", "stripe"], "--secret"),
        (
            vec![
                "probe",
                "file:///etc/passwd",
                "--scheme",
                "stripe",
                "--secret",
                secret,
            ],
            "expected http://HOST",
        ),
    ] {
        let run = hookbin(&args);
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        for form in [
            "c2VjcmV0LWtleS1ieXRlcw",
            "%%%not-base64%%%",
            "0EDWDhJ2ZYIyQ9UqJgYr",
        ] {
            assert!(
                !run.stderr.contains(form),
                "{args:?} printed the secret: {}",
                run.stderr
            );
        }
    }
    assert!(
        receiver.requests().is_empty(),
        "nothing is sent on bad input"
    );
}

#[test]
fn the_secret_can_come_from_the_environment_and_is_never_printed() {
    let secret = "sk-live-do-not-print-7781";
    let receiver = Receiver::start(|_, before| {
        // Fail the first attempt with a long answer, then accept.
        if before.is_empty() {
            (500, vec![b'x'; 500])
        } else {
            (204, Vec::new())
        }
    });
    let run = hookbin_with(
        &[
            "send",
            &receiver.url("/"),
            "--scheme",
            "slack",
            "--retry",
            "0s",
        ],
        b"",
        &[("HOOKBIN_SECRET", secret), ("RUST_LOG", "trace")],
    );
    run.assert_code(0);
    assert!(
        run.stdout.ends_with(" ms\n"),
        "a 204 has no answer to show: {}",
        run.stdout
    );
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains(secret) && !text.contains("do-not-print"),
            "{text}"
        );
    }
    let help = hookbin_with(&["send", "--help"], b"", &[("HOOKBIN_SECRET", secret)]);
    assert!(
        !help.stdout.contains(secret),
        "--help shows the variable, not its value"
    );
}

/// HMAC-SHA256 written here again, independently of hookbin's signer.
pub fn hmac_sha256_b64(key: &[u8], parts: &[&[u8]]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key).unwrap();
    for part in parts {
        mac.update(part);
    }
    BASE64.encode(mac.finalize().into_bytes())
}
