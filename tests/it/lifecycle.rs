//! The server as a process: flags, start-up failures, the reaper, restarts, concurrency, slow
//! clients.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::{PATIENCE, Server, b64};

fn hookbin(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookbin"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("run hookbin")
}

#[test]
fn bad_flag_values_exit_2_with_one_line_naming_the_flag() {
    for (args, flag) in [
        (&["--bin-ttl", "soon"][..], "--bin-ttl"),
        (&["--reap-interval", "0s"], "--reap-interval"),
        (&["--max-body-bytes", "lots"], "--max-body-bytes"),
        (&["--listen", "nowhere"], "--listen"),
        (&["--public-url", "ftp://x"], "--public-url"),
        (&["--capture-url", "https://in.h/prefix"], "--capture-url"),
        (&["--body-deadline", "0s"], "--body-deadline"),
        (&["--max-body-memory", "lots"], "--max-body-memory"),
        (
            &["--max-streams-per-client", "many"],
            "--max-streams-per-client",
        ),
        (
            &["--capture-url", "https://h", "--public-url", "https://h"],
            "--capture-url",
        ),
        (
            &["serve", "--max-requests-per-bin", "0"],
            "--max-requests-per-bin",
        ),
    ] {
        let out = hookbin(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

#[test]
fn help_describes_every_flag() {
    for args in [&["--help"][..], &["serve", "--help"]] {
        let out = hookbin(args);
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in [
            "--listen",
            "--db",
            "--public-url",
            "--bin-ttl",
            "--reap-interval",
            "--max-body-bytes",
            "--max-requests-per-bin",
            "--max-header-bytes",
            "--max-decoded-bytes",
            "HOOKBIN_MAX_DECODED_BYTES",
            "--trust-proxy",
            "--capture-url",
            "--body-deadline",
            "--max-connections-per-client",
            "--max-streams-per-client",
            "--max-in-flight-per-client",
            "--max-body-memory",
            "HOOKBIN_LISTEN",
            "HOOKBIN_CAPTURE_URL",
            "HOOKBIN_MAX_BODY_MEMORY",
        ] {
            assert!(help.contains(flag), "{args:?} help lacks {flag}");
        }
    }
}

#[test]
fn unopenable_database_exits_1_with_path_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let missing_dir = dir.path().join("no/such/dir/hookbin.db");
    let not_a_db = dir.path().join("junk.db");
    std::fs::write(
        &not_a_db,
        b"this is not a sqlite database, just some text padding it out...",
    )
    .unwrap();
    for db in [&missing_dir, &not_a_db] {
        let out = hookbin(&["--listen", "127.0.0.1:0", "--db", db.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", db.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(db.to_str().unwrap()), "no path in: {err}");
        assert!(err.contains("cannot open database"), "{err}");
    }
}

#[test]
fn environment_variables_configure_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("env.db");
    let s = Server::try_start(
        &db,
        &["--max-requests-per-bin", "2"],
        &[
            ("HOOKBIN_MAX_REQUESTS_PER_BIN", "50"),
            ("HOOKBIN_PUBLIC_URL", "https://env.example"),
        ],
    )
    .unwrap();
    let bin = s.create_bin_with("");
    assert!(
        bin["url"]
            .as_str()
            .unwrap()
            .starts_with("https://env.example/r/")
    );
    let id = bin["id"].as_str().unwrap();
    for _ in 0..4 {
        s.capture(id, b"x");
    }
    assert_eq!(
        s.get(&format!("/api/bins/{id}")).json()["request_count"],
        2,
        "the flag wins"
    );
}

#[test]
fn expired_bins_answer_404_before_the_reaper_runs() {
    // A long reap interval: expiry alone must make the bin answer 404. (The one wait on the
    // wall clock here is the 1 s TTL itself.)
    let s = Server::start(&["--reap-interval", "1h"]);
    let bin = s.create_bin_with(r#"{"ttl_seconds": 1}"#)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let keep = s.create_bin();
    s.eventually("the bin expires", || {
        s.get(&format!("/api/bins/{bin}")).status == 404
    });
    s.request("POST", &format!("/r/{bin}"), &[], b"x")
        .assert_error(404, "bin_not_found");
    s.get(&format!("/api/bins/{bin}/requests"))
        .assert_error(404, "bin_not_found");
    assert_eq!(s.get(&format!("/api/bins/{keep}")).status, 200);
}

#[test]
fn the_reaper_deletes_expired_bins_with_their_requests() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reap.db");
    let mut s = Server::start_on(&db, &[]);
    let doomed = s.create_bin();
    let keep = s.create_bin();
    for _ in 0..50 {
        s.capture(&doomed, b"doomed");
    }
    s.capture(&keep, b"kept");
    s.stop();
    // Expired while the server was down: no race between a short TTL and the captures.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let count = |sql: &str, bin: &str| -> i64 { conn.query_row(sql, [bin], |r| r.get(0)).unwrap() };
    conn.execute("UPDATE bins SET expires_at = 1 WHERE id = ?1", [&doomed])
        .unwrap();

    let s = Server::start_on(&db, &["--reap-interval", "100ms"]);
    // Logged once the whole run is done; the metrics are counted per step before that.
    s.wait_for_log("reaped expired bins");
    assert_eq!(count("SELECT count(*) FROM bins WHERE id = ?1", &doomed), 0);
    // The doomed bin's 50 rows went with it: the one row left is the kept bin's.
    let all: i64 = conn
        .query_row("SELECT count(*) FROM bin_requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(all, 1);
    let rows =
        "SELECT count(*) FROM bin_requests WHERE bin_num = (SELECT num FROM bins WHERE id = ?1)";
    assert_eq!(count(rows, &keep), 1);
    let metrics = s.get("/metrics").text();
    assert!(
        metrics.contains("hookbin_bins_reaped_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("hookbin_requests_reaped_total 50\n"),
        "{metrics}"
    );
    assert_eq!(
        s.get(&format!("/api/bins/{keep}")).json()["request_count"],
        1
    );
}

#[test]
fn parallel_captures_are_all_stored_and_counted() {
    let s = Server::start(&["--max-requests-per-bin", "100000"]);
    let bin = s.create_bin();
    let threads = 16;
    let per_thread = 40;
    let acknowledged: Vec<Vec<(String, Vec<u8>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (s, bin) = (&s, &bin);
                scope.spawn(move || {
                    (0..per_thread)
                        .filter_map(|i| {
                            let body = format!("thread {t} request {i}").into_bytes();
                            let res = s.request("POST", &format!("/r/{bin}"), &[], &body);
                            (res.status == 200)
                                .then(|| (res.header("x-request-id").unwrap().to_owned(), body))
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let acknowledged: Vec<(String, Vec<u8>)> = acknowledged.into_iter().flatten().collect();
    assert_eq!(
        acknowledged.len(),
        threads * per_thread,
        "every capture answered 200"
    );
    let stored = s.list_all(&bin, 500);
    assert_eq!(stored.len(), acknowledged.len());
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        acknowledged.len()
    );
    let mut ids: Vec<&str> = stored.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), acknowledged.len(), "ids are unique");
    for (id, body) in acknowledged.iter().step_by(37) {
        assert_eq!(
            b64(s.stored(&bin, id)["body_base64"].as_str().unwrap()),
            *body
        );
    }
}

#[test]
fn restart_on_the_same_database_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keep.db");
    let mut s = Server::start_on(&db, &[]);
    let bin = s.create_bin_with(r#"{"response": {"status": 204}}"#)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = b"\x00binary\xffbody\r\n";
    let res = s.request(
        "POST",
        &format!("/r/{bin}/p?q=1"),
        &[("X-Keep", "yes")],
        body,
    );
    assert_eq!(res.status, 204);
    let id = res.header("x-request-id").unwrap().to_owned();
    let before = s.stored(&bin, &id);
    let status = s.signal("TERM");
    assert!(status.success(), "clean stop exits 0: {status}");

    let s = Server::start_on(&db, &[]);
    assert_eq!(s.stored(&bin, &id), before);
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["response"]["status"],
        204
    );
    // The bin still answers with its custom response after the restart.
    assert_eq!(
        s.request("POST", &format!("/r/{bin}"), &[], b"").status,
        204
    );
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        2
    );
}

#[test]
fn stalled_headers_time_out_and_others_are_still_served() {
    let s = Server::start(&["--header-timeout", "500ms"]);
    let bin = s.create_bin();
    let mut slow = s.connect();
    slow.write_all(format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nX-Slow: ").as_bytes())
        .unwrap();
    // Meanwhile, others get through.
    s.capture(&bin, b"other");
    // The stalled connection is closed by the server within a bounded time.
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    assert!(started.elapsed() < PATIENCE, "connection was not closed");
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn stalled_body_is_answered_408_and_not_recorded() {
    let s = Server::start(&["--body-timeout", "300ms"]);
    let bin = s.create_bin();
    let mut slow = s.connect();
    slow.write_all(
        format!("POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nonly part")
            .as_bytes(),
    )
    .unwrap();
    let res = crate::util::read_response(&mut std::io::BufReader::new(slow)).unwrap();
    res.assert_error(408, "body_timeout");
    assert_eq!(res.header("connection"), Some("close"));
    s.capture(&bin, b"fine");
    assert_eq!(
        s.get(&format!("/api/bins/{bin}")).json()["request_count"],
        1
    );
}

#[test]
fn sigterm_finishes_in_flight_captures() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("term.db");
    let mut s = Server::start_on(&db, &[]);
    let bin = s.create_bin();
    // A capture whose body is still arriving when SIGTERM comes. `100 Continue` says the
    // capture is reading the body.
    let mut conn = s.connect();
    conn.write_all(
        format!(
            "POST /r/{bin} HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\
             Expect: 100-continue\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut answer = std::io::BufReader::new(conn.try_clone().unwrap());
    assert_eq!(crate::util::read_head(&mut answer).unwrap().status, 100);
    conn.write_all(b"hello").unwrap();
    s.send_signal("TERM");
    s.wait_for_log("shutting down");
    conn.write_all(b"world").unwrap();
    let res = crate::util::read_response(&mut answer).unwrap();
    assert_eq!(res.status, 200, "{}", res.text());
    let id = res.header("x-request-id").unwrap().to_owned();
    assert!(s.wait_exit().success());
    let s = Server::start_on(&db, &[]);
    assert_eq!(s.stored(&bin, &id)["body_text"], "helloworld");
}

#[test]
fn sigterm_ends_event_streams_and_exports_and_exits_0_without_waiting_for_them() {
    let mut s = Server::start(&[]);
    let bin = s.create_bin();
    // More than socket buffers hold: the export below stalls until its reader reads.
    for i in 0..10 {
        s.capture(&bin, &vec![b'a' + i; 1 << 20]);
    }
    // An open event stream, and an export whose reader reads nothing: both are server tasks.
    let mut stream = s.connect();
    stream
        .write_all(
            format!("GET /api/bins/{bin}/stream HTTP/1.1\r\nHost: h\r\nLast-Event-ID: 0\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut stream = std::io::BufReader::new(stream);
    let head = crate::util::read_head(&mut stream).unwrap();
    assert_eq!(head.status, 200);
    let mut export = s.connect();
    export
        .write_all(
            format!("GET /api/bins/{bin}/export?format=json HTTP/1.1\r\nHost: h\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut export = std::io::BufReader::new(export);
    assert_eq!(crate::util::read_head(&mut export).unwrap().status, 200);

    let started = Instant::now();
    s.send_signal("TERM");
    // Both responses end (the socket reads to its end) and the process exits 0, long before
    // the 30 s a busy connection would be granted.
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).expect("the stream ends");
    export.read_to_end(&mut rest).expect("the export ends");
    assert!(s.wait_exit().success());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn request_ids_are_never_reused_even_after_deleting_the_newest_and_restarting() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ids.db");
    let s = Server::start_on(&db, &[]);
    let bin = s.create_bin();
    let first: u64 = s.capture(&bin, b"a").parse().unwrap();
    let newest: u64 = s.capture(&bin, b"b").parse().unwrap();
    assert_eq!(
        s.delete(&format!("/api/bins/{bin}/requests/{newest}"))
            .status,
        204
    );
    // Clearing the bin entirely must not bring old ids back either.
    assert_eq!(s.delete(&format!("/api/bins/{bin}/requests")).status, 204);
    drop(s);
    let s = Server::start_on(&db, &[]);
    let next: u64 = s.capture(&bin, b"c").parse().unwrap();
    assert!(
        next > newest && newest > first,
        "ids {first}, {newest}, then {next}"
    );
}
