//! Validated server settings, built from the parsed flags.
//!
//! The flags arrive as strings and numbers; here they become typed, checked values. Errors name
//! the flag, so `main` can print one line and exit with status 2.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{LogFormat, ServeArgs};
use crate::storage::Synchronous;
use crate::wire::url::HttpUrl;

/// Everything the server needs to know, already validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub db: PathBuf,
    /// Without a trailing slash, e.g. `https://webhook.example.com`.
    pub public_url: Option<String>,
    /// `--capture-url`: the host captures are sent to, when it is not the inspector's.
    pub capture: Option<CaptureHost>,
    pub bin_ttl: Duration,
    pub reap_interval: Duration,
    pub max_body_bytes: u64,
    /// Most bytes a body is decoded to (views, `?decode=1`, search).
    pub max_decoded_bytes: usize,
    pub max_requests_per_bin: u64,
    /// `--max-bin-bytes`: stored bytes per bin before its oldest requests are evicted.
    pub max_bin_bytes: u64,
    /// `--max-db-bytes`: captures answer 507 while the database uses more.
    pub max_db_bytes: Option<u64>,
    /// `--private-bins`: bins are private unless asked otherwise.
    pub private_bins: bool,
    pub max_header_bytes: usize,
    pub trust_proxy: bool,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub body_deadline: Duration,
    pub max_connections: usize,
    /// Already at most half of `max_connections`; 0 = no cap.
    pub max_connections_per_client: u32,
    pub max_streams_per_client: u32,
    pub max_in_flight_per_client: u32,
    pub max_body_memory: u64,
    pub max_bins_per_minute: u32,
    pub write_queue: usize,
    pub synchronous: Synchronous,
    pub log_format: LogFormat,
}

/// The host of `--capture-url`: bin URLs are `{base}/r/{bin}`, and requests are told apart by
/// the host they name (see [`crate::web::client::is_capture_host`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureHost {
    /// `scheme://host[:port]`, as given, without a trailing slash.
    pub base: String,
    /// Lower case, IPv6 without brackets, no trailing dot.
    pub host: String,
    /// The port, the scheme's default when the URL names none.
    pub port: u16,
    /// The default port of the URL's scheme (80 or 443): what a `Host` without a port means.
    pub default_port: u16,
}

impl CaptureHost {
    /// `http(s)://host[:port]`, nothing after the authority but an optional `/`.
    pub fn parse(s: &str) -> Result<CaptureHost, String> {
        let base = parse_public_url(s)?;
        let url = HttpUrl::parse_base(&base).map_err(|e| e.to_string())?;
        if !url.prefix().is_empty() {
            return Err(
                "must be scheme://host[:port], without a path (captures are served at /r/)".into(),
            );
        }
        let default_port = if url.is_https() { 443 } else { 80 };
        // Normalized as `Host` headers are compared ([`split_authority`]).
        let (host, port) = split_authority(url.authority(), default_port)
            .ok_or_else(|| "has no valid host[:port]".to_owned())?;
        Ok(CaptureHost {
            base,
            host,
            port,
            default_port,
        })
    }

    /// Whether `authority` (a `Host` header: `host[:port]`) names this host.
    pub fn is(&self, authority: &str) -> bool {
        split_authority(authority, self.default_port)
            .is_some_and(|(host, port)| host == self.host && port == self.port)
    }
}

/// `host[:port]` as (lower-case host without brackets or trailing dot, port or `default`).
pub(crate) fn split_authority(authority: &str, default: u16) -> Option<(String, u16)> {
    let authority = authority.trim();
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => default,
        Some(p) => p.parse().ok()?,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some((host, port))
}

/// A flag value that parsed but makes no sense.
#[derive(Debug, thiserror::Error)]
#[error("invalid value {value:?} for '{flag}': {reason}")]
pub struct ConfigError {
    pub flag: &'static str,
    pub value: String,
    pub reason: String,
}

impl Config {
    /// Settings for tests and embedding: every default, a database path, port 0 on loopback.
    pub fn for_db(db: impl Into<PathBuf>) -> Self {
        use clap::Parser;
        let cli = crate::cli::Cli::parse_from(["hookbin", "--listen", "127.0.0.1:0"]);
        let mut config = Config::try_from(&cli.serve).expect("defaults are valid");
        config.db = db.into();
        config
    }
}

impl TryFrom<&ServeArgs> for Config {
    type Error = ConfigError;

