//! HTTP/1 wire rules for sending a request on: what a token is, what one request line and one
//! header line can carry, which headers a replay leaves out, and when a body goes with it.
//!
//! Copy-as-curl ([`crate::render::curl`]) and `hookbin forward` ([`crate::forward`]) follow the
//! same rules, so a pasted curl command and a forwarded request send the same thing; the HTTP
//! client checks every request it writes against them. [`url`] is the one URL type.
//!
//! Pure functions, no I/O.

pub mod url;

use crate::model::{HeaderPair, StoredRequest};

/// Hop-by-hop headers (RFC 9110 §7.6.1, plus the legacy `Keep-Alive` and `Proxy-Connection`):
/// they describe one connection, so a replay must not forward them and a custom response may
/// not set them.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

pub fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Whether a replay leaves header `name` out: hop-by-hop headers, and `Content-Length` and
/// `Host`, which the replaying client computes from the body and the URL.
pub fn is_dropped(name: &str) -> bool {
    is_hop_by_hop(name)
        || name.eq_ignore_ascii_case("content-length")
        || name.eq_ignore_ascii_case("host")
}

/// RFC 9110 `tchar`: the characters a method or header name (a `token`) may contain.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// RFC 9110 `token`: a method or a header name.
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// Whether a replay carries a body: always when there are body bytes, and for an empty body when
/// the original announced one (`Content-Length: 0`, or chunked with no data), so that the replay
/// carries `Content-Length: 0` too.
pub fn sends_body(headers: &[HeaderPair], body: &[u8]) -> bool {
    !body.is_empty()
        || headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-length")
                || h.name.eq_ignore_ascii_case("transfer-encoding")
        })
}

/// The request-target for a path under a prefix: `{prefix}{path}` (`/` when both are empty),
/// then `?query` when there is one. Not checked: see [`check_target`].
pub fn request_target(prefix: &str, path: &str, query: &str) -> String {
    let mut t = format!("{prefix}{path}");
    if t.is_empty() {
        t.push('/');
    }
    if !query.is_empty() {
        t.push('?');
        t.push_str(query);
    }
    t
}

/// Why a request cannot go on the wire as it is: no HTTP/1 request can carry it, so it cannot
/// have been received like that either (a stored one was tampered with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unsendable {
    #[error("the method is not an HTTP token")]
    Method,
    #[error("a header name is not an HTTP token")]
    HeaderName,
    /// A CR or LF would end the header line early (header injection), a NUL is never allowed.
    #[error("a header value holds CR, LF or NUL")]
    HeaderValue,
    #[error("the path or query holds whitespace or control characters")]
    Target,
    /// `Content-Length` and `Transfer-Encoding` are the sender's to write, from the body.
    #[error("a framing header (Content-Length, Transfer-Encoding) among the headers")]
    Framing,
}

pub fn check_method(method: &str) -> Result<(), Unsendable> {
    if is_token(method) {
        Ok(())
    } else {
        Err(Unsendable::Method)
    }
}

/// One header line: a token name and a value without CR, LF or NUL (obs-text is fine).
pub fn check_header(name: &str, value: &[u8]) -> Result<(), Unsendable> {
    if !is_token(name) {
        return Err(Unsendable::HeaderName);
    }
    if value.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(Unsendable::HeaderValue);
    }
    Ok(())
}

/// A request line cannot hold whitespace or control bytes.
pub fn check_target(target: &str) -> Result<(), Unsendable> {
    if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        Err(Unsendable::Target)
    } else {
        Ok(())
    }
}

/// The method and every header of a stored request (the target depends on where it goes).
pub fn check_request(req: &StoredRequest) -> Result<(), Unsendable> {
    check_method(&req.method)?;
    req.headers
        .iter()
        .try_for_each(|h| check_header(&h.name, &h.value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        for ok in [
            "GET",
            "PROPFIND",
            "get",
            "M'1",
            "X-Custom_Header.1",
            "!#$%&'*+-.^_`|~",
        ] {
            assert!(is_token(ok), "{ok}");
        }
        for bad in ["", "GE T", "a:b", "a\"b", "é", "(x)", "a\tb"] {
            assert!(!is_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn dropped_headers_are_hop_by_hop_plus_framing_and_host() {
        for name in [
            "Connection",
            "KEEP-ALIVE",
            "proxy-connection",
            "TE",
            "Trailer",
            "transfer-encoding",
            "Upgrade",
            "Content-Length",
            "host",
        ] {
            assert!(is_dropped(name), "{name}");
        }
        for name in ["Content-Type", "X-Host", "Expect", "Authorization"] {
            assert!(!is_dropped(name), "{name}");
        }
        assert!(!is_hop_by_hop("host") && !is_hop_by_hop("content-length"));
    }

    #[test]
    fn a_body_goes_with_bytes_or_with_framing_headers() {
        let h = |n: &str| vec![HeaderPair::new(n, "0")];
        assert!(sends_body(&[], b"x"));
        assert!(!sends_body(&[], b""));
        assert!(sends_body(&h("content-length"), b""));
        assert!(sends_body(&h("Transfer-Encoding"), b""));
        assert!(!sends_body(&h("Content-Type"), b""));
    }

    #[test]
    fn targets() {
        assert_eq!(request_target("", "", ""), "/");
        assert_eq!(request_target("", "", "q"), "/?q");
        assert_eq!(request_target("/base", "", ""), "/base");
        assert_eq!(request_target("/base", "/a", "x=1"), "/base/a?x=1");
        assert_eq!(check_target("/a%20b?c=#"), Ok(()));
        for bad in ["/a b", "/a\tb", "/\u{7f}", "/\n"] {
            assert_eq!(check_target(bad), Err(Unsendable::Target), "{bad:?}");
        }
    }

    #[test]
    fn header_lines() {
        assert_eq!(check_header("X-Obs", b"caf\xe9 \x80"), Ok(()));
        assert_eq!(check_header("X-Empty", b""), Ok(()));
        assert_eq!(check_header("Bad Name", b"v"), Err(Unsendable::HeaderName));
        assert_eq!(check_header("", b"v"), Err(Unsendable::HeaderName));
        for v in [&b"a\r\nInjected: 1"[..], b"a\n", b"a\r", b"a\0"] {
            assert_eq!(check_header("X", v), Err(Unsendable::HeaderValue), "{v:?}");
        }
    }
}
