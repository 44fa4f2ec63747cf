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
//! Every capture waits while the writer checkpoints, so the background thread leaves it as little
//! as it can: it checkpoints back to back while the WAL grows, from the moment the WAL starts
//! over, so the writer copies only the frames of the last few milliseconds.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::storage::StoreError;

/// How often the background thread checkpoints while the WAL is quiet.
const INTERVAL: Duration = Duration::from_millis(50);
/// The pause between checkpoints while the WAL is filling fast.
const BUSY_INTERVAL: Duration = Duration::from_millis(1);
/// New frames per second that mean the WAL is filling fast (8 MiB/s).
const GROWING_RATE: f64 = 2000.0;
/// WAL frames (pages) beyond which the writer restarts the WAL: 4096 pages of 4 KiB = 16 MiB.
pub const RESTART_FRAMES: i64 = 4096;

/// The WAL's size in frames at the background thread's last checkpoint.
#[derive(Debug, Default)]
pub struct WalSize(AtomicI64);

impl WalSize {
    /// Whether the writer should checkpoint (and so restart the WAL) now.
    pub fn wants_restart(&self) -> bool {
        self.0.load(Ordering::Relaxed) >= RESTART_FRAMES
    }

    /// After the writer's checkpoint, the next write starts the WAL over.
    pub fn restarted(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Records what a background checkpoint saw: `frames` in the WAL, `copied` of them into the
    /// database. A WAL copied whole needs no checkpoint from the writer: the next write starts
    /// it over. (Recording its size made the writer checkpoint a second time right after its
    /// own, which a background checkpoint then saw whole but not yet restarted.)
    fn record(&self, frames: i64, copied: i64) {
        let uncopied = if copied >= frames { 0 } else { frames };
        self.0.store(uncopied, Ordering::Relaxed);
    }
}

pub fn open(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::open(path, e))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| StoreError::open(path, e))?;
    Ok(conn)
}

/// Checkpoints until `stop` is dropped (nothing is ever sent on it): every [`INTERVAL`], or
/// back to back while the WAL is filling fast.
pub fn run(conn: Connection, stop: Receiver<()>, wal: Arc<WalSize>) {
    let mut wait = INTERVAL;
    let mut last = 0;
    let mut last_at = Instant::now();
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(wait) {
        let started = Instant::now();
        match checkpoint(&conn, "PASSIVE") {
            // -1: the writer holds the checkpoint lock. It is restarting the WAL, which starts
            // filling again at once.
            Some((-1, _)) => wait = BUSY_INTERVAL,
            Some((frames, copied)) => {
                wal.record(frames, copied);
                let new = new_frames(last, frames);
                wait = pause(new, frames, started - last_at);
                last = frames;
                last_at = started;
            }
            None => wait = INTERVAL,
        }
    }
}

/// Frames added to the WAL between two checkpoints that saw `before` and `now` frames.
fn new_frames(before: i64, now: i64) -> i64 {
    // Fewer than before: the WAL restarted in between, and all of it is new.
    if now >= before { now - before } else { now }
}

/// The pause before the next checkpoint, from the frames `new` added in the `elapsed` time since
/// the last one and the WAL's size `now`.
///
/// Under heavy load the WAL fills in about 50 ms. Pausing a whole interval then left up to
/// 16 MiB uncopied for the writer's restart checkpoint, which stalled every capture for 10-20 ms;
/// copying back to back leaves it one pass's worth. That holds from the moment the WAL starts
/// over: pausing while the restarted WAL was still small left the first pass after each restart
/// 1,000-2,600 frames, 16-28 ms of copying, and writes that met it took 10-25 ms
/// (bench/RESULTS.md, 2026-12-01). A WAL that stopped growing (the server went idle) needs no
/// hurry: checkpointing it every millisecond cost 4% of a core doing nothing.
fn pause(new: i64, now: i64, elapsed: Duration) -> Duration {
    let rate = new as f64 / elapsed.as_secs_f64().max(1e-6);
    if rate >= GROWING_RATE || (now >= RESTART_FRAMES / 4 && new > 0) {
        BUSY_INTERVAL
    } else {
        INTERVAL
    }
}

/// Runs `PRAGMA wal_checkpoint(mode)`; the WAL's size in frames and how many of them are now
/// copied into the database (-1 and -1 when another connection was checkpointing).
pub fn checkpoint(conn: &Connection, mode: &str) -> Option<(i64, i64)> {
    let started = Instant::now();
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match result {
        Ok((frames, copied)) => {
            let took_us = started.elapsed().as_micros() as u64;
            tracing::trace!(mode, frames, copied, took_us, "checkpoint");
            Some((frames, copied))
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
    fn checkpoints_hurry_only_while_the_wal_grows() {
        let ms = Duration::from_millis;
        let pause = |before, now, elapsed| pause(new_frames(before, now), now, elapsed);
        // Quiet: a few frames since the last pass, or none, whatever the size.
        assert_eq!(pause(0, 10, INTERVAL), INTERVAL);
        assert_eq!(pause(100, 150, ms(50)), INTERVAL);
        assert_eq!(pause(5000, 5000, ms(2)), INTERVAL);
        // Growing fast (2000 frames a second or more), from a small WAL too (just restarted
        // under load): 5 frames in 2 ms is 2500 a second.
        assert_eq!(pause(100, 105, ms(2)), BUSY_INTERVAL);
        assert_eq!(pause(4000, 300, ms(50)), BUSY_INTERVAL);
        // A large WAL that grew at all.
        assert_eq!(pause(2000, 2001, ms(50)), BUSY_INTERVAL);
    }

    #[test]
    fn the_writer_checkpoints_a_large_wal_only_while_part_of_it_is_uncopied() {
        let wal = WalSize::default();
        wal.record(RESTART_FRAMES + 10, RESTART_FRAMES - 100);
        assert!(wal.wants_restart());
        // The writer's checkpoint copied it all; a background checkpoint before the next write
        // sees the same frames, every one copied.
        wal.restarted();
        wal.record(RESTART_FRAMES + 10, RESTART_FRAMES + 10);
        assert!(!wal.wants_restart());
        // A small WAL never asks for it.
        wal.record(50, 10);
        assert!(!wal.wants_restart());
    }
}
