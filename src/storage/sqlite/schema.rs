//! Opening the database: per-connection pragmas, `schema.sql` applied to a new file, and the
//! migrations that bring a file made by an older hookbin up to date.
//!
//! The version is SQLite's `PRAGMA user_version`. A new file gets `schema.sql` (always the full
//! current schema) and [`SCHEMA_VERSION`] in one transaction. An older file runs each step of
//! [`MIGRATIONS`] above its version, in order, each in a transaction of its own that also sets
//! the version it reaches: a failed step leaves the file at the previous version, whole.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::storage::{StoreError, Synchronous};

/// The top-level `schema.sql`, compiled in so that one binary deploys.
pub const SCHEMA_SQL: &str = include_str!("../../../schema.sql");
/// The write connection's page cache, in KiB (SQLite's default is 2000 KiB, which readers keep).
///
/// Captures round-robin over many bins touch, in every batch, the `(bin_id, seq)` index leaf
/// each bin appends to, the interior pages above it, and the bins' rows. Over 1000 bins that is
/// about 1000 leaves plus some 500 interior pages once the index holds 5M entries (~6 MiB),
/// three times the default cache: the writer then read 2.2 pages per capture back from the OS
/// (`bench/growth.sh`, 5M requests in 1000 bins), and 0.4 with this cache. It only fills with
/// pages the writer touched, and RSS counts what it holds (peak RSS +14 MiB in that run).
const WRITER_CACHE_KIB: u32 = 16 * 1024;
/// `PRAGMA user_version` of a database made by this binary.
pub const SCHEMA_VERSION: i64 = 9;

/// One step up, from version `to - 1` to `to`.
struct Migration {
    to: i64,
    /// Runs inside the step's transaction, with foreign keys off (SQLite's procedure for
    /// rebuilding a table); `PRAGMA foreign_key_check` must find nothing before it commits.
    sql: &'static str,
    what: &'static str,
    rewrite: Rewrite,
}

/// Whether and where a step copies the stored requests.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rewrite {
    /// The step changes the schema and a few rows in place.
    No,
    /// The step copies the requests into a new table of the same file: until it drops the old
    /// one, the file grows by about the size of its rows, and it keeps that size afterwards (the
    /// old pages become free pages).
    InPlace,
    /// The step writes every table into a new file beside the database (`sql` creates them in
    /// the schema `new` from those of `main`), which then takes the database's name: the file
    /// ends up its data's size, with no free pages, and the copy needs no journal.
    IntoNewFile,
}

/// Every upgrade, oldest first; the last one reaches [`SCHEMA_VERSION`]. A step is history: it
/// is never edited once released, and its SQL spells out the tables as they were at its version
/// (schema.sql only ever describes the newest).
const MIGRATIONS: &[Migration] = &[
    Migration {
        to: 2,
        sql: V1_TO_V2,
        what: "per-bin request ids",
        rewrite: Rewrite::InPlace,
    },
    Migration {
        to: 3,
        sql: V2_TO_V3,
        what: "bytes stored per bin",
        rewrite: Rewrite::No,
    },
    Migration {
        to: 4,
        sql: V3_TO_V4,
        what: "private bins",
        rewrite: Rewrite::No,
    },
    Migration {
        to: 5,
        sql: V4_TO_V5,
        what: "the response sent to each capture",
        rewrite: Rewrite::No,
    },
    Migration {
        to: 6,
        sql: V5_TO_V6,
        what: "compressed bodies",
        rewrite: Rewrite::No,
    },
    Migration {
        to: 7,
        sql: V6_TO_V7,
        what: "request slots (each bin's rows reused in place)",
        rewrite: Rewrite::InPlace,
    },
    Migration {
        to: 8,
        sql: V7_TO_V8,
        what: "each bin's answers stored once",
        rewrite: Rewrite::No,
    },
    Migration {
        to: 9,
        sql: V8_TO_V9,
        what: "requests name their bin by its number",
        rewrite: Rewrite::IntoNewFile,
    },
];

/// v9: each bin has a number (`bins.num`), and its requests and answers name it by that instead
/// of its text id: the requests' index holds (integer, slot) rather than (22 characters, slot).
/// All three tables are written into a new file (the schema `new`, see [`Rewrite::IntoNewFile`])
/// and every row is copied once, in row order, keeping its row id, so request ids, slots and the
/// reaper's walk in row order are as before. Bins are numbered in the order they were created.
/// (Released first as a rebuild in place, which left the file twice its data's size.)
const V8_TO_V9: &str = "
CREATE TABLE new.bins (
    num           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    response      TEXT,
    request_count INTEGER NOT NULL DEFAULT 0,
    last_request_id INTEGER NOT NULL DEFAULT 0,
    bytes_used    INTEGER NOT NULL DEFAULT 0,
    view_token_hash BLOB,
    ring          INTEGER NOT NULL DEFAULT 0
);
INSERT INTO new.bins (id, created_at, expires_at, response, request_count, last_request_id,
        bytes_used, view_token_hash, ring)
    SELECT id, created_at, expires_at, response, request_count, last_request_id, bytes_used,
        view_token_hash, ring
    FROM main.bins ORDER BY created_at, id;
CREATE INDEX new.bins_by_expiry ON bins (expires_at);
CREATE TABLE new.bin_requests (
    id             INTEGER PRIMARY KEY,
    bin_num        INTEGER NOT NULL REFERENCES bins (num) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    slot           INTEGER NOT NULL,
    received_at    INTEGER NOT NULL,
    method         TEXT    NOT NULL,
    path           TEXT    NOT NULL,
    subpath        TEXT    NOT NULL,
    query          TEXT    NOT NULL,
    content_type   TEXT,
    body_size      INTEGER NOT NULL,
    body_truncated INTEGER NOT NULL,
    remote_addr    TEXT    NOT NULL,
    http_version   TEXT    NOT NULL,
    headers        BLOB    NOT NULL,
    body           BLOB    NOT NULL,
    response       TEXT,
    body_codec     INTEGER NOT NULL DEFAULT 0,
    response_n     INTEGER
);
INSERT INTO new.bin_requests (id, bin_num, seq, slot, received_at, method, path, subpath, query,
        content_type, body_size, body_truncated, remote_addr, http_version, headers, body,
        response, body_codec, response_n)
    SELECT r.id, b.num, r.seq, r.slot, r.received_at, r.method, r.path, r.subpath, r.query,
        r.content_type, r.body_size, r.body_truncated, r.remote_addr, r.http_version, r.headers,
        r.body, r.response, r.body_codec, r.response_n
    FROM main.bin_requests r JOIN new.bins b ON b.id = r.bin_id ORDER BY r.id;
