//! Command-line interface: the raw flags as clap parses them.
//!
//! Every `serve` flag has a `HOOKBIN_*` environment variable; a flag wins over its variable (clap's
//! rule). `forward`, `send` and `probe` are clients run by hand, so their flags have none, except
//! the secret (`HOOKBIN_SECRET`), which is better kept out of the shell history and `ps`. Nothing
//! below `config.rs` sees the serve types: [`crate::config::Config`] is built from them.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::signing::Scheme;
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

    /// Send one request, signed as a provider would sign it, to your webhook receiver.
    ///
    /// The body comes from --data or from a request captured in a bin (--from); --id and
    /// --timestamp pin every variable part, so the same flags send the same bytes. One line per
    /// attempt goes to stdout: attempt, status, time, the first bytes of the answer. With --retry,
    /// a connection error, a timeout, a 5xx or a 429 is retried on that schedule, signed again with
    /// a fresh timestamp and the same id. Exit 0 when an attempt got a 2xx, 1 when none did.
    Send(SendArgs),

    /// Check that your receiver accepts a correctly signed request and rejects forged ones.
    ///
    /// Sends, in order: a valid request, the same delivery again, a tampered body, a
    /// re-serialized JSON body, a wrong secret, no signature, a stale and a future timestamp. One
    /// table row per case; exit 0 when no case failed, 1 otherwise.
    Probe(ProbeArgs),
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

    /// New bins are private unless the creator says `"private": false`: their pages and API
    /// reads need the view token returned at creation (the capture URL stays open).
    #[arg(long, env = "HOOKBIN_PRIVATE_BINS", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub private_bins: bool,

    /// Bytes kept per bin (stored bodies and headers); its oldest requests are evicted beyond
    /// this, like the request count cap. The newest request is always kept.
    #[arg(long, env = "HOOKBIN_MAX_BIN_BYTES", value_name = "N", default_value_t = 104_857_600, value_parser = clap::value_parser!(u64).range(1..=(1u64 << 50)))]
    pub max_bin_bytes: u64,

    /// Bytes the whole database may use; beyond it captures answer 507 storage_full (nothing
    /// recorded) until deletes or the reaper make room. Reads and deletes keep working. Off
    /// unless set.
    #[arg(long, env = "HOOKBIN_MAX_DB_BYTES", value_name = "N", value_parser = clap::value_parser!(u64).range(65_536..=(1u64 << 60)))]
    pub max_db_bytes: Option<u64>,

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

impl From<&ForwardArgs> for crate::forward::Options {
    fn from(args: &ForwardArgs) -> Self {
        Self {
            bin_url: args.bin_url.clone(),
            to: args.to.clone(),
            once: args.once,
            timeout: args.timeout,
            ca_cert: args.ca_cert.clone(),
        }
    }
}

/// What `send` and `probe` both need: the scheme, the secret, the payload and the request's
/// shape.
#[derive(Debug, Clone, Args)]
pub struct MessageArgs {
    /// Signature scheme: standard-webhooks, svix, stripe, github, slack, shopify, twilio, botix,
    /// hmac-sha256.
    #[arg(long, value_name = "SCHEME", value_parser = parse_scheme)]
    pub scheme: Scheme,

