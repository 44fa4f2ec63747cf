//! What every HTTP handler shares, below both the JSON API ([`crate::http`]) and the pages
//! ([`crate::pages`]): the connection's facts, response bodies, the error shape, and who the
//! client is (its address, its origin, the public base URLs).

pub mod body;
pub mod client;
pub mod error;
pub mod private;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::ids::RequestId;

use crate::rawhead::HeadTap;

/// Per-connection facts a handler may need.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub tap: Arc<HeadTap>,
    /// Custom-response delays served on this connection so far, in ms: a connection's delays
    /// add up to at most about `MAX_DELAY_MS` (see `http::capture`).
    pub delay_spent_ms: std::sync::atomic::AtomicU64,
}

/// Put in a capture's response extensions for the access log line.
#[derive(Debug, Clone, Copy)]
pub struct Captured {
    pub request_id: RequestId,
    /// The body size as recorded (`body_size`).
    pub size: u64,
}

impl Captured {
    /// Whether the access log line is written (debug level), so whether a capture needs to
    /// carry this at all: the router writes the line, the capture handler fills it in.
    pub fn logged() -> bool {
        tracing::enabled!(tracing::Level::DEBUG)
    }
}

/// Query parameters decoded as application/x-www-form-urlencoded (`+` is a space), in order.
pub fn query_params(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}
