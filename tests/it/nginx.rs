//! hookbin behind real nginx, configured with the repository's own `nginx/hookbin.conf`.
//!
//! The file is read as shipped; only its listen port, upstream address and log directory are
//! substituted, and it is wrapped in a minimal `nginx.conf` with temporary paths so that nginx
//! runs as any user. Without nginx these tests are skipped with a loud message, except under
//! `CI=true`, where they fail: CI installs the `nginx` package (see `.ci/run`).

use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{PATIENCE, Response, Server, b64, read_head, read_response};

/// The shipped config, relative to the crate root.
const CONF: &str = "nginx/hookbin.conf";
/// hookbin's default `--max-body-bytes`, which the shipped config is written for.
const MAX_BODY: usize = 5 * 1024 * 1024;

/// The `Server` header of `GET /healthz` at `addr`, if anything answers there.
fn server_header(addr: SocketAddr) -> Option<String> {
    let mut conn = TcpStream::connect(addr).ok()?;
    conn.set_read_timeout(Some(PATIENCE)).ok()?;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).ok()?;
    let res = read_response(&mut BufReader::new(conn)).ok()?;
    res.header("server").map(str::to_owned)
}

/// A running nginx in front of `upstream`; stopped on drop.
pub struct Nginx {
    pub addr: SocketAddr,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// nginx with the shipped config in front of hookbin `s`, or `None` when nginx is missing
    /// outside CI.
    fn start(s: &Server) -> Option<Nginx> {
        Nginx::start_conf(CONF, &[s.addr])
    }

    /// nginx with the shipped `conf` (a path in the repository) in front of `upstreams`, one for
    /// each `server 127.0.0.1:...` line of its upstream block, in order.
    pub fn start_conf(conf: &str, upstreams: &[SocketAddr]) -> Option<Nginx> {
        let binary = nginx_binary()?;
        let dir = tempfile::tempdir().expect("temp dir");
        // Run as root, nginx's workers switch to `nobody`, which must reach the temp paths.
        set_mode(dir.path(), 0o755);
        let mut last_error = String::new();
        for _ in 0..20 {
            // Below Linux's ephemeral range (32768-60999), where every hookbin the other tests
            // start on port 0 lands: a port there may be taken between our pick and nginx's bind.
            let port = 20_000 + (random() % 12_000) as u16;
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            write_config(conf, dir.path(), addr, upstreams);
            let pid_file = dir.path().join("nginx.pid");
            let _ = std::fs::remove_file(&pid_file);
            let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
            let mut child = Command::new(&binary)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .spawn()
                .expect("spawn nginx");
            let deadline = Instant::now() + PATIENCE;
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last_error =
                        std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default();
                    if last_error.contains("Address already in use") {
                        break; // someone else has this port: try another
                    }
                    panic!("nginx exited with {status}:\n{last_error}");
                }
                // nginx writes its pid file once its listening socket is bound (a failed bind
                // retries for a while, then exits without one): then the port is ours.
                let ours = std::fs::read_to_string(&pid_file)
                    .is_ok_and(|pid| pid.trim() == child.id().to_string());
                if ours {
                    let server = server_header(addr).unwrap_or_default();
                    assert!(server.starts_with("nginx"), "{addr} answers as {server:?}");
                    return Some(Nginx {
                        addr,
                        child: Some(child),
                        dir,
                    });
                }
                if Instant::now() > deadline {
                    stop(&mut child);
                    panic!("nginx did not start listening on {addr}");
                }
                // nginx announces readiness nowhere else than in that file: look again soon.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("no free port for nginx after 20 tries:\n{last_error}");
    }

    /// Sends exact bytes on a new connection and reads one response.
    pub fn raw(&self, bytes: &[u8]) -> Response {
        let mut conn = self.connect();
        conn.write_all(bytes).expect("send request");
        read_response(&mut BufReader::new(conn)).expect("read response")
    }

