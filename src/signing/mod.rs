//! The signing rules of every scheme, written once: which headers carry what, what bytes are
//! signed, how a secret becomes a key, how a MAC is encoded (hex or base64, and its label:
//! `v1,`, `t=…,v1=`, `sha256=`, `v0=`), and how timestamps are written.
//!
//! Two users read these rules, and neither keeps a copy:
//! - [`crate::verify`] parses captured headers with them and recomputes the signature (adding
//!   its diagnostics on top);
//! - `hookbin send` and `hookbin probe` ([`crate::send`]) produce headers with [`Signer`].
//!
//! So a rule changed here changes both; `tests/it/signing.rs` signs with [`Signer`] and checks
//! the result with the verifier for every scheme and key form. Why a module of its own rather than a part of
//! `verify`: the signer needs none of the verifier's diagnostics, and the verifier none of the
//! signer's header assembly; both depend on this, and this depends on neither.
//!
//! Pure code: no I/O, no clock, no randomness (the caller passes the id and the timestamp, so
//! the same inputs give the same bytes). The secret and its keys never appear in an error or a
//! `Debug` string.

pub(crate) mod botix;
pub(crate) mod crypto;
pub(crate) mod generic;
pub(crate) mod github;
pub(crate) mod keys;
mod scheme;
pub(crate) mod shopify;
pub(crate) mod slack;
pub(crate) mod standard;
pub(crate) mod stripe;
pub(crate) mod twilio;

use std::fmt;

pub use keys::SecretError;
pub use scheme::{Scheme, Window};

use keys::StandardKey;

/// What a header is for; `hookbin probe` removes the signature headers in one of its cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The event or delivery id (signed by Standard Webhooks and Svix, informational elsewhere).
    Id,
    /// A timestamp header of its own (Stripe's is inside its signature header).
    Timestamp,
    /// A header that carries a signature.
    Signature,
}

/// One header a scheme sends, spelled as the provider spells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
    pub role: Role,
}

impl Header {
    fn new(name: &str, value: impl Into<String>, role: Role) -> Header {
        Header {
            name: name.to_owned(),
            value: value.into(),
            role,
        }
    }
}

/// Everything a signature may cover besides the key. Schemes use what they sign and ignore the
/// rest (GitHub signs only the body; Twilio the URL and the form parameters).
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// The event or delivery id, for the schemes that carry one ([`id_header`]). Standard
    /// Webhooks forbids a `.` in it (it separates the signed parts); the caller checks.
    pub id: &'a str,
    /// Unix seconds, written as an integer.
    pub timestamp: i64,
    /// The raw body bytes, exactly as they will be sent.
    pub body: &'a [u8],
    /// Twilio: the URL the request goes to, which is what Twilio signs.
    pub url: &'a str,
    /// The request's Content-Type, if any (Twilio signs form parameters, and only of forms).
    pub content_type: Option<&'a str>,
}

/// Where the generic `hmac-sha256` scheme sends its `sha256=<hex>` signature by default.
pub const GENERIC_SIGNATURE_HEADER: &str = "X-Signature";

/// The header that carries a scheme's event or delivery id, if the scheme has one.
pub fn id_header(scheme: Scheme) -> Option<&'static str> {
    match scheme {
        Scheme::StandardWebhooks | Scheme::Svix => Some(standard::Names::of(scheme).id),
        Scheme::Github => Some(github::DELIVERY_HEADER),
        Scheme::Shopify => Some(shopify::ID_HEADER),
        Scheme::Stripe | Scheme::Slack | Scheme::Twilio | Scheme::Botix | Scheme::HmacSha256 => {
            None
        }
    }
}

/// Whether a scheme's signature covers the body of a request with this Content-Type. Only
/// Twilio leaves a body out: it signs form parameters, and nothing of another body (its
/// `bodySHA256` query parameter would have to be in the URL already).
pub fn covers_body(scheme: Scheme, content_type: Option<&str>) -> bool {
    scheme != Scheme::Twilio || twilio::is_form(content_type)
}

/// A key ready to sign with, for one scheme.
pub struct Signer {
    scheme: Scheme,
    key: Key,
    /// The generic scheme's header name.
    header: String,
}

enum Key {
    /// Standard Webhooks and Svix: a decoded `whsec_` key (HMAC) or a `whsk_` key (Ed25519).
    Standard(Box<StandardKey>),
    /// Every other scheme: the secret's UTF-8 bytes.
    Text(Vec<u8>),
}

