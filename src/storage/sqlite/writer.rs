//! The writer thread: owns the only write connection and commits queued operations in batches.
//!
//! Group commit: the thread blocks for one operation, then takes whatever else is already queued
//! (up to [`MAX_BATCH`]), runs them all in one transaction, commits once, and only then answers
//! each caller. Under load many captures share one commit; alone, a capture commits at once.
//!
//! When the WAL has grown large, the writer also runs a checkpoint between two batches, after
//! answering their callers, so that the WAL can start over, and when it has been idle a while,
//! one that truncates the WAL file (see `checkpoint.rs`).
//!
//! Captures are the hot path and cost one INSERT each: consecutive captures in a batch form a
//! run, in which each bin is looked up once, and its request count and the eviction of its oldest
//! requests are settled once, at the end of the run.
//!
//! A reap step (the reaper's deletes of expired bins) is not one transaction: the writer takes it
//! in slices of [`SLICE_ROWS`] rows, one in each transaction it runs, with the captures of the
//! next batches or alone when the queue is empty, and answers the reaper when the step is done
//! (`ReapStep`). So a capture never waits for more than a slice of it.
//!
//! A batch first runs without savepoints (they cost SQLite a copy of every page touched). If any
//! operation fails, that attempt is rolled back and the batch redone with every operation, and
//! every run of captures, in a savepoint of its own; a failing run is then redone one capture per
//! savepoint. So one failing operation fails alone and never leaves half its writes behind.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::types::ToSqlOutput;
use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};
use tokio::sync::{mpsc, oneshot};

use super::checkpoint::{WalSize, checkpoint, truncate_idle};
use super::memo::Memo;
use super::prefetch::Prefetcher;
use super::ring::Ring;
use super::schema::asked_size;
use crate::events::EventHub;
use crate::model::Bin;
use crate::storage::{CaptureOutcome, CaptureReply, NewCapture, ReapProgress, StoreError};

/// Operations per transaction at most; bounds how long one commit keeps callers waiting.
pub const MAX_BATCH: usize = 512;

pub type Reply<T> = oneshot::Sender<Result<T, StoreError>>;

#[derive(Debug)]
pub enum Op {
    /// The hot path, batched specially (see the module docs).
    Capture {
        capture: Box<NewCapture>,
        reply: CaptureReply,
    },
    Other(Command),
    /// The checkpoint thread found the writer idle: truncate the WAL if nothing is queued
    /// (`checkpoint::truncate_idle`). Never part of a batch.
    Idle,
}

impl Op {
    fn is_capture(&self) -> bool {
        matches!(self, Op::Capture { .. })
    }

    fn is_reap(&self) -> bool {
        matches!(self, Op::Other(Command::Reap { .. }))
    }

    fn capture(&self) -> Option<&NewCapture> {
        match self {
            Op::Capture { capture, .. } => Some(capture),
            Op::Other(_) | Op::Idle => None,
        }
    }
}

/// Every write that is not a capture.
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

pub fn run(
    mut conn: Connection,
    mut ops: mpsc::Receiver<Op>,
    events: Arc<EventHub>,
    wal: Arc<WalSize>,
    used: Arc<AtomicU64>,
) {
    // Every commit reports the WAL's size (see `checkpoint.rs`). `wal_autocheckpoint = 0`, set
    // when the connection was opened, removed SQLite's own hook; setting it again would remove
    // this one.
    let size = wal.clone();
    let hooked = conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, frames| {
        size.committed(i64::from(frames));
        Ok(())
    }));
    if let Err(e) = hooked {
        tracing::error!(cause = %e, "cannot follow the WAL's size; it is never restarted");
    }
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut memo = Memo::default();
    let mut step: Option<ReapStep> = None;
    loop {
        // With a reap step under way, an empty queue is the time to run a slice of it alone.
        let op = match &step {
            Some(_) => match ops.try_recv() {
                Ok(op) => op,
                Err(mpsc::error::TryRecvError::Empty) => Op::Idle,
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            },
            None => match ops.blocking_recv() {
                Some(op) => op,
                None => break,
            },
        };
        if let Op::Idle = op {
            if step.is_none() {
                if ops.is_empty() {
                    truncate_idle(&conn, &wal);
                }
                continue;
            }
        } else {
            batch.push(op);
        }
        // Group commit takes what is queued and no more. Waiting 150 us for more when a batch
        // came out small (under load) made batches ~1.6x larger, but measured no change in
        // req/s or CPU per capture (A/B, 3 rounds of 5 s): the writer is not what is short.
        while batch.len() < MAX_BATCH {
            match ops.try_recv() {
                // Not idle after all.
                Ok(Op::Idle) => {}
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        // A reap step is not run as it comes: it goes in slices, one in each transaction from
        // now on (see `ReapStep`). One step at a time: the reaper waits for each.
        if step.is_none()
            && let Some(at) = batch.iter().position(Op::is_reap)
            && let Op::Other(Command::Reap { now, budget, reply }) = batch.remove(at)
        {
            step = Some(ReapStep::new(now, budget, reply));
        }
        let slice = step.as_ref().map(|s| {
            let (op, answer) = s.slice();
            batch.push(op);
            answer
        });
        let alone = slice.is_some() && batch.len() == 1;
        let started = std::time::Instant::now();
        commit_batch(&mut conn, &mut memo, &mut batch, &events, &used);
        if let Some(mut answer) = slice {
            // A slice alone in its transaction kept the writer for the whole of it, COMMIT
            // included; one that rode along with captures, for its own statements.
            let took = alone.then(|| started.elapsed());
            let result = answer.try_recv().unwrap_or(Err(StoreError::Closed));
            step = step.take().and_then(|s| s.slice_done(result, took));
        }
        // The size after this loop's commits. When the background thread held the checkpoint
        // lock (frames -1, nothing done), the WAL stays large and the writer tries again after
        // the next batch.
        if wal.wants_restart()
            && let Some(done) = checkpoint(&conn, "PASSIVE")
        {
            let took_us = done.took.as_micros() as u64;
            tracing::debug!(
                frames = done.frames,
                copied = done.copied,
                took_us,
                "writer checkpoint"
            );
        }
    }
    // The reaper is told what its step did so far; it stops too.
    if let Some(step) = step {
        step.finish();
    }
    // Before the last checkpoint, which waits for readers.
    stop_read_ahead();
    // Every queued write is committed; leave a database file that holds everything.
    checkpoint(&conn, "TRUNCATE");
    tracing::debug!("database writer stopped: every queued write is committed");
}

/// Rows of a reap step deleted in one transaction: a slice.
///
/// A reap step used to run whole in a transaction of its own, about 1 ms that every capture
/// arriving meanwhile waited for, some 20 times a second while the reaper works (2% of the
/// writer's time, about the share of captures at the p99). In slices, the wait a capture can meet
/// shrinks to one slice, and a slice that rides along with the captures of a batch shares their
/// COMMIT. 32 rows of 1 KiB requests, deleted in row order, take some 80 us (2.5 us a row,
/// bench/RESULTS.md 2026-12-02). Measured with `bench/run.sh`'s reap of 100k requests under load
/// (bench/RESULTS.md, 2026-12-05 14:17): the capture p99 while reaping 1.23x that of the same
/// load without, against 1.38-1.52x with whole steps (runs without a freeze of the machine). The
/// soak's p99 rule (`bench/soak.sh`) did not move: its last minute's p99 is as far above the
/// first's with no reaping at all.
const SLICE_ROWS: usize = 32;

/// A reap step the writer works through, one slice in each transaction it runs: with the
/// captures of a batch when there are any, alone when the queue is empty. Its caller, the reaper,
/// is answered once the step's budget is used up or nothing is left, with the time its slices
/// held the writer.
struct ReapStep {
    now: i64,
    /// Rows of the step's budget not yet deleted.
    left: usize,
    done: ReapProgress,
    reply: Reply<ReapProgress>,
}

impl ReapStep {
    fn new(now: i64, budget: usize, reply: Reply<ReapProgress>) -> ReapStep {
        ReapStep {
            now,
            left: budget.max(1),
            done: ReapProgress {
                step_time: Some(std::time::Duration::ZERO),
                ..ReapProgress::default()
            },
            reply,
        }
    }

    /// The next slice, as a reap command for the batch, and where its result comes back.
    fn slice(&self) -> (Op, oneshot::Receiver<Result<ReapProgress, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let op = Op::Other(Command::Reap {
            now: self.now,
            budget: self.left.min(SLICE_ROWS),
            reply,
        });
        (op, answer)
    }

    /// Takes in a committed slice's result (`alone`: its transaction's time, when the slice was
    /// all of it); the step when it goes on, `None` once its caller has been answered.
    fn slice_done(
        mut self,
        result: Result<ReapProgress, StoreError>,
        alone: Option<std::time::Duration>,
    ) -> Option<ReapStep> {
        let slice = match result {
            Ok(slice) => slice,
            Err(e) => {
                let _ = self.reply.send(Err(e));
                return None;
            }
        };
        let own = alone.or(slice.step_time).unwrap_or_default();
        let deleted = slice.requests_deleted as usize;
        let idle = deleted == 0 && slice.bins_deleted.is_empty();
        self.left = self.left.saturating_sub(deleted);
        self.done.requests_deleted += slice.requests_deleted;
        self.done.bins_deleted.extend(slice.bins_deleted);
        self.done.step_time = Some(self.done.step_time.unwrap_or_default() + own);
        self.done.done = slice.done;
        // A slice that found nothing to delete ends the step too, so that it can never spin.
        if slice.done || self.left == 0 || idle {
            self.finish();
            return None;
        }
        Some(self)
    }

    /// Answers the reaper with what the step's slices did.
    fn finish(self) {
        let _ = self.reply.send(Ok(self.done));
    }
}

/// Bytes of the database's pages in use: its size without the free pages that deleted rows left,
/// which new rows reuse. So deleting bins (the reaper) makes room under `--max-db-bytes` even
/// though the file does not shrink.
///
/// As of the connection's last commit, read off the frames that commit wrote (walbuf's
/// [`walbuf::committed_size`]) when walbuf has the figure. Asking SQLite (`PRAGMA page_count` and
/// `freelist_count`) after every batch cost the writer 0.5-0.8 us a capture: SQLite prepares a
/// pragma's statement again on every run (perf, bench/RESULTS.md 2026-12-05). Else, at the start
/// and on a connection not opened through walbuf, SQLite is asked, and walbuf goes on from that.
pub fn live_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    if let Some(size) = walbuf::committed_size(conn) {
        return Ok(size.bytes_in_use());
    }
    let size = asked_size(conn)?;
    walbuf::note_size(conn, size);
    Ok(size.bytes_in_use())
}

/// What one operation of a committed batch did.
enum Outcome {
    Capture(CaptureOutcome),
    Command(Answer),
}

/// A command's result, before it is sent to its caller.
enum Answer {
    Unit,
    Bool(bool),
    Bin(Option<Bin>),
    Reap(ReapProgress),
}

type Outcomes = Vec<Result<Outcome, rusqlite::Error>>;

