//! Opening the database: per-connection pragmas, and `schema.sql` applied to a new file.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{StoreError, Synchronous};

/// The top-level `schema.sql`, compiled in so that one binary deploys.
pub const SCHEMA_SQL: &str = include_str!("../../schema.sql");
/// Bytes a WAL file is cut back to after a checkpoint (64 MiB).
const WAL_SIZE_LIMIT: u64 = 64 * 1024 * 1024;
/// `PRAGMA user_version` of a database made by this binary.
pub const SCHEMA_VERSION: i64 = 1;

/// Opens (creating if needed) the write connection and brings the schema up to date.
pub fn open_writer(path: &Path, sync: Synchronous) -> Result<Connection, StoreError> {
    let open = |e| StoreError::open(path, e);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(open)?;
    // Pragmas first and outside any transaction: journal_mode cannot change inside one.
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(open)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Open {
            path: path.display().to_string(),
            reason: format!("cannot switch to WAL mode (journal_mode is {mode})"),
        });
    }
    let sync = match sync {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    // wal_autocheckpoint = 0: checkpoints run beside the writer and between its batches (see
    // checkpoint.rs), not inside whichever capture's COMMIT crosses the threshold.
    // journal_size_limit: a WAL that a burst made large is cut back after the next checkpoint.
    // temp_store = MEMORY: a statement that changes many rows (eviction, reaping) keeps a journal
    // of the pages it touched, to undo itself if it fails midway; past 64 KiB SQLite spilled it
    // to a temporary file, opened and closed once per batch under load.
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;
         PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}; PRAGMA temp_store = MEMORY;"
    ))
    .map_err(open)?;
    migrate(&conn).map_err(|e| match e {
        StoreError::Sqlite(e) => StoreError::open(path, e),
        other => other,
    })?;
    Ok(conn)
}

/// A read-only connection for the read pool.
pub fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let open = |e| StoreError::open(path, e);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(open)?;
    Ok(conn)
}

fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    match version {
        SCHEMA_VERSION => Ok(()),
        0 => {
            let has_tables: bool = conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table')",
                [],
                |r| r.get(0),
            )?;
            if has_tables {
                return Err(StoreError::Schema(
                    "the file holds tables but no hookbin schema version; is it another program's database?".into(),
                ));
            }
            conn.execute_batch(&format!(
                "BEGIN; {SCHEMA_SQL}; PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))?;
            Ok(())
        }
        v if v > SCHEMA_VERSION => Err(StoreError::Schema(format!(
            "schema version {v} is newer than this hookbin understands ({SCHEMA_VERSION}); upgrade hookbin"
        ))),
        v => Err(StoreError::Schema(format!(
            "schema version {v} has no upgrade path"
        ))),
    }
}
