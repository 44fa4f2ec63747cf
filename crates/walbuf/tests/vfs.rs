//! The VFS against real SQLite: a writer through `walbuf`, readers and copies through the
//! default VFS, which must see every commit the moment it returns and nothing else.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags, params};

/// The counters are per process: tests that read them run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// One test's turn (the counters), its directory, and the database path in it.
fn setup() -> (MutexGuard<'static, ()>, tempfile::TempDir, PathBuf) {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    (serial, dir, path)
}

fn writer(path: &Path, cache_pages: i64) -> Connection {
    common::writer(path, "", cache_pages)
}

fn reader(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap()
}

/// Row count and a digest of every row, as a default-VFS connection sees them.
fn digest(conn: &Connection) -> (i64, i64) {
    conn.query_row(
        "SELECT count(*), coalesce(sum(id * 31 + k * 7 + length(v) + unicode(v)), 0) FROM t",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// Copies the WAL into the database (a PASSIVE checkpoint, which must not find it busy), so that
/// the writer's next commit starts the WAL over.
fn checkpoint(conn: &Connection) {
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |x| x.get(0))
        .unwrap();
    assert_eq!(busy, 0);
}

fn assert_intact(conn: &Connection) {
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |x| x.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

/// `n` bytes that differ per row, so that a stale page shows in the digest.
fn value(i: i64, n: usize) -> Vec<u8> {
    let mut v = vec![b'a' + (i % 26) as u8; n];
    v[n / 2] = b'0' + (i % 10) as u8;
    v
}

fn insert(conn: &mut Connection, from: i64, rows: i64, size: usize) {
    let tx = conn.transaction().unwrap();
    for i in from..from + rows {
        tx.execute(
            "INSERT INTO t (id, k, v) VALUES (?1, ?2, ?3)",
            params![i, (i * 7919) % 1000, value(i, size)],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

fn expected(rows: i64, size: usize) -> (i64, i64) {
    let sum = (1..=rows)
        .map(|i| i * 31 + ((i * 7919) % 1000) * 7 + size as i64 + i64::from(b'a' + (i % 26) as u8))
        .sum();
    (rows, sum)
}

#[test]
fn every_commit_is_in_the_file_when_it_returns_and_frames_go_out_together() {
    let (_serial, _dir, path) = setup();
    let mut w = writer(&path, 2000);
    let r = reader(&path);

    // Grow the WAL (writes past its end go straight through), then copy it all into the database
    // so that the writer starts the WAL over and later frames overwrite bytes the file has.
    let mut rows = 0;
    for _ in 0..20 {
        insert(&mut w, rows + 1, 10, 1500);
        rows += 10;
        assert_eq!(digest(&r), expected(rows, 1500));
    }
    checkpoint(&r);

    let before = walbuf::stats();
    let (mut commits, mut restarts) = (0, 0);
    for _ in 0..10 {
        for _ in 0..10 {
            insert(&mut w, rows + 1, 10, 1500);
            rows += 10;
            commits += 1;
            // A reader on the default VFS sees each commit whole, at once.
            assert_eq!(digest(&r), expected(rows, 1500));
        }
        // Copied into the database: the next commit starts the WAL over, inside the bytes it has.
        checkpoint(&r);
        restarts += 1;
    }
    let after = walbuf::stats();
    let asked = after.wal_writes - before.wal_writes;
    let made = after.os_writes - before.os_writes;
    // Each commit changes several pages: SQLite asks for two writes per frame, and each
    // commit's frames reached the kernel together (plus, per restart, the new WAL header,
    // which SQLite syncs on its own).
    assert!(asked >= commits * 8, "SQLite asked for {asked} WAL writes");
    assert!(
        made <= commits + restarts + 1,
        "{made} writes were made for {asked} asked, over {commits} commits"
    );
    // The bytes asked for are exactly frames (24-byte header + 4 KiB page, two writes) and
    // WAL headers (32 bytes, one write, at most one per restart).
    let bytes = after.wal_bytes - before.wal_bytes;
    let frames = (bytes - 32 * asked) / (4096 + 24 - 2 * 32);
    let headers = asked - 2 * frames;
    assert_eq!(
        bytes,
        frames * (4096 + 24) + headers * 32,
        "{bytes} bytes in {asked} writes"
    );
    assert!(
        headers <= restarts + 1,
        "{headers} WAL headers for {restarts} restarts"
    );
}

#[test]
fn pages_rewritten_in_a_transaction_and_spilled_ones_stay_exact() {
    let (_serial, _dir, path) = setup();
    // A tiny cache: a big transaction spills pages to the WAL before its commit, and writes some
    // of them again, in place, when it changes them once more.
    let mut w = writer(&path, 10);
    let r = reader(&path);
    insert(&mut w, 1, 2000, 300);
    checkpoint(&r);
    insert(&mut w, 2001, 10, 300); // the WAL starts over: overwrites from here on

    for round in 0..3 {
        let tx = w.transaction().unwrap();
        for pass in 0..3 {
            tx.execute(
                "UPDATE t SET k = (k + ?1) % 1000, v = ?2 WHERE id % 3 = ?3",
                params![pass + round, value(pass + round, 300), pass % 3],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        // The writer reads its own pages from its cache; the reader, from the files.
        assert_eq!(digest(&r), digest(&w), "round {round}");
    }

    // A spilled transaction that rolls back leaves nothing a reader can see.
    let committed = digest(&r);
    {
        let tx = w.transaction().unwrap();
        tx.execute("UPDATE t SET v = zeroblob(900)", []).unwrap();
        tx.execute("DELETE FROM t WHERE id % 2 = 0", []).unwrap();
        tx.rollback().unwrap();
    }
    assert_eq!(digest(&r), committed);
    insert(&mut w, 3001, 50, 300);
    assert_intact(&r);
    assert_eq!(digest(&r).0, committed.0 + 50);
}

#[test]
fn a_copy_taken_after_any_commit_recovers_every_commit() {
    let (_serial, dir, path) = setup();
    let mut w = writer(&path, 2000);
    let r = reader(&path);
    insert(&mut w, 1, 400, 1000);
    checkpoint(&r);

    let mut rows = 400;
    for step in 0..5 {
        insert(&mut w, rows + 1, 37, 1000);
        rows += 37;
        // What a process killed right now leaves behind: the database and its WAL as the kernel
        // has them, without the shared-memory index, so that the copy recovers from the WAL.
        let copy = dir.path().join(format!("copy-{step}"));
        std::fs::create_dir(&copy).unwrap();
        std::fs::copy(&path, copy.join("db")).unwrap();
        std::fs::copy(dir.path().join("db-wal"), copy.join("db-wal")).unwrap();
        let c = Connection::open(copy.join("db")).unwrap();
        assert_eq!(digest(&c), expected(rows, 1000), "copy after step {step}");
        assert_intact(&c);
    }
}

#[test]
fn a_reader_running_beside_the_commits_only_ever_sees_whole_commits() {
    let (_serial, _dir, path) = setup();
    let mut w = writer(&path, 2000);
    insert(&mut w, 1, 300, 1500);
    checkpoint(&reader(&path));

    // The reader checks each snapshot it gets while the writer commits: a commit published
    // before its frames were in the file would show as a count whose digest does not match,
    // or as a damaged page.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = std::thread::spawn({
        let (path, stop) = (path.clone(), stop.clone());
        move || {
            let r = reader(&path);
            let mut seen = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (rows, sum) = digest(&r);
                assert_eq!((rows, sum), expected(rows, 1500));
                seen += 1;
            }
            seen
        }
    });
    let mut rows = 300;
    for i in 0..400 {
        insert(&mut w, rows + 1, 3, 1500);
        rows += 3;
        if i % 50 == 49 {
            checkpoint(&reader(&path));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = seen.join().expect("the reader saw only whole commits");
    assert!(seen > 10, "the reader ran {seen} times");
}

#[test]
fn big_transactions_go_out_in_pieces_and_read_back() {
    let (_serial, _dir, path) = setup();
    let mut w = writer(&path, 2000);
    let r = reader(&path);
    insert(&mut w, 1, 4, 3 << 20); // 12 MiB: the WAL grows (writes go straight through)
    checkpoint(&r);
    // The WAL starts over: 5 MiB rows fill the buffer many times over, in one commit, and the
    // last commits run past the WAL's old end.
    for i in 0..4 {
        insert(&mut w, 5 + i, 1, 5 << 20);
        assert_eq!(digest(&r).0, 5 + i);
    }
    assert_intact(&r);
}

#[test]
fn writeback_starts_on_a_file_and_fails_on_what_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    // Read-only is enough: the WAL is opened that way by the server's checkpoint thread.
    let file = std::fs::File::open(&path).unwrap();
    walbuf::start_writeback(&file, 0, 0).unwrap();
    walbuf::start_writeback(&file, 4096, 65536).unwrap();
    if cfg!(target_os = "linux") {
        // A pipe has no pages to write back: the kernel's error (ESPIPE) comes back.
        let (reader, _writer) = std::io::pipe().unwrap();
        let not_a_file = std::fs::File::from(std::os::fd::OwnedFd::from(reader));
        assert!(walbuf::start_writeback(&not_a_file, 0, 0).is_err());
    }
}
