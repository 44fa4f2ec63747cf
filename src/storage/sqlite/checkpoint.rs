//! WAL checkpoints, split between a background thread and the writer.
//!
//! Copying the WAL back into the database file (and the fsyncs that go with it under
//! `synchronous=NORMAL`) is heavy, so a background thread does it, with PASSIVE checkpoints that
//! never block the writer. But a checkpoint on another connection can never finish while the
//! writer keeps appending, and the WAL only restarts from its beginning after a checkpoint that
//! copied everything: left alone, the WAL grows without bound (measured: 2.2 GB after a minute of
//! load). So when the WAL passes [`RESTART_FRAMES`], the writer runs one checkpoint itself,
//! between batches and after answering their callers. Nothing appends during it, so it reaches
//! the end of the WAL, and the next write starts the WAL over.
//!
//! The WAL's size comes from the writer's own commits (SQLite's WAL hook, [`WalSize`]), so the
//! writer always knows the size the WAL has, restarted or not. (It used to come from the
//! background thread's checkpoints: one that began before the first write after a restart still
//! saw the old WAL, copied whole, and made the writer checkpoint a second time for nothing.)
//!
//! Every capture waits while the writer checkpoints, and a background checkpoint that copies
//! thousands of frames slows the writer's own writes beside it, so the background thread copies
//! as the WAL grows, a little at a time, from the moment it restarts (see [`Copier`]). It also
//! syncs the database file as it copies ([`DbSync`]), which SQLite does not do while the writer
//! keeps it from reaching the WAL's end, so that the restart's database `fsync` is short.
//!
//! Once the writer has been idle for [`IDLE_TRUNCATE`] with every frame copied, the background
//! thread asks it to cut the WAL file to nothing (a TRUNCATE checkpoint, which the writer runs
//! between batches). A restarted WAL is written over the old file from its start, and a WAL
//! frame (24 bytes of header and a page) never covers whole pages of the file, so over a block
//! the kernel dropped from its cache while the server was idle (this machine's kernel pages out
//! idle page cache with memory to spare) ext4 first reads the block back, inside the writer's
//! `pwrite`: the first batch after a pause took 30-158 ms (bench/RESULTS.md, 2026-12-02 01:09).
//! Past the end of the file nothing is read back, and the `ftruncate` costs its few ms while
//! nothing waits.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::storage::StoreError;

