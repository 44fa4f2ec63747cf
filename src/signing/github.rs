//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 of the raw body keyed by the webhook
//! secret as text, and the legacy `X-Hub-Signature: sha1=<hex>` (HMAC-SHA1) GitHub still sends
//! alongside. No timestamp; `X-GitHub-Delivery` carries the delivery id (a GUID), unsigned.

use super::crypto::{Algo, decode_hex, encode_hex, hmac};
use super::{Header, Message, Role};

pub(crate) const SHA256_HEADER: &str = "X-Hub-Signature-256";
pub(crate) const SHA1_HEADER: &str = "X-Hub-Signature";
pub(crate) const DELIVERY_HEADER: &str = "X-GitHub-Delivery";

/// The label in front of the hex digest, which is part of the compared value.
pub(crate) fn label(algo: Algo) -> &'static str {
    match algo {
        Algo::Sha256 => "sha256=",
        Algo::Sha1 => "sha1=",
    }
}

/// The digest in a header value, when it carries the label GitHub sends.
pub(crate) fn decode_signature(algo: Algo, value: &str) -> Option<Vec<u8>> {
    decode_hex(value.strip_prefix(label(algo))?)
}

fn signature(algo: Algo, key: &[u8], body: &[u8]) -> String {
    format!("{}{}", label(algo), encode_hex(&hmac(algo, key, &[body])))
}

/// Delivery id, then the legacy and the current signature, in the order GitHub sends them.
pub(crate) fn sign(key: &[u8], msg: &Message<'_>) -> Vec<Header> {
    vec![
        Header::new(DELIVERY_HEADER, msg.id, Role::Id),
        Header::new(
            SHA1_HEADER,
            signature(Algo::Sha1, key, msg.body),
            Role::Signature,
        ),
        Header::new(
            SHA256_HEADER,
            signature(Algo::Sha256, key, msg.body),
            Role::Signature,
        ),
    ]
}
