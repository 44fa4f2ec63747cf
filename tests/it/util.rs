//! Test harness: starts the real `hookbin` binary on 127.0.0.1:0 with a database in a temporary
//! directory, and speaks HTTP/1.1 to it over plain sockets, so tests control every byte sent.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long any wait in a test may take before it fails (generous for slow CI machines).
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running hookbin process. Killed on drop; its log is printed if the test panicked.
pub struct Server {
    pub addr: SocketAddr,
    pub db: PathBuf,
    child: Option<Child>,
    log: Log,
    _dir: Option<tempfile::TempDir>,
    /// Under PostgreSQL, the test's database (shared by servers started on the same `db`).
    pub pg: Option<std::sync::Arc<crate::pg::TestDb>>,
}

/// A database for tests that restart servers on it: a SQLite path in a temporary directory, or
/// under `HOOKBIN_TEST_DB=postgres` a database of its own. Dropped (deleted) with this value.
pub struct Db {
    pub path: PathBuf,
    pub pg: Option<std::sync::Arc<crate::pg::TestDb>>,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    pub fn fresh() -> Db {
        if crate::pg::postgres() {
            let db = std::sync::Arc::new(crate::pg::TestDb::create());
            return Db {
                path: PathBuf::from(&db.url),
                pg: Some(db),
                _dir: None,
            };
        }
        let dir = tempfile::tempdir().expect("temp dir");
        Db {
            path: dir.path().join("hookbin.db"),
            pg: None,
            _dir: Some(dir),
        }
    }

    /// A server on this database.
    pub fn start(&self, args: &[&str]) -> Server {
        let mut server = Server::start_on(&self.path, args);
        server.pg = self.pg.clone();
        server
    }
}

