//! The one URL type: every absolute `http(s)` URL hookbin is given (`--public-url`, the target of
//! copy-as-curl, the bin URL and `--to` of `hookbin forward`, `hookbin healthcheck --url`) is an
//! [`HttpUrl`].
//!
//! Parsed once with `http::Uri` (hyper's own URI type), then kept as written: hookbin keeps
//! bytes, and `http::Uri` neither normalises paths nor percent-encodes, so the path and query
//! are the user's. On top of what `http::Uri` checks, a URL to send requests to must have a
//! usable host (a name, an IPv4 address or a bracketed IPv6 address) and port (1 to 65535), and
//! must not carry credentials (curl would turn them into an `Authorization` header the original
//! did not have) or a fragment (which `http::Uri` would silently drop).

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use hyper::Uri;
use hyper::http::uri::{InvalidUri, Scheme};

/// Why a URL was refused; the text completes "invalid ... URL: ".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("must be an absolute http:// or https:// URL")]
    NotHttp,
    #[error("contains whitespace, control or non-ASCII characters")]
    Characters,
    #[error("is not a valid URL ({0})")]
    Malformed(String),
    #[error("must not contain credentials")]
    Credentials,
    #[error("invalid host")]
    Host,
    #[error("invalid port")]
    Port,
    #[error("must not have a fragment")]
    Fragment,
    #[error("must not have a query; the captured query is appended")]
    Query,
}

/// An absolute `http://` or `https://` URL with a host, without credentials or fragment.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// As given.
    text: String,
    uri: Uri,
    tls: bool,
    /// What to connect to: the host without IPv6 brackets.
    host: String,
    /// The explicit port, or 80 / 443.
    port: u16,
    /// `text[..origin_len]` is `scheme://authority` as written.
    origin_len: usize,
}

impl HttpUrl {
    /// Any absolute `http(s)` URL, query allowed.
    pub fn parse(text: &str) -> Result<HttpUrl, UrlError> {
        // http::Uri says "invalid uri character" for these; say which kind.
        if !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(UrlError::Characters);
        }
        let uri: Uri = text
            .parse()
            .map_err(|e: InvalidUri| UrlError::Malformed(e.to_string()))?;
        let tls = match uri.scheme() {
            Some(s) if *s == Scheme::HTTP => false,
            Some(s) if *s == Scheme::HTTPS => true,
            _ => return Err(UrlError::NotHttp),
        };
        let authority = uri.authority().ok_or(UrlError::NotHttp)?.as_str();
        if authority.contains('@') {
            return Err(UrlError::Credentials);
        }
        if text.contains('#') {
            return Err(UrlError::Fragment);
        }
        let (host, port_text) = split_authority(authority)?;
        let port = match port_text {
            None if tls => 443,
            None => 80,
            Some(p) => parse_port(p)?,
        };
        // The authority as written ends the origin: `scheme://` is all that comes before it.
        let origin_len = text
            .find("://")
            .map(|i| i + 3 + authority.len())
            .filter(|&end| text.get(end - authority.len()..end) == Some(authority))
            .ok_or_else(|| UrlError::Malformed("unexpected authority".into()))?;
        Ok(HttpUrl {
            text: text.to_owned(),
            host: host.to_owned(),
            uri,
            tls,
            port,
            origin_len,
        })
    }

    /// A URL that paths are appended to (a base or a target): no query.
    pub fn parse_base(text: &str) -> Result<HttpUrl, UrlError> {
        let url = HttpUrl::parse(text)?;
        if url.query().is_some() {
            return Err(UrlError::Query);
        }
        Ok(url)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn is_https(&self) -> bool {
        self.tls
    }

    /// The host to connect to: a name, an IPv4 address, or an IPv6 address without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port to connect to: the URL's, or the scheme's default.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host[:port]` as written: what the `Host` header carries.
    pub fn authority(&self) -> &str {
        self.uri.authority().map_or("", |a| a.as_str())
    }

    /// `scheme://authority` as written.
    pub fn origin(&self) -> &str {
        &self.text[..self.origin_len]
    }

    /// The path as written; `/` when the URL has none.
    pub fn path(&self) -> &str {
        self.uri.path()
    }

    /// The path without trailing slashes (`""` for `/`): what a captured path is appended to.
    pub fn prefix(&self) -> &str {
        self.path().trim_end_matches('/')
    }

    /// The raw query, without `?`; `Some("")` for a bare `?`.
    pub fn query(&self) -> Option<&str> {
        self.uri.query()
    }

    /// The request-target of a request for this URL: its path and query.
    pub fn request_target(&self) -> &str {
        self.uri.path_and_query().map_or("/", |pq| pq.as_str())
    }
}

