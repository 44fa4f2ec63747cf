//! From what the user pasted to key bytes, per scheme: the one place that says how a secret
//! becomes a key, for verifying and for signing alike.
//!
//! Nothing here may put key material into text: errors are fixed sentences chosen here, never
//! derived from the secret's content.

use ed25519_dalek::{SigningKey, VerifyingKey};

use super::crypto::decode_base64;

pub(crate) const WHSEC: &str = "whsec_";
pub(crate) const WHPK: &str = "whpk_";
pub(crate) const WHSK: &str = "whsk_";

/// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows it.
/// Accepted because it is what most tools export when asked for "the public key" as bytes.
pub(crate) const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A secret that cannot be used for a scheme. `problem` is fixed text chosen by this module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret cannot be used for {scheme}: {problem}")]
pub struct SecretError {
    pub scheme: &'static str,
    pub problem: &'static str,
}

/// A Standard Webhooks / Svix key: the secret picks the signature version.
pub(crate) enum StandardKey {
    /// `whsec_` + base64 (or bare base64): v1, HMAC-SHA256 with the decoded bytes.
    Hmac(Vec<u8>),
    /// `whpk_` + base64 of the public key: v1a, verifies only.
    Public(VerifyingKey),
    /// `whsk_` + base64 of the secret key: v1a, signs (and verifies with its public half).
    Secret(SigningKey),
}

/// Parses a Standard Webhooks secret.
///
/// Like the reference library, the `whsec_` prefix is optional and the rest is base64-decoded.
/// Surrounding whitespace is dropped first: base64 has no whitespace, and Python's decoder skips
/// it too, so a pasted trailing newline should not turn into an error.
pub(crate) fn standard_webhooks(
    secret: &str,
    scheme: &'static str,
) -> Result<StandardKey, SecretError> {
    let secret = secret.trim();
    if let Some(encoded) = secret.strip_prefix(WHPK) {
        return public_key(encoded, scheme).map(StandardKey::Public);
    }
    if let Some(encoded) = secret.strip_prefix(WHSK) {
        return secret_key(encoded, scheme).map(StandardKey::Secret);
    }
    let encoded = secret.strip_prefix(WHSEC).unwrap_or(secret);
    decode_base64(encoded)
        .map(StandardKey::Hmac)
        .ok_or(SecretError {
            scheme,
            problem: "it is not whsec_ followed by base64 (nor bare base64, nor a whpk_ or whsk_ \
                      key)",
        })
}

/// `whpk_` keys: base64 of the raw 32-byte key (the layout our vectors use), or of its DER form.
fn public_key(encoded: &str, scheme: &'static str) -> Result<VerifyingKey, SecretError> {
    let malformed = |problem| SecretError { scheme, problem };
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
/// 64-byte libsodium layout, whose public half must belong to the seed).
fn secret_key(encoded: &str, scheme: &'static str) -> Result<SigningKey, SecretError> {
    let malformed = |problem| SecretError { scheme, problem };
    let bytes = decode_base64(encoded).ok_or(malformed("the part after whsk_ is not base64"))?;
    let (seed, public) = match bytes.len() {
        32 => (&bytes[..], None),
        64 => (&bytes[..32], Some(&bytes[32..])),
        _ => return Err(malformed("a whsk_ key must decode to 32 or 64 bytes")),
    };
    let seed: [u8; 32] = seed.try_into().expect("length checked above");
    let key = SigningKey::from_bytes(&seed);
    if public.is_some_and(|public| public != key.verifying_key().as_bytes()) {
        return Err(malformed(
            "the whsk_ key's public half does not belong to its seed",
        ));
    }
    Ok(key)
}

/// The key of every other scheme (Stripe, GitHub, Slack, Shopify, Twilio, BOTIX, generic): the
/// secret string as is, as UTF-8 bytes: not trimmed, not decoded, a `whsec_` prefix included.
pub(crate) fn text_key(secret: &str) -> Vec<u8> {
    secret.as_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VECTOR_PUBLIC_KEY: &str = "whpk_0EDWDhJ2ZYIyQ9UqJgYr/kO/7OUGD+UK6hn/OqNPlHc=";
    const VECTOR_SECRET_KEY: &str = "whsk_WqCM/pffJoxM68eV2w2e1+SsQtDKUkRRbkASGkulrm0=";

    fn public(secret: &str) -> VerifyingKey {
        match standard_webhooks(secret, "standard-webhooks") {
            Ok(StandardKey::Public(key)) => key,
            Ok(StandardKey::Secret(key)) => key.verifying_key(),
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
        assert_eq!(public(VECTOR_SECRET_KEY), public(VECTOR_PUBLIC_KEY));
        let Ok(StandardKey::Secret(key)) = standard_webhooks(VECTOR_SECRET_KEY, "x") else {
            panic!("whsk_ is a secret key");
        };
        let long = [key.to_bytes(), *key.verifying_key().as_bytes()].concat();
        let long = format!("whsk_{}", super::super::crypto::encode_base64(&long));
        assert_eq!(public(&long), public(VECTOR_PUBLIC_KEY));
    }

    #[test]
    fn whpk_accepts_the_der_form() {
        let raw = decode_base64(&VECTOR_PUBLIC_KEY[5..]).unwrap();
        let der = [&ED25519_SPKI_PREFIX[..], &raw].concat();
        let der = format!("whpk_{}", super::super::crypto::encode_base64(&der));
        assert_eq!(public(&der), public(VECTOR_PUBLIC_KEY));
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
            let message = err.to_string();
            let body = &secret[secret.find('_').map_or(0, |i| i + 1)..];
            assert!(body.is_empty() || !message.contains(body), "{message}");
        }
    }

    #[test]
    fn text_keys_are_the_secret_verbatim() {
        assert_eq!(text_key(" whsec_aGk= "), b" whsec_aGk= ");
    }
}