/// Commits the batch in one transaction, then answers every caller.
///
/// The first attempt runs without savepoints: a savepoint makes SQLite copy every page it
/// touches into a sub-journal, which cost 18% of the writer's time per capture. Operations fail
/// only on broken disks and invariants (ids are unique, bins are checked first), so when
/// anything fails the whole attempt is rolled back and the batch redone with each operation
/// isolated in a savepoint of its own: then only the failing operations fail.
fn commit_batch(
    conn: &mut Connection,
    memo: &mut Memo,
    batch: &mut Vec<Op>,
    events: &EventHub,
    used: &AtomicU64,
) {
    // Request ids come from each bin's row, inside the transaction: a rolled-back attempt gives
    // them again, and no id is ever given twice in a committed state.
    let started = std::time::Instant::now();
    let outcomes = run_batch(conn, memo, batch, false).or_else(|e| {
        tracing::warn!(cause = %e, "a batch failed; redoing it with each operation isolated");
        run_batch(conn, memo, batch, true)
    });
    let (outcomes, used_bytes) = match outcomes {
        Ok(done) => done,
        Err(e) => {
            let full = crate::storage::is_disk_full(&e);
            let msg = e.to_string();
            if full {
                // Not an error of ours: the operator must make room (or the reaper will).
                tracing::warn!(cause = %msg, "the database's disk is full; captures answer 507 until there is room");
            } else {
                tracing::error!(cause = %msg, "a batch could not be committed; its callers get an error");
            }
            let error = || {
                if full {
                    StoreError::Full(msg.clone())
                } else {
                    StoreError::Commit(msg.clone())
                }
            };
            for op in batch.drain(..) {
                fail(op, &error);
            }
            return;
        }
    };
    let took = started.elapsed();
    // What a stall looks like from here (see bench/README.md, BENCH_RUST_LOG).
    if took > std::time::Duration::from_millis(10) {
        tracing::debug!(
            ops = batch.len(),
            reap = batch.iter().any(Op::is_reap),
            took_us = took.as_micros() as u64,
            "slow batch"
        );
    }
    // Before answering, so that a capture sent after a delete's answer sees the room it made;
    // `--max-db-bytes` and /metrics read the figure without a query.
    if let Some(bytes) = used_bytes {
        used.store(bytes, Ordering::Relaxed);
    }
    // Publish before answering: once a capture is acknowledged, live streams already have it,
    // so a stream opened after a 2xx never receives that older request as "new".
    publish(events, batch, &outcomes);
    for (op, outcome) in batch.drain(..).zip(outcomes) {
        answer(op, outcome.map_err(StoreError::from));
    }
}

/// One transaction over the whole batch; on `Err`, nothing of it is stored. Also the bytes in
/// use once it commits (`None` when they could not be read; the batch commits all the same).
///
/// BEGIN and COMMIT are cached statements: rusqlite's `Transaction` runs them through
/// `execute_batch`, which parses them again for every batch.
fn run_batch(
    conn: &mut Connection,
    memo: &mut Memo,
    batch: &[Op],
    isolate: bool,
) -> rusqlite::Result<(Outcomes, Option<u64>)> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let done = execute(conn, memo, batch, isolate).and_then(|outcomes| {
        conn.prepare_cached("COMMIT")?.execute([])?;
        let used = live_bytes(conn)
            .inspect_err(|e| tracing::warn!(cause = %e, "cannot read the database's size"))
            .ok();
        Ok((outcomes, used))
    });
    if done.is_err() {
        // What the transaction taught the memo went with it.
        memo.clear();
        // Some errors (a full disk, I/O) end the transaction by themselves.
        if !conn.is_autocommit()
            && let Err(e) = conn.execute_batch("ROLLBACK")
        {
            tracing::warn!(cause = %e, "cannot roll back a failed batch");
        }
    }
    done
}

/// Runs the operations in order. Without `isolate`, the first failure is returned and the
/// caller must roll back. With it, each command runs in a savepoint of its own and so does each
/// run of captures (redone one capture per savepoint if it fails): every failure stays in its
/// operation's slot.
fn execute(
    conn: &Connection,
    memo: &mut Memo,
    batch: &[Op],
    isolate: bool,
) -> rusqlite::Result<Outcomes> {
    let mut outcomes = Vec::with_capacity(batch.len());
    // Consecutive captures form a run; every other operation stands alone.
    for ops in batch.chunk_by(|a, b| a.is_capture() && b.is_capture()) {
        let command = match &ops[0] {
            Op::Other(command) => command,
            // Never queued in a batch (see `run`); an outcome all the same, one per operation.
            Op::Idle => {
                outcomes.push(Ok(Outcome::Command(Answer::Unit)));
                continue;
            }
            Op::Capture { .. } => {
                let run: Vec<&NewCapture> = ops.iter().filter_map(Op::capture).collect();
                store_run(conn, memo, &run, isolate, &mut outcomes)?;
                continue;
            }
        };
        let result = if isolate {
            in_savepoint(conn, memo, |sp, memo| apply(sp, memo, command))?
        } else {
            Ok(apply(conn, memo, command)?)
        };
        outcomes.push(result.map(Outcome::Command));
    }
    Ok(outcomes)
}

/// Stores one run of captures (see [`execute`] for `isolate`).
fn store_run(
    conn: &Connection,
    memo: &mut Memo,
    run: &[&NewCapture],
    isolate: bool,
    outcomes: &mut Outcomes,
) -> rusqlite::Result<()> {
    let stored = if isolate {
        match in_savepoint(conn, memo, |sp, memo| insert_run(sp, memo, run))? {
            Ok(stored) => stored,
            Err(e) if run.len() == 1 => {
                outcomes.push(Err(e));
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(cause = %e, "a capture run failed; storing its captures one by one");
                for capture in run {
                    let one =
                        in_savepoint(conn, memo, |sp, memo| insert_run(sp, memo, &[capture]))?;
                    outcomes.push(one.map(|mut o| Outcome::Capture(o.remove(0))));
                }
                return Ok(());
            }
        }
    } else {
        insert_run(conn, memo, run)?
    };
    outcomes.extend(stored.into_iter().map(|o| Ok(Outcome::Capture(o))));
    Ok(())
}

/// Runs `f` in a savepoint that is rolled back if `f` fails; the inner result is `f`'s.
///
/// The outer error means the whole transaction is gone: on some errors (a full disk, I/O) SQLite
/// rolls it back by itself, and whatever ran after that would commit on its own, outside the
/// batch, while its caller is told the batch failed. So nothing more may run.
///
/// What `f` taught the writer's memo is forgotten with whatever it rolls back.
fn in_savepoint<T>(
    conn: &Connection,
    memo: &mut Memo,
    f: impl FnOnce(&Connection, &mut Memo) -> rusqlite::Result<T>,
) -> rusqlite::Result<rusqlite::Result<T>> {
    conn.execute_batch("SAVEPOINT op")?;
    match f(conn, memo) {
        Ok(value) => {
            conn.execute_batch("RELEASE op")?;
            Ok(Ok(value))
        }
        Err(e) if conn.is_autocommit() => Err(e),
        Err(e) => {
            memo.clear();
            conn.execute_batch("ROLLBACK TO op; RELEASE op")?;
            Ok(Err(e))
        }
    }
}

/// Tells live streams what the committed batch changed: its captures, as one event per bin,
/// and the bins it deleted (after the captures before the delete, so that order is kept).
fn publish(events: &EventHub, batch: &[Op], outcomes: &Outcomes) {
    let mut fresh = Vec::new();
    // One look for the batch when no stream is open (the usual case), not one per capture.
    let watching = events.watches_any();
    for (op, outcome) in batch.iter().zip(outcomes) {
        match (op, outcome) {
            // Building a summary costs allocations; only do it when a stream listens.
            (
                Op::Capture { capture, .. },
                Ok(Outcome::Capture(CaptureOutcome::Stored { id, .. })),
            ) if watching && events.is_watched(&capture.request.bin_id) => {
                fresh.push(capture.summary(*id));
            }
            (Op::Other(Command::DeleteBin(bin, _)), Ok(_)) => {
                events.publish(std::mem::take(&mut fresh));
                events.close(bin);
            }
            (Op::Other(Command::Reap { .. }), Ok(Outcome::Command(Answer::Reap(progress)))) => {
                events.publish(std::mem::take(&mut fresh));
                for bin in &progress.bins_deleted {
                    events.close(bin);
                }
            }
            _ => {}
        }
    }
    events.publish(fresh);
}

/// Sends the caller its operation's result.
fn answer(op: Op, outcome: Result<Outcome, StoreError>) {
    let command = match op {
        Op::Capture { capture, reply } => {
            let outcome = outcome.and_then(|o| match o {
                Outcome::Capture(o) => Ok(o),
                Outcome::Command(_) => Err(mismatch()),
            });
            // The caller may have gone away (client disconnected); nothing to do then.
            let _ = reply.send((outcome, capture));
            return;
        }
        Op::Other(command) => command,
        Op::Idle => return,
    };
    let answer = outcome.and_then(|o| match o {
        Outcome::Command(answer) => Ok(answer),
        Outcome::Capture(_) => Err(mismatch()),
    });
    match command {
        Command::CreateBin(_, reply) | Command::ClearRequests { reply, .. } => {
            let _ = reply.send(answer.map(|_| ()));
        }
        Command::DeleteBin(_, reply) | Command::DeleteRequest { reply, .. } => {
            let _ = reply.send(answer.map(|a| matches!(a, Answer::Bool(true))));
        }
        Command::SetResponse { reply, .. } => {
            let _ = reply.send(answer.and_then(|a| match a {
                Answer::Bin(bin) => Ok(bin),
                _ => Err(mismatch()),
            }));
        }
        Command::Reap { reply, .. } => {
            let _ = reply.send(answer.and_then(|a| match a {
                Answer::Reap(progress) => Ok(progress),
                _ => Err(mismatch()),
            }));
        }
    }
}

/// An outcome of the wrong kind for its operation: a bug in this module.
fn mismatch() -> StoreError {
    StoreError::Internal("an operation got another operation's result".into())
}

/// What a run does to one bin.
struct BinTally {
    /// The bin's number (`bins.num`), what its rows name it by; 0 when it does not exist.
    num: i64,
    /// `None` when the bin does not exist.
    expires_at: Option<i64>,
    /// The bin's request count and stored bytes before this run.
    count: u64,
    bytes: u64,
    max_per_bin: u64,
    max_bytes: u64,
    /// The bin's ring (`bins.ring`): 0 before its first capture.
    ring: i64,
    /// The newest request id given in the bin (before this run: its `last_request_id`), recorded
    /// as the bin's `last_request_id` at the end of the run.
    last_id: i64,
    /// The run's captures for this bin, oldest first: (index in the run, request id).
    new: Vec<(usize, i64)>,
}

