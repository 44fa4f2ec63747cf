//! Behaviour of `verify` as a whole: input errors, detection, the diagnostics in `detail`, and
//! that the secret never leaks. The provider vectors are checked in `tests/it/verify_vectors.rs`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::*;
use crate::signing::crypto::{Algo, hmac};

const NOW: i64 = 1_750_000_000;
const BIN_URL: &str = "https://hooks.example.test/r/abc";
const TEXT_SECRET: &str = "s3cr3t-text-key-for-tests";
/// base64 of the 24 bytes "0123456789abcdefghijklmn".
const WHSEC: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u";
const WHSEC_KEY: &[u8] = b"0123456789abcdefghijklmn";
const BODY: &[u8] = br#"{"event":"ping","attempt":1}"#;

fn request(headers: &[(&str, &str)], body: &[u8]) -> StoredRequest {
    StoredRequest {
        id: crate::ids::RequestId::from_row(7),
        received_at: NOW * 1000,
        ..StoredRequest::sample("abc", "", "", headers, body)
    }
}

fn input(scheme: Option<&str>, secret: &str) -> VerifyInput {
    VerifyInput {
        secret: secret.into(),
        scheme: scheme.map(str::to_owned),
        now: Some(NOW),
        ..VerifyInput::default()
    }
}

fn check(req: &StoredRequest, scheme: Option<&str>, secret: &str) -> Verification {
    let answer = verify(req, &input(scheme, secret), BIN_URL, NOW).expect("no input error");
    assert_no_secret(&answer, secret);
    answer
}

/// Whether `detail` contains `words`, ignoring case (hints start sentences, so their first
/// letter is capitalised).
fn says(answer: &Verification, words: &str) -> bool {
    answer.detail.to_lowercase().contains(&words.to_lowercase())
}

fn assert_no_secret(answer: &Verification, secret: &str) {
    let json = serde_json::to_string(answer).unwrap();
    assert!(!json.contains(secret), "secret leaked: {json}");
    if let Some(encoded) = secret.strip_prefix("whsec_") {
        assert!(!json.contains(encoded), "secret leaked: {json}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_hex(key: &[u8], parts: &[&[u8]]) -> String {
    hex(&hmac(Algo::Sha256, key, parts))
}

fn sha256_b64(key: &[u8], parts: &[&[u8]]) -> String {
    BASE64.encode(hmac(Algo::Sha256, key, parts))
}

fn github(signature: &str, body: &[u8]) -> StoredRequest {
    request(&[("X-Hub-Signature-256", signature)], body)
}

fn botix(ts: i64, signature: &str) -> StoredRequest {
    request(
        &[
            ("X-BOTIX-Timestamp", &ts.to_string()),
            ("X-BOTIX-Signature", signature),
        ],
        BODY,
    )
}

fn stripe(ts: i64, signature_parts: &[&[u8]], key: &[u8]) -> StoredRequest {
    let header = format!("t={ts},v1={}", sha256_hex(key, signature_parts));
    request(&[("Stripe-Signature", &header)], BODY)
}

fn standard(id: &str, ts: i64, signature: &str) -> StoredRequest {
    request(
        &[
            ("webhook-id", id),
            ("webhook-timestamp", &ts.to_string()),
            ("webhook-signature", signature),
        ],
        BODY,
    )
}

// ---- input errors -------------------------------------------------------------------------

#[test]
fn unknown_scheme_is_an_input_error_naming_the_field() {
    let err = verify(
        &request(&[], BODY),
        &input(Some("paypal"), "x"),
        BIN_URL,
        NOW,
    )
    .unwrap_err();
    assert_eq!(
        err,
        VerifyError::UnknownScheme {
            name: "paypal".into()
        }
    );
    assert_eq!(err.field(), "scheme");
    assert_eq!(err.code(), "unknown_scheme");
    assert!(err.to_string().contains("standard-webhooks, svix, stripe"));
}

#[test]
fn blank_scheme_means_detect() {
    let sig = format!("sha256={}", sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]));
    let answer = check(&github(&sig, BODY), Some("  "), TEXT_SECRET);
    assert!(answer.valid);
    assert_eq!(answer.scheme.as_deref(), Some("github"));
}

