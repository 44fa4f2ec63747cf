//! Generic `hmac-sha256`: the HMAC-SHA256 of the raw body keyed by the secret as text. The
//! verifier looks for it in any header, hex or base64, bare or after a `label=`; the signer sends
//! it as `sha256=<hex>` in [`super::GENERIC_SIGNATURE_HEADER`] (or the header the caller names),
//! the form GitHub made common.

use super::crypto::{Algo, encode_hex, hmac};
use super::{Header, Message, Role};

pub(crate) fn sign(key: &[u8], header: &str, msg: &Message<'_>) -> Vec<Header> {
    let mac = hmac(Algo::Sha256, key, &[msg.body]);
    vec![Header::new(
        header,
        format!("sha256={}", encode_hex(&mac)),
        Role::Signature,
    )]
}
