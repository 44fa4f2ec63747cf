//! Replay endpoints (issue 7): copy-as-curl for one request, and the export of a whole bin.
//!
//! - `GET /api/bins/{bin}/requests/{req}/curl[?target=URL]`: one shell command line
//!   ([`crate::render::curl`]). A truncated capture replays only its stored prefix; the answer then
//!   says so in `X-Hookbin-Warning`, since the command itself must stay one line. `download=1`
//!   offers it as a file (`request-{id}.curl.sh`): what the request page links to when the
//!   command is too long to show (a large body is in it).
//! - `GET /api/bins/{bin}/export?format=har|json`: streamed entry by entry. A bin holds up to
//!   `--max-requests-per-bin` requests of up to `--max-body-bytes` each (1000 x 5 MiB by
//!   default), so the document is never built in memory: requests are read in pages bounded by
//!   body bytes, each entry is rendered and sent through a small channel, and memory stays at a
//!   few entries whatever the bin holds. The export covers the requests present when it started.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Request, Response, StatusCode};
use tokio::sync::mpsc;

use super::views;
use crate::bins;
use crate::clock::now_ms;
use crate::ids::{BinId, RequestId};
use crate::model::StoredRequest;
use crate::render::{CurlError, curl_command, har};
use crate::state::AppState;
use crate::web::body::{self, Body, ChannelBody};
use crate::web::client::capture_base;
use crate::web::error::ApiError;

/// Rows per export query at most.
const PAGE_ROWS: usize = 100;
/// A page stops after the row whose body crosses this many bytes.
const PAGE_BYTES: usize = 4 * 1024 * 1024;
/// Rendered entries waiting for the client at most.
const CHANNEL_ENTRIES: usize = 2;

type ApiResult = Result<Response<Body>, ApiError>;

/// The header a `/curl` answer carries when the command cannot send the whole original body.
pub const WARNING_HEADER: &str = "x-hookbin-warning";

pub async fn curl(
    state: &AppState,
    req: &Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> ApiResult {
    let request = bins::find_request(state, &bin, id).await?;
    let target = query_param(req.uri().query(), "target").filter(|t| !t.is_empty());
    let base = capture_base(&state.config, req.headers());
    let command = curl_command(&request, &base, target.as_deref()).map_err(|e| match e {
        CurlError::InvalidTarget(_) => ApiError::bad_request("invalid_target", e.to_string()),
        CurlError::Unreproducible(_) => {
            ApiError::unprocessable("unreproducible_request", e.to_string())
        }
        // Our own base URL (configuration or a validated Host): not the client's mistake.
        CurlError::InvalidBase(_) => ApiError::internal("copy-as-curl", &e),
    })?;
    let mut res = body::text(StatusCode::OK, command + "\n");
    let h = res.headers_mut();
    // The command can carry tokens and signatures: keep it out of shared caches.
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if matches!(
        query_param(req.uri().query(), "download").as_deref(),
        Some("1" | "true")
    ) {
        let name = format!("attachment; filename=\"request-{id}.curl.sh\"");
        if let Ok(v) = HeaderValue::from_str(&name) {
            h.insert(CONTENT_DISPOSITION, v);
        }
    }
    if request.body_truncated {
        let warning = format!(
            "body truncated; the command sends only the first {} bytes",
            request.body.len()
        );
        if let Ok(v) = HeaderValue::from_str(&warning) {
            h.insert(WARNING_HEADER, v);
        }
    }
    Ok(res)
}

/// The first value of `name` in a query string, decoded as a form value.
fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Har,
    Json,
}

impl Format {
    fn parse(query: Option<&str>) -> Result<Format, ApiError> {
        match query_param(query, "format").as_deref() {
            Some("har") => Ok(Format::Har),
            Some("json") => Ok(Format::Json),
            _ => Err(ApiError::bad_request(
                "invalid_format",
                "format must be har (HAR 1.2) or json (an array of Request)",
            )),
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Har => "har",
            Format::Json => "json",
        }
    }
}

/// What goes around the entries: `[` and `]` for JSON, the HAR log for HAR.
struct Envelope {
    open: String,
    close: String,
}

impl Envelope {
    fn new(format: Format, bin_url: &str) -> Result<Envelope, ApiError> {
        match format {
            Format::Json => Ok(Envelope {
                open: "[".into(),
                close: "]".into(),
            }),
            Format::Har => {
                // The renderer's own log with no entries, cut open where the entries go, so the
                // envelope stays the renderer's whatever fields it has.
                let empty = har(&[], bin_url, env!("CARGO_PKG_VERSION")).to_string();
                const SLOT: &str = "\"entries\":[]";
                let at = empty.find(SLOT).ok_or_else(|| {
                    ApiError::internal("HAR export", &"the HAR log has no entries array")
                })?;
                let split = at + SLOT.len() - 1;
                Ok(Envelope {
                    open: empty[..split].to_owned(),
                    close: empty[split..].to_owned(),
                })
            }
        }
    }
}

/// One entry of the export as JSON text.
fn render_entry(
    format: Format,
    request: &StoredRequest,
    bin_url: &str,
    decode_limit: usize,
) -> String {
    match format {
        Format::Json => views::request(request, decode_limit).to_string(),
        Format::Har => {
            let log = har(
                std::slice::from_ref(request),
                bin_url,
                env!("CARGO_PKG_VERSION"),
            );
            log["log"]["entries"][0].to_string()
        }
    }
}

