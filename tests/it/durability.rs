//! Nothing acknowledged is lost: `kill -9` and SIGTERM in the middle of concurrent captures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use crate::replay_support::noise;
use crate::util::{PATIENCE, Server, b64};

/// A request id with the body that was acknowledged for it.
type Acked = Vec<(String, Vec<u8>)>;

/// How many captures were acknowledged, and how many capture threads still run; a waiter wakes
/// on each change.
struct Progress {
    state: Mutex<(usize, usize)>,
    changed: Condvar,
}

impl Progress {
    /// For `threads` capture threads about to start.
    fn new(threads: usize) -> Progress {
        Progress {
            state: Mutex::new((0, threads)),
            changed: Condvar::new(),
        }
    }

    fn update(&self, f: impl FnOnce(&mut (usize, usize))) {
        f(&mut self.state.lock().unwrap());
        self.changed.notify_all();
    }

    /// Waits until `n` captures were acknowledged; fails when the capture threads all stopped
    /// first or after [`PATIENCE`].
    fn wait_for(&self, n: usize) {
        let deadline = Instant::now() + PATIENCE;
        let mut state = self.state.lock().unwrap();
        while state.0 < n {
            assert!(state.1 > 0, "captures stopped early, after {}", state.0);
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "only {} of {n} captures in {PATIENCE:?}",
                state.0
            );
            state = self.changed.wait_timeout(state, left).unwrap().0;
        }
    }
}

/// Captures from `threads` connections until `stop`; returns every (id, body) answered 2xx.
fn capture_until_stopped(
    addr: std::net::SocketAddr,
    bin: &str,
    threads: usize,
    progress: &Progress,
    stop: &AtomicBool,
) -> Acked {
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for t in 0..threads {
            let results = &results;
            scope.spawn(move || {
                // Counted down however the thread ends.
                struct Running<'a>(&'a Progress);
                impl Drop for Running<'_> {
                    fn drop(&mut self) {
                        self.0.update(|p| p.1 -= 1);
                    }
                }
                let _running = Running(progress);
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let body = format!("{{\"thread\":{t},\"n\":{i}}}\n").into_bytes();
                    let target = format!("/r/{bin}/t{t}");
                    let head = format!(
                        "POST {target} HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let mut raw = head.into_bytes();
                    raw.extend_from_slice(&body);
                    // The server may die at any moment: errors are expected, only 2xx count.
                    let Ok(mut conn) = std::net::TcpStream::connect(addr) else { break };
                    use std::io::Write;
                    if conn.write_all(&raw).is_err() {
                        break;
                    }
                    let Ok(res) = crate::util::read_response(&mut std::io::BufReader::new(conn)) else {
                        continue;
                    };
                    if (200..300).contains(&res.status) {
                        let id = res.header("x-request-id").unwrap().to_owned();
                        results.lock().unwrap().push((id, body));
                        progress.update(|p| p.0 += 1);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap()
}

fn assert_all_stored(db: &std::path::Path, bin: &str, acked: &[(String, Vec<u8>)]) {
    let s = Server::start_on(db, &[]);
    for (id, body) in acked {
        let res = s.get(&format!("/api/bins/{bin}/requests/{id}"));
        assert_eq!(
            res.status, 200,
            "acknowledged request {id} is missing after the restart"
        );
        assert_eq!(
            b64(res.json()["body_base64"].as_str().unwrap()),
            *body,
            "request {id}"
        );
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let fk: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk, 0, "rows without a bin");
}

/// Runs captures from many connections against a server on `db` and sends `signal` once `after`
/// more were acknowledged; the acknowledged ones and the exit code.
fn stop_mid_capture(
    db: &std::path::Path,
    bin: Option<&str>,
    signal: &str,
    after: usize,
) -> (String, Acked, Option<i32>) {
    let mut s = Server::start_on(db, &["--max-requests-per-bin", "1000000"]);
    let bin = bin.map_or_else(|| s.create_bin(), str::to_owned);
    let threads = 16;
    let progress = Progress::new(threads);
    let stop = AtomicBool::new(false);
    let mut status = None;
    let results = std::thread::scope(|scope| {
        let addr = s.addr;
        let (bin, progress, stop) = (&bin, &progress, &stop);
        let worker = scope.spawn(move || capture_until_stopped(addr, bin, threads, progress, stop));
        progress.wait_for(after);
        // Requests are in flight right now; the signal lands in the middle of them.
        status = Some(s.signal(signal));
        stop.store(true, Ordering::SeqCst);
        worker.join().unwrap()
    });
    assert!(results.len() >= after);
    (bin, results, status.and_then(|s| s.code()))
}

#[test]
fn kill_9_during_captures_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    // Several crashes on one database: each lands at a different point of the write cycle.
    let mut bin = None;
    let mut acked = Vec::new();
    for _ in 0..5 {
        let (b, mut round, _) = stop_mid_capture(&db, bin.as_deref(), "KILL", 200);
        acked.append(&mut round);
        bin = Some(b);
    }
    assert_all_stored(&db, &bin.unwrap(), &acked);
}

#[test]
fn sigterm_during_captures_loses_nothing_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("term.db");
    let (bin, acked, code) = stop_mid_capture(&db, None, "TERM", 300);
    assert_eq!(code, Some(0), "a graceful stop exits 0");
    assert_all_stored(&db, &bin, &acked);
}

/// Regression (issue 6 benchmark): checkpoints on a separate connection never caught up with a
/// busy writer, so the WAL was never restarted and grew to 2.2 GB in a one-minute benchmark.
#[test]
fn the_wal_stays_bounded_under_sustained_captures() {
    if crate::pg::sqlite_only() {
        return;
    }
    let s = Server::start(&["--max-requests-per-bin", "100"]);
    let bin = s.create_bin();
    // Bodies that do not compress: the server stores a body packed when that saves an eighth of
    // it, and a body of one repeated byte went to the WAL as a few dozen bytes, so this test,
    // written before that, wrote far less WAL than the bodies' size it compares with.
    let bodies: Vec<Vec<u8>> = (1..=8).map(|seed| noise(32 * 1024, seed)).collect();
    // Well past twice the largest WAL file a restarted WAL leaves (its restart point and a
    // chunk, ~260 MiB), so that a WAL that is restarted stays under half of what was written,
    // and one that is not goes over it.
    let per_thread = 2600;
    let written = 8 * per_thread * bodies[0].len();
    let limit = hookbin::storage::sqlite::WAL_FILE_LIMIT as usize;
    assert!(
        written > 2 * limit + (32 << 20),
        "{written} bytes written do not outgrow twice the WAL's limit of {limit}"
    );
    std::thread::scope(|scope| {
        for body in &bodies {
            let (s, bin) = (&s, &bin);
            scope.spawn(move || {
                for _ in 0..per_thread {
                    s.capture(bin, body);
                }
            });
        }
    });
    let mut wal = s.db.clone().into_os_string();
    wal.push("-wal");
    let wal_bytes = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) as usize;
    assert!(
        wal_bytes < written / 2,
        "the WAL is {wal_bytes} bytes after {written} bytes of bodies: it is not being restarted"
    );
}
