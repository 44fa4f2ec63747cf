//! The two URLs `hookbin forward` is given: the bin to follow and the local target.

use crate::ids;
use crate::wire::url::HttpUrl;

/// A bin on some hookbin server: `{base}/r/{bin}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinUrl {
    /// As given (any of the forms [`BinUrl::parse`] accepts): where the server is.
    pub url: HttpUrl,
    /// The path the server is mounted under (`--public-url https://h/hooks` gives `/hooks`), or
    /// `""`. API paths are `{prefix}/api/...`.
    pub prefix: String,
    pub bin: String,
    /// `scheme://authority{prefix}/r/{bin}`, for messages.
    pub capture_url: String,
    /// A private bin's view token, from the view link's `?token=`: sent as a Bearer credential
    /// on every API call.
    pub token: Option<String>,
}

impl BinUrl {
    /// Accepts the capture URL (`/r/BIN`, also with a subpath after it), the inspector URL
    /// (`/bins/BIN`) or the API URL (`/api/bins/BIN`) of a bin, under an optional path prefix.
    /// A private bin's view link (`/bins/BIN?token=...`) carries its token; any other query is
    /// refused.
    pub fn parse(text: &str) -> Result<BinUrl, String> {
        let (text, token) = match text.split_once('?') {
            None => (text, None),
            Some((base, query)) => match query.strip_prefix("token=") {
                Some(t) if !t.is_empty() && !t.contains(['&', '#', '%', '+']) => {
                    (base, Some(t.to_owned()))
                }
                _ => return Err("the bin URL may carry only ?token=VIEW_TOKEN".into()),
            },
        };
        let url = HttpUrl::parse_base(text).map_err(|e| e.to_string())?;
        let segments: Vec<&str> = url.prefix().split('/').collect();
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
        let scheme = if url.is_https() { "https" } else { "http" };
        let capture_url = format!("{scheme}://{}{prefix}/r/{bin}", url.authority());
        Ok(BinUrl {
            url,
            prefix,
            bin,
            capture_url,
            token,
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
    pub url: HttpUrl,
}

impl LocalUrl {
    pub fn parse(text: &str) -> Result<LocalUrl, String> {
        let url = HttpUrl::parse_base(text).map_err(|e| e.to_string())?;
        if url.is_https() {
            // A local handler seldom has a certificate anything trusts; nobody has asked yet.
            return Err(
                "must be an http:// URL (https is not supported for the local target)".into(),
            );
        }
        Ok(LocalUrl { url })
    }

    /// Path prefix without a trailing slash, or `""`.
    pub fn prefix(&self) -> &str {
        self.url.prefix()
    }

    /// The request-target for a captured subpath and raw query: `{prefix}{subpath}[?query]`,
    /// `/` when both prefix and subpath are empty.
    pub fn request_target(&self, subpath: &str, query: &str) -> String {
        crate::wire::request_target(self.prefix(), subpath, query)
    }
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
            assert_eq!(b.url.host(), "127.0.0.1");
            assert_eq!(b.url.port(), 8080);
            assert!(!b.url.is_https());
            assert_eq!(
                b.api_path("/stream"),
                format!("{prefix}/api/bins/{BIN}/stream")
            );
        }
        let b = BinUrl::parse(&format!("https://hooks.example.com/r/{BIN}")).unwrap();
        assert_eq!(b.token, None);
        let private = BinUrl::parse(&format!("https://h/bins/{BIN}?token=abc_-9")).unwrap();
        assert_eq!(
            (private.bin.as_str(), private.token.as_deref()),
            (BIN, Some("abc_-9"))
        );
        for bad in ["?x=1", "?token=", "?token=a&b=c"] {
            assert!(
                BinUrl::parse(&format!("https://h/bins/{BIN}{bad}")).is_err(),
                "{bad}"
            );
        }
        assert!(b.url.is_https());
        assert_eq!((b.url.host(), b.url.port()), ("hooks.example.com", 443));
        assert_eq!(b.url.authority(), "hooks.example.com");
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
        assert_eq!(l.url.host(), "localhost");
        assert_eq!(l.url.port(), 3000);
        assert_eq!(l.url.authority(), "localhost:3000");
        assert_eq!(l.request_target("/stripe", "a=1"), "/webhooks/stripe?a=1");
        assert_eq!(l.request_target("", ""), "/webhooks");
        let l = LocalUrl::parse("http://[::1]").unwrap();
        assert_eq!((l.url.host(), l.url.port()), ("::1", 80));
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
