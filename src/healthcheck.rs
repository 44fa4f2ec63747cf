//! `hookbin healthcheck`: one `GET /healthz` over a plain socket, for container health checks.
//!
//! The runtime image has no curl, and a health check needs nothing more than a status line, so
//! this is a few lines of std HTTP/1.1 rather than a client library.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Where to send the check: `authority` (host:port, for connecting and the Host header) and
/// the request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub authority: String,
    pub path: String,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.authority, self.path)
    }
}

/// The target: `url` when given (`http://host[:port][/path]`), else `/healthz` at the listen
/// address, where an unspecified address (`0.0.0.0`, `::`) means loopback.
pub fn target(url: Option<&str>, listen: &str) -> Result<Target, String> {
    match url {
        Some(url) => parse_url(url),
        None => {
            let mut addr = crate::config::parse_listen(listen)
                .map_err(|e| format!("invalid value {listen:?} for '--listen': {e}"))?;
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    SocketAddr::V4(_) => [127, 0, 0, 1].into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            Ok(Target {
                authority: addr.to_string(),
                path: "/healthz".into(),
            })
        }
    }
}

fn parse_url(url: &str) -> Result<Target, String> {
    let bad = |reason: &str| format!("invalid value {url:?} for '--url': {reason}");
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("must start with http://"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("needs a host (and no user info)"));
    }
    if path
        .bytes()
        .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(bad("must not contain spaces"));
    }
    let has_port = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].contains(':'),
        None => authority.contains(':'),
    };
    let authority = if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    Ok(Target {
        authority,
        path: path.into(),
    })
}

/// Sends `GET` and succeeds on a `200` status line; otherwise says what went wrong.
pub fn check(target: &Target, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<SocketAddr> = target
        .authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.authority))?
        .collect();
    let mut last = format!("{} resolves to no address", target.authority);
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

fn get(mut conn: TcpStream, target: &Target, deadline: Instant) -> Result<(), String> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let io = |e: std::io::Error| format!("no answer: {e}");
    conn.set_read_timeout(Some(left)).map_err(io)?;
    conn.set_write_timeout(Some(left)).map_err(io)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: hookbin-healthcheck\r\nConnection: close\r\n\r\n",
        target.path, target.authority
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

    fn t(authority: &str, path: &str) -> Target {
        Target {
            authority: authority.into(),
            path: path.into(),
        }
    }

    #[test]
    fn default_target_is_healthz_on_the_listen_address_via_loopback() {
        assert_eq!(
            target(None, "127.0.0.1:8080").unwrap(),
            t("127.0.0.1:8080", "/healthz")
        );
        assert_eq!(
            target(None, "0.0.0.0:8080").unwrap(),
            t("127.0.0.1:8080", "/healthz")
        );
        assert_eq!(target(None, "[::]:9").unwrap(), t("[::1]:9", "/healthz"));
        assert_eq!(target(None, ":7").unwrap(), t("127.0.0.1:7", "/healthz"));
        assert!(target(None, "nowhere").unwrap_err().contains("--listen"));
    }

    #[test]
    fn urls_parse_with_default_port_and_path() {
        let url = |u| target(Some(u), "ignored");
        assert_eq!(url("http://h:1/x?y").unwrap(), t("h:1", "/x?y"));
        assert_eq!(url("http://h").unwrap(), t("h:80", "/"));
        assert_eq!(
            url("http://[::1]/healthz").unwrap(),
            t("[::1]:80", "/healthz")
        );
        assert_eq!(url("http://[::1]:8/").unwrap(), t("[::1]:8", "/"));
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