    /// The signing secret, as the provider shows it: whsec_... (standard-webhooks, svix: v1),
    /// whsk_... (standard-webhooks: v1a, Ed25519), the endpoint or signing secret, auth token.
    /// Never printed.
    #[arg(
        long,
        env = "HOOKBIN_SECRET",
        hide_env_values = true,
        value_name = "SECRET",
        allow_hyphen_values = true
    )]
    pub secret: String,

    /// The body: a string, @FILE for a file's bytes, or - for stdin [default: a small JSON test
    /// event].
    #[arg(
        long,
        short = 'd',
        value_name = "STRING|@FILE|-",
        conflicts_with = "from",
        allow_hyphen_values = true
    )]
    pub data: Option<String>,

    /// Take the body and Content-Type of a captured request: its API or page URL
    /// (https://HOST/api/bins/BIN/requests/ID or https://HOST/bins/BIN/requests/ID).
    #[arg(long, value_name = "CAPTURED_REQUEST_URL")]
    pub from: Option<String>,

    /// The Content-Type header [default: application/json, or the captured one with --from].
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,

    /// An extra header, 'Name: value'; repeatable, sent in order after the scheme's headers.
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// The request method.
    #[arg(long, value_name = "METHOD", default_value = "POST")]
    pub method: String,

    /// twilio: the URL to sign when the receiver sees another one than URL (a tunnel or a proxy
    /// in between) [default: URL].
    #[arg(long, value_name = "URL")]
    pub signed_url: Option<String>,

    /// hmac-sha256: the header that carries `sha256=<hex>` [default: X-Signature].
    #[arg(long, value_name = "NAME")]
    pub signature_header: Option<String>,

    /// PEM file of extra CA certificates to trust for https URLs (a private CA or a
    /// self-signed certificate); the bundled web PKI roots are trusted as well.
    #[arg(long, value_name = "PATH")]
    pub ca_cert: Option<PathBuf>,
}

/// Arguments of `hookbin send`.
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// Where to send: http:// or https:// URL of your receiver.
    #[arg(value_name = "URL")]
    pub url: String,

    #[command(flatten)]
    pub message: MessageArgs,

    /// The event or delivery id, where the scheme has one [default: a fresh random one].
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    pub id: Option<String>,

    /// The signed timestamp, Unix seconds [default: now]. A retry adds the schedule's delays.
    #[arg(long, value_name = "UNIX")]
    pub timestamp: Option<i64>,

    /// Retry schedule, the delays before each retry: e.g. 30s,5m,30m.
    #[arg(long, value_name = "DURATIONS", value_parser = parse_schedule)]
    pub retry: Option<Schedule>,

    /// How long one attempt may take, from connecting to the end of the answer.
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// Arguments of `hookbin probe`.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// The receiver to check: http:// or https:// URL.
    #[arg(value_name = "URL")]
    pub url: String,

    #[command(flatten)]
    pub message: MessageArgs,

    /// How long the receiver may take to answer one case.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Print the results as JSON (for CI) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The delays of `--retry`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule(pub Vec<Duration>);

fn parse_scheme(name: &str) -> Result<Scheme, String> {
    Scheme::from_name(name.trim()).ok_or_else(|| {
        format!(
            "unknown scheme; expected one of: {}",
            Scheme::NAMES.join(", ")
        )
    })
}

/// `30s,5m,30m`: humantime durations separated by commas; `0s` retries at once.
fn parse_schedule(s: &str) -> Result<Schedule, String> {
    s.split(',')
        .map(|part| {
            let part = part.trim();
            if part.is_empty() {
                return Err("expected durations separated by commas, e.g. 30s,5m,30m".to_owned());
            }
            humantime::parse_duration(part).map_err(|e| format!("{part:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Schedule)
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
            Some(
                Command::Healthcheck(_)
                | Command::Forward(_)
                | Command::Send(_)
                | Command::Probe(_),
            ) => None,
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
    fn retry_schedules_are_comma_separated_durations() {
        assert_eq!(
            parse_schedule("30s, 5m,30m"),
            Ok(Schedule(vec![
                Duration::from_secs(30),
                Duration::from_secs(300),
                Duration::from_secs(1800)
            ]))
        );
        assert_eq!(parse_schedule("0s"), Ok(Schedule(vec![Duration::ZERO])));
        assert!(parse_schedule("30s,,5m").is_err());
        assert!(parse_schedule("").is_err());
        assert!(parse_schedule("soon").is_err());
    }

    #[test]
    fn schemes_parse_by_name_and_errors_list_them() {
        assert_eq!(parse_scheme("Stripe"), Ok(Scheme::Stripe));
        let err = parse_scheme("paypal").unwrap_err();
        assert!(err.contains("standard-webhooks, svix"), "{err}");
    }

    #[test]
    fn durations_parse_humantime_and_reject_zero() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
