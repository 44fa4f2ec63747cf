//! The primitives: HMAC over byte segments, constant-time tag comparison, Ed25519 signing and
//! verification, and the hex/base64 encoders and decoders the header formats need.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use subtle::ConstantTimeEq;

/// The MAC a scheme uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algo {
    Sha1,
    Sha256,
}

impl Algo {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Algo::Sha1 => "HMAC-SHA1",
            Algo::Sha256 => "HMAC-SHA256",
        }
    }
}

/// HMAC of the concatenation of `parts`. Taking segments instead of one buffer lets the callers
/// sign `prefix + body + suffix` variants of a large body without copying it.
pub(crate) fn hmac(algo: Algo, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        let mut mac = <M as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().to_vec()
    }
    match algo {
        Algo::Sha1 => run::<Hmac<sha1::Sha1>>(key, parts),
        Algo::Sha256 => run::<Hmac<sha2::Sha256>>(key, parts),
    }
}

/// Compares a computed MAC with one taken from a header, in constant time.
///
/// `subtle`'s slice comparison returns false straight away for different lengths (a MAC's length
/// is public), and compares equal-length slices without an early exit. The emptiness check
/// guards against the classic hand-rolled-comparison bug where an empty tag "matches".
pub(crate) fn tags_equal(computed: &[u8], received: &[u8]) -> bool {
    !computed.is_empty() && bool::from(computed.ct_eq(received))
}

/// Index of the first `received` tag equal to `computed`. Rotation means any entry may match; the
/// early exit only reveals which entry matched, which the header already shows.
pub(crate) fn first_match(computed: &[u8], received: &[Vec<u8>]) -> Option<usize> {
    received.iter().position(|tag| tags_equal(computed, tag))
}

/// Pure Ed25519 (RFC 8032) over `message`. `verify_strict` also rejects weak keys and malleable
/// signatures, which a receiver has no reason to accept.
pub(crate) fn ed25519_verifies(key: &VerifyingKey, message: &[u8], signature: &[u8]) -> bool {
    let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    key.verify_strict(message, &Signature::from_bytes(&bytes))
        .is_ok()
}

/// Pure Ed25519 (RFC 8032) signature of `message`: deterministic, so the same key and bytes give
/// the same signature (which is what lets `hookbin send` reproduce the v1a vectors).
pub(crate) fn ed25519_sign(key: &SigningKey, message: &[u8]) -> Vec<u8> {
    key.sign(message).to_bytes().to_vec()
}

/// SHA-256 of `data` (Twilio's `bodySHA256`).
pub(crate) fn sha256(data: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).to_vec()
}

/// Decodes hex in either case; `None` for odd lengths or non-hex characters.
pub(crate) fn decode_hex(text: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

/// Lowercase hex, as every hex-encoding provider sends it.
pub(crate) fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Standard alphabet, padded: what every base64-encoding provider sends.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

const PADDING_OPTIONAL: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const BASE64_STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, PADDING_OPTIONAL);
const BASE64_URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, PADDING_OPTIONAL);

/// Decodes base64, standard alphabet first, then URL-safe, padding optional. Providers send
/// standard padded base64; the leniency is for secrets that users copy without the padding.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    BASE64_STANDARD
        .decode(text)
        .or_else(|_| BASE64_URL_SAFE.decode(text))
        .ok()
        .filter(|bytes| !bytes.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_githubs_published_digest() {
        let mac = hmac(
            Algo::Sha256,
            b"It's a Secret to Everybody",
            &[b"Hello, ", b"World!"],
        );
        assert_eq!(
            decode_hex("757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
            Some(mac)
        );
    }

    #[test]
    fn comparison_rejects_empty_truncated_and_extended_tags() {
        let mac = hmac(Algo::Sha256, b"key", &[b"body"]);
        assert!(tags_equal(&mac, &mac));
        assert!(!tags_equal(&mac, &[]));
        assert!(!tags_equal(&[], &[]));
        assert!(!tags_equal(&mac, &mac[..16]));
        assert!(!tags_equal(&mac, &[mac.clone(), vec![0]].concat()));
        let mut flipped = mac.clone();
        flipped[31] ^= 1;
        assert!(!tags_equal(&mac, &flipped));
    }

    #[test]
    fn first_match_finds_any_rotated_entry() {
        let mac = hmac(Algo::Sha1, b"key", &[b"body"]);
        let entries = vec![vec![1; 20], mac.clone()];
        assert_eq!(first_match(&mac, &entries), Some(1));
        assert_eq!(first_match(&mac, &entries[..1]), None);
    }

    #[test]
    fn encoders_round_trip_through_the_decoders() {
        let bytes = [0x00, 0x0a, 0xff, 0x7f, 0x80];
        assert_eq!(encode_hex(&bytes), "000aff7f80");
        assert_eq!(decode_hex(&encode_hex(&bytes)), Some(bytes.to_vec()));
        assert_eq!(encode_base64(b"hi"), "aGk=");
        assert_eq!(decode_base64(&encode_base64(&bytes)), Some(bytes.to_vec()));
    }

    #[test]
    fn ed25519_signatures_verify_and_are_deterministic() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let sig = ed25519_sign(&key, b"msg");
        assert_eq!(sig, ed25519_sign(&key, b"msg"));
        assert!(ed25519_verifies(&key.verifying_key(), b"msg", &sig));
        assert!(!ed25519_verifies(&key.verifying_key(), b"msg!", &sig));
    }

    #[test]
    fn hex_and_base64_decoding() {
        assert_eq!(decode_hex("0aFf"), Some(vec![0x0a, 0xff]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex(""), None);
        assert_eq!(decode_base64("aGk="), Some(b"hi".to_vec()));
        assert_eq!(decode_base64("aGk"), Some(b"hi".to_vec()));
        assert_eq!(decode_base64("-_8"), Some(vec![0xfb, 0xff]));
        assert_eq!(decode_base64("not base64!"), None);
        assert_eq!(decode_base64(""), None);
    }
}
