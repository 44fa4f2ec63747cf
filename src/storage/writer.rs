//! The writer thread: owns the only write connection and commits queued operations in batches.
//!
//! Group commit: the thread blocks for one operation, then takes whatever else is already queued
//! (up to [`MAX_BATCH`]), runs them all in one transaction, commits once, and only then answers
//! each caller. Under load many captures share one commit; alone, a capture commits at once.
//! Each operation runs inside its own savepoint, so one failing operation cannot leave half its
//! writes in the batch.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{mpsc, oneshot};

use super::{StoreError, headers};
use crate::events::EventHub;
use crate::model::{Bin, RequestSummary, StoredRequest};

/// Operations per transaction at most; bounds how long one commit keeps callers waiting.
pub const MAX_BATCH: usize = 512;

pub type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

#[derive(Debug)]
pub enum Op {
    CreateBin(Bin, Reply<()>),
    DeleteBin(String, Reply<bool>),
    SetResponse {
        id: String,
        response: Option<String>,
        now: i64,
        reply: Reply<Option<Bin>>,
    },
    Capture {
        request: Box<StoredRequest>,
        max_per_bin: u64,
        reply: Reply<CaptureOutcome>,
    },
    DeleteRequest {
        bin: String,
        id: i64,
        reply: Reply<bool>,
    },
    ClearRequests {
        bin: String,
        reply: Reply<()>,
    },
    Reap {
        now: i64,
        budget: usize,
        reply: Reply<ReapProgress>,
    },
}

/// The result of a capture, known only after its batch committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureOutcome {
    /// Stored under this request id; `evicted` older requests were dropped to respect the cap.
    Stored { id: i64, evicted: u64 },
    /// The bin was deleted or expired before the row could be written; nothing stored.
    BinGone,
}

/// What one reaping step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapProgress {
    pub requests_deleted: u64,
    pub bins_deleted: Vec<String>,
    /// True when no expired bin is left.
    pub done: bool,
}

/// Answers one caller once the batch's fate is known.
type Completion = Box<dyn FnOnce(Option<&str>) + Send>;

fn completion<T: Send + 'static>(reply: Reply<T>, result: Result<T, StoreError>) -> Completion {
    Box::new(move |commit_error| {
        let result = match commit_error {
            Some(e) => Err(StoreError::Commit(e.to_owned())),
            None => result,
        };
        // The caller may have gone away (client disconnected); nothing to do then.
        let _ = reply.send(result);
    })
}

pub fn run(mut conn: Connection, mut ops: mpsc::Receiver<Op>, events: Arc<EventHub>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(op) = ops.blocking_recv() {
        batch.push(op);
        while batch.len() < MAX_BATCH {
            match ops.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        commit_batch(&mut conn, &mut batch, &events);
    }
    tracing::debug!("database writer stopped: every queued write is committed");
}

/// After the commit, what to tell the event stream.
enum Notice {
    Captured(RequestSummary),
    BinGone(String),
}

fn commit_batch(conn: &mut Connection, batch: &mut Vec<Op>, events: &EventHub) {
    let mut completions: Vec<Completion> = Vec::with_capacity(batch.len());
    let mut notices = Vec::new();
    let mut tx = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let msg = e.to_string();
            tracing::error!(cause = %msg, "cannot begin a write transaction");
            for op in batch.drain(..) {
                fail(op, &msg);
            }
            return;
        }
    };
    for op in batch.drain(..) {
        completions.push(apply_in_savepoint(&mut tx, op, &mut notices));
    }
    let commit_error = tx.commit().err().map(|e| e.to_string());
    if let Some(e) = &commit_error {
        tracing::error!(cause = %e, "commit failed; the batch's callers get an error");
        notices.clear();
    }
    // Publish before answering: once a capture is acknowledged, live streams already have it,
    // so a stream opened after a 2xx never receives that older request as "new".
    for notice in notices {
        match notice {
            Notice::Captured(summary) => events.publish(summary),
            Notice::BinGone(bin) => events.close(&bin),
        }
    }
    for done in completions {
        done(commit_error.as_deref());
    }
}

