//! Sends one captured request to the local target, byte-exact, and reads the response status.
//!
//! The request is built for [`crate::client`], which writes it byte by byte: the request line,
//! `Host` for the target, every captured header in received order with its exact name and value
//! bytes (minus the hop-by-hop headers and the framing headers, see [`crate::wire::is_dropped`]),
//! `Content-Length` when a body is sent, then the body. Only the status of the answer is needed;
//! the rest of the response is read and discarded in the background so the local server is not
//! reset mid-write.

use std::time::Duration;

use super::urls::LocalUrl;
use crate::client::{Client, Request, Version};
use crate::model::StoredRequest;
use crate::wire::{self, Unsendable, is_dropped};

/// Response bodies are drained for at most this long and this many bytes.
const DRAIN_TIME: Duration = Duration::from_secs(5);
const DRAIN_BYTES: u64 = 16 * 1024 * 1024;

/// Why a request cannot be replayed at all (it could not have been received like this).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot be replayed: {0}")]
pub struct Unreplayable(#[from] Unsendable);

/// The request for `req` aimed at `local`.
pub fn request(req: &StoredRequest, local: &LocalUrl) -> Result<Request, Unreplayable> {
    wire::check_request(req)?;
    let target = local.request_target(&req.subpath, &req.query);
    wire::check_target(&target)?;
    let version = if req.http_version == "HTTP/1.0" {
        Version::Http10
    } else {
        Version::Http11
    };
    let mut out = Request::new(req.method.clone(), target).version(version);
    out.headers = req
        .headers
        .iter()
        .filter(|h| !is_dropped(&h.name))
        .cloned()
        .collect();
    if wire::sends_body(&req.headers, &req.body) {
        out = out.body(req.body.clone());
    }
    Ok(out)
}

/// What the local server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// From the start of the connection attempt to the end of the final response head.
    pub latency: Duration,
}

/// Connects to `local`, sends the request and waits (at most `timeout` in all) for the final
/// (non-1xx) response head.
pub async fn send(
    client: &Client,
    local: &LocalUrl,
    request: &Request,
    timeout: Duration,
) -> Result<Answer, String> {
    let response = client
        .send(&local.url, request, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let answer = Answer {
        status: response.status,
        latency: response.elapsed,
    };
    // Not tracked: a client-side courtesy bounded by DRAIN_TIME, with nothing to commit; the
    // runtime drops it when forward exits.
    tokio::spawn(response.drain(DRAIN_BYTES, DRAIN_TIME));
    Ok(answer)
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

    fn head(r: &StoredRequest) -> Result<Vec<u8>, String> {
        let local = local();
        let out = request(r, &local).map_err(|e| e.to_string())?;
        out.head(local.url.authority()).map_err(|e| e.to_string())
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
        assert!(request(&r, &local()).unwrap().body.is_some());
        assert_eq!(
            head(&r).unwrap(),
            b"POST /base/stripe?x=1 HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nX-Dup: 1\r\n\
              content-TYPE: application/json\r\nx-dup: 2\r\nX-Empty:\r\nX-Obs: caf\xe9\r\n\
              Stripe-Signature: t=1,v1=ab\r\nContent-Length: 2\r\n\r\n"
                .to_vec()
        );
    }

    #[test]
    fn body_framing_follows_the_original() {
        let get = req("GET", &[], b"");
        assert!(request(&get, &local()).unwrap().body.is_none());
        assert!(!String::from_utf8_lossy(&head(&get).unwrap()).contains("Content-Length"));
        let empty_post = req("POST", &[("Content-Length", b"0")], b"");
        assert_eq!(
            request(&empty_post, &local()).unwrap().body.as_deref(),
            Some(&b""[..])
        );
        assert!(
            String::from_utf8_lossy(&head(&empty_post).unwrap())
                .ends_with("Content-Length: 0\r\n\r\n")
        );
        let mut old = req("POST", &[], b"x");
        old.http_version = "HTTP/1.0".into();
        assert!(
            head(&old)
                .unwrap()
                .starts_with(b"POST /base/stripe?x=1 HTTP/1.0\r\n")
        );
    }

    #[test]
    fn injection_is_refused() {
        for r in [
            req("GET", &[("X", b"a\r\nInjected: 1")], b""),
            req("GET", &[("X", b"a\0")], b""),
            req("GET", &[("Bad Name", b"a")], b""),
            req("GE T", &[], b""),
        ] {
            assert!(request(&r, &local()).is_err(), "{r:?}");
        }
        let mut r = req("GET", &[], b"");
        r.query = "a b".into();
        assert!(request(&r, &local()).is_err());
    }
}
