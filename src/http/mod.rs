//! HTTP routing: match on the path, dispatch to capture, the JSON API, or operations.
//!
//! Routing only; the handlers live in their modules. Captures are matched first: they are the
//! hot path and own everything under `/r/`.

pub mod api;
pub mod body;
pub mod client;
pub mod error;
pub mod replay;
pub mod stream;
pub mod views;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use crate::metrics::Gauges;
use crate::rawhead::HeadTap;
use crate::state::AppState;
use body::Body;
use error::ApiError;

/// Per-connection facts a handler may need.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub tap: Arc<HeadTap>,
}

pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
) -> Response<Body> {
    // Every request takes its head from the tap, captured or not, to keep the tap in step with
    // the connection.
    let raw = conn.tap.take(req.method().as_str(), &req.uri().to_string());
    let path = req.uri().path();
    if let Some(rest) = path.strip_prefix("/r/") {
        let bin = rest.split('/').next().unwrap_or_default().to_owned();
        return crate::capture::capture(&state, req, &conn, raw, &bin).await;
    }
    if path == "/api" || path.starts_with("/api/") {
        return api::route(&state, req, &conn)
            .await
            .unwrap_or_else(ApiError::into_response);
    }
    match (req.method(), path) {
        (&Method::GET | &Method::HEAD, "/healthz") => healthz(&state).await,
        (&Method::GET | &Method::HEAD, "/metrics") => metrics(&state),
        _ => crate::pages::route(&state, req, &conn).await,
    }
}

async fn healthz(state: &AppState) -> Response<Body> {
    match state.store.ping().await {
        Ok(()) => body::text(StatusCode::OK, "ok"),
        Err(e) => {
            tracing::warn!(cause = %e, "health check: the database does not answer");
            body::text(StatusCode::SERVICE_UNAVAILABLE, "database unavailable")
        }
    }
}

fn metrics(state: &AppState) -> Response<Body> {
    let db = state.store.path();
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let gauges = Gauges {
        write_queue_depth: state.store.queue_depth(),
        live_bins: state.store.bin_count(),
        database_bytes: size(db) + size(std::path::Path::new(&wal)),
        open_connections: state.open_connections.load(Ordering::Relaxed),
    };
    body::with_type(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        state.metrics.render(gauges),
    )
}