#[test]
fn malformed_or_empty_secret_is_an_input_error_without_the_secret() {
    let req = standard("msg_1", NOW, "v1,AAAA");
    for (scheme, secret) in [
        (Some("standard-webhooks"), "whsec_not*valid*base64"),
        (Some("svix"), "whsec_"),
        (None, "whsec_not*valid*base64"), // detected from the webhook-* headers
        (Some("standard-webhooks"), "whpk_AAAA"),
        (Some("github"), ""),
        (None, ""),
    ] {
        let err = verify(&req, &input(scheme, secret), BIN_URL, NOW).unwrap_err();
        assert_eq!(err.field(), "secret", "{scheme:?} {secret:?}");
        assert_eq!(err.code(), "malformed_secret");
        let message = err.to_string();
        assert!(!message.contains("not*valid"), "{message}");
    }
}

#[test]
fn twilio_url_must_be_absolute_http() {
    let req = request(&[("X-Twilio-Signature", "AAAA")], b"");
    let mut bad = input(Some("twilio"), "token");
    bad.url = Some("/r/abc".into());
    let err = verify(&req, &bad, BIN_URL, NOW).unwrap_err();
    assert_eq!(err, VerifyError::InvalidUrl);
    assert_eq!(err.field(), "url");
}

#[test]
fn input_parses_from_json_and_debug_hides_the_secret() {
    let parsed: VerifyInput = serde_json::from_str(r#"{"secret":"hunter2"}"#).unwrap();
    assert_eq!(parsed.secret, "hunter2");
    assert_eq!(parsed.scheme, None);
    let full: VerifyInput = serde_json::from_str(
        r#"{"secret":"hunter2","scheme":"stripe","tolerance_seconds":60,"now":5,"url":"h"}"#,
    )
    .unwrap();
    assert_eq!(full.tolerance_seconds, Some(60));
    let debug = format!("{full:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(debug.contains("stripe"));
}

#[test]
fn verification_serialises_with_the_contract_fields() {
    let sig = format!("sha256={}", sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]));
    let answer = check(&github(&sig, BODY), None, TEXT_SECRET);
    let json = serde_json::to_value(&answer).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "scheme",
        "valid",
        "timestamp_ok",
        "detail",
        "reason",
        "signed",
    ] {
        assert!(keys.contains(&key), "{key} missing from {json}");
    }
    assert_eq!(json["scheme"], "github");
    assert_eq!(json["valid"], true);
    assert_eq!(json["timestamp_ok"], serde_json::Value::Null);
    assert_eq!(json["reason"], "ok");
}

// ---- diagnostics --------------------------------------------------------------------------

#[test]
fn detail_names_a_lost_trailing_newline() {
    let signed = [BODY, b"\n"].concat();
    let sig = format!("sha256={}", sha256_hex(TEXT_SECRET.as_bytes(), &[&signed]));
    let answer = check(&github(&sig, BODY), Some("github"), TEXT_SECRET);
    assert_eq!(answer.reason, Reason::SignatureMismatch);
    assert!(says(
        &answer,
        "body differs from what was signed: trailing newline?"
    ));
    assert!(
        says(&answer, "with a newline (\\n) appended"),
        "{}",
        answer.detail
    );
}

#[test]
fn detail_names_an_added_trailing_newline_or_crlf() {
    let sig = sha256_b64(TEXT_SECRET.as_bytes(), &[BODY]);
    for (tail, words) in [
        (&b"\n"[..], "without its final newline"),
        (b"\r\n", "without its final CRLF"),
        (b" \n\n", "without its trailing whitespace"),
    ] {
        let body = [BODY, tail].concat();
        let req = request(&[("X-Shopify-Hmac-Sha256", &sig)], &body);
        let answer = check(&req, None, TEXT_SECRET);
        assert!(!answer.valid);
        assert!(says(&answer, words), "{}", answer.detail);
    }
}

