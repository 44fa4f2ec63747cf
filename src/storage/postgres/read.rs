//! The statements that run on a pooled connection: reads, and the writes that are not
//! captures (they are rare, and each is one short transaction of its own).

use deadpool_postgres::GenericClient;
use tokio_postgres::{Error, Row};

use super::{CHANNEL_BINS, REAPER_LOCK};
use crate::ids::RequestId;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::storage::{ReapProgress, StoreError, headers};

/// `(expires_at, response, view_token_hash)` of the bin if it is live at `now`.
pub async fn live_bin(
    c: &impl GenericClient,
    id: &str,
    now: i64,
) -> Result<Option<(i64, Option<String>, Option<[u8; 32]>)>, Error> {
    let stmt = c
        .prepare_cached(
            "SELECT expires_at, response, view_token_hash FROM bins
             WHERE id = $1 AND expires_at > $2",
        )
        .await?;
    match c.query_opt(&stmt, &[&id, &now]).await? {
        Some(row) => Ok(Some((
            row.try_get(0)?,
            row.try_get(1)?,
            token_hash(row.try_get(2)?),
        ))),
        None => Ok(None),
    }
}

/// A stored view token hash; one of another length (a damaged row) makes the bin unreadable
/// rather than public.
fn token_hash(raw: Option<&[u8]>) -> Option<[u8; 32]> {
    raw.map(|h| <[u8; 32]>::try_from(h).unwrap_or([0; 32]))
}

const BIN_COLUMNS: &str = "id, created_at, expires_at, response, request_count, view_token_hash";

fn bin_from_row(row: &Row) -> Result<Bin, Error> {
    Ok(Bin {
        id: row.try_get(0)?,
        created_at: row.try_get(1)?,
        expires_at: row.try_get(2)?,
        response: row.try_get(3)?,
        request_count: row.try_get::<_, i64>(4)? as u64,
        view_token_hash: token_hash(row.try_get(5)?),
        // Every bin keeps the newest `cap` requests: no ring.
        slots: None,
    })
}

/// Inserts the bin and announces it: another node that found no such bin (`misses.rs`) drops
/// that miss.
pub async fn create_bin(c: &impl GenericClient, bin: &Bin) -> Result<(), Error> {
    let stmt = c
        .prepare_cached(&format!(
            "WITH made AS (
                 INSERT INTO bins (id, created_at, expires_at, response, request_count,
                     view_token_hash)
                 VALUES ($1, $2, $3, $4, 0, $5) RETURNING id)
             SELECT pg_notify('{CHANNEL_BINS}', 'created ' || id)::text FROM made"
        ))
        .await?;
    let hash = bin.view_token_hash.as_ref().map(|h| h.as_slice());
    c.execute(
        &stmt,
        &[
            &bin.id,
            &bin.created_at,
            &bin.expires_at,
            &bin.response,
            &hash,
        ],
    )
    .await?;
    Ok(())
}

pub async fn bin(c: &impl GenericClient, id: &str, now: i64) -> Result<Option<Bin>, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {BIN_COLUMNS} FROM bins WHERE id = $1 AND expires_at > $2"
        ))
        .await?;
    c.query_opt(&stmt, &[&id, &now])
        .await?
        .map(|row| bin_from_row(&row))
        .transpose()
}

/// Deletes the bin and its requests and tells the other nodes, in one transaction.
///
/// The requests go after the bin, in a later statement: deleting the bin's row waits for a
/// writer that holds it locked, and the second statement's snapshot then includes what that
/// writer committed, so no request outlives its bin (`bin_requests` has no foreign key; see
/// `schema-postgres.sql`).
pub async fn delete_bin(c: &mut deadpool_postgres::Client, id: &str) -> Result<bool, Error> {
    let tx = c.transaction().await?;
    if !delete_bin_row(&tx, id).await? {
        return Ok(false);
    }
    let requests = tx
        .prepare_cached("DELETE FROM bin_requests WHERE bin_id = $1")
        .await?;
    tx.execute(&requests, &[&id]).await?;
    tx.commit().await?;
    Ok(true)
}

