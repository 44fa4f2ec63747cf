//! `hookbin healthcheck`: one `GET /healthz` through [`crate::client`], for container health
//! checks (the runtime image has no curl).

use std::net::SocketAddr;
use std::time::Duration;

use crate::client::{Client, Request};
use crate::wire::url::HttpUrl;

/// The target: `url` when given (`http://host[:port][/path]`), else `/healthz` at the listen
/// address, where an unspecified address (`0.0.0.0`, `::`) means loopback.
pub fn target(url: Option<&str>, listen: &str) -> Result<HttpUrl, String> {
    match url {
        Some(url) => {
            let bad = |reason: &dyn std::fmt::Display| {
                format!("invalid value {url:?} for '--url': {reason}")
            };
            let parsed = HttpUrl::parse(url).map_err(|e| bad(&e))?;
            if parsed.is_https() {
                // The server speaks plain HTTP; TLS ends in front of it.
                return Err(bad(&"must start with http://"));
            }
            Ok(parsed)
        }
        None => {
            let bad = |reason: &dyn std::fmt::Display| {
                format!("invalid value {listen:?} for '--listen': {reason}")
            };
            let mut addr = crate::config::parse_listen(listen).map_err(|e| bad(&e))?;
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    SocketAddr::V4(_) => [127, 0, 0, 1].into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            HttpUrl::parse(&format!("http://{addr}/healthz")).map_err(|e| bad(&e))
        }
    }
}

/// Sends `GET` and succeeds on a `200` within `timeout`; otherwise says what went wrong.
pub async fn check(target: &HttpUrl, timeout: Duration) -> Result<(), String> {
    let client = Client::new(None).map_err(|e| e.to_string())?;
    let request = Request::new("GET", target.request_target())
        .header("User-Agent", "hookbin-healthcheck")
        .header("Connection", "close");
    let response = client
        .send(target, &request, timeout)
        .await
        .map_err(|e| e.to_string())?;
    match response.status {
        200 => Ok(()),
        status => Err(format!("answered {status} {}", response.reason)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(url: Option<&str>, listen: &str) -> Result<(String, String, String), String> {
        target(url, listen).map(|u| {
            (
                u.to_string(),
                u.authority().to_owned(),
                u.request_target().to_owned(),
            )
        })
    }

    #[test]
    fn default_target_is_healthz_on_the_listen_address_via_loopback() {
        let healthz = |authority: &str| {
            Ok((
                format!("http://{authority}/healthz"),
                authority.to_owned(),
                "/healthz".to_owned(),
            ))
        };
        assert_eq!(t(None, "127.0.0.1:8080"), healthz("127.0.0.1:8080"));
        assert_eq!(t(None, "0.0.0.0:8080"), healthz("127.0.0.1:8080"));
        assert_eq!(t(None, "[::]:9"), healthz("[::1]:9"));
        assert_eq!(t(None, ":7"), healthz("127.0.0.1:7"));
        assert!(t(None, "nowhere").unwrap_err().contains("--listen"));
    }

    #[test]
    fn urls_parse_with_default_port_and_path() {
        let url = |u| target(Some(u), "ignored");
        let u = url("http://h:1/x?y").unwrap();
        assert_eq!(
            (u.authority(), u.port(), u.request_target()),
            ("h:1", 1, "/x?y")
        );
        let u = url("http://h").unwrap();
        assert_eq!(
            (u.authority(), u.port(), u.request_target()),
            ("h", 80, "/")
        );
        let u = url("http://[::1]/healthz").unwrap();
        assert_eq!(
            (u.host(), u.port(), u.request_target()),
            ("::1", 80, "/healthz")
        );
        for bad in [
            "https://h/",
            "h:1",
            "http://",
            "http://u@h/",
            "http://h/a b",
        ] {
            assert!(url(bad).unwrap_err().contains("--url"), "{bad}");
        }
    }
}
