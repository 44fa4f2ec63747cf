//! Who is asking, and under which public URL: the client address and the base URL for links,
//! honouring proxy headers only with `--trust-proxy`.

use std::net::{IpAddr, SocketAddr};

use hyper::HeaderMap;

use crate::config::Config;
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

/// The public base URL, without a trailing slash: `--public-url`, else built from the request
/// (`X-Forwarded-Proto`/`X-Forwarded-Host` only with `--trust-proxy`), else the listen address.
pub fn public_base(config: &Config, headers: &HeaderMap) -> String {
    if let Some(url) = &config.public_url {
        return url.clone();
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or("").trim())
            .filter(|v| !v.is_empty())
    };
    let mut scheme = "http";
    let mut host = header("host");
    if config.trust_proxy {
        if let Some(proto) = header("x-forwarded-proto")
            && proto.eq_ignore_ascii_case("https")
        {
            scheme = "https";
        }
        host = header("x-forwarded-host").or(host);
    }
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
