//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...][,v0=<hex>]`, HMAC-SHA256 over
//! `{t}.{body}` keyed by the endpoint secret *as is* (the `whsec_` prefix included, not decoded).
//! Only `v1` entries are signatures; `v0` (test mode) and any other scheme are ignored.

use super::crypto::{Algo, decode_hex, encode_hex, hmac};
use super::{Header, Message, Role};

pub(crate) const HEADER: &str = "Stripe-Signature";
/// The element that carries the timestamp.
pub(crate) const TIMESTAMP: &str = "t";
/// The only scheme Stripe's libraries trust.
pub(crate) const V1: &str = "v1";

/// `{t}.`, with `t` formatted from the integer: the library signs `"%d.%s"`, so a header's
/// `t=0123` signs `123.`.
pub(crate) fn signed_prefix(timestamp: i64) -> Vec<u8> {
    format!("{timestamp}.").into_bytes()
}

/// The `key=value` elements of one header value, in order, trimmed.
pub(crate) fn parse_items(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .filter_map(|item| item.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// A signature element's value as bytes (lowercase or uppercase hex).
pub(crate) fn decode_signature(text: &str) -> Option<Vec<u8>> {
    decode_hex(text)
}

pub(crate) fn sign(key: &[u8], msg: &Message<'_>) -> Vec<Header> {
    let mac = hmac(
        Algo::Sha256,
        key,
        &[&signed_prefix(msg.timestamp), msg.body],
    );
    let value = format!("{TIMESTAMP}={},{V1}={}", msg.timestamp, encode_hex(&mac));
    vec![Header::new(HEADER, value, Role::Signature)]
}
