//! `ANY /r/{bin}[/{rest}]`: record the request exactly, commit it, then answer.
//!
//! parse (bin check, head, bounded body read) -> persist (queue to the writer, await the commit)
//! -> respond (413 for a cut body, the bin's custom response, or `200 ok`). The response goes out
//! only after the row is committed: a 2xx that is later missing would be data loss.

use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, LazyLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Frame, Incoming};
use hyper::header::{
    ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, CONNECTION,
    CONTENT_TYPE, HeaderName, HeaderValue, LOCATION,
};
use hyper::http::request::Parts;
use hyper::{HeaderMap, Method, Request, Response, StatusCode, Version};

use crate::bins;
use crate::clock::now_ms;
use crate::ids::{BinId, RequestId};
use crate::limits::BodyMemory;
use crate::model::{ResponseRecord, StoredRequest, header_lines};
use crate::rawhead::RawHead;
use crate::response::{MAX_DELAY_MS, ResponseSpec};
use crate::state::AppState;
use crate::web::body::{self, Body};
use crate::web::client::{client_ip, ip_text, is_capture_host};
use crate::web::error::ApiError;
use crate::web::{Captured, ConnInfo};

/// After a body passes `--max-body-bytes`, up to this much more is read and discarded, so that the
/// client is still reading when the 413 arrives instead of seeing its upload reset.
const MAX_DRAIN_BYTES: u64 = 16 * 1024 * 1024;

/// Records one request to `/r/{bin}[/...]` and answers it, in four steps: the head's checks,
/// the body, the row, the answer. Every answer is sealed ([`seal`]): a recorded request's when
/// it is decided (`decide_answer`), the refusals and redirects by `refused`.
pub async fn capture(
    state: &AppState,
    req: Request<Incoming>,
    conn: &ConnInfo,
    raw: Option<RawHead>,
) -> Response<Body> {
    let started = Instant::now();
    let received_at = now_ms();
    let (bin, response) =
        match check_head(state, &req, raw.as_ref().map(|h| h.len), received_at).await {
            ControlFlow::Continue(found) => found,
            ControlFlow::Break(answer) => return refused(answer),
        };
    let (parts, incoming) = req.into_parts();
    // Given back once the row is committed (or the request refused), not before: the body is
    // in memory until then.
    let mut memory = state.body_memory.account();
    let mut read = match receive_body(state, incoming, started, &mut memory).await {
        Ok(read) => read,
        Err(e) => return refused(body_refusal(state, &bin, e)),
    };
    // The answer is decided before the commit, so that the request records exactly what it is
    // sent (issue 12); only a custom delay is waited out after the commit.
    let (res, delay_ms, record) = decide_answer(state, conn, response.as_deref(), &parts, &read);
    let (request, header_lines) =
        stored_request(state, conn, bin, &parts, raw, &mut read, received_at);
    let request_id = match bins::record(state, request, header_lines, record).await {
        Ok(id) => id,
        Err(e) => return refused(ApiError::from(e).into_response()),
    };
    drop(memory);
    state.metrics.observe_capture(started.elapsed());
    answer(state, res, delay_ms, &read, request_id).await
}

/// An answer under `/r/` other than a recorded request's, sealed: `capture`'s refusals and the
/// router's 429 for a client at its cap.
pub fn refused(mut res: Response<Body>) -> Response<Body> {
    seal(&mut res);
    res
}

