//! BOTIX (this project's own scheme): `X-BOTIX-Timestamp` and `X-BOTIX-Signature`, HMAC-SHA256
//! over `{timestamp}.{body}` keyed by the secret as text, lowercase hex. The value is documented
//! as `sha256=<hex>` and shown as bare `<hex>` elsewhere: both are read, the documented form is
//! sent.

use super::crypto::{Algo, decode_hex, encode_hex, hmac};
use super::{Header, Message, Role};

pub(crate) const TIMESTAMP_HEADER: &str = "X-BOTIX-Timestamp";
pub(crate) const SIGNATURE_HEADER: &str = "X-BOTIX-Signature";
const LABEL: &str = "sha256=";

/// `{timestamp}.`: what comes before the body in the signed bytes.
pub(crate) fn signed_prefix(timestamp: &[u8]) -> Vec<u8> {
    [timestamp, b"."].concat()
}

/// The digest of `sha256=<hex>` or of a bare `<hex>`.
pub(crate) fn decode_signature(value: &str) -> Option<Vec<u8>> {
    decode_hex(value.strip_prefix(LABEL).unwrap_or(value))
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
            format!("{LABEL}{}", encode_hex(&mac)),
            Role::Signature,
        ),
    ]
}
