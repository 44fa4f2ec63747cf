//! The accept loop: connection limits, per-connection HTTP/1.1 service, graceful stop.
//!
//! `--max-connections` is a global semaphore taken before `accept`; right after it, the peer's
//! own connections are counted against `--max-connections-per-client` (at most half the global
//! cap, so one client never holds every permit; see `limits.rs` for the whole design). A
//! connection over that cap is answered `429` and closed at once, giving its permit back.
//!
//! Each connection is a task on [`AppState::tasks`]. On shutdown the accept loop returns (the
//! listener closes) and every connection finishes the request it is on (hyper's graceful
//! shutdown), for at most [`GRACE`]; the caller waits for the tasks, then drains the writer.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::limits::Slot;
use crate::rawhead::{HeadTap, TappedStream};
use crate::router;
use crate::state::AppState;
use crate::web::ConnInfo;

/// How long a graceful stop waits for in-flight requests.
pub const GRACE: Duration = Duration::from_secs(30);

pub fn http1_builder(state: &AppState) -> http1::Builder {
    let config = &state.config;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_header_size(config.max_header_bytes)
        .max_buf_size((config.max_header_bytes + 8192).max(16 * 1024))
        // hyper's default of 100 header lines stays: raising it moves hyper's header array from
        // the stack to a zeroed heap allocation per request (2% of CPU under load, measured).
        .keep_alive(true);
    builder
}

/// Keeps one timer of the runtime due soon, always, until the stop.
///
/// Tokio's timer wakes its driver whenever a new timer is due before every timer it waits for,
/// and also when it waits for none. Between requests no timer is pending (a capture waiting for
/// its commit has none), so each request's header timeout (hyper's) and body timeout woke a
/// parked worker through the I/O driver's eventfd: 5,322 eventfd writes in 2 s of load, about one
/// per 7 captures, each waking a worker with nothing to do (`perf record -e
/// syscalls:sys_enter_write`). With a timer due in at most half the shortest request timeout,
/// the request timers are never the earliest, and the driver wakes for this one only.
pub async fn anchor_timers(state: Arc<AppState>) {
    let shortest = state.config.header_timeout.min(state.config.body_timeout);
    let period = (shortest / 2).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = state.shutdown.triggered() => return,
        }
    }
}

/// Accepts until `state.shutdown` triggers; the connections run on as tasks of `state.tasks`.
pub async fn serve(listener: TcpListener, state: Arc<AppState>) {
    let permits = Arc::new(Semaphore::new(state.config.max_connections));
    let builder = Arc::new(http1_builder(&state));
    let shutdown = state.shutdown.clone();
    loop {
        // Over the limit, further clients wait in the kernel's listen backlog.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = shutdown.triggered() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!(cause = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.triggered() => break,
        };
        // Not counted with --trust-proxy: the peer is the proxy (the cap is 0 then).
        let Some(slot) = state.clients.take(peer.ip(), Slot::Connection) else {
            state.metrics.client_limit_rejections.fetch_add(1, Relaxed);
            tracing::debug!(%peer, "connection refused: per-client connection limit");
            refuse(&stream);
            continue; // drops the stream and the permit
        };
        let _ = stream.set_nodelay(true);
        let builder = builder.clone();
        let connection_state = state.clone();
        state.tasks.spawn(async move {
            let state = connection_state;
            state.open_connections.fetch_add(1, Relaxed);
            serve_connection(&state, &builder, stream, peer).await;
            state.open_connections.fetch_sub(1, Relaxed);
            drop(slot);
            drop(permit);
        });
    }
}

/// The answer to a connection over its client's cap: written without waiting (it fits any
/// socket buffer), then the connection is dropped. Whatever the client already sent is read
/// first when it is there, so that the close does not reset the connection before the client
/// reads the answer; best effort, and it never blocks the accept loop.
const REFUSAL: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\n\
Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n\
Retry-After: 5\r\nConnection: close\r\nContent-Length: 103\r\n\r\n\
{\"error\":{\"code\":\"too_many_connections\",\"message\":\"this client address has too many open connections\"}}";

fn refuse(stream: &tokio::net::TcpStream) {
    let mut sink = [0u8; 4096];
    for _ in 0..4 {
        match stream.try_read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    let _ = stream.try_write(REFUSAL);
}

async fn serve_connection(
    state: &Arc<AppState>,
    builder: &http1::Builder,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
) {
    let tap = HeadTap::new(state.config.max_header_bytes);
    let io = TokioIo::new(TappedStream::new(stream, tap.clone()));
    let info = Arc::new(ConnInfo {
        peer,
        tap,
        delay_spent_ms: Default::default(),
    });
    let service_state = state.clone();
    let service = service_fn(move |req| {
        let state = service_state.clone();
        let info = info.clone();
        async move { Ok::<_, Infallible>(router::handle(state, req, info).await) }
    });
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = state.shutdown.triggered() => {
            conn.as_mut().graceful_shutdown();
            match tokio::time::timeout(GRACE, conn.as_mut()).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!(%peer, "connection still busy {GRACE:?} after the stop signal; closing it");
                    return;
                }
            }
        }
    };
    if let Err(e) = result {
        // Timeouts, resets and malformed requests end here; they are the client's business.
        tracing::debug!(%peer, cause = %e, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_is_a_whole_http_response() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(length, body.len());
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(value["error"]["code"], "too_many_connections");
    }
}
