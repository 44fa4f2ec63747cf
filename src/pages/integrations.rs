//! The two request-detail features whose engines live in other modules: copy-as-curl
//! (`crate::render::curl`) and signature verification (`crate::verify`), in the shapes the
//! pages show.

use crate::model::StoredRequest;

/// The request as one shell command line, aimed at `target` (a base URL such as
/// `http://localhost:3000`) when given, else at the bin URL under `original_base`; `Err` is a
/// sentence for the page (a target that is not an absolute http(s) URL, say).
pub fn curl_for(
    req: &StoredRequest,
    original_base: &str,
    target: Option<&str>,
) -> Result<String, String> {
    crate::render::curl::curl_command(req, original_base, target).map_err(|e| e.to_string())
}

/// The answer of a signature check, as the page shows it (the fields of
/// `crate::verify::Verification` that a person reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub scheme: Option<String>,
    pub valid: bool,
    /// The signature is right, but the timestamp is outside the tolerance: amber, not red.
    pub stale: bool,
    pub timestamp_ok: Option<bool>,
    /// Plain words: the verdict and, on failure, the likely cause.
    pub detail: String,
    /// What the signature covers, e.g. `"1749999989." followed by the raw body (482 bytes)`.
    pub signed: Option<String>,
}

/// Checks the request's signature with `secret` (never stored or logged) under `scheme`
/// (detected from the headers when `None`). `signed_url` is the URL the sender called as the
/// public sees it (what Twilio signs). `Err` is a message about unusable input (an unknown
/// scheme, a malformed secret).
pub fn verify_for(
    req: &StoredRequest,
    secret: &str,
    scheme: Option<&str>,
    signed_url: &str,
    when: VerifyWhen,
) -> Result<Verification, String> {
    let input = crate::verify::VerifyInput {
        secret: secret.to_owned(),
        scheme: scheme.map(str::to_owned),
        tolerance_seconds: when.tolerance_seconds,
        // As of capture time: judged by when it arrived, so an old capture still checks out.
        now: when.at_capture.then(|| req.received_at.div_euclid(1000)),
        ..Default::default()
    };
    let now = crate::clock::now_ms().div_euclid(1000);
    crate::verify::verify(req, &input, signed_url, now)
        .map(|v| Verification {
            stale: v.reason == crate::verify::Reason::TimestampOutOfTolerance,
            scheme: v.scheme,
            valid: v.valid,
            timestamp_ok: v.timestamp_ok,
            detail: v.detail,
            signed: v.signed,
        })
        .map_err(|e| format!("{}: {e}", e.field()))
}

/// When a timestamped signature is judged: the replay window (default
/// [`crate::verify::DEFAULT_TOLERANCE_SECONDS`]) and the clock it is judged by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyWhen {
    pub tolerance_seconds: Option<u64>,
    /// Judge the timestamp against the moment of capture, not now.
    pub at_capture: bool,
}

/// Schemes offered in the verify form (`""` = detect from the headers); API.md's list.
pub const VERIFY_SCHEMES: [&str; 9] = crate::verify::Scheme::NAMES;
