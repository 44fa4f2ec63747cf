//! From what the user pasted to key bytes, per scheme, plus the other ways a sender may have
//! derived the key, which the mismatch hints try.
//!
//! Nothing here may put key material into text: errors are fixed sentences, and hints describe
//! the derivation ("the whsec_ prefix was not base64-decoded"), never the bytes.

use ed25519_dalek::{SigningKey, VerifyingKey};

use super::VerifyError;
use super::crypto::decode_base64;
use super::diagnose::Alt;

const WHSEC: &str = "whsec_";
const WHPK: &str = "whpk_";
const WHSK: &str = "whsk_";

/// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows it.
/// Accepted because it is what most tools export when asked for "the public key" as bytes.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A Standard Webhooks / Svix key: the secret picks the signature version.
pub(crate) enum StandardKey {
    /// `whsec_` + base64 (or bare base64): v1, HMAC-SHA256 with the decoded bytes.
    Hmac(Vec<u8>),
    /// `whpk_` + base64 of the public key, or `whsk_` + base64 of the secret key: v1a, Ed25519.
    Ed25519(VerifyingKey),
}

/// Parses a Standard Webhooks secret.
///
/// Like the reference library, the `whsec_` prefix is optional and the rest is base64-decoded.
/// Surrounding whitespace is dropped first: base64 has no whitespace, and Python's decoder skips
/// it too, so a pasted trailing newline should not turn into an error.
pub(crate) fn standard_webhooks(
    secret: &str,
    scheme: &'static str,
) -> Result<StandardKey, VerifyError> {
    let secret = secret.trim();
    if let Some(encoded) = secret.strip_prefix(WHPK) {
        return public_key(encoded, scheme).map(StandardKey::Ed25519);
    }
    if let Some(encoded) = secret.strip_prefix(WHSK) {
        return public_key_of_secret_key(encoded, scheme).map(StandardKey::Ed25519);
    }
    let encoded = secret.strip_prefix(WHSEC).unwrap_or(secret);
    decode_base64(encoded)
        .map(StandardKey::Hmac)
        .ok_or(VerifyError::MalformedSecret {
            scheme,
            problem: "it is not whsec_ followed by base64 (nor bare base64, nor a whpk_ key)",
        })
}

/// `whpk_` keys: base64 of the raw 32-byte key (the layout our vectors use), or of its DER form.
fn public_key(encoded: &str, scheme: &'static str) -> Result<VerifyingKey, VerifyError> {
    let malformed = |problem| VerifyError::MalformedSecret { scheme, problem };
    let bytes = decode_base64(encoded).ok_or(malformed("the part after whpk_ is not base64"))?;
    let raw = bytes
        .strip_prefix(&ED25519_SPKI_PREFIX[..])
        .unwrap_or(&bytes);
    let raw: [u8; 32] = raw
        .try_into()
        .map_err(|_| malformed("a whpk_ key must decode to a 32-byte Ed25519 public key"))?;
    VerifyingKey::from_bytes(&raw)
        .map_err(|_| malformed("the whpk_ key is not a valid Ed25519 public key"))
}

/// `whsk_` keys: base64 of the 32-byte seed (our vectors' layout) or of seed + public key (the
/// 64-byte libsodium layout). Verifying needs only the public half, so derive it and drop the rest.
fn public_key_of_secret_key(
    encoded: &str,
    scheme: &'static str,
) -> Result<VerifyingKey, VerifyError> {
    let malformed = |problem| VerifyError::MalformedSecret { scheme, problem };
    let bytes = decode_base64(encoded).ok_or(malformed("the part after whsk_ is not base64"))?;
    let (seed, public) = match bytes.len() {
        32 => (&bytes[..], None),
        64 => (&bytes[..32], Some(&bytes[32..])),
        _ => return Err(malformed("a whsk_ key must decode to 32 or 64 bytes")),
    };
    let seed: [u8; 32] = seed.try_into().expect("length checked above");
    let derived = SigningKey::from_bytes(&seed).verifying_key();
    if public.is_some_and(|public| public != derived.as_bytes()) {
        return Err(malformed(
            "the whsk_ key's public half does not belong to its seed",
        ));
    }
    Ok(derived)
}