fn fail(op: Op, msg: &str) {
    fn send<T>(reply: Reply<T>, msg: &str) {
        let _ = reply.send(Err(StoreError::Commit(msg.to_owned())));
    }
    match op {
        Op::CreateBin(_, r) | Op::ClearRequests { reply: r, .. } => send(r, msg),
        Op::DeleteBin(_, r) | Op::DeleteRequest { reply: r, .. } => send(r, msg),
        Op::SetResponse { reply, .. } => send(reply, msg),
        Op::Capture { reply, .. } => send(reply, msg),
        Op::Reap { reply, .. } => send(reply, msg),
    }
}

fn apply_in_savepoint(
    tx: &mut rusqlite::Transaction<'_>,
    op: Op,
    notices: &mut Vec<Notice>,
) -> Completion {
    // A savepoint per operation: if the operation fails midway, only its own writes roll back
    // (dropping an uncommitted savepoint rolls it back).
    let sp = match tx.savepoint_with_name("op") {
        Ok(sp) => sp,
        Err(e) => {
            let msg = e.to_string();
            return Box::new(move |_| fail(op, &msg));
        }
    };
    let mut local = Vec::new();
    let (done, ok) = apply(&sp, op, &mut local);
    if !ok {
        return done;
    }
    match sp.commit() {
        Ok(()) => {
            notices.extend(local);
            done
        }
        Err(e) => {
            let msg = e.to_string();
            Box::new(move |commit_error| done(Some(commit_error.unwrap_or(&msg))))
        }
    }
}

/// Runs one operation; returns its completion and whether it succeeded.
fn apply(conn: &Connection, op: Op, notices: &mut Vec<Notice>) -> (Completion, bool) {
    fn finish<T: Send + 'static>(
        reply: Reply<T>,
        result: Result<T, rusqlite::Error>,
    ) -> (Completion, bool) {
        let ok = result.is_ok();
        (completion(reply, result.map_err(StoreError::from)), ok)
    }
    match op {
        Op::CreateBin(bin, reply) => finish(reply, create_bin(conn, &bin)),
        Op::DeleteBin(id, reply) => {
            let result = conn.execute("DELETE FROM bins WHERE id = ?1", [&id]);
            notices.push(Notice::BinGone(id));
            finish(reply, result.map(|n| n > 0))
        }
        Op::SetResponse {
            id,
            response,
            now,
            reply,
        } => finish(reply, set_response(conn, &id, response.as_deref(), now)),
        Op::Capture {
            request,
            max_per_bin,
            reply,
        } => {
            let result = capture(conn, &request, max_per_bin);
            if let Ok(CaptureOutcome::Stored { id, .. }) = result {
                let mut summary = RequestSummary::from(request.as_ref());
                summary.id = id.to_string();
                notices.push(Notice::Captured(summary));
            }
            finish(reply, result)
        }
        Op::DeleteRequest { bin, id, reply } => finish(reply, delete_request(conn, &bin, id)),
        Op::ClearRequests { bin, reply } => finish(reply, clear_requests(conn, &bin)),
        Op::Reap { now, budget, reply } => {
            let result = reap(conn, now, budget);
            if let Ok(progress) = &result {
                notices.extend(progress.bins_deleted.iter().cloned().map(Notice::BinGone));
            }
            finish(reply, result)
        }
    }
}

fn create_bin(conn: &Connection, bin: &Bin) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO bins (id, created_at, expires_at, response, request_count)
         VALUES (?1, ?2, ?3, ?4, 0)",
    )?
    .execute(params![
        bin.id,
        bin.created_at,
        bin.expires_at,
        bin.response
    ])?;
    Ok(())
}

fn set_response(
    conn: &Connection,
    id: &str,
    response: Option<&str>,
    now: i64,
) -> rusqlite::Result<Option<Bin>> {
    conn.prepare_cached(
        "UPDATE bins SET response = ?2 WHERE id = ?1 AND expires_at > ?3
         RETURNING id, created_at, expires_at, response, request_count",
    )?
    .query_row(params![id, response, now], super::read::bin_from_row)
    .optional()
}