CREATE UNIQUE INDEX new.bin_requests_by_bin ON bin_requests (bin_num, slot);
CREATE TABLE new.bin_responses (
    bin_num INTEGER NOT NULL REFERENCES bins (num) ON DELETE CASCADE,
    n       INTEGER NOT NULL,
    record  TEXT    NOT NULL,
    PRIMARY KEY (bin_num, n)
) WITHOUT ROWID;
INSERT INTO new.bin_responses (bin_num, n, record)
    SELECT b.num, a.n, a.record FROM main.bin_responses a JOIN new.bins b ON b.id = a.bin_id;
";

/// v8: the answers a bin's captures got are stored once per bin (`bin_responses`), and a request
/// names its answer there (`bin_requests.response_n`). Existing requests keep theirs in their own
/// row (`response`), which every read still looks at first: nothing is copied.
const V7_TO_V8: &str = "
ALTER TABLE bin_requests ADD COLUMN response_n INTEGER;
CREATE TABLE bin_responses (
    bin_id TEXT    NOT NULL REFERENCES bins (id) ON DELETE CASCADE,
    n      INTEGER NOT NULL,
    record TEXT    NOT NULL,
    PRIMARY KEY (bin_id, n)
) WITHOUT ROWID;
";

/// v7: each request has a slot in its bin's ring (`bin_requests.slot`, `bins.ring`; see
/// `storage/sqlite/ring.rs`), and the index goes by slot. Existing requests keep their id as
/// their slot, and their bins an unbounded ring (9223372036854775807): such a bin evicts by
/// deleting, as before, until it expires. A bin without requests gets its ring at its next
/// capture, like a new one. The table is rebuilt, as for v2, so that `slot` sits before the
/// bodies; every row is copied once.
const V6_TO_V7: &str = "
ALTER TABLE bins ADD COLUMN ring INTEGER NOT NULL DEFAULT 0;
UPDATE bins SET ring = 9223372036854775807
    WHERE EXISTS (SELECT 1 FROM bin_requests WHERE bin_id = bins.id);
