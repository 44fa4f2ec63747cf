//! Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 of the raw body keyed by the app's
//! client secret as text. No timestamp; `X-Shopify-Webhook-Id` carries the delivery id, unsigned.

use super::crypto::{Algo, decode_base64, encode_base64, hmac};
use super::{Header, Message, Role};

/// Shopify's docs spell it `X-Shopify-Hmac-SHA256`; names are case-insensitive, and this is the
/// spelling its deliveries (and our vectors) use.
pub(crate) const HEADER: &str = "X-Shopify-Hmac-Sha256";
pub(crate) const ID_HEADER: &str = "X-Shopify-Webhook-Id";

pub(crate) fn decode_signature(value: &str) -> Option<Vec<u8>> {
    decode_base64(value)
}

pub(crate) fn sign(key: &[u8], msg: &Message<'_>) -> Vec<Header> {
    let mac = hmac(Algo::Sha256, key, &[msg.body]);
    vec![
        Header::new(HEADER, encode_base64(&mac), Role::Signature),
        Header::new(ID_HEADER, msg.id, Role::Id),
    ]
}