/// Splits `host[:port]` and checks the host: a bracketed IPv6 address, or a reg-name / IPv4
/// address (RFC 3986 unreserved, sub-delims and `%`).
fn split_authority(authority: &str) -> Result<(&str, Option<&str>), UrlError> {
    let (host, rest) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (v6, rest) = bracketed.split_once(']').ok_or(UrlError::Host)?;
            v6.parse::<Ipv6Addr>().map_err(|_| UrlError::Host)?;
            (v6, rest)
        }
        None => {
            let end = authority.find(':').unwrap_or(authority.len());
            let host = &authority[..end];
            let reg_name = !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b));
            if !reg_name {
                return Err(UrlError::Host);
            }
            (host, &authority[end..])
        }
    };
    match rest {
        "" => Ok((host, None)),
        _ => Ok((host, Some(rest.strip_prefix(':').ok_or(UrlError::Port)?))),
    }
}

/// 1 to 65535, digits only (`http::Uri` lets an empty, too large or non-numeric port through).
fn parse_port(p: &str) -> Result<u16, UrlError> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlError::Port);
    }
    p.parse::<u16>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or(UrlError::Port)
}

impl FromStr for HttpUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<Self, UrlError> {
        HttpUrl::parse(s)
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpUrl({:?})", self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_kept_as_written() {
        let u = HttpUrl::parse("HTTP://[::1]:3000/a%20b//?x=1&y").unwrap();
        assert!(!u.is_https());
        assert_eq!((u.host(), u.port()), ("::1", 3000));
        assert_eq!(u.authority(), "[::1]:3000");
        assert_eq!(u.origin(), "HTTP://[::1]:3000");
        assert_eq!(u.path(), "/a%20b//");
        assert_eq!(u.prefix(), "/a%20b");
        assert_eq!(u.query(), Some("x=1&y"));
        assert_eq!(u.request_target(), "/a%20b//?x=1&y");
        assert_eq!(u.to_string(), "HTTP://[::1]:3000/a%20b//?x=1&y");

        let u = HttpUrl::parse("https://hooks.example.com").unwrap();
        assert!(u.is_https());
        assert_eq!((u.host(), u.port()), ("hooks.example.com", 443));
        assert_eq!((u.path(), u.prefix(), u.query()), ("/", "", None));
        assert_eq!(u.request_target(), "/");
        assert_eq!(u.origin(), "https://hooks.example.com");

        let u = HttpUrl::parse("http://127.0.0.1:8080/x/../y?").unwrap();
        assert_eq!((u.host(), u.port()), ("127.0.0.1", 8080));
        assert_eq!((u.path(), u.query()), ("/x/../y", Some("")));
    }

    #[test]
    fn refusals_say_why() {
        use UrlError::*;
        for (text, why) in [
            ("ftp://h/x", NotHttp),
            ("localhost:3000", NotHttp),
            ("/webhooks", NotHttp),
            ("http://h x/", Characters),
            ("http://h/\n", Characters),
            ("http://hé/", Characters),
            ("http://u:p@h/x", Credentials),
            ("http://u@h/", Credentials),
            ("http://h/x#f", Fragment),
            ("http://[zz]/", Host),
            ("http://[::1]x/", Port),
            ("http://h:/x", Port),
            ("http://h:0/", Port),
            ("http://h:99999/x", Port),
            ("http://h:3o/x", Port),
        ] {
            assert_eq!(HttpUrl::parse(text), Err(why), "{text:?}");
        }
        for text in [
            "",
            "http://",
            "http:///x",
            "http://[::1/",
            "-o/etc/passwd",
            "http://a:b:c/",
        ] {
            assert!(
                matches!(HttpUrl::parse(text), Err(Malformed(_))),
                "{text:?}: {:?}",
                HttpUrl::parse(text)
            );
        }
        assert_eq!(HttpUrl::parse_base("http://h/x?a=1"), Err(Query));
        assert_eq!(HttpUrl::parse_base("http://h/x?"), Err(Query));
        assert!(HttpUrl::parse_base("http://h/x").is_ok());
    }
}