// Hand-written so that no `{:?}` can print key material.
impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("scheme", &self.scheme)
            .field("key", &"<redacted>")
            .field("header", &self.header)
            .finish()
    }
}

impl Signer {
    /// Parses `secret` for `scheme`, as the verifier does. Standard Webhooks and Svix take a
    /// `whsec_` secret (v1, HMAC) or a `whsk_` secret key (v1a, Ed25519); a `whpk_` public key
    /// cannot sign. Every other scheme uses the secret text as is.
    pub fn new(scheme: Scheme, secret: &str) -> Result<Signer, SecretError> {
        let error = |problem| SecretError {
            scheme: scheme.name(),
            problem,
        };
        if secret.is_empty() {
            return Err(error("the secret is empty"));
        }
        let key = match scheme {
            Scheme::StandardWebhooks | Scheme::Svix => {
                match keys::standard_webhooks(secret, scheme.name())? {
                    StandardKey::Public(_) => {
                        return Err(error(
                            "a whpk_ public key can only verify; signing v1a needs the whsk_ \
                             secret key",
                        ));
                    }
                    key => Key::Standard(Box::new(key)),
                }
            }
            _ => Key::Text(keys::text_key(secret)),
        };
        Ok(Signer {
            scheme,
            key,
            header: GENERIC_SIGNATURE_HEADER.to_owned(),
        })
    }

    /// The generic scheme sends its signature in `name` instead of [`GENERIC_SIGNATURE_HEADER`]
    /// (other schemes keep their providers' names).
    pub fn with_signature_header(mut self, name: &str) -> Signer {
        name.clone_into(&mut self.header);
        self
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The headers the provider would send for `msg`, in the provider's order.
    pub fn sign(&self, msg: &Message<'_>) -> Vec<Header> {
        match (&self.key, self.scheme) {
            (Key::Standard(key), scheme) => standard::sign(scheme, key, msg),
            (Key::Text(key), Scheme::Stripe) => stripe::sign(key, msg),
            (Key::Text(key), Scheme::Github) => github::sign(key, msg),
            (Key::Text(key), Scheme::Slack) => slack::sign(key, msg),
            (Key::Text(key), Scheme::Shopify) => shopify::sign(key, msg),
            (Key::Text(key), Scheme::Twilio) => twilio::sign(key, msg),
            (Key::Text(key), Scheme::Botix) => botix::sign(key, msg),
            (Key::Text(key), Scheme::HmacSha256) => generic::sign(key, &self.header, msg),
            (Key::Text(_), Scheme::StandardWebhooks | Scheme::Svix) => {
                unreachable!("Signer::new gives these schemes a standard key")
            }
        }
    }
}

/// Another secret of the same form as `secret` (for `hookbin probe`'s wrong-secret case): a
/// `whsec_`/`whsk_` key of the same decoded length, or text of the same length, prefix
/// (`whsec_`, `bx_`, anything up to the last `_`) and alphabet (hex stays hex). `random` fills
/// a buffer with random bytes. The result always differs from `secret`.
pub fn lookalike_secret(secret: &str, mut random: impl FnMut(&mut [u8])) -> String {
    let secret = secret.trim();
    for prefix in [keys::WHSEC, keys::WHSK] {
        if let Some(encoded) = secret.strip_prefix(prefix)
            && let Some(key) = crypto::decode_base64(encoded)
        {
            let mut other = vec![0; key.len()];
            loop {
                random(&mut other);
                if other != key {
                    break;
                }
            }
            // A 64-byte whsk_ key's second half must be the public key of the first.
            if prefix == keys::WHSK {
                let seed: [u8; 32] = other[..32].try_into().expect("at least 32 bytes");
                let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
                other.truncate(32);
                if key.len() == 64 {
                    other.extend_from_slice(public.as_bytes());
                }
            }
            return format!("{prefix}{}", crypto::encode_base64(&other));
        }
    }
    let (prefix, rest) = match secret.rfind('_') {
        Some(i) => secret.split_at(i + 1),
        None => ("", secret),
    };
    let hex = !rest.is_empty() && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let alphabet: &[u8] = if hex {
        b"0123456789abcdef"
    } else {
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    };
    let len = rest.chars().count().max(1);
    loop {
        let mut bytes = vec![0; len];
        random(&mut bytes);
        let other: String = bytes
            .iter()
            .map(|b| char::from(alphabet[usize::from(*b) % alphabet.len()]))
            .collect();
        if other != rest {
            return format!("{prefix}{other}");
        }
    }
}