impl Server {
    /// A server with a fresh temporary database and the given extra flags (a database of its
    /// own on PostgreSQL under `HOOKBIN_TEST_DB=postgres`).
    pub fn start(args: &[&str]) -> Server {
        if crate::pg::postgres() {
            let db = Db::fresh();
            return db.start(args);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("hookbin.db");
        let mut server = Server::start_on(&db, args);
        server._dir = Some(dir);
        server
    }

    /// A server on an existing database path (for restart tests). The caller owns the directory.
    pub fn start_on(db: &Path, args: &[&str]) -> Server {
        Server::try_start(db, args, &[])
            .unwrap_or_else(|log| panic!("hookbin did not start:\n{log}"))
    }

    /// Starts with extra environment variables (an empty value removes the variable, e.g.
    /// `RUST_LOG` for the default level); `Err(log)` if it exits or never listens.
    pub fn try_start(db: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Server, String> {
        Server::try_start_umask(db, args, env, None)
    }

    /// A server with a fresh temporary database, started under the given umask (through `sh`,
    /// which then execs hookbin: the process is still hookbin's).
    pub fn start_with_umask(umask: u32, args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("hookbin.db");
        let mut server = Server::try_start_umask(&db, args, &[], Some(umask))
            .unwrap_or_else(|log| panic!("hookbin did not start:\n{log}"));
        server._dir = Some(dir);
        server
    }

    fn try_start_umask(
        db: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        umask: Option<u32>,
    ) -> Result<Server, String> {
        let mut cmd = match umask {
            None => Command::new(env!("CARGO_BIN_EXE_hookbin")),
            Some(mask) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!("umask {mask:03o} && exec \"$0\" \"$@\""))
                    .arg(env!("CARGO_BIN_EXE_hookbin"));
                sh
            }
        };
        cmd.arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--db")
            .arg(db)
            .args(args)
            .env("RUST_LOG", "hookbin=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            if v.is_empty() {
                cmd.env_remove(k);
            } else {
                cmd.env(k, v);
            }
        }
        let mut child = cmd.spawn().expect("spawn hookbin");
        let log = Log::default();
        log.follow(child.stderr.take().unwrap());
        log.follow(child.stdout.take().unwrap());
        match log.wait_until(|text| listening_addr(text).is_some()) {
            Ok(text) => Ok(Server {
                addr: listening_addr(&text).unwrap(),
                db: db.to_owned(),
                child: Some(child),
                log,
                _dir: None,
                pg: None,
            }),
            Err(Ended::Closed(text)) => {
                let status = child.wait().unwrap();
                Err(format!("exited with {status}\n{text}"))
            }
            Err(Ended::TimedOut(text)) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("no 'listening on' line\n{text}"))
            }
        }
    }

    /// A number from an SQL query on the server's database, whichever the engine (for checks
    /// below the API, such as a cascade).
    pub fn query_number(&self, sql: &str) -> i64 {
        match &self.pg {
            Some(db) => db.sql(sql).parse().expect("a number"),
            None => rusqlite::Connection::open(&self.db)
                .unwrap()
                .query_row(sql, [], |r| r.get(0))
                .unwrap(),
        }
    }

    /// Everything logged so far (lines still in the pipe may be missing; see [`Server::stop`]).
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// Waits for a log line containing `needle`; the log so far.
    pub fn wait_for_log(&self, needle: &str) -> String {
        self.log
            .wait_until(|text| text.contains(needle))
            .unwrap_or_else(|e| panic!("no log line with {needle:?}: {e}"))
    }

    /// Stops the server with SIGTERM, asserts a clean exit, and returns its whole log.
    pub fn stop(&mut self) -> String {
        let status = self.signal("TERM");
        assert!(status.success(), "exit status after SIGTERM: {status}");
        self.log.text()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends a signal by name (TERM, KILL) and waits for the process to exit; its exit status.
    pub fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        self.send_signal(sig);
        self.wait_exit()
    }

    /// Sends a signal by name without waiting.
    pub fn send_signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("running").id();
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits for the process to exit on its own; its exit status. Its log is complete then.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        wait_exit(&mut child, &[&self.log])
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut raw = head.into_bytes();
        raw.extend_from_slice(body);
        if method == "HEAD" {
            let mut conn = self.connect();
            conn.write_all(&raw).expect("send request");
            return read_head(&mut BufReader::new(conn)).expect("read response head");
        }
        self.raw(&raw)
    }

    /// Sends exact bytes on a new connection and reads one response.
    pub fn raw(&self, bytes: &[u8]) -> Response {
        let mut conn = self.connect();
        conn.write_all(bytes).expect("send request");
        read_response(&mut BufReader::new(conn)).expect("read response")
    }

    pub fn connect(&self) -> TcpStream {
        let conn = TcpStream::connect(self.addr).expect("connect");
        conn.set_read_timeout(Some(PATIENCE)).unwrap();
        conn
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    /// The value of one sample in the `/metrics` text; `None` when it is not served.
    pub fn metric(&self, name: &str) -> Option<u64> {
        let text = self.get("/metrics").text();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))?;
        Some(line.trim().parse().unwrap())
    }

    pub fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &str) -> Response {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    /// Creates a bin; its JSON.
    pub fn create_bin_with(&self, body: &str) -> Value {
        let res = self.post_json("/api/bins", body);
        assert_eq!(res.status, 201, "create bin: {}", res.text());
        res.json()
    }

    /// Creates a bin; its id.
    pub fn create_bin(&self) -> String {
        self.create_bin_with("")["id"].as_str().unwrap().to_owned()
    }

    /// POSTs `body` to the bin; asserts 200 and returns the request id.
    pub fn capture(&self, bin: &str, body: &[u8]) -> String {
        let res = self.request("POST", &format!("/r/{bin}"), &[], body);
        assert_eq!(res.status, 200, "capture: {}", res.text());
        res.header("x-request-id").expect("x-request-id").to_owned()
    }

    /// The stored request as JSON.
    pub fn stored(&self, bin: &str, id: &str) -> Value {
        let res = self.get(&format!("/api/bins/{bin}/requests/{id}"));
        assert_eq!(res.status, 200, "{}", res.text());
        res.json()
    }

    /// Every summary of the bin, newest first, following cursors.
    pub fn list_all(&self, bin: &str, limit: usize) -> Vec<Value> {
        let mut all = Vec::new();
        let mut cursor = String::new();
        loop {
            let res = self.get(&format!(
                "/api/bins/{bin}/requests?limit={limit}&cursor={cursor}"
            ));
            assert_eq!(res.status, 200, "{}", res.text());
            let page = res.json();
            all.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["meta"]["next_cursor"].as_str() {
                Some(c) => cursor = c.to_owned(),
                None => return all,
            }
        }
    }

    /// Waits until `check` holds, failing the test after [`PATIENCE`]. For states that announce
    /// themselves nowhere (a wall-clock expiry); prefer [`Server::wait_for_log`], an event stream
    /// or a response where there is one.
    pub fn eventually(&self, what: &str, mut check: impl FnMut() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !check() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for: {what}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- hookbin log ---\n{}", self.log());
        }
    }
}

/// What a child process printed, collected line by line by reader threads of its own (so the
/// child never blocks on a full pipe), for tests that wait for a line: a waiter wakes on each new
/// line, and learns when every pipe has closed (the process has exited) instead of guessing.
#[derive(Clone, Default)]
pub struct Log(Arc<LogShared>);

#[derive(Default)]
struct LogShared {
    state: Mutex<LogState>,
    changed: Condvar,
}

#[derive(Default)]
struct LogState {
    text: String,
    open_pipes: usize,
    readers: Vec<JoinHandle<()>>,
}

