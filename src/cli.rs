//! Command-line interface: the raw flags as clap parses them.
//!
//! Every `serve` flag has a `HOOKBIN_*` environment variable; a flag wins over its variable (clap's
//! rule). `forward` is a client run by hand, so its flags have none. Nothing below `config.rs`
//! sees the serve types: [`crate::config::Config`] is built from them.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::storage::Synchronous;

/// Self-hosted webhook inspector: capture any HTTP request byte-exact, inspect it, replay it.
#[derive(Debug, Parser)]
#[command(name = "hookbin", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// `hookbin` with no subcommand is `hookbin serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default when no subcommand is given).
    Serve(ServeArgs),
    /// Check that a running server answers `GET /healthz` with 200: exit 0 if so, else 1.
    /// For container health checks (the Docker image has no curl).
    Healthcheck(HealthcheckArgs),

    /// Follow a bin and replay every new request to a local URL, byte-exact.
    ///
    /// Each request captured after the start is fetched in full and sent to LOCAL_URL plus its
    /// subpath and query, with the same method, headers (minus hop-by-hop ones; Host and
    /// Content-Length are set for the target) and body bytes, so signatures still verify. One line
    /// per replay goes to stdout: capture time, method, local path, local status, latency. A lost
    /// connection to the bin is resumed without losing or repeating requests.
    Forward(ForwardArgs),
}

/// Flags of `hookbin healthcheck`.
#[derive(Debug, Clone, Args)]
pub struct HealthcheckArgs {
    /// URL to check [default: /healthz at the listen address; 0.0.0.0 or :: mean loopback].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// The server's listen address, read like `serve --listen` (so the same HOOKBIN_LISTEN
    /// configures both); only used to build the default URL.
    #[arg(
        long,
        env = "HOOKBIN_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub listen: String,

    /// Give up (and exit 1) after this long.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// `--synchronous` takes storage's own type, so that storage needs nothing from clap.
impl ValueEnum for Synchronous {
    fn value_variants<'a>() -> &'a [Self] {
        &[Synchronous::Normal, Synchronous::Full]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Synchronous::Normal => PossibleValue::new("normal").help(
                "Survives a crash of hookbin (kill -9); the last commits may be lost on power failure",
            ),
            Synchronous::Full => PossibleValue::new("full")
                .help("Also survives power failure: one fsync per committed batch"),
        })
    }
}

