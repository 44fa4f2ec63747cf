//! Several hookbin nodes on one PostgreSQL database (issue 16): what one node commits, the
//! others serve (API, pages, event streams) within a second; one node reaps at a time.
//!
//! These run in the PostgreSQL pass only (`HOOKBIN_TEST_DB=postgres`, as CI's second pass does);
//! under SQLite they return at once with a note.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::api::EventReader;
use crate::util::{Db, PATIENCE, Server};

/// The spec's bound for another node to show a capture.
const WITHIN: Duration = Duration::from_secs(1);

fn postgres_only() -> bool {
    if !crate::pg::postgres() {
        eprintln!("skipped: multi-node tests need HOOKBIN_TEST_DB=postgres");
        return true;
    }
    false
}

fn two_nodes(args: &[&str]) -> (Db, Server, Server) {
    let db = Db::fresh();
    let a = db.start(args);
    let b = db.start(args);
    (db, a, b)
}

#[test]
fn a_capture_on_one_node_shows_on_the_others_api_page_and_stream_within_a_second() {
    if postgres_only() {
        return;
    }
    let (_db, a, b) = two_nodes(&[]);
    // Made on A, unknown to B until it asks the database.
    let bin = a.create_bin();
    let mut live_on_b = EventReader::open(&b, &bin, None);
    let first = a.capture(&bin, b"from A");
    let started = Instant::now();
    let (id, data) = live_on_b.next();
    assert_eq!(id, first);
    assert_eq!(data["body_size"], 6);
    assert!(
        started.elapsed() < WITHIN,
        "B's stream got A's capture after {:?}",
        started.elapsed()
    );
    assert_eq!(b.stored(&bin, &first)["body_text"], "from A");
    let page = b.get(&format!("/bins/{bin}")).text();
    assert!(page.contains(&format!("/bins/{bin}/requests/{first}")) || page.contains(&first));

    // B captures into A's bin; ids go on per bin, whichever node gives them.
    let second = b.capture(&bin, b"from B");
    assert_eq!(
        second.parse::<u64>().unwrap(),
        first.parse::<u64>().unwrap() + 1
    );
    assert_eq!(live_on_b.next().0, second);
    let ids: Vec<String> = a
        .list_all(&bin, 10)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, [second.clone(), first.clone()]);

    // A stream on A resumed from the first id gets B's capture from the database.
    let mut resumed_on_a = EventReader::open(&a, &bin, Some(&first));
    assert_eq!(resumed_on_a.next().0, second);

    // A response set on A is what B answers, once A's change reached it.
    let res = a.request(
        "PUT",
        &format!("/api/bins/{bin}/response"),
        &[],
        br#"{"status": 202, "body": "set on A"}"#,
    );
    assert_eq!(res.status, 200, "{}", res.text());
    b.eventually("B answers with A's response", || {
        b.request("POST", &format!("/r/{bin}"), &[], b"x").status == 202
    });

    // Deleted on A: B answers 404 for it at once.
    assert_eq!(a.delete(&format!("/api/bins/{bin}")).status, 204);
    b.request("POST", &format!("/r/{bin}"), &[], b"x")
        .assert_error(404, "bin_not_found");
    b.get(&format!("/api/bins/{bin}"))
        .assert_error(404, "bin_not_found");
}