/// Deletes the bin's row and announces it to every node (`deleted {bin}`: they drop it from
/// their caches and close its streams); `false` if there was none. Its requests are the
/// caller's to delete, in the same transaction.
async fn delete_bin_row(c: &impl GenericClient, id: &str) -> Result<bool, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "WITH gone AS (DELETE FROM bins WHERE id = $1 RETURNING id)
             SELECT pg_notify('{CHANNEL_BINS}', 'deleted ' || id)::text FROM gone"
        ))
        .await?;
    Ok(!c.query(&stmt, &[&id]).await?.is_empty())
}

/// Sets the response of a live bin and tells the other nodes to drop their cached copy.
pub async fn set_response(
    c: &impl GenericClient,
    id: &str,
    response: Option<&str>,
    now: i64,
) -> Result<Option<Bin>, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "WITH changed AS (
                 UPDATE bins SET response = $2 WHERE id = $1 AND expires_at > $3
                 RETURNING {BIN_COLUMNS})
             SELECT {BIN_COLUMNS}, pg_notify('{CHANNEL_BINS}', 'changed ' || id)::text
             FROM changed"
        ))
        .await?;
    c.query_opt(&stmt, &[&id, &response, &now])
        .await?
        .map(|row| bin_from_row(&row))
        .transpose()
}

const SUMMARY_COLUMNS: &str = "seq, bin_id, received_at, method, path, subpath, query, \
     content_type, body_size, body_truncated, remote_addr";

fn summary_from_row(row: &Row) -> Result<RequestSummary, Error> {
    Ok(RequestSummary {
        id: RequestId::from_row(row.try_get(0)?),
        bin_id: row.try_get(1)?,
        received_at: row.try_get(2)?,
        method: row.try_get(3)?,
        path: row.try_get(4)?,
        subpath: row.try_get(5)?,
        query: row.try_get(6)?,
        content_type: row.try_get(7)?,
        body_size: row.try_get::<_, i64>(8)? as u64,
        body_truncated: row.try_get(9)?,
        remote_addr: row.try_get(10)?,
    })
}

pub async fn summaries_before(
    c: &impl GenericClient,
    bin: &str,
    before: i64,
    limit: usize,
) -> Result<Vec<RequestSummary>, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM bin_requests
             WHERE bin_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3"
        ))
        .await?;
    c.query(&stmt, &[&bin, &before, &(limit as i64)])
        .await?
        .iter()
        .map(summary_from_row)
        .collect()
}

pub async fn summaries_after(
    c: &impl GenericClient,
    bin: &str,
    after: i64,
    through: i64,
    limit: usize,
) -> Result<Vec<RequestSummary>, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {SUMMARY_COLUMNS} FROM bin_requests
             WHERE bin_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4"
        ))
        .await?;
    c.query(&stmt, &[&bin, &after, &through, &(limit as i64)])
        .await?
        .iter()
        .map(summary_from_row)
        .collect()
}

const REQUEST_COLUMNS: &str = "seq, bin_id, received_at, method, path, subpath, query, \
     body_size, body_truncated, remote_addr, http_version, headers, body, response";

/// A request; the inner `Err` is a damaged headers column.
fn request_from_row(row: &Row) -> Result<Result<StoredRequest, StoreError>, Error> {
    let blob: &[u8] = row.try_get(11)?;
    let Some(headers) = headers::decode(blob) else {
        return Ok(Err(StoreError::Corrupt("headers blob is damaged".into())));
    };
    Ok(Ok(StoredRequest {
        id: RequestId::from_row(row.try_get(0)?),
        bin_id: row.try_get(1)?,
        received_at: row.try_get(2)?,
        method: row.try_get(3)?,
        path: row.try_get(4)?,
        subpath: row.try_get(5)?,
        query: row.try_get(6)?,
        body_size: row.try_get::<_, i64>(7)? as u64,
        body_truncated: row.try_get(8)?,
        remote_addr: row.try_get(9)?,
        http_version: row.try_get(10)?,
        headers,
        body: row.try_get(12)?,
        // A record this hookbin cannot read is shown as none rather than failing the request.
        response: row
            .try_get::<_, Option<&str>>(13)?
            .and_then(crate::model::ResponseRecord::from_json),
    }))
}