#[test]
fn detail_names_a_signature_over_the_body_without_the_timestamp() {
    let key = TEXT_SECRET.as_bytes();
    let answer = check(&stripe(NOW, &[BODY], key), None, TEXT_SECRET);
    assert!(
        says(&answer, "signature is over the body without the timestamp"),
        "{}",
        answer.detail
    );
    let answer = check(
        &botix(NOW, &sha256_hex(key, &[BODY])),
        Some("botix"),
        TEXT_SECRET,
    );
    assert!(says(
        &answer,
        "signature is over the body without the timestamp"
    ));
    let req = request(
        &[
            ("X-Slack-Request-Timestamp", &NOW.to_string()),
            (
                "X-Slack-Signature",
                &format!("v0={}", sha256_hex(key, &[BODY])),
            ),
        ],
        BODY,
    );
    let answer = check(&req, None, TEXT_SECRET);
    assert!(says(
        &answer,
        "signature is over the body without the timestamp"
    ));
    let answer = check(
        &standard(
            "msg_1",
            NOW,
            &format!("v1,{}", sha256_b64(WHSEC_KEY, &[BODY])),
        ),
        None,
        WHSEC,
    );
    assert!(says(&answer, "over the body without the id and timestamp"));
    let ts = NOW.to_string();
    let sig = sha256_b64(WHSEC_KEY, &[ts.as_bytes(), b".", BODY]);
    let answer = check(&standard("msg_1", NOW, &format!("v1,{sig}")), None, WHSEC);
    assert!(
        says(&answer, "over timestamp.body without the message id"),
        "{}",
        answer.detail
    );
}

#[test]
fn detail_names_a_whsec_secret_that_was_not_base64_decoded() {
    let prefix = format!("msg_1.{NOW}.");
    let as_text = sha256_b64(WHSEC.as_bytes(), &[prefix.as_bytes(), BODY]);
    let answer = check(
        &standard("msg_1", NOW, &format!("v1,{as_text}")),
        None,
        WHSEC,
    );
    assert_eq!(answer.reason, Reason::SignatureMismatch);
    assert!(
        says(
            &answer,
            "matches a different secret encoding (the whsec_ prefix was not base64-decoded"
        ),
        "{}",
        answer.detail
    );
}

#[test]
fn detail_names_a_stripe_secret_that_was_base64_decoded() {
    let ts = NOW.to_string();
    let req = stripe(NOW, &[ts.as_bytes(), b".", BODY], WHSEC_KEY);
    let answer = check(&req, Some("stripe"), WHSEC);
    assert!(!answer.valid);
    assert!(says(&answer, "base64-decoded"), "{}", answer.detail);
}

#[test]
fn detail_names_surrounding_whitespace_in_the_pasted_secret() {
    let sig = format!("sha256={}", sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]));
    let pasted = format!("{TEXT_SECRET}\n");
    let answer = check(&github(&sig, BODY), None, &pasted);
    assert!(says(&answer, "surrounding whitespace"), "{}", answer.detail);
}

#[test]
fn detail_says_how_old_or_new_the_timestamp_is() {
    let key = TEXT_SECRET.as_bytes();
    let signed = |ts: i64| sha256_hex(key, &[ts.to_string().as_bytes(), b".", BODY]);
    let old = NOW - 7 * 60;
    let answer = check(&botix(old, &signed(old)), None, TEXT_SECRET);
    assert_eq!(answer.reason, Reason::TimestampOutOfTolerance);
    assert_eq!(answer.timestamp_ok, Some(false));
    assert!(
        says(&answer, "timestamp is 7 minutes old (420 s)"),
        "{}",
        answer.detail
    );
    let new = NOW + 5 * 60 + 1;
    let answer = check(&botix(new, &signed(new)), None, TEXT_SECRET);
    assert!(
        says(&answer, "timestamp is 5 minutes 1 second in the future"),
        "{}",
        answer.detail
    );
    assert_eq!(answer.reason, Reason::TimestampOutOfTolerance);
}

#[test]
fn stripe_accepts_future_timestamps_but_says_so() {
    let ts = NOW + 3600;
    let t = ts.to_string();
    let req = stripe(ts, &[t.as_bytes(), b".", BODY], TEXT_SECRET.as_bytes());
    let answer = check(&req, None, TEXT_SECRET);
    assert!(answer.valid);
    assert_eq!(answer.timestamp_ok, Some(true));
    assert!(says(&answer, "1 hour in the future"), "{}", answer.detail);
    assert!(says(&answer, "rejects only old timestamps"));
}

