//! Standard Webhooks (v1 HMAC-SHA256, v1a Ed25519) and Svix, which is the same algorithm under
//! `svix-*` header names.
//!
//! Signed bytes: `{id}.{timestamp}.{body}`, id and timestamp exactly as sent (the timestamp in
//! integer Unix seconds). The signature header is a space-separated list of `version,base64`
//! entries: `v1` for an HMAC-SHA256 with the base64-decoded `whsec_` key, `v1a` for an Ed25519
//! signature (64 bytes) by the `whsk_` key.

use super::crypto::{Algo, decode_base64, ed25519_sign, encode_base64, hmac};
use super::keys::StandardKey;
use super::{Header, Message, Role, Scheme};

/// The three header names of one flavour.
pub(crate) struct Names {
    pub id: &'static str,
    pub timestamp: &'static str,
    pub signature: &'static str,
}

pub(crate) const WEBHOOK: Names = Names {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};

pub(crate) const SVIX: Names = Names {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

impl Names {
    pub(crate) fn all(&self) -> [&'static str; 3] {
        [self.id, self.timestamp, self.signature]
    }

    /// The names a provider of `scheme` sends.
    pub(crate) fn of(scheme: Scheme) -> &'static Names {
        match scheme {
            Scheme::Svix => &SVIX,
            _ => &WEBHOOK,
        }
    }
}

/// The entry label of an HMAC signature.
pub(crate) const V1: &str = "v1";
/// The entry label of an Ed25519 signature.
pub(crate) const V1A: &str = "v1a";

/// `{id}.{timestamp}.`: what comes before the body in the signed bytes.
pub(crate) fn signed_prefix(id: &[u8], timestamp: &[u8]) -> Vec<u8> {
    [id, b".", timestamp, b"."].concat()
}

/// One `version,signature` entry of the signature header.
pub(crate) struct Entry {
    pub version: String,
    /// The decoded signature; `None` when it is not base64.
    pub signature: Option<Vec<u8>>,
}

/// The entries of one signature header value (space-separated; an entry without a comma is
/// skipped, as it can match nothing).
pub(crate) fn parse_entries(value: &str) -> Vec<Entry> {
    value
        .split_ascii_whitespace()
        .filter_map(|entry| entry.split_once(','))
        .map(|(version, signature)| Entry {
            version: version.to_owned(),
            signature: decode_base64(signature),
        })
        .collect()
}

fn format_entry(version: &str, signature: &[u8]) -> String {
    format!("{version},{}", encode_base64(signature))
}

/// The id, timestamp and signature headers, in that order. `key` is never `Public`: a public
/// key cannot sign, which [`super::Signer::new`] rejects.
pub(crate) fn sign(scheme: Scheme, key: &StandardKey, msg: &Message<'_>) -> Vec<Header> {
    let names = Names::of(scheme);
    let timestamp = msg.timestamp.to_string();
    let prefix = signed_prefix(msg.id.as_bytes(), timestamp.as_bytes());
    let entry = match key {
        StandardKey::Hmac(key) => format_entry(V1, &hmac(Algo::Sha256, key, &[&prefix, msg.body])),
        StandardKey::Secret(key) => {
            format_entry(V1A, &ed25519_sign(key, &[&prefix, msg.body].concat()))
        }
        StandardKey::Public(_) => unreachable!("Signer::new rejects public keys"),
    };
    vec![
        Header::new(names.id, msg.id, Role::Id),
        Header::new(names.timestamp, timestamp, Role::Timestamp),
        Header::new(names.signature, entry, Role::Signature),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_skip_what_has_no_comma() {
        let entries = parse_entries("v1,aGk= junk v1a,!!! v2,aGk=");
        let seen: Vec<(&str, Option<&[u8]>)> = entries
            .iter()
            .map(|e| (e.version.as_str(), e.signature.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                ("v1", Some(&b"hi"[..])),
                ("v1a", None),
                ("v2", Some(&b"hi"[..]))
            ]
        );
    }
}
