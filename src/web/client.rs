//! Who is asking, and under which public URL: the client address and the base URL for links,
//! honouring proxy headers only with `--trust-proxy`.

use std::net::{IpAddr, SocketAddr};

use hyper::HeaderMap;

use crate::config::{Config, split_authority};
use crate::wire::url::HttpUrl;

/// The client's IP. Behind the bundled nginx (`--trust-proxy`), `X-Real-IP` holds the address
/// nginx saw; failing that, the last `X-Forwarded-For` entry is the one nginx appended. Entries
/// further left were written by the client and are never trusted.
pub fn client_ip(config: &Config, peer: SocketAddr, headers: &HeaderMap) -> IpAddr {
    let peer_ip = peer.ip().to_canonical();
    if !config.trust_proxy {
        return peer_ip;
    }
    let parse = |s: &str| s.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    if let Some(ip) = headers
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .and_then(parse)
    {
        return ip;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .next_back()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit(',').next())
        .and_then(parse)
        .unwrap_or(peer_ip)
}

/// `ip` as `Display` writes it. IPv4 by hand: every capture records its client's address, and
/// the formatting machinery took 2.5% of a capture task's instructions (callgrind).
pub fn ip_text(ip: IpAddr) -> String {
    let IpAddr::V4(v4) = ip else {
        return ip.to_string();
    };
    let mut text = String::with_capacity("255.255.255.255".len());
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            text.push('.');
        }
        if octet >= 100 {
            text.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            text.push(char::from(b'0' + octet / 10 % 10));
        }
        text.push(char::from(b'0' + octet % 10));
    }
    text
}

/// The first value of header `name`, trimmed, if not empty.
fn first_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(',').next().unwrap_or("").trim())
        .filter(|v| !v.is_empty())
}

/// The host the client addressed, `host[:port]` as it wrote it: `X-Forwarded-Host` (only with
/// `--trust-proxy`, where nginx sets it to the client's `Host`), else `Host`.
pub fn request_host<'a>(config: &Config, headers: &'a HeaderMap) -> Option<&'a str> {
    let forwarded = if config.trust_proxy {
        first_value(headers, "x-forwarded-host")
    } else {
        None
    };
    forwarded.or_else(|| first_value(headers, "host"))
}

/// With `--capture-url`: `Some(true)` when the request was sent to the capture host,
/// `Some(false)` when to any other (the inspector). `None` without `--capture-url`, where one
/// host serves everything.
pub fn is_capture_host(config: &Config, headers: &HeaderMap) -> Option<bool> {
    let capture = config.capture.as_ref()?;
    Some(request_host(config, headers).is_some_and(|h| capture.is(h)))
}

/// Whether a browser says this request comes from a page of another site or origin:
/// `Sec-Fetch-Site: cross-site`, or an `Origin` that is not this server (the host the request
/// was sent to, or `--public-url`). `Origin: null` (sandboxed documents such as capture
/// responses send it) counts as foreign, except with `Sec-Fetch-Site: same-origin`: our own
/// pages' forms send `null` too, because the pages say `Referrer-Policy: no-referrer`, and
/// `Sec-Fetch-Site` is set by the browser alone. Requests with neither header (curl, scripts,
/// webhook senders) are no browser acting for a user, and pass.
pub fn is_cross_site(config: &Config, headers: &HeaderMap) -> bool {
    let site = headers.get("sec-fetch-site").map(|v| v.as_bytes());
    if site.is_some_and(|v| v.eq_ignore_ascii_case(b"cross-site")) {
        return true;
    }
    let same_origin = site.is_some_and(|v| v.eq_ignore_ascii_case(b"same-origin"));
    match headers.get(hyper::header::ORIGIN) {
        None => false,
        Some(origin) if origin.as_bytes() == b"null" => !same_origin,
        Some(origin) => !origin
            .to_str()
            .is_ok_and(|origin| is_own_origin(config, headers, origin)),
    }
}

