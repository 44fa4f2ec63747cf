//! Reading the rows the reaper will delete next, ahead of it, on a thread of its own.
//!
//! A reap step runs on the writer (a slice at a time), and every capture queued behind a slice
//! waits for it. Its rows are
//! old: they were written a TTL ago, and the kernel may have dropped their pages from its cache
//! since (the machines hookbin is measured on page out idle page cache with memory to spare). A
//! step that finds a page missing reads it from the disk inside the writer's transaction, and on
//! a busy disk one such read took 96 ms: a reap step of 70 rows took 98 ms and the capture p99
//! of its 2 s slice went from 2.4 to 83 ms (`perf record -e sched:sched_switch` on the writer,
//! bench/RESULTS.md 2026-12-04 03:52).
//!
//! So the writer tells this thread where its walk in row order stands (see `writer::reap`), and
//! the thread reads, on a read-only connection, the rows after it: their table pages, their
//! overflow pages (a delete walks a row's overflow chain) and their index entries. The writer's
//! step then finds them in the kernel's cache, and when the disk is slow, it is this thread that
//! waits, not the captures.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// Row ids kept read ahead of the walk: at the pace of `bench/run.sh`'s reap (100k rows in about
/// 25 s) a second of steps or more, at the soak's several. Ids, not rows: ahead of the walk they
/// are dense (SQLite gives a new row the largest id plus one; the gaps deletes leave are behind).
const AHEAD: i64 = 4096;
/// Ids read in one statement, so that a read transaction, which keeps the checkpoints from
/// copying frames newer than it, stays short (about a millisecond).
const CHUNK: i64 = 256;

/// The thread that reads ahead of the reaper's walk; stopped and joined when dropped.
#[derive(Debug)]
pub struct Prefetcher {
    walk: Option<SyncSender<i64>>,
    thread: Option<JoinHandle<()>>,
    /// Only tests look at how far the thread has read.
    #[cfg_attr(not(test), allow(dead_code))]
    read_to: Arc<AtomicI64>,
}

impl Prefetcher {
    /// Starts the thread on a read-only connection to the database at `path`. `None` (and a log
    /// line) when that fails: reap steps then read what they need themselves, as before.
    pub fn start(path: &Path) -> Option<Prefetcher> {
        let conn = super::schema::open_reader(path)
            .inspect_err(|e| tracing::warn!(cause = %e, "cannot read ahead of the reaper"))
            .ok()?;
        // One position waiting at most: the thread only wants the newest.
        let (walk, positions) = sync_channel(1);
        let read_to = Arc::new(AtomicI64::new(0));
        let thread = std::thread::Builder::new()
            .name("hookbin-prefetch".into())
            .spawn({
                let read_to = read_to.clone();
                move || run(&conn, &positions, &read_to)
            })
            .inspect_err(|e| tracing::warn!(cause = %e, "cannot read ahead of the reaper"))
            .ok()?;
        Some(Prefetcher {
            walk: Some(walk),
            thread: Some(thread),
            read_to,
        })
    }

    /// The writer's walk has looked at the rows up to the id `after`: read the next [`AHEAD`]
    /// ids. Never waits.
    pub fn walk_at(&self, after: i64) {
        if let Some(walk) = &self.walk {
            // Full: a position is waiting already; the thread reads on from where it is.
            let _ = walk.try_send(after);
        }
    }

    /// The id up to which the rows have been read (tests).
    #[cfg(test)]
    fn read_to(&self) -> i64 {
        self.read_to.load(Ordering::Relaxed)
    }
}

impl Drop for Prefetcher {
    fn drop(&mut self) {
        drop(self.walk.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            tracing::error!("the reaper's read-ahead thread panicked");
        }
    }
}

/// Reads [`AHEAD`] ids after each position the writer sends, a [`CHUNK`] at a time, from where it
/// stopped, until the writer's side of the channel is gone.
fn run(conn: &Connection, positions: &Receiver<i64>, read_to: &AtomicI64) {
    let mut from = 0;
    let mut next = positions.recv().ok();
    while let Some(after) = next {
        if from < after || from > after + 2 * AHEAD {
            // Behind the walk, or ahead of a walk that started over (a new pass).
            from = after;
        }
        let end = after + AHEAD;
        if from < end {
            let to = end.min(from + CHUNK);
            if let Err(e) = read_rows(conn, from, to) {
                // Only a read ahead: the step reads what it needs itself.
                tracing::debug!(cause = %e, "cannot read ahead of the reaper");
            }
            from = to;
            read_to.store(from, Ordering::Relaxed);
        }
        next = match positions.try_recv() {
            Ok(newer) => Some(newer),
            Err(TryRecvError::Empty) if from < end => Some(after),
            Err(TryRecvError::Empty) => positions.recv().ok(),
            Err(TryRecvError::Disconnected) => None,
        };
    }
}