/// How often the background thread looks at the WAL while the writer is quiet, and the longest it
/// leaves a few frames uncopied.
const INTERVAL: Duration = Duration::from_millis(50);
/// How often it looks while the writer commits.
const BUSY_INTERVAL: Duration = Duration::from_millis(1);
/// Uncopied frames that make a background checkpoint due at once (2 MiB of 4 KiB pages). With 64
/// (256 KiB), passes came so often that the pages many bins share (index interior pages, the
/// bins' rows, the appended table page) were copied and synced again in almost every one: in a
/// 240 s soak at 15,000 captures/s over ~100 bins the checkpoint thread took 11.9-15.1 us a
/// capture and the disk 15.9-18.3 KB; with 512, 4.5-6.9 us and 10.7-13.9 KB, the whole process
/// 10-14% less CPU, while the writer's restart checkpoints went from 1.5-3.6 to 3.5-5.7 ms on
/// average (bench/RESULTS.md, 2026-12-01 21:02).
const CHUNK: i64 = 512;
/// WAL frames (pages) beyond which the writer restarts the WAL: 65,536 pages of 4 KiB = 256 MiB.
///
/// A restart costs about the same whatever the WAL's size: three `fsync`s in a row (the WAL
/// before the last copy, the database after it, the WAL's new header in the next commit), and
/// since the background thread copies as the WAL grows and starts writing it out as it
/// comes, little is left for them to write. So fewer restarts hold the captures up less. In
/// 300 s soaks at 18,100 captures/s (bench/RESULTS.md, 2026-12-04 00:38): 54-70 restarts a
/// minute of 2.1-4.2 ms on average with 16,384 frames, against 222-280 of 2.4-5.0 ms with
/// 4,096, and on the quiet pair a capture p99 of 3.9-5.5 ms in every minute against 4.0-14.7
/// ms. Then 32,768 against 16,384, in full 10-minute soaks at ~33,000 captures/s on the Intel
/// Xeon (RESULTS 2026-12-04 10:05): 47-53 restarts a minute of 2.1-3.4 ms on average against
/// 95-111 of 1.6-3.5 ms, so 99-172 ms a minute of the writer's time in restarts against
/// 154-373 ms, and the soak's p99 rule 1.300x, 1.178x and 1.284x against 1.383x and 1.732x
/// (still above its 1.1x). Most of a restart is the database's `fsync`, and it grows as a soak
/// ages: traced on that machine (RESULTS 2026-12-04 13:39, `bench/syscalls.py`), 1.18 ms at
/// t = 30 s against 2.26 ms at t = 400 s, beside ~0.45 and ~0.23 ms for the WAL's two and
/// 0.2-0.3 ms for the copy. That `fsync` writes the pages copied since the database was last
/// synced (by a background pass that reached the WAL's end, ~8 a second under load, or by the
/// last restart), the writer's own copy included: ~500 pages late in a soak, and its time
/// follows the runs of adjacent pages they lie in, ~9 us a run (RESULTS 2026-12-04 16:29), which
/// grow as new bins reuse freed pages scattered over the file (a WAL cycle's copies: 364 runs
/// early, 2,842 late). Then 65,536 against 32,768, in 10-minute soaks at 20,000 captures/s on
/// the AMD EPYC (RESULTS 2026-12-04 22:00): 10-15 restarts a minute of 1.7-2.6 ms on average
/// against 23-33 of 1.6-3.0 ms, so ~25 ms a minute of the writer's time against ~55, the
/// writer's CPU a capture otherwise the same (11.3-14.7 us a minute against 10.9-14.6), and the
/// soak's p99 rule 0.931x, 1.109x and 1.276x against 1.613x and 1.140x. (Tried three times
/// before the writeback existed, a larger WAL only made each restart's WAL `fsync` longer:
/// 5-11 ms, no gain.) The cost: a WAL file of up to
/// [`WAL_FILE_LIMIT`] on disk while the server is busy (cut to nothing once idle, see
/// [`IDLE_TRUNCATE`]), as much page cache, and a start after a crash that reads up to that much
/// WAL to rebuild its index.
pub const RESTART_FRAMES: i64 = 65536;
/// The WAL file's size that SQLite cuts it back to at the first commit after a restart
/// (`PRAGMA journal_size_limit`), when it is larger: the restart point and `CHUNK` frames more
/// (259.5 MiB with 4 KiB pages, a frame being a page and 24 bytes). A WAL normally ends within a
/// batch of the restart point (257.6-257.8 MiB in bench/soak.sh), but while the disk stalls the
/// writer's restart waits and the WAL grows (with a restart point of 16 MiB: 16.3 -> 25.3 MiB
/// during stalls of 95-300 ms, bench/RESULTS.md 2026-12-03 15:09); with a limit of 64 MiB the
/// file then kept that size for good. Cutting it back costs one `ftruncate` in the commit after
/// such a stall, and none in ordinary cycles: a whole bench/run.sh, 48,000 captures/s at
/// saturation included, cut the WAL to this size 0 times (with the 16 MiB restart point,
/// RESULTS 2026-12-03 17:44).
pub const WAL_FILE_LIMIT: u64 = wal_bytes(RESTART_FRAMES + CHUNK);
/// SQLite's default page size, which hookbin's databases keep (bench/RESULTS.md 2026-12-01 19:08).
const DB_PAGE: u64 = 4096;

/// The size of a WAL file of `frames` frames of [`DB_PAGE`]s.
const fn wal_bytes(frames: i64) -> u64 {
    WAL_HEADER + frames as u64 * (DB_PAGE + FRAME_HEADER)
}
/// How long the WAL stays unchanged, every frame copied, before the writer is asked to truncate
/// it (see the module docs): half the age at which the kernel drops page cache left alone (these
/// machines' DAMON pages out file pages idle for 60 s), so that it is cut before that happens.
/// Not sooner: besides the `ftruncate` (5-7 ms measured with online discard), a cut WAL grows
/// again from nothing in the next burst, file blocks allocated anew beside the database's own
/// growth, and that costs the writer more each time. With 5 s, a server taking 2 s turns with
/// five others (`bench/run.sh`, a pause of ~12 s) cut its WAL before every turn, and without
/// eviction its CPU a capture went from 14.8-17.5 us in the first round to 18.8-21.6 in the
/// later ones, 0.73-0.86x the storage ceiling's rate; never cut, 15.7-17.7 us in every round
/// (bench/RESULTS.md, 2026-12-05 22:10). In those runs the ceiling's own CPU a capture rose
/// instead (12.3-14.1 to 15.5-18.7 us): part of the cost is the machine's, and it moves.
pub const IDLE_TRUNCATE: Duration = Duration::from_secs(30);

/// The WAL's size in frames after the writer's last commit, as SQLite's WAL hook reports it.
///
/// Only the writer stores it (its hook runs inside its commits), so it is the WAL's real size: a
/// restarted WAL reports its few new frames from the first commit on. Between the writer's own
/// checkpoint and its next commit it still says the old size, and nothing reads it then (the
/// writer checks it after its batches, each of which commits first).
/// It also counts those commits (/metrics).
#[derive(Debug, Default)]
pub struct WalSize {
    frames: AtomicI64,
    commits: AtomicU64,
}

