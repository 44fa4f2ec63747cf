//! Reads: a small pool of read-only connections used from `spawn_blocking`, and the queries.
//!
//! WAL mode lets these run while the writer commits; each query sees the last committed state.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, Row, params};
use tokio::sync::Semaphore;

use super::schema;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::storage::{BinEntry, StoreError, headers};

#[derive(Debug)]
pub struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Bounds concurrent reads to the number of connections.
    permits: Arc<Semaphore>,
}

impl ReadPool {
    pub fn new(path: &Path, size: usize) -> Result<Self, StoreError> {
        let size = size.max(1);
        // Open one now so that a database we cannot read fails at start, not at the first page.
        let first = schema::open_reader(path)?;
        Ok(Self {
            path: path.to_owned(),
            idle: Mutex::new(vec![first]),
            permits: Arc::new(Semaphore::new(size)),
        })
    }

    /// Runs `f` with a read-only connection on a blocking thread.
    pub async fn run<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Closed)?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let path = self.path.clone();
        let (conn, result) = tokio::task::spawn_blocking(move || {
            let conn = match idle {
                Some(conn) => conn,
                None => schema::open_reader(&path)?,
            };
            let result = f(&conn);
            Ok::<_, StoreError>((conn, result))
        })
        .await
        .map_err(|e| StoreError::ReadTask(e.to_string()))??;
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        result.map_err(StoreError::from)
    }
}

/// Every bin not yet expired, for the in-memory index.
///
/// A stored custom response is checked again. Headers an older hookbin accepted and this one
/// refuses are left out (the rest of the response still applies), and a response that cannot be
/// read at all is ignored (the bin answers `200 ok`): either way with a warning, and the server
/// starts.
pub fn live_bins(conn: &Connection, now: i64) -> Result<HashMap<String, BinEntry>, StoreError> {
    let mut stmt =
        conn.prepare("SELECT id, expires_at, response FROM bins WHERE expires_at > ?1")?;
    let rows = stmt.query_map([now], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, Option<String>>(2)?,
        ))
    })?;
    let mut bins = HashMap::new();
    for row in rows {
        let (id, expires_at, response) = row?;
        let response = response.and_then(|json| crate::storage::stored_response(&id, &json));
        bins.insert(
            id,
            BinEntry {
                expires_at,
                response,
            },
        );
    }
    Ok(bins)
}

pub fn bin_from_row(row: &Row<'_>) -> rusqlite::Result<Bin> {
    Ok(Bin {
        id: row.get(0)?,
        created_at: row.get(1)?,
        expires_at: row.get(2)?,
        response: row.get(3)?,
        request_count: row.get::<_, i64>(4)? as u64,
    })
}

pub fn bin(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<Option<Bin>> {
    conn.prepare_cached(
        "SELECT id, created_at, expires_at, response, request_count FROM bins
         WHERE id = ?1 AND expires_at > ?2",
    )?
    .query_row(params![id, now], bin_from_row)
    .optional()
}

const SUMMARY_COLUMNS: &str = "seq, bin_id, received_at, method, path, subpath, query, \
     content_type, body_size, body_truncated, remote_addr";

fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<RequestSummary> {
    Ok(RequestSummary {
        id: row.get::<_, i64>(0)?.to_string(),
        bin_id: row.get(1)?,
        received_at: row.get(2)?,
        method: row.get(3)?,
        path: row.get(4)?,
        subpath: row.get(5)?,
        query: row.get(6)?,
        content_type: row.get(7)?,
        body_size: row.get::<_, i64>(8)? as u64,
        body_truncated: row.get(9)?,
        remote_addr: row.get(10)?,
    })
}

pub fn summaries_before(
    conn: &Connection,
    bin: &str,
    before: i64,
    limit: usize,
) -> rusqlite::Result<Vec<RequestSummary>> {
    conn.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM bin_requests
         WHERE bin_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3"
    ))?
    .query_map(params![bin, before, limit as i64], summary_from_row)?
    .collect()
}

pub fn summaries_after(
    conn: &Connection,
    bin: &str,
    after: i64,
    limit: usize,
) -> rusqlite::Result<Vec<RequestSummary>> {
    conn.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM bin_requests
         WHERE bin_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"
    ))?
    .query_map(params![bin, after, limit as i64], summary_from_row)?
    .collect()
}

const REQUEST_COLUMNS: &str = "seq, bin_id, received_at, method, path, subpath, query, \
     body_size, body_truncated, remote_addr, http_version, headers, body";

fn request_from_row(row: &Row<'_>) -> rusqlite::Result<StoredRequest> {
    let blob: Vec<u8> = row.get(11)?;
    let headers = headers::decode(&blob).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            11,
            rusqlite::types::Type::Blob,
            "headers blob is damaged".into(),
        )
    })?;
    Ok(StoredRequest {
        id: row.get::<_, i64>(0)?.to_string(),
        bin_id: row.get(1)?,
        received_at: row.get(2)?,
        method: row.get(3)?,
        path: row.get(4)?,
        subpath: row.get(5)?,
        query: row.get(6)?,
        body_size: row.get::<_, i64>(7)? as u64,
        body_truncated: row.get(8)?,
        remote_addr: row.get(9)?,
        http_version: row.get(10)?,
        headers,
        body: row.get(12)?,
    })
}

pub fn request(conn: &Connection, bin: &str, id: i64) -> rusqlite::Result<Option<StoredRequest>> {
    conn.prepare_cached(&format!(
        "SELECT {REQUEST_COLUMNS} FROM bin_requests WHERE bin_id = ?1 AND seq = ?2"
    ))?
    .query_row(params![bin, id], request_from_row)
    .optional()
}

/// The highest request id of the bin, `0` when it has none.
pub fn last_request_id(conn: &Connection, bin: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM bin_requests WHERE bin_id = ?1")?
        .query_row([bin], |row| row.get(0))
}

/// Requests with `after < id <= upto`, oldest first: at most `max_rows`, and no more rows once
/// their bodies add up to `max_bytes` (the row that crosses it is included, so a page is never
/// empty while rows remain).
pub fn requests_page(
    conn: &Connection,
    bin: &str,
    after: i64,
    upto: i64,
    max_rows: usize,
    max_bytes: usize,
) -> rusqlite::Result<Vec<StoredRequest>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {REQUEST_COLUMNS} FROM bin_requests
         WHERE bin_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq LIMIT ?4"
    ))?;
    let mut rows = stmt.query(params![bin, after, upto, max_rows as i64])?;
    let mut page = Vec::new();
    let mut bytes = 0usize;
    while let Some(row) = rows.next()? {
        let request = request_from_row(row)?;
        bytes = bytes.saturating_add(request.body.len());
        page.push(request);
        if bytes >= max_bytes {
            break;
        }
    }
    Ok(page)
}
