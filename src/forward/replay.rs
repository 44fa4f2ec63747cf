//! Sends one captured request to the local target, byte-exact, and reads the response status.
//!
//! hyper's client would lowercase header names and group repeated ones (`HeaderMap`), which
//! breaks signatures over headers and anything that cares about order. So the request head is
//! written here, byte by byte: the request line, `Host` for the target, every captured header in
//! received order with its exact name and value bytes (minus the hop-by-hop headers and the
//! framing headers, see [`is_dropped`]), `Content-Length` when a body is sent, then the body.
//! Only the status line of the answer is needed; the rest of the response is read and discarded
//! in the background so the local server is not reset mid-write.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::urls::LocalUrl;
use crate::model::{HeaderPair, StoredRequest};
use crate::wire::{self, Unsendable, is_dropped};

/// Largest response head read from the local server.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Response bodies are drained for at most this long and this many bytes.
const DRAIN_TIME: Duration = Duration::from_secs(5);
const DRAIN_BYTES: u64 = 16 * 1024 * 1024;

/// Why a request cannot be replayed at all (it could not have been received like this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot be replayed: {0}")]
pub struct Unreplayable(#[from] Unsendable);

/// The bytes to send: the head and whether a body (with `Content-Length`) follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub head: Vec<u8>,
    pub sends_body: bool,
}

/// The request head for `req` aimed at `local`.
pub fn request_head(req: &StoredRequest, local: &LocalUrl) -> Result<Outgoing, Unreplayable> {
    wire::check_request(req)?;
    let target = local.request_target(&req.subpath, &req.query);
    wire::check_target(&target)?;
    let version = if req.http_version == "HTTP/1.0" {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    };
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(format!("{} {target} {version}\r\n", req.method).as_bytes());
    head.extend_from_slice(format!("Host: {}\r\n", local.url.authority()).as_bytes());
    for HeaderPair { name, value } in req.headers.iter().filter(|h| !is_dropped(&h.name)) {
        head.extend_from_slice(name.as_bytes());
        head.push(b':');
        if !value.is_empty() {
            head.push(b' ');
            head.extend_from_slice(value);
        }
        head.extend_from_slice(b"\r\n");
    }
    let sends_body = wire::sends_body(&req.headers, &req.body);
    if sends_body {
        head.extend_from_slice(format!("Content-Length: {}\r\n", req.body.len()).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    Ok(Outgoing { head, sends_body })
}

/// What the local server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// From the start of the connection attempt to the end of the final response head.
    pub latency: Duration,
}

/// Connects to `local`, sends the head and body, and waits (at most `timeout` in all) for the
/// final (non-1xx) response head.
pub async fn send(
    local: &LocalUrl,
    out: &Outgoing,
    body: &[u8],
    head_request: bool,
    timeout: Duration,
) -> Result<Answer, String> {
    let started = Instant::now();
    let exchange = async {
        let mut stream = TcpStream::connect((local.url.host(), local.url.port()))
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", local.url.authority()))?;
        let _ = stream.set_nodelay(true);
        let body = if out.sends_body { body } else { &[][..] };
        let write = async {
            if body.len() <= 64 * 1024 {
                // One write, so a small request leaves in one segment.
                let mut all = out.head.clone();
                all.extend_from_slice(body);
                stream.write_all(&all).await
            } else {
                stream.write_all(&out.head).await?;
                stream.write_all(body).await
            }
        };
        // A server may answer (say 413) and close before reading a large body: then the write
        // fails but the status is still there to read.
        let write_error = write.await.err();
        match read_status(&mut stream, head_request).await {
            Ok((status, rest)) => {
                let latency = started.elapsed();
                tokio::spawn(drain(stream, rest));
                Ok(Answer { status, latency })
            }
            Err(e) => Err(match write_error {
                Some(w) => format!("sending failed: {w}"),
                None => e,
            }),
        }
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "no response within {}",
            humantime::format_duration(timeout)
        )),
    }
}

/// How much of the response body is left after its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    Nothing,
    Length(u64),
    /// Chunked or close-delimited: read until the server closes or the drain limits hit.
    UntilClose,
}