    fn try_from(args: &ServeArgs) -> Result<Self, ConfigError> {
        let bad = |flag: &'static str, value: &str, reason: &str| ConfigError {
            flag,
            value: value.to_owned(),
            reason: reason.to_owned(),
        };
        let listen = parse_listen(&args.listen).map_err(|r| bad("--listen", &args.listen, &r))?;
        let public_url = match &args.public_url {
            None => None,
            Some(u) => Some(parse_public_url(u).map_err(|r| bad("--public-url", u, &r))?),
        };
        let capture = match &args.capture_url {
            None => None,
            Some(u) => Some(CaptureHost::parse(u).map_err(|r| bad("--capture-url", u, &r))?),
        };
        if let (Some(capture), Some(public)) = (&capture, &public_url) {
            let inspector =
                HttpUrl::parse(public).map_err(|e| bad("--public-url", public, &e.to_string()))?;
            if capture.is(inspector.authority()) {
                return Err(bad(
                    "--capture-url",
                    &capture.base,
                    "must name another host than --public-url (captures need an origin of their own)",
                ));
            }
        }
        if args.db.as_os_str().is_empty() {
            return Err(bad("--db", "", "must not be empty"));
        }
        Ok(Config {
            listen,
            db: args.db.clone(),
            public_url,
            capture,
            bin_ttl: args.bin_ttl,
            reap_interval: args.reap_interval,
            max_body_bytes: args.max_body_bytes,
            max_decoded_bytes: usize::try_from(args.max_decoded_bytes).map_err(|_| {
                bad(
                    "--max-decoded-bytes",
                    &args.max_decoded_bytes.to_string(),
                    "too large for this machine",
                )
            })?,
            max_requests_per_bin: args.max_requests_per_bin,
            max_bin_bytes: args.max_bin_bytes,
            max_db_bytes: args.max_db_bytes,
            private_bins: args.private_bins,
            max_header_bytes: args.max_header_bytes as usize,
            trust_proxy: args.trust_proxy,
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            body_deadline: args.body_deadline,
            max_connections: args.max_connections as usize,
            // One client may never hold every global permit (see limits.rs).
            max_connections_per_client: args
                .max_connections_per_client
                .min((args.max_connections / 2).max(1) as u32),
            max_streams_per_client: args.max_streams_per_client,
            max_in_flight_per_client: args.max_in_flight_per_client,
            max_body_memory: args.max_body_memory,
            max_bins_per_minute: args.max_bins_per_minute,
            write_queue: args.write_queue as usize,
            synchronous: args.synchronous,
            log_format: args.log_format,
        })
    }
}

/// `127.0.0.1:8080`, `[::1]:0`, `localhost:8080`, or `:8080` (loopback: a tool that stores other
/// people's secrets should not listen on every interface unless asked to).
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Some(port) = s.strip_prefix(':') {
        let port: u16 = port
            .parse()
            .map_err(|_| "port must be 0..65535".to_owned())?;
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Ok(addr) = s.parse() {
        return Ok(addr);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("expected HOST:PORT ({e})"))?
        .next()
        .ok_or_else(|| "host name resolves to no address".to_owned())
}

/// An absolute http(s) URL without query or fragment (an [`HttpUrl`]); the trailing slash is
/// dropped.
fn parse_public_url(s: &str) -> Result<String, String> {
    HttpUrl::parse_base(s.trim().trim_end_matches('/'))
        .map(|url| url.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_http_urls() {
        assert_eq!(
            parse_public_url(" http://h:8080/prefix// ").unwrap(),
            "http://h:8080/prefix"
        );
        for bad in [
            "https://h/#x",
            "https://h/a b",
            "https://u@h/",
            "https://h:0/",
        ] {
            assert!(parse_public_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn listen_forms() {
        assert_eq!(parse_listen(":0").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(
            parse_listen("0.0.0.0:80").unwrap(),
            "0.0.0.0:80".parse().unwrap()
        );
        assert_eq!(parse_listen("[::1]:9").unwrap(), "[::1]:9".parse().unwrap());
        assert!(parse_listen("localhost:0").unwrap().ip().is_loopback());
        assert!(parse_listen("nonsense").is_err());
        assert!(parse_listen(":99999").is_err());
    }

    #[test]
    fn public_url_forms() {
        assert_eq!(
            parse_public_url("https://hooks.example.com/").unwrap(),
            "https://hooks.example.com"
        );
        assert_eq!(
            parse_public_url("http://h:8080/prefix").unwrap(),
            "http://h:8080/prefix"
        );
        assert!(parse_public_url("ftp://h").is_err());
        assert!(parse_public_url("https://").is_err());
        assert!(parse_public_url("https://h/?a=1").is_err());
    }

    #[test]
    fn capture_hosts_match_host_headers() {
        let c = CaptureHost::parse("https://In.Example.com/").unwrap();
        assert_eq!(c.base, "https://In.Example.com");
        for yes in [
            "in.example.com",
            "IN.example.COM",
            "in.example.com:443",
            "in.example.com.",
        ] {
            assert!(c.is(yes), "{yes}");
        }
        for no in [
            "example.com",
            "in.example.com:80",
            "in.example.com:8443",
            "",
            "x.in.example.com",
        ] {
            assert!(!c.is(no), "{no}");
        }
        let c = CaptureHost::parse("http://127.0.0.1:9000").unwrap();
        assert!(c.is("127.0.0.1:9000") && !c.is("127.0.0.1") && !c.is("127.0.0.1:8080"));
        let c = CaptureHost::parse("http://[::1]:9").unwrap();
        assert!(c.is("[::1]:9") && !c.is("[::1]"));
        assert!(CaptureHost::parse("https://h/prefix").is_err());
        assert!(CaptureHost::parse("h").is_err());
        assert!(CaptureHost::parse("https://h:port").is_err());
    }

    #[test]
    fn capture_url_must_differ_from_public_url() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            let cli = crate::cli::Cli::parse_from(
                ["hookbin", "--listen", "127.0.0.1:0"].iter().chain(args),
            );
            Config::try_from(&cli.serve).map(|c| c.capture.map(|c| c.base))
        };
        assert_eq!(
            parse(&["--capture-url", "https://in.h", "--public-url", "https://h"]).unwrap(),
            Some("https://in.h".to_owned())
        );
        let e = parse(&[
            "--capture-url",
            "https://h:443",
            "--public-url",
            "https://H/x",
        ])
        .unwrap_err();
        assert_eq!(e.flag, "--capture-url");
        assert!(parse(&["--capture-url", "ftp://h"]).is_err());
    }
}
