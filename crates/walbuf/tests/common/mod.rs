//! What the VFS's test files share.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// A writer through walbuf, set up like hookbin's: `setup` first (what must come before the
/// first table, such as `auto_vacuum`), then WAL, `synchronous = NORMAL`, no automatic
/// checkpoints, a cache of `cache_pages` pages; and a table `t` with an index on `k`.
pub fn writer(path: &Path, setup: &str, cache_pages: i64) -> Connection {
    let conn = Connection::open_with_flags_and_vfs(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        walbuf::register().expect("register the VFS"),
    )
    .unwrap();
    conn.execute_batch(setup).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch(&format!(
        "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = {cache_pages};
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v BLOB NOT NULL);
         CREATE INDEX IF NOT EXISTS t_k ON t (k);"
    ))
    .unwrap();
    conn
}
