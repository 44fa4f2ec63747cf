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
    pub bin_ttl: Duration,
    pub reap_interval: Duration,
    pub max_body_bytes: u64,
    pub max_requests_per_bin: u64,
    pub max_header_bytes: usize,
    pub trust_proxy: bool,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_connections: usize,
    pub max_bins_per_minute: u32,
    pub write_queue: usize,
    pub synchronous: Synchronous,
    pub log_format: LogFormat,
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
        if args.db.as_os_str().is_empty() {
            return Err(bad("--db", "", "must not be empty"));
        }
        Ok(Config {
            listen,
            db: args.db.clone(),
            public_url,
            bin_ttl: args.bin_ttl,
            reap_interval: args.reap_interval,
            max_body_bytes: args.max_body_bytes,
            max_requests_per_bin: args.max_requests_per_bin,
            max_header_bytes: args.max_header_bytes as usize,
            trust_proxy: args.trust_proxy,
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            max_connections: args.max_connections as usize,
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
}