ALTER TABLE bin_requests RENAME TO bin_requests_v6;
DROP INDEX bin_requests_by_bin;
CREATE TABLE bin_requests (
    id             INTEGER PRIMARY KEY,
    bin_id         TEXT    NOT NULL REFERENCES bins (id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    slot           INTEGER NOT NULL,
    received_at    INTEGER NOT NULL,
    method         TEXT    NOT NULL,
    path           TEXT    NOT NULL,
    subpath        TEXT    NOT NULL,
    query          TEXT    NOT NULL,
    content_type   TEXT,
    body_size      INTEGER NOT NULL,
    body_truncated INTEGER NOT NULL,
    remote_addr    TEXT    NOT NULL,
    http_version   TEXT    NOT NULL,
    headers        BLOB    NOT NULL,
    body           BLOB    NOT NULL,
    response       TEXT,
    body_codec     INTEGER NOT NULL DEFAULT 0
);
INSERT INTO bin_requests (id, bin_id, seq, slot, received_at, method, path, subpath, query,
        content_type, body_size, body_truncated, remote_addr, http_version, headers, body,
        response, body_codec)
    SELECT id, bin_id, seq, seq, received_at, method, path, subpath, query,
        content_type, body_size, body_truncated, remote_addr, http_version, headers, body,
        response, body_codec
    FROM bin_requests_v6 ORDER BY id;
DROP TABLE bin_requests_v6;
CREATE UNIQUE INDEX bin_requests_by_bin ON bin_requests (bin_id, slot);
";

/// v6: a body may be stored compressed; `bin_requests.body_codec` says how (see
/// `storage/sqlite/body.rs`). Every existing body is stored as received (0).
const V5_TO_V6: &str = "ALTER TABLE bin_requests ADD COLUMN body_codec INTEGER NOT NULL DEFAULT 0;";

/// v5: each request keeps the response hookbin sent (`bin_requests.response`, JSON; issue 12).
/// Requests captured before have none (NULL): what was answered then is not known.
const V4_TO_V5: &str = "ALTER TABLE bin_requests ADD COLUMN response TEXT;";

/// v4: a private bin keeps the SHA-256 of its view token; existing bins stay public (NULL).
const V3_TO_V4: &str = "ALTER TABLE bins ADD COLUMN view_token_hash BLOB;";

/// v3: each bin keeps the bytes its requests store (`bins.bytes_used`), so `--max-bin-bytes`
/// costs no SUM per capture; existing bins are counted once here.
const V2_TO_V3: &str = "
ALTER TABLE bins ADD COLUMN bytes_used INTEGER NOT NULL DEFAULT 0;
UPDATE bins SET bytes_used = (
    SELECT coalesce(sum(length(body) + length(headers)), 0) FROM bin_requests
    WHERE bin_requests.bin_id = bins.id);
";

/// v2: request ids count per bin (`bin_requests.seq`) instead of one sequence for the whole
/// server, which told every sender how much traffic the instance had. Existing rows keep their
/// old id as their `seq`, so every request URL, cursor and Last-Event-ID issued before stays
/// valid, and each bin continues above the highest id it ever gave. The table is rebuilt rather
/// than altered: `ADD COLUMN` would put `seq` after the body, and listing summaries would then
/// read every body's overflow pages to reach it.
const V1_TO_V2: &str = "
ALTER TABLE bin_requests RENAME TO bin_requests_v1;
DROP INDEX bin_requests_by_bin;
CREATE TABLE bin_requests (
    id             INTEGER PRIMARY KEY,
    bin_id         TEXT    NOT NULL REFERENCES bins (id) ON DELETE CASCADE,
    seq            INTEGER NOT NULL,
    received_at    INTEGER NOT NULL,
    method         TEXT    NOT NULL,
    path           TEXT    NOT NULL,
    subpath        TEXT    NOT NULL,
    query          TEXT    NOT NULL,
    content_type   TEXT,
    body_size      INTEGER NOT NULL,
    body_truncated INTEGER NOT NULL,
    remote_addr    TEXT    NOT NULL,
    http_version   TEXT    NOT NULL,
    headers        BLOB    NOT NULL,
    body           BLOB    NOT NULL
);
INSERT INTO bin_requests (id, bin_id, seq, received_at, method, path, subpath, query,
        content_type, body_size, body_truncated, remote_addr, http_version, headers, body)
    SELECT id, bin_id, id, received_at, method, path, subpath, query,
        content_type, body_size, body_truncated, remote_addr, http_version, headers, body
    FROM bin_requests_v1 WHERE bin_id IN (SELECT id FROM bins);
DROP TABLE bin_requests_v1;
CREATE UNIQUE INDEX bin_requests_by_bin ON bin_requests (bin_id, seq);
UPDATE bins SET last_request_id = max(last_request_id,
    coalesce((SELECT max(seq) FROM bin_requests WHERE bin_id = bins.id), 0));
";

/// Opens a connection that writes (the writer's, the checkpoint thread's) through walbuf: it
/// hands each commit's WAL frames to the kernel in one write rather than two per page, and a
/// checkpoint's copy in runs of pages (crates/walbuf). Readers see the same files through the
/// default VFS. Where walbuf cannot be registered (not Unix), the default VFS does the same job
/// with more system calls.
pub(super) fn open_through_walbuf(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    match walbuf::register() {
        Ok(vfs) => Connection::open_with_flags_and_vfs(path, flags, vfs),
        Err(_) => Connection::open_with_flags(path, flags),
    }
}

/// Opens (creating if needed) the write connection and brings the schema up to date.
pub fn open_writer(path: &Path, sync: Synchronous) -> Result<Connection, StoreError> {
    open_writer_with(path, sync, &disk_free)
}

/// [`open_writer`], asking `free_space` how many bytes the disk holding a file has free.
fn open_writer_with(
    path: &Path,
    sync: Synchronous,
    free_space: FreeSpace,
) -> Result<Connection, StoreError> {
    let open = |e| StoreError::open(path, e);
    create_private(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = open_through_walbuf(path, flags).map_err(open)?;
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
    let sync_pragma = match sync {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    // wal_autocheckpoint = 0: checkpoints run beside the writer and between its batches (see
    // checkpoint.rs), not inside whichever capture's COMMIT crosses the threshold.
    // journal_size_limit: a WAL that a burst or a stalled disk made large is cut back after the
    // next restart (see checkpoint::WAL_FILE_LIMIT).
    // temp_store = MEMORY: a statement that changes many rows (eviction, reaping) keeps a journal
    // of the pages it touched, to undo itself if it fails midway; past 64 KiB SQLite spilled it
    // to a temporary file, opened and closed once per batch under load.
    // cache_size: see WRITER_CACHE_KIB (negative: in KiB rather than pages).
    let wal_limit = super::checkpoint::WAL_FILE_LIMIT;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync_pragma}; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;
         PRAGMA journal_size_limit = {wal_limit}; PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -{WRITER_CACHE_KIB};"
    ))
    .map_err(open)?;
    let migrated = migrate(&conn, path, free_space).map_err(|e| match e {
        StoreError::Sqlite(e) => StoreError::open(path, e),
        other => other,
    })?;
    match migrated {
        Migrated::Ready => Ok(conn),
        Migrated::Replaced => {
            drop(conn);
            open_writer_with(path, sync, free_space)
        }
    }
}

/// Creates a missing database file readable and writable by its owner only (0600), whatever
/// the umask: it holds other people's webhooks and their secrets. SQLite gives the `-wal` and
/// `-shm` files it creates next to it the same mode. An existing file keeps the mode its
/// operator gave it.
fn create_private(path: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        let failed = |e: std::io::Error| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        match created {
            // The umask may only have taken bits away; set the mode exactly.
            Ok(file) => file
                .set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(failed)?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(failed(e)),
        }
    }
    Ok(())
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

/// How many bytes the disk holding a file has free (a parameter so that tests can say).
type FreeSpace<'a> = &'a dyn Fn(&Path) -> std::io::Result<u64>;

/// The bytes an unprivileged process may still write on the file system holding `path`
/// (statvfs's `f_bavail`: root may have a few percent more).
fn disk_free(path: &Path) -> std::io::Result<u64> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let fs = rustix::fs::statvfs(dir)?;
    Ok(fs.f_bavail.saturating_mul(fs.f_frsize))
}

/// What [`migrate`] did to the file.
#[derive(Debug, PartialEq, Eq)]
enum Migrated {
    /// The connection's file holds the current schema (made, upgraded in place, or as it was).
    Ready,
    /// A step wrote a new file under the database's name: the connection still holds the old,
    /// unlinked one, and the caller opens the path again (which runs any later step).
    Replaced,
}