    fn connect(&self) -> TcpStream {
        let conn = TcpStream::connect(self.addr).expect("connect to nginx");
        conn.set_read_timeout(Some(PATIENCE)).unwrap();
        conn
    }

    fn get(&self, path: &str) -> Response {
        self.raw(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.addr
            )
            .as_bytes(),
        )
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop(&mut child);
        }
        if std::thread::panicking() {
            eprintln!("--- nginx error log ---\n{}", self.log());
        }
    }
}

/// Stops nginx with SIGTERM, so that the master stops its workers: they outlive a master
/// killed with SIGKILL.
fn stop(master: &mut Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(master.id().to_string())
        .status();
    // nginx writes to files, not pipes, so its exit is seen by asking for it; within a bound.
    let deadline = Instant::now() + Duration::from_secs(10);
    while matches!(master.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = master.kill();
    let _ = master.wait();
}

/// The nginx binary, or `None` (loudly) when it is missing outside CI.
fn nginx_binary() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("nginx"))
        .find(|p| p.is_file());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("nginx is not installed: CI must install the `nginx` package (.ci/run)");
        }
        eprintln!(
            "\n*** SKIPPED: nginx is not installed; install the `nginx` package to run the \
             reverse-proxy tests (tests/it/nginx.rs) ***\n"
        );
    }
    found
}