/// Stores a run of captures. Each bin is looked up once, numbers its requests itself (the next
/// id is its `last_request_id` + 1), and is settled once: its oldest requests beyond the caps
/// are evicted, and its row records the new count, bytes and newest id.
///
/// A bin the memo knows is looked up by its number (one seek into the table); one it does not,
/// or whose remembered number finds no row, by its text id (the UNIQUE index, then the table).
fn insert_run(
    conn: &Connection,
    memo: &mut Memo,
    run: &[&NewCapture],
) -> rusqlite::Result<Vec<CaptureOutcome>> {
    // In first-seen order, so that a run is always written the same way.
    let mut bins: Vec<(&str, BinTally)> = Vec::new();
    let mut outcomes = Vec::with_capacity(run.len());
    let mut by_num = conn.prepare_cached(
        "SELECT expires_at, request_count, last_request_id, bytes_used, ring, num FROM bins
         WHERE num = ?1",
    )?;
    let mut by_id = conn.prepare_cached(
        "SELECT expires_at, request_count, last_request_id, bytes_used, ring, num FROM bins
         WHERE id = ?1",
    )?;
    type Row = (i64, i64, i64, i64, i64, i64);
    let read = |row: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
        Ok((
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
        ))
    };
    for (i, capture) in run.iter().enumerate() {
        let r = &capture.request;
        let at = match bins.iter().position(|(id, _)| *id == r.bin_id) {
            Some(at) => at,
            None => {
                let mut found = match memo.num(&r.bin_id) {
                    Some(num) => by_num.query_row([num], read).optional()?,
                    None => None,
                };
                if found.is_none() {
                    found = by_id.query_row([&r.bin_id], read).optional()?;
                    match found {
                        Some(row) => memo.learn_num(&r.bin_id, row.5),
                        None => memo.forget_num(&r.bin_id),
                    }
                }
                bins.push((
                    r.bin_id.as_str(),
                    BinTally {
                        num: found.map_or(0, |f| f.5),
                        expires_at: found.map(|f| f.0),
                        count: found.map_or(0, |f| f.1 as u64),
                        bytes: found.map_or(0, |f| f.3.max(0) as u64),
                        max_per_bin: capture.max_per_bin,
                        max_bytes: capture.max_bin_bytes,
                        ring: found.map_or(0, |f| f.4),
                        last_id: found.map_or(0, |f| f.2),
                        new: Vec::new(),
                    },
                ));
                bins.len() - 1
            }
        };
        let tally = &mut bins[at].1;
        if tally.expires_at.is_none_or(|at| at <= r.received_at) {
            outcomes.push(CaptureOutcome::BinGone);
            continue;
        }
        tally.last_id += 1;
        tally.new.push((i, tally.last_id));
        outcomes.push(CaptureOutcome::Stored {
            id: tally.last_id,
            evicted: 0,
        });
    }
    let mut statements = RunStatements::prepare(conn)?;
    for (_, tally) in bins.iter().filter(|(_, t)| !t.new.is_empty()) {
        let evicted = store_bin(conn, memo, &mut statements, tally, run)?;
        let last = tally.new[tally.new.len() - 1].0;
        if let CaptureOutcome::Stored { evicted: e, .. } = &mut outcomes[last] {
            *e = evicted;
        }
    }
    Ok(outcomes)
}

/// The statements [`store_bin`] runs for every bin, prepared (taken from the connection's cache)
/// once per run rather than once per bin. A run spreads over many bins (under load ~11 captures
/// a commit, mostly one per bin), and each `prepare_cached` hashes the statement's text and moves
/// it out of the cache and back: with six per bin, 5% of the writer's CPU in the soak (perf,
/// `StatementCache::get`, the hashing and the return to the cache; bench/RESULTS.md 2026-12-05).
struct RunStatements<'c> {
    oldest: rusqlite::CachedStatement<'c>,
    delete: rusqlite::CachedStatement<'c>,
    overwrite: rusqlite::CachedStatement<'c>,
    insert: rusqlite::CachedStatement<'c>,
    settle: rusqlite::CachedStatement<'c>,
    answer: rusqlite::CachedStatement<'c>,
}

impl<'c> RunStatements<'c> {
    fn prepare(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(RunStatements {
            oldest: conn.prepare_cached(
                "SELECT id, seq, CASE body_codec WHEN 0 THEN length(body) ELSE body_size END
                     + length(headers) FROM bin_requests INDEXED BY bin_requests_by_bin
                   WHERE bin_num = ?1 AND slot BETWEEN ?2 AND ?3 AND seq BETWEEN ?4 AND ?5",
            )?,
            delete: conn.prepare_cached("DELETE FROM bin_requests WHERE id = ?1")?,
            overwrite: conn.prepare_cached(
                "UPDATE bin_requests SET seq = ?2, received_at = ?3, method = ?4, path = ?5,
                     subpath = ?6, query = ?7, content_type = ?8, body_size = ?9,
                     body_truncated = ?10, remote_addr = ?11, http_version = ?12, headers = ?13,
                     body = ?14, response = ?15, body_codec = ?16, response_n = ?17
                 WHERE id = ?1",
            )?,
            insert: conn.prepare_cached(
                "INSERT INTO bin_requests (bin_num, seq, received_at, method, path, subpath, query,
                     content_type, body_size, body_truncated, remote_addr, http_version, headers,
                     body, response, body_codec, response_n, slot)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18)",
            )?,
            settle: conn.prepare_cached(
                "UPDATE bins SET request_count = ?2, last_request_id = ?3, bytes_used = ?4,
                     ring = ?5
                 WHERE num = ?1",
            )?,
            answer: conn
                .prepare_cached("SELECT n FROM bin_responses WHERE bin_num = ?1 AND record = ?2")?,
        })
    }
}

/// Writes a run's captures to one bin and evicts its oldest requests beyond the caps
/// (`--max-requests-per-bin`, `--max-bin-bytes`); the number evicted. The newest request is never
/// evicted, so a bin always shows its latest capture.
///
/// A capture goes to its slot in the bin's ring (`ring.rs`): the ring is the cap in force at the
/// bin's first capture, and a bin keeps only requests among its `ring` newest ids, so a cap
/// raised since applies to bins created after (documented in docs/API-additions.md). A full bin
/// evicts one old request per new one, and the evicted request sat in the new one's slot: the
/// capture is written over it, in place (same row id, same page when it fits, same index
/// entry). Deleting old rows and inserting new ones made SQLite rebalance the b-tree's oldest
/// leaves and walk the free list (34 WAL pages per batch of 32 captures of 1 KiB, against 18
/// without eviction); moving the row's index entry from the bin's first leaf to its last, as an
/// index by id did, wrote two thirds of a capture's WAL bytes under load. Evicted rows whose slot
/// no new capture takes (a lowered cap, the byte quota) are deleted.
///
/// The oldest rows are walked through INDEXED BY without ORDER BY: SQLite re-prepares, on every
/// use, any statement here that combines the bin's `= ?1` with ORDER BY (measured with
/// `sqlite3_stmt_status(REPREPARE)`: it spent 10% of the writer's time re-parsing itself).
/// INDEXED BY fixes the scan to `bin_requests_by_bin`, whose order is (bin_num, slot), so each run
/// of slots comes oldest first; `length()` of a blob does not read its overflow pages.
fn store_bin(
    conn: &Connection,
    memo: &mut Memo,
    statements: &mut RunStatements,
    tally: &BinTally,
    run: &[&NewCapture],
) -> rusqlite::Result<u64> {
    let bin = tally.num;
    let new_bytes = |&(i, _): &(usize, i64)| run[i].stored_bytes();
    let size = match tally.ring {
        0 => Ring::for_cap(tally.max_per_bin),
        ring => ring,
    };
    // The bin as it was before the run, and the ids it may keep after it: above `floor`.
    let before = Ring {
        size,
        last: tally.new[0].1 - 1,
    };
    let floor = tally.last_id.saturating_sub(size);
    let cap = tally.max_per_bin.min(size as u64);
    let count = tally.count + tally.new.len() as u64;
    let bytes = tally.bytes + tally.new.iter().map(new_bytes).sum::<u64>();
    let (mut evicted, mut freed) = (0u64, 0u64);
    let over = |evicted: u64, freed: u64| count - evicted > cap || bytes - freed > tally.max_bytes;
    // The bin's stored requests that go, oldest first: (row id, seq).
    let mut old: Vec<(i64, i64)> = Vec::new();
    if tally.count > 0 && (over(0, 0) || before.runs(1, floor).next().is_some()) {
        let oldest = &mut statements.oldest;
        'walk: for slots in before.runs(1, before.last) {
            let mut rows = oldest.query(params![
                bin,
                slots.slot_lo,
                slots.slot_hi,
                slots.seq_lo,
                slots.seq_hi
            ])?;
            while let Some(row) = rows.next()? {
                let seq: i64 = row.get(1)?;
                if !over(evicted, freed) && seq > floor {
                    break 'walk;
                }
                old.push((row.get(0)?, seq));
                evicted += 1;
                freed += row.get::<_, i64>(2)?.max(0) as u64;
            }
        }
    }
    // Then the run's own oldest captures, if the caps still call for it (a burst larger than the
    // cap, or a body larger than the byte quota): they keep their id but are never written.
    let mut skip = 0;
    while over(evicted, freed) && skip + 1 < tally.new.len() {
        freed += new_bytes(&tally.new[skip]);
        evicted += 1;
        skip += 1;
    }
    let kept = &tally.new[skip..];
    // Each kept capture takes the row of the evicted request `size` ids older, in its slot;
    // both lists go up by id.
    let mut recycle: Vec<Option<i64>> = vec![None; kept.len()];
    let mut used = vec![false; old.len()];
    let mut o = 0;
    for (k, &(_, id)) in kept.iter().enumerate() {
        let wanted = id.saturating_sub(size);
        while o < old.len() && old[o].1 < wanted {
            o += 1;
        }
        if o < old.len() && old[o].1 == wanted {
            recycle[k] = Some(old[o].0);
            used[o] = true;
            o += 1;
        }
    }
    // The other evicted rows go first: their slots may be the new rows'.
    for (&(row, _), _) in old.iter().zip(&used).filter(|(_, used)| !**used) {
        statements.delete.execute([row])?;
    }
    let mut answers = Answers::new(bin);
    for (&(i, id), row) in kept.iter().zip(recycle) {
        let answer = answers.find(
            conn,
            memo,
            &mut statements.answer,
            run[i].response_json.as_ref(),
        )?;
        let columns = capture_columns(run[i], answer)?;
        match row {
            Some(row) => statements.overwrite.execute(params_from_iter(
                [row.into(), id.into()].into_iter().chain(columns),
            ))?,
            None => statements.insert.execute(params_from_iter(
                [bin.into(), id.into()]
                    .into_iter()
                    .chain(columns)
                    .chain([before.slot(id).into()]),
            ))?,
        };
    }
    statements.settle.execute(params![
        bin,
        (count - evicted) as i64,
        tally.last_id,
        (bytes - freed) as i64,
        size
    ])?;
    Ok(evicted)
}

/// Distinct answers a bin keeps in `bin_responses`. A capture whose answer is not among them once
/// the bin has this many stores it in its own row: the sender chooses some of what a CORS
/// preflight's answer says, and a stored answer stays until its bin is cleared or deleted,
/// outside `--max-bin-bytes`, so their number must be bounded.
const MAX_ANSWERS_PER_BIN: usize = 16;