#[test]
fn tolerance_and_now_come_from_the_input_and_the_wall_clock_otherwise() {
    let ts = NOW - 1000;
    let sig = sha256_hex(
        TEXT_SECRET.as_bytes(),
        &[ts.to_string().as_bytes(), b".", BODY],
    );
    let req = botix(ts, &sig);
    let mut wide = input(None, TEXT_SECRET);
    wide.tolerance_seconds = Some(1000);
    assert!(verify(&req, &wide, BIN_URL, 0).unwrap().valid);
    // No `now`: the wall clock decides; the request was stale on arrival too, so no hint.
    let mut wall = input(None, TEXT_SECRET);
    wall.now = None;
    let answer = verify(&req, &wall, BIN_URL, NOW).unwrap();
    assert_eq!(answer.reason, Reason::TimestampOutOfTolerance);
    assert!(!says(&answer, "when the request arrived"));
    // Fresh on arrival, stale by the wall clock an hour later: say how to check it as of arrival.
    let fresh = NOW - 10;
    let sig = sha256_hex(
        TEXT_SECRET.as_bytes(),
        &[fresh.to_string().as_bytes(), b".", BODY],
    );
    let answer = verify(&botix(fresh, &sig), &wall, BIN_URL, NOW + 3600).unwrap();
    assert_eq!(answer.reason, Reason::TimestampOutOfTolerance);
    assert!(
        says(&answer, &format!("pass \"now\": {NOW}")),
        "{}",
        answer.detail
    );
}

#[test]
fn a_timestamp_that_is_not_a_number_is_a_malformed_header() {
    let req = request(
        &[
            ("X-BOTIX-Timestamp", "yesterday"),
            ("X-BOTIX-Signature", "00"),
        ],
        BODY,
    );
    let answer = check(&req, None, TEXT_SECRET);
    assert_eq!(answer.reason, Reason::MalformedHeader);
    assert_eq!(answer.timestamp_ok, Some(false));
    assert!(says(&answer, "\"yesterday\" is not a Unix time"));
}

#[test]
fn detail_names_a_shopify_hmac_sent_as_hex() {
    let sig = sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]);
    let req = request(&[("X-Shopify-Hmac-SHA256", &sig)], BODY);
    let answer = check(&req, None, TEXT_SECRET);
    assert_eq!(answer.reason, Reason::SignatureMismatch);
    assert!(says(&answer, "hex-encoded"), "{}", answer.detail);
    assert_eq!(
        answer.signature_header.as_deref(),
        Some("X-Shopify-Hmac-SHA256")
    );
}

#[test]
fn missing_header_is_named_as_spelled_by_the_provider() {
    let req = request(&[("Content-Type", "application/json")], BODY);
    let answer = check(&req, Some("github"), TEXT_SECRET);
    assert_eq!(answer.reason, Reason::MissingHeader);
    assert!(says(&answer, "header X-Hub-Signature-256 is missing"));
    assert_eq!(answer.timestamp_ok, None);
}

#[test]
fn a_truncated_body_is_named_as_the_reason_a_signature_cannot_match() {
    let sig = format!("sha256={}", sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]));
    let mut req = github(&sig, &BODY[..10]);
    req.body_truncated = true;
    req.body_size = BODY.len() as u64;
    let answer = check(&req, None, TEXT_SECRET);
    assert_eq!(answer.reason, Reason::SignatureMismatch);
    assert!(
        says(&answer, "truncated on capture (10 of 28 bytes stored)"),
        "{}",
        answer.detail
    );
}

// ---- constant-time comparison and degenerate signatures -----------------------------------

#[test]
fn empty_truncated_or_padded_signatures_never_match() {
    let full = sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]);
    for sig in [
        String::new(),
        "sha256=".into(),
        format!("sha256={}", &full[..32]),
        format!("sha256={full}00"),
        format!("sha256={}", &full[..63]),
    ] {
        let answer = check(&github(&sig, BODY), Some("github"), TEXT_SECRET);
        assert_eq!(answer.reason, Reason::SignatureMismatch, "{sig:?}");
    }
    let answer = check(&standard("msg_1", NOW, "v1, v1,"), None, WHSEC);
    assert_eq!(answer.reason, Reason::SignatureMismatch);
}

// ---- scheme specifics ---------------------------------------------------------------------

