//! API errors: the one place that turns a failure into a status and the JSON error shape
//! `{"error": {"code": "...", "message": "..."}}`.
//!
//! Client mistakes get a specific message and are not logged as errors. Internal failures get a
//! generic message; the details go to the log only.

use hyper::header::{ALLOW, HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde_json::json;

use super::body::{self, Body};
use crate::bins;
use crate::storage::StoreError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
    pub allow: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            allow: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unprocessable(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    pub fn bin_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "bin_not_found",
            "no such bin: it never existed, was deleted, or has expired",
        )
    }

    pub fn request_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "request_not_found",
            "no such request in this bin",
        )
    }

    pub fn route_not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
    }

    pub fn method_not_allowed(allow: &'static str) -> Self {
        Self {
            allow: Some(allow),
            ..Self::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!("this endpoint accepts {allow}"),
            )
        }
    }

    pub fn unavailable(code: &'static str, message: impl Into<String>, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
        }
    }

    /// `507 storage_full`: the database's disk is full or `--max-db-bytes` is reached. Nothing
    /// was recorded; the reaper or a delete makes room, so a sender may retry later.
    pub fn storage_full() -> Self {
        Self {
            retry_after: Some(STORAGE_FULL_RETRY_SECS),
            ..Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "storage_full",
                "the server has no room to store this request; nothing was recorded, retry later",
            )
        }
    }

    /// A failure that is ours, not the client's: logged, answered generically.
    pub fn internal(context: &str, err: &dyn std::fmt::Display) -> Self {
        tracing::error!(cause = %err, "{context}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the server failed to complete the request; see its log",
        )
    }

    pub fn into_response(self) -> Response<Body> {
        let value = json!({"error": {"code": self.code, "message": self.message}});
        let mut res = body::json(self.status, &value);
        add_retry_and_allow(&mut res, self.retry_after, self.allow);
        res
    }
}

/// The headers an error may carry, for JSON and HTML errors alike.
pub fn add_retry_and_allow<B>(
    res: &mut Response<B>,
    retry_after: Option<u64>,
    allow: Option<&'static str>,
) {
    if let Some(secs) = retry_after {
        res.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(allow) = allow {
        res.headers_mut()
            .insert(ALLOW, HeaderValue::from_static(allow));
    }
}

/// `Retry-After` of a 507: about one reaper pass at the default `--reap-interval`.
const STORAGE_FULL_RETRY_SECS: u64 = 60;

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::QueueFull => ApiError::unavailable(
                "write_queue_full",
                "the server is saving other requests; retry shortly",
                1,
            ),
            StoreError::Full(_) => ApiError::storage_full(),
            StoreError::Unavailable(cause) => {
                tracing::warn!(%cause, "database unavailable: answering 503");
                ApiError::unavailable(
                    "database_unavailable",
                    "the database cannot be reached; nothing was stored; retry shortly",
                    1,
                )
            }
            StoreError::Closed => {
                ApiError::unavailable("shutting_down", "the server is shutting down", 5)
            }
            other => ApiError::internal("storage failure", &other),
        }
    }
}

impl From<bins::Error> for ApiError {
    fn from(e: bins::Error) -> Self {
        match e {
            bins::Error::BinNotFound => ApiError::bin_not_found(),
            bins::Error::RequestNotFound => ApiError::request_not_found(),
            bins::Error::TooManyBins { retry_after, .. } => ApiError {
                retry_after: Some(retry_after),
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_bins",
                    e.to_string(),
                )
            },
            bins::Error::InvalidQuery(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.to_string())
            }
            // The same answer as a full disk: to the client, there is no room either way.
            bins::Error::DbQuotaReached { .. } => ApiError::storage_full(),
            bins::Error::Store(e) => e.into(),
        }
    }
}
