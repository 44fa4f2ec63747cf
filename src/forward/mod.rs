//! `hookbin forward BIN_URL --to LOCAL_URL`: follow a bin and replay each new request to a
//! local server, byte-exact, so that signatures still verify there.
//!
//! - [`urls`]: the bin URL (any of its forms, under a path prefix) and the local target.
//! - [`client`]: the bin's API and its event stream.
//! - [`sse`]: the event-stream parser.
//! - [`replay`]: the captured request as sent to the local server, and its status.
//!
//! Both sides go through [`crate::client`] (TLS for an `https://` bin URL).
//!
//! Flow: check the bin (404: exit), note the newest request id, then follow
//! `/api/bins/{bin}/stream` with `Last-Event-ID` set to the last request handled (the newest at
//! start, `0` for an empty bin). For each `request` event: fetch the Request JSON, replay it,
//! print one line, remember its id. Requests are handled one at a time, in id order; while one
//! is replayed the server holds the next ones back (or replays them from the database after
//! `Last-Event-ID`). When the stream drops, or a fetch fails, reconnect with backoff (0.5 s
//! doubling to 10 s) from the last id handled: nothing is lost, nothing is replayed twice.
//! A local server that is down or slow costs a line with the error, not the stream.

pub mod client;
pub mod replay;
pub mod sse;
pub mod urls;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::client::Client;
use crate::model::{HeaderPair, StoredRequest};
use client::{Api, CallError};
use urls::{BinUrl, LocalUrl};

const BACKOFF_START: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A stream that stayed open this long counts as healthy when it drops.
const HEALTHY_STREAM: Duration = Duration::from_secs(10);

/// Why `forward` stopped.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("invalid BIN_URL {url:?}: {reason}")]
    BinUrl { url: String, reason: String },
    #[error("invalid --to {url:?}: {reason}")]
    LocalUrl { url: String, reason: String },
    #[error("{0}")]
    Setup(String),
    #[error("no such bin: {0} (it never existed, was deleted, or has expired)")]
    BinNotFound(String),
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url}: {reason}")]
    Api { url: String, reason: String },
    #[error("the bin has no requests yet: nothing to replay")]
    Empty,
    #[error("the replay failed")]
    ReplayFailed,
}

impl ForwardError {
    /// 2 for arguments that make no sense (as for bad flags), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            ForwardError::BinUrl { .. } | ForwardError::LocalUrl { .. } => 2,
            _ => 1,
        }
    }
}

/// A request fetched from the bin, ready to replay.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub id: i64,
    pub request: StoredRequest,
    /// As the API wrote it (RFC 3339, ms, UTC).
    pub received_at: String,
}

/// Reads a Request JSON. Header values come from `headers_base64` (exact bytes); a server that
/// predates it only has the lossy `headers`.
pub fn parse_request(v: &Value) -> Result<Fetched, String> {
    let text = |key: &str| {
        v[key]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("the request JSON has no {key:?}"))
    };
    let id = crate::ids::RequestId::parse(&text("id")?).ok_or("the request id is not a number")?;
    let pairs = |key: &str, decode: bool| -> Option<Result<Vec<HeaderPair>, String>> {
        let list = v[key].as_array()?;
        Some(
            list.iter()
                .map(|pair| {
                    let (Some(name), Some(value)) = (pair[0].as_str(), pair[1].as_str()) else {
                        return Err(format!("{key}: expected [name, value] pairs"));
                    };
                    let value = if decode {
                        STANDARD
                            .decode(value)
                            .map_err(|e| format!("{key}: bad base64: {e}"))?
                    } else {
                        value.as_bytes().to_vec()
                    };
                    Ok(HeaderPair::new(name, value))
                })
                .collect(),
        )
    };
    let headers = pairs("headers_base64", true)
        .or_else(|| pairs("headers", false))
        .ok_or("the request JSON has no headers")??;
    let body = STANDARD
        .decode(text("body_base64")?)
        .map_err(|e| format!("body_base64: {e}"))?;
    let request = StoredRequest {
        id,
        bin_id: String::new(),
        method: text("method")?,
        path: text("path")?,
        subpath: text("subpath")?,
        query: text("query")?,
        headers,
        body_size: v["body_size"].as_u64().unwrap_or(body.len() as u64),
        body,
        body_truncated: v["body_truncated"].as_bool().unwrap_or(false),
        remote_addr: String::new(),
        http_version: text("http_version").unwrap_or_else(|_| "HTTP/1.1".into()),
        received_at: 0,
        // What hookbin answered plays no part in a replay.
        response: None,
    };
    Ok(Fetched {
        id: id.get(),
        request,
        received_at: text("received_at").unwrap_or_default(),
    })
}

