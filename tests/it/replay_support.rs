//! Test harness for copy-as-curl: a one-request raw HTTP/1 listener, shell runners, and the
//! comparison of what curl sent with what was captured.
//!
//! The listener keeps the request line and headers as raw bytes (only `httparse::parse_headers`
//! touches them) so that the comparison is byte-exact.
//!
//! The second half serves the tests that go through the real server: a generator of raw
//! requests hookbin accepts, a receiver for `hookbin forward`, and the Request JSON read back
//! with exact header bytes.

#![allow(dead_code)] // each test binary uses a different part

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use hookbin::model::{HeaderPair, StoredRequest};
use hookbin::render::curl_command;

/// What the listener received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub method: Vec<u8>,
    pub target: Vec<u8>,
    pub version: Vec<u8>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// Headers the replay drops by design (hop-by-hop, plus what curl derives itself); written out
/// here from the spec rather than imported, so the test is an independent oracle.
const NOT_REPLAYED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
];

const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// A listener on 127.0.0.1:0 that accepts exactly one connection in a thread.
pub struct OneShot {
    pub url: String,
    result: mpsc::Receiver<io::Result<Captured>>,
}

impl OneShot {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, result) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(serve_one(listener));
        });
        Self { url, result }
    }

    /// What arrived; an error when nothing did within `IO_TIMEOUT` (a command that never
    /// connects leaves the thread blocked in accept, which ends with the test process).
    pub fn wait(self) -> io::Result<Captured> {
        self.result.recv_timeout(IO_TIMEOUT).unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete request arrived",
            ))
        })
    }
}

fn serve_one(listener: TcpListener) -> io::Result<Captured> {
    let (stream, _) = listener.accept()?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut conn = Conn {
        stream,
        buf: Vec::new(),
    };
    let captured = read_request(&mut conn)?;
    conn.stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    Ok(captured)
}

/// A TCP stream with a buffer of bytes read but not yet consumed.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn fill(&mut self) -> io::Result<()> {
        let mut tmp = [0u8; 64 * 1024];
        let n = self.stream.read(&mut tmp)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(())
    }

    /// Consumes up to and including `delim`; returns what came before it.
    fn take_until(&mut self, delim: &[u8]) -> io::Result<Vec<u8>> {
        loop {
            if let Some(i) = find(&self.buf, delim) {
                let mut out: Vec<u8> = self.buf.drain(..i + delim.len()).collect();
                out.truncate(i);
                return Ok(out);
            }
            self.fill()?;
        }
    }

    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            self.fill()?;
        }
        Ok(self.buf.drain(..n).collect())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn read_request(conn: &mut Conn) -> io::Result<Captured> {
    let head = conn.take_until(b"\r\n\r\n")?;
    let line_end = find(&head, b"\r\n").unwrap_or(head.len());
    let mut parts = head[..line_end].splitn(3, |&b| b == b' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) => (m.to_vec(), t.to_vec(), v.to_vec()),
        _ => return Err(invalid("bad request line")),
    };
    let mut header_block = head[line_end..]
        .strip_prefix(b"\r\n")
        .unwrap_or(b"")
        .to_vec();
    header_block.extend_from_slice(b"\r\n\r\n");
    let mut slots = [httparse::EMPTY_HEADER; 256];
    let headers = match httparse::parse_headers(&header_block, &mut slots) {
        Ok(httparse::Status::Complete((_, hs))) => hs
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect::<Vec<_>>(),
        other => return Err(invalid(&format!("bad headers: {other:?}"))),
    };
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let body = if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked")) {
        read_chunked(conn)?
    } else if let Some(len) = get("content-length") {
        let len: usize = std::str::from_utf8(&len)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| invalid("bad content-length"))?;
        conn.take(len)?
    } else {
        Vec::new()
    };
    Ok(Captured {
        method,
        target,
        version,
        headers,
        body,
    })
}

fn read_chunked(conn: &mut Conn) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = conn.take_until(b"\r\n")?;
        let size_hex = line.split(|&b| b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(size_hex)
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .ok_or_else(|| invalid("bad chunk size"))?;
        if size == 0 {
            // Trailer section: lines until an empty one.
            while !conn.take_until(b"\r\n")?.is_empty() {}
            return Ok(body);
        }
        body.extend(conn.take(size)?);
        conn.take(2)?;
    }
}

/// A shell invocation prefix, e.g. `["zsh", "-o", "rcquotes"]`.
pub type Shell = &'static [&'static str];

