//! Reads: a small pool of read-only connections used from `spawn_blocking`, and the queries.
//!
//! WAL mode lets these run while the writer commits; each query sees the last committed state.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, Row, params};
use tokio::sync::Semaphore;

use super::ring::Ring;
use super::schema;
use crate::ids::RequestId;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::storage::{BinEntry, ScanBudget, SearchPage, StoreError, headers};

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
    let mut stmt = conn.prepare(
        "SELECT id, expires_at, response, view_token_hash FROM bins WHERE expires_at > ?1",
    )?;
    let rows = stmt.query_map([now], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, Option<String>>(2)?,
            row.get::<_, Option<[u8; 32]>>(3)?,
        ))
    })?;
    let mut bins = HashMap::new();
    for row in rows {
        let (id, expires_at, response, view_token_hash) = row?;
        let response = response.and_then(|json| crate::storage::stored_response(&id, &json));
        bins.insert(
            id,
            BinEntry {
                expires_at,
                response,
                view_token_hash,
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
        view_token_hash: row.get(5)?,
        slots: match row.get::<_, i64>(6)? {
            0 => None,
            ring => Some(ring as u64),
        },
    })
}

pub fn bin(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<Option<Bin>> {
    conn.prepare_cached(
        "SELECT id, created_at, expires_at, response, request_count, view_token_hash, ring FROM bins
         WHERE id = ?1 AND expires_at > ?2",
    )?
    .query_row(params![id, now], bin_from_row)
    .optional()
}

/// For [`walk`], whose `?6` is the bin's text id (rows name their bin by its number).
const SUMMARY_COLUMNS: &str = "seq, ?6, received_at, method, path, subpath, query, \
     content_type, body_size, body_truncated, remote_addr";

fn summary_from_row(row: &Row<'_>) -> rusqlite::Result<RequestSummary> {
    Ok(RequestSummary {
        id: RequestId::from_row(row.get(0)?),
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

/// Calls `each` with the rows of `bin` whose ids are in `ids`, in id order (newest first when
/// `newest_first`), until it returns `false`; `columns` are what the rows select.
///
/// The bin's ring and its rows are read in one transaction, so that they agree: a capture
/// committed in between could have moved a slot on to a newer id. Each run of slots is walked
/// through the `(bin_num, slot)` index in slot order, which is id order within a run; `seq` is
/// checked too, so that a row can only ever be read under its own id.
///
/// The statement's parameters, which `columns` may use: `?1` the bin's number, `?2`-`?5` the
/// run, `?6` the bin's text id.
fn walk(
    conn: &Connection,
    bin: &str,
    ids: std::ops::RangeInclusive<i64>,
    newest_first: bool,
    columns: &str,
    mut each: impl FnMut(&Row<'_>) -> rusqlite::Result<bool>,
) -> rusqlite::Result<()> {
    let snapshot = conn.unchecked_transaction()?;
    let Some((num, ring)) = Ring::of(&snapshot, bin)? else {
        return Ok(());
    };
    let order = if newest_first { "DESC" } else { "ASC" };
    let mut stmt = snapshot.prepare_cached(&format!(
        "SELECT {columns} FROM bin_requests
         WHERE bin_num = ?1 AND slot BETWEEN ?2 AND ?3 AND seq BETWEEN ?4 AND ?5
         ORDER BY slot {order}"
    ))?;
    let runs = ring.runs(*ids.start(), *ids.end());
    let runs: Vec<_> = if newest_first {
        runs.rev().collect()
    } else {
        runs.collect()
    };
    // `?6` only where `columns` name it: SQLite refuses more values than a statement takes.
    let takes = stmt.parameter_count();
    for run in runs {
        let args: [&dyn rusqlite::ToSql; 6] = [
            &num,
            &run.slot_lo,
            &run.slot_hi,
            &run.seq_lo,
            &run.seq_hi,
            &bin,
        ];
        let mut rows = stmt.query(&args[..takes])?;
        while let Some(row) = rows.next()? {
            if !each(row)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

pub fn summaries_before(
    conn: &Connection,
    bin: &str,
    before: i64,
    limit: usize,
) -> rusqlite::Result<Vec<RequestSummary>> {
    summaries(conn, bin, 1..=before.saturating_sub(1), true, limit)
}

pub fn summaries_after(
    conn: &Connection,
    bin: &str,
    after: i64,
    through: i64,
    limit: usize,
) -> rusqlite::Result<Vec<RequestSummary>> {
    summaries(conn, bin, after.saturating_add(1)..=through, false, limit)
}

/// At most `limit` summaries of the bin's requests with ids in `ids`, in id order.
fn summaries(
    conn: &Connection,
    bin: &str,
    ids: std::ops::RangeInclusive<i64>,
    newest_first: bool,
    limit: usize,
) -> rusqlite::Result<Vec<RequestSummary>> {
    let mut page = Vec::new();
    if limit > 0 {
        walk(conn, bin, ids, newest_first, SUMMARY_COLUMNS, |row| {
            page.push(summary_from_row(row)?);
            Ok(page.len() < limit)
        })?;
    }
    Ok(page)
}

/// For [`walk`], whose `?1` is the bin's number and `?6` its text id. The answer is in the row
/// (requests captured before schema version 8, or beyond the bin's stored answers) or one of the
/// bin's `bin_responses`.
const REQUEST_COLUMNS: &str = "seq, ?6, received_at, method, path, subpath, query, \
     body_size, body_truncated, remote_addr, http_version, headers, body, \
     coalesce(response, (SELECT a.record FROM bin_responses AS a \
         WHERE a.bin_num = ?1 AND a.n = bin_requests.response_n)), \
     body_codec";

fn request_from_row(row: &Row<'_>) -> rusqlite::Result<StoredRequest> {
    let blob: Vec<u8> = row.get(11)?;
    let headers = headers::decode(&blob).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            11,
            rusqlite::types::Type::Blob,
            "headers blob is damaged".into(),
        )
    })?;
    let body_size = row.get::<_, i64>(7)? as u64;
    let body = super::body::unpack(row.get(14)?, row.get(12)?, body_size).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            12,
            rusqlite::types::Type::Blob,
            "stored body is damaged (it does not unpack to its size)".into(),
        )
    })?;
    Ok(StoredRequest {
        id: RequestId::from_row(row.get(0)?),
        bin_id: row.get(1)?,
        received_at: row.get(2)?,
        method: row.get(3)?,
        path: row.get(4)?,
        subpath: row.get(5)?,
        query: row.get(6)?,
        body_size,
        body_truncated: row.get(8)?,
        remote_addr: row.get(9)?,
        http_version: row.get(10)?,
        headers,
        body,
        // A record this hookbin cannot read is shown as none rather than failing the request.
        response: row
            .get::<_, Option<String>>(13)?
            .and_then(|text| crate::model::ResponseRecord::from_json(&text)),
    })
}

pub fn request(conn: &Connection, bin: &str, id: i64) -> rusqlite::Result<Option<StoredRequest>> {
    let mut found = None;
    walk(conn, bin, id..=id, false, REQUEST_COLUMNS, |row| {
        found = Some(request_from_row(row)?);
        Ok(false)
    })?;
    Ok(found)
}

/// Requests of the bins that expire at or before `upto` (see `Store::expired_requests`).
pub fn expired_requests(conn: &Connection, upto: i64) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT COALESCE(SUM(request_count), 0) FROM bins WHERE expires_at <= ?1")?
        .query_row([upto], |row| row.get::<_, i64>(0))
        .map(|n| n.max(0) as u64)
}

/// The highest request id of the bin, `0` when it has none.
pub fn last_request_id(conn: &Connection, bin: &str) -> rusqlite::Result<i64> {
    let mut last = 0;
    walk(conn, bin, 1..=i64::MAX, true, "seq", |row| {
        last = row.get(0)?;
        Ok(false)
    })?;
    Ok(last)
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
    let mut page = Vec::new();
    let mut bytes = 0usize;
    if max_rows > 0 {
        walk(
            conn,
            bin,
            after.saturating_add(1)..=upto,
            false,
            REQUEST_COLUMNS,
            |row| {
                let request = request_from_row(row)?;
                bytes = bytes.saturating_add(request.body.len());
                page.push(request);
                Ok(page.len() < max_rows && bytes < max_bytes)
            },
        )?;
    }
    Ok(page)
}

/// Walks the bin's requests with `seq < before`, newest first, keeping the summaries of those
/// `keep` accepts, until `limit` matched and one more was found (then `resume_before` is the
/// last kept id), or the budget ran out (then it is the last scanned id), or the rows ended.
/// Bodies are read only when `with_body` (SQLite then skips their overflow pages).
pub fn search_before(
    conn: &Connection,
    bin: &str,
    before: i64,
    limit: usize,
    with_body: bool,
    budget: ScanBudget,
    keep: &dyn Fn(&StoredRequest) -> bool,
) -> rusqlite::Result<SearchPage> {
    let started = std::time::Instant::now();
    // Bodies are left out of the statement, not just of the result, when not asked for; the
    // recorded response is never searched.
    let columns = if with_body {
        "seq, ?6, received_at, method, path, subpath, query, body_size, body_truncated, \
         remote_addr, http_version, headers, body, NULL, body_codec"
    } else {
        "seq, ?6, received_at, method, path, subpath, query, body_size, body_truncated, \
         remote_addr, http_version, headers, X'', NULL, 0"
    };
    let mut page = SearchPage::default();
    let (mut scanned, mut bytes) = (0usize, 0usize);
    // Set when the budget ran out on this row: the next row, if any, says the search goes on.
    let mut spent_at = None;
    walk(
        conn,
        bin,
        1..=before.saturating_sub(1),
        true,
        columns,
        |row| {
            if let Some(seq) = spent_at {
                page.resume_before = Some(seq);
                return Ok(false);
            }
            let request = request_from_row(row)?;
            let seq: i64 = row.get(0)?;
            if keep(&request) {
                if page.rows.len() == limit {
                    page.resume_before = page.rows.last().map(|r| r.id.get());
                    return Ok(false);
                }
                page.rows.push(RequestSummary::from(&request));
            }
            scanned += 1;
            bytes = bytes.saturating_add(request.body.len());
            if budget.spent(scanned, bytes, started) {
                spent_at = Some(seq);
            }
            Ok(true)
        },
    )?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Synchronous;

    /// A bin `b` holding requests 1..=n, each body `"body {seq}"`.
    fn bin_of(n: i64) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = schema::open_writer(&dir.path().join("r.db"), Synchronous::Normal).unwrap();
        conn.execute(
            "INSERT INTO bins (id, created_at, expires_at, ring, last_request_id)
             VALUES ('b', 0, 1000000, 1000, ?1)",
            [n],
        )
        .unwrap();
        let headers = headers::encode(&[]);
        for seq in 1..=n {
            conn.execute(
                "INSERT INTO bin_requests (bin_num, seq, slot, received_at, method, path, subpath,
                 query, body_size, body_truncated, remote_addr, http_version, headers, body)
                 VALUES ((SELECT num FROM bins WHERE id = 'b'),
                 ?1, ?1, 0, 'POST', '/r/b', '', '', 6, 0, '127.0.0.1', 'HTTP/1.1',
                 ?2, ?3)",
                params![seq, headers, format!("body {seq}").into_bytes()],
            )
            .unwrap();
        }
        (dir, conn)
    }

    /// Bin `b` as a ring of 4 after 10 captures: 7, 8, 9, 10 in slots 3, 0, 1, 2.
    fn wrapped() -> (tempfile::TempDir, Connection) {
        let (dir, conn) = bin_of(0);
        conn.execute("UPDATE bins SET ring = 4, last_request_id = 10", [])
            .unwrap();
        for seq in 7..=10 {
            conn.execute(
                "INSERT INTO bin_requests (bin_num, seq, slot, received_at, method, path, subpath,
                 query, body_size, body_truncated, remote_addr, http_version, headers, body)
                 VALUES ((SELECT num FROM bins WHERE id = 'b'),
                 ?1, ?1 % 4, 0, 'POST', '/r/b', '', '', 6, 0, '127.0.0.1',
                 'HTTP/1.1', x'', CAST(?1 AS BLOB))",
                [seq],
            )
            .unwrap();
        }
        (dir, conn)
    }

    fn seqs<T>(rows: &[T], id: impl Fn(&T) -> RequestId) -> Vec<i64> {
        rows.iter().map(|r| id(r).get()).collect()
    }

    #[test]
    fn every_read_walks_a_wrapped_ring_in_id_order() {
        let (_dir, conn) = wrapped();
        let before = |b, n| seqs(&summaries_before(&conn, "b", b, n).unwrap(), |r| r.id);
        assert_eq!(before(i64::MAX, 10), [10, 9, 8, 7]);
        assert_eq!(before(i64::MAX, 3), [10, 9, 8]);
        assert_eq!(before(8, 10), [7]);
        assert_eq!(before(7, 10), Vec::<i64>::new());
        let after = |a, t, n| seqs(&summaries_after(&conn, "b", a, t, n).unwrap(), |r| r.id);
        assert_eq!(after(0, i64::MAX, 10), [7, 8, 9, 10]);
        assert_eq!(after(6, 9, 10), [7, 8, 9]);
        assert_eq!(after(7, i64::MAX, 2), [8, 9]);
        for seq in 7..=10 {
            let found = request(&conn, "b", seq).unwrap().unwrap();
            assert_eq!(found.body, seq.to_string().into_bytes());
        }
        // Request 3 had slot 3 before 7 took it.
        assert!(request(&conn, "b", 3).unwrap().is_none());
        assert!(request(&conn, "b", 11).unwrap().is_none());
        assert_eq!(last_request_id(&conn, "b").unwrap(), 10);
        let page = |a, rows, bytes| {
            seqs(
                &requests_page(&conn, "b", a, 10, rows, bytes).unwrap(),
                |r| r.id,
            )
        };
        assert_eq!(page(0, 10, 1 << 20), [7, 8, 9, 10]);
        assert_eq!(page(6, 2, 1 << 20), [7, 8]);
        assert_eq!(page(7, 10, 1), [8]);
        // A search stopped by its budget on the wrap's last row goes on below it.
        let all = |_: &StoredRequest| true;
        let two = ScanBudget {
            max_rows: 2,
            ..WIDE
        };
        let found = search_before(&conn, "b", i64::MAX, 50, false, two, &all).unwrap();
        assert_eq!(ids(&found), ["10", "9"]);
        assert_eq!(found.resume_before, Some(9));
        let three = ScanBudget {
            max_rows: 3,
            ..WIDE
        };
        // Stopped on the last row of one run of slots: the next is in the other.
        let found = search_before(&conn, "b", i64::MAX, 50, false, three, &all).unwrap();
        assert_eq!(ids(&found), ["10", "9", "8"]);
        assert_eq!(found.resume_before, Some(8));
        let found = search_before(&conn, "b", 9, 50, true, three, &all).unwrap();
        assert_eq!(ids(&found), ["8", "7"]);
        assert_eq!(found.resume_before, None);
        // A bin that never captured, and no bin at all, read as empty.
        conn.execute(
            "INSERT INTO bins (id, created_at, expires_at) VALUES ('e', 0, 1)",
            [],
        )
        .unwrap();
        for bin in ["e", "missing"] {
            assert!(
                summaries_before(&conn, bin, i64::MAX, 5)
                    .unwrap()
                    .is_empty()
            );
            assert_eq!(last_request_id(&conn, bin).unwrap(), 0);
        }
    }

    fn ids(page: &SearchPage) -> Vec<String> {
        page.rows.iter().map(|r| r.id.to_string()).collect()
    }

    const WIDE: ScanBudget = ScanBudget {
        max_rows: 1000,
        max_bytes: 1 << 30,
        max_time: std::time::Duration::from_secs(60),
        time_after_rows: 0,
    };

    #[test]
    fn a_search_page_stops_at_limit_or_budget_and_says_where_to_go_on() {
        let (_dir, conn) = bin_of(10);
        let even = |r: &StoredRequest| r.id.get() % 2 == 0;
        // limit reached with more matches below: resume below the last one kept.
        let page = search_before(&conn, "b", i64::MAX, 2, true, WIDE, &even).unwrap();
        assert_eq!(ids(&page), ["10", "8"]);
        assert_eq!(page.resume_before, Some(8));
        // The last page: exactly the remaining matches, no cursor.
        let page = search_before(&conn, "b", 5, 2, true, WIDE, &even).unwrap();
        assert_eq!(ids(&page), ["4", "2"]);
        assert_eq!(page.resume_before, None);
        // Budget of 3 rows: 10, 9, 8 scanned; go on below 8.
        let small = ScanBudget {
            max_rows: 3,
            ..WIDE
        };
        let page = search_before(&conn, "b", i64::MAX, 50, true, small, &even).unwrap();
        assert_eq!(ids(&page), ["10", "8"]);
        assert_eq!(page.resume_before, Some(8));
        // Nothing matches within the budget: an empty page that still goes on.
        let none = |_: &StoredRequest| false;
        let page = search_before(&conn, "b", i64::MAX, 50, true, small, &none).unwrap();
        assert!(page.rows.is_empty());
        assert_eq!(page.resume_before, Some(8));
        // The budget running out on the bin's first row: nothing is left, no cursor.
        let page = search_before(&conn, "b", 4, 50, true, small, &none).unwrap();
        assert_eq!(page.resume_before, None);
    }

    #[test]
    fn bodies_are_read_only_when_asked_for() {
        let (_dir, conn) = bin_of(1);
        let has_body = |r: &StoredRequest| !r.body.is_empty();
        let page = search_before(&conn, "b", i64::MAX, 5, true, WIDE, &has_body).unwrap();
        assert_eq!(ids(&page), ["1"]);
        let page = search_before(&conn, "b", i64::MAX, 5, false, WIDE, &has_body).unwrap();
        assert!(page.rows.is_empty());
        // The summary keeps the full size either way.
        let all = |_: &StoredRequest| true;
        let page = search_before(&conn, "b", i64::MAX, 5, false, WIDE, &all).unwrap();
        assert_eq!(page.rows[0].body_size, 6);
    }

    #[test]
    fn compressed_bodies_read_back_exactly_and_damaged_ones_fail() {
        let (_dir, conn) = bin_of(0);
        let body = format!(r#"{{"note":"{}","end":true}}"#, "ab".repeat(500)).into_bytes();
        let packed = super::super::body::pack(&body, false).unwrap();
        let insert = |seq: i64, stored: &[u8]| {
            conn.execute(
                "INSERT INTO bin_requests (bin_num, seq, slot, received_at, method, path, subpath,
                 query, body_size, body_truncated, remote_addr, http_version, headers, body,
                 body_codec)
                 VALUES ((SELECT num FROM bins WHERE id = 'b'),
                 ?1, ?1, 0, 'POST', '/r/b', '', '', ?2, 0, '127.0.0.1', 'HTTP/1.1',
                 x'', ?3, 1)",
                params![seq, body.len() as i64, stored],
            )
            .unwrap();
            conn.execute("UPDATE bins SET last_request_id = ?1", [seq])
                .unwrap();
        };
        insert(1, &packed);
        assert_eq!(request(&conn, "b", 1).unwrap().unwrap().body, body);
        let all = |r: &StoredRequest| r.body == body;
        let page = search_before(&conn, "b", i64::MAX, 5, true, WIDE, &all).unwrap();
        assert_eq!(ids(&page), ["1"]);
        let page = requests_page(&conn, "b", 0, 1, 10, 1 << 20).unwrap();
        assert_eq!(page[0].body, body);
        // Without bodies, nothing is unpacked (and nothing fails).
        let none = |r: &StoredRequest| r.body.is_empty();
        let page = search_before(&conn, "b", i64::MAX, 5, false, WIDE, &none).unwrap();
        assert_eq!(ids(&page), ["1"]);
        // A packed body that does not unpack to its size is an error, never other bytes.
        insert(2, &packed[..packed.len() - 2]);
        let err = request(&conn, "b", 2).unwrap_err();
        assert!(err.to_string().contains("damaged"), "{err}");
    }
}