fn migrate(conn: &Connection, path: &Path, free_space: FreeSpace) -> Result<Migrated, StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    match version {
        SCHEMA_VERSION => Ok(Migrated::Ready),
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
            Ok(Migrated::Ready)
        }
        v if v > SCHEMA_VERSION => Err(StoreError::Schema(format!(
            "schema version {v} is newer than this hookbin understands ({SCHEMA_VERSION}); upgrade hookbin"
        ))),
        v => {
            let steps: Vec<&Migration> = MIGRATIONS.iter().filter(|m| m.to > v).collect();
            check_room(conn, path, v, &steps, free_space)?;
            let (at, migrated) = in_rollback_journal(conn, || {
                let mut at = v;
                for step in steps {
                    if step.to != at + 1 {
                        break;
                    }
                    let migrated = upgrade(conn, path, step)?;
                    tracing::info!(
                        from = at,
                        to = step.to,
                        "database schema upgraded: {}",
                        step.what
                    );
                    at = step.to;
                    if migrated == Migrated::Replaced {
                        return Ok((at, migrated));
                    }
                }
                Ok((at, Migrated::Ready))
            })?;
            if at == SCHEMA_VERSION || migrated == Migrated::Replaced {
                Ok(migrated)
            } else {
                Err(StoreError::Schema(format!(
                    "schema version {v} has no upgrade path"
                )))
            }
        }
    }
}

/// Refuses, before it starts, an upgrade that would run out of disk space. Without this the
/// upgrade copies rows until the disk is full, rolls back (after minutes, on a large file), and
/// meanwhile leaves no room for anything else on that disk.
fn check_room(
    conn: &Connection,
    path: &Path,
    from: i64,
    steps: &[&Migration],
    free_space: FreeSpace,
) -> Result<(), StoreError> {
    let needed = room_needed(conn, steps)?;
    if needed == 0 {
        return Ok(());
    }
    match free_space(path) {
        Ok(free) if free < needed => Err(StoreError::Schema(format!(
            "upgrading the schema from version {from} to {SCHEMA_VERSION} copies the stored \
             requests and needs about {} MiB free on the disk holding {}, which has {} MiB free; \
             free some space or move the file to a larger disk, then start hookbin again (the \
             file is unchanged)",
            needed.div_ceil(MIB),
            path.display(),
            free / MIB,
        ))),
        Ok(_) => Ok(()),
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(),
                "cannot tell the free disk space before upgrading the schema; upgrading anyway");
            Ok(())
        }
    }
}

const MIB: u64 = 1024 * 1024;

/// The bytes `steps` add to the disk at their peak. A copy takes the live pages once more, plus
/// a sixteenth for the rollback journal (the old content of the pages a step changes) and the
/// new indexes. A copy in place takes the file's free pages first (and a second one reuses the
/// first one's); a copy into a new file cannot, and the old file stays until the new one is
/// complete. Measured: a version-8 file of 1,329 MiB (a million requests) grew by 1,295 MiB with
/// a journal of 25 MiB at its peak when version 9 was a copy in place (bench/RESULTS.md,
/// 2026-12-06 17:15).
fn room_needed(conn: &Connection, steps: &[&Migration]) -> rusqlite::Result<u64> {
    let size = asked_size(conn)?;
    let live = size.bytes_in_use();
    let copy = live + live / 16;
    let does = |kind: Rewrite| steps.iter().any(|m| m.rewrite == kind);
    let in_place = if does(Rewrite::InPlace) {
        copy.saturating_sub(u64::from(size.free_pages) * u64::from(size.page_size))
    } else {
        0
    };
    let new_file = if does(Rewrite::IntoNewFile) { copy } else { 0 };
    Ok(in_place + new_file)
}

/// The database's size as SQLite reads it (in a read transaction of its own outside one).
pub(super) fn asked_size(conn: &Connection) -> rusqlite::Result<walbuf::Size> {
    conn.prepare_cached(
        "SELECT c.page_count, f.freelist_count, s.page_size
           FROM pragma_page_count() AS c, pragma_freelist_count() AS f, pragma_page_size() AS s",
    )?
    .query_row([], |r| {
        Ok(walbuf::Size {
            pages: r.get(0)?,
            free_pages: r.get(1)?,
            page_size: r.get(2)?,
        })
    })
}

/// Gives the new file the old one's owner and group, as the copy in place kept them: an upgrade
/// run as root over a service user's file would otherwise leave that user a file it cannot open.
/// Only root may give a file away; anyone else makes files that are theirs already, so a refusal
/// is logged and the upgrade goes on.
#[cfg(unix)]
fn keep_owner(new: &Path, old: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    if let Err(e) = std::os::unix::fs::chown(new, Some(old.uid()), Some(old.gid())) {
        tracing::warn!(error = %e, file = %new.display(), uid = old.uid(), gid = old.gid(),
            "cannot give the upgraded database file its old owner");
    }
}

#[cfg(not(unix))]
fn keep_owner(_new: &Path, _old: &std::fs::Metadata) {}

/// Runs the schema upgrades with a rollback journal instead of the WAL, then goes back to WAL.
///
/// A step that rebuilt the tables in place wrote every row into new pages. Through the WAL each
/// of them went to the disk twice (into the WAL, then copied into the file), and the WAL of that
/// one transaction grew as large as the data (6.6 GB beside a 6.7 GB file, bench/RESULTS.md
/// 2026-12-06 12:52). A rollback journal keeps only the old content of pages that existed and
/// changed (the schema, the free list): new pages past the file's old end need no undo. A crash
/// midway leaves a hot journal, which the next open rolls back before anything reads the file.
/// `synchronous = FULL` meanwhile: with a rollback journal, NORMAL may leave a damaged file after
/// a power cut at the wrong moment (SQLite's documentation of the pragma). A step that writes a
/// new file needs the old one out of WAL mode too: its `-wal` file would otherwise be read as the
/// new file's. When the file was replaced, the connection (to the old one) stays as it is.
fn in_rollback_journal(
    conn: &Connection,
    run: impl FnOnce() -> Result<(i64, Migrated), StoreError>,
) -> Result<(i64, Migrated), StoreError> {
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    // Leaving WAL mode needs the file to itself: while another connection has it open, SQLite
    // answers "database is locked" (or keeps the old mode).
    let refused = |why: String| {
        StoreError::Schema(format!(
            "cannot leave WAL mode to upgrade the schema ({why}); is another process using the \
             database?"
        ))
    };
    let mode: String = conn
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .map_err(|e| refused(e.to_string()))?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(refused(format!("journal_mode is {mode}")));
    }
    conn.execute_batch("PRAGMA synchronous = FULL")?;
    let result = run();
    if matches!(result, Ok((_, Migrated::Replaced))) {
        return result;
    }
    let back: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.execute_batch(&format!("PRAGMA synchronous = {sync}"))?;
    if !back.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Schema(format!(
            "cannot go back to WAL mode after upgrading the schema (journal_mode is {back})"
        )));
    }
    result
}