pub const BASH: Shell = &["bash"];
pub const ZSH: Shell = &["zsh"];

/// Whether zsh is installed; warns loudly (once) when it is not, and fails under `CI=true`.
pub fn zsh_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let ok = Command::new("zsh")
            .args(["-c", "true"])
            .status()
            .is_ok_and(|s| s.success());
        if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "zsh is not installed, and CI=true: the zsh round-trips must run in CI. \
                 Install the Debian package `zsh` (apt-get install zsh)."
            );
        }
        if !ok {
            eprintln!(
                "\n!!!!! WARNING: zsh is not installed: zsh round-trips are SKIPPED. \
                 Install the Debian package `zsh` (apt-get install zsh) to run them. !!!!!\n"
            );
        }
        ok
    })
}

/// bash, plus zsh when installed.
pub fn shells() -> Vec<Shell> {
    let mut v = vec![BASH];
    if zsh_available() {
        v.push(ZSH);
    }
    v
}

/// Runs `cmd` with `shell -c` in `cwd`; a command too long for one argument (`E2BIG` above
/// 128 KiB) is run from a script file instead, which the shell reads the same way.
///
/// The environment is cleared except `PATH`, so proxies and a `~/.curlrc` cannot interfere.
pub fn run(shell: Shell, cmd: &str, cwd: &Path) -> Output {
    let mut c = Command::new(shell[0]);
    c.args(&shell[1..]);
    let script;
    if cmd.len() < 100_000 {
        c.arg("-c").arg(cmd);
    } else {
        script = tempfile::NamedTempFile::new().expect("script file");
        std::fs::write(script.path(), cmd).expect("write script");
        c.arg(script.path());
    }
    c.current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent-hookbin-test-home")
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .expect("spawn shell")
}

/// A request as the server would store it, with `path` derived from `subpath`.
pub fn stored(
    method: &str,
    subpath: &str,
    query: &str,
    headers: Vec<HeaderPair>,
    body: Vec<u8>,
    http_version: &str,
) -> StoredRequest {
    StoredRequest {
        id: hookbin::ids::RequestId::from_row(1),
        bin_id: "0123456789abcdefgh".into(),
        method: method.into(),
        path: format!("/r/0123456789abcdefgh{subpath}"),
        subpath: subpath.into(),
        query: query.into(),
        headers,
        body_size: body.len() as u64,
        body,
        body_truncated: false,
        remote_addr: "127.0.0.1".into(),
        http_version: http_version.into(),
        received_at: 0,
        response: None,
    }
}

/// Where to aim the replay: the original base (path kept) or a target with a path prefix.
#[derive(Debug, Clone, Copy)]
pub enum Aim {
    Base,
    Target(&'static str),
}

/// Generates the command for `req`, runs it with `shell` against a fresh listener and compares
/// what arrived with the original. `Err` describes the first difference.
pub fn roundtrip(req: &StoredRequest, aim: Aim, shell: Shell) -> Result<(), String> {
    let server = OneShot::start();
    let (cmd, expected_path) = match aim {
        Aim::Base => (curl_command(req, &server.url, None), req.path.clone()),
        Aim::Target(prefix) => (
            curl_command(
                req,
                "http://unused.invalid",
                Some(&format!("{}{prefix}", server.url)),
            ),
            format!("{}{}", prefix.trim_end_matches('/'), req.subpath),
        ),
    };
    let cmd = cmd.map_err(|e| format!("curl_command failed: {e}"))?;
    let cwd = tempfile::tempdir().expect("tempdir");
    let out = run(shell, &cmd, cwd.path());
    if !out.status.success() {
        return Err(format!(
            "{shell:?} exited {}: {}\ncommand: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            preview(&cmd)
        ));
    }
    let got = server.wait().map_err(|e| format!("listener: {e}"))?;
    compare(req, expected_path, &got).map_err(|e| format!("{e}\ncommand: {}", preview(&cmd)))
}

pub fn preview(cmd: &str) -> String {
    match cmd.char_indices().nth(2000) {
        Some((i, _)) => format!("{}… ({} bytes)", &cmd[..i], cmd.len()),
        None => cmd.to_string(),
    }
}

fn compare(req: &StoredRequest, mut path: String, got: &Captured) -> Result<(), String> {
    if path.is_empty() {
        path.push('/');
    }
    if !req.query.is_empty() {
        path = format!("{path}?{}", req.query);
    }
    check_eq("method", req.method.as_bytes(), &got.method)?;
    check_eq("request target", path.as_bytes(), &got.target)?;
    check_eq("version", req.http_version.as_bytes(), &got.version)?;

    let expected: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .filter(|h| !not_replayed(&h.name))
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let received: Vec<(String, Vec<u8>)> = got
        .headers
        .iter()
        .filter(|(n, _)| !not_replayed(n))
        .cloned()
        .collect();
    if expected != received {
        return Err(format!(
            "headers differ\nexpected: {expected:?}\nreceived: {received:?}"
        ));
    }

    // A body goes out (with Content-Length) exactly when the original had bytes or framing.
    let framed = !req.body.is_empty()
        || req.headers.iter().any(|h| {
            h.name.eq_ignore_ascii_case("content-length")
                || h.name.eq_ignore_ascii_case("transfer-encoding")
        });
    let got_len = got
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.clone());
    if framed != got_len.is_some() {
        return Err(format!(
            "framing: original framed={framed}, received Content-Length {got_len:?}"
        ));
    }
    if req.body != got.body {
        return Err(format!(
            "body differs: expected {} bytes, received {} bytes (first difference at {:?})",
            req.body.len(),
            got.body.len(),
            req.body.iter().zip(&got.body).position(|(a, b)| a != b)
        ));
    }
    Ok(())
}