#[test]
fn concurrent_captures_on_two_nodes_get_distinct_ids_and_every_stream_sees_all_in_order() {
    if postgres_only() {
        return;
    }
    let (_db, a, b) = two_nodes(&[]);
    let bin = a.create_bin();
    let mut on_a = EventReader::open(&a, &bin, None);
    let mut on_b = EventReader::open(&b, &bin, None);
    let per_node = 40;
    let acked: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = [&a, &b]
            .into_iter()
            .map(|node| {
                let bin = &bin;
                scope.spawn(move || {
                    (0..per_node)
                        .map(|i| node.capture(bin, format!("{i}").as_bytes()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut sorted: Vec<u64> = acked.iter().map(|i| i.parse().unwrap()).collect();
    sorted.sort_unstable();
    let expected: Vec<u64> = (1..=2 * per_node as u64).collect();
    assert_eq!(sorted, expected, "ids are 1..n, none given twice");
    for stream in [&mut on_a, &mut on_b] {
        let got: Vec<u64> = (0..2 * per_node)
            .map(|_| stream.next().0.parse().unwrap())
            .collect();
        assert_eq!(got, expected, "each stream sees every capture, in id order");
    }
    assert_eq!(
        b.get(&format!("/api/bins/{bin}")).json()["request_count"],
        2 * per_node
    );
}

/// B's LISTEN connection is cut and kept from coming back (the database takes no new
/// connections; the pools keep theirs) while A and B both capture: B's writer then publishes by
/// itself, with A's commits unseen in between. Once the listener is back, a stream on B, opened
/// on a bin that had no capture before, has every capture exactly once, in id order.
#[test]
fn a_stream_misses_nothing_committed_while_its_nodes_listener_was_down() {
    if postgres_only() {
        return;
    }
    let db = Db::fresh();
    let pg = db.pg.as_ref().unwrap();
    let a = db.start(&[]);
    // B's connections carry a name of their own, to find its LISTEN connection by.
    let mut b = Server::start_on(
        Path::new(&format!("{}?application_name=hookbin_b", pg.url)),
        &[],
    );
    b.pg = db.pg.clone();
    let bin = a.create_bin();
    let mut live_on_b = EventReader::open(&b, &bin, None);
    let admin =
        |sql: &str| crate::pg::psql("postgres", sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    admin(&format!(
        "ALTER DATABASE {} ALLOW_CONNECTIONS false",
        pg.name
    ));
    let cut = admin(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE datname = '{}' AND application_name = 'hookbin_b' AND query LIKE 'LISTEN%'",
        pg.name
    ));
    assert_eq!(cut, "1", "B's LISTEN connection");
    b.wait_for_log("lost the LISTEN connection");
    let acked = [
        a.capture(&bin, b"one, on A"),
        b.capture(&bin, b"two, on B"),
        a.capture(&bin, b"three, on A"),
    ];
    assert_eq!(acked, ["1", "2", "3"]);
    admin(&format!(
        "ALTER DATABASE {} ALLOW_CONNECTIONS true",
        pg.name
    ));
    let got: Vec<String> = (0..3).map(|_| live_on_b.next().0).collect();
    assert_eq!(got, acked, "every capture, in order");
    // Nothing twice: the next event is the next capture.
    let four = a.capture(&bin, b"four, on A");
    assert_eq!(live_on_b.next().0, four);
}

/// B remembers a bin it did not find: with the `bins` table locked (any query on it waits), B
/// answers a repeated capture to that id `404` at once, without the database. A node that
/// creates a bin announces it (`created {bin}`, checked on A), so when a bin with that id is
/// made the way A makes one, B captures into it within a second, not a cache lifetime later.
#[test]
fn a_bin_missed_on_one_node_is_remembered_until_another_node_creates_it() {
    if postgres_only() {
        return;
    }
    let (db, a, b) = two_nodes(&[]);
    let pg = db.pg.as_ref().unwrap();

    // A announces what it creates.
    let mut listener = Session::open(pg);
    listener.send("LISTEN hookbin_bins;");
    let deadline = Instant::now() + PATIENCE;
    while pg.sql("SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN hookbin_bins;'")
        != "1"
    {
        assert!(Instant::now() < deadline, "psql never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = a.create_bin();
    let heard = listener.finish();
    assert!(
        heard.contains(&format!("payload \"created {made}\"")),
        "{heard}"
    );

    let id = "0123456789abcdefghij";
    let capture = || b.request("POST", &format!("/r/{id}"), &[], b"x");
    capture().assert_error(404, "bin_not_found");
    {
        let mut locker = Session::open(pg);
        locker.send("BEGIN; LOCK TABLE bins IN ACCESS EXCLUSIVE MODE;");
        let deadline = Instant::now() + PATIENCE;
        while pg.sql(
            "SELECT count(*) FROM pg_locks WHERE relation = 'bins'::regclass
             AND mode = 'AccessExclusiveLock' AND granted",
        ) != "1"
        {
            assert!(Instant::now() < deadline, "the lock was never taken");
            std::thread::sleep(Duration::from_millis(20));
        }
        for _ in 0..3 {
            let started = Instant::now();
            capture().assert_error(404, "bin_not_found");
            assert!(
                started.elapsed() < WITHIN,
                "a repeated miss waited for the database ({:?})",
                started.elapsed()
            );
        }
        locker.finish();
    }

    // Made as a node makes it: the row and the announcement, in one transaction.
    pg.sql(&format!(
        "WITH made AS (INSERT INTO bins (id, created_at, expires_at) VALUES ('{id}', 0, 9999999999999)
             RETURNING id)
         SELECT pg_notify('hookbin_bins', 'created ' || id) FROM made"
    ));
    let started = Instant::now();
    loop {
        let res = capture();
        if res.status == 200 {
            break;
        }
        res.assert_error(404, "bin_not_found");
        assert!(
            started.elapsed() < WITHIN,
            "B still refuses the bin after {:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(a.list_all(id, 10).len(), 1);
}

/// A psql session fed one line at a time; [`Session::finish`] ends it and returns its output.
struct Session(std::process::Child);

impl Session {
    fn open(db: &crate::pg::TestDb) -> Session {
        let child = Command::new("psql")
            .args(["-X", "-q", "-d", &db.url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("psql");
        Session(child)
    }

    fn send(&mut self, sql: &str) {
        let stdin = self.0.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
    }

    /// One last statement (psql prints the notifications received before it), then the end of
    /// the session (an open transaction rolls back).
    fn finish(mut self) -> String {
        self.send("SELECT 1;");
        drop(self.0.stdin.take());
        let out = self.0.wait_with_output().expect("psql");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

/// A psql session holding the reaper's advisory lock until dropped.
struct HeldLock(std::process::Child);

impl HeldLock {
    fn take(db: &crate::pg::TestDb) -> HeldLock {
        let mut child = Command::new("psql")
            .args(["-X", "-q", "-d", &db.url])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("psql");
        let stdin = child.stdin.as_mut().unwrap();
        writeln!(stdin, "SELECT pg_advisory_lock({REAPER_LOCK});").unwrap();
        stdin.flush().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while db.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") != "1"
        {
            assert!(Instant::now() < deadline, "the lock was never taken");
            std::thread::sleep(Duration::from_millis(20));
        }
        HeldLock(child)
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// `storage::postgres::REAPER_LOCK`.
const REAPER_LOCK: i64 = 0x686f_6f6b_6269_6e01;

fn counter(s: &Server, name: &str) -> u64 {
    let metrics = s.get("/metrics").text();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn one_node_reaps_at_a_time_under_the_advisory_lock() {
    if postgres_only() {
        return;
    }
    let (db, a, b) = two_nodes(&["--reap-interval", "100ms"]);
    let pg = db.pg.as_ref().unwrap();
    let held = HeldLock::take(pg);
    let bins: Vec<String> = (0..3)
        .map(|_| {
            let bin = a.create_bin_with(r#"{"ttl_seconds": 1}"#)["id"]
                .as_str()
                .unwrap()
                .to_owned();
            a.capture(&bin, b"x");
            bin
        })
        .collect();
    // Expired bins answer 404 at once; with the lock held elsewhere neither node reaps them.
    a.eventually("the bins expire", || {
        a.get(&format!("/api/bins/{}", bins[2])).status == 404
    });
    for node in [&a, &b] {
        node.wait_for_log("reaping skipped: another node holds the reaper lock");
    }
    assert_eq!(pg.sql("SELECT count(*) FROM bins"), "3");
    drop(held);
    a.eventually("the bins are reaped", || {
        pg.sql("SELECT count(*) FROM bins") == "0"
    });
    assert_eq!(pg.sql("SELECT count(*) FROM bin_requests"), "0");
    // Each bin was reaped once, by one node or the other.
    a.eventually("the counts settle", || {
        counter(&a, "hookbin_bins_reaped_total") + counter(&b, "hookbin_bins_reaped_total") == 3
    });
}

#[test]
fn both_nodes_are_healthy_on_a_shared_database() {
    if postgres_only() {
        return;
    }
    let (_db, a, b) = two_nodes(&[]);
    for node in [&a, &b] {
        let res = node.get("/healthz");
        assert_eq!((res.status, res.text().as_str()), (200, "ok"));
    }
}

#[test]
fn a_node_killed_9_under_load_behind_nginx_loses_nothing_acknowledged() {
    if postgres_only() {
        return;
    }
    let db = Db::fresh();
    let args = ["--trust-proxy", "--max-requests-per-bin", "1000000"];
    let mut a = db.start(&args);
    let b = db.start(&args);
    let Some(nginx) =
        crate::nginx::Nginx::start_conf("nginx/hookbin-cluster.conf", &[a.addr, b.addr])
    else {
        return;
    };
    let bin = b.create_bin();
    let acked = std::sync::Mutex::new(Vec::<(String, usize)>::new());
    let ok_after_kill = std::sync::atomic::AtomicUsize::new(0);
    let (killed, done) = (
        std::sync::atomic::AtomicBool::new(false),
        std::sync::atomic::AtomicBool::new(false),
    );
    let relaxed = std::sync::atomic::Ordering::SeqCst;
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (nginx, bin, acked, ok_after_kill, killed, done) =
                (&nginx, &bin, &acked, &ok_after_kill, &killed, &done);
            scope.spawn(move || {
                // Bounded: 5 000 requests per thread at most, and it stops when told.
                for i in 0..5_000 {
                    if done.load(relaxed) {
                        break;
                    }
                    let body = format!("thread {t} capture {i}");
                    let mut raw = format!(
                        "POST /r/{bin} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\
                         Connection: close\r\n\r\n",
                        nginx.addr,
                        body.len()
                    )
                    .into_bytes();
                    raw.extend_from_slice(body.as_bytes());
                    let res = nginx.raw(&raw);
                    if res.status == 200 {
                        let id = res.header("x-request-id").unwrap().to_owned();
                        acked.lock().unwrap().push((id, body.len()));
                        if killed.load(relaxed) {
                            ok_after_kill.fetch_add(1, relaxed);
                        }
                    } else {
                        // 502 for a request the dying node held, 429 from nginx's per-client
                        // limit: a sender retries later.
                        assert!(
                            matches!(res.status, 502 | 429 | 503),
                            "unexpected {}: {}",
                            res.status,
                            res.text()
                        );
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            });
        }
        let deadline = Instant::now() + PATIENCE * 2;
        while acked.lock().unwrap().len() < 200 {
            assert!(Instant::now() < deadline, "no load through nginx");
            std::thread::sleep(Duration::from_millis(10));
        }
        a.signal("KILL");
        killed.store(true, relaxed);
        while ok_after_kill.load(relaxed) < 200 {
            assert!(
                Instant::now() < deadline,
                "the other node did not keep serving"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        done.store(true, relaxed);
    });
    let acked = acked.into_inner().unwrap();
    let stored: std::collections::HashMap<String, u64> = b
        .list_all(&bin, 500)
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["body_size"].as_u64().unwrap(),
            )
        })
        .collect();
    for (id, size) in &acked {
        assert_eq!(
            stored.get(id).copied(),
            Some(*size as u64),
            "acknowledged {id} was lost"
        );
    }
    eprintln!(
        "{} captures acknowledged through nginx, all stored; node A killed with -9 midway",
        acked.len()
    );
}

/// `bin_requests` has no foreign key on PostgreSQL (schema version 2): deleting a bin deletes its
/// requests after its row, so a writer on another node that holds the row locked is waited for
/// and what it committed goes too.
#[test]
fn a_bin_deleted_on_one_node_while_another_captures_into_it_leaves_no_request_behind() {
    if postgres_only() {
        return;
    }
    let (db, a, b) = two_nodes(&[]);
    let pg = db.pg.as_ref().unwrap();
    let bin = a.create_bin();
    let rows = || {
        pg.sql(&format!(
            "SELECT count(*) FROM bin_requests WHERE bin_id = '{bin}'"
        ))
        .parse::<u64>()
        .unwrap()
    };
    let captured = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let deadline = Instant::now() + PATIENCE;
                // Until the deletion reaches B: its writer finds the row gone and answers 404.
                loop {
                    let res = b.request("POST", &format!("/r/{bin}"), &[], b"racing");
                    if res.status == 404 {
                        break;
                    }
                    assert_eq!(res.status, 200, "{}", res.text());
                    captured.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    assert!(Instant::now() < deadline, "B never saw the bin go");
                }
            });
        }
        a.eventually("B's captures land", || rows() >= 50);
        let res = a.request("DELETE", &format!("/api/bins/{bin}"), &[], b"");
        assert_eq!(res.status, 204, "{}", res.text());
    });
    assert!(captured.into_inner() >= 50);
    assert_eq!(rows(), 0, "requests outlived their bin");
    assert_eq!(pg.sql("SELECT count(*) FROM bin_requests"), "0");
}

/// A database made at PostgreSQL schema version 1 (with the foreign key) is migrated to 2 on
/// start: the constraint goes, the data stays, and deleting a bin still takes its requests.
#[test]
fn a_version_1_postgres_database_is_migrated_and_keeps_its_data() {
    if postgres_only() {
        return;
    }
    let db = Db::fresh();
    let pg = db.pg.as_ref().unwrap();
    // Version 1 is today's schema plus the foreign key.
    pg.sql(include_str!("../../schema-postgres.sql"));
    pg.sql(
        "ALTER TABLE bin_requests ADD CONSTRAINT bin_requests_bin_id_fkey
             FOREIGN KEY (bin_id) REFERENCES bins (id) ON DELETE CASCADE;
         CREATE TABLE schema_version (version integer NOT NULL);
         INSERT INTO schema_version VALUES (1);
         INSERT INTO bins (id, created_at, expires_at, request_count, last_request_id, bytes_used)
             VALUES ('aaaaaaaaaaaaaaaaaaaa', 0, 9999999999999, 1, 1, 7);
         INSERT INTO bin_requests (bin_id, seq, received_at, method, path, subpath, query,
             body_size, body_truncated, remote_addr, http_version, headers, body)
             VALUES ('aaaaaaaaaaaaaaaaaaaa', 1, 0, 'POST', '/r/aaaaaaaaaaaaaaaaaaaa', '', '', 7,
                 false, '127.0.0.1', 'HTTP/1.1', '\\x', 'version1'::bytea)",
    );
    let s = db.start(&[]);
    assert_eq!(pg.sql("SELECT max(version) FROM schema_version"), "2");
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_constraint WHERE contype = 'f'"),
        "0"
    );
    assert_eq!(
        s.stored("aaaaaaaaaaaaaaaaaaaa", "1")["body_text"],
        "version1"
    );
    let next = s.capture("aaaaaaaaaaaaaaaaaaaa", b"version2");
    assert_eq!(next, "2");
    let res = s.request("DELETE", "/api/bins/aaaaaaaaaaaaaaaaaaaa", &[], b"");
    assert_eq!(res.status, 204, "{}", res.text());
    assert_eq!(pg.sql("SELECT count(*) FROM bin_requests"), "0");
}
