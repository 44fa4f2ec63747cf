//! The signer and the verifier share their rules (`src/signing`), and agree: what `Signer`
//! produces, `verify` accepts, for every scheme and key form, and rejects once a byte or the
//! key changes. (The provider vectors are reproduced through the binary in `send.rs`.)

use hookbin::model::{HeaderPair, StoredRequest};
use hookbin::signing::{Header, Message, Role, Scheme, Signer, id_header, lookalike_secret};
use hookbin::verify::{self, Reason, VerifyInput};

const NOW: i64 = 1_750_000_000;
const URL: &str = "https://receiver.example.test/hooks?tenant=7";
const WHSEC: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u";
const WHSK: &str = "whsk_WqCM/pffJoxM68eV2w2e1+SsQtDKUkRRbkASGkulrm0=";
const WHPK: &str = "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=";

fn message<'a>(body: &'a [u8], content_type: &'a str) -> Message<'a> {
    Message {
        id: "msg_2b8f0c",
        timestamp: NOW - 5,
        body,
        url: URL,
        content_type: Some(content_type),
    }
}

fn stored(headers: &[Header], content_type: &str, body: &[u8]) -> StoredRequest {
    let mut pairs = vec![HeaderPair::new("Content-Type", content_type)];
    pairs.extend(
        headers
            .iter()
            .map(|h| HeaderPair::new(h.name.as_str(), h.value.as_str())),
    );
    StoredRequest {
        id: hookbin::ids::RequestId::from_row(1),
        bin_id: "0123456789abcdefgh".into(),
        method: "POST".into(),
        path: "/r/0123456789abcdefgh".into(),
        subpath: String::new(),
        query: String::new(),
        headers: pairs,
        body: body.to_vec(),
        body_size: body.len() as u64,
        body_truncated: false,
        remote_addr: "127.0.0.1".into(),
        http_version: "HTTP/1.1".into(),
        received_at: NOW * 1000,
        response: None,
    }
}

fn verdict(scheme: Scheme, secret: &str, req: &StoredRequest) -> verify::Verification {
    let input = VerifyInput {
        secret: secret.to_owned(),
        scheme: Some(scheme.name().to_owned()),
        now: Some(NOW),
        url: Some(URL.to_owned()),
        ..VerifyInput::default()
    };
    verify::verify(req, &input, URL, NOW).expect("no input error")
}

/// Every scheme with a secret of its form, and the secret the verifier is given.
fn cases() -> Vec<(Scheme, &'static str, &'static str)> {
    vec![
        (Scheme::StandardWebhooks, WHSEC, WHSEC),
        (Scheme::StandardWebhooks, WHSK, WHPK),
        (Scheme::Svix, WHSEC, WHSEC),
        (
            Scheme::Stripe,
            "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
            "whsec_X9VF9kU3ni98ErWS47YmI4WrlZNd6OdQ",
        ),
        (
            Scheme::Github,
            "It's a Secret to Everybody",
            "It's a Secret to Everybody",
        ),
        (
            Scheme::Slack,
            "8f742231b10e8888abcd99yyyzzz85a5",
            "8f742231b10e8888abcd99yyyzzz85a5",
        ),
        (
            Scheme::Shopify,
            "23b8b2197a368b11a864def2c8f2a605",
            "23b8b2197a368b11a864def2c8f2a605",
        ),
        (Scheme::Twilio, "12345", "12345"),
        (
            Scheme::Botix,
            "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
            "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI",
        ),
        (Scheme::HmacSha256, "s3cr3t", "s3cr3t"),
    ]
}

#[test]
fn what_the_signer_signs_the_verifier_accepts_for_every_scheme() {
    for (body, content_type) in [
        (
            &br#"{"type":"invoice.paid","amount":4200}"#[..],
            "application/json",
        ),
        (
            b"To=%2B1555&Body=caf%C3%A9+%E2%98%95\n",
            "application/x-www-form-urlencoded",
        ),
        (b"", "text/plain"),
    ] {
        for (scheme, secret, verifier_secret) in cases() {
            let signer = Signer::new(scheme, secret).expect("a valid secret");
            let headers = signer.sign(&message(body, content_type));
            let answer = verdict(
                scheme,
                verifier_secret,
                &stored(&headers, content_type, body),
            );
            assert!(
                answer.valid,
                "{} {content_type}: {}",
                scheme.name(),
                answer.detail
            );
            assert_eq!(
                answer.timestamp_ok.is_some(),
                scheme.replay_window().is_some(),
                "{}",
                scheme.name()
            );
            assert!(
                headers.iter().any(|h| h.role == Role::Signature),
                "{}",
                scheme.name()
            );
            assert_eq!(
                headers.iter().any(|h| h.role == Role::Id),
                id_header(scheme).is_some(),
                "{}",
                scheme.name()
            );
        }
    }
}