/// Step 1: what can be refused or redirected from the request head alone, before a byte of the
/// body is read. The bin (the edge for `/r/{bin}`: parsed here, typed past it) and its custom
/// response when the request is to be recorded.
async fn check_head(
    state: &AppState,
    req: &Request<Incoming>,
    raw_len: Option<usize>,
    now: i64,
) -> ControlFlow<Response<Body>, (BinId, Option<Arc<ResponseSpec>>)> {
    if is_worker_script_fetch(req.headers()) {
        return ControlFlow::Break(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "worker_script_refused",
                "capture URLs cannot be loaded as a service worker or as a script of this \
                 server's own pages; nothing was recorded",
            )
            .into_response(),
        );
    }
    // The router sends only paths under `/r/` here. A malformed id is as unknown as a deleted
    // one.
    let bin = req.uri().path()["/r/".len()..]
        .split('/')
        .next()
        .unwrap_or_default();
    let live = match BinId::parse(bin) {
        Some(bin) => match bins::live(state, &bin, now).await {
            Ok(entry) => Some((bin, entry)),
            Err(bins::Error::BinNotFound) => None,
            // The database could not say (on PostgreSQL): 503, never a false 404.
            Err(e) => return ControlFlow::Break(ApiError::from(e).into_response()),
        },
        None => None,
    };
    let Some((bin, entry)) = live else {
        state.metrics.captures_unknown_bin.fetch_add(1, Relaxed);
        return ControlFlow::Break(ApiError::bin_not_found().into_response());
    };
    let on_capture_host = is_capture_host(&state.config, req.headers());
    let subpath = subpath(req.uri().path(), &bin);
    if is_browser_navigation(req.method(), subpath, req.uri().query(), req.headers()) {
        // To the inspector: on its own host a relative path; from the capture host only when
        // the inspector's address is known (else the visit is recorded like any request).
        let inspector = match (on_capture_host, &state.config.public_url) {
            (Some(true), Some(public)) => Some(format!("{public}/bins/{bin}")),
            (Some(true), None) => None,
            _ => Some(format!("/bins/{bin}")),
        };
        if let Some(location) = inspector {
            let mut res = body::text(StatusCode::SEE_OTHER, "");
            if let Ok(location) = HeaderValue::from_str(&location) {
                res.headers_mut().insert(LOCATION, location);
            }
            return ControlFlow::Break(res);
        }
    }
    if on_capture_host == Some(false) {
        // `--capture-url` is set and this is the inspector's host: a custom response must never
        // be served on the inspector's origin.
        let capture = state
            .config
            .capture
            .as_ref()
            .map_or("", |c| c.base.as_str());
        return ControlFlow::Break(
            ApiError::new(
                StatusCode::MISDIRECTED_REQUEST,
                "wrong_host",
                format!(
                    "this host serves the inspector; send captures to {capture}/r/{bin}; \
                     nothing was recorded"
                ),
            )
            .into_response(),
        );
    }
    if let Some(len) = raw_len
        && len > state.config.max_header_bytes
    {
        return ControlFlow::Break(
            ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                format!(
                    "the request head is {len} bytes; at most {} are accepted",
                    state.config.max_header_bytes
                ),
            )
            .into_response(),
        );
    }
    ControlFlow::Continue((bin, entry.response))
}

/// The part of the path after `/r/{bin}` (empty, or starting with `/`).
fn subpath<'a>(path: &'a str, bin: &BinId) -> &'a str {
    &path["/r/".len() + bin.as_str().len()..]
}

/// Step 2: the body, within `--max-body-bytes`, `--body-timeout`, `--body-deadline` and the
/// `--max-body-memory` budget; an error means nothing is recorded.
async fn receive_body(
    state: &AppState,
    incoming: Incoming,
    started: Instant,
    memory: &mut BodyMemory<'_>,
) -> Result<ReadBody, BodyError> {
    let limits = BodyLimits {
        max: state.config.max_body_bytes,
        idle: state.config.body_timeout,
        deadline: tokio::time::Instant::from_std(started + state.config.body_deadline),
    };
    // The `Content-Length` hyper frames the body by, which it parsed already (none for a
    // chunked body): not looked up and parsed again.
    let declared = incoming.size_hint().exact();
    let read = read_body(incoming, declared, &limits, memory).await?;
    if read.refused {
        return Err(BodyError::MemoryFull {
            complete: read.complete,
        });
    }
    Ok(read)
}

