//! `hookbin forward`: the real binary follows a real server and replays to a raw receiver that
//! records exact bytes.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;

use crate::replay_support::{
    Captured, Framing, RawRequest, Receiver, exact_headers, framed, raw_request, replayed_headers,
    show_headers,
};
use crate::util::{Hangup, Log, Server, b64, closed_port, wait_exit};

/// A running `hookbin forward`. Killed on drop; its output is printed if the test panicked.
struct Forward {
    child: Option<Child>,
    stdout: Log,
    stderr: Log,
}

impl Forward {
    /// Starts it and waits until it follows the bin.
    fn start(bin_url: &str, to: &str, extra: &[&str]) -> Forward {
        let mut f = Forward::spawn(bin_url, to, extra);
        f.wait_for_stderr("following");
        f
    }

    fn spawn(bin_url: &str, to: &str, extra: &[&str]) -> Forward {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookbin"))
            .args(["forward", bin_url, "--to", to])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hookbin forward");
        let (stdout, stderr) = (Log::default(), Log::default());
        stdout.follow(child.stdout.take().unwrap());
        stderr.follow(child.stderr.take().unwrap());
        Forward {
            child: Some(child),
            stdout,
            stderr,
        }
    }

    fn stdout_lines(&self) -> Vec<String> {
        self.stdout.text().lines().map(str::to_owned).collect()
    }

    fn stderr(&self) -> String {
        self.stderr.text()
    }

    fn wait_for_stderr(&mut self, needle: &str) {
        if let Err(e) = self.stderr.wait_until(|text| text.contains(needle)) {
            panic!("waiting for {needle:?}: {e}\n{}", self.output());
        }
    }

    fn wait_for_lines(&mut self, n: usize) {
        if let Err(e) = self.stdout.wait_until(|text| text.lines().count() >= n) {
            panic!("waiting for {n} output lines: {e}\n{}", self.output());
        }
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id();
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    /// Waits for it to exit; its output is complete then.
    fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        wait_exit(&mut child, &[&self.stdout, &self.stderr])
    }

    fn output(&self) -> String {
        format!(
            "--- forward stdout ---\n{}--- forward stderr ---\n{}",
            self.stdout.text(),
            self.stderr()
        )
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("{}", self.output());
        }
    }
}

/// Runs `hookbin forward` to completion (for `--once` and failures).
fn forward_output(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookbin"))
        .arg("forward")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run hookbin forward")
}

/// Checks what the receiver got against the capture `a` (its Request JSON): same method,
/// `{prefix}{subpath}?{query}`, version, header lines (minus hop-by-hop ones and the original
/// Host/Content-Length), body; plus exactly one `Host` for the target and a `Content-Length`
/// exactly when the original carried a body.
fn check_forwarded(a: &Value, got: &Captured, prefix: &str, authority: &str) -> Result<(), String> {
    let eq = |what: &str, expected: &[u8], received: &[u8]| {
        if expected == received {
            Ok(())
        } else {
            Err(format!(
                "{what}: expected {:?}, received {:?}",
                String::from_utf8_lossy(expected),
                String::from_utf8_lossy(received)
            ))
        }
    };
    eq(
        "method",
        a["method"].as_str().unwrap().as_bytes(),
        &got.method,
    )?;
    let mut target = format!("{prefix}{}", a["subpath"].as_str().unwrap());
    if target.is_empty() {
        target.push('/');
    }
    let query = a["query"].as_str().unwrap();
    if !query.is_empty() {
        target = format!("{target}?{query}");
    }
    eq("request target", target.as_bytes(), &got.target)?;
    eq(
        "version",
        a["http_version"].as_str().unwrap().as_bytes(),
        &got.version,
    )?;
    let body = b64(a["body_base64"].as_str().unwrap());
    eq("body", &body, &got.body)?;

    let original = exact_headers(a);
    let expected = replayed_headers(&original);
    let is = |n: &str, name: &str| n.eq_ignore_ascii_case(name);
    let rest: Vec<(String, Vec<u8>)> = got
        .headers
        .iter()
        .filter(|(n, _)| !is(n, "host") && !is(n, "content-length"))
        .cloned()
        .collect();
    if rest != expected {
        return Err(format!(
            "headers differ\noriginal: {}\nreceived: {}",
            show_headers(&original),
            show_headers(&got.headers)
        ));
    }
    let hosts: Vec<&Vec<u8>> = got
        .headers
        .iter()
        .filter(|(n, _)| is(n, "host"))
        .map(|(_, v)| v)
        .collect();
    if hosts != [&authority.as_bytes().to_vec()] {
        return Err(format!("Host: {}", show_headers(&got.headers)));
    }
    let lengths: Vec<&Vec<u8>> = got
        .headers
        .iter()
        .filter(|(n, _)| is(n, "content-length"))
        .map(|(_, v)| v)
        .collect();
    let want: Vec<Vec<u8>> = if framed(&original, &body) {
        vec![body.len().to_string().into_bytes()]
    } else {
        vec![]
    };
    if lengths.into_iter().cloned().collect::<Vec<_>>() != want {
        return Err(format!("Content-Length: {}", show_headers(&got.headers)));
    }
    Ok(())
}

