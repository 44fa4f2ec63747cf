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
//!
//! A connection whose first request opens an event stream (`GET /api/bins/{bin}/stream`) is
//! served on a runtime of its own, [`StreamRuntime`], whose threads run at the lowest CPU
//! priority: see there for why.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::Semaphore;

use crate::limits::Slot;
use crate::rawhead::{HeadTap, TappedStream};
use crate::router;
use crate::state::AppState;
use crate::web::ConnInfo;

/// How long a graceful stop waits for in-flight requests.
pub const GRACE: Duration = Duration::from_secs(30);

/// Worker threads of the main runtime (connections, captures, the API and pages): one fewer than
/// the machine's CPUs, at least one, unless `TOKIO_WORKER_THREADS` says otherwise (then tokio's
/// own reading of it applies, and this returns `None`).
///
/// Why not one per CPU, tokio's default: every capture also runs on the SQLite writer thread
/// (a third of a CPU at full load on 2 CPUs). On 2 CPUs, two workers beside it cost more than
/// they bring: a capture's task is woken by the writer from outside the runtime, so it lands on
/// either worker and its connection's state moves between the CPUs' caches (~200 ns a cache line
/// on a virtual machine whose CPUs sit far apart). Measured with one worker against two on a 2-CPU
/// AMD EPYC VM (bench/RESULTS.md, 2026-12-05 19:41): CPU a capture -16% (13.1 against 15.7 us)
/// and +5% captures/s when the CPUs are far apart, the same CPU and -3% captures/s when near.
/// Database reads, searches and request views run on `spawn_blocking` threads either way; an
/// export renders its entries here, one at a time between the sends that pace it.
pub fn main_workers() -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    Some(workers_beside_writer(cpus()))
}

/// The CPUs this process may run on (2 when the system cannot tell).
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// [`main_workers`] on a machine with `cpus` CPUs.
fn workers_beside_writer(cpus: usize) -> usize {
    cpus.saturating_sub(1).max(1)
}

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

/// Accepts until `state.shutdown` triggers; the connections run on as tasks of `state.tasks`,
/// event streams on `streams`.
pub async fn serve(listener: TcpListener, state: Arc<AppState>, streams: Handle) {
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
        let streams = streams.clone();
        state.tasks.spawn(async move {
            let state = connection_state;
            state.open_connections.fetch_add(1, Relaxed);
            // A stop does not wait for a client that has sent nothing yet, as hyper does not.
            let first = tokio::select! {
                first = first_request(&stream, state.config.header_timeout) => first,
                _ = state.shutdown.triggered() => First::None,
            };
            match first {
                First::Stream => match move_to(&streams, stream) {
                    Ok(stream) => {
                        let (state, builder) = (state.clone(), builder.clone());
                        // Served to its end there; this task only waits for it (an error is
                        // the stream runtime stopping, at the end of a stop).
                        let _ = streams
                            .spawn(async move { serve_connection(&state, &builder, stream, peer).await })
                            .await;
                    }
                    Err(e) => tracing::warn!(%peer, cause = %e, "cannot move an event stream's connection to the stream runtime"),
                },
                First::Other => serve_connection(&state, &builder, stream, peer).await,
                First::None => {}
            }
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

/// The threads that serve event streams: as many as the main runtime has, each at the lowest
/// CPU priority (nice 19).
///
/// Why: delivering every capture to hundreds of open streams costs the server more CPU than
/// the captures themselves (at 10,000 captures/s with 500 streams, 71 us of CPU per capture
/// against 32 without, mostly the kernel copying event text into the sockets; issue 15,
/// `bench/viewers.sh`). On the same threads as the captures, every capture that arrived during
/// a burst of stream writes waited for it. At nice 19 the kernel runs capture work first and
/// the streams in the time it leaves; a stream that falls behind that way still gets every
/// event, from the live buffer or, past it, from the database (`events.rs`, `http/stream.rs`).
#[derive(Debug)]
pub struct StreamRuntime(Option<Runtime>);

/// The nice value of the stream threads: the lowest priority there is.
pub const STREAM_NICE: i32 = 19;

impl StreamRuntime {
    pub fn start() -> std::io::Result<StreamRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cpus())
            .thread_name("hookbin-streams")
            .on_thread_start(lower_priority)
            .enable_all()
            .build()?;
        Ok(StreamRuntime(Some(runtime)))
    }

    pub fn handle(&self) -> Handle {
        match &self.0 {
            Some(runtime) => runtime.handle().clone(),
            None => unreachable!("the runtime is only taken by drop"),
        }
    }
}

impl Drop for StreamRuntime {
    /// Without waiting: dropping a runtime blocks, which is not allowed on the main runtime's
    /// threads, and by now every stream has ended (or the stop gave up on it).
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Lowers the calling thread's priority to [`STREAM_NICE`]. On Linux, `setpriority` with a
/// thread id applies to that thread only. Through rustix: the crate forbids `unsafe`, and
/// rustix is the safe wrapper of the system call already in the tree (tempfile's).
fn lower_priority() {
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), STREAM_NICE) {
        // Streams still work at the normal priority; they only compete with the captures.
        tracing::warn!(cause = %e, "cannot lower the priority of an event-stream thread");
    }
}

