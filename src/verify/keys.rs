//! The other ways a sender may have derived a key from the secret the user pasted, which the
//! mismatch hints try. How a secret *is* turned into a key is [`crate::signing`]'s (one rule for
//! the verifier and the signer); this module only knows the usual mistakes.
//!
//! Nothing here may put key material into text: hints describe the derivation ("the whsec_
//! prefix was not base64-decoded"), never the bytes.

use super::diagnose::Alt;
use crate::signing::crypto::decode_base64;
use crate::signing::keys::WHSEC;

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

    #[test]
    fn text_key_alternatives_cover_whitespace_and_whsec() {
        let alts = alternatives_to_text_key(" whsec_aGk= ");
        let keys: Vec<&[u8]> = alts.iter().map(|a| a.bytes.as_slice()).collect();
        assert_eq!(keys, [&b"whsec_aGk="[..], b"hi", b"aGk="]);
        assert!(alternatives_to_text_key("plain").is_empty());
    }
}