fn is_own_origin(config: &Config, headers: &HeaderMap, origin: &str) -> bool {
    let Some((theirs, default)) = origin_authority(origin) else {
        return false;
    };
    let addressed = request_host(config, headers).and_then(|h| split_authority(h, default));
    if addressed.as_ref() == Some(&theirs) {
        return true;
    }
    config
        .public_url
        .as_deref()
        .and_then(origin_authority)
        .is_some_and(|(public, _)| public == theirs)
}

/// `scheme://host[:port][/...]` as ((host, port), the scheme's default port), the host
/// normalized as `Host` headers are ([`split_authority`]).
fn origin_authority(url: &str) -> Option<((String, u16), u16)> {
    let url = HttpUrl::parse(url).ok()?;
    let default = if url.is_https() { 443 } else { 80 };
    Some((split_authority(url.authority(), default)?, default))
}

/// The base of capture URLs (`{base}/r/{bin}`): `--capture-url`, else [`public_base`].
pub fn capture_base(config: &Config, headers: &HeaderMap) -> String {
    match &config.capture {
        Some(capture) => capture.base.clone(),
        None => public_base(config, headers),
    }
}

/// The public base URL, without a trailing slash: `--public-url`, else built from the request
/// (`X-Forwarded-Proto`/`X-Forwarded-Host` only with `--trust-proxy`), else the listen address.
pub fn public_base(config: &Config, headers: &HeaderMap) -> String {
    if let Some(url) = &config.public_url {
        return url.clone();
    }
    let mut scheme = "http";
    if config.trust_proxy
        && let Some(proto) = first_value(headers, "x-forwarded-proto")
        && proto.eq_ignore_ascii_case("https")
    {
        scheme = "https";
    }
    let host = request_host(config, headers);
    // The Host header is the client's to write: only a plain host[:port] goes into links.
    match host.filter(|h| is_plain_host(h)) {
        Some(h) => format!("{scheme}://{h}"),
        None => format!("{scheme}://{}", config.listen),
    }
}