pub async fn export(state: &Arc<AppState>, req: &Request<Incoming>, bin: &BinId) -> ApiResult {
    bins::live(state, bin, now_ms()).await?;
    let format = Format::parse(req.uri().query())?;
    let bin_url = format!("{}/r/{bin}", capture_base(&state.config, req.headers()));
    let envelope = Envelope::new(format, &bin_url)?;
    // A snapshot by id: requests captured while the export runs are not in it, so a busy bin
    // cannot keep the download going forever.
    let upto = state.store.last_request_id(bin.as_str()).await?;
    // The first page is read before answering, so that a failing database is still a 500.
    let first = state
        .store
        .requests_page(bin.as_str(), 0, upto, PAGE_ROWS, PAGE_BYTES)
        .await?;
    let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_ENTRIES);
    let feed = Feed {
        state: state.clone(),
        bin: bin.clone(),
        bin_url,
        format,
        upto,
        tx,
    };
    state.tasks.spawn(feed.run(envelope, first));

    let mut res = Response::new(ChannelBody(rx).boxed_unsync());
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let disposition = format!(
        "attachment; filename=\"hookbin-{bin}.{}\"",
        format.extension()
    );
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(CONTENT_DISPOSITION, v);
    }
    Ok(res)
}

/// The task that writes one export into its response body.
struct Feed {
    state: Arc<AppState>,
    bin: BinId,
    bin_url: String,
    format: Format,
    upto: i64,
    tx: mpsc::Sender<Bytes>,
}

impl Feed {
    /// Sends the document. If the database fails midway the body ends without the closing
    /// brackets, so the client gets invalid JSON rather than a document that looks complete.
    async fn run(self, envelope: Envelope, first: Vec<StoredRequest>) {
        if !self.send(envelope.open).await {
            return;
        }
        let mut page = first;
        let mut sent = 0usize;
        while let Some(last) = page.last().map(|r| r.id.get()) {
            for request in &page {
                let mut chunk = String::new();
                if sent > 0 {
                    chunk.push(',');
                }
                chunk.push_str(&render_entry(
                    self.format,
                    request,
                    &self.bin_url,
                    self.state.config.max_decoded_bytes,
                ));
                if !self.send(chunk).await {
                    return;
                }
                sent += 1;
            }
            // Free this page before reading the next one.
            drop(page);
            page = match self
                .state
                .store
                .requests_page(self.bin.as_str(), last, self.upto, PAGE_ROWS, PAGE_BYTES)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(bin_id = %self.bin, cause = %e, "export failed midway; the download is cut short");
                    return;
                }
            };
        }
        self.send(envelope.close).await;
        tracing::debug!(bin_id = %self.bin, entries = sent, "export sent");
    }

    /// False when the client went away or the server is stopping.
    async fn send(&self, chunk: String) -> bool {
        tokio::select! {
            sent = self.tx.send(Bytes::from(chunk)) => sent.is_ok(),
            _ = self.state.shutdown.triggered() => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(id: &str, body: &[u8]) -> StoredRequest {
        let headers: &[(&str, &[u8])] = &[("X-Obs", b"caf\xe9")];
        StoredRequest {
            id: RequestId::parse(id).unwrap(),
            received_at: 1_700_000_000_000,
            ..StoredRequest::sample("abcdefghijklmnop", "/x", "a=1", headers, body)
        }
    }

    /// What `Feed::run` writes, assembled synchronously.
    const LIMIT: usize = 1 << 20;

    fn streamed(format: Format, requests: &[StoredRequest], bin_url: &str) -> String {
        let envelope = Envelope::new(format, bin_url).unwrap();
        let entries: Vec<String> = requests
            .iter()
            .map(|r| render_entry(format, r, bin_url, LIMIT))
            .collect();
        format!("{}{}{}", envelope.open, entries.join(","), envelope.close)
    }

    #[test]
    fn streamed_har_equals_the_renderers_document() {
        let url = "http://h/r/abcdefghijklmnop";
        for reqs in [
            vec![],
            vec![stored("1", b"{}")],
            vec![stored("1", b"a"), stored("2", b"\xff\x00")],
        ] {
            let text = streamed(Format::Har, &reqs, url);
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(parsed, har(&reqs, url, env!("CARGO_PKG_VERSION")));
        }
    }

    #[test]
    fn streamed_json_is_an_array_of_request() {
        let reqs = [stored("1", b"a"), stored("2", b"b")];
        let parsed: serde_json::Value =
            serde_json::from_str(&streamed(Format::Json, &reqs, "http://h/r/x")).unwrap();
        let expected: Vec<serde_json::Value> =
            reqs.iter().map(|r| views::request(r, LIMIT)).collect();
        assert_eq!(parsed, serde_json::Value::Array(expected));
        let empty: serde_json::Value =
            serde_json::from_str(&streamed(Format::Json, &[], "http://h/r/x")).unwrap();
        assert_eq!(empty, serde_json::json!([]));
    }

    #[test]
    fn format_is_required() {
        assert_eq!(Format::parse(Some("format=har")), Ok(Format::Har));
        assert_eq!(Format::parse(Some("x=1&format=json")), Ok(Format::Json));
        for q in [
            None,
            Some(""),
            Some("format="),
            Some("format=HAR"),
            Some("format=csv"),
        ] {
            let e = Format::parse(q).unwrap_err();
            assert_eq!(
                (e.status, e.code),
                (StatusCode::BAD_REQUEST, "invalid_format")
            );
        }
    }
}
