//! The writer thread: owns the only write connection and commits queued operations in batches.
//!
//! Group commit: the thread blocks for one operation, then takes whatever else is already queued
//! (up to [`MAX_BATCH`]), runs them all in one transaction, commits once, and only then answers
//! each caller. Under load many captures share one commit; alone, a capture commits at once.
//!
//! When the WAL has grown large, the writer also runs a checkpoint between two batches, after
//! answering their callers, so that the WAL can start over (see `checkpoint.rs`).
//!
//! Captures are the hot path and cost one INSERT each: consecutive captures in a batch form a
//! run, in which each bin is looked up once, and its request count and the eviction of its oldest
//! requests are settled once, at the end of the run. The run shares one savepoint; if anything in
//! it fails, it is rolled back and redone one capture per savepoint, so only the failing capture
//! fails. Every other operation runs in a savepoint of its own, so one failing operation cannot
//! leave half its writes in the batch.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{mpsc, oneshot};

use super::StoreError;
use super::checkpoint::{WalSize, checkpoint};
use crate::events::EventHub;
use crate::model::{Bin, RequestSummary, StoredRequest};

/// Operations per transaction at most; bounds how long one commit keeps callers waiting.
pub const MAX_BATCH: usize = 512;

pub type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

/// A capture's answer carries the capture back: its buffers are then freed by the waiting task,
/// not by this thread, which is the one every capture waits for (freeing was 14% of its time).
pub type CaptureReply = oneshot::Sender<(Result<CaptureOutcome, StoreError>, Box<NewCapture>)>;

#[derive(Debug)]
pub enum Op {
    /// The hot path, batched specially (see the module docs).
    Capture {
        capture: Box<NewCapture>,
        reply: CaptureReply,
    },
    Other(Command),
}