/// Flags of `hookbin serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Socket address to serve on; `:PORT` means 127.0.0.1:PORT and port 0 picks a free port.
    #[arg(
        long,
        env = "HOOKBIN_LISTEN",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub listen: String,

    /// SQLite database file; created with schema.sql when missing.
    #[arg(
        long,
        env = "HOOKBIN_DB",
        value_name = "PATH",
        default_value = "./hookbin.db"
    )]
    pub db: PathBuf,

    /// Base URL used to build the bin URLs shown to users [default: derived from the request's Host].
    #[arg(long, env = "HOOKBIN_PUBLIC_URL", value_name = "URL")]
    pub public_url: Option<String>,

    /// A host of its own for captures, e.g. `https://in.example.com`: bin URLs point there, this
    /// host only serves /r/ and /healthz, and every other host refuses /r/ (so a bin's custom
    /// response is never served on the inspector's origin).
    #[arg(long, env = "HOOKBIN_CAPTURE_URL", value_name = "URL")]
    pub capture_url: Option<String>,

    /// Lifetime of a bin and its requests (humantime: 30s, 1h, 7d).
    #[arg(long, env = "HOOKBIN_BIN_TTL", value_name = "DUR", default_value = "7d", value_parser = parse_duration)]
    pub bin_ttl: Duration,

    /// How often expired bins are deleted.
    #[arg(long, env = "HOOKBIN_REAP_INTERVAL", value_name = "DUR", default_value = "1m", value_parser = parse_duration)]
    pub reap_interval: Duration,

    /// Largest body stored; a larger one is answered 413 and its first N bytes are recorded.
    #[arg(long, env = "HOOKBIN_MAX_BODY_BYTES", value_name = "N", default_value_t = 5_242_880, value_parser = clap::value_parser!(u64).range(1..=1_073_741_824))]
    pub max_body_bytes: u64,

    /// Most bytes a body is decoded to (Content-Encoding undone) for the body views,
    /// `?decode=1` and search; decoding stops there (decompression bombs).
    #[arg(long, env = "HOOKBIN_MAX_DECODED_BYTES", value_name = "N", default_value_t = 67_108_864, value_parser = clap::value_parser!(u64).range(1..=4_294_967_296))]
    pub max_decoded_bytes: u64,

    /// Requests kept per bin; the oldest are evicted beyond this.
    #[arg(long, env = "HOOKBIN_MAX_REQUESTS_PER_BIN", value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub max_requests_per_bin: u64,

    /// Largest request head (request line and headers); a larger one is answered 431, not recorded.
    #[arg(long, env = "HOOKBIN_MAX_HEADER_BYTES", value_name = "N", default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1024..=16_777_216))]
    pub max_header_bytes: u64,

    /// Take the client address from X-Real-IP / X-Forwarded-For and public URLs from
    /// X-Forwarded-Proto / X-Forwarded-Host, as set by the bundled nginx config.
    #[arg(long, env = "HOOKBIN_TRUST_PROXY", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub trust_proxy: bool,

    /// A client must send its whole request head within this time, or the connection is closed.
    #[arg(long, env = "HOOKBIN_HEADER_TIMEOUT", value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// Longest pause allowed between two pieces of a request body before the request is
    /// answered 408 and the connection closed.
    #[arg(long, env = "HOOKBIN_BODY_TIMEOUT", value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub body_timeout: Duration,

    /// A request body must arrive whole within this time (however steadily it trickles), or the
    /// request is answered 408 and the connection closed.
    #[arg(long, env = "HOOKBIN_BODY_DEADLINE", value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub body_deadline: Duration,

    /// Connections served at once; further ones wait in the listen backlog.
    #[arg(long, env = "HOOKBIN_MAX_CONNECTIONS", value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,

    /// Connections one client address (IPv6: one /64) may hold, at most half of
    /// --max-connections; beyond, a new one is answered 429 and closed. Not applied with
    /// --trust-proxy (the proxy's limit_conn does it); 0 turns it off.
    #[arg(
        long,
        env = "HOOKBIN_MAX_CONNECTIONS_PER_CLIENT",
        value_name = "N",
        default_value_t = 64
    )]
    pub max_connections_per_client: u32,

    /// Event streams one client address may hold open (429 beyond); 0 turns it off.
    #[arg(
        long,
        env = "HOOKBIN_MAX_STREAMS_PER_CLIENT",
        value_name = "N",
        default_value_t = 16
    )]
    pub max_streams_per_client: u32,

    /// Requests one client address may have in progress at once (429 beyond, nothing
    /// recorded); event streams and /healthz and /metrics do not count. 0 turns it off.
    #[arg(
        long,
        env = "HOOKBIN_MAX_IN_FLIGHT_PER_CLIENT",
        value_name = "N",
        default_value_t = 64
    )]
    pub max_in_flight_per_client: u32,

    /// Bytes of request bodies held in memory at once, beyond the first 64 KiB of each; a body
    /// that needs more is answered 503 with Retry-After and not recorded.
    #[arg(long, env = "HOOKBIN_MAX_BODY_MEMORY", value_name = "N", default_value_t = 67_108_864, value_parser = clap::value_parser!(u64).range(0..=1_099_511_627_776))]
    pub max_body_memory: u64,

    /// Bins one client address may create per minute (429 beyond); 0 turns the limit off.
    #[arg(
        long,
        env = "HOOKBIN_MAX_BINS_PER_MINUTE",
        value_name = "N",
        default_value_t = 30
    )]
    pub max_bins_per_minute: u32,

    /// Writes waiting for the database at most; captures beyond it are answered 503.
    #[arg(long, env = "HOOKBIN_WRITE_QUEUE", value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub write_queue: u64,

    /// SQLite durability: `normal` survives a crash of hookbin, `full` also power failure.
    #[arg(
        long,
        env = "HOOKBIN_SYNCHRONOUS",
        value_enum,
        default_value = "normal"
    )]
    pub synchronous: Synchronous,

    /// Log line format (the level comes from RUST_LOG, default `hookbin=info`).
    #[arg(long, env = "HOOKBIN_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

/// Arguments of `hookbin forward`.
#[derive(Debug, Clone, Args)]
pub struct ForwardArgs {
    /// The bin to follow: its capture URL (`https://HOST/r/BIN`) or inspector URL (`/bins/BIN`).
    #[arg(value_name = "BIN_URL")]
    pub bin_url: String,

    /// Where to replay: `http://HOST[:PORT][/PATH]`; the captured subpath and query are appended.
    #[arg(long, value_name = "LOCAL_URL")]
    pub to: String,

    /// Replay the bin's latest request once, then exit.
    #[arg(long)]
    pub once: bool,

    /// How long to wait for the local server's response status.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// PEM file of extra CA certificates to trust for an https BIN_URL (a private CA or a
    /// self-signed certificate); the bundled web PKI roots are trusted as well.
    #[arg(long, value_name = "PATH")]
    pub ca_cert: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

impl Cli {
    /// The serve flags that apply: those after `serve`, or the top-level ones.
    pub fn serve_args(&self) -> Option<&ServeArgs> {
        match &self.command {
            None => Some(&self.serve),
            Some(Command::Serve(args)) => Some(args),
            Some(Command::Healthcheck(_) | Command::Forward(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_parse_humantime_and_reject_zero() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
