//! Webhook signature verification: does a captured request carry a valid signature for the
//! secret the user pasted, and if not, why not?
//!
//! This backs `POST /api/bins/{bin}/requests/{req}/verify` (API.md, "Verification:"). It knows the
//! schemes described in `shared/docs/signatures.md` (Standard Webhooks v1 and v1a, Svix, Stripe,
//! GitHub, Slack, Shopify, Twilio, BOTIX) plus a generic "HMAC-SHA256 of the body in some header"
//! check, and it can tell the scheme from the headers when the caller does not name one.
//!
//! Ground rules, all of them from the reference document:
//! - Signatures are computed over the stored raw bytes only, never a re-serialised body.
//! - MACs are compared in constant time (`subtle`); Ed25519 uses `verify_strict`.
//! - The verdict (`valid`, `reason`) follows the providers' own libraries, which is what the vector
//!   file checks. `detail` explains it in plain words and, on failure, names the likely cause when
//!   one of a few well-known mistakes (trailing newline, wrong secret encoding, a stripped prefix,
//!   a proxy-rewritten URL...) reproduces the signature.
//! - The secret, and every key derived from it, never appears in `detail`, `signed`, an error or a
//!   `Debug` string. The hints only ever describe *how* a key was derived.
//!
//! The rules themselves (header names and formats, signed bytes, key derivation) are
//! [`crate::signing`]'s, shared with `hookbin send`; this module parses captured requests with
//! them and explains what does not match.
//!
//! This is pure code: no I/O, no logging, no clock (the caller passes the wall clock).

mod detect;
mod diagnose;
mod freshness;
mod keys;
mod schemes;
mod text;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::StoredRequest;

pub use crate::signing::Scheme;
use crate::signing::SecretError;

/// Replay window used when the caller gives none (every scheme's reference library uses 5 minutes).
pub const DEFAULT_TOLERANCE_SECONDS: u64 = 300;

/// What the caller asks for, parsed by the server from the POST body.
#[derive(Clone, Default, Deserialize)]
pub struct VerifyInput {
    /// Exactly what the user pasted: `whsec_...`, `whpk_...`, a signing secret, an auth token.
    pub secret: String,
    /// One of [`Scheme::NAMES`] (or the alias `standard-webhooks-v1a`); `None` or blank = detect.
    pub scheme: Option<String>,
    /// Replay window in seconds, inclusive; default [`DEFAULT_TOLERANCE_SECONDS`].
    pub tolerance_seconds: Option<u64>,
    /// Unix seconds to judge the timestamp against, instead of the wall clock.
    pub now: Option<i64>,
    /// Twilio only: the URL the provider signed. Default: the bin URL as captured.
    pub url: Option<String>,
}

// Hand-written so that a `{:?}` in a log line or a test failure can never print the secret.
impl fmt::Debug for VerifyInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifyInput")
            .field("secret", &"<redacted>")
            .field("scheme", &self.scheme)
            .field("tolerance_seconds", &self.tolerance_seconds)
            .field("now", &self.now)
            .field("url", &self.url)
            .finish()
    }
}

/// The answer, serialised as the API's Verification object. `scheme`, `valid`, `timestamp_ok` and
/// `detail` are the contract; `reason`, `signed` and `signature_header` are additions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// The scheme that was checked (canonical name), or `None` when none could be detected.
    pub scheme: Option<String>,
    pub valid: bool,
    /// `None` when the scheme signs no timestamp or the timestamp header is missing.
    pub timestamp_ok: Option<bool>,
    /// Plain words: what was signed, the verdict and, on failure, the likely cause.
    pub detail: String,
    /// Machine-readable verdict.
    pub reason: Reason,
    /// What the signature covers for this request, e.g. `"1749999989." followed by the raw body
    /// (482 bytes)`. `None` when headers needed to build it are missing.
    pub signed: Option<String>,
    /// The header that carries the signature, spelled as the sender sent it.
    pub signature_header: Option<String>,
}

/// Why a request is (not) valid. Serialised in snake_case, as the vector file spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Ok,
    /// No signature made with this secret over these bytes (including "only untrusted entries").
    SignatureMismatch,
    /// The signature is right but the timestamp is outside the tolerance.
    TimestampOutOfTolerance,
    /// A header the scheme needs is absent (or, for detection, no known signature header at all).
    MissingHeader,
    /// A header is present but unreadable, e.g. a timestamp that is not an integer.
    MalformedHeader,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Ok => "ok",
            Reason::SignatureMismatch => "signature_mismatch",
            Reason::TimestampOutOfTolerance => "timestamp_out_of_tolerance",
            Reason::MissingHeader => "missing_header",
            Reason::MalformedHeader => "malformed_header",
        }
    }
}