/// The answer to a body that was not recorded. Those cut off mid-body close the connection:
/// the rest of the body may still be on the wire.
fn body_refusal(state: &AppState, bin: &BinId, e: BodyError) -> Response<Body> {
    match e {
        BodyError::Timeout => {
            tracing::debug!(bin_id = %bin, "body timed out; nothing recorded");
            close(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                "the request body stalled; nothing was recorded",
            ))
        }
        BodyError::Deadline => {
            tracing::debug!(bin_id = %bin, "body past its deadline; nothing recorded");
            close(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body_too_slow",
                format!(
                    "the request body did not arrive within {}; nothing was recorded",
                    humantime::format_duration(state.config.body_deadline)
                ),
            ))
        }
        BodyError::Broken(e) => {
            tracing::debug!(bin_id = %bin, cause = %e, "body unreadable; nothing recorded");
            close(ApiError::bad_request(
                "bad_body",
                format!("the request body could not be read ({e}); nothing was recorded"),
            ))
        }
        BodyError::MemoryFull { complete } => {
            state.metrics.body_memory_rejections.fetch_add(1, Relaxed);
            tracing::debug!(bin_id = %bin, "body memory budget spent: answering 503");
            let err = ApiError::unavailable(
                "body_memory_full",
                "the server holds too many large request bodies right now; retry shortly \
                 (nothing was recorded)",
                5,
            );
            if complete {
                err.into_response()
            } else {
                close(err)
            }
        }
    }
}

/// Step 3: the row to store, exactly as received: the header lines from the raw head (order,
/// case and bytes as sent; in their stored form, [`crate::model::header_lines`], beside a
/// request whose `headers` are empty), the body's bytes untouched. Takes the bytes out of
/// `read`; its counts stay there for the answer.
fn stored_request(
    state: &AppState,
    conn: &ConnInfo,
    bin: BinId,
    parts: &Parts,
    raw: Option<RawHead>,
    read: &mut ReadBody,
    received_at: i64,
) -> (StoredRequest, Vec<u8>) {
    let lines = match raw {
        Some(head) => head.into_header_lines(),
        // The tap lost track of this connection: HeaderMap order (grouped by name, lowercase).
        None => header_lines::encode(
            || {
                parts
                    .headers
                    .iter()
                    .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()))
            },
            0,
        ),
    };
    let path = parts.uri.path();
    let request = StoredRequest {
        id: RequestId::PENDING,
        method: parts.method.as_str().to_owned(),
        path: path.to_owned(),
        subpath: subpath(path, &bin).to_owned(),
        bin_id: bin.into_string(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers: Vec::new(),
        body: std::mem::take(&mut read.bytes),
        // What arrived, never what the client declared: a cut body's size is the bytes received
        // before hookbin stopped reading (all of them when it read to the end).
        body_size: read.received,
        body_truncated: read.truncated,
        remote_addr: ip_text(client_ip(&state.config, conn.peer, &parts.headers)),
        http_version: version_name(parts.version).to_owned(),
        received_at,
        response: None,
    };
    (request, lines)
}

/// The body of the default answer.
const DEFAULT_BODY: &str = "ok";

/// The answer to almost every capture: `200 ok` from a bin without a custom response, to any
/// method but OPTIONS (whose CORS headers echo the request's). Built once by the code every other
/// answer goes through; a capture then clones its headers and shares its record's JSON instead
/// of inserting five headers and making ten `String`s and the JSON each time.
struct DefaultAnswer {
    /// Its headers, then an `x-request-id` line for [`answer`] to fill in: in place, where it
    /// would have appended it (a clone has no room for another line: appending reallocated).
    headers: HeaderMap,
    /// [`response_record`] of it, as stored.
    record: Arc<str>,
}

/// A typed name: a `&str` one is parsed on every insert.
static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

static DEFAULT_ANSWER: LazyLock<DefaultAnswer> = LazyLock::new(|| {
    let mut res = body::text(StatusCode::OK, DEFAULT_BODY);
    add_cors(res.headers_mut(), &Method::POST, &HeaderMap::new());
    seal(&mut res);
    let record = response_record(&res, 0).to_json().into();
    let mut headers = res.headers().clone();
    headers.insert(&X_REQUEST_ID, HeaderValue::from_static("0"));
    DefaultAnswer { headers, record }
});