#[test]
fn header_names_are_matched_without_regard_to_case() {
    let ts = NOW.to_string();
    let sig = sha256_hex(TEXT_SECRET.as_bytes(), &[b"v0:", ts.as_bytes(), b":", BODY]);
    let req = request(
        &[
            ("x-slack-request-timestamp", &ts),
            ("X-SLACK-SIGNATURE", &format!("v0={sig}")),
        ],
        BODY,
    );
    let answer = check(&req, None, TEXT_SECRET);
    assert!(answer.valid, "{}", answer.detail);
    assert_eq!(
        answer.signature_header.as_deref(),
        Some("X-SLACK-SIGNATURE")
    );
}

#[test]
fn svix_accepts_webhook_headers_and_standard_webhooks_points_to_svix() {
    let prefix = format!("msg_1.{NOW}.");
    let sig = format!("v1,{}", sha256_b64(WHSEC_KEY, &[prefix.as_bytes(), BODY]));
    let white_label = standard("msg_1", NOW, &sig);
    assert!(check(&white_label, Some("svix"), WHSEC).valid);
    let svix = request(
        &[
            ("svix-id", "msg_1"),
            ("svix-timestamp", &NOW.to_string()),
            ("svix-signature", &sig),
        ],
        BODY,
    );
    let answer = check(&svix, Some("standard-webhooks"), WHSEC);
    assert_eq!(answer.reason, Reason::MissingHeader);
    assert!(
        says(&answer, "check it with scheme svix"),
        "{}",
        answer.detail
    );
}

#[test]
fn signatures_split_over_repeated_headers_are_all_tried() {
    let t = NOW.to_string();
    let good = sha256_hex(TEXT_SECRET.as_bytes(), &[t.as_bytes(), b".", BODY]);
    let req = request(
        &[
            ("Stripe-Signature", &format!("t={t},v1={}", "00".repeat(32))),
            ("Stripe-Signature", &format!("v1={good}")),
        ],
        BODY,
    );
    let answer = check(&req, None, TEXT_SECRET);
    assert!(answer.valid, "{}", answer.detail);
    assert!(says(&answer, "v1 entry 2 of 2"));
}

#[test]
fn github_legacy_sha1_header_is_checked_when_alone() {
    let sig = hex(&hmac(Algo::Sha1, TEXT_SECRET.as_bytes(), &[BODY]));
    let req = request(&[("X-Hub-Signature", &format!("sha1={sig}"))], BODY);
    let answer = check(&req, None, TEXT_SECRET);
    assert!(answer.valid, "{}", answer.detail);
    assert!(says(&answer, "legacy X-Hub-Signature"));
}

#[test]
fn v1a_works_with_the_secret_key_and_explains_v1_only_headers() {
    use ed25519_dalek::{Signer as _, SigningKey};
    let seed = [7u8; 32];
    let signing = SigningKey::from_bytes(&seed);
    let message = [format!("msg_1.{NOW}.").as_bytes(), BODY].concat();
    let sig = BASE64.encode(signing.sign(&message).to_bytes());
    let req = standard("msg_1", NOW, &format!("v1,AAAA v1a,{sig}"));
    let whpk = format!("whpk_{}", BASE64.encode(signing.verifying_key().as_bytes()));
    let whsk = format!("whsk_{}", BASE64.encode(seed));
    for secret in [&whpk, &whsk] {
        let answer = check(&req, Some("standard-webhooks-v1a"), secret);
        assert!(answer.valid, "{}", answer.detail);
        assert_eq!(answer.scheme.as_deref(), Some("standard-webhooks"));
        assert!(says(&answer, "1 v1 entry skipped"), "{}", answer.detail);
    }
    let hmac_only = standard("msg_1", NOW, "v1,AAAA");
    let answer = check(&hmac_only, None, &whpk);
    assert!(says(&answer, "no v1a entries"), "{}", answer.detail);
    // A v1a signature over a body that lost its trailing newline is explained too.
    let message = [format!("msg_1.{NOW}.").as_bytes(), BODY, b"\n"].concat();
    let sig = BASE64.encode(signing.sign(&message).to_bytes());
    let answer = check(&standard("msg_1", NOW, &format!("v1a,{sig}")), None, &whpk);
    assert!(says(&answer, "trailing newline?"), "{}", answer.detail);
}

fn twilio_sig(token: &str, signed: &str) -> String {
    BASE64.encode(hmac(Algo::Sha1, token.as_bytes(), &[signed.as_bytes()]))
}