/// What the first request on a connection is, from its first bytes.
#[derive(Debug, PartialEq, Eq)]
enum First {
    /// `GET /api/bins/{bin}/stream`.
    Stream,
    Other,
    /// The client sent nothing before the header timeout, or closed: hyper would have closed
    /// the connection without an answer too.
    None,
}

/// Waits for the connection's first bytes (at most `timeout`) and tells whether they open an
/// event stream, without consuming them: hyper reads them next.
///
/// The header timeout starts again when hyper takes over, so a client that sends its first
/// byte late and then stalls is closed after at most twice `--header-timeout`.
async fn first_request(stream: &TcpStream, timeout: Duration) -> First {
    // Enough for the request line up to the end of the path.
    let mut head = [0u8; 128];
    match tokio::time::timeout(timeout, stream.peek(&mut head)).await {
        Ok(Ok(n)) if n > 0 && is_event_stream(&head[..n]) => First::Stream,
        Ok(Ok(n)) if n > 0 => First::Other,
        _ => First::None,
    }
}

/// Whether `head` (the first bytes of a request) is `GET /api/bins/{bin}/stream`, with or
/// without a query. A request line cut before the end of its path is not (it is served on
/// the main runtime, which is only slower for a stream, never wrong).
fn is_event_stream(head: &[u8]) -> bool {
    let Some(target) = head.strip_prefix(b"GET /api/bins/") else {
        return false;
    };
    let Some(end) = target.iter().position(|&b| b == b' ' || b == b'?') else {
        return false;
    };
    target[..end]
        .strip_suffix(b"/stream")
        .is_some_and(|bin| !bin.is_empty() && !bin.contains(&b'/'))
}

/// `stream`, registered with the runtime of `to` instead of the current one (a socket's
/// readiness comes from the runtime it was registered with).
fn move_to(to: &Handle, stream: TcpStream) -> std::io::Result<TcpStream> {
    let stream = stream.into_std()?;
    let _entered = to.enter();
    TcpStream::from_std(stream)
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
    // Polled at every wake-up of the connection, so a signal of its own.
    let stop = state.shutdown.for_connection();
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = stop.triggered() => {
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
    fn event_streams_are_told_from_their_first_bytes() {
        for head in [
            "GET /api/bins/abc/stream HTTP/1.1\r\nHost: h\r\n\r\n",
            "GET /api/bins/abc/stream?last_event_id=7&q=x HTTP/1.1\r\n",
            // Cut after the path: its end is known.
            "GET /api/bins/abc/stream ",
            "GET /api/bins/abc/stream?",
        ] {
            assert!(is_event_stream(head.as_bytes()), "{head:?}");
        }
        for head in [
            "POST /r/abc HTTP/1.1\r\n",
            "POST /api/bins/abc/stream HTTP/1.1\r\n",
            "GET /api/bins/abc HTTP/1.1\r\n",
            "GET /api/bins/abc/requests HTTP/1.1\r\n",
            "GET /api/bins//stream HTTP/1.1\r\n",
            "GET /api/bins/abc/x/stream HTTP/1.1\r\n",
            "GET /bins/abc/stream HTTP/1.1\r\n",
            "GET /api/bins/abc/streams HTTP/1.1\r\n",
            // Cut inside the path: it may go on (`/stream/...`), so not a stream.
            "GET /api/bins/abc/stream",
            "GET /api/bi",
            "",
        ] {
            assert!(!is_event_stream(head.as_bytes()), "{head:?}");
        }
    }

    #[test]
    fn the_writer_keeps_a_cpu_of_its_own() {
        assert_eq!(workers_beside_writer(0), 1);
        assert_eq!(workers_beside_writer(1), 1);
        assert_eq!(workers_beside_writer(2), 1);
        assert_eq!(workers_beside_writer(8), 7);
    }

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
