//! WAL checkpoints on a thread of their own.
//!
//! By default SQLite checkpoints inside the COMMIT that pushes the WAL past 1000 pages, so one
//! capture in a few hundred waits for megabytes to be copied (and, with `synchronous=NORMAL`, for
//! the only fsyncs there are). The writer turns that off (`wal_autocheckpoint = 0`) and this thread
//! runs PASSIVE checkpoints instead: they copy what they can without ever blocking the writer.
//! On shutdown, once the writer has finished, a TRUNCATE checkpoint leaves a compact database file.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::StoreError;

/// How often to checkpoint. Under full load the WAL grows by a few MB in this time.
const INTERVAL: Duration = Duration::from_millis(200);

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

/// Checkpoints every [`INTERVAL`] until `stop` is dropped, then truncates the WAL.
pub fn run(conn: Connection, stop: Receiver<()>) {
    // Nothing is ever sent: the sender is dropped to stop.
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(INTERVAL) {
        checkpoint(&conn, "PASSIVE");
    }
    checkpoint(&conn, "TRUNCATE");
}

fn checkpoint(conn: &Connection, mode: &str) {
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match result {
        Ok((wal_pages, copied)) => {
            tracing::trace!(mode, wal_pages, copied, "checkpoint");
        }
        Err(e) => tracing::warn!(mode, cause = %e, "WAL checkpoint failed; will retry"),
    }
}