/// The rows with ids in `(?1, ?2]`, in id order, each with its index entry.
const READ_ROWS: &str = "SELECT r.headers, r.body, i.id
       FROM bin_requests r
       JOIN bin_requests i INDEXED BY bin_requests_by_bin ON i.bin_num = r.bin_num AND i.slot = r.slot
      WHERE r.id > ?1 AND r.id <= ?2 ORDER BY r.id";

/// Reads the rows with ids in `(after, to]` and everything a delete of them touches: the row,
/// its headers and body (so their overflow pages, whose chain a delete walks) and its entry in
/// the index by bin and slot.
fn read_rows(conn: &Connection, after: i64, to: i64) -> rusqlite::Result<()> {
    // Every result column is computed at each step, so the blobs are read even though nothing
    // here looks at them (`length()` would not read them).
    let mut rows = conn.prepare_cached(READ_ROWS)?;
    let mut found = rows.query((after, to))?;
    while found.next()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// A database in `dir` holding one bin with `rows` requests of 5,000 bytes (overflow pages
    /// included), ids 1 to `rows`.
    fn database(dir: &Path, rows: i64) -> std::path::PathBuf {
        let path = dir.join("t.db");
        let conn =
            super::super::schema::open_writer(&path, crate::storage::Synchronous::Normal).unwrap();
        conn.execute_batch(&format!(
            "INSERT INTO bins (id, created_at, expires_at) VALUES ('b1', 0, 1);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO bin_requests (id, bin_num, seq, slot, received_at, method, path, subpath,
                 query, body_size, body_truncated, remote_addr, http_version, headers, body)
             SELECT i, 1, i, i, 0, 'POST', '/r/b1', '', '', 5000, 0, '127.0.0.1', 'HTTP/1.1',
                 x'', randomblob(5000) FROM n;"
        ))
        .unwrap();
        path
    }

    /// Waits until the thread has read up to `id` (and fails after 30 s).
    fn wait_for(ahead: &Prefetcher, id: i64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while ahead.read_to() < id {
            assert!(
                Instant::now() < deadline,
                "read to {} of {id}",
                ahead.read_to()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn the_ids_after_the_walk_are_read_and_no_further_than_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path(), 3 * AHEAD);
        let ahead = Prefetcher::start(&path).unwrap();
        ahead.walk_at(0);
        wait_for(&ahead, AHEAD);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            ahead.read_to(),
            AHEAD,
            "it stops {AHEAD} ids after the walk"
        );
        // The walk moved on: only what is new is read.
        ahead.walk_at(AHEAD + 100);
        wait_for(&ahead, 2 * AHEAD + 100);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(ahead.read_to(), 2 * AHEAD + 100);
    }

    #[test]
    fn a_walk_that_starts_over_is_read_ahead_from_its_new_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path(), 4 * AHEAD);
        let ahead = Prefetcher::start(&path).unwrap();
        ahead.walk_at(3 * AHEAD);
        wait_for(&ahead, 4 * AHEAD);
        // A new pass walks from the table's start.
        ahead.walk_at(10);
        let deadline = Instant::now() + Duration::from_secs(30);
        while ahead.read_to() != 10 + AHEAD {
            assert!(Instant::now() < deadline, "read to {}", ahead.read_to());
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn past_the_tables_end_nothing_fails_and_dropping_stops_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path(), 10);
        let ahead = Prefetcher::start(&path).unwrap();
        ahead.walk_at(5);
        wait_for(&ahead, 5 + AHEAD);
        let started = Instant::now();
        drop(ahead);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn the_read_uses_the_rowid_range_and_the_covering_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path(), 10);
        let conn = super::super::schema::open_reader(&path).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {READ_ROWS}"))
            .unwrap()
            .query_map((0, 5), |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            plan,
            [
                "SEARCH r USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
                "SEARCH i USING COVERING INDEX bin_requests_by_bin (bin_num=? AND slot=?)"
            ]
        );
        read_rows(&conn, 0, 5).unwrap();
    }
}