/// Plain characters only, and an authority a URL can hold (so the copy-as-curl base is valid).
fn is_plain_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 255
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
        && HttpUrl::parse(&format!("http://{h}")).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn ip_text_writes_what_display_writes() {
        for ip in [
            "0.0.0.0",
            "255.255.255.255",
            "127.0.0.1",
            "10.0.100.9",
            "1.20.3.100",
            "192.168.99.10",
            "::1",
            "2001:db8::8a2e:370:7334",
            "::ffff:10.1.2.3",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(ip_text(ip), ip.to_string());
        }
    }

    #[test]
    fn proxy_headers_only_with_trust_proxy() {
        let mut config = Config::for_db("x.db");
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let h = headers(&[
            ("x-forwarded-for", "6.6.6.6, 1.2.3.4"),
            ("host", "hooks.example"),
            ("x-forwarded-proto", "https"),
        ]);
        assert_eq!(client_ip(&config, peer, &h).to_string(), "127.0.0.1");
        assert_eq!(public_base(&config, &h), "http://hooks.example");
        config.trust_proxy = true;
        assert_eq!(client_ip(&config, peer, &h).to_string(), "1.2.3.4");
        assert_eq!(public_base(&config, &h), "https://hooks.example");
        let h = headers(&[("x-real-ip", "9.9.9.9"), ("x-forwarded-for", "1.2.3.4")]);
        assert_eq!(client_ip(&config, peer, &h).to_string(), "9.9.9.9");
    }

    #[test]
    fn capture_host_by_host_header_or_forwarded_host_behind_a_proxy() {
        let mut config = Config::for_db("x.db");
        let h = headers(&[
            ("host", "in.example.com"),
            ("x-forwarded-host", "webhook.example.com"),
        ]);
        assert_eq!(is_capture_host(&config, &h), None);
        assert_eq!(capture_base(&config, &h), "http://in.example.com");
        config.capture = Some(crate::config::CaptureHost::parse("https://in.example.com").unwrap());
        assert_eq!(is_capture_host(&config, &h), Some(true));
        assert_eq!(capture_base(&config, &h), "https://in.example.com");
        config.trust_proxy = true;
        assert_eq!(is_capture_host(&config, &h), Some(false));
        assert_eq!(public_base(&config, &h), "http://webhook.example.com");
        assert_eq!(is_capture_host(&config, &HeaderMap::new()), Some(false));
    }

    #[test]
    fn cross_site_requests_are_told_by_fetch_metadata_or_origin() {
        let config = Config::for_db("x.db");
        let cross_with = |config: &Config, pairs: &[(&'static str, &'static str)]| {
            is_cross_site(config, &headers(pairs))
        };
        let cross = |pairs: &[(&'static str, &'static str)]| cross_with(&config, pairs);
        assert!(
            !cross(&[("host", "h:8080")]),
            "no browser headers: not a browser"
        );
        assert!(cross(&[
            ("host", "h:8080"),
            ("sec-fetch-site", "cross-site")
        ]));
        assert!(!cross(&[
            ("host", "h:8080"),
            ("sec-fetch-site", "same-origin")
        ]));
        assert!(!cross(&[("host", "h:8080"), ("origin", "http://h:8080")]));
        assert!(!cross(&[("host", "H:8080"), ("origin", "http://h:8080")]));
        assert!(!cross(&[("host", "h"), ("origin", "https://h")]));
        assert!(cross(&[("host", "h:8080"), ("origin", "http://h:8081")]));
        assert!(cross(&[
            ("host", "h:8080"),
            ("origin", "http://evil.example")
        ]));
        assert!(cross(&[("host", "h:8080"), ("origin", "null")]));
        assert!(cross(&[
            ("host", "h:8080"),
            ("origin", "null"),
            ("sec-fetch-site", "same-site")
        ]));
        assert!(
            !cross(&[
                ("host", "h:8080"),
                ("origin", "null"),
                ("sec-fetch-site", "same-origin")
            ]),
            "our own forms under Referrer-Policy: no-referrer"
        );
        assert!(cross(&[
            ("host", "h:8080"),
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "same-origin")
        ]));
        assert!(
            cross(&[("origin", "http://h:8080")]),
            "no host to compare with"
        );
        let mut config = config.clone();
        config.public_url = Some("https://hooks.example/prefix".into());
        let cross = |pairs: &[(&'static str, &'static str)]| cross_with(&config, pairs);
        assert!(!cross(&[
            ("host", "10.0.0.1"),
            ("origin", "https://hooks.example")
        ]));
        let mut config = config.clone();
        config.trust_proxy = true;
        let cross = |pairs: &[(&'static str, &'static str)]| cross_with(&config, pairs);
        assert!(!cross(&[
            ("host", "upstream"),
            ("x-forwarded-host", "webhook.example"),
            ("origin", "https://webhook.example")
        ]));
    }

    #[test]
    fn odd_host_headers_fall_back_to_the_listen_address() {
        let config = Config::for_db("x.db");
        let h = headers(&[("host", "evil.example/<script>")]);
        assert_eq!(public_base(&config, &h), "http://127.0.0.1:0");
    }

    #[test]
    fn mapped_ipv6_peer_is_shown_as_ipv4() {
        let config = Config::for_db("x.db");
        let peer: SocketAddr = "[::ffff:10.1.2.3]:1".parse().unwrap();
        assert_eq!(
            client_ip(&config, peer, &HeaderMap::new()).to_string(),
            "10.1.2.3"
        );
    }

    #[test]
    fn hosts_that_make_no_valid_url_fall_back_to_the_listen_address() {
        let config = Config::for_db("x.db");
        for host in ["a:b:c", "h:99999", "[zz]", "h:0"] {
            let h = headers(&[("host", host)]);
            assert_eq!(public_base(&config, &h), "http://127.0.0.1:0", "{host}");
        }
        let h = headers(&[("host", "[::1]:8080")]);
        assert_eq!(public_base(&config, &h), "http://[::1]:8080");
    }
}