/// Why [`Log::wait_until`] gave up; each holds the text so far.
#[derive(Debug)]
pub enum Ended {
    /// Every pipe closed: the process has exited.
    Closed(String),
    TimedOut(String),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Closed(text) => write!(f, "the process exited\n{text}"),
            Ended::TimedOut(text) => write!(f, "timed out after {PATIENCE:?}\n{text}"),
        }
    }
}

impl Log {
    /// Appends every line `pipe` produces, from a thread of its own.
    pub fn follow(&self, pipe: impl Read + Send + 'static) {
        let shared = self.0.clone();
        let mut state = self.0.state.lock().unwrap();
        state.open_pipes += 1;
        state.readers.push(std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut state = shared.state.lock().unwrap();
                state.text.push_str(&line);
                state.text.push('\n');
                shared.changed.notify_all();
            }
            shared.state.lock().unwrap().open_pipes -= 1;
            shared.changed.notify_all();
        }));
    }

    pub fn text(&self) -> String {
        self.0.state.lock().unwrap().text.clone()
    }

    /// Waits until `check` holds for the text so far (checked on every new line); that text.
    pub fn wait_until(&self, mut check: impl FnMut(&str) -> bool) -> Result<String, Ended> {
        let deadline = Instant::now() + PATIENCE;
        let mut state = self.0.state.lock().unwrap();
        loop {
            if check(&state.text) {
                return Ok(state.text.clone());
            }
            if state.open_pipes == 0 {
                return Err(Ended::Closed(state.text.clone()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Ended::TimedOut(state.text.clone()));
            }
            state = self.0.changed.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Waits until every pipe has closed and its reader has stored the last line: after this
    /// the text is all the process printed. `false` if that took longer than [`PATIENCE`].
    pub fn wait_closed(&self) -> bool {
        if !matches!(self.wait_until(|_| false), Err(Ended::Closed(_))) {
            return false;
        }
        let readers = std::mem::take(&mut self.0.state.lock().unwrap().readers);
        for reader in readers {
            reader.join().expect("a log reader panicked");
        }
        true
    }
}

/// Waits for `child` to exit, which every pipe closing announces; then the logs that follow its
/// output are complete. Kills it and fails the test after [`PATIENCE`].
pub fn wait_exit(child: &mut Child, logs: &[&Log]) -> std::process::ExitStatus {
    for log in logs {
        if !log.wait_closed() {
            let _ = child.kill();
            panic!(
                "the process did not exit within {PATIENCE:?}\n{}",
                log.text()
            );
        }
    }
    child.wait().expect("wait for the process")
}

/// A port where nothing listens: one the kernel just handed out and took back (it does not hand
/// it out again right away). For tests of "cannot connect"; where any dead end will do, prefer
/// [`Hangup`], which cannot be taken by someone else.
pub fn closed_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
}

/// A listener that accepts every connection and closes it at once, for as long as it lives: a
/// peer that answers nothing, on a port that stays ours.
pub struct Hangup {
    pub addr: SocketAddr,
    _thread: JoinHandle<()>,
}

impl Hangup {
    pub fn start() -> Hangup {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        // Blocks in accept; the thread ends with the test process.
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                drop(conn);
            }
        });
        Hangup {
            addr,
            _thread: thread,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

fn listening_addr(log: &str) -> Option<SocketAddr> {
    let rest = &log[log.find("listening on http://")? + "listening on http://".len()..];
    // Ends at a space (text format) or a quote (`--log-format json`).
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '"')
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// One parsed HTTP response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// Asserts the API error shape and code.
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text());
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{v}"
        );
    }
}

/// Reads one response (Content-Length, chunked, or until close).
pub fn read_response(r: &mut impl BufRead) -> std::io::Result<Response> {
    let mut res = read_head(r)?;
    let mut body = Vec::new();
    if let Some(len) = res.header("content-length") {
        body.resize(len.parse().unwrap(), 0);
        r.read_exact(&mut body)?;
    } else if res
        .header("transfer-encoding")
        .is_some_and(|te| te.contains("chunked"))
    {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap(), 16).unwrap();
            if size == 0 {
                let mut end = String::new();
                r.read_line(&mut end)?;
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            let mut crlf = [0; 2];
            r.read_exact(&mut crlf)?;
        }
    } else if res.status != 204 && res.status != 304 {
        r.read_to_end(&mut body)?;
    }
    res.body = body;
    Ok(res)
}

/// Reads a status line and headers only (for HEAD requests and streams).
pub fn read_head(r: &mut impl BufRead) -> std::io::Result<Response> {
    let mut status_line = String::new();
    r.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').unwrap_or((line, ""));
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(Response {
        status,
        headers,
        body: Vec::new(),
    })
}

/// Decodes a standard base64 string (test-side, independent of the server's encoder).
pub fn b64(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}