fn twilio_request(sig: &str, content_type: &str, body: &[u8]) -> StoredRequest {
    request(
        &[("Content-Type", content_type), ("X-Twilio-Signature", sig)],
        body,
    )
}

#[test]
fn twilio_uses_the_bin_url_and_accepts_either_port_form() {
    let body = b"To=%2B1555&From=%2B1666&Body=hi+there";
    let params = "Bodyhi thereFrom+1666To+1555";
    let form = "application/x-www-form-urlencoded; charset=utf-8";
    // Signed without a port, checked against the bin URL (default_url) without one.
    let sig = twilio_sig(TOKEN, &format!("{BIN_URL}{params}"));
    assert!(check(&twilio_request(&sig, form, body), None, TOKEN).valid);
    // Signed with the default port: still valid for the URL without it.
    let sig = twilio_sig(
        TOKEN,
        &format!("https://hooks.example.test:443/r/abc{params}"),
    );
    let answer = check(&twilio_request(&sig, form, body), None, TOKEN);
    assert!(answer.valid, "{}", answer.detail);
    assert!(says(&answer, "with the default port :443 added"));
}

#[test]
fn twilio_hints_at_the_proxy_scheme_and_at_a_form_body_sent_as_something_else() {
    let body = b"A=1";
    let sig = twilio_sig(TOKEN, "http://hooks.example.test/r/abcA1");
    let answer = check(&twilio_request(&sig, FORM_TYPE, body), None, TOKEN);
    assert!(
        says(&answer, "http:// form of the URL"),
        "{}",
        answer.detail
    );
    let sig = twilio_sig(TOKEN, &format!("{BIN_URL}A1"));
    let answer = check(&twilio_request(&sig, "text/plain", body), None, TOKEN);
    assert!(!answer.valid);
    assert!(
        says(&answer, "read as form parameters"),
        "{}",
        answer.detail
    );
}

const FORM_TYPE: &str = "application/x-www-form-urlencoded";
const TOKEN: &str = "AC-test-5f2049";

#[test]
fn twilio_json_body_must_match_body_sha256() {
    let body = br#"{"a":1}"#;
    let digest = {
        use sha2::Digest as _;
        hex(&sha2::Sha256::digest(body))
    };
    let url = format!("{BIN_URL}?bodySHA256={digest}");
    let sig = twilio_sig(TOKEN, &url);
    let mut with_url = input(None, TOKEN);
    with_url.url = Some(url.clone());
    let ok = verify(
        &twilio_request(&sig, "application/json", body),
        &with_url,
        BIN_URL,
        NOW,
    );
    assert!(ok.unwrap().valid);
    let changed = verify(
        &twilio_request(&sig, "application/json", br#"{"a":2}"#),
        &with_url,
        BIN_URL,
        NOW,
    )
    .unwrap();
    assert_eq!(changed.reason, Reason::SignatureMismatch);
    assert!(
        says(&changed, "differs from the bodySHA256"),
        "{}",
        changed.detail
    );
}

#[test]
fn generic_scheme_reports_the_matching_header_and_is_the_detection_fallback() {
    let sig = sha256_hex(TEXT_SECRET.as_bytes(), &[BODY]);
    let req = request(
        &[
            ("User-Agent", "acme-hooks/2"),
            ("X-Acme-Signature", &format!("sha256={sig}")),
        ],
        BODY,
    );
    let named = check(&req, Some("hmac-sha256"), TEXT_SECRET);
    assert!(named.valid);
    assert_eq!(named.signature_header.as_deref(), Some("X-Acme-Signature"));
    assert!(says(&named, "header X-Acme-Signature (hex after sha256=)"));
    let detected = check(&req, None, TEXT_SECRET);
    assert!(detected.valid);
    assert_eq!(detected.scheme.as_deref(), Some("hmac-sha256"));
    let wrong = check(&req, None, "another secret");
    assert_eq!(wrong.reason, Reason::MissingHeader);
    assert_eq!(wrong.scheme, None);
    let wrong = check(&req, Some("hmac-sha256"), "another secret");
    assert_eq!(wrong.reason, Reason::SignatureMismatch);
    assert_eq!(wrong.signature_header, None);
}
