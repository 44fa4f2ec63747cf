//! The URL a request goes to: checked once, then split into what a connection needs.

use hyper::Uri;

/// An absolute `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As given, for messages and as Twilio's default signed URL.
    pub url: String,
    pub tls: bool,
    /// Host name or IP address to connect to (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// `host[:port]` as written: the `Host` header.
    pub authority: String,
    /// Path and query, `/` when the URL has no path.
    pub path_and_query: String,
}

impl Target {
    /// Parses `url`; the error names what is wrong, for a one-line message.
    pub fn parse(url: &str) -> Result<Target, String> {
        // A fragment never leaves the client; it is not part of what is signed either.
        let url = url.split_once('#').map_or(url, |(before, _)| before);
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("{url:?} is not an absolute http:// or https:// URL ({e})"))?;
        let tls = match uri.scheme_str().map(str::to_ascii_lowercase).as_deref() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => {
                return Err(format!(
                    "{url:?} is a {other}:// URL; expected http:// or https://"
                ));
            }
            None => {
                return Err(format!(
                    "{url:?} is not an absolute http:// or https:// URL"
                ));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| format!("{url:?} has no host"))?;
        if authority.as_str().contains('@') {
            return Err(format!(
                "{url:?} holds credentials before the host; send them with --header instead"
            ));
        }
        let host = authority.host();
        if host.is_empty() {
            return Err(format!("{url:?} has no host"));
        }
        // `Authority::port` is `None` for an unparsable port too: read what follows the host.
        let port = match authority.as_str()[host.len()..].strip_prefix(':') {
            None | Some("") => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("{url:?} has no valid port (1 to 65535)"))?,
        };
        let path_and_query = uri
            .path_and_query()
            .map_or("/", |pq| pq.as_str())
            .to_owned();
        let path_and_query = if path_and_query.starts_with('/') {
            path_and_query
        } else {
            format!("/{path_and_query}")
        };
        Ok(Target {
            url: url.to_owned(),
            tls,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            authority: authority.as_str().to_owned(),
            path_and_query,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_and_https_urls_split_into_their_parts() {
        let t = Target::parse("https://hooks.example.test/in?x=1").unwrap();
        assert!(t.tls);
        assert_eq!((t.host.as_str(), t.port), ("hooks.example.test", 443));
        assert_eq!(t.authority, "hooks.example.test");
        assert_eq!(t.path_and_query, "/in?x=1");
        let t = Target::parse("http://[::1]:8080").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 8080));
        assert_eq!(t.authority, "[::1]:8080");
        assert_eq!(t.path_and_query, "/");
        assert_eq!(Target::parse("HTTP://a/").unwrap().port, 80);
        assert_eq!(Target::parse("http://a/b#c").unwrap().url, "http://a/b");
    }

    #[test]
    fn other_urls_are_refused_with_a_reason() {
        for (url, says) in [
            ("ftp://h/x", "ftp://"),
            ("/r/abc", "not an absolute"),
            ("localhost:3000/hook", "URL"),
            ("http://user:pw@h/", "credentials"),
            ("http:// spaced/", "not an absolute"),
            ("http://h:99999/", "no valid port"),
            ("http://h:0/", "no valid port"),
        ] {
            let err = Target::parse(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