#[test]
fn a_changed_body_or_a_wrong_secret_fails_where_the_body_is_signed() {
    let body = br#"{"type":"invoice.paid","amount":4200}"#;
    let changed = br#"{"type":"invoice.paid","amount":4201}"#;
    for (scheme, secret, verifier_secret) in cases() {
        let headers = Signer::new(scheme, secret)
            .unwrap()
            .sign(&message(body, "application/x-www-form-urlencoded"));
        let answer = verdict(
            scheme,
            verifier_secret,
            &stored(&headers, "application/x-www-form-urlencoded", changed),
        );
        assert_eq!(
            answer.reason,
            Reason::SignatureMismatch,
            "{}",
            scheme.name()
        );
        let other = lookalike_secret(secret, |buf| buf.fill(0x5a));
        let headers = Signer::new(scheme, &other)
            .unwrap()
            .sign(&message(body, "application/json"));
        let answer = verdict(
            scheme,
            verifier_secret,
            &stored(&headers, "application/json", body),
        );
        assert!(!answer.valid, "{}: {}", scheme.name(), answer.detail);
    }
}

#[test]
fn the_same_message_gives_the_same_headers() {
    for (scheme, secret, _) in cases() {
        let signer = Signer::new(scheme, secret).unwrap();
        let msg = message(b"{}", "application/json");
        assert_eq!(signer.sign(&msg), signer.sign(&msg), "{}", scheme.name());
    }
}

#[test]
fn headers_are_named_and_ordered_as_the_providers_send_them() {
    let names = |scheme, secret| -> Vec<String> {
        Signer::new(scheme, secret)
            .unwrap()
            .sign(&message(b"{}", "application/json"))
            .into_iter()
            .map(|h| format!("{}: {}", h.name, h.value))
            .collect()
    };
    let stripe = names(Scheme::Stripe, "whsec_x");
    assert_eq!(stripe.len(), 1);
    assert!(
        stripe[0].starts_with("Stripe-Signature: t=1749999995,v1="),
        "{stripe:?}"
    );
    let standard = names(Scheme::StandardWebhooks, WHSK);
    assert_eq!(standard[0], "webhook-id: msg_2b8f0c");
    assert_eq!(standard[1], "webhook-timestamp: 1749999995");
    assert!(standard[2].starts_with("webhook-signature: v1a,"));
    let github = names(Scheme::Github, "k");
    assert!(github[0].starts_with("X-GitHub-Delivery: msg_2b8f0c"));
    assert!(github[1].starts_with("X-Hub-Signature: sha1="));
    assert!(github[2].starts_with("X-Hub-Signature-256: sha256="));
    let slack = names(Scheme::Slack, "k");
    assert_eq!(slack[0], "X-Slack-Request-Timestamp: 1749999995");
    assert!(slack[1].starts_with("X-Slack-Signature: v0="));
    let generic = Signer::new(Scheme::HmacSha256, "k")
        .unwrap()
        .with_signature_header("X-Acme-Sig")
        .sign(&message(b"{}", "application/json"));
    assert_eq!(generic[0].name, "X-Acme-Sig");
    assert!(generic[0].value.starts_with("sha256="));
}

#[test]
fn bad_secrets_are_errors_that_do_not_echo_them() {
    for (scheme, secret) in [
        (Scheme::StandardWebhooks, "whsec_not*base64!"),
        (Scheme::Svix, "whsk_AAAA"),
        (Scheme::StandardWebhooks, WHPK),
        (Scheme::Github, ""),
    ] {
        let err = Signer::new(scheme, secret).expect_err(secret);
        let message = err.to_string();
        assert!(message.contains(scheme.name()), "{message}");
        let tail = &secret[secret.find('_').map_or(0, |i| i + 1)..];
        assert!(tail.is_empty() || !message.contains(tail), "{message}");
    }
    let err = Signer::new(Scheme::StandardWebhooks, WHPK).unwrap_err();
    assert!(err.to_string().contains("whsk_"), "{err}");
    let debug = format!("{:?}", Signer::new(Scheme::Github, "hunter2").unwrap());
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[test]
fn lookalike_secrets_keep_the_form() {
    let counter = |buf: &mut [u8]| {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8;
        }
    };
    let whsec = lookalike_secret(WHSEC, counter);
    assert!(whsec.starts_with("whsec_") && whsec != WHSEC);
    assert!(Signer::new(Scheme::Svix, &whsec).is_ok());
    let whsk = lookalike_secret(WHSK, counter);
    assert!(whsk.starts_with("whsk_") && whsk != WHSK);
    assert!(Signer::new(Scheme::StandardWebhooks, &whsk).is_ok());
    let hex = lookalike_secret("23b8b2197a368b11a864def2c8f2a605", counter);
    assert_eq!(hex.len(), 32);
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hex}");
    let prefixed = lookalike_secret("bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI", counter);
    assert!(prefixed.starts_with("bx_"), "{prefixed}");
    assert_ne!(prefixed, "bx_7BdIULcC0Xqtb5DARcl2cw8iCadIr3bdQ6DiLfTI");
    // A generator stuck on the secret itself cannot make the function return it.
    let mut calls = 0;
    let other = lookalike_secret("0000000000000000", |buf| {
        calls += 1;
        buf.fill(if calls == 1 { 0 } else { 1 });
    });
    assert_ne!(other, "0000000000000000");
}
