//! Slack: `X-Slack-Request-Timestamp` and `X-Slack-Signature: v0=<hex>`, HMAC-SHA256 over
//! `v0:{timestamp}:{body}` keyed by the signing secret as text.

use super::crypto::{Algo, decode_hex, encode_hex, hmac};
use super::{Header, Message, Role};

pub(crate) const TIMESTAMP_HEADER: &str = "X-Slack-Request-Timestamp";
pub(crate) const SIGNATURE_HEADER: &str = "X-Slack-Signature";
/// The version label: in the signed base string and in front of the digest.
const VERSION: &str = "v0";

/// `v0:{timestamp}:`: the base string before the body.
pub(crate) fn signed_prefix(timestamp: &[u8]) -> Vec<u8> {
    [VERSION.as_bytes(), b":", timestamp, b":"].concat()
}

/// The digest of a `v0=<hex>` value; `None` without the label (slack_sdk compares the whole
/// string, so a bare digest fails).
pub(crate) fn decode_signature(value: &str) -> Option<Vec<u8>> {
    decode_hex(value.strip_prefix(VERSION)?.strip_prefix('=')?)
}

pub(crate) fn sign(key: &[u8], msg: &Message<'_>) -> Vec<Header> {
    let timestamp = msg.timestamp.to_string();
    let mac = hmac(
        Algo::Sha256,
        key,
        &[&signed_prefix(timestamp.as_bytes()), msg.body],
    );
    vec![
        Header::new(TIMESTAMP_HEADER, timestamp, Role::Timestamp),
        Header::new(
            SIGNATURE_HEADER,
            format!("{VERSION}={}", encode_hex(&mac)),
            Role::Signature,
        ),
    ]
}