/// Runs one migration step, foreign keys off meanwhile.
fn upgrade(conn: &Connection, path: &Path, step: &Migration) -> Result<Migrated, StoreError> {
    // foreign_keys cannot change inside a transaction; it is set back whatever happens.
    conn.execute_batch("PRAGMA foreign_keys = OFF")?;
    let result = match step.rewrite {
        Rewrite::IntoNewFile => into_new_file(conn, path, step).map(|()| Migrated::Replaced),
        Rewrite::No | Rewrite::InPlace => {
            in_transaction(conn, "main", step).map(|()| Migrated::Ready)
        }
    };
    conn.execute_batch("PRAGMA foreign_keys = ON")?;
    result
}

/// A step in a transaction of its own that also sets the version of `schema` (the connection's
/// file, `main`, or the attached new file, `new`), rolled back if it fails.
fn in_transaction(conn: &Connection, schema: &str, step: &Migration) -> Result<(), StoreError> {
    let result = (|| {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {}; PRAGMA {schema}.user_version = {};",
            step.sql, step.to
        ))?;
        no_dangling_rows(conn, schema, step.to)?;
        conn.execute_batch("COMMIT")?;
        Ok(())
    })();
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

fn no_dangling_rows(conn: &Connection, schema: &str, to: i64) -> Result<(), StoreError> {
    let dangling: i64 = conn.query_row(
        "SELECT count(*) FROM pragma_foreign_key_check(NULL, ?1)",
        [schema],
        |r| r.get(0),
    )?;
    if dangling > 0 {
        return Err(StoreError::Schema(format!(
            "upgrading to schema version {to} left {dangling} rows without their bin"
        )));
    }
    Ok(())
}