impl WalSize {
    /// A commit of the writer left `frames` in the WAL (its WAL hook).
    pub fn committed(&self, frames: i64) {
        self.frames.store(frames, Ordering::Relaxed);
        self.commits.fetch_add(1, Ordering::Relaxed);
    }

    /// The writer's commits that wrote to the WAL so far.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Whether the writer should checkpoint (and so restart the WAL) now.
    pub fn wants_restart(&self) -> bool {
        self.frames() >= RESTART_FRAMES
    }

    /// The writer truncated the WAL (see [`truncate_idle`]).
    pub fn truncated(&self) {
        self.frames.store(0, Ordering::Relaxed);
    }

    fn frames(&self) -> i64 {
        self.frames.load(Ordering::Relaxed)
    }
}

/// The checkpoint thread's connection, through walbuf as the writer's: a copy's pages go to the
/// database file in runs of 64 KiB rather than one `pwrite` each.
pub fn open(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        super::schema::open_through_walbuf(path, flags).map_err(|e| StoreError::open(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| StoreError::open(path, e))?;
    Ok(conn)
}

/// Checkpoints until `stop` is dropped (nothing is ever sent on it), whenever [`Copier`] says so,
/// and calls `ask_truncate` (which asks the writer to run [`truncate_idle`]) once the WAL has been
/// unchanged and copied for `idle`.
pub fn run(
    conn: Connection,
    stop: Receiver<()>,
    wal: Arc<WalSize>,
    idle: Duration,
    ask_truncate: impl Fn(),
) {
    let mut copier = Copier::new(Instant::now());
    let page_size = conn
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap_or(4096);
    let mut writeback = Writeback::new(conn.path(), page_size.max(512) as u64);
    let mut db_sync = DbSync::new(conn.path());
    // The first look at once: a WAL left by a crash is copied without waiting for a write.
    let mut wait = Duration::ZERO;
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(wait) {
        let now = Instant::now();
        let frames = wal.frames();
        if copier.due(frames, now) {
            let seen = checkpoint(&conn, "PASSIVE").map(|c| (c.frames, c.copied));
            copier.checkpointed(seen, now);
            if let Some((_, copied)) = seen
                && db_sync.due(copied)
            {
                db_sync.sync();
            }
        } else if copier.wants_truncate(idle, now) {
            ask_truncate();
        } else {
            writeback.wal_changed(frames);
        }
        wait = copier.wait(Instant::now());
    }
}

/// Starts the writeback of the WAL's new frames between checkpoints, so that the WAL's `fsync`
/// in the writer's restart checkpoint, during which no capture is committed, finds little left
/// to write. Without it that `fsync` wrote everything committed since the last background pass
/// (up to [`CHUNK`] frames and more, ~2 MiB), and the restart checkpoints, about ten a second
/// at 13,000 captures/s in bench/soak.sh, set the capture p99. Measured there (240 s runs at
/// 13,000/s, bench/RESULTS.md 2026-12-02 15:41): the writer's restart checkpoints 2.2-4.8 ms on
/// average against 3.9-7.6 ms, the capture p99 of the soaked minutes 6.7 ms (median of 12)
/// against 9.0 ms (of 15).
///
/// Only whole file pages, [`WRITEBACK_AT`] bytes at a time: the last page of a commit's frames
/// is written again by the next commit, and a call at every look (each 1 ms) cost the thread
/// ~3 us a capture; in 512 KiB steps, under 1 us. Either way the process dirties ~2 KB more page
/// cache a capture (`/proc/PID/io` write_bytes: 15.4-17.0 KB against 13.4-14.3), which the
/// same bytes written (`wchar`, 17.9-19.2 KB in both) do not explain; left for later.
struct Writeback {
    wal: LazyFile,
    /// Bytes of a WAL frame: its header and a database page.
    frame_bytes: u64,
    /// The WAL's size in frames at the last look.
    frames: i64,
    /// Where the writeback started so far ends (bytes from the WAL's start).
    started: u64,
}

/// Bytes of new whole pages of WAL that make a writeback due (512 KiB).
const WRITEBACK_AT: u64 = 512 * 1024;
/// The WAL file's header, before the first frame.
const WAL_HEADER: u64 = 32;
/// A WAL frame's header, before its page.
const FRAME_HEADER: u64 = 24;
/// The kernel's page, the unit the page cache writes.
const FILE_PAGE: u64 = 4096;

impl Writeback {
    fn new(db: Option<&str>, page_size: u64) -> Writeback {
        Writeback {
            wal: LazyFile::new(db, "-wal"),
            frame_bytes: page_size + FRAME_HEADER,
            frames: 0,
            started: 0,
        }
    }

    /// After a look at the WAL's size (`frames`, from the writer's last commit): starts writing
    /// back its whole pages written since the last time, once there are enough of them.
    fn wal_changed(&mut self, frames: i64) {
        if frames < self.frames {
            // The WAL restarted: its frames are written over it from the start.
            self.started = 0;
        }
        self.frames = frames;
        let end = (WAL_HEADER + frames.max(0) as u64 * self.frame_bytes) / FILE_PAGE * FILE_PAGE;
        if end < self.started + WRITEBACK_AT {
            return;
        }
        // The WAL is opened once it exists (SQLite creates it with the first write); the same
        // file for the life of the server (a restart or a truncation keeps the file).
        let Some(file) = self.wal.get() else { return };
        match walbuf::start_writeback(file, self.started, end - self.started) {
            Ok(()) => self.started = end,
            Err(e) => self.wal.give_up(&e, "cannot start the WAL's writeback"),
        }
    }
}

/// Syncs the database file from the background thread once it has copied [`DB_SYNC_FRAMES`]
/// frames since the database was last synced, so that the database's `fsync` in the writer's
/// restart checkpoint, which every capture waits for, finds little left to write.
///
/// SQLite syncs the database only in a checkpoint whose copy ends with the WAL's last frame.
/// While the writer commits during every pass (whose WAL `fsync` took 3 ms on average here), no
/// pass gets there, so the restart's `fsync` wrote every database page copied in the whole WAL
/// cycle: 7,872-13,649 pages, 71-95 ms on average, which set the capture p99 (a soak's 50-112
/// ms, 61-92 ms with no eviction). Syncing here every 2,048 frames: the restarts' `fsync` 2.5 ms,
/// the soak pattern's p99 3.0 ms against 52.5-55.7 ms (180 s at 20,267/s), no eviction's 6.8 ms
/// against 88.6 ms (bench/syscalls.py; bench/RESULTS.md 2026-12-05 08:56). Only starting the
/// writeback (`sync_file_range`) instead left a p99.9 of 111 ms.
struct DbSync {
    db: LazyFile,
    /// Frames of the current WAL copied as of the last pass.
    copied: i64,
    /// Frames copied since the database was last synced.
    unsynced: i64,
}

/// Frames copied that make the database's sync due (8 MiB of 4 KiB pages).
const DB_SYNC_FRAMES: i64 = 2048;

impl DbSync {
    fn new(db: Option<&str>) -> DbSync {
        DbSync {
            db: LazyFile::new(db, ""),
            copied: 0,
            unsynced: 0,
        }
    }

    /// After a background pass that left `copied` frames of the WAL copied (-1: another
    /// connection was checkpointing): whether the database is due a sync.
    fn due(&mut self, copied: i64) -> bool {
        if copied < 0 {
            return false;
        }
        if copied < self.copied {
            // The WAL restarted, after the writer's checkpoint synced the database.
            self.copied = 0;
            self.unsynced = 0;
        }
        self.unsynced += copied - self.copied;
        self.copied = copied;
        self.unsynced >= DB_SYNC_FRAMES
    }

    /// `fdatasync` of the database file (opened once; a failure is logged and ends the syncs
    /// here, which only ever shorten the writer's).
    fn sync(&mut self) {
        self.unsynced = 0;
        let Some(file) = self.db.get() else { return };
        let started = Instant::now();
        match file.sync_data() {
            Ok(()) => {
                let took_us = started.elapsed().as_micros() as u64;
                tracing::debug!(took_us, "background sync of the database");
            }
            Err(e) => self
                .db
                .give_up(&e, "cannot sync the database from the checkpoint thread"),
        }
    }
}

/// A file of the database's that the checkpoint thread opens the first time it needs it, keeps
/// open, and stops trying once an operation on it failed: what it does with the file (start a
/// writeback, sync) only ever shortens the writer's own work, so a failure costs nothing but
/// that gain.
struct LazyFile {
    /// None: no file (an in-memory or temporary database: path "") or given up.
    path: Option<std::path::PathBuf>,
    file: Option<std::fs::File>,
}

impl LazyFile {
    /// The file at the database's path `db` followed by `suffix` ("-wal": its WAL).
    fn new(db: Option<&str>, suffix: &str) -> LazyFile {
        LazyFile {
            // An in-memory or temporary database (path "") has no files.
            path: db
                .filter(|p| !p.is_empty())
                .map(|p| format!("{p}{suffix}").into()),
            file: None,
        }
    }

    /// The file, opened now if it was not yet (None while it does not exist).
    fn get(&mut self) -> Option<&std::fs::File> {
        if self.file.is_none() {
            self.file = self.path.as_ref().and_then(|p| std::fs::File::open(p).ok());
        }
        self.file.as_ref()
    }

    /// Logs why an operation on the file failed and never opens it again.
    fn give_up(&mut self, cause: &std::io::Error, what: &str) {
        tracing::debug!(cause = %cause, "{what}");
        self.path = None;
        self.file = None;
    }
}

/// The writer's TRUNCATE checkpoint between batches, when the background thread found it idle:
/// the WAL file is cut to nothing, so that the next frames append to new blocks (see the module
/// docs). It waits for nothing: with a reader on an old snapshot or the background thread in a
/// checkpoint it gives up (the background thread asks again after another idle period), and
/// captures queued meanwhile wait only for the `ftruncate`.
pub fn truncate_idle(conn: &Connection, wal: &WalSize) {
    if let Err(e) = conn.busy_timeout(Duration::ZERO) {
        tracing::warn!(cause = %e, "cannot truncate the WAL");
        return;
    }
    let done = checkpoint(conn, "TRUNCATE");
    if let Err(e) = conn.busy_timeout(BUSY_TIMEOUT) {
        tracing::error!(cause = %e, "cannot set the writer's busy timeout again");
    }
    match done {
        Some(c) if !c.busy => {
            wal.truncated();
            let took_us = c.took.as_micros() as u64;
            tracing::debug!(took_us, "idle writer truncated the WAL");
        }
        _ => tracing::debug!("idle writer could not truncate the WAL now"),
    }
}

/// How long a connection waits for a lock another one holds.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// When the background thread checkpoints, from the WAL's size after each of the writer's commits.
///
/// It copies as soon as [`CHUNK`] frames are uncopied, so a pass never has much to do, and a few
/// frames at the latest after [`INTERVAL`]. While the writer commits it looks every
/// [`BUSY_INTERVAL`]; once the WAL has not changed for an interval (the server is idle), every
/// interval. The WAL's size changing, not the checkpoints, says whether the writer is busy. The
/// thread used to judge by its own checkpoints, pausing a whole interval while the WAL was small
/// (or, tried later, while its last two checkpoints saw no new frames); but the first checkpoint
/// after each restart lands right after the writer's, when the WAL is either the old one or just
/// reset and still empty (`frames=0`), so it always paused there: 1,000-3,000 frames piled up, and
/// the next pass copied them in 5-28 ms, slowing the writes beside it to 10-25 ms
/// (bench/RESULTS.md, 2026-12-01).
#[derive(Debug)]
struct Copier {
    /// The WAL's size at the last look, and when it last changed.
    frames: i64,
    changed_at: Instant,
    /// Frames of the current WAL copied as of the last background checkpoint (the writer's own
    /// copies the rest; a pass after that finds nothing left and costs no sync).
    copied: i64,
    /// When the last background checkpoint ran (`None`: not yet).
    last_pass: Option<Instant>,
    /// When the writer was last asked to truncate the WAL.
    asked_truncate: Option<Instant>,
}

impl Copier {
    fn new(now: Instant) -> Copier {
        Copier {
            frames: 0,
            changed_at: now,
            copied: 0,
            last_pass: None,
            asked_truncate: None,
        }
    }

    /// Whether to ask the writer to truncate the WAL now: it holds frames, every one of them
    /// copied, and has not changed for `idle`; asked at most once an `idle` (the writer may not
    /// have been able to, see [`truncate_idle`]).
    fn wants_truncate(&mut self, idle: Duration, now: Instant) -> bool {
        let quiet = now.duration_since(self.changed_at) >= idle;
        let asked_lately = self
            .asked_truncate
            .is_some_and(|at| now.duration_since(at) < idle);
        if self.frames > 0 && self.copied >= self.frames && quiet && !asked_lately {
            self.asked_truncate = Some(now);
            true
        } else {
            false
        }
    }

    /// Whether to checkpoint now, the WAL holding `frames` after the writer's last commit.
    fn due(&mut self, frames: i64, now: Instant) -> bool {
        if frames != self.frames {
            if frames < self.frames {
                // The WAL restarted: every frame in it is new.
                self.copied = 0;
            }
            self.frames = frames;
            self.changed_at = now;
        }
        let Some(last_pass) = self.last_pass else {
            return true;
        };
        let uncopied = frames - self.copied;
        uncopied >= CHUNK || (uncopied > 0 && now.duration_since(last_pass) >= INTERVAL)
    }

    /// A checkpoint started at `at` saw `seen`: the WAL's frames and how many of them are copied
    /// (-1, -1: the writer was checkpointing; `None`: it failed).
    fn checkpointed(&mut self, seen: Option<(i64, i64)>, at: Instant) {
        self.last_pass = Some(at);
        if let Some((frames, copied)) = seen
            && frames >= 0
        {
            if frames < self.frames {
                // It saw the WAL restarted since the last look.
                self.frames = frames;
                self.changed_at = at;
            }
            self.copied = copied;
        }
    }

    /// How long to wait before the next look.
    fn wait(&self, now: Instant) -> Duration {
        if now.duration_since(self.changed_at) < INTERVAL {
            BUSY_INTERVAL
        } else {
            INTERVAL
        }
    }
}

/// What one checkpoint saw and how long it took.
#[derive(Debug, Clone, Copy)]
pub struct Checkpointed {
    /// A RESTART or TRUNCATE checkpoint could not finish (another connection held a lock it needs).
    pub busy: bool,
    /// The WAL's size in frames (-1 when another connection was checkpointing).
    pub frames: i64,
    /// How many of them are now copied into the database (-1 likewise).
    pub copied: i64,
    pub took: Duration,
}

/// Runs `PRAGMA wal_checkpoint(mode)`; `None` when it failed (logged).
pub fn checkpoint(conn: &Connection, mode: &str) -> Option<Checkpointed> {
    let started = Instant::now();
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, frames, copied)) => {
            let took = started.elapsed();
            let took_us = took.as_micros() as u64;
            tracing::trace!(mode, busy, frames, copied, took_us, "checkpoint");
            Some(Checkpointed {
                busy: busy != 0,
                frames,
                copied,
                took,
            })
        }
        Err(e) => {
            tracing::warn!(mode, cause = %e, "WAL checkpoint failed; retrying later");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_synced_every_so_many_frames_copied_since_the_last_sync() {
        let mut s = DbSync::new(None);
        assert!(!s.due(-1), "another connection's checkpoint says nothing");
        assert!(!s.due(1000));
        assert!(!s.due(2047));
        assert!(s.due(2048));
        s.sync(); // no file: counts as done
        assert!(!s.due(3000));
        assert!(s.due(4096));
        s.sync();
        // The WAL restarted (the writer's checkpoint synced the database): counted afresh.
        assert!(!s.due(100));
        assert!(!s.due(2000));
        assert!(s.due(2148));
    }

    #[test]
    fn a_background_sync_writes_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        std::fs::write(&db, b"pages").unwrap();
        let mut s = DbSync::new(db.to_str());
        assert!(s.due(DB_SYNC_FRAMES));
        s.sync();
        assert!(
            s.db.file.is_some() && s.db.path.is_some(),
            "the sync succeeded"
        );
        let mut gone = DbSync::new(dir.path().join("missing.db").to_str());
        assert!(gone.due(DB_SYNC_FRAMES));
        gone.sync();
        assert!(gone.db.file.is_none());
    }

    #[test]
    fn a_lazy_file_opens_once_it_exists_and_never_after_giving_up() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let mut wal = LazyFile::new(db.to_str(), "-wal");
        assert!(wal.get().is_none(), "no WAL yet");
        std::fs::write(dir.path().join("x.db-wal"), b"frames").unwrap();
        assert!(wal.get().is_some(), "opened once it exists");
        wal.give_up(&std::io::Error::other("test"), "test");
        assert!(wal.get().is_none(), "not opened again");
        assert!(
            LazyFile::new(Some(""), "-wal").get().is_none(),
            "in-memory: no file"
        );
        assert!(LazyFile::new(None, "").get().is_none());
    }

    #[test]
    fn the_wal_is_written_back_in_whole_pages_once_enough_are_new() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let mut writeback = Writeback::new(db.to_str(), 4096);
        // 512 KiB of frames is 127.2 frames of 4,120 bytes.
        let enough = 128;
        // No WAL file yet (nothing written): nothing to open, no error.
        writeback.wal_changed(enough);
        assert!(writeback.wal.file.is_none());
        assert_eq!(writeback.started, 0);
        std::fs::write(dir.path().join("x.db-wal"), vec![0u8; 600 * 4120]).unwrap();
        writeback.wal_changed(enough - 1);
        assert!(writeback.wal.file.is_none(), "not enough new pages yet");
        writeback.wal_changed(enough);
        assert!(writeback.wal.file.is_some());
        // Up to the last whole page: 32 + 128 * 4,120 = 527,392 bytes, 128 whole pages.
        assert_eq!(writeback.started, 128 * 4096);
        writeback.wal_changed(enough + 10);
        assert_eq!(writeback.started, 128 * 4096, "waits for the next 512 KiB");
        writeback.wal_changed(2 * enough);
        assert_eq!(writeback.started, (32 + 256 * 4120) / 4096 * 4096);
        // A restarted WAL (fewer frames) is written back from its start again.
        writeback.wal_changed(3);
        assert_eq!(writeback.started, 0);
        writeback.wal_changed(enough);
        assert_eq!(writeback.started, 128 * 4096);
        // An in-memory database has no WAL file to write back.
        let mut none = Writeback::new(Some(""), 4096);
        none.wal_changed(enough);
        assert!(none.wal.path.is_none() && none.wal.file.is_none());
    }

    #[test]
    fn the_writer_restarts_a_large_wal_from_the_size_its_commits_report() {
        let wal = WalSize::default();
        wal.committed(RESTART_FRAMES - 1);
        assert!(!wal.wants_restart());
        wal.committed(RESTART_FRAMES + 10);
        assert!(wal.wants_restart());
        // The first commit after the writer's checkpoint restarted the WAL.
        wal.committed(12);
        assert!(!wal.wants_restart());
        // A restart that did not happen (a reader held an old snapshot): still large, and the
        // writer checkpoints again.
        wal.committed(RESTART_FRAMES + 40);
        assert!(wal.wants_restart());
    }

    #[test]
    fn the_background_thread_copies_in_chunks_from_the_moment_the_wal_restarts() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut c = Copier::new(t0);
        // The first look checkpoints whatever is there (a WAL left by a crash).
        assert!(c.due(0, t0));
        c.checkpointed(Some((0, 0)), t0);
        // Nothing new: no checkpoint, and soon the long wait.
        assert!(!c.due(0, ms(1)));
        assert_eq!(c.wait(ms(1)), BUSY_INTERVAL);
        assert_eq!(c.wait(ms(60)), INTERVAL);
        // After a quiet while, the first commit's frames at once.
        assert!(c.due(10, ms(100)));
        c.checkpointed(Some((10, 10)), ms(100));
        // A few frames right after a pass: due once that pass is an interval old, and looked
        // at every millisecond meanwhile, since the writer is committing.
        assert!(!c.due(20, ms(101)));
        assert_eq!(c.wait(ms(101)), BUSY_INTERVAL);
        assert!(!c.due(20, ms(120)));
        assert!(c.due(20, ms(150)));
        c.checkpointed(Some((20, 20)), ms(150));
        // A chunk: at once.
        assert!(!c.due(20 + CHUNK - 1, ms(151)));
        assert!(c.due(20 + CHUNK, ms(152)));
        c.checkpointed(Some((20 + CHUNK, 20 + CHUNK)), ms(152));
        // Grown to a restart, copied as it grew.
        assert!(c.due(4000, ms(199)));
        c.checkpointed(Some((4000, 3990)), ms(199));
        // The writer's checkpoint copied the rest, and its next commit restarted the WAL: the
        // new frames count from zero, so the first chunk after the restart is due at once.
        assert!(!c.due(30, ms(201)));
        assert!(c.due(CHUNK, ms(202)));
        // The size staying the same for a moment (a slow commit: the first one after a restart
        // syncs the WAL) is no reason to wait long.
        assert_eq!(c.wait(ms(210)), BUSY_INTERVAL);
    }

    #[test]
    fn the_writer_is_asked_to_truncate_a_copied_wal_once_it_has_been_idle() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let idle = Duration::from_millis(1000);
        let mut c = Copier::new(t0);
        c.checkpointed(Some((0, 0)), t0);
        // An empty WAL: nothing to truncate, however long it stays so.
        assert!(!c.wants_truncate(idle, ms(5000)));
        // Frames written at 5000, copied at once.
        assert!(c.due(30, ms(5000)));
        c.checkpointed(Some((30, 30)), ms(5000));
        assert!(!c.wants_truncate(idle, ms(5999)));
        assert!(c.wants_truncate(idle, ms(6000)));
        // Asked once an idle period (the writer may not have managed: asked again after one).
        assert!(!c.wants_truncate(idle, ms(6500)));
        assert!(c.wants_truncate(idle, ms(7000)));
        // The writer truncated: its WAL size says 0, and nothing more is asked.
        assert!(!c.due(0, ms(7001)));
        assert!(!c.wants_truncate(idle, ms(9000)));
        // Frames that are not all copied (a reader holds an old snapshot) are never truncated.
        assert!(c.due(50, ms(9000)));
        c.checkpointed(Some((50, 20)), ms(9000));
        assert!(!c.wants_truncate(idle, ms(20_000)));
        // The WAL changing starts the idle period again.
        c.checkpointed(Some((50, 50)), ms(20_000));
        assert!(c.due(60, ms(20_050)));
        c.checkpointed(Some((60, 60)), ms(20_050));
        assert!(!c.wants_truncate(idle, ms(21_049)));
        assert!(c.wants_truncate(idle, ms(21_050)));
    }

    /// A writer connection on a new database in `dir`, with the hookbin schema.
    fn writer(dir: &Path) -> Connection {
        crate::storage::sqlite::schema::open_writer(
            &dir.join("t.db"),
            crate::storage::Synchronous::Normal,
        )
        .unwrap()
    }

    fn wal_len(dir: &Path) -> u64 {
        std::fs::metadata(dir.join("t.db-wal")).unwrap().len()
    }

    fn add_bin(conn: &Connection, id: &str) {
        conn.execute(
            "INSERT INTO bins (id, created_at, expires_at) VALUES (?1, 0, 1)",
            [id],
        )
        .unwrap();
    }

    #[test]
    fn an_idle_truncation_cuts_a_copied_wal_to_nothing_and_never_waits_for_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let conn = writer(dir.path());
        let wal = WalSize::default();
        add_bin(&conn, "a");
        wal.committed(5);
        assert!(wal_len(dir.path()) > 0);
        truncate_idle(&conn, &wal);
        assert_eq!(wal_len(dir.path()), 0);
        assert_eq!(wal.frames(), 0);

        // A reader whose snapshot is in the WAL (it began before the frames were copied):
        // the frames are copied, but the file cannot be cut under it, and the writer does not
        // wait for it (the busy timeout is 5 s).
        add_bin(&conn, "b");
        let reader = open(&dir.path().join("t.db")).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM bins", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
        let copied = checkpoint(&conn, "PASSIVE").unwrap();
        assert_eq!(copied.frames, copied.copied);
        wal.committed(copied.frames);
        let before = wal_len(dir.path());
        assert!(before > 0);
        let started = Instant::now();
        truncate_idle(&conn, &wal);
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(wal_len(dir.path()), before);
        assert_eq!(wal.frames(), copied.frames);
        // The writer goes on as before (its busy timeout is back), and once the reader is done
        // the next idle truncation cuts the file.
        add_bin(&conn, "c");
        reader.execute_batch("COMMIT").unwrap();
        truncate_idle(&conn, &wal);
        assert_eq!(wal_len(dir.path()), 0);
        drop(reader);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM bins", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
    }

    #[test]
    fn a_wal_grown_past_the_limit_is_cut_back_after_its_restart_and_an_ordinary_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let conn = writer(dir.path());
        conn.execute_batch("CREATE TABLE big (b BLOB)").unwrap();
        // About `pages` WAL frames in one commit: a blob of that many overflow pages (each holds
        // a page of the blob but the 4 bytes of the next one's number).
        let fill = |pages: u64| {
            conn.execute(
                "INSERT INTO big VALUES (zeroblob(?1))",
                [(pages * (DB_PAGE - 4)) as i64],
            )
            .unwrap();
        };
        let restart = |id: &str| {
            let done = checkpoint(&conn, "PASSIVE").unwrap();
            assert_eq!(done.frames, done.copied);
            // The first commit after a complete checkpoint starts the WAL over.
            add_bin(&conn, id);
        };

        // A WAL that ends a little past the restart point, as every cycle under load does:
        // the file keeps its size, so the next cycle writes over it and never extends it.
        fill(RESTART_FRAMES as u64 + CHUNK as u64 / 2);
        let ordinary = wal_len(dir.path());
        assert!(
            ordinary > wal_bytes(RESTART_FRAMES) && ordinary < WAL_FILE_LIMIT,
            "{ordinary}"
        );
        restart("a");
        assert_eq!(wal_len(dir.path()), ordinary);

        // A WAL that grew further (a stalled restart): cut back to the limit, not kept.
        fill(RESTART_FRAMES as u64 + 2 * CHUNK as u64);
        assert!(wal_len(dir.path()) > WAL_FILE_LIMIT + (1 << 20));
        restart("b");
        assert_eq!(wal_len(dir.path()), WAL_FILE_LIMIT);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM bins", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn a_checkpoint_that_saw_the_wal_restarted_counts_from_the_restart() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut c = Copier::new(t0);
        c.checkpointed(Some((0, 0)), t0);
        assert!(c.due(4100, ms(1)));
        // Between the look and the checkpoint the WAL restarted: the checkpoint saw 40 frames.
        c.checkpointed(Some((40, 40)), ms(1));
        assert!(!c.due(40 + CHUNK - 1, ms(2)));
        assert!(c.due(40 + CHUNK, ms(3)));
        // The writer held the checkpoint lock (-1): nothing known copied, so a chunk is still due.
        c.checkpointed(Some((-1, -1)), ms(3));
        assert!(c.due(40 + CHUNK, ms(4)));
        // A failed checkpoint likewise.
        c.checkpointed(None, ms(4));
        assert!(c.due(40 + CHUNK, ms(5)));
    }
}