/// Where the answers of one bin's captures are stored (schema version 8): each distinct answer
/// once, in `bin_responses`, and a capture names it by its `n` there. The default answer's
/// record is some 260 bytes, half of a small capture's row: storing it in every row made each
/// capture write 11-18% more bytes to the disk (`bench/run.sh`, RESULTS.md 2026-12-03 14:34).
struct Answers<'a> {
    /// The bin's number.
    bin: i64,
    /// The previous capture's answer and where it went: a run's captures mostly share one.
    last: Option<(&'a Arc<str>, Option<i64>)>,
}

impl<'a> Answers<'a> {
    fn new(bin: i64) -> Self {
        Answers { bin, last: None }
    }

    /// `record`'s `n` in the bin's `bin_responses`, stored there first if it is new and the bin
    /// has room; `None` when the row keeps it (or there is none). Found in the memo when the
    /// writer has seen it before (captures spread over many bins would otherwise look each
    /// bin's answer up once per capture); else SQLite compares the text, so nothing is read out.
    /// `lookup`: [`RunStatements::answer`].
    fn find(
        &mut self,
        conn: &Connection,
        memo: &mut Memo,
        lookup: &mut rusqlite::Statement,
        record: Option<&'a Arc<str>>,
    ) -> rusqlite::Result<Option<i64>> {
        let Some(record) = record else {
            return Ok(None);
        };
        if let Some((last, n)) = self.last
            && (Arc::ptr_eq(last, record) || last == record)
        {
            return Ok(n);
        }
        if let Some(n) = memo.answer(self.bin, record) {
            self.last = Some((record, Some(n)));
            return Ok(Some(n));
        }
        let text: &str = record;
        let found: Option<i64> = lookup
            .query_row(params![self.bin, text], |row| row.get(0))
            .optional()?;
        let n = match found {
            Some(n) => Some(n),
            None => {
                let (stored, last): (i64, i64) = conn
                    .prepare_cached(
                        "SELECT count(*), coalesce(max(n), 0) FROM bin_responses
                         WHERE bin_num = ?1",
                    )?
                    .query_row([self.bin], |row| Ok((row.get(0)?, row.get(1)?)))?;
                if (stored as usize) < MAX_ANSWERS_PER_BIN {
                    conn.prepare_cached(
                        "INSERT INTO bin_responses (bin_num, n, record) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![self.bin, last + 1, text])?;
                    Some(last + 1)
                } else {
                    None
                }
            }
        };
        if let Some(n) = n {
            memo.learn_answer(self.bin, record, n);
        }
        self.last = Some((record, n));
        Ok(n)
    }
}

/// A capture's columns after the first two (the row to overwrite or the bin of a new row, and
/// the request id), in the order of the UPDATE and the INSERT above. Borrowed, not copied.
/// `answer`: the `bin_responses.n` of its answer, which the row then does not repeat.
fn capture_columns(
    capture: &NewCapture,
    answer: Option<i64>,
) -> rusqlite::Result<[ToSqlOutput<'_>; 15]> {
    let r = &capture.request;
    let (body, codec) = match &capture.packed_body {
        Some(packed) => (packed, super::body::LZ4),
        None => (&r.body, super::body::RAW),
    };
    Ok([
        r.received_at.to_sql()?,
        r.method.to_sql()?,
        r.path.to_sql()?,
        r.subpath.to_sql()?,
        r.query.to_sql()?,
        capture.content_type.to_sql()?,
        (r.body_size as i64).into(),
        r.body_truncated.to_sql()?,
        r.remote_addr.to_sql()?,
        r.http_version.to_sql()?,
        capture.headers_blob.to_sql()?,
        body.to_sql()?,
        match answer {
            Some(_) => ToSqlOutput::from(rusqlite::types::Null),
            None => capture.response_json.to_sql()?,
        },
        codec.into(),
        match answer {
            Some(n) => n.into(),
            None => ToSqlOutput::from(rusqlite::types::Null),
        },
    ])
}

/// Answers `op` with the batch's error, made by `error` (one per caller: errors do not clone).
fn fail(op: Op, error: &dyn Fn() -> StoreError) {
    match op {
        Op::Capture { capture, reply } => {
            let _ = reply.send((Err(error()), capture));
        }
        Op::Other(command) => fail_command(command, error),
        Op::Idle => {}
    }
}

fn fail_command(command: Command, error: &dyn Fn() -> StoreError) {
    match command {
        Command::CreateBin(_, r) | Command::ClearRequests { reply: r, .. } => {
            let _ = r.send(Err(error()));
        }
        Command::DeleteBin(_, r) | Command::DeleteRequest { reply: r, .. } => {
            let _ = r.send(Err(error()));
        }
        Command::SetResponse { reply, .. } => {
            let _ = reply.send(Err(error()));
        }
        Command::Reap { reply, .. } => {
            let _ = reply.send(Err(error()));
        }
    }
}

/// Runs one command.
fn apply(conn: &Connection, memo: &mut Memo, command: &Command) -> rusqlite::Result<Answer> {
    Ok(match command {
        Command::CreateBin(bin, _) => create_bin(conn, bin).map(|()| Answer::Unit)?,
        Command::DeleteBin(id, _) => {
            let n = conn
                .prepare_cached("DELETE FROM bins WHERE id = ?1")?
                .execute([id])?;
            Answer::Bool(n > 0)
        }
        Command::SetResponse {
            id, response, now, ..
        } => Answer::Bin(set_response(conn, id, response.as_deref(), *now)?),
        Command::DeleteRequest { bin, id, .. } => Answer::Bool(delete_request(conn, bin, *id)?),
        Command::ClearRequests { bin, .. } => {
            clear_requests(conn, memo, bin).map(|()| Answer::Unit)?
        }
        Command::Reap { now, budget, .. } => {
            let started = std::time::Instant::now();
            let mut progress = reap(conn, *now, *budget)?;
            progress.step_time = Some(started.elapsed());
            Answer::Reap(progress)
        }
    })
}

fn create_bin(conn: &Connection, bin: &Bin) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO bins (id, created_at, expires_at, response, request_count, view_token_hash)
         VALUES (?1, ?2, ?3, ?4, 0, ?5)",
    )?
    .execute(params![
        bin.id,
        bin.created_at,
        bin.expires_at,
        bin.response,
        bin.view_token_hash
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
         RETURNING id, created_at, expires_at, response, request_count, view_token_hash, ring",
    )?
    .query_row(params![id, response, now], super::read::bin_from_row)
    .optional()
}

fn delete_request(conn: &Connection, bin: &str, id: i64) -> rusqlite::Result<bool> {
    let Some((num, ring)) = Ring::of(conn, bin)?.filter(|(_, r)| r.size > 0) else {
        return Ok(false);
    };
    let size: Option<i64> = conn
        .prepare_cached(
            "DELETE FROM bin_requests WHERE bin_num = ?1 AND slot = ?2 AND seq = ?3
             RETURNING CASE body_codec WHEN 0 THEN length(body) ELSE body_size END
                 + length(headers)",
        )?
        .query_row(params![num, ring.slot(id), id], |row| row.get(0))
        .optional()?;
    if let Some(size) = size {
        conn.prepare_cached(
            "UPDATE bins SET request_count = request_count - 1,
                 bytes_used = max(bytes_used - ?2, 0) WHERE num = ?1",
        )?
        .execute(params![num, size])?;
    }
    Ok(size.is_some())
}

/// Deletes every request of the bin, and the answers they got. Its ring starts again at its next
/// capture, with the cap then in force.
fn clear_requests(conn: &Connection, memo: &mut Memo, bin: &str) -> rusqlite::Result<()> {
    let Some((num, _)) = Ring::of(conn, bin)? else {
        return Ok(());
    };
    memo.forget_answers(num);
    conn.prepare_cached("DELETE FROM bin_requests WHERE bin_num = ?1")?
        .execute([num])?;
    conn.prepare_cached("DELETE FROM bin_responses WHERE bin_num = ?1")?
        .execute([num])?;
    conn.prepare_cached(
        "UPDATE bins SET request_count = 0, bytes_used = 0, ring = 0 WHERE num = ?1",
    )?
    .execute([num])?;
    Ok(())
}

/// Deletes requests of expired bins, about `budget` rows, then the bins left empty.
/// The budget bounds the transaction, and so how long the captures queued behind it wait; the
/// reaper sizes and spaces the steps (`reaper::Pacing`).
///
/// What a step costs is mostly the pages it dirties: each is written to the WAL at the COMMIT and
/// copied back by a checkpoint. A page is freed, not rewritten, only once its last row goes, so
/// the rows that share pages should go in the same step. Two layouts matter:
///
/// - Bins that expire together usually filled together, so the table's oldest rows belong to
///   expired bins, several bins interleaved (bins live for a TTL and fill in their first
///   seconds; a full bin's new captures reuse its evicted rows in place, so its rows stay where
///   it first filled). Deleting the oldest rows of the table in row order frees whole pages:
///   measured on a copy of the soak's database (`bench/soak.sh`, 141 expired bins, no load):
///   0.25 WAL pages and 2.5 us per deleted row, against 1.09 pages and 7.8 us when the step takes
///   the oldest requests of each expired bin (below), whose rows are spread over that bin's part
///   of the table and so interleaved with other bins' rows that go in other steps.
/// - Otherwise (the oldest rows belong to live bins, e.g. a long-lived bin created first), a
///   scan in row order would walk live rows to find expired ones, so the step takes the oldest
///   requests of every expired bin (up to 64 bins) at once and deletes them in row order. For
///   bins that filled side by side (the benchmark's reap: 100 bins filled round-robin) that is
///   the same order.
///
/// So a pass reaps in row order while that pays: each step looks at the next rows after the
/// last step's (at most twice the budget) and deletes the expired ones among them, as long as
/// they are at least half the budget. Once they are fewer (the rows left belong to live bins, or
/// expired rows are sparse among them), the rest of the pass goes by bin, which also finds every
/// expired row the walk left behind and the bins without requests. Where the walk stands is kept
/// between steps ([`WALK`]), so the live rows it passed are looked at once per pass. A thread of
/// its own reads the rows after it before the next steps come (`prefetch.rs`), so that a step
/// does not wait for the disk to read pages the kernel dropped from its cache since they were
/// written.
fn reap(conn: &Connection, now: i64, budget: usize) -> rusqlite::Result<ReapProgress> {
    let budget = budget.max(1);
    let (pass, after) = WALK.get();
    let after = if pass == now { after } else { 0 };
    if after != WALK_DONE {
        let walk = expired_rows_after(conn, now, after, budget)?;
        if walk.rows.len() * 2 >= budget {
            WALK.set((now, walk.last_seen));
            read_ahead(conn, walk.last_seen);
            return reap_rows(conn, &walk.rows, walk.bins);
        }
        WALK.set((now, WALK_DONE));
    }
    reap_by_bin(conn, now, budget)
}