/// Bad *input* (as opposed to a request that fails verification, which is a normal answer).
/// The server answers 422 naming [`VerifyError::field`]. No variant carries the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    #[error("unknown scheme {name:?}; expected one of: {}", Scheme::NAMES.join(", "))]
    UnknownScheme { name: String },
    /// `problem` is fixed text chosen by this module, never derived from the secret's content.
    #[error("secret cannot be used for {scheme}: {problem}")]
    MalformedSecret {
        scheme: &'static str,
        problem: &'static str,
    },
    #[error("url must be an absolute http:// or https:// URL with a host")]
    InvalidUrl,
}

impl From<SecretError> for VerifyError {
    fn from(e: SecretError) -> Self {
        VerifyError::MalformedSecret {
            scheme: e.scheme,
            problem: e.problem,
        }
    }
}

impl VerifyError {
    /// The request field at fault, for the 422 error message.
    pub fn field(&self) -> &'static str {
        match self {
            VerifyError::UnknownScheme { .. } => "scheme",
            VerifyError::MalformedSecret { .. } => "secret",
            VerifyError::InvalidUrl => "url",
        }
    }

    /// A snake_case error code for the API's error object.
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::UnknownScheme { .. } => "unknown_scheme",
            VerifyError::MalformedSecret { .. } => "malformed_secret",
            VerifyError::InvalidUrl => "invalid_url",
        }
    }
}

/// Verifies `req` against `input`.
///
/// `default_url` is the URL Twilio is assumed to have signed when `input.url` is absent: the bin's
/// public URL as captured, query included. `wall_clock_now` (Unix seconds) is the clock for the
/// freshness check unless `input.now` overrides it.
pub fn verify(
    req: &StoredRequest,
    input: &VerifyInput,
    default_url: &str,
    wall_clock_now: i64,
) -> Result<Verification, VerifyError> {
    let requested = requested_scheme(input.scheme.as_deref())?;
    if input.secret.is_empty() {
        return Err(VerifyError::MalformedSecret {
            scheme: requested.map_or("any scheme", Scheme::name),
            problem: "the secret is empty",
        });
    }
    let ctx = schemes::Context {
        req,
        secret: &input.secret,
        clock: freshness::Clock {
            now: input.now.unwrap_or(wall_clock_now),
            now_given: input.now.is_some(),
            tolerance: input.tolerance_seconds.unwrap_or(DEFAULT_TOLERANCE_SECONDS),
            arrived: req.received_at.div_euclid(1000),
        },
        url: input.url.as_deref().unwrap_or(default_url),
        url_given: input.url.is_some(),
        default_url,
    };
    let verification = match requested {
        Some(scheme) => schemes::run(scheme, &ctx)?.finish(Some(scheme), None),
        None => match detect::detect(&req.headers) {
            Some(found) => {
                let note = format!(
                    "Scheme {} detected from header {}. ",
                    found.scheme.name(),
                    found.header
                );
                schemes::run(found.scheme, &ctx)?.finish(Some(found.scheme), Some(note))
            }
            None => schemes::generic::verify_undetected(&ctx),
        },
    };
    Ok(note_truncation(req, verification))
}

/// A body cut at `--max-body-bytes` cannot match a signature over the whole body: say so, rather
/// than leave the user hunting for a wrong secret.
fn note_truncation(req: &StoredRequest, mut verification: Verification) -> Verification {
    if req.body_truncated && verification.reason == Reason::SignatureMismatch {
        verification.detail.push_str(&format!(
            " Note: the body was truncated on capture ({} of {} bytes stored), so a signature \
             over the whole body cannot match.",
            req.body.len(),
            req.body_size
        ));
    }
    verification
}

/// Parses the optional scheme name; a blank name means "detect" (a form's "auto" choice).
fn requested_scheme(name: Option<&str>) -> Result<Option<Scheme>, VerifyError> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    Scheme::from_name(name)
        .map(Some)
        .ok_or_else(|| VerifyError::UnknownScheme {
            name: text::shorten(name, 64),
        })
}

#[cfg(test)]
mod tests;