/// The shipped server block with the test's port, upstream and log directory, wrapped in a
/// minimal `nginx.conf`.
fn write_config(conf: &str, dir: &Path, listen: SocketAddr, upstreams: &[SocketAddr]) {
    let shipped = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(conf))
        .unwrap_or_else(|e| panic!("read {conf}: {e}"));
    let mut upstream = upstreams.iter();
    let logs = format!("{}/", dir.display());
    let mut substituted = [0; 4];
    let mut out = String::new();
    for line in shipped.lines() {
        let code = line.trim();
        let line = if code.starts_with('#') {
            line.to_owned()
        } else if code == "listen 80;" {
            substituted[0] += 1;
            format!("    listen {listen};")
        } else if code == "listen [::]:80;" {
            // Not every CI machine has IPv6.
            substituted[1] += 1;
            continue;
        } else if let Some(rest) = code.strip_prefix("server 127.0.0.1:") {
            // The address is replaced; what follows it (max_fails=...) is kept.
            substituted[2] += 1;
            let options = rest.split_once(' ').map_or(";", |(_, o)| o);
            let to = upstream
                .next()
                .expect("fewer upstreams than the conf has servers");
            format!("    server {to} {options}")
        } else if line.contains("/var/log/nginx/") {
            substituted[3] += 1;
            line.replace("/var/log/nginx/", &logs)
        } else {
            line.to_owned()
        };
        out.push_str(&line);
        out.push('\n');
    }
    assert_eq!(
        substituted,
        [2, 2, upstreams.len(), 4],
        "{conf} changed shape: expected two server blocks (inspector and capture host) with one \
         `listen 80;`, one `listen [::]:80;` and two /var/log/nginx/ paths each, and one \
         `server 127.0.0.1:...` line per upstream, outside comments"
    );
    std::fs::write(dir.join("hookbin.conf"), out).unwrap();
    let d = dir.display();
    let main = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n\
         \x20   client_body_temp_path {d}/client_body_temp;\n\
         \x20   proxy_temp_path {d}/proxy_temp;\n\
         \x20   fastcgi_temp_path {d}/fastcgi_temp;\n\
         \x20   uwsgi_temp_path {d}/uwsgi_temp;\n\
         \x20   scgi_temp_path {d}/scgi_temp;\n\
         \x20   access_log {d}/access.log;\n\
         \x20   include {d}/hookbin.conf;\n\
         }}\n"
    );
    std::fs::write(dir.join("nginx.conf"), main).unwrap();
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn random() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// `[name, value]` pairs of a stored request.
fn headers_of(stored: &Value) -> Vec<(String, String)> {
    stored["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap().into(), h[1].as_str().unwrap().into()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The headers the shipped config makes nginx put first, for a client at 127.0.0.1.
fn added_by_nginx(host: &str, forwarded_for: &str) -> Vec<(String, String)> {
    pairs(&[
        ("Host", host),
        ("X-Real-IP", "127.0.0.1"),
        ("X-Forwarded-For", forwarded_for),
        ("X-Forwarded-Proto", "http"),
        ("X-Forwarded-Host", host),
    ])
}

fn start() -> Option<(Server, Nginx)> {
    start_with(&[])
}

fn start_with(args: &[&str]) -> Option<(Server, Nginx)> {
    let s = Server::start(&[&["--trust-proxy"], args].concat());
    let nginx = Nginx::start(&s)?;
    Some((s, nginx))
}

/// The two hosts of the shipped config.
const INSPECTOR_HOST: &str = "webhook.example.com";
const CAPTURE_HOST: &str = "in.webhook.example.com";

/// A numeric setting of the shipped config: the first line starting with `prefix`, its first
/// number.
fn conf_number(prefix: &str) -> usize {
    let conf = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(CONF)).unwrap();
    let line = conf
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("{prefix} is set in {CONF}"));
    line.split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn nginx_passes_captures_byte_exact_with_the_client_address() {
    let Some((s, nginx)) = start() else { return };
    let bin = s.create_bin();
    let host = nginx.addr.to_string();
    let mut body: Vec<u8> = (0..=255u8).collect();
    body.extend_from_slice(b"\r\n\r\n\xff\x00 {\"a\": 1}\n");
    // An odd path and query that a normalising proxy would change, duplicate headers, names
    // nginx drops by default (underscore, dot), a non-UTF-8 value, and forged proxy headers.
    let path = format!("/r/{bin}/a//b/%2F/../c?x=%20&y=a+b&z=%2F");
    let mut raw = format!(
        "PUT {path} HTTP/1.1\r\nHost: {host}\r\nX-Dup: first\r\nX_Signature: t=1,v1=abc\r\n\
         content-TYPE: application/octet-stream\r\nX-Forwarded-For: 6.6.6.6\r\n\
         X-Real-IP: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nx-dup: second\r\nX.Dotted: d\r\n\
         Keep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: h2c\r\nX-Empty:\r\n"
    )
    .into_bytes();
    raw.extend_from_slice(b"X-Latin1: caf\xe9\r\n");
    raw.extend_from_slice(
        format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    raw.extend_from_slice(&body);
    let res = nginx.raw(&raw);
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.text(), "ok");
    let stored = s.stored(&bin, res.header("x-request-id").unwrap());
    assert_eq!(b64(stored["body_base64"].as_str().unwrap()), body);
    assert_eq!(stored["method"], "PUT");
    assert_eq!(stored["path"], format!("/r/{bin}/a//b/%2F/../c"));
    assert_eq!(stored["subpath"], "/a//b/%2F/../c");
    assert_eq!(stored["query"], "x=%20&y=a+b&z=%2F");
    // The address nginx saw, not the one the client wrote.
    assert_eq!(stored["remote_addr"], "127.0.0.1");
    // nginx puts its own headers first (replacing the client's X-Real-IP and
    // X-Forwarded-Proto, appending to its X-Forwarded-For) and drops the hop-by-hop
    // `Connection`, `Keep-Alive`, `TE` and `Upgrade`; every other header follows in the
    // client's order, with its case, duplicates and bytes.
    let mut expected = added_by_nginx(&host, "6.6.6.6, 127.0.0.1");
    expected.extend(pairs(&[
        ("Content-Length", &body.len().to_string()),
        ("X-Dup", "first"),
        ("X_Signature", "t=1,v1=abc"),
        ("content-TYPE", "application/octet-stream"),
        ("x-dup", "second"),
        ("X.Dotted", "d"),
        ("X-Empty", ""),
        ("X-Latin1", "caf\u{fffd}"),
    ]));
    assert_eq!(headers_of(&stored), expected);

    // A chunked body (sent in pieces) arrives de-chunked and byte-exact; nginx reads it whole
    // first (proxy_request_buffering on), so hookbin sees a Content-Length, not chunked framing.
    // `Expect: 100-continue` is answered by nginx and not passed on.
    let mut conn = nginx.connect();
    conn.write_all(
        format!(
            "POST /r/{bin}/chunked HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\
             Expect: 100-continue\r\nX-After: 1\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    assert_eq!(read_head(&mut reader).unwrap().status, 100);
    // Two writes, two segments (no Nagle); how nginx's reads split them does not matter here.
    conn.set_nodelay(true).unwrap();
    conn.write_all(b"5;ext=1\r\n\x00\x01\r\n\xff\r\n").unwrap();
    conn.write_all(b"3\r\nend\r\n0\r\nX-Trailer: t\r\n\r\n")
        .unwrap();
    let res = read_response(&mut reader).unwrap();
    assert_eq!(res.status, 200, "{}", res.text());
    let stored = s.stored(&bin, res.header("x-request-id").unwrap());
    assert_eq!(
        b64(stored["body_base64"].as_str().unwrap()),
        b"\x00\x01\r\n\xffend"
    );
    let mut expected = added_by_nginx(&host, "127.0.0.1");
    expected.extend(pairs(&[("Content-Length", "8"), ("X-After", "1")]));
    assert_eq!(headers_of(&stored), expected);

    // nginx keeps connections to hookbin open: requests that follow one another on a reused
    // upstream connection are each recorded with their own headers.
    for i in 0..5 {
        let res = nginx.raw(
            format!(
                "POST /r/{bin}/k{i} HTTP/1.1\r\nHost: {host}\r\nX-N: {i}\r\n\
                 Content-Length: 1\r\nConnection: close\r\n\r\n{i}"
            )
            .as_bytes(),
        );
        let stored = s.stored(&bin, res.header("x-request-id").unwrap());
        assert_eq!(stored["subpath"], format!("/k{i}"));
        assert_eq!(headers_of(&stored)[6], ("X-N".into(), i.to_string()));
        assert_eq!(stored["body_text"], i.to_string());
    }
}

#[test]
fn nginx_bin_urls_use_the_forwarded_host_and_scheme() {
    let Some((s, nginx)) = start() else { return };
    // The Host exactly as the client wrote it (case and port), never a client's forged scheme.
    let host = format!("WebHook.Example.test:{}", nginx.addr.port());
    let res = nginx.raw(
        format!(
            "POST /api/bins HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-Proto: https\r\n\
             X-Forwarded-Host: evil.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let bin = res.json();
    let id = bin["id"].as_str().unwrap();
    assert_eq!(bin["url"], format!("http://{host}/r/{id}"));
    assert_eq!(bin["inspect_url"], format!("http://{host}/bins/{id}"));
    // Straight to hookbin (no nginx), the same forged headers are believed: that is what
    // --trust-proxy means, and why hookbin must listen on loopback behind nginx.
    let direct = s.raw(
        b"POST /api/bins HTTP/1.1\r\nHost: h\r\nX-Forwarded-Proto: https\r\n\
          X-Forwarded-Host: hooks.example\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(
        direct.json()["url"]
            .as_str()
            .unwrap()
            .starts_with("https://hooks.example/r/")
    );
}

#[test]
fn nginx_streams_events_without_buffering() {
    let Some((s, nginx)) = start() else { return };
    let bin = s.create_bin();
    let mut conn = nginx.connect();
    // As the bin page opens it (with a query: the location must still match), and failing
    // fast: an event held in nginx's buffer would only arrive when the stream closes.
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    conn.write_all(
        format!(
            "GET /api/bins/{bin}/stream?last_event_id=0 HTTP/1.1\r\nHost: {}\r\n\
             Accept: text/event-stream\r\n\r\n",
            nginx.addr
        )
        .as_bytes(),
    )
    .unwrap();
    let mut stream = BufReader::new(conn);
    let head = read_head(&mut stream).unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    for i in 0..3 {
        let started = Instant::now();
        let res = nginx.raw(
            format!(
                "POST /r/{bin}/e{i} HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\n\
                 Connection: close\r\n\r\nhi",
                nginx.addr
            )
            .as_bytes(),
        );
        let id = res.header("x-request-id").unwrap().to_owned();
        let data = next_event(&mut stream);
        assert_eq!(data["id"], id.as_str());
        assert_eq!(data["subpath"], format!("/e{i}"));
        assert_eq!(data["remote_addr"], "127.0.0.1");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "event {i} took {:?} through nginx",
            started.elapsed()
        );
    }
}

/// The data of the next `request` event (chunk-size lines and comments are skipped).
fn next_event(stream: &mut impl BufRead) -> Value {
    let mut event = None;
    loop {
        let mut line = String::new();
        stream
            .read_line(&mut line)
            .expect("an event before the read timeout: is nginx buffering the stream?");
        let line = line.trim_end();
        if let Some(v) = line.strip_prefix("event: ") {
            event = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("data: ") {
            assert_eq!(event.as_deref(), Some("request"));
            return serde_json::from_str(v).unwrap();
        }
    }
}

/// `client_max_body_size` of the shipped config, in bytes.
fn nginx_body_limit() -> usize {
    let conf = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(CONF)).unwrap();
    let value = conf
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("client_max_body_size "))
        .expect("client_max_body_size is set")
        .trim_end_matches(';');
    let mib: usize = value
        .strip_suffix('m')
        .expect("a size in m")
        .parse()
        .unwrap();
    mib * 1024 * 1024
}

#[test]
fn nginx_lets_hookbin_answer_oversized_bodies_up_to_its_own_limit() {
    let Some((s, nginx)) = start() else { return };
    let bin = s.create_bin();
    let limit = nginx_body_limit();
    assert!(
        limit > MAX_BODY,
        "nginx must let oversized bodies reach hookbin"
    );
    let host = nginx.addr;
    // Just over hookbin's limit, and exactly nginx's: hookbin records the first 5 MiB and
    // answers its own JSON 413 (API.md).
    for size in [MAX_BODY + 1, limit] {
        let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut raw = format!(
            "POST /r/{bin}/big HTTP/1.1\r\nHost: {host}\r\nContent-Length: {size}\r\n\
             Connection: close\r\n\r\n"
        )
        .into_bytes();
        raw.extend_from_slice(&body);
        let res = nginx.raw(&raw);
        res.assert_error(413, "body_too_large");
        let stored = s.stored(&bin, res.header("x-request-id").expect("recorded"));
        assert_eq!(stored["body_truncated"], true);
        assert_eq!(stored["body_size"], size);
        assert!(b64(stored["body_base64"].as_str().unwrap()) == body[..MAX_BODY]);
    }
    // Over nginx's limit: nginx answers its own 413 page at once, and nothing is recorded.
    let res = nginx.raw(
        format!(
            "POST /r/{bin}/huge HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            limit + 1
        )
        .as_bytes(),
    );
    assert_eq!(res.status, 413);
    assert_eq!(res.header("x-request-id"), None);
    assert!(res.header("content-type").unwrap().starts_with("text/html"));
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        2
    );
}

#[test]
fn nginx_header_limits_match_hookbin() {
    let Some((s, nginx)) = start() else { return };
    let bin = s.create_bin();
    let host = nginx.addr;
    // A 60 KB header line passes nginx (64k buffers) and hookbin (64 KiB heads).
    let big = "v".repeat(60_000);
    let res = nginx.raw(
        format!(
            "POST /r/{bin} HTTP/1.1\r\nHost: {host}\r\nX-Big: {big}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(res.status, 200, "{}", res.text());
    let stored = s.stored(&bin, res.header("x-request-id").unwrap());
    assert!(headers_of(&stored).contains(&("X-Big".into(), big)));
    // A single line over 64 KiB: nginx's 400. Lines that fit but add up to a head over 64 KiB:
    // hookbin's 431. Neither is recorded.
    let line = "v".repeat(70_000);
    let half = "v".repeat(40_000);
    for (headers, status) in [
        (format!("X-Big: {line}\r\n"), 400),
        (format!("X-Big: {half}\r\nX-Big-Too: {half}\r\n"), 431),
    ] {
        let res = nginx.raw(
            format!(
                "POST /r/{bin} HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: 0\r\n\
                 Connection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        assert_eq!(res.status, status);
    }
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn nginx_serves_healthz_and_metrics_from_loopback() {
    let Some((s, nginx)) = start() else { return };
    let res = nginx.get("/healthz");
    assert_eq!((res.status, res.text().as_str()), (200, "ok"));
    let bin = s.create_bin();
    s.capture(&bin, b"x");
    let res = nginx.get("/metrics");
    assert_eq!(res.status, 200);
    assert!(res.text().contains("hookbin_requests_captured_total 1"));
}

#[test]
fn nginx_refuses_lowercase_methods_and_paths_above_the_root() {
    let Some((s, nginx)) = start() else { return };
    let bin = s.create_bin();
    let host = nginx.addr;
    for request_line in [
        format!("post /r/{bin}/lower HTTP/1.1"),
        format!("GET /r/{bin}/../../../etc/passwd HTTP/1.1"),
    ] {
        let res = nginx
            .raw(format!("{request_line}\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!(res.status, 400, "{request_line}");
    }
    // Uppercase non-standard methods and `..` that stays below the root pass as sent.
    let res = nginx.raw(
        format!("M-SEARCH /r/{bin}/x/../y HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(res.status, 200, "{}", res.text());
    let stored = s.stored(&bin, res.header("x-request-id").unwrap());
    assert_eq!(stored["method"], "M-SEARCH");
    assert_eq!(stored["subpath"], "/x/../y");
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn nginx_keepalive_and_open_streams_do_not_hold_up_sigterm() {
    let Some((mut s, nginx)) = start() else {
        return;
    };
    let bin = s.create_bin();
    // Idle keep-alive connections from nginx to hookbin, and an event stream open through it.
    for _ in 0..3 {
        let res = nginx.raw(
            format!(
                "POST /r/{bin} HTTP/1.1\r\nHost: {}\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx",
                nginx.addr
            )
            .as_bytes(),
        );
        assert_eq!(res.status, 200);
    }
    let mut stream = nginx.connect();
    stream
        .write_all(
            format!(
                "GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: {}\r\n\r\n",
                nginx.addr
            )
            .as_bytes(),
        )
        .unwrap();
    let mut stream = BufReader::new(stream);
    assert_eq!(read_head(&mut stream).unwrap().status, 200);
    let started = Instant::now();
    s.send_signal("TERM");
    assert!(s.wait_exit().success());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "SIGTERM took {:?} with nginx connected",
        started.elapsed()
    );
}

/// One request to nginx with the given `Host`.
fn via(nginx: &Nginx, method: &str, path: &str, host: &str, body: &[u8]) -> Response {
    let mut raw = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    nginx.raw(&raw)
}

#[test]
fn nginx_serves_captures_and_the_inspector_on_their_own_hosts() {
    let Some((s, nginx)) = start_with(&["--capture-url", &format!("http://{CAPTURE_HOST}")]) else {
        return;
    };
    // nginx picks the server block by Host; the port the test listens on is left out of it, so
    // X-Forwarded-Host is exactly the capture URL's host.
    let created = via(&nginx, "POST", "/api/bins", INSPECTOR_HOST, b"");
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    let bin = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["url"], format!("http://{CAPTURE_HOST}/r/{bin}"));
    assert_eq!(
        created["inspect_url"],
        format!("http://{INSPECTOR_HOST}/bins/{bin}")
    );

    let res = via(
        &nginx,
        "POST",
        &format!("/r/{bin}/hook"),
        CAPTURE_HOST,
        b"hi",
    );
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.header("content-security-policy"), Some("sandbox"));
    let stored = s.stored(&bin, res.header("x-request-id").unwrap());
    assert_eq!(stored["body_text"], "hi");
    // The inspector's host does not capture; the capture host serves nothing else.
    via(
        &nginx,
        "POST",
        &format!("/r/{bin}/hook"),
        INSPECTOR_HOST,
        b"hi",
    )
    .assert_error(421, "wrong_host");
    for path in ["/", "/api/bins", &format!("/bins/{bin}"), "/metrics"] {
        let res = via(&nginx, "GET", path, CAPTURE_HOST, b"");
        assert_eq!(res.status, 404, "{path}: {}", res.text());
    }
    assert_eq!(
        via(&nginx, "GET", "/healthz", CAPTURE_HOST, b"").status,
        200
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn nginx_limits_requests_per_client_and_keeps_uris_out_of_its_error_log() {
    let Some((s, nginx)) = start_with(&["--max-streams-per-client", "0"]) else {
        return;
    };
    let bin = s.create_bin();
    let host = nginx.addr;

    // limit_conn: one address holds that many event streams, and no more.
    let conns = conf_number("limit_conn hookbin_conn ");
    let open = |conn: &mut TcpStream| {
        conn.write_all(
            format!("GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes(),
        )
        .unwrap();
        read_head(&mut BufReader::new(conn.try_clone().unwrap())).unwrap()
    };
    let mut streams = Vec::new();
    for i in 0..conns {
        let mut conn = nginx.connect();
        assert_eq!(open(&mut conn).status, 200, "stream {i}");
        streams.push(conn);
    }
    let mut extra = nginx.connect();
    let refused = open(&mut extra);
    assert_eq!(refused.status, 429, "stream {} of one address", conns + 1);
    assert!(
        refused
            .header("content-type")
            .unwrap()
            .starts_with("text/html"),
        "refused by nginx, not hookbin"
    );
    drop(streams);

    // limit_req: a burst, then the rate. Sent one after another, as fast as they go.
    let burst = conf_number("limit_req zone=hookbin_req burst=");
    let mut statuses = Vec::new();
    for _ in 0..burst + 100 {
        let status = nginx.get("/healthz").status;
        statuses.push(status);
        if status == 429 {
            break;
        }
    }
    assert_eq!(
        statuses.last(),
        Some(&429),
        "no 429 after {} requests",
        statuses.len()
    );
    // The streams above were requests too.
    let sent = conns + 1 + statuses.len();
    assert!(sent > burst, "429 after only {sent} requests");

    // Request errors leave no request line in the logs: a body over client_max_body_size,
    // and the refusals above.
    let too_big = nginx.raw(
        format!(
            "POST /r/{bin}/secret-path?token=t0ps3cret HTTP/1.1\r\nHost: {host}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            nginx_body_limit() + 1
        )
        .as_bytes(),
    );
    assert!(matches!(too_big.status, 413 | 429), "{}", too_big.status);
    let dir = nginx.dir.path();
    for log in ["hookbin.error.log", "hookbin-in.error.log", "error.log"] {
        let text = std::fs::read_to_string(dir.join(log)).unwrap_or_default();
        assert!(
            !text.contains(&bin) && !text.contains("t0ps3cret"),
            "{log} names the request:\n{text}"
        );
    }
}
