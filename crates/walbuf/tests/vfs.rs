//! The VFS against real SQLite: a writer through `walbuf`, readers and copies through the
//! default VFS, which must see every commit the moment it returns and nothing else.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::{Connection, OpenFlags, params};

/// The counters, and a file size limit, are per process: tests that read them or write files run
/// one at a time.
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
    // Its turn too: a file size limit set by another test would apply to this one's file.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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

/// A checkpointer through walbuf, as hookbin's checkpoint thread opens it.
fn checkpointer(path: &Path) -> Connection {
    Connection::open_with_flags_and_vfs(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE,
        walbuf::register().expect("register the VFS"),
    )
    .unwrap()
}

/// The database file alone, copied aside and opened without its WAL: what a checkpoint left in
/// it, and nothing else.
fn file_alone(path: &Path, dir: &Path, name: &str) -> Connection {
    let copy = dir.join(name);
    std::fs::copy(path, &copy).unwrap();
    Connection::open(&copy).unwrap()
}

/// Copies the whole WAL into the database file (no reader may hold it back), and says so.
fn copy_all(conn: &Connection) {
    let (busy, frames, copied): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |x| {
            Ok((x.get(0)?, x.get(1)?, x.get(2)?))
        })
        .unwrap();
    assert_eq!((busy, copied), (0, frames), "the whole WAL copied");
}

#[test]
fn a_checkpoint_copies_runs_of_pages_in_few_writes_and_the_file_holds_them() {
    copies_in_runs(false);
}

#[test]
fn without_fallocate_the_file_grows_with_zeros_and_holds_the_same() {
    copies_in_runs(true);
}

/// Zeros the grow switch back off when dropped, even when the test fails.
struct Zeros;

impl Drop for Zeros {
    fn drop(&mut self) {
        walbuf::grow_with_zeros(false);
    }
}

/// A growing database, then one rewritten in place, copied by checkpoints: in runs of pages, and
/// the file alone holds every row. `zeros`: grow the file as where `fallocate` is missing.
fn copies_in_runs(zeros: bool) {
    let (_serial, dir, path) = setup();
    let _zeros = Zeros;
    walbuf::grow_with_zeros(zeros);
    let mut w = writer(&path, 2000);
    let c = checkpointer(&path);
    let r = reader(&path);

    // A growing database: every page the copy writes is past the file's old end.
    let before = walbuf::stats();
    insert(&mut w, 1, 2000, 1500);
    copy_all(&c);
    let grown = walbuf::stats();
    let (asked, made, allocated) = (
        grown.copy_writes - before.copy_writes,
        grown.copy_os_writes - before.copy_os_writes,
        grown.copy_allocations - before.copy_allocations,
    );
    assert!(asked >= 700, "the copy wrote {asked} pages");
    if zeros || !cfg!(target_os = "linux") {
        // Runs of 16 pages (64 KiB), each after the zeros that grew the file by as much: two
        // writes where there were 16 (measured: 128 for 1,011 pages).
        assert_eq!(allocated, 0);
        assert!(
            made * 6 <= asked,
            "{made} writes reached the kernel for {asked} pages"
        );
    } else {
        // One fallocate for the copy, then runs of 16 pages (measured: 64 for 1,011 pages). A
        // file system without fallocate (not tmpfs, ext4, xfs or btrfs) would write zeros.
        assert_eq!(allocated, 1, "one fallocate grew the file");
        assert!(
            made * 12 <= asked,
            "{made} writes reached the kernel for {asked} pages"
        );
    }
    assert_eq!(
        digest(&file_alone(&path, dir.path(), "grown")),
        expected(2000, 1500)
    );
    assert_intact(&file_alone(&path, dir.path(), "grown"));

    // Rows rewritten in place (same sizes), a third of the table at a time: the copy overwrites
    // pages the file has, one after the other, and a reader beside it sees every commit.
    for round in 0..3 {
        let tx = w.transaction().unwrap();
        tx.execute(
            "UPDATE t SET v = ?1 WHERE (id - 1) / 667 = ?2",
            params![value(round, 1500), round],
        )
        .unwrap();
        tx.commit().unwrap();
        let seen: i64 = r
            .query_row(
                "SELECT count(*) FROM t WHERE v = ?1",
                [value(round, 1500)],
                |x| x.get(0),
            )
            .unwrap();
        assert!(seen >= 666, "the reader saw {seen} rewritten rows");
        copy_all(&c);
    }
    let after = walbuf::stats();
    let (asked, made) = (
        after.copy_writes - grown.copy_writes,
        after.copy_os_writes - grown.copy_os_writes,
    );
    assert!(
        made * 4 <= asked,
        "{made} writes for {asked} pages rewritten"
    );
    let alone = file_alone(&path, dir.path(), "rewritten");
    assert_intact(&alone);
    let (rows, rewritten): (i64, i64) = alone
        .query_row(
            "SELECT count(*), sum(v = ?1) + sum(v = ?2) + sum(v = ?3) FROM t",
            params![value(0, 1500), value(1, 1500), value(2, 1500)],
            |x| Ok((x.get(0)?, x.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, rewritten), (2000, 2000));
}

/// A process-wide file size limit, lifted again when dropped (even when the test fails). Every
/// test of this file that writes a file holds `SERIAL` first.
struct SizeLimit(libc::rlimit);

impl SizeLimit {
    fn set(bytes: u64) -> SizeLimit {
        let mut old = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain system calls on a struct we own. A write past the limit fails with
        // EFBIG instead of raising SIGXFSZ, which is ignored first.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut old), 0);
            let new = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: old.rlim_max,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &new), 0);
        }
        SizeLimit(old)
    }
}

impl Drop for SizeLimit {
    fn drop(&mut self) {
        // SAFETY: as in `set`.
        unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &self.0) };
    }
}

#[test]
fn a_copy_that_cannot_grow_the_file_fails_and_the_next_one_copies_everything() {
    let (_serial, dir, path) = setup();
    let mut w = writer(&path, 2000);
    let c = checkpointer(&path);
    insert(&mut w, 1, 200, 1500);
    copy_all(&c);
    // The WAL restarts: 2,000 more rows, then a file that may grow by only a little (a full
    // disk, as the kernel reports it to a writer past the limit). The WAL is already as long as
    // it gets; the database file would have to grow by some 3 MiB.
    insert(&mut w, 201, 2000, 1500);
    let size = std::fs::metadata(&path).unwrap().len();
    {
        let _limit = SizeLimit::set(size + 256 * 1024);
        let failed = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |x| x.get::<_, i64>(0));
        assert!(
            failed.is_err(),
            "the copy reported the full file: {failed:?}"
        );
    }
    // Nothing was published: the WAL still has every page, readers see every row, and the next
    // copy, with room, puts them all in the file.
    assert_eq!(digest(&reader(&path)), expected(2200, 1500));
    copy_all(&c);
    let alone = file_alone(&path, dir.path(), "after");
    assert_intact(&alone);
    assert_eq!(digest(&alone), expected(2200, 1500));
}
