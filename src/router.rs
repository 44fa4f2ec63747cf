//! The front door: every request the server reads comes here first. It writes the access log
//! line, takes the client's in-flight slot, and dispatches on the path to capture (`/r/`), the
//! JSON API (`/api`), the operator's endpoints (`/healthz`, `/metrics`) in [`crate::http`], or
//! the pages ([`crate::pages`]). Routing only; the handlers live in their modules, and the two
//! sides never call each other.
//!
//! Captures are matched first: they are the hot path and own everything under `/r/`. The
//! access log line is debug level: one per request, with the method, route kind, bin id,
//! status, captured body size and latency. Never the path, query, headers or body: a capture
//! URL is a bin's only secret, and webhooks carry tokens.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use crate::http::{self, capture};
use crate::limits::Slot;
use crate::state::AppState;
use crate::web::body::Body;
use crate::web::error::ApiError;
use crate::web::{Captured, ConnInfo, client};

/// What kind of endpoint a path is, for the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Capture,
    Stream,
    Api,
    Operations,
    Page,
}

impl Route {
    fn of(path: &str) -> Route {
        if path.starts_with("/r/") {
            Route::Capture
        } else if path.starts_with("/api/") && path.ends_with("/stream") {
            Route::Stream
        } else if path == "/api" || path.starts_with("/api/") {
            Route::Api
        } else if path == "/healthz" || path == "/metrics" {
            Route::Operations
        } else {
            Route::Page
        }
    }

    fn name(self) -> &'static str {
        match self {
            Route::Capture => "capture",
            Route::Stream => "stream",
            Route::Api => "api",
            Route::Operations => "operations",
            Route::Page => "page",
        }
    }
}

/// The bin a path is about (`/r/{bin}`, `/api/bins/{bin}`, `/bins/{bin}`), if it is a
/// well-formed bin id; anything else a client put there stays out of the log.
fn bin_of(path: &str) -> Option<&str> {
    let rest = path
        .strip_prefix("/r/")
        .or_else(|| path.strip_prefix("/api/bins/"))
        .or_else(|| path.strip_prefix("/bins/"))?;
    let bin = rest.split('/').next()?;
    crate::ids::is_valid_bin_id(bin).then_some(bin)
}

pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
) -> Response<Body> {
    // The access line is debug level (trace for operations): with that off, as by default,
    // the capture path pays nothing for it.
    if !Captured::logged() {
        return dispatch(state, req, conn).await;
    }
    let started = Instant::now();
    let method = req.method().clone();
    let route = Route::of(req.uri().path());
    let bin = bin_of(req.uri().path()).map(str::to_owned);
    let res = dispatch(state, req, conn).await;
    access_log(&method, route, bin.as_deref(), &res, started.elapsed());
    res
}

/// Every response hookbin writes says `X-Content-Type-Options: nosniff`: plain text, event
/// streams and errors too, so a browser never reads one as something else. Set here on every
/// answer but those under `/r/`, which `capture` seals itself ([`capture::seal`] includes it).
fn nosniff(mut res: Response<Body>) -> Response<Body> {
    res.headers_mut()
        .entry(hyper::header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(hyper::header::HeaderValue::from_static("nosniff"));
    res
}

fn access_log(
    method: &Method,
    route: Route,
    bin: Option<&str>,
    res: &Response<Body>,
    took: Duration,
) {
    let status = res.status().as_u16();
    let latency_ms = (took.as_secs_f64() * 1e6).round() / 1e3;
    if route == Route::Operations {
        // Health probes and scrapes every few seconds would drown everything else.
        tracing::trace!(method = %method, route = route.name(), status, latency_ms, "request");
        return;
    }
    let captured = res.extensions().get::<Captured>();
    tracing::debug!(
        method = %method,
        route = route.name(),
        bin_id = bin,
        request_id = captured.map(|c| c.request_id.get()),
        size = captured.map(|c| c.size),
        status,
        latency_ms,
        "request"
    );
}

/// The request target as the client sent it: an origin-form target (`/r/x?q`) as hyper keeps
/// it, without formatting a copy for every request; anything else (absolute form) formatted.
fn request_target(uri: &hyper::Uri) -> std::borrow::Cow<'_, str> {
    match uri.path_and_query() {
        Some(pq) if uri.scheme().is_none() && uri.authority().is_none() => pq.as_str().into(),
        _ => uri.to_string().into(),
    }
}

