//! `hookbin healthcheck`: one `GET /healthz` over a plain socket, for container health checks.
//!
//! The runtime image has no curl, and a health check needs nothing more than a status line, so
//! this is a few lines of std HTTP/1.1 rather than a client library.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

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

/// Sends `GET` and succeeds on a `200` status line; otherwise says what went wrong.
pub fn check(target: &HttpUrl, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<SocketAddr> = (target.host(), target.port())
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.authority()))?
        .collect();
    let mut last = format!("{} resolves to no address", target.authority());
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no answer within {timeout:?}"));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(conn) => return get(conn, target, deadline),
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    Err(last)
}

fn get(mut conn: TcpStream, target: &HttpUrl, deadline: Instant) -> Result<(), String> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let io = |e: std::io::Error| format!("no answer: {e}");
    conn.set_read_timeout(Some(left)).map_err(io)?;
    conn.set_write_timeout(Some(left)).map_err(io)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: hookbin-healthcheck\r\nConnection: close\r\n\r\n",
        target.request_target(),
        target.authority()
    );
    conn.write_all(request.as_bytes()).map_err(io)?;
    let mut status_line = String::new();
    BufReader::new(conn.take(1024))
        .read_line(&mut status_line)
        .map_err(io)?;
    let status_line = status_line.trim_end();
    match status_line.split(' ').nth(1) {
        Some("200") if status_line.starts_with("HTTP/1.") => Ok(()),
        _ if status_line.is_empty() => Err("the connection closed without an answer".into()),
        _ => Err(format!("answered {status_line:?}")),
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
