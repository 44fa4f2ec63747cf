//! `POST /api/bins/{bin}/requests/{req}/verify`: check a captured request's signature.
//!
//! The secret lives only in this request's memory: it is never stored, never logged (the input's
//! `Debug` redacts it), and never echoed in an answer or an error.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use serde_json::Value;

use super::api::read_json;
use crate::bins;
use crate::clock::now_ms;
use crate::ids::{BinId, RequestId};
use crate::model::StoredRequest;
use crate::state::AppState;
use crate::verify::{self, VerifyInput};
use crate::web::body::{self, Body};
use crate::web::client::capture_base;
use crate::web::error::ApiError;

pub async fn verify(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> Result<hyper::Response<Body>, ApiError> {
    let request = bins::find_request(state, &bin, id).await?;
    let base = capture_base(&state.config, req.headers());
    let value = read_json(state, req).await?.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_json",
            "expected a JSON object with at least \"secret\"",
        )
    })?;
    let input = parse_input(value)?;
    let verification = verify::verify(
        &request,
        &input,
        &signed_url(&base, &request),
        now_ms().div_euclid(1000),
    )
    .map_err(|e| ApiError::unprocessable(e.code(), format!("{}: {e}", e.field())))?;
    let value = serde_json::to_value(&verification)
        .map_err(|e| ApiError::internal("serializing a verification", &e))?;
    Ok(body::json(StatusCode::OK, &value))
}

/// The URL the sender called, as the public sees it: what Twilio signs by default.
fn signed_url(base: &str, request: &StoredRequest) -> String {
    if request.query.is_empty() {
        format!("{base}{}", request.path)
    } else {
        format!("{base}{}?{}", request.path, request.query)
    }
}

/// Reads `{"secret", "scheme"?, "tolerance_seconds"?, "now"?, "url"?}`; wrong types and unknown
/// fields are 422s that name the field (and never contain the secret's value).
fn parse_input(value: Value) -> Result<VerifyInput, ApiError> {
    let bad = |field: &str, what: &str| {
        ApiError::unprocessable("invalid_verify_request", format!("{field}: {what}"))
    };
    let Value::Object(map) = value else {
        return Err(bad("body", "must be a JSON object"));
    };
    let mut input = VerifyInput::default();
    for (key, v) in map {
        match (key.as_str(), v) {
            ("secret", Value::String(s)) => input.secret = s,
            ("secret", _) => return Err(bad("secret", "must be a string")),
            ("scheme", Value::Null) => {}
            ("scheme", Value::String(s)) => input.scheme = Some(s),
            ("scheme", _) => return Err(bad("scheme", "must be a string")),
            ("tolerance_seconds", Value::Null) => {}
            ("tolerance_seconds", v) => {
                input.tolerance_seconds =
                    Some(v.as_u64().ok_or_else(|| {
                        bad("tolerance_seconds", "must be a non-negative integer")
                    })?);
            }
            ("now", Value::Null) => {}
            ("now", v) => {
                input.now = Some(
                    v.as_i64()
                        .ok_or_else(|| bad("now", "must be an integer (unix seconds)"))?,
                );
            }
            ("url", Value::Null) => {}
            ("url", Value::String(s)) => input.url = Some(s),
            ("url", _) => return Err(bad("url", "must be a string")),
            (other, _) => {
                return Err(bad(
                    other,
                    "unknown field (expected secret, scheme, tolerance_seconds, now, url)",
                ));
            }
        }
    }
    if input.secret.is_empty() {
        return Err(bad("secret", "is required"));
    }
    Ok(input)
}
