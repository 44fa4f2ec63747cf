//! The page cache wrapper against real SQLite: what is stored and read back must be exactly what
//! it is without the wrapper (growth, rollbacks, a shrinking file), and a growing database's
//! commits must no longer pass their truncation on.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, params};

/// The counters are per process: tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Installs the wrapper (before any connection of this process: every test starts here) and
/// takes this test's turn.
fn start() -> (MutexGuard<'static, ()>, tempfile::TempDir) {
    assert_eq!(
        walbuf::pcache::install(),
        Ok(()),
        "installed before SQLite starts"
    );
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    (serial, tempfile::tempdir().unwrap())
}

/// A connection like hookbin's writer: WAL, a 16 MiB cache; a table with an index on a key in
/// random order, so that inserts split pages in the middle of both trees.
fn open(path: &Path, setup: &str) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(setup).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384;
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k BLOB NOT NULL, v BLOB NOT NULL);
         CREATE INDEX IF NOT EXISTS t_k ON t (k);",
    )
    .unwrap();
    conn
}

/// Row `n` of generation `g`: a 16-byte key in no particular order and 200-1,700 bytes.
fn row(g: u64, n: u64) -> (Vec<u8>, Vec<u8>) {
    let mut x = (g << 32 | n).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let key: Vec<u8> = (0..2).flat_map(|_| next().to_le_bytes()).collect();
    let len = 200 + (next() % 1500) as usize;
    let value: Vec<u8> = (0..len).map(|i| (next() as usize + i) as u8).collect();
    (key, value)
}

/// The row id of row `n` of generation `g`.
fn id(g: u64, n: u64) -> i64 {
    (g << 32 | n) as i64
}

fn insert(conn: &Connection, g: u64, rows: std::ops::Range<u64>) {
    let mut stmt = conn
        .prepare_cached("INSERT INTO t (id, k, v) VALUES (?1, ?2, ?3)")
        .unwrap();
    for n in rows {
        let (k, v) = row(g, n);
        stmt.execute(params![id(g, n), k, v]).unwrap();
    }
}

/// Rows `0..count` of generation `g`, `per` to a transaction.
fn insert_in_commits(conn: &Connection, g: u64, count: u64, per: u64) {
    for first in (0..count).step_by(per as usize) {
        let tx = conn.unchecked_transaction().unwrap();
        insert(conn, g, first..count.min(first + per));
        tx.commit().unwrap();
    }
}

/// Every row the table should hold, (generation, number), compared byte for byte, on `conn`
/// and on a connection of its own; and SQLite's own check of the file.
fn check(conn: &Connection, path: &Path, expected: &[(u64, u64)]) {
    let fresh = Connection::open(path).unwrap();
    for c in [conn, &fresh] {
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let count: i64 = c
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count as usize, expected.len());
        let mut stmt = c.prepare("SELECT k, v FROM t WHERE id = ?1").unwrap();
        for &(g, n) in expected {
            let got: (Vec<u8>, Vec<u8>) = stmt
                .query_row([id(g, n)], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            assert_eq!(got, row(g, n), "row {n} of generation {g}");
        }
    }
}

fn rows(g: u64, range: std::ops::Range<u64>) -> impl Iterator<Item = (u64, u64)> {
    range.map(move |n| (g, n))
}

#[test]
fn a_growing_database_commits_without_passing_truncations_on() {
    let (_turn, dir) = start();
    let path = dir.path().join("db");
    let conn = open(&path, "");
    let before = walbuf::pcache::stats();
    insert_in_commits(&conn, 1, 8000, 40);
    let after = walbuf::pcache::stats();
    // The splits parked pages (what made the default cache scan at commit) ...
    assert!(after.parks > before.parks, "{before:?} -> {after:?}");
    // ... and the commits' truncations, which could drop nothing, were not passed on.
    let skipped = after.truncations_skipped - before.truncations_skipped;
    assert!(skipped >= 200, "{before:?} -> {after:?}");
    check(&conn, &path, &rows(1, 0..8000).collect::<Vec<_>>());
}

#[test]
fn pages_of_a_rolled_back_transaction_never_come_back() {
    let (_turn, dir) = start();
    let path = dir.path().join("db");
    let conn = open(&path, "");
    insert(&conn, 1, 0..500);
    let before = walbuf::pcache::stats();
    // Grows the file by hundreds of pages, with splits, then takes it all back: the cache must
    // drop those pages, whose numbers the next rows will have.
    conn.execute_batch("BEGIN").unwrap();
    insert(&conn, 2, 0..3000);
    conn.execute_batch("ROLLBACK").unwrap();
    let after = walbuf::pcache::stats();
    assert!(
        after.truncations > before.truncations,
        "the rollback's truncation went through: {before:?} -> {after:?}"
    );
    insert_in_commits(&conn, 3, 3000, 100);
    let expected: Vec<_> = rows(1, 0..500).chain(rows(3, 0..3000)).collect();
    check(&conn, &path, &expected);
}

#[test]
fn a_shrinking_file_drops_its_last_pages_from_the_cache() {
    let (_turn, dir) = start();
    let path = dir.path().join("db");
    let conn = open(&path, "PRAGMA auto_vacuum = INCREMENTAL;");
    insert(&conn, 1, 0..4000);
    let pages =
        |c: &Connection| -> i64 { c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap() };
    let full = pages(&conn);
    let before = walbuf::pcache::stats();
    conn.execute("DELETE FROM t WHERE id >= ?1", [id(1, 1000)])
        .unwrap();
    // One page a step: stepped to the end.
    let mut vacuum = conn.prepare("PRAGMA incremental_vacuum").unwrap();
    let mut steps = vacuum.query([]).unwrap();
    while steps.next().unwrap().is_some() {}
    drop(steps);
    drop(vacuum);
    assert!(pages(&conn) < full / 2, "{} of {full} pages", pages(&conn));
    let after = walbuf::pcache::stats();
    assert!(
        after.truncations > before.truncations,
        "{before:?} -> {after:?}"
    );
    // The numbers the file gave back are used again, by other rows.
    insert_in_commits(&conn, 2, 3000, 150);
    let expected: Vec<_> = rows(1, 0..4000)
        .filter(|(_, n)| *n < 1000)
        .chain(rows(2, 0..3000))
        .collect();
    check(&conn, &path, &expected);
}