/// A few hand-picked requests covering what generators reach only by chance.
fn examples() -> Vec<RawRequest> {
    let h = |n: &str, v: &[u8]| (n.to_owned(), v.to_vec());
    let req =
        |method: &str, subpath: &str, query: &str, headers, body: &[u8], framing| RawRequest {
            method: method.into(),
            subpath: subpath.into(),
            query: query.into(),
            headers,
            body: body.to_vec(),
            framing,
            framing_at: 1,
            http_10: false,
        };
    let mut old = req(
        "POST",
        "/old",
        "",
        vec![h("X-A", b"1")],
        b"hi",
        Framing::ContentLength,
    );
    old.http_10 = true;
    vec![
        req(
            "POST",
            "/stripe",
            "x=1&y=%2F",
            vec![
                h("Host", b"hooks.example"),
                h("User-Agent", b"Stripe/1.0"),
                h("Content-Type", b"application/json; charset=utf-8"),
                h("Stripe-Signature", b"t=1492774577,v1=5257a869e7"),
                h("X-Dup", b"1"),
                h("x-dup", b"2"),
                h("X-Obs", b"caf\xe9 \x80\xff"),
                h("X-Empty", b""),
                h("Connection", b"keep-alive"),
                h("Keep-Alive", b"timeout=5"),
                h("X-Quote", b"'; touch pwned; ' $(id) `id` \\"),
            ],
            br#"{"id":"evt_1"}"#,
            Framing::ContentLength,
        ),
        req(
            "PATCH",
            "",
            "",
            vec![h("TE", b"trailers")],
            b"\x00\r\n\xff binary",
            Framing::Chunked(3),
        ),
        req("POST", "/empty", "", vec![], b"", Framing::ContentLength),
        req(
            "GET",
            "/",
            "q=%E2%9C%93&a=1&a=2",
            vec![],
            b"",
            Framing::None,
        ),
        req("HEAD", "/head", "", vec![], b"", Framing::None),
        req(
            "PROPFIND",
            "/dav",
            "",
            vec![h("Depth", b"1")],
            b"",
            Framing::None,
        ),
        old,
    ]
}

#[test]
fn forward_replays_each_new_request_once_in_order_byte_exact() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    // Captured before forward starts: never replayed.
    s.capture(&bin, b"old");
    let receiver = Receiver::start();
    let mut forward = Forward::start(&s.url(&format!("/r/{bin}")), &receiver.url("/base"), &[]);
    let sent: Vec<String> = examples().iter().map(|r| r.send(&s, &bin)).collect();
    for id in &sent {
        let got = receiver.next();
        let a = s.stored(&bin, id);
        check_forwarded(&a, &got, "/base", &receiver.addr.to_string())
            .unwrap_or_else(|e| panic!("request {id}: {e}"));
    }
    receiver.assert_quiet(Duration::from_millis(500));
    forward.wait_for_lines(sent.len());
    let lines = forward.stdout_lines();
    assert_eq!(lines.len(), sent.len(), "{lines:#?}");
    // `2026-11-29T20:01:02.123Z  POST /base/stripe?x=1&y=%2F  -> 200  3 ms`
    let first = &lines[0];
    assert!(
        first.contains("Z  POST /base/stripe?x=1&y=%2F  -> 200  "),
        "{first}"
    );
    assert!(first.ends_with(" ms"), "{first}");
    assert!(lines.iter().all(|l| l.contains("  -> 200  ")), "{lines:#?}");
}

