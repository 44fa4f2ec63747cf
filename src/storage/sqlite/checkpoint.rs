//! WAL checkpoints, split between a background thread and the writer.
//!
//! Copying the WAL back into the database file (and the fsyncs that go with it under
//! `synchronous=NORMAL`) is heavy, so a background thread does it, with PASSIVE checkpoints that
//! never block the writer. But a checkpoint on another connection can never finish while the
//! writer keeps appending, and the WAL only restarts from its beginning after a checkpoint that
//! copied everything: left alone, the WAL grows without bound (measured: 2.2 GB after a minute of
//! load). So when the WAL passes [`RESTART_FRAMES`], the writer runs one checkpoint itself,
//! between batches and after answering their callers. Nothing appends during it, and the
//! background thread, which checkpoints back to back while the WAL fills fast, has already
//! copied all but the last pass's frames, so it is short, and the next write starts the WAL
//! over.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::storage::StoreError;

/// How often the background thread checkpoints.
const INTERVAL: Duration = Duration::from_millis(50);
/// The pause between checkpoints while the WAL is filling fast.
const BUSY_INTERVAL: Duration = Duration::from_millis(1);
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
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(wait) {
        if let Some(frames) = checkpoint(&conn, "PASSIVE") {
            wal.0.store(frames, Ordering::Relaxed);
            wait = pause(last, frames);
            last = frames;
        }
    }
}

/// The pause before the next checkpoint, from the WAL's size in frames at the last two.
///
/// Under heavy load the WAL fills in about 50 ms. Pausing a whole interval then left up to
/// 16 MiB uncopied for the writer's restart checkpoint, which stalled every capture for 10-20 ms;
/// copying back to back leaves it one pass's worth. A large WAL that stopped growing (the server
/// went idle) needs no hurry: checkpointing it every millisecond cost 4% of a core doing nothing.
fn pause(before: i64, now: i64) -> Duration {
    if now >= RESTART_FRAMES / 4 && now != before {
        BUSY_INTERVAL
    } else {
        INTERVAL
    }
}

/// Runs `PRAGMA wal_checkpoint(mode)`; the WAL's size in frames.
pub fn checkpoint(conn: &Connection, mode: &str) -> Option<i64> {
    let started = std::time::Instant::now();
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match result {
        Ok((frames, copied)) => {
            let took_us = started.elapsed().as_micros() as u64;
            tracing::trace!(mode, frames, copied, took_us, "checkpoint");
            Some(frames)
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
    fn checkpoints_hurry_only_while_a_large_wal_grows() {
        // Small WAL: no hurry, growing or not.
        assert_eq!(pause(0, 100), INTERVAL);
        // Large and growing (or restarted and grown large again): back to back.
        assert_eq!(pause(2000, 3000), BUSY_INTERVAL);
        assert_eq!(pause(4000, 1500), BUSY_INTERVAL);
        // Large but unchanged since the last pass: the writer is idle.
        assert_eq!(pause(5000, 5000), INTERVAL);
    }
}