pub fn not_replayed(name: &str) -> bool {
    NOT_REPLAYED.iter().any(|n| n.eq_ignore_ascii_case(name))
}

fn check_eq(what: &str, expected: &[u8], got: &[u8]) -> Result<(), String> {
    if expected == got {
        Ok(())
    } else {
        Err(format!(
            "{what} differs: expected {:?}, received {:?}",
            String::from_utf8_lossy(expected),
            String::from_utf8_lossy(got)
        ))
    }
}

/// Deterministic pseudo-random bytes (xorshift), so large-body tests need no RNG crate.
pub fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 24) as u8
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Through the real server: generated raw requests, a receiver for `hookbin forward`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::Value;

use crate::util::{Server, b64, read_head};

/// Reads one request from an accepted connection.
pub fn read_one(stream: TcpStream) -> io::Result<(Captured, TcpStream)> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut conn = Conn {
        stream,
        buf: Vec::new(),
    };
    let captured = read_request(&mut conn)?;
    Ok((captured, conn.stream))
}

/// A local server for `hookbin forward` to replay to: records every request it gets, exactly,
/// and answers `status` with an empty body.
pub struct Receiver {
    pub addr: SocketAddr,
    rx: mpsc::Receiver<Captured>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    pub fn start() -> Receiver {
        Receiver::start_on("127.0.0.1:0".parse().unwrap(), 200).expect("bind receiver")
    }