/// A step that writes its tables into a new file, `<file>.upgrade-<version>` beside the
/// database, with neither journal nor syncs while it fills (a failure or a crash leaves the
/// database as it was and the new file to be deleted: by this function, or by the next start),
/// then syncs it and renames it over the database. The rename is atomic: a crash leaves either
/// file whole under the name. The new file gets the old one's permissions (and owner: see
/// [`keep_owner`]).
fn into_new_file(conn: &Connection, path: &Path, step: &Migration) -> Result<(), StoreError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        StoreError::Schema(format!(
            "upgrading to schema version {}: {what}: {e}",
            step.to
        ))
    };
    // SQLite follows a link to the file it opens; the new file goes beside that one.
    let target = std::fs::canonicalize(path).map_err(|e| failed("finding the file", &e))?;
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".upgrade-{}", step.to));
    let new = target.with_file_name(name);
    let new_text = new.to_str().ok_or_else(|| {
        failed(
            "naming the new file",
            &format!("{} is not UTF-8", new.display()),
        )
    })?;
    match std::fs::remove_file(&new) {
        Ok(()) => tracing::info!(file = %new.display(), "removed an interrupted upgrade's file"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(&format!("removing {}", new.display()), &e)),
    }
    let old =
        std::fs::metadata(&target).map_err(|e| failed("reading the file's permissions", &e))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&new)
        .and_then(|f| f.set_permissions(old.permissions()))
        .map_err(|e| failed(&format!("creating {}", new.display()), &e))?;
    keep_owner(&new, &old);
    let copied = (|| {
        conn.execute("ATTACH DATABASE ?1 AS new", [new_text])?;
        let result = conn
            .execute_batch("PRAGMA new.journal_mode = OFF; PRAGMA new.synchronous = OFF;")
            .map_err(StoreError::from)
            .and_then(|()| in_transaction(conn, "new", step));
        conn.execute_batch("DETACH DATABASE new")?;
        result
    })();
    let placed = copied.and_then(|()| {
        std::fs::File::open(&new)
            .and_then(|f| f.sync_all())
            .map_err(|e| failed("syncing the new file", &e))?;
        std::fs::rename(&new, &target).map_err(|e| failed("renaming the new file", &e))?;
        if let Some(dir) = target.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| failed("syncing the directory", &e))?;
        }
        Ok(())
    });
    if placed.is_err() {
        let _ = std::fs::remove_file(&new);
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `schema.sql` as hookbin 0.1 shipped it (version 1), kept verbatim.
    const SCHEMA_V1: &str = include_str!("../../../tests/data/schema-v1.sql");

    /// Columns, indexes and foreign keys of every table, as SQLite reports them.
    fn shape(conn: &Connection) -> Vec<String> {
        let rows = |sql: &str| -> Vec<String> {
            let mut stmt = conn.prepare(sql).unwrap();
            let n = stmt.column_count();
            stmt.query_map([], |row| {
                Ok((0..n)
                    .map(|i| format!("{:?}", row.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect::<Vec<_>>()
                    .join(" "))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        let mut out = Vec::new();
        for table in ["bins", "bin_requests", "bin_responses"] {
            out.extend(rows(&format!("SELECT * FROM pragma_table_info('{table}')")));
            out.extend(rows(&format!(
                "SELECT * FROM pragma_foreign_key_list('{table}')"
            )));
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT name FROM pragma_index_list('{table}') ORDER BY name"
                ))
                .unwrap();
            let indexes: Vec<String> = stmt
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            out.extend(rows(&format!(
                "SELECT name, \"unique\", origin, partial FROM pragma_index_list('{table}') ORDER BY name"
            )));
            for index in indexes {
                out.extend(rows(&format!(
                    "SELECT * FROM pragma_index_xinfo('{index}')"
                )));
            }
        }
        out
    }

    fn version(conn: &Connection) -> i64 {
        scalar(conn, "PRAGMA user_version")
    }

    /// The one value a `PRAGMA` or `SELECT` answers.
    fn scalar<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> T {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn a_version_1_file_is_upgraded_to_the_current_schema_keeping_every_request_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(&format!("{SCHEMA_V1}; PRAGMA user_version = 1;"))
                .unwrap();
            // Global ids, as version 1 gave them: bin a got 5 and 9, bin b 7 and a deleted 12.
            old.execute_batch(
                "INSERT INTO bins VALUES ('a', 1, 9999999999999, NULL, 2, 9);
                 INSERT INTO bins VALUES ('b', 1, 9999999999999, NULL, 1, 12);
                 INSERT INTO bin_requests VALUES
                   (5, 'a', 10, 'POST', '/r/a', '', '', 'text/plain', 3, 0, '1.2.3.4', 'HTTP/1.1', x'', x'616263'),
                   (7, 'b', 11, 'GET', '/r/b/x', '/x', 'q=1', NULL, 0, 0, '1.2.3.4', 'HTTP/1.1', x'', x''),
                   (9, 'a', 12, 'PUT', '/r/a', '', '', NULL, 1, 0, '::1', 'HTTP/1.0', x'', x'7a');",
            )
            .unwrap();
        }
        let conn = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION);
        // Steps 2 and 7 copy in place; version 9's new file leaves their free pages behind.
        let free: i64 = scalar(&conn, "PRAGMA freelist_count");
        assert_eq!(free, 0);
        let rows: Vec<(String, i64, String, Vec<u8>)> = conn
            .prepare(
                "SELECT b.id, r.seq, r.method, r.body FROM bin_requests r
                 JOIN bins b ON b.num = r.bin_num ORDER BY b.id, r.seq",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                ("a".to_owned(), 5, "POST".to_owned(), b"abc".to_vec()),
                ("a".to_owned(), 9, "PUT".to_owned(), b"z".to_vec()),
                ("b".to_owned(), 7, "GET".to_owned(), Vec::new()),
            ]
        );
        // Each bin goes on above the highest id it ever gave, deleted ones included.
        let last: Vec<i64> = conn
            .prepare("SELECT last_request_id FROM bins ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(last, [9, 12]);
        // v3 counted each bin's stored bytes (bodies "abc" + "z"; no header bytes).
        let bytes: Vec<i64> = conn
            .prepare("SELECT bytes_used FROM bins ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(bytes, [4, 0]);
        // v7: old requests keep their id as their slot, in unbounded rings.
        let rings: Vec<i64> = conn
            .prepare("SELECT ring FROM bins ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rings, [i64::MAX, i64::MAX]);
        let slots: i64 = scalar(&conn, "SELECT count(*) FROM bin_requests WHERE slot = seq");
        assert_eq!(slots, 3);
        let fk: bool = scalar(&conn, "PRAGMA foreign_keys");
        assert!(fk, "foreign keys are on again after the upgrade");

        // The upgraded file has exactly the shape a new file gets from schema.sql.
        let fresh = open_writer(&dir.path().join("new.db"), Synchronous::Normal).unwrap();
        assert_eq!(shape(&conn), shape(&fresh));
        assert!(shape(&fresh).iter().any(|l| l.contains("seq")));
        drop(conn);
        // Opening it again changes nothing.
        let again = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(version(&again), SCHEMA_VERSION);
    }

    /// `schema.sql` as it was at version 8, kept verbatim.
    const SCHEMA_V8: &str = include_str!("../../../tests/data/schema-v8.sql");

    #[test]
    fn a_version_8_file_keeps_every_row_id_slot_and_answer_with_bins_numbered_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(&format!("{SCHEMA_V8}; PRAGMA user_version = 8;"))
                .unwrap();
            // Bin 'z' is the older one; 'a' holds a wrapped ring (slots 1, 0 for ids 3, 4) and
            // an answer stored once; 'e' has no requests.
            old.execute_batch(
                "INSERT INTO bins (id, created_at, expires_at, request_count, last_request_id,
                     bytes_used, ring) VALUES
                   ('a', 20, 9999999999999, 2, 4, 2, 2),
                   ('z', 10, 9999999999999, 1, 1, 1, 1000),
                   ('e', 30, 9999999999999, 0, 0, 0, 0);
                 INSERT INTO bin_responses VALUES ('a', 1, '{\"status\":200}');
                 INSERT INTO bin_requests (id, bin_id, seq, slot, received_at, method, path,
                     subpath, query, body_size, body_truncated, remote_addr, http_version,
                     headers, body, response, body_codec, response_n) VALUES
                   (7, 'a', 3, 1, 1, 'POST', '/r/a', '', '', 1, 0, '::1', 'HTTP/1.1', x'', x'61',
                    NULL, 0, 1),
                   (8, 'z', 1, 1, 2, 'GET', '/r/z', '', 'q', 1, 0, '::1', 'HTTP/1.1', x'', x'7a',
                    '{\"status\":201}', 0, NULL),
                   (9, 'a', 4, 0, 3, 'PUT', '/r/a', '', '', 1, 0, '::1', 'HTTP/1.1', x'', x'62',
                    NULL, 0, 1);",
            )
            .unwrap();
        }
        let conn = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION);
        let bins: Vec<(i64, String, i64)> = conn
            .prepare("SELECT num, id, ring FROM bins ORDER BY num")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            bins,
            [
                (1, "z".to_owned(), 1000),
                (2, "a".to_owned(), 2),
                (3, "e".to_owned(), 0)
            ]
        );
        type Row = (i64, String, i64, i64, Vec<u8>, Option<String>);
        let rows: Vec<Row> = conn
            .prepare(
                "SELECT r.id, b.id, r.seq, r.slot, r.body,
                     coalesce(r.response, (SELECT record FROM bin_responses a
                         WHERE a.bin_num = r.bin_num AND a.n = r.response_n))
                 FROM bin_requests r JOIN bins b ON b.num = r.bin_num ORDER BY r.id",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let ok = Some(r#"{"status":200}"#.to_owned());
        assert_eq!(
            rows,
            [
                (7, "a".to_owned(), 3, 1, b"a".to_vec(), ok.clone()),
                (
                    8,
                    "z".to_owned(),
                    1,
                    1,
                    b"z".to_vec(),
                    Some(r#"{"status":201}"#.to_owned())
                ),
                (9, "a".to_owned(), 4, 0, b"b".to_vec(), ok),
            ]
        );
        // The foreign keys hold, and cascade from the new numbers.
        conn.execute("DELETE FROM bins WHERE id = 'a'", []).unwrap();
        let left: (i64, i64) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM bin_requests), (SELECT count(*) FROM bin_responses)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(left, (1, 0));
        // A bin made now gets a number never given before, even after the newest one went.
        conn.execute("DELETE FROM bins WHERE id = 'e'", []).unwrap();
        conn.execute(
            "INSERT INTO bins (id, created_at, expires_at) VALUES ('n', 40, 50)",
            [],
        )
        .unwrap();
        let num: i64 = scalar(&conn, "SELECT num FROM bins WHERE id = 'n'");
        assert_eq!(num, 4);
        let fresh = open_writer(&dir.path().join("new.db"), Synchronous::Normal).unwrap();
        assert_eq!(shape(&conn), shape(&fresh));
    }

    /// The rebuild of version 9 goes through a rollback journal: the new tables' pages are
    /// written to the file once, not held in the WAL as well; afterwards the file is in WAL mode
    /// again with the connection's own `synchronous`.
    /// A version-8 file of 2,000 requests of 1 KiB in one bin: ~2.5 MB of pages for version 9's
    /// rebuild to copy.
    fn v8_file_of_2000_requests(path: &Path) {
        let old = Connection::open(path).unwrap();
        old.execute_batch(&format!("{SCHEMA_V8}; PRAGMA user_version = 8;"))
            .unwrap();
        old.execute_batch(
            "INSERT INTO bins (id, created_at, expires_at, request_count, last_request_id,
                 bytes_used, ring) VALUES ('a', 1, 9999999999999, 2000, 2000, 2048000, 0);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO bin_requests (id, bin_id, seq, slot, received_at, method, path,
                 subpath, query, body_size, body_truncated, remote_addr, http_version,
                 headers, body, response, body_codec, response_n)
             SELECT i, 'a', i, i, i, 'POST', '/r/a', '', '', 1024, 0, '::1', 'HTTP/1.1',
                 x'', randomblob(1024), NULL, 0, NULL FROM n;",
        )
        .unwrap();
    }

    /// An upgrade that copies the requests is refused before it starts when the disk has less
    /// room than the copy needs: the file keeps its version and its rows, and the message says
    /// how much room the upgrade needs and how much there is.
    #[test]
    fn an_upgrade_is_refused_before_it_starts_when_the_disk_has_too_little_room() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        v8_file_of_2000_requests(&path);
        let asked = std::cell::RefCell::new(Vec::new());
        let one_mib = |p: &Path| {
            asked.borrow_mut().push(p.to_owned());
            Ok(MIB)
        };
        let err = open_writer_with(&path, Synchronous::Normal, &one_mib)
            .unwrap_err()
            .to_string();
        assert_eq!(*asked.borrow(), std::slice::from_ref(&path));
        let needed: u64 = err
            .split_once("needs about ")
            .and_then(|(_, rest)| rest.split_once(" MiB"))
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("no room needed in: {err}"));
        // The rows' bodies alone are 2,000 KiB; the pages that hold them, a little more.
        assert!((2..=4).contains(&needed), "{err}");
        assert!(
            err.contains("which has 1 MiB free") && err.contains("file is unchanged"),
            "{err}"
        );
        let old = Connection::open(&path).unwrap();
        assert_eq!(version(&old), 8);
        let count: i64 = scalar(&old, "SELECT count(*) FROM bin_requests");
        assert_eq!(count, 2000);
    }

    /// With exactly the room it needs, or when the free space cannot be told, the upgrade runs.
    #[test]
    fn an_upgrade_runs_with_the_room_it_needs_or_when_the_free_space_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let unknown = |_: &Path| Err(std::io::Error::other("no statvfs here"));
        for (name, exact) in [("exact.db", true), ("unknown.db", false)] {
            let path = dir.path().join(name);
            v8_file_of_2000_requests(&path);
            let steps: Vec<&Migration> = MIGRATIONS.iter().filter(|m| m.to > 8).collect();
            let needed = room_needed(&Connection::open(&path).unwrap(), &steps).unwrap();
            assert!(needed > 2000 * 1024, "{needed}");
            let just_enough = move |_: &Path| Ok(needed);
            let free_space: FreeSpace = if exact { &just_enough } else { &unknown };
            let conn = open_writer_with(&path, Synchronous::Normal, free_space).unwrap();
            assert_eq!(version(&conn), SCHEMA_VERSION);
        }
    }

    /// The real free space comes from the file system holding the file, also for a bare name.
    #[test]
    fn the_free_space_is_read_off_the_file_system_holding_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(disk_free(&dir.path().join("hookbin.db")).unwrap() > 0);
        assert!(disk_free(Path::new("hookbin.db")).unwrap() > 0);
    }

    /// Version 9 goes into a new file, which takes the database's place: the file is its data's
    /// size, with no free pages (in place, the old tables' pages stayed as free pages and the
    /// file twice as large), keeps its permissions, and is reached through a link as before.
    #[cfg(unix)]
    #[test]
    fn version_9_is_written_into_a_new_file_of_its_data_size_with_the_old_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        v8_file_of_2000_requests(&path);
        let before = std::fs::metadata(&path).unwrap().len();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap();

        let conn = open_writer(&link, Synchronous::Normal).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION);
        let count: i64 = scalar(&conn, "SELECT count(*) FROM bin_requests");
        assert_eq!(count, 2000);
        let free: i64 = scalar(&conn, "PRAGMA freelist_count");
        assert_eq!(free, 0);
        let after = std::fs::metadata(&path).unwrap();
        assert!(
            after.len() <= before,
            "{before} bytes before, {} after",
            after.len()
        );
        assert_eq!(after.permissions().mode() & 0o777, 0o640);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["link.db", "v8.db", "v8.db-shm", "v8.db-wal"]);
    }

    /// Run as root over another user's file (a service user's, say), the upgraded file keeps
    /// that owner and group. Only root may give a file away: as anyone else there is nothing to
    /// check (CI runs as root).
    #[cfg(unix)]
    #[test]
    fn version_9_keeps_the_files_owner_when_root_upgrades_it() {
        use std::os::unix::fs::MetadataExt;
        if rustix::process::geteuid().as_raw() != 0 {
            eprintln!("not root: the owner of an upgraded file is not checked");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        v8_file_of_2000_requests(&path);
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        let conn = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION);
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!((after.uid(), after.gid()), (65534, 65534));
    }

    /// A crash during the copy leaves the database as it was and the new file half written;
    /// the next start deletes it and upgrades again.
    #[test]
    fn an_interrupted_upgrades_file_is_deleted_and_the_upgrade_runs_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        v8_file_of_2000_requests(&path);
        let leftover = dir.path().join("v8.db.upgrade-9");
        std::fs::write(&leftover, vec![0x55; 100_000]).unwrap();
        let conn = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(version(&conn), SCHEMA_VERSION);
        let count: i64 = scalar(&conn, "SELECT count(*) FROM bin_requests");
        assert_eq!(count, 2000);
        assert!(!leftover.exists());
    }

    /// When the new file cannot be made, the upgrade fails with the reason and the database
    /// keeps its version, its rows and WAL mode.
    #[test]
    fn an_upgrade_that_cannot_make_its_new_file_leaves_the_database_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        v8_file_of_2000_requests(&path);
        let in_the_way = dir.path().join("v8.db.upgrade-9");
        std::fs::create_dir(&in_the_way).unwrap();
        std::fs::write(in_the_way.join("x"), b"x").unwrap();
        let err = open_writer(&path, Synchronous::Normal)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("upgrading to schema version 9") && err.contains("v8.db.upgrade-9"),
            "{err}"
        );
        let old = Connection::open(&path).unwrap();
        assert_eq!(version(&old), 8);
        let count: i64 = scalar(&old, "SELECT count(*) FROM bin_requests");
        assert_eq!(count, 2000);
        let mode: String = scalar(&old, "PRAGMA journal_mode");
        assert_eq!(mode, "wal");
    }

    #[test]
    fn an_upgrade_writes_the_rebuilt_tables_without_the_wal_and_goes_back_to_wal() {
        let dir = tempfile::tempdir().unwrap();
        for (sync, level) in [(Synchronous::Normal, 1), (Synchronous::Full, 2)] {
            let path = dir.path().join(format!("v8-{level}.db"));
            v8_file_of_2000_requests(&path);
            let conn = open_writer(&path, sync).unwrap();
            assert_eq!(version(&conn), SCHEMA_VERSION);
            let count: i64 = scalar(&conn, "SELECT count(*) FROM bin_requests");
            assert_eq!(count, 2000);
            let mode: String = scalar(&conn, "PRAGMA journal_mode");
            assert_eq!(mode, "wal");
            let synchronous: i64 = scalar(&conn, "PRAGMA synchronous");
            assert_eq!(synchronous, level);
            // Through the WAL, the rebuilt tables would all be in it (no checkpoint has run:
            // wal_autocheckpoint is 0).
            let wal = std::fs::metadata(dir.path().join(format!("v8-{level}.db-wal")))
                .map_or(0, |m| m.len());
            assert!(
                wal < 256 * 1024,
                "the WAL holds {wal} bytes after the upgrade"
            );
            assert!(!dir.path().join(format!("v8-{level}.db-journal")).exists());
        }
    }

    /// Leaving WAL mode needs the file to itself: while another connection reads it, the
    /// upgrade is refused and the file keeps its version and its rows.
    #[test]
    fn an_upgrade_is_refused_while_another_connection_reads_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        let other = Connection::open(&path).unwrap();
        other
            .execute_batch(&format!(
                "{SCHEMA_V8}; PRAGMA user_version = 8; PRAGMA journal_mode = WAL;
                 INSERT INTO bins (id, created_at, expires_at) VALUES ('a', 1, 9999999999999);
                 BEGIN; SELECT count(*) FROM bins;"
            ))
            .unwrap();
        let err = open_writer(&path, Synchronous::Normal).unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains("locked") && err.contains("another process"),
            "{err}"
        );
        other.execute_batch("COMMIT").unwrap();
        assert_eq!(version(&other), 8);
        let bins: i64 = scalar(&other, "SELECT count(*) FROM bins");
        assert_eq!(bins, 1);
    }

    #[test]
    fn the_writer_caches_more_pages_than_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let cache = |conn: &Connection| -> i64 { scalar(conn, "PRAGMA cache_size") };
        let writer = open_writer(&path, Synchronous::Normal).unwrap();
        assert_eq!(cache(&writer), -i64::from(WRITER_CACHE_KIB));
        // Readers keep SQLite's default (-2000 KiB): one cache per pooled connection.
        assert_eq!(cache(&open_reader(&path).unwrap()), -2000);
    }

    #[test]
    fn unknown_versions_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for (v, expect) in [(SCHEMA_VERSION + 1, "newer"), (-1, "no upgrade path")] {
            let path = dir.path().join(format!("v{v}.db"));
            Connection::open(&path)
                .unwrap()
                .execute_batch(&format!("PRAGMA user_version = {v}"))
                .unwrap();
            let err = open_writer(&path, Synchronous::Normal).unwrap_err();
            assert!(err.to_string().contains(expect), "{err}");
        }
    }

    #[test]
    fn migrations_are_in_order_and_reach_the_current_version() {
        for (i, step) in MIGRATIONS.iter().enumerate() {
            assert_eq!(step.to, i as i64 + 2);
        }
        assert_eq!(MIGRATIONS.last().unwrap().to, SCHEMA_VERSION);
    }
}