pub async fn request(
    c: &impl GenericClient,
    bin: &str,
    id: i64,
) -> Result<Option<Result<StoredRequest, StoreError>>, Error> {
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {REQUEST_COLUMNS} FROM bin_requests WHERE bin_id = $1 AND seq = $2"
        ))
        .await?;
    c.query_opt(&stmt, &[&bin, &id])
        .await?
        .map(|row| request_from_row(&row))
        .transpose()
}

/// Requests of the bins that expire at or before `upto` (see `Store::expired_requests`).
pub async fn expired_requests(c: &impl GenericClient, upto: i64) -> Result<u64, Error> {
    let stmt = c
        .prepare_cached(
            "SELECT COALESCE(SUM(request_count), 0)::int8 FROM bins WHERE expires_at <= $1",
        )
        .await?;
    let n: i64 = c.query_one(&stmt, &[&upto]).await?.try_get(0)?;
    Ok(n.max(0) as u64)
}

pub async fn last_request_id(c: &impl GenericClient, bin: &str) -> Result<i64, Error> {
    let stmt = c
        .prepare_cached("SELECT COALESCE(MAX(seq), 0)::int8 FROM bin_requests WHERE bin_id = $1")
        .await?;
    c.query_one(&stmt, &[&bin]).await?.try_get(0)
}

/// The highest id given in the bin so far (`0` for none, or no such bin): unlike
/// [`last_request_id`], it counts requests deleted since.
pub async fn newest_id(c: &impl GenericClient, bin: &str) -> Result<i64, Error> {
    let stmt = c
        .prepare_cached("SELECT last_request_id FROM bins WHERE id = $1")
        .await?;
    Ok(match c.query_opt(&stmt, &[&bin]).await? {
        Some(row) => row.try_get(0)?,
        None => 0,
    })
}

/// Requests with `after < seq <= upto`, oldest first, bounded by rows and body bytes (the row
/// that crosses `max_bytes` is the last one).
pub async fn requests_page(
    c: &impl GenericClient,
    bin: &str,
    after: i64,
    upto: i64,
    max_rows: usize,
    max_bytes: usize,
) -> Result<Vec<Result<StoredRequest, StoreError>>, Error> {
    // The byte bound is applied in the query, with a running total of body sizes
    // (`octet_length` reads a TOASTed body's size without fetching it), so a page of large
    // bodies never crosses the wire whole.
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {REQUEST_COLUMNS} FROM (
                 SELECT {REQUEST_COLUMNS},
                     sum(octet_length(body)) OVER (ORDER BY seq) - octet_length(body) AS before
                 FROM bin_requests
                 WHERE bin_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4) page
             WHERE before < $5 ORDER BY seq"
        ))
        .await?;
    let max_bytes = i64::try_from(max_bytes).unwrap_or(i64::MAX).max(1);
    let rows = c
        .query(
            &stmt,
            &[&bin, &after, &upto, &(max_rows as i64), &max_bytes],
        )
        .await?;
    let page = rows
        .iter()
        .map(request_from_row)
        .collect::<Result<_, _>>()?;
    Ok(page)
}

/// Deletes one request and counts it out of its bin. The bin's row is locked first, as the
/// writers lock it, so its count always matches its rows.
pub async fn delete_request(
    c: &mut deadpool_postgres::Client,
    bin: &str,
    id: i64,
) -> Result<bool, Error> {
    let tx = c.transaction().await?;
    let lock = tx
        .prepare_cached("SELECT 1 FROM bins WHERE id = $1 FOR UPDATE")
        .await?;
    if tx.query_opt(&lock, &[&bin]).await?.is_none() {
        return Ok(false);
    }
    let delete = tx
        .prepare_cached(
            "DELETE FROM bin_requests WHERE bin_id = $1 AND seq = $2
             RETURNING (octet_length(body) + octet_length(headers))::int8",
        )
        .await?;
    let Some(row) = tx.query_opt(&delete, &[&bin, &id]).await? else {
        return Ok(false);
    };
    let freed: i64 = row.try_get(0)?;
    let count = tx
        .prepare_cached(
            "UPDATE bins SET request_count = request_count - 1,
                 bytes_used = greatest(bytes_used - $2, 0) WHERE id = $1",
        )
        .await?;
    tx.execute(&count, &[&bin, &freed]).await?;
    tx.commit().await?;
    Ok(true)
}