/// Step 3, before the commit: the answer, 413 for a cut body, else the bin's custom response
/// or `200 ok`, with CORS and the sealing headers; the custom delay still to wait; and what the
/// request records of it (as stored: [`ResponseRecord::to_json`]).
fn decide_answer(
    state: &AppState,
    conn: &ConnInfo,
    response: Option<&ResponseSpec>,
    parts: &Parts,
    read: &ReadBody,
) -> (Response<Body>, u64, Arc<str>) {
    if !read.truncated && response.is_none() && parts.method != Method::OPTIONS {
        let default = &*DEFAULT_ANSWER;
        let mut res = Response::new(body::full(DEFAULT_BODY));
        *res.headers_mut() = default.headers.clone();
        return (res, 0, default.record.clone());
    }
    let (mut res, delay_ms) = if read.truncated {
        let mut res = ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!(
                "the body exceeds {} bytes; the request was recorded with its first {} bytes",
                state.config.max_body_bytes, state.config.max_body_bytes
            ),
        )
        .into_response();
        if !read.complete {
            // The rest of the body is still on the wire; the connection cannot be reused.
            res.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        (res, 0)
    } else if let Some(spec) = response {
        let mut res = spec_response(spec);
        if spec.delay_ms > 0 && delay_closes(conn, spec.delay_ms) {
            res.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
        (res, spec.delay_ms)
    } else {
        (body::text(StatusCode::OK, DEFAULT_BODY), 0)
    };
    add_cors(res.headers_mut(), &parts.method, &parts.headers);
    seal(&mut res);
    let record = response_record(&res, delay_ms).to_json().into();
    (res, delay_ms, record)
}

/// Step 4, once the row is committed: the custom delay (which holds no database connection or
/// thread; shutdown cuts it short so a stop never waits 30 s), then the answer with the
/// request's id.
async fn answer(
    state: &AppState,
    mut res: Response<Body>,
    delay_ms: u64,
    read: &ReadBody,
    request_id: RequestId,
) -> Response<Body> {
    if read.truncated {
        state.metrics.requests_truncated.fetch_add(1, Relaxed);
    }
    if delay_ms > 0 {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(delay_ms)) => {}
            _ = state.shutdown.triggered() => {}
        }
    }
    // For the access log line (`router::handle`), which replaces a separate "captured" line.
    // Only when that line is written: the extension map costs two allocations per capture.
    if Captured::logged() {
        res.extensions_mut().insert(Captured {
            request_id,
            size: read.received,
        });
    }
    res.headers_mut()
        .insert(&X_REQUEST_ID, HeaderValue::from(request_id.get()));
    res
}

/// What `res` sends, as the request records it: status, the header lines set here in the order
/// hyper writes them, body size, delay. The lines added later (`x-request-id` once the id is
/// known, hyper's `content-length`) are shown from the record
/// ([`crate::model::ResponseRecord::headers_as_sent`]); hyper's `date`, and the `connection:
/// close` it echoes to a client that asked for it, are not kept.
fn response_record(res: &Response<Body>, delay_ms: u64) -> ResponseRecord {
    let body_size = res.body().size_hint().exact().unwrap_or(0);
    let headers: Vec<(String, String)> = res
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    ResponseRecord {
        status: res.status().as_u16(),
        headers,
        body_size,
        delay_ms,
    }
}