/// Every write that is not a capture; each runs in a savepoint of its own.
#[derive(Debug)]
pub enum Command {
    CreateBin(Bin, Reply<()>),
    DeleteBin(String, Reply<bool>),
    SetResponse {
        id: String,
        response: Option<String>,
        now: i64,
        reply: Reply<Option<Bin>>,
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

/// A request to store, with the columns derived from it prepared by the caller (off the writer
/// thread, which is the bottleneck under load).
#[derive(Debug)]
pub struct NewCapture {
    pub request: StoredRequest,
    /// `headers::encode(&request.headers)`.
    pub headers_blob: Vec<u8>,
    pub content_type: Option<String>,
    pub max_per_bin: u64,
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

/// `next_id` is the first request id to give (see [`next_request_id`]).
pub fn run(
    mut conn: Connection,
    mut ops: mpsc::Receiver<Op>,
    events: Arc<EventHub>,
    wal: Arc<WalSize>,
    mut next_id: i64,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(op) = ops.blocking_recv() {
        batch.push(op);
        while batch.len() < MAX_BATCH {
            match ops.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        commit_batch(&mut conn, &mut batch, &events, &mut next_id);
        if wal.wants_restart() && checkpoint(&conn, "PASSIVE").is_some() {
            wal.restarted();
        }
    }
    // Every queued write is committed; leave a database file that holds everything.
    checkpoint(&conn, "TRUNCATE");
    tracing::debug!("database writer stopped: every queued write is committed");
}

/// After the commit, what to tell the event stream.
enum Notice {
    Captured(RequestSummary),
    BinGone(String),
}

/// The first request id a writer starting on `conn` may give: above every id in the table and
/// every id a bin ever gave (its newest request may have been deleted since).
pub fn next_request_id(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT max(coalesce((SELECT max(last_request_id) FROM bins), 0),
                    coalesce((SELECT max(id) FROM bin_requests), 0)) + 1",
        [],
        |row| row.get(0),
    )
}

fn commit_batch(conn: &mut Connection, batch: &mut Vec<Op>, events: &EventHub, next_id: &mut i64) {
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
    let mut run = Vec::new();
    for op in batch.drain(..) {
        match op {
            Op::Capture { capture, reply } => run.push((capture, reply)),
            Op::Other(command) => {
                // Settle the captures before it: the command may concern their bin.
                store_captures(
                    &mut tx,
                    &mut run,
                    &mut completions,
                    &mut notices,
                    events,
                    next_id,
                );
                completions.push(apply_in_savepoint(&mut tx, command, &mut notices));
            }
        }
    }
    store_captures(
        &mut tx,
        &mut run,
        &mut completions,
        &mut notices,
        events,
        next_id,
    );
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

type PendingCapture = (Box<NewCapture>, CaptureReply);

/// Stores a run of consecutive captures in one savepoint, or, if that fails, one by one.
fn store_captures(
    tx: &mut rusqlite::Transaction<'_>,
    run: &mut Vec<PendingCapture>,
    completions: &mut Vec<Completion>,
    notices: &mut Vec<Notice>,
    events: &EventHub,
    next_id: &mut i64,
) {
    if run.is_empty() {
        return;
    }
    let attempt = tx.savepoint_with_name("run").and_then(|sp| {
        let outcomes = insert_run(&sp, run, next_id)?;
        sp.commit()?;
        Ok(outcomes)
    });
    let outcomes: Vec<Result<CaptureOutcome, rusqlite::Error>> = match attempt {
        Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
        Err(e) if run.len() == 1 => vec![Err(e)],
        Err(e) => {
            tracing::warn!(cause = %e, "a capture run failed; storing its captures one by one");
            run.iter()
                .map(|one| {
                    let sp = tx.savepoint_with_name("one")?;
                    let outcome = insert_run(&sp, std::slice::from_ref(one), next_id)?.remove(0);
                    sp.commit()?;
                    Ok(outcome)
                })
                .collect()
        }
    };
    for ((capture, reply), outcome) in run.drain(..).zip(outcomes) {
        if let Ok(CaptureOutcome::Stored { id, .. }) = outcome {
            let request = &capture.request;
            // Building a summary costs allocations; only do it when a stream listens.
            if events.is_watched(&request.bin_id) {
                let mut summary = RequestSummary::from(request);
                summary.id = id.to_string();
                notices.push(Notice::Captured(summary));
            }
        }
        let outcome = outcome.map_err(StoreError::from);
        completions.push(Box::new(move |commit_error| {
            let outcome = match commit_error {
                Some(e) => Err(StoreError::Commit(e.to_owned())),
                None => outcome,
            };
            let _ = reply.send((outcome, capture));
        }));
    }
}

/// What a run has done to one bin so far.
struct BinTally {
    /// `None` when the bin does not exist.
    expires_at: Option<i64>,
    /// The bin's request count before this run.
    count: u64,
    added: u64,
    max_per_bin: u64,
    /// Index in the run of the bin's last capture, which reports the evictions.
    last: usize,
    /// Its request id, recorded as the bin's `last_request_id`.
    last_id: i64,
}

/// One INSERT per capture; per bin, one lookup before and one count update (and eviction of the
/// oldest beyond the cap) after.
fn insert_run(
    conn: &Connection,
    run: &[PendingCapture],
    next_id: &mut i64,
) -> rusqlite::Result<Vec<CaptureOutcome>> {
    let mut bins: HashMap<&str, BinTally> = HashMap::new();
    let mut outcomes = Vec::with_capacity(run.len());
    let mut lookup =
        conn.prepare_cached("SELECT expires_at, request_count FROM bins WHERE id = ?1")?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO bin_requests (id, bin_id, received_at, method, path, subpath, query,
             content_type, body_size, body_truncated, remote_addr, http_version, headers, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?;
    for (i, (capture, _)) in run.iter().enumerate() {
        let r = &capture.request;
        let tally = match bins.entry(r.bin_id.as_str()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let found: Option<(i64, i64)> = lookup
                    .query_row([&r.bin_id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?;
                e.insert(BinTally {
                    expires_at: found.map(|f| f.0),
                    count: found.map_or(0, |f| f.1 as u64),
                    added: 0,
                    max_per_bin: capture.max_per_bin,
                    last: i,
                    last_id: 0,
                })
            }
        };
        if tally.expires_at.is_none_or(|at| at <= r.received_at) {
            outcomes.push(CaptureOutcome::BinGone);
            continue;
        }
        // Ids of a run that fails and is redone are not given again: gaps are fine, reuse is not.
        let id = *next_id;
        *next_id += 1;
        insert.execute(params![
            id,
            r.bin_id,
            r.received_at,
            r.method,
            r.path,
            r.subpath,
            r.query,
            capture.content_type,
            r.body_size as i64,
            r.body_truncated,
            r.remote_addr,
            r.http_version,
            capture.headers_blob,
            r.body,
        ])?;
        outcomes.push(CaptureOutcome::Stored { id, evicted: 0 });
        tally.added += 1;
        tally.last = i;
        tally.last_id = id;
    }
    for (bin, tally) in bins.iter().filter(|(_, t)| t.added > 0) {
        let evicted = settle_count(conn, bin, tally)?;
        if let CaptureOutcome::Stored { evicted: e, .. } = &mut outcomes[tally.last] {
            *e = evicted;
        }
    }
    Ok(outcomes)
}

/// Records the run in the bin's row (request count, newest id) after evicting its oldest
/// requests beyond the cap; the number evicted.
///
/// The eviction is one range DELETE whose cutoff is found through INDEXED BY without ORDER BY:
/// SQLite re-prepares, on every use, any statement here that combines `bin_id = ?` with ORDER BY
/// (measured with `sqlite3_stmt_status(REPREPARE)`: the obvious `DELETE ... WHERE id IN (SELECT
/// ... ORDER BY id LIMIT ?)` spent 10% of the writer's time re-parsing itself). INDEXED BY fixes
/// the scan to `bin_requests_by_bin`, whose order is (bin_id, id), so OFFSET k lands on the
/// k+1-th oldest request: everything older goes.
fn settle_count(conn: &Connection, bin: &str, tally: &BinTally) -> rusqlite::Result<u64> {
    let count = tally.count + tally.added;
    let evicted = if count > tally.max_per_bin {
        conn.prepare_cached(
            "DELETE FROM bin_requests WHERE bin_id = ?1 AND id <
               (SELECT id FROM bin_requests INDEXED BY bin_requests_by_bin
                WHERE bin_id = ?1 AND id > 0 LIMIT 1 OFFSET ?2)",
        )?
        .execute(params![bin, (count - tally.max_per_bin) as i64])? as u64
    } else {
        0
    };
    conn.prepare_cached("UPDATE bins SET request_count = ?2, last_request_id = ?3 WHERE id = ?1")?
        .execute(params![bin, (count - evicted) as i64, tally.last_id])?;
    Ok(evicted)
}

fn fail(op: Op, msg: &str) {
    match op {
        Op::Capture { capture, reply } => {
            let _ = reply.send((Err(StoreError::Commit(msg.to_owned())), capture));
        }
        Op::Other(command) => fail_command(command, msg),
    }
}

fn send_error<T>(reply: Reply<T>, msg: &str) {
    let _ = reply.send(Err(StoreError::Commit(msg.to_owned())));
}

fn fail_command(command: Command, msg: &str) {
    match command {
        Command::CreateBin(_, r) | Command::ClearRequests { reply: r, .. } => send_error(r, msg),
        Command::DeleteBin(_, r) | Command::DeleteRequest { reply: r, .. } => send_error(r, msg),
        Command::SetResponse { reply, .. } => send_error(reply, msg),
        Command::Reap { reply, .. } => send_error(reply, msg),
    }
}

fn apply_in_savepoint(
    tx: &mut rusqlite::Transaction<'_>,
    command: Command,
    notices: &mut Vec<Notice>,
) -> Completion {
    // A savepoint per operation: if the operation fails midway, only its own writes roll back
    // (dropping an uncommitted savepoint rolls it back).
    let sp = match tx.savepoint_with_name("op") {
        Ok(sp) => sp,
        Err(e) => {
            let msg = e.to_string();
            return Box::new(move |_| fail_command(command, &msg));
        }
    };
    let mut local = Vec::new();
    let (done, ok) = apply(&sp, command, &mut local);
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

/// Runs one command; returns its completion and whether it succeeded.
fn apply(conn: &Connection, command: Command, notices: &mut Vec<Notice>) -> (Completion, bool) {
    fn finish<T: Send + 'static>(
        reply: Reply<T>,
        result: Result<T, rusqlite::Error>,
    ) -> (Completion, bool) {
        let ok = result.is_ok();
        (completion(reply, result.map_err(StoreError::from)), ok)
    }
    match command {
        Command::CreateBin(bin, reply) => finish(reply, create_bin(conn, &bin)),
        Command::DeleteBin(id, reply) => {
            let result = conn.execute("DELETE FROM bins WHERE id = ?1", [&id]);
            notices.push(Notice::BinGone(id));
            finish(reply, result.map(|n| n > 0))
        }
        Command::SetResponse {
            id,
            response,
            now,
            reply,
        } => finish(reply, set_response(conn, &id, response.as_deref(), now)),
        Command::DeleteRequest { bin, id, reply } => finish(reply, delete_request(conn, &bin, id)),
        Command::ClearRequests { bin, reply } => finish(reply, clear_requests(conn, &bin)),
        Command::Reap { now, budget, reply } => {
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