    pub fn start_on(addr: SocketAddr, status: u16) -> io::Result<Receiver> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            // Blocks in accept; Drop sets `stop` and connects once to wake it.
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                match stream {
                    Ok(stream) => {
                        let tx = tx.clone();
                        std::thread::spawn(move || {
                            if let Ok((captured, mut stream)) = read_one(stream) {
                                // Record before answering: once forward has its status it sends
                                // the next request, whose thread must not overtake this one.
                                let _ = tx.send(captured);
                                let _ = stream.write_all(
                                    format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n")
                                        .as_bytes(),
                                );
                            }
                        });
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(Receiver { addr, rx, stop })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The next request received, waiting up to `IO_TIMEOUT`.
    pub fn next(&self) -> Captured {
        self.rx
            .recv_timeout(IO_TIMEOUT)
            .expect("the receiver got no request in time")
    }

    /// Asserts that nothing (more) arrives within `wait`.
    pub fn assert_quiet(&self, wait: Duration) {
        if let Ok(extra) = self.rx.recv_timeout(wait) {
            panic!(
                "unexpected extra request: {} {}",
                String::from_utf8_lossy(&extra.method),
                String::from_utf8_lossy(&extra.target)
            );
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

/// A request as a client puts it on the wire, before hookbin sees it.
#[derive(Debug, Clone)]
pub struct RawRequest {
    pub method: String,
    pub subpath: String,
    pub query: String,
    /// Every header line but the framing one, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    pub framing: Framing,
    /// Where among `headers` the framing header goes.
    pub framing_at: usize,
    pub http_10: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body and no framing header.
    None,
    ContentLength,
    /// `Transfer-Encoding: chunked`, the body cut into chunks of this size.
    Chunked(usize),
}

impl RawRequest {
    pub fn bytes(&self, bin: &str) -> Vec<u8> {
        let version = if self.http_10 { "HTTP/1.0" } else { "HTTP/1.1" };
        let mut target = format!("/r/{bin}{}", self.subpath);
        if !self.query.is_empty() {
            target = format!("{target}?{}", self.query);
        }
        let mut out = format!("{} {target} {version}\r\n", self.method).into_bytes();
        let framing_line = match self.framing {
            Framing::None => None,
            Framing::ContentLength => Some(format!("Content-Length: {}", self.body.len())),
            Framing::Chunked(_) => Some("Transfer-Encoding: chunked".to_owned()),
        };
        for (i, (name, value)) in self.headers.iter().enumerate() {
            if i == self.framing_at
                && let Some(line) = &framing_line
            {
                out.extend_from_slice(line.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        if self.framing_at >= self.headers.len()
            && let Some(line) = &framing_line
        {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        match self.framing {
            Framing::None => {}
            Framing::ContentLength => out.extend_from_slice(&self.body),
            Framing::Chunked(size) => {
                for chunk in self.body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        out
    }

    /// Sends it to `bin` on a new connection; the request id hookbin answered with.
    pub fn send(&self, server: &Server, bin: &str) -> String {
        let mut conn = server.connect();
        conn.write_all(&self.bytes(bin)).expect("send");
        let head = read_head(&mut io::BufReader::new(conn)).expect("response head");
        assert_eq!(
            head.status, 200,
            "hookbin refused a generated request: {self:?}"
        );
        head.header("x-request-id")
            .expect("x-request-id")
            .to_owned()
    }
}

pub const INJECTIONS: &[&str] = &[
    "'; touch pwned; '",
    "$(touch pwned)",
    "`touch pwned`",
    "\"; touch pwned; \"",
    "\\",
    "%s%b%%\\0101",
    "!!",
    "'\"'\"",
    "${IFS}$(touch${IFS}pwned)",
];

/// Request-target bytes hookbin (hyper) accepts besides percent-escapes: it answers `400` to
/// `"`, `<`, `>`, backtick, DEL and non-ASCII, and cuts the target at `#`.
const SERVER_PATH_CHARS: &str = "abcXYZ019-._~!$&'()*+,;=:@[]{}|^\\";

/// A run of request-target characters from `chars` and `extra`, percent-escapes, and `oddities`
/// (dot segments, broken escapes and the like).
pub fn url_piece(
    chars: &'static str,
    extra: &'static str,
    oddities: Vec<&'static str>,
) -> impl Strategy<Value = String> {
    let chars: Vec<char> = chars.chars().chain(extra.chars()).collect();
    prop::collection::vec(
        prop_oneof![
            8 => select(chars).prop_map(String::from),
            2 => any::<u8>().prop_map(|b| format!("%{b:02X}")),
            1 => select(oddities).prop_map(String::from),
        ],
        0..8,
    )
    .prop_map(|v| v.concat())
}

fn server_url_piece(extra: &'static str) -> impl Strategy<Value = String> {
    url_piece(
        SERVER_PATH_CHARS,
        extra,
        vec!["..", ".", "%zz", "%", "%e2%9c%93"],
    )
}

/// Common methods, WebDAV ones, and lowercase extension tokens.
pub fn method() -> impl Strategy<Value = String> {
    let known = vec![
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "PURGE",
    ];
    prop_oneof![
        4 => select(known).prop_map(String::from),
        1 => "[a-z][a-z0-9!#$%&'*+.^_`|~-]{0,8}",
    ]
}

/// A field value as a parser hands it over: VCHAR, obs-text, inner SP/HTAB, no outer whitespace.
pub fn header_value() -> impl Strategy<Value = Vec<u8>> {
    let byte =
        prop_oneof![6 => 0x21u8..=0x7e, 2 => 0x80u8..=0xff, 1 => Just(b' '), 1 => Just(b'\t')];
    prop_oneof![
        4 => prop::collection::vec(byte, 0..24).prop_map(|v| {
            let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
            let start = v.iter().position(|b| !is_ws(b)).unwrap_or(v.len());
            let end = v.iter().rposition(|b| !is_ws(b)).map_or(start, |i| i + 1);
            v[start..end].to_vec()
        }),
        1 => select(INJECTIONS).prop_map(|s| s.as_bytes().to_vec()),
    ]
}

/// Names hookbin and curl treat specially are mixed with random tokens. The framing headers
/// are the generator's own business (see [`Framing`]), and `Connection` only says close or
/// keep-alive: `upgrade` would switch protocols.
fn server_header() -> impl Strategy<Value = (String, Vec<u8>)> {
    let known = vec![
        "User-Agent",
        "Accept",
        "Content-Type",
        "content-type",
        "X-Dup",
        "x-dup",
        "Cookie",
        "Authorization",
        "Keep-Alive",
        "TE",
        "Trailer",
        "Upgrade",
        "Stripe-Signature",
    ];
    let value = header_value();
    prop_oneof![
        6 => (
            prop_oneof![
                2 => select(known).prop_map(String::from),
                3 => "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}"
                    .prop_filter("framing and connection headers are generated apart", |n| {
                        !["content-length", "transfer-encoding", "connection", "host", "expect"]
                            .iter()
                            .any(|f| n.eq_ignore_ascii_case(f))
                    }),
            ],
            value,
        ),
        1 => select(vec!["close", "keep-alive"])
            .prop_map(|v| ("Connection".to_owned(), v.as_bytes().to_vec())),
        1 => Just(("Host".to_owned(), b"hooks.example".to_vec())),
    ]
}

/// Bodies: empty, random bytes up to `max_random` long, shell-hostile text, the injections,
/// and runs of NUL/CR/LF.
pub fn body(max_random: usize) -> impl Strategy<Value = Vec<u8>> {
    let text_chars = vec![
        'a', 'Z', '0', ' ', '\n', '\t', '\'', '"', '$', '`', '\\', '!', '%', 'é', '✓', '@', '{',
        '#',
    ];
    prop_oneof![
        2 => Just(Vec::new()),
        3 => prop::collection::vec(any::<u8>(), 0..max_random),
        3 => prop::collection::vec(select(text_chars), 0..100)
            .prop_map(|cs| cs.into_iter().collect::<String>().into_bytes()),
        1 => select(INJECTIONS).prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(
            prop_oneof![Just(0u8), Just(b'\r'), Just(b'\n'), any::<u8>()],
            0..50,
        ),
    ]
}

/// Requests hookbin records: any method, reserved characters in path and query, quotes, `$`,
/// backticks, `\` and obs-text in header values, duplicates, NUL/CR/invalid UTF-8 bodies,
/// Content-Length or chunked framing, HTTP/1.0 and 1.1.
pub fn raw_request() -> impl Strategy<Value = RawRequest> {
    let subpath = prop_oneof![
        1 => Just(String::new()),
        4 => prop::collection::vec(server_url_piece(""), 1..4)
            .prop_map(|segs| segs.iter().map(|s| format!("/{s}")).collect()),
    ];
    let query = prop_oneof![1 => Just(String::new()), 3 => server_url_piece("/?")];
    (
        method(),
        subpath,
        query,
        prop::collection::vec(server_header(), 0..8),
        body(300),
        0usize..3,
        1usize..64,
        any::<Index>(),
        prop_oneof![9 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(method, subpath, query, headers, body, framing, chunk, at, http_10)| {
                let framing = match (framing, body.is_empty(), http_10) {
                    // HTTP/1.0 has no chunked encoding.
                    (2, _, false) => Framing::Chunked(chunk),
                    (0, true, _) => Framing::None,
                    _ => Framing::ContentLength,
                };
                let framing_at = at.index(headers.len() + 1);
                RawRequest {
                    method,
                    subpath,
                    query,
                    headers,
                    body,
                    framing,
                    framing_at,
                    http_10,
                }
            },
        )
}

/// The Request JSON's headers with their exact value bytes (`headers_base64`).
pub fn exact_headers(request: &Value) -> Vec<(String, Vec<u8>)> {
    request["headers_base64"]
        .as_array()
        .expect("headers_base64")
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_owned(),
                b64(pair[1].as_str().unwrap()),
            )
        })
        .collect()
}

/// Whether the capture carried a body (bytes, or an announced empty one).
pub fn framed(headers: &[(String, Vec<u8>)], body: &[u8]) -> bool {
    !body.is_empty()
        || headers.iter().any(|(n, _)| {
            n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
        })
}

/// Header lines minus the ones a replay drops or sets itself.
pub fn replayed_headers(headers: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .filter(|(n, _)| !not_replayed(n))
        .cloned()
        .collect()
}

/// Describes a header list readably for failure messages.
pub fn show_headers(headers: &[(String, Vec<u8>)]) -> String {
    headers
        .iter()
        .map(|(n, v)| format!("{n}: {}", String::from_utf8_lossy(v).escape_debug()))
        .collect::<Vec<_>>()
        .join(" | ")
}