pub async fn clear_requests(c: &mut deadpool_postgres::Client, bin: &str) -> Result<(), Error> {
    let tx = c.transaction().await?;
    let lock = tx
        .prepare_cached("SELECT 1 FROM bins WHERE id = $1 FOR UPDATE")
        .await?;
    if tx.query_opt(&lock, &[&bin]).await?.is_none() {
        return Ok(());
    }
    let delete = tx
        .prepare_cached("DELETE FROM bin_requests WHERE bin_id = $1")
        .await?;
    tx.execute(&delete, &[&bin]).await?;
    let count = tx
        .prepare_cached("UPDATE bins SET request_count = 0, bytes_used = 0 WHERE id = $1")
        .await?;
    tx.execute(&count, &[&bin]).await?;
    tx.commit().await
}

/// One reaping step, on one node at a time: deletes up to `budget` requests of bins expired at
/// `now`, then the bins emptied. Another node holding [`REAPER_LOCK`] makes this step a no-op
/// that reports `done`.
pub async fn reap(
    c: &mut deadpool_postgres::Client,
    now: i64,
    budget: usize,
) -> Result<ReapProgress, Error> {
    let mut progress = ReapProgress::default();
    let tx = c.transaction().await?;
    let locked: bool = tx
        .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&REAPER_LOCK])
        .await?
        .try_get(0)?;
    if !locked {
        tracing::debug!("reaping skipped: another node holds the reaper lock");
        progress.done = true;
        return Ok(progress);
    }
    // SKIP LOCKED: a bin a writer is filling right now is left for the next step.
    let expired = tx
        .prepare_cached(
            "SELECT id FROM bins WHERE expires_at <= $1 ORDER BY expires_at, id LIMIT 64
             FOR UPDATE SKIP LOCKED",
        )
        .await?;
    let ids: Vec<String> = tx
        .query(&expired, &[&now])
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        progress.done = true;
        return Ok(progress);
    }
    let delete_requests = tx
        .prepare_cached(
            "DELETE FROM bin_requests WHERE bin_id = $1 AND seq IN
               (SELECT seq FROM bin_requests WHERE bin_id = $1 ORDER BY seq LIMIT $2)",
        )
        .await?;
    let mut left = budget.max(1) as i64;
    for id in ids {
        let n = tx.execute(&delete_requests, &[&id, &left]).await? as i64;
        progress.requests_deleted += n as u64;
        left -= n;
        if left <= 0 {
            // The bin may still hold requests; the next step continues with it.
            break;
        }
        delete_bin_row(&tx, &id).await?;
        progress.bins_deleted.push(id);
    }
    tx.commit().await?;
    Ok(progress)
}

/// Up to `limit` requests with `seq < before`, newest first; bodies only `with_body` (else
/// empty), for a search to match.
pub async fn search_chunk(
    c: &impl GenericClient,
    bin: &str,
    before: i64,
    limit: usize,
    with_body: bool,
) -> Result<Vec<Result<StoredRequest, StoreError>>, Error> {
    let stmt = c
        .prepare_cached(
            "SELECT seq, bin_id, received_at, method, path, subpath, query, body_size,
                 body_truncated, remote_addr, http_version, headers,
                 CASE WHEN $4 THEN body ELSE '\\x'::bytea END, NULL::text
             FROM bin_requests WHERE bin_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
        )
        .await?;
    let rows = c
        .query(&stmt, &[&bin, &before, &(limit as i64), &with_body])
        .await?;
    rows.into_iter().map(|row| request_from_row(&row)).collect()
}

/// Whether the bin has a request below `before`.
pub async fn any_before(c: &impl GenericClient, bin: &str, before: i64) -> Result<bool, Error> {
    let stmt = c
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM bin_requests WHERE bin_id = $1 AND seq < $2)")
        .await?;
    c.query_one(&stmt, &[&bin, &before]).await?.try_get(0)
}

/// The stored bytes of every bin (bodies and headers), for `--max-db-bytes`: like SQLite's
/// pages in use, it shrinks as soon as requests are deleted.
pub async fn database_size(c: &impl GenericClient) -> Result<i64, Error> {
    c.query_one("SELECT coalesce(sum(bytes_used), 0)::int8 FROM bins", &[])
        .await?
        .try_get(0)
}