/// The headers every response under `/r/` carries, whatever produced it (a custom response, an
/// error, a redirect), set last so that nothing can remove or replace them:
/// - `Content-Security-Policy: sandbox`: a document from a capture URL gets an opaque origin,
///   with no script, forms, popups or storage, so a custom `text/html` response can never act
///   as the inspector (issue 11). Custom responses cannot set a policy of their own.
/// - `X-Content-Type-Options: nosniff`: bytes are never sniffed into a script or a page.
pub fn seal(res: &mut Response<Body>) {
    let h = res.headers_mut();
    h.insert(
        hyper::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    h.insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// A browser fetching a capture URL as a service worker script (`Service-Worker: script`), or
/// as a script or worker for a page of this very origin. A service worker registered from a
/// capture URL would control the inspector's pages for good; the sandbox policy cannot stop
/// that, because it does not apply to worker scripts. Nothing legitimate does this: webhooks do
/// not, and a page of another site loading a capture URL as a script says `cross-site`.
fn is_worker_script_fetch(headers: &HeaderMap) -> bool {
    // Typed names: a `&str` name is parsed again on every lookup, and every capture asks.
    static SERVICE_WORKER: HeaderName = HeaderName::from_static("service-worker");
    static SEC_FETCH_DEST: HeaderName = HeaderName::from_static("sec-fetch-dest");
    static SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
    let h = |name: &HeaderName| headers.get(name).map(HeaderValue::as_bytes);
    if h(&SERVICE_WORKER).is_some_and(|v| v.eq_ignore_ascii_case(b"script")) {
        return true;
    }
    // `Sec-Fetch-Site` only when the destination needs it: webhooks send neither.
    let dest = h(&SEC_FETCH_DEST);
    dest == Some(b"serviceworker")
        || (matches!(dest, Some(b"script" | b"worker" | b"sharedworker"))
            && h(&SEC_FETCH_SITE) == Some(b"same-origin"))
}

/// A browser opening the bare capture URL is sent to the inspector instead of being recorded.
fn is_browser_navigation(
    method: &Method,
    subpath: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> bool {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    method == Method::GET
        && subpath.is_empty()
        && query.is_none()
        && header("sec-fetch-mode").eq_ignore_ascii_case("navigate")
        && header(ACCEPT.as_str()).contains("text/html")
}

fn version_name(v: Version) -> &'static str {
    match v {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2",
        Version::HTTP_3 => "HTTP/3",
        _ => "HTTP/1.1",
    }
}

fn close(err: ApiError) -> Response<Body> {
    let mut res = err.into_response();
    res.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    res
}

#[derive(Debug)]
struct ReadBody {
    /// At most `max` bytes.
    bytes: Vec<u8>,
    /// Bytes received in all, including any read past `max` and discarded.
    received: u64,
    truncated: bool,
    /// `--max-body-memory` was spent: the bytes were dropped, the rest was discarded.
    refused: bool,
    /// Whether the body was read to its end (so the connection can be reused).
    complete: bool,
}

#[derive(Debug)]
enum BodyError {
    /// No data for `--body-timeout`.
    Timeout,
    /// The body was not whole by `--body-deadline`.
    Deadline,
    /// The client broke off or sent a malformed chunked body.
    Broken(hyper::Error),
    /// `--max-body-memory` was spent; `complete` when the body was read to its end all the
    /// same (the connection can be reused).
    MemoryFull { complete: bool },
}

struct BodyLimits {
    /// `--max-body-bytes`.
    max: u64,
    /// `--body-timeout`: the longest pause between two pieces.
    idle: Duration,
    /// `--body-deadline` after the request head: the whole body by then.
    deadline: tokio::time::Instant,
}

/// Reads the body, keeping at most `max` bytes, each byte beyond the free part of a body
/// covered by `memory` (the global budget): memory never holds an unbounded body, nor too many
/// large ones at once.
async fn read_body(
    mut body: Incoming,
    declared: Option<u64>,
    limits: &BodyLimits,
    memory: &mut BodyMemory<'_>,
) -> Result<ReadBody, BodyError> {
    let max = limits.max;
    // A declared length is budgeted whole, up front: bodies that will not fit are refused before
    // they take any memory. (Budgeting bytes only as they arrive let 40 large bodies all grow
    // until the budget ran out; the memory the refused ones had written then stayed with the
    // allocator, and the process grew well past the budget.) Chunked bodies are budgeted as
    // they grow.
    let expected = declared.unwrap_or(0).min(max);
    let refused = !memory.cover(expected);
    // Preallocate for the common case of a declared length, but never beyond the limit.
    let capacity = if refused {
        0
    } else {
        expected.min(8 * 1024 * 1024) as usize
    };
    let mut read = ReadBody {
        bytes: Vec::with_capacity(capacity),
        received: 0,
        truncated: false,
        refused,
        complete: true,
    };
    loop {
        // A frame that is already there needs no timer and no look at the clock (the usual
        // case: a small body arrives with its head); `timeout_at` would take it all the same,
        // as it polls the body before its deadline.
        let polled = match poll_once(&mut body).await {
            Poll::Ready(frame) => Ok(frame),
            Poll::Pending => {
                let until = (tokio::time::Instant::now() + limits.idle).min(limits.deadline);
                tokio::time::timeout_at(until, body.frame()).await
            }
        };
        let frame = match polled {
            // A refused body needs no more bytes for its answer.
            Err(_) if read.refused => {
                read.complete = false;
                return Ok(read);
            }
            Err(_) if tokio::time::Instant::now() >= limits.deadline => {
                return Err(BodyError::Deadline);
            }
            Err(_) => return Err(BodyError::Timeout),
            Ok(None) => return Ok(read),
            Ok(Some(Err(e))) => return Err(BodyError::Broken(e)),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers: not part of the body
        };
        read.received += data.len() as u64;
        if !read.truncated && !read.refused {
            let kept = (read.bytes.len() as u64 + data.len() as u64).min(max);
            if !memory.cover(kept) {
                // Free the memory at once; the rest is read and discarded like an oversized
                // body's, so the client sees the 503 instead of a reset.
                read.refused = true;
                read.bytes = Vec::new();
                memory.release();
            }
        }
        keep_up_to(&mut read, &data, max);
        if (read.truncated || read.refused) && read.received > max.saturating_add(MAX_DRAIN_BYTES) {
            read.complete = false;
            return Ok(read);
        }
    }
}

/// The body's next frame if it is there now; `Pending` (with the task's waker registered)
/// otherwise.
async fn poll_once(body: &mut Incoming) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await
}

fn keep_up_to(read: &mut ReadBody, data: &Bytes, max: u64) {
    if read.truncated || read.refused {
        return;
    }
    let room = (max - read.bytes.len() as u64) as usize;
    if data.len() <= room {
        read.bytes.extend_from_slice(data);
    } else {
        read.bytes.extend_from_slice(&data[..room]);
        read.truncated = true;
    }
}

/// Counts a custom delay against the connection; whether the answer must close it.
///
/// Delays count per connection: once they add up to `MAX_DELAY_MS` on one connection, the
/// answer closes it. Otherwise N requests pipelined to a 30 s bin would hold one connection for
/// N x 30 s; now at most one more delay past 30 s, and a client that wants more must open new
/// connections, which the per-client limits count.
fn delay_closes(conn: &ConnInfo, delay_ms: u64) -> bool {
    let spent = conn.delay_spent_ms.fetch_add(delay_ms, Relaxed) + delay_ms;
    spent >= MAX_DELAY_MS
}

/// The spec as a response (after its delay).
fn spec_response(spec: &ResponseSpec) -> Response<Body> {
    if spec.status < 200 {
        // HTTP/1.1 has no final 1xx response: hyper would turn it into a bare 500 (or, for 101,
        // switch protocols and hang). Say so plainly instead; the request itself was recorded.
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "informational_status",
            format!(
                "this bin's custom response has status {}, which HTTP/1.1 cannot send as a final response; the request was recorded",
                spec.status
            ),
        )
        .into_response();
    }
    let mut res = Response::new(body::full(spec.body.clone()));
    *res.status_mut() = StatusCode::from_u16(spec.status).unwrap_or(StatusCode::OK);
    let h = res.headers_mut();
    for (name, value) in &spec.headers {
        // Validated when the spec was set; a failure here would mean a damaged database row.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            h.append(n, v);
        }
    }
    if !spec.has_header("content-type") && !spec.body.is_empty() {
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    res
}