/// For schemes keyed by the secret string as is (Stripe, GitHub, Slack, Shopify, Twilio, BOTIX,
/// generic): other keys a confused sender, or a confused paste, would have used.
pub(crate) fn alternatives_to_text_key(secret: &str) -> Vec<Alt> {
    let mut alts = Vec::new();
    let trimmed = secret.trim();
    if trimmed != secret && !trimmed.is_empty() {
        alts.push(Alt::new(
            "the signature matches the secret without its surrounding whitespace: the secret was \
             probably pasted with an extra space or newline",
            trimmed.as_bytes().to_vec(),
        ));
    }
    if let Some(encoded) = trimmed.strip_prefix(WHSEC) {
        if let Some(decoded) = decode_base64(encoded) {
            alts.push(Alt::new(
                "signature matches a different secret encoding (the part after whsec_ was \
                 base64-decoded, as Standard Webhooks and Svix do); this scheme uses the whole \
                 secret string as the key",
                decoded,
            ));
        }
        alts.push(Alt::new(
            "signature matches a different secret encoding (the whsec_ prefix was left out of \
             the key); this scheme uses the whole secret string, prefix included",
            encoded.as_bytes().to_vec(),
        ));
    }
    alts
}

/// For Standard Webhooks / Svix v1: keys a sender gets when it skips the base64 decoding.
pub(crate) fn alternatives_to_whsec_key(secret: &str) -> Vec<Alt> {
    let trimmed = secret.trim();
    let mut alts = vec![Alt::new(
        "signature matches a different secret encoding (the whsec_ prefix was not \
         base64-decoded: the sender used the secret text itself as the key)",
        trimmed.as_bytes().to_vec(),
    )];
    if let Some(encoded) = trimmed.strip_prefix(WHSEC) {
        alts.push(Alt::new(
            "signature matches a different secret encoding (the whsec_ prefix was removed but \
             the rest was not base64-decoded)",
            encoded.as_bytes().to_vec(),
        ));
    }
    alts
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR_PUBLIC_KEY: &str = "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=";
    const VECTOR_SECRET_KEY: &str = "whsk_WqCM/pffJoxM68eV2w2e1+SsQtDKUkRRbkASGkulrm0=";

    fn ed25519(secret: &str) -> VerifyingKey {
        match standard_webhooks(secret, "standard-webhooks") {
            Ok(StandardKey::Ed25519(key)) => key,
            Ok(StandardKey::Hmac(_)) => panic!("expected an Ed25519 key"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn whsec_prefix_is_optional() {
        for secret in [
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            " whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
        ] {
            let Ok(StandardKey::Hmac(key)) = standard_webhooks(secret, "svix") else {
                panic!("not an HMAC key");
            };
            assert_eq!(key.len(), 24);
        }
    }

    #[test]
    fn whsk_secret_key_yields_the_matching_public_key() {
        assert_eq!(ed25519(VECTOR_SECRET_KEY), ed25519(VECTOR_PUBLIC_KEY));
    }

    #[test]
    fn whpk_accepts_the_der_form() {
        let raw = decode_base64(&VECTOR_PUBLIC_KEY[5..]).unwrap();
        let der = [&ED25519_SPKI_PREFIX[..], &raw].concat();
        let der = format!(
            "whpk_{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der)
        );
        assert_eq!(ed25519(&der), ed25519(VECTOR_PUBLIC_KEY));
    }

    #[test]
    fn malformed_secrets_are_errors_that_do_not_echo_the_secret() {
        for secret in [
            "whsec_not*base64!",
            "whsec_",
            "whpk_AAAA",
            "whpk_%%%",
            "whsk_AAAA",
            "plain text secret",
        ] {
            let err = match standard_webhooks(secret, "standard-webhooks") {
                Err(err) => err,
                Ok(_) => panic!("{secret:?} was accepted"),
            };
            assert_eq!(err.field(), "secret");
            let message = err.to_string();
            let body = &secret[secret.find('_').map_or(0, |i| i + 1)..];
            assert!(body.is_empty() || !message.contains(body), "{message}");
        }
    }

    #[test]
    fn text_key_alternatives_cover_whitespace_and_whsec() {
        let alts = alternatives_to_text_key(" whsec_aGk= ");
        let keys: Vec<&[u8]> = alts.iter().map(|a| a.bytes.as_slice()).collect();
        assert_eq!(keys, [&b"whsec_aGk="[..], b"hi", b"aGk="]);
        assert!(alternatives_to_text_key("plain").is_empty());
    }
}