/// Reads response heads until a final one; its status and what body follows.
async fn read_status(stream: &mut TcpStream, head_request: bool) -> Result<(u16, Rest), String> {
    let mut buf = Vec::with_capacity(1024);
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut res = httparse::Response::new(&mut headers);
        match res.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let status = res.code.unwrap_or(0);
                if (100..200).contains(&status) && status != 101 {
                    // Interim (100 Continue, 103 Early Hints): the final answer follows.
                    buf.drain(..len);
                    continue;
                }
                let length = res
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .and_then(|v| v.trim().parse::<u64>().ok());
                let rest = if head_request || status == 204 || status == 304 {
                    Rest::Nothing
                } else if let Some(n) = length {
                    Rest::Length(n.saturating_sub((buf.len() - len) as u64))
                } else {
                    Rest::UntilClose
                };
                return Ok((status, rest));
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_RESPONSE_HEAD => {}
            Ok(httparse::Status::Partial) => return Err("the response head is too large".into()),
            Err(e) => return Err(format!("invalid response: {e}")),
        }
        let mut chunk = [0u8; 8192];
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the response failed: {e}"))?;
        if n == 0 {
            return Err("the connection closed before a response".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Reads and discards the rest of the response within the drain limits, then closes.
async fn drain(mut stream: TcpStream, rest: Rest) {
    let want = match rest {
        Rest::Nothing => return,
        Rest::Length(n) => n.min(DRAIN_BYTES),
        Rest::UntilClose => DRAIN_BYTES,
    };
    let read = async {
        let mut left = want;
        let mut chunk = [0u8; 16 * 1024];
        while left > 0 {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n as u64),
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, headers: &[(&str, &[u8])], body: &[u8]) -> StoredRequest {
        StoredRequest {
            method: method.into(),
            ..StoredRequest::sample("abcdefghij0123456789", "/stripe", "x=1", headers, body)
        }
    }

    fn local() -> LocalUrl {
        LocalUrl::parse("http://127.0.0.1:3000/base").unwrap()
    }

    #[test]
    fn head_keeps_names_order_duplicates_and_bytes() {
        let r = req(
            "POST",
            &[
                ("Host", b"hooks.example"),
                ("X-Dup", b"1"),
                ("content-TYPE", b"application/json"),
                ("Connection", b"keep-alive"),
                ("x-dup", b"2"),
                ("X-Empty", b""),
                ("X-Obs", b"caf\xe9"),
                ("Transfer-Encoding", b"chunked"),
                ("Stripe-Signature", b"t=1,v1=ab"),
            ],
            b"{}",
        );
        let out = request_head(&r, &local()).unwrap();
        assert!(out.sends_body);
        assert_eq!(
            out.head,
            b"POST /base/stripe?x=1 HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nX-Dup: 1\r\n\
              content-TYPE: application/json\r\nx-dup: 2\r\nX-Empty:\r\nX-Obs: caf\xe9\r\n\
              Stripe-Signature: t=1,v1=ab\r\nContent-Length: 2\r\n\r\n"
                .to_vec()
        );
    }

    #[test]
    fn body_framing_follows_the_original() {
        let get = request_head(&req("GET", &[], b""), &local()).unwrap();
        assert!(!get.sends_body);
        assert!(!String::from_utf8_lossy(&get.head).contains("Content-Length"));
        let empty_post =
            request_head(&req("POST", &[("Content-Length", b"0")], b""), &local()).unwrap();
        assert!(empty_post.sends_body);
        assert!(String::from_utf8_lossy(&empty_post.head).ends_with("Content-Length: 0\r\n\r\n"));
        let mut old = req("POST", &[], b"x");
        old.http_version = "HTTP/1.0".into();
        let out = request_head(&old, &local()).unwrap();
        assert!(out.head.starts_with(b"POST /base/stripe?x=1 HTTP/1.0\r\n"));
    }

    #[test]
    fn injection_is_refused() {
        for r in [
            req("GET", &[("X", b"a\r\nInjected: 1")], b""),
            req("GET", &[("X", b"a\0")], b""),
            req("GET", &[("Bad Name", b"a")], b""),
            req("GE T", &[], b""),
        ] {
            assert!(request_head(&r, &local()).is_err(), "{r:?}");
        }
        let mut r = req("GET", &[], b"");
        r.query = "a b".into();
        assert!(request_head(&r, &local()).is_err());
    }
}
