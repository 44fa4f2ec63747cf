//! Response bodies and small response builders.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, X_CONTENT_TYPE_OPTIONS};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

use super::error::ApiError;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub fn empty() -> Body {
    Empty::new().boxed_unsync()
}

pub fn with_type(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut res = Response::new(full(body));
    *res.status_mut() = status;
    // Room for the headers an answer usually gets (CORS, sealing, the request id) without
    // growing the map twice on the way.
    res.headers_mut().reserve(8);
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// JSON answers carry captured strings: never cached, never sniffed into something else.
pub fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut res = with_type(status, "application/json", value.to_string());
    let h = res.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

pub fn text(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    with_type(status, "text/plain; charset=utf-8", text)
}

pub fn no_content() -> Response<Body> {
    let mut res = Response::new(empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    res
}

/// A streamed body fed through a channel (server-sent events). Dropping the receiver side (the
/// client went away) makes the sender's `send` fail, which ends the feeding task.
pub struct ChannelBody(pub mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}

/// Reads a whole small body (an API request's JSON, a page's form), within `limit` bytes and
/// `timeout`.
pub async fn read_small_body(
    body: Incoming,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let collect = Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, collect).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "the request body did not arrive in time",
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("API request bodies are limited to {limit} bytes"),
        )),
        Ok(Err(e)) => Err(ApiError::bad_request(
            "bad_body",
            format!("cannot read the body: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}
