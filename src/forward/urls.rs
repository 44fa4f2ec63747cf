//! The two URLs `hookbin forward` is given: the bin to follow and the local target.

use crate::ids;
use crate::wire::url::validate_target;

/// Where a server is: enough to open a TCP (and TLS) connection and write a `Host` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub tls: bool,
    /// Host name or IP address to connect to (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// `host[:port]` as written in the URL: the `Host` header.
    pub authority: String,
}

/// A bin on some hookbin server: `{base}/r/{bin}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinUrl {
    pub origin: Origin,
    /// The path the server is mounted under (`--public-url https://h/hooks` gives `/hooks`), or
    /// `""`. API paths are `{prefix}/api/...`.
    pub prefix: String,
    pub bin: String,
    /// `scheme://authority{prefix}/r/{bin}`, for messages.
    pub capture_url: String,
}

impl BinUrl {
    /// Accepts the capture URL (`/r/BIN`, also with a subpath after it), the inspector URL
    /// (`/bins/BIN`) or the API URL (`/api/bins/BIN`) of a bin, under an optional path prefix.
    pub fn parse(url: &str) -> Result<BinUrl, String> {
        let (origin_text, path) = validate_target(url).map_err(|e| e.to_string())?;
        let origin = parse_origin(origin_text)?;
        let segments: Vec<&str> = path.split('/').collect();
        let found = segments
            .windows(2)
            .position(|w| matches!(w[0], "r" | "bins") && ids::is_valid_bin_id(w[1]));
        let Some(at) = found else {
            return Err(
                "expected a bin URL such as https://HOST/r/BIN (BIN: 16 or more \
                        characters 0-9 a-z)"
                    .into(),
            );
        };
        let mut prefix_end = at;
        if segments[at] == "bins" && at > 0 && segments[at - 1] == "api" {
            prefix_end -= 1;
        }
        let prefix = segments[..prefix_end].join("/");
        let bin = segments[at + 1].to_owned();
        let scheme = if origin.tls { "https" } else { "http" };
        let capture_url = format!("{scheme}://{}{prefix}/r/{bin}", origin.authority);
        Ok(BinUrl {
            origin,
            prefix,
            bin,
            capture_url,
        })
    }

    /// `{prefix}/api/bins/{bin}{rest}`.
    pub fn api_path(&self, rest: &str) -> String {
        format!("{}/api/bins/{}{rest}", self.prefix, self.bin)
    }
}

/// The local target: `http://host[:port][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalUrl {
    pub origin: Origin,
    /// Path prefix without a trailing slash, or `""`.
    pub prefix: String,
    /// As given, for messages.
    pub url: String,
}

impl LocalUrl {
    pub fn parse(url: &str) -> Result<LocalUrl, String> {
        let (origin_text, prefix) = validate_target(url).map_err(|e| e.to_string())?;
        let origin = parse_origin(origin_text)?;
        if origin.tls {
            // The replay writes the request head itself to keep header case and order; doing
            // that over TLS is possible but nobody has needed it for a local handler yet.
            return Err(
                "must be an http:// URL (https is not supported for the local target)".into(),
            );
        }
        Ok(LocalUrl {
            origin,
            prefix: prefix.to_owned(),
            url: url.to_owned(),
        })
    }

    /// The request-target for a captured subpath and raw query: `{prefix}{subpath}[?query]`,
    /// `/` when both prefix and subpath are empty.
    pub fn request_target(&self, subpath: &str, query: &str) -> String {
        let mut t = format!("{}{subpath}", self.prefix);
        if t.is_empty() {
            t.push('/');
        }
        if !query.is_empty() {
            t.push('?');
            t.push_str(query);
        }
        t
    }
}

/// `scheme://authority` as returned by [`validate_target`] (already checked) into an [`Origin`].
fn parse_origin(origin: &str) -> Result<Origin, String> {
    let (scheme, authority) = origin
        .split_once("://")
        .ok_or("must be an absolute http:// or https:// URL")?;
    let tls = scheme.eq_ignore_ascii_case("https");
    let default_port = if tls { 443 } else { 80 };
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or("unclosed IPv6 bracket")?;
        (v6, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => default_port,
        Some(p) => p.parse().map_err(|_| "invalid port")?,
    };
    Ok(Origin {
        tls,
        host: host.to_owned(),
        port,
        authority: authority.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: &str = "abcdefghij0123456789";

    #[test]
    fn bin_urls_in_every_form() {
        for (url, prefix) in [
            (format!("http://127.0.0.1:8080/r/{BIN}"), ""),
            (format!("http://127.0.0.1:8080/r/{BIN}/"), ""),
            (format!("http://127.0.0.1:8080/r/{BIN}/stripe/events"), ""),
            (format!("http://127.0.0.1:8080/bins/{BIN}"), ""),
            (format!("http://127.0.0.1:8080/api/bins/{BIN}"), ""),
            (format!("http://127.0.0.1:8080/hooks/r/{BIN}"), "/hooks"),
        ] {
            let b = BinUrl::parse(&url).unwrap();
            assert_eq!(b.bin, BIN, "{url}");
            assert_eq!(b.prefix, prefix, "{url}");
            assert_eq!(b.origin.host, "127.0.0.1");
            assert_eq!(b.origin.port, 8080);
            assert!(!b.origin.tls);
            assert_eq!(
                b.api_path("/stream"),
                format!("{prefix}/api/bins/{BIN}/stream")
            );
        }
        let b = BinUrl::parse(&format!("https://hooks.example.com/r/{BIN}")).unwrap();
        assert_eq!(
            b.origin,
            Origin {
                tls: true,
                host: "hooks.example.com".into(),
                port: 443,
                authority: "hooks.example.com".into()
            }
        );
        assert_eq!(b.capture_url, format!("https://hooks.example.com/r/{BIN}"));
    }

    #[test]
    fn bad_bin_urls() {
        for url in [
            "",
            "hooks.example.com/r/abcdefghij0123456789",
            "ftp://h/r/abcdefghij0123456789",
            "http://h/r/short",
            "http://h/r/ABCDEFGHIJ0123456789",
            "http://h/",
            "http://h/r/abcdefghij0123456789?x=1",
        ] {
            assert!(BinUrl::parse(url).is_err(), "{url:?} accepted");
        }
    }

    #[test]
    fn local_urls() {
        let l = LocalUrl::parse("http://localhost:3000/webhooks/").unwrap();
        assert_eq!(l.origin.host, "localhost");
        assert_eq!(l.origin.port, 3000);
        assert_eq!(l.origin.authority, "localhost:3000");
        assert_eq!(l.request_target("/stripe", "a=1"), "/webhooks/stripe?a=1");
        assert_eq!(l.request_target("", ""), "/webhooks");
        let l = LocalUrl::parse("http://[::1]").unwrap();
        assert_eq!((l.origin.host.as_str(), l.origin.port), ("::1", 80));
        assert_eq!(l.request_target("", ""), "/");
        assert_eq!(l.request_target("", "q"), "/?q");
        for bad in [
            "localhost:3000",
            "https://localhost:3000",
            "http://h:0/",
            "http://h/x?y=1",
            "http://u:p@h/",
            "http://h x/",
        ] {
            assert!(LocalUrl::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