/// Permissive CORS, so webhooks sent from browser code are captured too. Headers a custom
/// response sets itself are left alone.
fn add_cors(h: &mut HeaderMap, method: &Method, request: &HeaderMap) {
    // Typed names: a `&str` name is parsed again on every lookup.
    let mut set = |name: HeaderName, value: HeaderValue| {
        if let hyper::header::Entry::Vacant(slot) = h.entry(name) {
            slot.insert(value);
        }
    };
    set(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    set(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("x-request-id"),
    );
    if method == Method::OPTIONS {
        let echo = |name: &str, default: &'static str| {
            request
                .get(name)
                .cloned()
                .unwrap_or(HeaderValue::from_static(default))
        };
        set(
            ACCESS_CONTROL_ALLOW_METHODS,
            echo(
                "access-control-request-method",
                "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
            ),
        );
        set(
            ACCESS_CONTROL_ALLOW_HEADERS,
            echo("access-control-request-headers", "*"),
        );
        set(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_exactly_max_bytes() {
        let mut read = ReadBody {
            bytes: Vec::new(),
            received: 0,
            truncated: false,
            refused: false,
            complete: true,
        };
        keep_up_to(&mut read, &Bytes::from_static(b"abc"), 5);
        assert!(!read.truncated);
        keep_up_to(&mut read, &Bytes::from_static(b"de"), 5);
        assert!(!read.truncated, "exactly max is not truncated");
        keep_up_to(&mut read, &Bytes::from_static(b"f"), 5);
        assert!(read.truncated);
        assert_eq!(read.bytes, b"abcde");
    }

    #[test]
    fn delays_add_up_per_connection_then_the_connection_is_closed() {
        let conn = ConnInfo {
            peer: "127.0.0.1:1".parse().unwrap(),
            tap: crate::rawhead::HeadTap::new(1024),
            delay_spent_ms: Default::default(),
        };
        assert!(
            !delay_closes(&conn, 20_000),
            "20 s of delay so far: the connection stays"
        );
        assert!(delay_closes(&conn, 10_000));
        // Another connection has a budget of its own.
        let other = ConnInfo {
            peer: conn.peer,
            tap: crate::rawhead::HeadTap::new(1024),
            delay_spent_ms: Default::default(),
        };
        assert!(!delay_closes(&other, 29_999));
    }

    #[test]
    fn the_record_is_what_the_response_sends() {
        let spec = ResponseSpec {
            status: 202,
            headers: vec![("X-A".into(), "1".into()), ("x-b".into(), "two".into())],
            body: "accepted".into(),
            delay_ms: 0,
        };
        let res = spec_response(&spec);
        let r = response_record(&res, 250);
        assert_eq!(r.status, 202);
        assert_eq!(r.body_size, 8);
        assert_eq!(r.delay_ms, 250);
        assert_eq!(
            r.headers,
            [
                ("x-a", "1"),
                ("x-b", "two"),
                ("content-type", "text/plain; charset=utf-8"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }

    /// The shared default answer sends exactly the lines its record lists, and those are the
    /// default `200 ok`'s: its type, CORS, the sealing headers.
    #[test]
    fn the_default_answer_records_what_it_sends() {
        let default = &*DEFAULT_ANSWER;
        let record = ResponseRecord::from_json(&default.record).unwrap();
        assert_eq!(
            (record.status, record.body_size, record.delay_ms),
            (200, 2, 0)
        );
        let mut sent: Vec<(String, String)> = default
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        // The request's id goes last, filled in once it is known.
        assert_eq!(sent.pop().unwrap().0, "x-request-id");
        assert_eq!(record.headers, sent);
        let names: Vec<&str> = record.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "access-control-allow-origin",
                "access-control-expose-headers",
                "content-security-policy",
                "x-content-type-options",
            ]
        );
    }

    #[test]
    fn worker_script_fetches_are_recognised() {
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            is_worker_script_fetch(&h)
        };
        assert!(with(&[("service-worker", "script")]));
        assert!(with(&[("sec-fetch-dest", "serviceworker")]));
        assert!(with(&[
            ("sec-fetch-dest", "script"),
            ("sec-fetch-site", "same-origin")
        ]));
        assert!(!with(&[
            ("sec-fetch-dest", "script"),
            ("sec-fetch-site", "cross-site")
        ]));
        assert!(!with(&[("sec-fetch-dest", "document")]));
        assert!(!with(&[]));
    }

    #[test]
    fn browser_navigation_needs_all_signs() {
        let mut h = HeaderMap::new();
        h.insert("sec-fetch-mode", HeaderValue::from_static("navigate"));
        h.insert(
            ACCEPT,
            HeaderValue::from_static("text/html,application/xhtml+xml"),
        );
        assert!(is_browser_navigation(&Method::GET, "", None, &h));
        assert!(!is_browser_navigation(&Method::POST, "", None, &h));
        assert!(!is_browser_navigation(&Method::GET, "/x", None, &h));
        assert!(!is_browser_navigation(&Method::GET, "", Some("a=1"), &h));
        h.insert(ACCEPT, HeaderValue::from_static("*/*"));
        assert!(!is_browser_navigation(&Method::GET, "", None, &h));
    }
}