/// Property: generated requests (any method, reserved characters, quotes, `$`, backticks, `\`
/// and obs-text in headers, NUL/CR/invalid UTF-8 bodies, chunked, HTTP/1.0) arrive at the local
/// server exactly once, in order, byte-exact. `PROPTEST_CASES` raises the default 64.
#[test]
fn forwarded_requests_arrive_byte_exact_property() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let receiver = Receiver::start();
    let _forward = Forward::start(&s.url(&format!("/r/{bin}")), &receiver.url("/base"), &[]);
    let authority = receiver.addr.to_string();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&raw_request(), |raw| {
        let id = raw.send(&s, &bin);
        let a = s.stored(&bin, &id);
        let got = receiver.next();
        check_forwarded(&a, &got, "/base", &authority).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    receiver.assert_quiet(Duration::from_millis(200));
    eprintln!("forward property: {cases} cases passed");
}

/// Many requests in a burst (the server holds them back while one is replayed) all arrive,
/// once each, in capture order.
#[test]
fn forward_keeps_order_under_a_burst() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let receiver = Receiver::start();
    let _forward = Forward::start(&s.url(&format!("/r/{bin}/")), &receiver.url(""), &[]);
    let n = 150;
    let handles: Vec<_> = (0..3)
        .map(|t| {
            let addr = s.addr;
            let bin = bin.clone();
            std::thread::spawn(move || {
                for i in 0..n / 3 {
                    let body = format!("{t}-{i}");
                    let raw = format!(
                        "POST /r/{bin}/burst HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let mut c = TcpStream::connect(addr).unwrap();
                    std::io::Write::write_all(&mut c, raw.as_bytes()).unwrap();
                    let mut out = String::new();
                    c.read_to_string(&mut out).unwrap();
                    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // The bin's own order (ids) is the order the receiver must see.
    let mut expected: Vec<Vec<u8>> = s
        .list_all(&bin, 500)
        .iter()
        .map(|summary| {
            b64(
                s.stored(&bin, summary["id"].as_str().unwrap())["body_base64"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    expected.reverse();
    let got: Vec<Vec<u8>> = (0..n).map(|_| receiver.next().body).collect();
    assert_eq!(got, expected);
    receiver.assert_quiet(Duration::from_millis(300));
}

/// A TCP proxy in front of a server (or a local handler) that can cut every connection and
/// turn new ones away (accepted, then closed at once), and be pointed at another upstream: so a
/// stream drops while captures go on directly, and a restarted server needs no fixed port.
struct Proxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    upstream: Arc<Mutex<SocketAddr>>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let upstream = Arc::new(Mutex::new(upstream));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (up2, upstream2, open2) = (up.clone(), upstream.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if !up2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let to = *upstream2.lock().unwrap();
                let Ok(server) = TcpStream::connect(to) else {
                    continue;
                };
                let mut open = open2.lock().unwrap();
                open.push(client.try_clone().unwrap());
                open.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            addr,
            up,
            upstream,
            open,
        }
    }

    /// New connections go to `upstream` from now on.
    fn point_at(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    /// Closes every proxied connection and refuses new ones until [`Proxy::restore`].
    fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for conn in self.open.lock().unwrap().drain(..) {
            let _ = conn.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[test]
fn forward_resumes_after_the_stream_drops_without_loss_or_duplicates() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let proxy = Proxy::start(s.addr);
    let receiver = Receiver::start();
    let mut forward = Forward::start(
        &format!("http://{}/r/{bin}", proxy.addr),
        &receiver.url("/in"),
        &[],
    );
    let mut expected = Vec::new();
    for i in 0..3 {
        let body = format!("before-{i}");
        s.capture(&bin, body.as_bytes());
        expected.push(body);
    }
    for body in &expected {
        assert_eq!(receiver.next().body, body.as_bytes());
    }
    proxy.cut();
    // Captured while forward cannot reach the server; it keeps retrying meanwhile.
    let mut missed = Vec::new();
    for i in 0..5 {
        let body = format!("during-{i}");
        s.capture(&bin, body.as_bytes());
        missed.push(body);
    }
    forward.wait_for_stderr("retrying");
    proxy.restore();
    for body in &missed {
        assert_eq!(receiver.next().body, body.as_bytes());
    }
    s.capture(&bin, b"after");
    assert_eq!(receiver.next().body, b"after");
    receiver.assert_quiet(Duration::from_millis(500));
    forward.wait_for_stderr("reconnected");
    forward.wait_for_lines(9);
}

#[test]
fn forward_resumes_after_the_server_restarts_on_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hookbin.db");
    let mut s = Server::start_on(&db, &[]);
    let bin = s.create_bin();
    // Forward reaches the server through a proxy, so the restarted server can take any free
    // port: the old one may be someone else's by then.
    let proxy = Proxy::start(s.addr);
    let receiver = Receiver::start();
    let mut forward = Forward::start(
        &format!("http://{}/r/{bin}", proxy.addr),
        &receiver.url(""),
        &[],
    );
    s.capture(&bin, b"one");
    assert_eq!(receiver.next().body, b"one");

    s.signal("KILL");
    let s = Server::start_on(&db, &[]);
    proxy.point_at(s.addr);
    // Right after the restart, before forward's backoff lets it reconnect (or not: either way
    // each arrives exactly once).
    for body in ["two", "three", "four"] {
        s.capture(&bin, body.as_bytes());
    }
    for body in ["two", "three", "four"] {
        assert_eq!(receiver.next().body, body.as_bytes());
    }
    receiver.assert_quiet(Duration::from_millis(500));
    forward.wait_for_stderr("reconnected");
}

#[test]
fn a_private_bin_is_forwarded_through_its_view_link_and_the_token_is_never_printed() {
    let s = Server::start(&[]);
    let bin = s.create_bin_with(r#"{"private": true}"#);
    let id = bin["id"].as_str().unwrap();
    let view_url = bin["view_url"].as_str().unwrap();
    let token = bin["view_token"].as_str().unwrap();
    let receiver = Receiver::start();
    s.capture(id, b"private body");
    // The capture URL alone cannot read the bin: like an unknown bin.
    let capture_url = s.url(&format!("/r/{id}"));
    let out = forward_output(&[&capture_url, "--to", &receiver.url("/x"), "--once"]);
    assert_eq!(out.status.code(), Some(1));
    let out = forward_output(&[view_url, "--to", &receiver.url("/x"), "--once"]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert_eq!(receiver.next().body, b"private body");
    assert!(!printed.contains(token), "{printed}");
}

#[test]
fn once_replays_the_latest_request_and_exits() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let url = s.url(&format!("/r/{bin}"));
    let receiver = Receiver::start();

    let out = forward_output(&[&url, "--to", &receiver.url("/x"), "--once"]);
    assert_eq!(out.status.code(), Some(1), "empty bin");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no requests yet"));

    s.capture(&bin, b"first");
    let latest = s.capture(&bin, b"second");
    let out = forward_output(&[&url, "--to", &receiver.url("/x"), "--once"]);
    assert!(out.status.success(), "{out:?}");
    let got = receiver.next();
    check_forwarded(
        &s.stored(&bin, &latest),
        &got,
        "/x",
        &receiver.addr.to_string(),
    )
    .unwrap();
    receiver.assert_quiet(Duration::from_millis(300));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("  POST /x  -> 200  "), "{stdout}");
}

#[test]
fn unknown_bins_and_bad_urls_fail_clearly() {
    let s = Server::start(&[]);
    // Never replayed to: any address that answers nothing will do.
    let nowhere = Hangup::start();
    let to = nowhere.url("/");
    let gone = forward_output(&[&s.url("/r/0000000000000000000a"), "--to", &to]);
    assert_eq!(gone.status.code(), Some(1));
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(err.contains("no such bin"), "{err}");

    let bin = s.create_bin();
    let url = s.url(&format!("/r/{bin}"));
    for (args, needle) in [
        (vec![url.as_str(), "--to", "localhost:3000"], "invalid --to"),
        (vec![url.as_str(), "--to", "ftp://h/"], "invalid --to"),
        (
            vec![url.as_str(), "--to", "https://localhost/"],
            "invalid --to",
        ),
        (
            vec!["http://h/nothing", "--to", to.as_str()],
            "invalid BIN_URL",
        ),
    ] {
        let out = forward_output(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }

    // A "server" that hangs up on every connection.
    let unreachable = forward_output(&[&nowhere.url("/r/0000000000000000000a"), "--to", &to]);
    assert_eq!(unreachable.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unreachable.stderr).contains("cannot reach"));

    // Deleting the bin while forward follows it ends forward.
    let mut forward = Forward::start(&url, &to, &[]);
    assert_eq!(s.delete(&format!("/api/bins/{bin}")).status, 204);
    assert_eq!(forward.wait_exit().code(), Some(1));
    assert!(
        forward.stderr().contains("no such bin"),
        "{}",
        forward.stderr()
    );
}

#[test]
fn local_errors_are_reported_and_forwarding_goes_on() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    // The local handler sits behind a proxy that first turns every connection away.
    let receiver = Receiver::start_on("127.0.0.1:0".parse().unwrap(), 503).unwrap();
    let local = Proxy::start(receiver.addr);
    local.cut();
    let mut forward = Forward::start(
        &s.url(&format!("/r/{bin}")),
        &format!("http://{}/hook", local.addr),
        &[],
    );
    s.capture(&bin, b"lost");
    forward.wait_for_lines(1);
    let line = &forward.stdout_lines()[0];
    // Reset or closed, depending on whether the request was in the socket when it closed.
    assert!(line.contains("POST /hook  -> error: "), "{line}");

    // The handler comes back and gets the next one.
    local.restore();
    s.capture(&bin, b"kept");
    assert_eq!(receiver.next().body, b"kept");
    forward.wait_for_lines(2);
    assert!(forward.stdout_lines()[1].contains("  -> 503  "));
}

#[test]
fn a_local_server_that_is_down_is_a_cannot_connect_line_and_exit_1_with_once() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    s.capture(&bin, b"lost");
    let out = forward_output(&[
        &s.url(&format!("/r/{bin}")),
        "--to",
        &format!("http://{}/hook", closed_port()),
        "--once",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("POST /hook  -> error: cannot connect to 127.0.0.1:"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the replay failed"));
}

#[test]
fn ctrl_c_and_sigterm_stop_forward_cleanly() {
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let nowhere = Hangup::start();
    for sig in ["INT", "TERM"] {
        let mut forward = Forward::start(&s.url(&format!("/r/{bin}")), &nowhere.url("/"), &[]);
        forward.signal(sig);
        let status = forward.wait_exit();
        assert!(status.success(), "SIG{sig}: {status}");
        assert!(forward.stderr().contains("stopped"));
    }
}

/// Whether the `openssl` command is there to make a test certificate; fails under `CI=true`.
fn openssl_available() -> bool {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "openssl is not installed, and CI=true: the https forward test must run"
        );
        eprintln!(
            "\n!!!!! WARNING: openssl is not installed: the https forward test is SKIPPED !!!!!\n"
        );
    }
    ok
}

/// A self-signed certificate for `localhost` (key, cert) in `dir`.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (key, cert) = (dir.join("key.pem"), dir.join("cert.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (key, cert)
}

/// TLS in front of `upstream` (as nginx is in front of a public hookbin): its address.
fn tls_front(upstream: SocketAddr, key: &Path, cert: &Path) -> SocketAddr {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls::{ServerConfig, crypto};

    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let config = ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                });
            }
        });
    });
    addr
}