fn capture(
    conn: &Connection,
    r: &StoredRequest,
    max_per_bin: u64,
) -> rusqlite::Result<CaptureOutcome> {
    // Counting first doubles as the bin check: no live bin, no row to update.
    let count: Option<i64> = conn
        .prepare_cached(
            "UPDATE bins SET request_count = request_count + 1
             WHERE id = ?1 AND expires_at > ?2 RETURNING request_count",
        )?
        .query_row(params![r.bin_id, r.received_at], |row| row.get(0))
        .optional()?;
    let Some(count) = count else {
        return Ok(CaptureOutcome::BinGone);
    };
    conn.prepare_cached(
        "INSERT INTO bin_requests (bin_id, received_at, method, path, subpath, query,
             content_type, body_size, body_truncated, remote_addr, http_version, headers, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        r.bin_id,
        r.received_at,
        r.method,
        r.path,
        r.subpath,
        r.query,
        r.content_type(),
        r.body_size as i64,
        r.body_truncated,
        r.remote_addr,
        r.http_version,
        headers::encode(&r.headers),
        r.body,
    ])?;
    let id = conn.last_insert_rowid();
    let count = count as u64;
    let mut evicted = 0;
    if count > max_per_bin {
        evicted = conn
            .prepare_cached(
                "DELETE FROM bin_requests WHERE id IN
                   (SELECT id FROM bin_requests WHERE bin_id = ?1 ORDER BY id LIMIT ?2)",
            )?
            .execute(params![r.bin_id, (count - max_per_bin) as i64])? as u64;
        conn.prepare_cached("UPDATE bins SET request_count = request_count - ?2 WHERE id = ?1")?
            .execute(params![r.bin_id, evicted as i64])?;
    }
    Ok(CaptureOutcome::Stored { id, evicted })
}

fn delete_request(conn: &Connection, bin: &str, id: i64) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached("DELETE FROM bin_requests WHERE bin_id = ?1 AND id = ?2")?
        .execute(params![bin, id])?;
    if n > 0 {
        conn.prepare_cached("UPDATE bins SET request_count = request_count - 1 WHERE id = ?1")?
            .execute([bin])?;
    }
    Ok(n > 0)
}

fn clear_requests(conn: &Connection, bin: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM bin_requests WHERE bin_id = ?1")?
        .execute([bin])?;
    conn.prepare_cached("UPDATE bins SET request_count = 0 WHERE id = ?1")?
        .execute([bin])?;
    Ok(())
}

/// Deletes requests of expired bins, at most `budget` rows, then the bins left empty.
/// Small steps keep each transaction short, so captures queued behind it wait little.
fn reap(conn: &Connection, now: i64, budget: usize) -> rusqlite::Result<ReapProgress> {
    let mut progress = ReapProgress::default();
    let mut left = budget.max(1) as i64;
    let mut expired = conn.prepare_cached(
        "SELECT id FROM bins WHERE expires_at <= ?1 ORDER BY expires_at, id LIMIT 64",
    )?;
    let ids: Vec<String> = expired
        .query_map([now], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        progress.done = true;
        return Ok(progress);
    }
    for id in ids {
        let n = conn
            .prepare_cached(
                "DELETE FROM bin_requests WHERE id IN
                   (SELECT id FROM bin_requests WHERE bin_id = ?1 ORDER BY id LIMIT ?2)",
            )?
            .execute(params![id, left])? as i64;
        progress.requests_deleted += n as u64;
        left -= n;
        if left <= 0 {
            // The bin may still hold requests; the next step continues with it.
            break;
        }
        // Fewer than asked: the bin is empty now, and can go without a cascade.
        conn.prepare_cached("DELETE FROM bins WHERE id = ?1")?
            .execute([&id])?;
        progress.bins_deleted.push(id);
    }
    Ok(progress)
}