async fn dispatch(
    state: Arc<AppState>,
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
) -> Response<Body> {
    // Every request takes its head from the tap, captured or not, to keep the tap in step with
    // the connection.
    let raw = conn
        .tap
        .take(req.method().as_str(), &request_target(req.uri()));
    // Captures first: they are the hot path and own everything under `/r/` (the inspector's
    // host refusing them is in `capture`, which knows the bin). Not through `nosniff`: every
    // answer there is sealed ([`capture::seal`]), which says `nosniff` too.
    if req.uri().path().starts_with("/r/") {
        let ip = client::client_ip(&state.config, conn.peer, req.headers());
        let Some(_in_flight) = state.clients.take(ip, Slot::Request) else {
            return capture::refused(too_many_requests(&state));
        };
        return capture::capture(&state, req, &conn, raw).await;
    }
    drop(raw);
    nosniff(other_route(state, req, conn).await)
}

/// The answer to a client already at its cap of requests in flight.
fn too_many_requests(state: &AppState) -> Response<Body> {
    state
        .metrics
        .client_limit_rejections
        .fetch_add(1, Ordering::Relaxed);
    ApiError {
        retry_after: Some(1),
        ..ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            format!(
                "this client address already has {} requests in progress; nothing was recorded",
                state.clients.cap(Slot::Request)
            ),
        )
    }
    .into_response()
}

/// Everything but captures.
async fn other_route(
    state: Arc<AppState>,
    req: Request<Incoming>,
    conn: Arc<ConnInfo>,
) -> Response<Body> {
    let path = req.uri().path();
    // With `--capture-url`, the capture host serves captures and the health check only.
    if client::is_capture_host(&state.config, req.headers()) == Some(true) && path != "/healthz" {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "capture_host_only",
            "this host only receives captures (/r/{bin}); the inspector and the API are on \
             another host",
        )
        .into_response();
    }
    // Requests in progress per client. Streams have a cap of their own (their handler returns at
    // once; the stream holds its slot while open), and probes of the operator are never refused.
    let _in_flight = if matches!(path, "/healthz" | "/metrics") || Route::of(path) == Route::Stream
    {
        None
    } else {
        let ip = client::client_ip(&state.config, conn.peer, req.headers());
        match state.clients.take(ip, Slot::Request) {
            Some(slot) => Some(slot),
            None => return too_many_requests(&state),
        }
    };
    if path == "/api" || path.starts_with("/api/") {
        return http::api::route(&state, req, &conn)
            .await
            .unwrap_or_else(ApiError::into_response);
    }
    match (req.method(), path) {
        (&Method::GET | &Method::HEAD, "/healthz") => http::healthz(&state).await,
        (&Method::GET | &Method::HEAD, "/metrics") => http::metrics(&state),
        _ => crate::pages::route(&state, req, &conn).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_bins_for_the_access_log() {
        let bin = "0123456789abcdefghij";
        assert_eq!(Route::of(&format!("/r/{bin}/x")), Route::Capture);
        assert_eq!(Route::of(&format!("/api/bins/{bin}/stream")), Route::Stream);
        assert_eq!(Route::of("/api/bins"), Route::Api);
        assert_eq!(Route::of("/healthz"), Route::Operations);
        assert_eq!(Route::of("/"), Route::Page);
        assert_eq!(bin_of(&format!("/r/{bin}/secret/path?q=1")), Some(bin));
        assert_eq!(bin_of(&format!("/api/bins/{bin}/requests")), Some(bin));
        assert_eq!(bin_of(&format!("/bins/{bin}")), Some(bin));
        // Whatever a client puts where a bin id goes is not logged unless it is one.
        assert_eq!(bin_of("/r/Not-A-Bin-Id/x"), None);
        assert_eq!(bin_of("/api/bins"), None);
        assert_eq!(bin_of("/elsewhere"), None);
    }

    #[test]
    fn request_targets_read_without_a_copy_match_the_formatted_uri() {
        for target in [
            "/r/x?q=1",
            "/r/x?",
            "/",
            "*",
            "/r/x/%2F?a=%20b#frag",
            "http://example.com/r/x?q",
            "example.com:443",
        ] {
            let Ok(uri) = target.parse::<hyper::Uri>() else {
                continue;
            };
            assert_eq!(request_target(&uri), uri.to_string(), "{target}");
        }
    }
}