#[test]
fn forward_follows_an_https_bin() {
    if !openssl_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (key, cert) = self_signed(dir.path());
    let s = Server::start(&[]);
    let bin = s.create_bin();
    let front = tls_front(s.addr, &key, &cert);
    let url = format!("https://localhost:{}/r/{bin}", front.port());
    let receiver = Receiver::start();

    // Not trusted without --ca-cert: a clear error, exit 1.
    let out = forward_output(&[&url, "--to", &receiver.url("")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach") && err.contains("TLS"), "{err}");

    let cert_arg = cert.to_str().unwrap();
    let _forward = Forward::start(&url, &receiver.url(""), &["--ca-cert", cert_arg]);
    let id = s.capture(&bin, b"\x00over tls\xff");
    check_forwarded(
        &s.stored(&bin, &id),
        &receiver.next(),
        "",
        &receiver.addr.to_string(),
    )
    .unwrap();
}

#[test]
fn forward_usage_errors_name_the_missing_argument() {
    for (args, names) in [
        (vec!["forward"], vec!["--to <LOCAL_URL>", "<BIN_URL>"]),
        (
            vec!["forward", "http://127.0.0.1:9/r/x"],
            vec!["--to <LOCAL_URL>"],
        ),
        (
            vec!["forward", "--to", "http://127.0.0.1:9"],
            vec!["<BIN_URL>"],
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookbin"))
            .args(&args)
            .output()
            .expect("run hookbin");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        for name in names {
            assert!(err.contains(name), "{args:?} must name {name}: {err}");
        }
    }
}