thread_local! {
    /// The walk in row order of the writer's current pass (see [`reap`]): the pass's `now` and
    /// the last row id looked at, or [`WALK_DONE`]. Only the writer thread reaps. A step that
    /// rolls back leaves it moved on: the rows it skips that way are reaped by bin at the end of
    /// the pass, so it only ever costs speed.
    static WALK: std::cell::Cell<(i64, i64)> = const { std::cell::Cell::new((i64::MIN, 0)) };
}
const WALK_DONE: i64 = i64::MAX;

thread_local! {
    /// The thread that reads the rows after the walk before the next steps delete them (see
    /// `prefetch.rs`), started at the first step that walks, with the database file it reads
    /// (`None` when it could not start).
    static READ_AHEAD: std::cell::RefCell<Option<(String, Option<Prefetcher>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Has the rows after the walk's position read ahead (see [`READ_AHEAD`]). Nothing for an
/// in-memory database, which has no file to read.
fn read_ahead(conn: &Connection, after: i64) {
    let Some(path) = conn.path().filter(|p| !p.is_empty()) else {
        return;
    };
    READ_AHEAD.with_borrow_mut(|ahead| {
        // Keyed by the file, not the thread alone: a thread that reaps another database (tests)
        // gets a thread for that one.
        if ahead.as_ref().is_none_or(|(file, _)| file != path) {
            *ahead = Some((
                path.to_owned(),
                Prefetcher::start(std::path::Path::new(path)),
            ));
        }
        if let Some((_, Some(prefetcher))) = ahead {
            prefetcher.walk_at(after);
        }
    });
}

/// Stops the read-ahead thread, if it runs (the writer is stopping).
fn stop_read_ahead() {
    READ_AHEAD.with_borrow_mut(|ahead| *ahead = None);
}

/// Expired bins' requests among the rows after `after` (at most `2 * budget` rows looked at).
struct Walk {
    /// Their row ids, in row order (at most `budget`).
    rows: Vec<i64>,
    /// The bins they belong to: number and id.
    bins: Vec<(i64, String)>,
    /// The last row id looked at.
    last_seen: i64,
}

fn expired_rows_after(
    conn: &Connection,
    now: i64,
    after: i64,
    budget: usize,
) -> rusqlite::Result<Walk> {
    let mut next = conn.prepare_cached(
        "SELECT r.id, r.bin_num, b.expires_at <= ?2, b.id FROM bin_requests r
           JOIN bins b ON b.num = r.bin_num WHERE r.id > ?1 ORDER BY r.id",
    )?;
    let mut found = next.query(params![after, now])?;
    let mut walk = Walk {
        rows: Vec::with_capacity(budget),
        bins: Vec::new(),
        last_seen: after,
    };
    for _ in 0..budget * 2 {
        let Some(row) = found.next()? else { break };
        walk.last_seen = row.get(0)?;
        if !row.get::<_, bool>(2)? {
            continue;
        }
        walk.rows.push(walk.last_seen);
        let bin: i64 = row.get(1)?;
        // The rows of a few bins at a time: a scan of the list beats hashing.
        if !walk.bins.iter().any(|(b, _)| *b == bin) {
            walk.bins.push((bin, row.get(3)?));
        }
        if walk.rows.len() == budget {
            break;
        }
    }
    Ok(walk)
}

/// Deletes these rows, then those of their bins that have no request left.
fn reap_rows(
    conn: &Connection,
    rows: &[i64],
    bins: Vec<(i64, String)>,
) -> rusqlite::Result<ReapProgress> {
    let mut progress = ReapProgress {
        requests_deleted: delete_rows(conn, rows)?,
        ..ReapProgress::default()
    };
    let mut any = conn.prepare_cached(
        "SELECT 1 FROM bin_requests INDEXED BY bin_requests_by_bin WHERE bin_num = ?1 AND slot >= 0",
    )?;
    let mut emptied = Vec::new();
    for (num, id) in bins {
        if !any.exists([num])? {
            emptied.push((num, id));
        }
    }
    delete_emptied_bins(conn, emptied, &mut progress)?;
    Ok(progress)
}

/// Deletes bins whose requests a step has just deleted (no cascade left to run) and reports them
/// by id. `bins`: number and id.
fn delete_emptied_bins(
    conn: &Connection,
    bins: Vec<(i64, String)>,
    progress: &mut ReapProgress,
) -> rusqlite::Result<()> {
    let mut delete_bin = conn.prepare_cached("DELETE FROM bins WHERE num = ?1")?;
    for (num, id) in bins {
        delete_bin.execute([num])?;
        progress.bins_deleted.push(id);
    }
    Ok(())
}

/// Deletes the rows with these ids (in this order: row order walks the table forwards).
fn delete_rows(conn: &Connection, rows: &[i64]) -> rusqlite::Result<u64> {
    let mut delete = conn.prepare_cached("DELETE FROM bin_requests WHERE id = ?1")?;
    let mut deleted = 0;
    for row in rows {
        deleted += delete.execute([row])? as u64;
    }
    Ok(deleted)
}

/// A step by bin (see [`reap`]): the oldest requests of the earliest-expired bins (up to 64),
/// about `budget` rows in all, deleted in row order, then the bins left empty.
///
/// Bins that fill side by side interleave their rows in the table: deleting one bin's requests
/// at a time dirtied a leaf page per row, which stayed in use for its other bins' rows
/// (measured: 1.4 WAL pages written per deleted row, 560 MB of WAL for a reap of 100k requests
/// of 1 KiB). Taking the oldest requests of every expired bin at once deletes rows that share a
/// page in the same step.
fn reap_by_bin(conn: &Connection, now: i64, budget: usize) -> rusqlite::Result<ReapProgress> {
    let mut progress = ReapProgress::default();
    let mut expired = conn.prepare_cached(
        "SELECT num, id FROM bins WHERE expires_at <= ?1 ORDER BY expires_at, id LIMIT 64",
    )?;
    let bins: Vec<(i64, String)> = expired
        .query_map([now], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if bins.is_empty() {
        progress.done = true;
        return Ok(progress);
    }
    let per_bin = budget.div_ceil(bins.len()).max(1);
    // INDEXED BY without ORDER BY, as in `store_bin`: in slot order, which is the order of the
    // rows' ids only until a ring wraps; an expired bin goes whole, so any order does.
    let mut oldest = conn.prepare_cached(
        "SELECT id FROM bin_requests INDEXED BY bin_requests_by_bin
           WHERE bin_num = ?1 AND slot >= 0 LIMIT ?2",
    )?;
    let mut rows = Vec::with_capacity(per_bin * bins.len());
    let mut emptied = Vec::new();
    for (num, id) in bins {
        let before = rows.len();
        let found = oldest.query_map(params![num, per_bin as i64], |row| row.get::<_, i64>(0))?;
        for row in found {
            rows.push(row?);
        }
        if rows.len() - before < per_bin {
            // Its last requests go in this step: the bin goes too, without a cascade.
            emptied.push((num, id));
        }
    }
    rows.sort_unstable();
    progress.requests_deleted = delete_rows(conn, &rows)?;
    delete_emptied_bins(conn, emptied, &mut progress)?;
    Ok(progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StoredRequest;
    use crate::storage::Synchronous;

    const BIN: &str = "b1";

    struct Fixture {
        _dir: tempfile::TempDir,
        conn: Connection,
        memo: Memo,
        events: Arc<EventHub>,
    }

    /// A live bin `id`, written directly (no writer batch).
    fn add_bin(conn: &Connection, id: &str) {
        conn.execute(
            "INSERT INTO bins (id, created_at, expires_at) VALUES (?1, 0, 1000000)",
            [id],
        )
        .unwrap();
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let conn =
                super::super::schema::open_writer(&dir.path().join("w.db"), Synchronous::Normal)
                    .unwrap();
            add_bin(&conn, BIN);
            // A capture whose method is FAIL fails inside SQLite, like a broken disk would.
            conn.execute_batch(
                "CREATE TEMP TRIGGER fail BEFORE INSERT ON bin_requests WHEN NEW.method = 'FAIL'
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;
                 CREATE TEMP TRIGGER fail_recycled BEFORE UPDATE ON bin_requests
                 WHEN NEW.method = 'FAIL' BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
            )
            .unwrap();
            Fixture {
                _dir: dir,
                conn,
                memo: Memo::default(),
                events: EventHub::new(),
            }
        }

        fn commit(&mut self, batch: &mut Vec<Op>) {
            commit_batch(
                &mut self.conn,
                &mut self.memo,
                batch,
                &self.events,
                &AtomicU64::new(0),
            );
        }

        fn stored_methods(&self) -> Vec<String> {
            let mut stmt = self
                .conn
                .prepare("SELECT method FROM bin_requests ORDER BY seq")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        }

        fn request_count(&self) -> i64 {
            self.number(&format!(
                "SELECT request_count FROM bins WHERE id = '{BIN}'"
            ))
        }

        fn number(&self, sql: &str) -> i64 {
            self.conn.query_row(sql, [], |r| r.get(0)).unwrap()
        }
    }

    type CaptureWait = oneshot::Receiver<(Result<CaptureOutcome, StoreError>, Box<NewCapture>)>;

    fn capture(method: &str, cap: u64) -> (Op, CaptureWait) {
        capture_with_body(method, cap, b"{}")
    }

    fn capture_with_body(method: &str, cap: u64, body: &[u8]) -> (Op, CaptureWait) {
        capture_limited(method, cap, u64::MAX, body)
    }

    fn capture_limited(method: &str, cap: u64, max_bytes: u64, body: &[u8]) -> (Op, CaptureWait) {
        capture_to(BIN, method, cap, max_bytes, body)
    }

    fn capture_to(
        bin: &str,
        method: &str,
        cap: u64,
        max_bytes: u64,
        body: &[u8],
    ) -> (Op, CaptureWait) {
        let mut request = StoredRequest::sample::<&[u8]>(bin, "", "", &[], body);
        request.method = method.into();
        request.received_at = 1;
        let (reply, wait) = oneshot::channel();
        let capture = Box::new(NewCapture {
            // Packed as SqliteStore::try_capture does: repetitive bodies are stored compressed.
            packed_body: super::super::body::pack(&request.body, request.body_truncated),
            request,
            headers_blob: Vec::new(),
            content_type: None,
            response_json: None,
            max_per_bin: cap,
            max_bin_bytes: max_bytes,
        });
        (Op::Capture { capture, reply }, wait)
    }

    /// `n` bytes that do not compress, so that they take their size on disk.
    fn noise(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_u32;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 7) as u8
            })
            .collect()
    }

    fn stored_body(f: &Fixture, seq: i64) -> Vec<u8> {
        super::super::read::request(&f.conn, BIN, seq)
            .unwrap()
            .expect("stored")
            .body
    }

    fn bin(id: &str) -> Bin {
        Bin::sample(id, 1000000)
    }

    fn outcome(wait: CaptureWait) -> Result<CaptureOutcome, StoreError> {
        wait.blocking_recv().unwrap().0
    }

    #[test]
    fn statement_journals_stay_in_memory() {
        let f = Fixture::new();
        // 2 = MEMORY: an eviction's statement journal never becomes a temporary file.
        assert_eq!(f.number("PRAGMA temp_store"), 2);
    }

    #[test]
    fn a_batch_of_captures_is_stored_and_evicts_beyond_the_cap() {
        let mut f = Fixture::new();
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..5).map(|_| capture("POST", 3)).unzip();
        f.commit(&mut batch);
        let outcomes: Vec<_> = waits.into_iter().map(|w| outcome(w).unwrap()).collect();
        assert_eq!(outcomes[0], CaptureOutcome::Stored { id: 1, evicted: 0 });
        // The run's last capture reports what the run evicted.
        assert_eq!(outcomes[4], CaptureOutcome::Stored { id: 5, evicted: 2 });
        assert_eq!(f.stored_methods().len(), 3);
        assert_eq!(f.request_count(), 3);
    }

    #[test]
    fn a_bin_keeps_its_newest_requests_within_its_byte_quota() {
        let mut f = Fixture::new();
        let bytes_used =
            |f: &Fixture| f.number(&format!("SELECT bytes_used FROM bins WHERE id = '{BIN}'"));
        // 1000-byte bodies (no headers) under a 2500-byte quota: two fit.
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..4)
            .map(|_| capture_limited("POST", 1000, 2500, &[b'x'; 1000]))
            .unzip();
        f.commit(&mut batch);
        let last = waits.into_iter().map(|w| outcome(w).unwrap()).last();
        assert_eq!(last, Some(CaptureOutcome::Stored { id: 4, evicted: 2 }));
        assert_eq!(f.request_count(), 2);
        assert_eq!(bytes_used(&f), 2000);
        assert_eq!(
            f.number("SELECT min(seq) FROM bin_requests"),
            3,
            "the oldest go first"
        );
        // In a later batch the count carries over from the bin's row.
        let (op, wait) = capture_limited("PUT", 1000, 2500, &[b'y'; 700]);
        f.commit(&mut vec![op]);
        assert_eq!(
            outcome(wait).unwrap(),
            CaptureOutcome::Stored { id: 5, evicted: 1 }
        );
        assert_eq!(bytes_used(&f), 1700);
        // A request larger than the whole quota still shows: the newest is always kept.
        let (op, wait) = capture_limited("PUT", 1000, 2500, &[b'z'; 4000]);
        f.commit(&mut vec![op]);
        assert_eq!(
            outcome(wait).unwrap(),
            CaptureOutcome::Stored { id: 6, evicted: 2 }
        );
        assert_eq!(f.stored_methods(), ["PUT"]);
        assert_eq!(bytes_used(&f), 4000);
        // Deleting a request gives its bytes back; clearing the bin gives all of them back.
        let (op, wait) = capture_limited("POST", 1000, u64::MAX, &[b'w'; 10]);
        f.commit(&mut vec![op]);
        outcome(wait).unwrap();
        let (reply, deleted) = oneshot::channel();
        f.commit(&mut vec![Op::Other(Command::DeleteRequest {
            bin: BIN.into(),
            id: 6,
            reply,
        })]);
        assert!(deleted.blocking_recv().unwrap().unwrap());
        assert_eq!(bytes_used(&f), 10);
        let (reply, cleared) = oneshot::channel();
        f.commit(&mut vec![Op::Other(Command::ClearRequests {
            bin: BIN.into(),
            reply,
        })]);
        cleared.blocking_recv().unwrap().unwrap();
        assert_eq!(bytes_used(&f), 0);
    }

    #[test]
    fn live_bytes_leave_out_the_pages_deletes_freed() {
        let mut f = Fixture::new();
        let empty = live_bytes(&f.conn).unwrap();
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..50)
            .map(|_| capture_with_body("POST", 1000, &noise(4000)))
            .unzip();
        f.commit(&mut batch);
        for w in waits {
            outcome(w).unwrap();
        }
        let full = live_bytes(&f.conn).unwrap();
        assert!(full >= empty + 50 * 4000, "{empty} -> {full}");
        let (reply, cleared) = oneshot::channel();
        f.commit(&mut vec![Op::Other(Command::ClearRequests {
            bin: BIN.into(),
            reply,
        })]);
        cleared.blocking_recv().unwrap().unwrap();
        let after = live_bytes(&f.conn).unwrap();
        assert!(after < empty + 4 * 4096, "{empty} -> {full} -> {after}");
    }

    #[test]
    fn a_committed_batch_reports_the_bytes_in_use_after_it() {
        let mut f = Fixture::new();
        let used = AtomicU64::new(0);
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..20)
            .map(|_| capture_with_body("POST", 1000, &noise(4000)))
            .unzip();
        commit_batch(&mut f.conn, &mut f.memo, &mut batch, &f.events, &used);
        for w in waits {
            outcome(w).unwrap();
        }
        // walbuf's figure, read off the commit's frames, is SQLite's own.
        assert!(walbuf::committed_size(&f.conn).is_some());
        let full = asked_size(&f.conn).unwrap().bytes_in_use();
        assert_eq!(used.load(Ordering::Relaxed), full);
        assert!(full >= 20 * 4000, "{full}");
        let (reply, cleared) = oneshot::channel();
        let mut clear = vec![Op::Other(Command::ClearRequests {
            bin: BIN.into(),
            reply,
        })];
        commit_batch(&mut f.conn, &mut f.memo, &mut clear, &f.events, &used);
        cleared.blocking_recv().unwrap().unwrap();
        let after = asked_size(&f.conn).unwrap().bytes_in_use();
        assert_eq!(used.load(Ordering::Relaxed), after);
        assert!(after < full);
        // No transaction is left open behind the batch.
        assert!(f.conn.is_autocommit());
    }

    #[test]
    fn a_full_bin_writes_new_captures_over_its_evicted_rows() {
        let mut f = Fixture::new();
        let body = |n: usize| format!("{n:04} {}", "x".repeat(200 + n)).into_bytes();
        // Cap 3, batches of 2 and 5 (more than the cap: some new captures never stay), then 1.
        let mut n = 0;
        for size in [2, 5, 1, 2] {
            let (mut batch, waits): (Vec<_>, Vec<_>) = (0..size)
                .map(|_| {
                    n += 1;
                    capture_with_body("POST", 3, &body(n))
                })
                .unzip();
            f.commit(&mut batch);
            for w in waits {
                outcome(w).unwrap();
            }
        }
        assert_eq!(n, 10);
        // The newest three, each with its own bytes, under its own id.
        let seqs: Vec<i64> = (8..=10).collect();
        for &seq in &seqs {
            assert_eq!(stored_body(&f, seq), body(seq as usize), "request {seq}");
        }
        assert_eq!(f.number("SELECT count(*) FROM bin_requests"), 3);
        assert_eq!(f.number("SELECT min(seq) FROM bin_requests"), 8);
        assert_eq!(f.request_count(), 3);
        // Recycled: no more rows were ever made than the bin held at once.
        assert!(f.number("SELECT max(id) FROM bin_requests") <= 4);
        let bytes: i64 = seqs.iter().map(|&s| body(s as usize).len() as i64).sum();
        assert_eq!(
            f.number(&format!("SELECT bytes_used FROM bins WHERE id = '{BIN}'")),
            bytes
        );
        // Packed on disk, counted as received.
        assert_eq!(
            f.number("SELECT count(*) FROM bin_requests WHERE body_codec = 1"),
            3
        );
        assert!(f.number("SELECT sum(length(body)) FROM bin_requests") < bytes / 2);
    }

    /// (row id, seq, slot) of every stored request, by seq.
    fn rows(f: &Fixture) -> Vec<(i64, i64, i64)> {
        let mut stmt = f
            .conn
            .prepare("SELECT id, seq, slot FROM bin_requests ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn commit_captures(f: &mut Fixture, n: usize, cap: u64) {
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..n).map(|_| capture("POST", cap)).unzip();
        f.commit(&mut batch);
        for w in waits {
            outcome(w).unwrap();
        }
    }

    #[test]
    fn a_full_bins_captures_keep_the_row_and_slot_of_the_request_they_evict() {
        let mut f = Fixture::new();
        commit_captures(&mut f, 3, 3);
        assert_eq!(rows(&f), [(1, 1, 1), (2, 2, 2), (3, 3, 0)]);
        assert_eq!(
            f.number(&format!("SELECT ring FROM bins WHERE id = '{BIN}'")),
            3
        );
        // Many times round, in batches smaller and larger than the ring.
        for n in [1, 2, 3, 4, 1, 7, 2] {
            commit_captures(&mut f, n, 3);
        }
        // 23 ids given: the newest three, each in the slot and row its id says since the start.
        let row_of_slot = |slot: i64| [3, 1, 2][slot as usize];
        let want: Vec<_> = (21..=23)
            .map(|seq| (row_of_slot(seq % 3), seq, seq % 3))
            .collect();
        assert_eq!(rows(&f), want);
        assert_eq!(f.request_count(), 3);
    }

    #[test]
    fn a_bin_from_before_rings_evicts_by_deleting_and_keeps_its_ids() {
        let mut f = Fixture::new();
        // As the v7 migration leaves a bin with requests: slot = seq, an unbounded ring.
        f.conn
            .execute_batch(&format!(
                "UPDATE bins SET ring = {}, last_request_id = 9, request_count = 2
                   WHERE id = '{BIN}';
                 INSERT INTO bin_requests (bin_num, seq, slot, received_at, method, path, subpath,
                   query, body_size, body_truncated, remote_addr, http_version, headers, body)
                 SELECT num, 5, 5, 0, 'OLD', '/', '', '', 0, 0, '', 'HTTP/1.1', x'', x''
                   FROM bins WHERE id = '{BIN}'
                 UNION ALL
                 SELECT num, 9, 9, 0, 'OLD', '/', '', '', 0, 0, '', 'HTTP/1.1', x'', x''
                   FROM bins WHERE id = '{BIN}';",
                super::super::ring::UNBOUNDED
            ))
            .unwrap();
        commit_captures(&mut f, 2, 3);
        assert_eq!(
            rows(&f).iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
            [(9, 9), (10, 10), (11, 11)]
        );
        commit_captures(&mut f, 4, 3);
        assert_eq!(f.stored_methods(), ["POST", "POST", "POST"]);
        assert_eq!(
            rows(&f).iter().map(|r| r.1).collect::<Vec<_>>(),
            [13, 14, 15]
        );
        assert!(
            super::super::read::request(&f.conn, BIN, 15)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn deleting_a_request_frees_its_slot_and_clearing_a_bin_resets_its_ring() {
        let mut f = Fixture::new();
        commit_captures(&mut f, 4, 4);
        assert!(delete_request(&f.conn, BIN, 3).unwrap());
        assert!(!delete_request(&f.conn, BIN, 3).unwrap());
        assert!(!delete_request(&f.conn, BIN, 7).unwrap());
        assert_eq!(f.request_count(), 3);
        // 5 takes slot 1 from request 1 (out of the ring's window), 6 slot 2, 7 the free slot 3.
        commit_captures(&mut f, 3, 4);
        assert_eq!(
            rows(&f).iter().map(|r| (r.1, r.2)).collect::<Vec<_>>(),
            [(4, 0), (5, 1), (6, 2), (7, 3)]
        );
        clear_requests(&f.conn, &mut f.memo, BIN).unwrap();
        assert_eq!(
            f.number(&format!("SELECT ring FROM bins WHERE id = '{BIN}'")),
            0
        );
        commit_captures(&mut f, 6, 10);
        assert_eq!(
            f.number(&format!("SELECT ring FROM bins WHERE id = '{BIN}'")),
            10
        );
        assert_eq!(
            rows(&f).iter().map(|r| r.2).collect::<Vec<_>>(),
            [8, 9, 0, 1, 2, 3]
        );
    }

    /// A capture to `bin` that was answered with `record`.
    fn answered(bin: &str, cap: u64, record: &Arc<str>) -> (Op, CaptureWait) {
        let (mut op, wait) = capture_to(bin, "POST", cap, u64::MAX, b"{}");
        if let Op::Capture { capture, .. } = &mut op {
            capture.response_json = Some(record.clone());
        }
        (op, wait)
    }

    fn record(status: u16) -> Arc<str> {
        crate::model::ResponseRecord {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body_size: 2,
            delay_ms: 0,
        }
        .to_json()
        .into()
    }

    /// (seq, response in the row, response_n) of the bin's rows, by seq.
    fn answer_columns(f: &Fixture, bin: &str) -> Vec<(i64, Option<String>, Option<i64>)> {
        let mut stmt = f
            .conn
            .prepare(
                "SELECT seq, response, response_n FROM bin_requests
                 WHERE bin_num = (SELECT num FROM bins WHERE id = ?1) ORDER BY seq",
            )
            .unwrap();
        stmt.query_map([bin], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn read_answer(f: &Fixture, bin: &str, id: i64) -> Option<crate::model::ResponseRecord> {
        super::super::read::request(&f.conn, bin, id)
            .unwrap()
            .expect("the request is stored")
            .response
    }

    #[test]
    fn a_bins_answers_are_stored_once_and_every_request_reads_its_own() {
        let mut f = Fixture::new();
        let (ok, teapot) = (record(200), record(418));
        // Equal records from different captures (a custom response makes one per capture).
        let ok_again: Arc<str> = ok.to_string().into();
        let mut batch: Vec<Op> = [&ok, &teapot, &ok_again, &ok]
            .iter()
            .map(|r| answered(BIN, 10, r).0)
            .collect();
        f.commit(&mut batch);
        // Later batches find the stored answers.
        let mut batch = vec![answered(BIN, 10, &teapot).0, capture("GET", 10).0];
        f.commit(&mut batch);
        assert_eq!(
            f.number(&format!(
                "SELECT count(*) FROM bin_responses WHERE bin_num = (SELECT num FROM bins WHERE id = '{BIN}')"
            )),
            2
        );
        assert_eq!(
            answer_columns(&f, BIN),
            [
                (1, None, Some(1)),
                (2, None, Some(2)),
                (3, None, Some(1)),
                (4, None, Some(1)),
                (5, None, Some(2)),
                (6, None, None),
            ]
        );
        let parse = |r: &Arc<str>| crate::model::ResponseRecord::from_json(r);
        for (id, want) in [(1, &ok), (2, &teapot), (3, &ok), (4, &ok), (5, &teapot)] {
            assert_eq!(read_answer(&f, BIN, id), parse(want), "request {id}");
        }
        assert_eq!(read_answer(&f, BIN, 6), None);

        // Another bin numbers its own answers.
        add_bin(&f.conn, "b2");
        let mut batch = vec![answered("b2", 10, &teapot).0];
        f.commit(&mut batch);
        assert_eq!(answer_columns(&f, "b2"), [(1, None, Some(1))]);
        assert_eq!(read_answer(&f, "b2", 1), parse(&teapot));

        // A request written over an evicted one takes its own answer, not the evicted one's.
        let mut batch: Vec<Op> = (0..10).map(|_| answered("b2", 2, &ok).0).collect();
        f.commit(&mut batch);
        assert_eq!(read_answer(&f, "b2", 11), parse(&ok));
        assert_eq!(
            f.number("SELECT count(*) FROM bin_requests WHERE bin_num = (SELECT num FROM bins WHERE id = 'b2')"),
            2
        );
    }

    #[test]
    fn a_bin_stores_a_bounded_number_of_answers_and_keeps_the_rest_in_their_rows() {
        let mut f = Fixture::new();
        let records: Vec<Arc<str>> = (0..MAX_ANSWERS_PER_BIN as u16 + 3)
            .map(|i| record(200 + i))
            .collect();
        let mut batch: Vec<Op> = records.iter().map(|r| answered(BIN, 100, r).0).collect();
        f.commit(&mut batch);
        // A stored answer is still found once the bin is full.
        let mut batch = vec![answered(BIN, 100, &records[0]).0];
        f.commit(&mut batch);
        assert_eq!(
            f.number("SELECT count(*) FROM bin_responses"),
            MAX_ANSWERS_PER_BIN as i64
        );
        let columns = answer_columns(&f, BIN);
        for (i, (seq, inline, n)) in columns.iter().enumerate() {
            if i < MAX_ANSWERS_PER_BIN {
                assert_eq!((inline, *n), (&None, Some(i as i64 + 1)), "request {seq}");
            } else if i < records.len() {
                assert_eq!(
                    (inline.as_deref(), *n),
                    (Some(&*records[i]), None),
                    "request {seq}"
                );
            } else {
                assert_eq!((inline, *n), (&None, Some(1)), "request {seq}");
            }
        }
        for (i, record) in records.iter().enumerate() {
            let id = i as i64 + 1;
            assert_eq!(
                read_answer(&f, BIN, id),
                crate::model::ResponseRecord::from_json(record),
                "request {id}"
            );
        }
    }

    #[test]
    fn clearing_or_deleting_a_bin_removes_its_answers() {
        let mut f = Fixture::new();
        add_bin(&f.conn, "b2");
        let mut batch = vec![
            answered(BIN, 10, &record(200)).0,
            answered("b2", 10, &record(201)).0,
        ];
        f.commit(&mut batch);
        let answers = |f: &Fixture, bin: &str| {
            f.number(&format!(
                "SELECT count(*) FROM bin_responses WHERE bin_num = (SELECT num FROM bins WHERE id = '{bin}')"
            ))
        };
        assert_eq!((answers(&f, BIN), answers(&f, "b2")), (1, 1));
        clear_requests(&f.conn, &mut f.memo, BIN).unwrap();
        assert_eq!((answers(&f, BIN), answers(&f, "b2")), (0, 1));
        // The cleared bin starts again at n = 1, with the answer its new captures get; the
        // answer it had before is stored again (the writer's memo forgot its old n).
        let mut batch = vec![
            answered(BIN, 10, &record(202)).0,
            answered(BIN, 10, &record(200)).0,
        ];
        f.commit(&mut batch);
        assert_eq!(
            answer_columns(&f, BIN),
            [(2, None, Some(1)), (3, None, Some(2))]
        );
        let parse = |r: &Arc<str>| crate::model::ResponseRecord::from_json(r);
        assert_eq!(read_answer(&f, BIN, 2), parse(&record(202)));
        assert_eq!(read_answer(&f, BIN, 3), parse(&record(200)));
        f.conn
            .execute("DELETE FROM bins WHERE id = 'b2'", [])
            .unwrap();
        assert_eq!(answers(&f, "b2"), 0);
    }

    #[test]
    fn a_bin_deleted_and_made_again_under_its_id_gets_its_captures_and_answers_under_its_new_number()
     {
        let mut f = Fixture::new();
        let ok = record(200);
        let (op, wait) = answered(BIN, 10, &ok);
        f.commit(&mut vec![op]);
        assert!(matches!(
            outcome(wait),
            Ok(CaptureOutcome::Stored { id: 1, .. })
        ));
        assert_eq!(f.memo.len(), 1);
        // Behind the writer's back, as no API does: the id comes back with a new number.
        f.conn
            .execute_batch(&format!("DELETE FROM bins WHERE id = '{BIN}'"))
            .unwrap();
        add_bin(&f.conn, BIN);
        let (op, wait) = answered(BIN, 10, &ok);
        f.commit(&mut vec![op]);
        assert!(matches!(
            outcome(wait),
            Ok(CaptureOutcome::Stored { id: 1, .. })
        ));
        assert_eq!(f.number("SELECT num FROM bins"), 2);
        assert_eq!(
            f.number("SELECT count(*) * 10 + max(bin_num) FROM bin_responses"),
            12
        );
        assert_eq!(answer_columns(&f, BIN), [(1, None, Some(1))]);
        assert_eq!(
            read_answer(&f, BIN, 1),
            crate::model::ResponseRecord::from_json(&ok)
        );
        // Gone for good: its captures are refused, found by neither number nor id.
        f.conn
            .execute_batch(&format!("DELETE FROM bins WHERE id = '{BIN}'"))
            .unwrap();
        let (op, wait) = answered(BIN, 10, &ok);
        f.commit(&mut vec![op]);
        assert!(matches!(outcome(wait), Ok(CaptureOutcome::BinGone)));
        assert_eq!(f.memo.len(), 0);
    }

    #[test]
    fn an_answer_stored_in_a_rolled_back_savepoint_is_stored_again() {
        let mut f = Fixture::new();
        let teapot = record(418);
        // The run fails on its second capture: the first attempt and the run's savepoint are
        // rolled back, each after the first capture stored its answer; then each capture is
        // stored alone.
        let (first, stored) = answered(BIN, 10, &teapot);
        let (failing, failed) = capture("FAIL", 10);
        f.commit(&mut vec![first, failing]);
        assert!(matches!(
            outcome(stored),
            Ok(CaptureOutcome::Stored { id: 1, .. })
        ));
        assert!(outcome(failed).is_err());
        assert_eq!(f.number("SELECT count(*) FROM bin_responses"), 1);
        assert_eq!(
            read_answer(&f, BIN, 1),
            crate::model::ResponseRecord::from_json(&teapot)
        );
        // And later captures find it.
        let (op, wait) = answered(BIN, 10, &teapot);
        f.commit(&mut vec![op]);
        assert!(matches!(outcome(wait), Ok(CaptureOutcome::Stored { .. })));
        assert_eq!(f.number("SELECT count(*) FROM bin_responses"), 1);
        let ids: Vec<i64> = answer_columns(&f, BIN).iter().map(|r| r.0).collect();
        assert_eq!(ids.len(), 2);
        for id in ids {
            assert_eq!(
                read_answer(&f, BIN, id),
                crate::model::ResponseRecord::from_json(&teapot),
                "request {id}"
            );
        }
    }

    /// Creates the expired bins `expired` (expires_at 500), then captures to `targets` in order
    /// (row ids 1, 2, 3, ...); `BIN` is live.
    fn reap_fixture(expired: &[&str], targets: &[&str]) -> Fixture {
        let mut f = Fixture::new();
        for id in expired {
            let (reply, created) = oneshot::channel();
            let old = Bin {
                expires_at: 500,
                ..bin(id)
            };
            f.commit(&mut vec![Op::Other(Command::CreateBin(old, reply))]);
            created.blocking_recv().unwrap().unwrap();
        }
        // One batch each: a batch stores its captures bin by bin.
        for (i, target) in targets.iter().enumerate() {
            let (op, wait) = capture_to(target, "POST", 1000, u64::MAX, format!("{i}").as_bytes());
            f.commit(&mut vec![op]);
            assert!(matches!(outcome(wait), Ok(CaptureOutcome::Stored { .. })));
        }
        f
    }

    fn reap_step(f: &mut Fixture, budget: usize) -> ReapProgress {
        let (reply, wait) = oneshot::channel();
        f.commit(&mut vec![Op::Other(Command::Reap {
            now: 500,
            budget,
            reply,
        })]);
        wait.blocking_recv().unwrap().unwrap()
    }

    fn rows_of(f: &Fixture, bin: &str) -> i64 {
        f.number(&format!(
            "SELECT count(*) FROM bin_requests WHERE bin_num = (SELECT num FROM bins WHERE id = '{bin}')"
        ))
    }

    #[test]
    fn a_reap_step_takes_the_oldest_rows_of_the_table_that_belong_to_expired_bins() {
        // Interleaved, as bins that fill side by side are: e1 gets 5, e2 gets 3, b1 (live) 2.
        let mut f = reap_fixture(
            &["e1", "e2"],
            &["e1", "e2", BIN, "e1", "e2", BIN, "e1", "e2", "e1", "e1"],
        );
        // A budget of 4: rows 1, 2, 4 and 5 (row 3 is live), whatever their bin.
        let first = reap_step(&mut f, 4);
        assert_eq!(first.requests_deleted, 4);
        assert!(first.bins_deleted.is_empty() && !first.done);
        assert!(first.step_time.is_some());
        assert_eq!((rows_of(&f, "e1"), rows_of(&f, "e2")), (3, 1));
        assert_eq!(
            f.number("SELECT min(id) FROM bin_requests WHERE bin_num <> (SELECT num FROM bins WHERE id = 'b1')"),
            7,
            "the oldest rows go first"
        );
        // Rows 7 to 10 (6 is live): the last ones of both bins, which go with them.
        let second = reap_step(&mut f, 4);
        assert_eq!(second.requests_deleted, 4);
        assert_eq!(second.bins_deleted, ["e1", "e2"]);
        assert!(reap_step(&mut f, 4).done);
        // The live bin is untouched.
        assert_eq!(rows_of(&f, BIN), 2);
        assert_eq!(f.number("SELECT count(*) FROM bins"), 1);
    }

    #[test]
    fn a_reap_goes_by_bin_when_the_oldest_rows_are_live_and_deletes_bins_without_requests() {
        // The live bin's rows come first: a walk in row order would find no expired row in its
        // first 8 rows (twice the budget).
        let mut targets = vec![BIN; 8];
        targets.extend(["e1", "e2", "e1", "e2", "e1", "e2", "e1", "e1"]);
        let mut f = reap_fixture(&["e1", "e2", "empty"], &targets);
        // By bin: the two oldest requests of each of the three expired bins ("empty" has none,
        // and goes).
        let first = reap_step(&mut f, 4);
        assert_eq!(first.requests_deleted, 4);
        assert_eq!(first.bins_deleted, ["empty"]);
        assert_eq!((rows_of(&f, "e1"), rows_of(&f, "e2")), (3, 1));
        assert_eq!(
            f.number("SELECT min(seq) FROM bin_requests WHERE bin_num = (SELECT num FROM bins WHERE id = 'e1')"),
            3,
            "the oldest go first"
        );
        // e2's last one goes, and e2 with it; then e1's last three and e1.
        let second = reap_step(&mut f, 4);
        assert_eq!(second.requests_deleted, 3);
        assert_eq!(second.bins_deleted, ["e2"]);
        let third = reap_step(&mut f, 4);
        assert_eq!(
            (third.requests_deleted, third.bins_deleted),
            (1, vec!["e1".to_owned()])
        );
        assert!(reap_step(&mut f, 4).done);
        assert_eq!(rows_of(&f, BIN), 8);
        assert_eq!(f.number("SELECT count(*) FROM bins"), 1);
    }

    #[test]
    fn a_failing_capture_fails_alone_and_the_rest_of_the_batch_is_stored() {
        let mut f = Fixture::new();
        let (ok1, w1) = capture("POST", 1000);
        let (bad, w2) = capture("FAIL", 1000);
        let (ok2, w3) = capture("PUT", 1000);
        let (create, created) = oneshot::channel();
        let mut batch = vec![
            ok1,
            bad,
            Op::Other(Command::CreateBin(bin("b2"), create)),
            ok2,
        ];
        f.commit(&mut batch);
        assert!(matches!(outcome(w1), Ok(CaptureOutcome::Stored { .. })));
        let err = outcome(w2).unwrap_err();
        assert!(err.to_string().contains("injected failure"), "{err}");
        assert!(matches!(outcome(w3), Ok(CaptureOutcome::Stored { .. })));
        created.blocking_recv().unwrap().unwrap();
        assert_eq!(f.stored_methods(), ["POST", "PUT"]);
        // The count matches what is stored: the failed capture left nothing behind.
        assert_eq!(f.request_count(), 2);
        assert_eq!(f.number("SELECT count(*) FROM bins"), 2);
    }

    #[test]
    fn a_full_disk_loses_nothing_that_was_acknowledged() {
        let mut f = Fixture::new();
        let pages = f.number("PRAGMA page_count");
        // Room for a few of the 3 KiB captures below, not for all: SQLITE_FULL midway.
        f.conn
            .execute_batch(&format!("PRAGMA max_page_count = {}", pages + 6))
            .unwrap();
        let (mut batch, waits): (Vec<_>, Vec<_>) = (0..20)
            .map(|_| capture_with_body("POST", 1000, &noise(3000)))
            .unzip();
        f.commit(&mut batch);
        let outcomes: Vec<_> = waits.into_iter().map(outcome).collect();
        let stored = outcomes.iter().filter(|o| o.is_ok()).count();
        let failed: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
        assert!(!failed.is_empty(), "the disk never filled: {outcomes:?}");
        assert!(
            failed.iter().all(|e| e.to_string().contains("full")),
            "{failed:?}"
        );
        // Exactly the acknowledged captures are stored, and the bin's count agrees.
        assert_eq!(f.stored_methods().len(), stored);
        assert_eq!(f.request_count(), stored as i64);
        let check: String = f
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }

    #[test]
    fn a_failing_command_fails_alone() {
        let mut f = Fixture::new();
        let (ok, wait) = capture("POST", 1000);
        let (dup, dup_wait) = oneshot::channel();
        let (clear, cleared) = oneshot::channel();
        let mut batch = vec![
            Op::Other(Command::ClearRequests {
                bin: BIN.into(),
                reply: clear,
            }),
            Op::Other(Command::CreateBin(bin(BIN), dup)),
            ok,
        ];
        f.commit(&mut batch);
        cleared.blocking_recv().unwrap().unwrap();
        let err = dup_wait.blocking_recv().unwrap().unwrap_err();
        assert!(err.to_string().contains("UNIQUE"), "{err}");
        assert!(matches!(outcome(wait), Ok(CaptureOutcome::Stored { .. })));
        assert_eq!(f.stored_methods(), ["POST"]);
        assert_eq!(f.request_count(), 1);
    }

    fn slice_budget(op: &Op) -> usize {
        match op {
            Op::Other(Command::Reap { budget, .. }) => *budget,
            other => panic!("not a slice: {other:?}"),
        }
    }

    fn sliced(requests: u64, bins: &[&str], done: bool, micros: u64) -> ReapProgress {
        ReapProgress {
            requests_deleted: requests,
            bins_deleted: bins.iter().map(|b| b.to_string()).collect(),
            done,
            step_time: Some(std::time::Duration::from_micros(micros)),
        }
    }

    #[test]
    fn a_reap_step_goes_in_slices_and_is_answered_once_with_their_sum() {
        let us = std::time::Duration::from_micros;
        let (reply, mut answer) = oneshot::channel();
        let step = ReapStep::new(500, 70, reply);
        assert_eq!(slice_budget(&step.slice().0), SLICE_ROWS);
        // A slice that rode along with captures counts its own time; one alone in its
        // transaction, the transaction's.
        let step = step
            .slice_done(Ok(sliced(32, &[], false, 80)), None)
            .unwrap();
        let step = step
            .slice_done(Ok(sliced(32, &["a"], false, 90)), Some(us(150)))
            .unwrap();
        assert!(
            answer.try_recv().is_err(),
            "answered before the step is done"
        );
        // What is left of the budget.
        assert_eq!(slice_budget(&step.slice().0), 6);
        assert!(
            step.slice_done(Ok(sliced(6, &["b"], false, 20)), None)
                .is_none()
        );
        let done = answer.try_recv().unwrap().unwrap();
        assert_eq!(done.requests_deleted, 70);
        assert_eq!(done.bins_deleted, ["a", "b"]);
        assert!(!done.done);
        assert_eq!(done.step_time, Some(us(80 + 150 + 20)));
    }

    #[test]
    fn a_reap_step_ends_when_nothing_is_left_on_a_slice_that_did_nothing_or_on_an_error() {
        // Nothing expired left: done, whatever is left of the budget.
        let (reply, mut answer) = oneshot::channel();
        let step = ReapStep::new(500, 100, reply);
        assert!(
            step.slice_done(Ok(sliced(10, &["a"], true, 5)), None)
                .is_none()
        );
        let done = answer.try_recv().unwrap().unwrap();
        assert!(done.done && done.requests_deleted == 10);
        // A slice that deleted nothing and is not done would be followed by the same: the step
        // ends rather than spin.
        let (reply, mut answer) = oneshot::channel();
        let step = ReapStep::new(500, 100, reply);
        assert!(
            step.slice_done(Ok(sliced(0, &[], false, 5)), None)
                .is_none()
        );
        assert_eq!(answer.try_recv().unwrap().unwrap().requests_deleted, 0);
        // A slice deleting only empty bins goes on.
        let (reply, _answer) = oneshot::channel();
        let step = ReapStep::new(500, 100, reply);
        assert!(
            step.slice_done(Ok(sliced(0, &["e"], false, 5)), None)
                .is_some()
        );
        // A failed slice fails the step.
        let (reply, mut answer) = oneshot::channel();
        let step = ReapStep::new(500, 100, reply);
        let failed = step.slice_done(Err(StoreError::Commit("disk".into())), None);
        assert!(failed.is_none());
        assert!(matches!(
            answer.try_recv().unwrap(),
            Err(StoreError::Commit(_))
        ));
        // The writer stopping answers with what was done.
        let (reply, mut answer) = oneshot::channel();
        let step = ReapStep::new(500, 100, reply);
        let step = step
            .slice_done(Ok(sliced(32, &[], false, 5)), None)
            .unwrap();
        step.finish();
        assert_eq!(answer.try_recv().unwrap().unwrap().requests_deleted, 32);
    }
}