/// One output line: `{capture time}  {METHOD} {local path}  -> {outcome}`.
fn line(received_at: &str, method: &str, target: &str, outcome: &str) -> String {
    // Paths are visible ASCII (or UTF-8) by construction; escape anything else all the same,
    // so that nothing captured can drive the terminal.
    let clean = |s: &str| -> String {
        s.chars()
            .flat_map(|c| {
                if c.is_control() {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect()
    };
    format!(
        "{received_at}  {} {}  -> {outcome}",
        clean(method),
        clean(target)
    )
}

/// Prints to stdout, one flushed line at a time (the output is often piped or watched).
fn print(out: &mut dyn Write, text: &str) {
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Replays `fetched` to `local` and prints its line. `false` when the replay did not happen.
async fn replay_one(
    client: &Client,
    fetched: &Fetched,
    local: &LocalUrl,
    timeout: Duration,
    out: &mut dyn Write,
) -> bool {
    let req = &fetched.request;
    let target = local.request_target(&req.subpath, &req.query);
    let say = |out: &mut dyn Write, outcome: String| {
        print(
            out,
            &line(&fetched.received_at, &req.method, &target, &outcome),
        );
    };
    let request = match replay::request(req, local) {
        Ok(request) => request,
        Err(e) => {
            say(out, format!("not sent: {e}"));
            return false;
        }
    };
    match replay::send(client, local, &request, timeout).await {
        Ok(answer) => {
            let mut outcome = format!("{}  {} ms", answer.status, answer.latency.as_millis());
            if req.body_truncated {
                outcome.push_str(&format!(
                    "  (body truncated at capture: sent the first {} of {} bytes)",
                    req.body.len(),
                    req.body_size
                ));
            }
            say(out, outcome);
            true
        }
        Err(e) => {
            say(out, format!("error: {e}"));
            false
        }
    }
}

/// What to forward where: `hookbin forward`'s flags (`cli::ForwardArgs`), as plain settings.
/// The URLs are checked by [`run`], which reports a bad one with its exit code.
#[derive(Debug, Clone)]
pub struct Options {
    /// The bin's capture URL (`.../r/BIN`) or inspector URL (`.../bins/BIN`).
    pub bin_url: String,
    /// `http://HOST[:PORT][/PATH]`: the captured subpath and query are appended.
    pub to: String,
    /// Replay the latest request once, then stop.
    pub once: bool,
    /// How long to wait for the local server's response status.
    pub timeout: Duration,
    /// Extra CA certificates (PEM) for an https bin URL.
    pub ca_cert: Option<PathBuf>,
}

/// Runs `hookbin forward` until the bin goes away (error) or, with `--once`, after one replay.
/// The caller stops it on Ctrl-C by dropping the future.
pub async fn run(args: &Options, out: &mut dyn Write) -> Result<(), ForwardError> {
    let bin = BinUrl::parse(&args.bin_url).map_err(|reason| ForwardError::BinUrl {
        url: args.bin_url.clone(),
        reason,
    })?;
    let local = LocalUrl::parse(&args.to).map_err(|reason| ForwardError::LocalUrl {
        url: args.to.clone(),
        reason,
    })?;
    let client =
        Client::new(args.ca_cert.as_deref()).map_err(|e| ForwardError::Setup(e.to_string()))?;
    let mut api = Api::new(&bin, client.clone());
    let api_error = |e: CallError| match e {
        e if e.is_not_found() => ForwardError::BinNotFound(bin.capture_url.clone()),
        CallError::Transport(reason) => ForwardError::Unreachable {
            url: bin.capture_url.clone(),
            reason,
        },
        e @ CallError::Status { .. } => ForwardError::Api {
            url: bin.capture_url.clone(),
            reason: e.to_string(),
        },
    };
    api.get_json("").await.map_err(api_error)?;
    let newest = api.get_json("/requests?limit=1").await.map_err(api_error)?["data"][0]["id"]
        .as_str()
        .and_then(crate::ids::parse_request_id);

    if args.once {
        let id = newest.ok_or(ForwardError::Empty)?;
        let json = api
            .get_json(&format!("/requests/{id}"))
            .await
            .map_err(api_error)?;
        let fetched = parse_request(&json).map_err(|reason| ForwardError::Api {
            url: bin.capture_url.clone(),
            reason,
        })?;
        return if replay_one(&client, &fetched, &local, args.timeout, out).await {
            Ok(())
        } else {
            Err(ForwardError::ReplayFailed)
        };
    }

    eprintln!(
        "hookbin forward: following {} and replaying new requests to {} (Ctrl-C to stop)",
        bin.capture_url, local.url
    );
    let mut follower = Follower {
        api,
        client,
        local,
        timeout: args.timeout,
        last_id: newest.unwrap_or(0),
    };
    follower.follow(out).await.map_err(|e| match e {
        Stop::BinGone => ForwardError::BinNotFound(bin.capture_url.clone()),
        Stop::Refused(reason) => ForwardError::Api {
            url: bin.capture_url.clone(),
            reason,
        },
    })
}

/// Why following ended.
enum Stop {
    /// The bin was deleted or expired.
    BinGone,
    /// The server refused the stream for a reason retrying will not fix.
    Refused(String),
}

struct Follower {
    api: Api,
    client: Client,
    local: LocalUrl,
    timeout: Duration,
    /// The last request handled (replayed, or found deleted): the stream resumes after it.
    last_id: i64,
}

impl Follower {
    async fn follow(&mut self, out: &mut dyn Write) -> Result<(), Stop> {
        let mut backoff = BACKOFF_START;
        let mut lost = false;
        loop {
            match self.api.open_stream(self.last_id).await {
                Ok(mut stream) => {
                    if lost {
                        eprintln!(
                            "hookbin forward: reconnected; resuming after request {}",
                            self.last_id
                        );
                    }
                    let (opened, before) = (Instant::now(), self.last_id);
                    let reason = self.drain_stream(&mut stream, out).await?;
                    // A stream that worked for a while starts the backoff over; one that fails
                    // at once every time (say a fetch that keeps failing) backs off further.
                    if self.last_id != before || opened.elapsed() >= HEALTHY_STREAM {
                        backoff = BACKOFF_START;
                    }
                    eprintln!(
                        "hookbin forward: {reason}; reconnecting in {} ms",
                        backoff.as_millis()
                    );
                }
                Err(e) if e.is_not_found() => return Err(Stop::BinGone),
                Err(CallError::Status { status, message })
                    if (400..500).contains(&status) && status != 408 && status != 429 =>
                {
                    return Err(Stop::Refused(format!("{status}: {message}")));
                }
                Err(e) => {
                    eprintln!(
                        "hookbin forward: cannot open the stream ({e}); retrying in {} ms",
                        backoff.as_millis()
                    );
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
            lost = true;
        }
    }

    /// Handles events until the stream ends; why it ended.
    async fn drain_stream(
        &mut self,
        stream: &mut client::EventStream,
        out: &mut dyn Write,
    ) -> Result<String, Stop> {
        loop {
            let event = match stream.next().await {
                Ok(event) => event,
                Err(reason) => return Ok(reason),
            };
            match event.event.as_str() {
                "request" => {}
                "bin_deleted" => return Err(Stop::BinGone),
                _ => continue,
            }
            let Some(id) = event.id.as_deref().and_then(crate::ids::parse_request_id) else {
                continue;
            };
            if id <= self.last_id {
                continue;
            }
            match self.api.get_json(&format!("/requests/{id}")).await {
                Ok(json) => match parse_request(&json) {
                    Ok(fetched) => {
                        replay_one(&self.client, &fetched, &self.local, self.timeout, out).await;
                    }
                    Err(e) => print(out, &format!("request {id}: not replayed: {e}")),
                },
                Err(e) if e.is_not_found() => {
                    // Deleted (or evicted) between the event and the fetch.
                    let summary: Value = serde_json::from_str(&event.data).unwrap_or_default();
                    let field = |k: &str| summary[k].as_str().unwrap_or("").to_owned();
                    let target = self
                        .local
                        .request_target(&field("subpath"), &field("query"));
                    print(
                        out,
                        &line(
                            &field("received_at"),
                            &field("method"),
                            &target,
                            "skipped: deleted from the bin before it could be fetched",
                        ),
                    );
                }
                // Not handled yet: reconnecting resumes at this request.
                Err(e) => return Ok(format!("fetching request {id} failed ({e})")),
            }
            self.last_id = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_json_prefers_exact_header_bytes() {
        let v = json!({
            "id": "42", "method": "POST", "path": "/r/abcdefghij0123456789/x", "subpath": "/x",
            "query": "a=1", "http_version": "HTTP/1.0", "received_at": "2026-11-29T20:01:02.123Z",
            "headers": [["X-Obs", "caf\u{fffd}"]],
            "headers_base64": [["X-Obs", "Y2Fm6Q=="]],
            "body_base64": "AP8=", "body_size": 10, "body_truncated": true,
        });
        let f = parse_request(&v).unwrap();
        assert_eq!(f.id, 42);
        assert_eq!(
            f.request.headers,
            vec![HeaderPair::new("X-Obs", b"caf\xe9".to_vec())]
        );
        assert_eq!(f.request.body, b"\x00\xff");
        assert!(f.request.body_truncated);
        assert_eq!(f.request.body_size, 10);
        assert_eq!(f.request.http_version, "HTTP/1.0");
        // Without headers_base64 (an older server): the lossy text.
        let mut old = v.clone();
        old.as_object_mut().unwrap().remove("headers_base64");
        let f = parse_request(&old).unwrap();
        assert_eq!(f.request.headers[0].value, "caf\u{fffd}".as_bytes());
        let mut broken = v;
        broken["body_base64"] = json!("!!");
        assert!(parse_request(&broken).is_err());
    }

    #[test]
    fn lines_have_time_method_path_outcome_and_no_controls() {
        assert_eq!(
            line(
                "2026-11-29T20:01:02.123Z",
                "POST",
                "/webhooks/stripe?x=1",
                "200  12 ms"
            ),
            "2026-11-29T20:01:02.123Z  POST /webhooks/stripe?x=1  -> 200  12 ms"
        );
        assert!(!line("t", "GET", "/a\u{1b}[31m", "x").contains('\u{1b}'));
    }
}
