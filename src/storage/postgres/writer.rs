//! The writer task: commits captures in batches (group commit) and answers each caller only
//! after its batch committed.
//!
//! A batch is one transaction: its bins are locked in id order (`FOR UPDATE`: writers on other
//! nodes wait for each other, and never deadlock), each capture is numbered from its bin's
//! `last_request_id`, all rows go in with one INSERT over arrays (`unnest`), the bins' counts
//! and newest ids are updated with one UPDATE, the oldest requests beyond the cap are evicted,
//! and a NOTIFY tells every node's listener which ids each bin got.
//!
//! A batch that fails on the database's answer (a bug, a damaged row) is redone one capture per
//! transaction, so one bad capture fails alone. A batch that fails because the database is
//! unreachable fails whole with [`StoreError::Unavailable`]; for [`BACKOFF`] after that, new
//! batches fail at once rather than each waiting out a timeout, and then the writer tries again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

use super::listen::{Delivery, deliver};
use super::{CHANNEL_REQUESTS, DB_TIMEOUT, Shared, db_error, pool_error};
use crate::ids::RequestId;
use crate::model::RequestSummary;
use crate::storage::{CaptureOutcome, CaptureReply, NewCapture, StoreError};

/// Captures per transaction at most; bounds how long one commit keeps callers waiting.
pub const MAX_BATCH: usize = 512;
/// After the database was unreachable, how long new batches fail at once.
const BACKOFF: Duration = Duration::from_millis(500);
/// How often the writer refreshes the stored bytes from the database for `--max-db-bytes`
/// (while writing; between refreshes it adds its own batches).
const SIZE_EVERY: Duration = Duration::from_secs(1);
/// Body bytes per INSERT statement (see `store`).
const INSERT_BYTES: usize = 4 * 1024 * 1024;
/// NOTIFY payloads must stay under 8000 bytes.
const NOTIFY_CHUNK: usize = 7000;

#[derive(Debug)]
pub struct Capture {
    pub capture: Box<NewCapture>,
    pub reply: CaptureReply,
}

pub async fn run(pool: Pool, mut rx: mpsc::Receiver<Capture>, shared: Arc<Shared>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut batch_no = 0u64;
    let mut down_until: Option<Instant> = None;
    let mut sized = Instant::now();
    while let Some(capture) = rx.recv().await {
        batch.push(capture);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(capture) => batch.push(capture),
                Err(_) => break,
            }
        }
        if down_until.is_some_and(|t| Instant::now() < t) {
            fail(&mut batch, "the database is unreachable; retrying shortly");
            continue;
        }
        down_until = None;
        batch_no += 1;
        match commit(&pool, &shared, batch_no, std::mem::take(&mut batch)).await {
            Ok(()) => {}
            Err((StoreError::Unavailable(cause), mut failed)) => {
                tracing::warn!(%cause, captures = failed.len(), "database unavailable: captures answer 503");
                down_until = Some(Instant::now() + BACKOFF);
                fail(&mut failed, &cause);
            }
            Err((e, failed)) if failed.len() > 1 => {
                tracing::warn!(cause = %e, "a batch failed; storing its captures one by one");
                for capture in failed {
                    batch_no += 1;
                    if let Err((e, mut one)) = commit(&pool, &shared, batch_no, vec![capture]).await
                    {
                        answer_err(&mut one, e);
                    }
                }
            }
            Err((e, mut failed)) => answer_err(&mut failed, e),
        }
        batch = Vec::with_capacity(MAX_BATCH);
        if sized.elapsed() >= SIZE_EVERY {
            sized = Instant::now();
            refresh_size(&pool, &shared).await;
        }
    }
    tracing::debug!("database writer stopped: every queued write is committed");
}

/// Reads the stored bytes of every bin into the shared figure (a failure keeps the last one).
pub async fn refresh_size(pool: &Pool, shared: &Shared) {
    let size = tokio::time::timeout(DB_TIMEOUT, async {
        let client = pool.get().await.map_err(pool_error)?;
        super::read::database_size(&client).await.map_err(db_error)
    })
    .await;
    if let Ok(Ok(bytes)) = size {
        shared
            .used_bytes
            .store(bytes.max(0) as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

fn fail(batch: &mut Vec<Capture>, cause: &str) {
    answer_err(batch, StoreError::Unavailable(cause.to_owned()));
}

fn answer_err(batch: &mut Vec<Capture>, e: StoreError) {
    let msg = e.to_string();
    let unavailable = matches!(e, StoreError::Unavailable(_));
    for c in batch.drain(..) {
        let err = if unavailable {
            StoreError::Unavailable(msg.clone())
        } else {
            StoreError::Commit(msg.clone())
        };
        let _ = c.reply.send((Err(err), c.capture));
    }
}

/// Commits `batch` as batch number `batch_no`, then hands the answers to the listener (which
/// publishes and answers in commit order, see `listen.rs`) or, when it is not listening,
/// publishes and answers here. On failure nothing was stored and the captures come back.
async fn commit(
    pool: &Pool,
    shared: &Arc<Shared>,
    batch_no: u64,
    batch: Vec<Capture>,
) -> Result<(), (StoreError, Vec<Capture>)> {
    // Registered before the COMMIT: if the listener is up now, our NOTIFY reaches it.
    let (ready, waiting) = oneshot::channel::<Delivery>();
    let relayed = {
        let mut relay = shared.relay();
        if relay.listening {
            relay.pending.insert(batch_no, waiting);
            true
        } else {
            false
        }
    };
    let captures: Vec<&NewCapture> = batch.iter().map(|c| &*c.capture).collect();
    let result = match tokio::time::timeout(
        DB_TIMEOUT,
        store(pool, &shared.node, batch_no, &captures),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(StoreError::Unavailable(format!(
            "no commit within {DB_TIMEOUT:?}"
        ))),
    };
    let outcomes = match result {
        Ok((outcomes, delta)) => {
            // Other nodes' writes come in with the next refresh.
            let used = &shared.used_bytes;
            let now = used.load(std::sync::atomic::Ordering::Relaxed) as i64;
            used.store(
                (now + delta).max(0) as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            outcomes
        }
        Err(e) => {
            shared.relay().pending.remove(&batch_no);
            return Err((e, batch));
        }
    };
    let mut summaries = Vec::new();
    let mut answers = Vec::with_capacity(batch.len());
    for (c, outcome) in batch.into_iter().zip(outcomes) {
        match outcome {
            CaptureOutcome::Stored { id, .. } => {
                let request = &c.capture.request;
                // Building a summary costs allocations; only do it when a stream listens.
                if shared.events.is_watched(&request.bin_id) {
                    let mut summary = RequestSummary::from(request);
                    summary.id = RequestId::from_row(id);
                    summaries.push(summary);
                }
            }
            // The cached entry was stale (deleted or expired elsewhere): look it up next time.
            CaptureOutcome::BinGone => shared.forget_bin(&c.capture.request.bin_id),
        }
        answers.push((c.reply, Ok(outcome), c.capture));
    }
    let delivery = Delivery { summaries, answers };
    // Nothing stored (every bin was gone): no NOTIFY was sent, so no notification will come.
    let notified = delivery
        .answers
        .iter()
        .any(|a| matches!(a.1, Ok(CaptureOutcome::Stored { .. })));
    if relayed && !notified {
        shared.relay().pending.remove(&batch_no);
    }
    if !relayed || !notified {
        deliver(shared, delivery);
    } else if let Err(delivery) = ready.send(delivery) {
        // The listener lost its connection meanwhile and gave up on this batch.
        deliver(shared, delivery);
    }
    Ok(())
}

/// What a batch does to one bin.
struct Tally {
    expires_at: i64,
    count: i64,
    last_id: i64,
    /// The bin's stored bytes before this batch, and what the batch added.
    bytes: i64,
    added: i64,
    added_bytes: i64,
    max_per_bin: u64,
    max_bytes: u64,
    /// The id given to the bin's first capture in this batch.
    first_id: i64,
    /// Index in the batch of the bin's last capture, which reports the evictions.
    last: usize,
}

/// One transaction for the whole batch; the outcome of each capture, in order, and the change
/// in stored bytes.
async fn store(
    pool: &Pool,
    node: &str,
    batch_no: u64,
    captures: &[&NewCapture],
) -> Result<(Vec<CaptureOutcome>, i64), StoreError> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let tx = client.transaction().await.map_err(db_error)?;
    let mut ids: Vec<&str> = captures.iter().map(|c| c.request.bin_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let lock = tx
        .prepare_cached(
            "SELECT id, expires_at, request_count, last_request_id, bytes_used FROM bins
             WHERE id = ANY($1) ORDER BY id FOR UPDATE",
        )
        .await
        .map_err(db_error)?;
    let mut bins: HashMap<String, Tally> = HashMap::new();
    for row in tx.query(&lock, &[&ids]).await.map_err(db_error)? {
        let id: String = row.try_get(0).map_err(db_error)?;
        bins.insert(
            id,
            Tally {
                expires_at: row.try_get(1).map_err(db_error)?,
                count: row.try_get(2).map_err(db_error)?,
                last_id: row.try_get(3).map_err(db_error)?,
                bytes: row.try_get(4).map_err(db_error)?,
                added: 0,
                added_bytes: 0,
                max_per_bin: u64::MAX,
                max_bytes: u64::MAX,
                first_id: 0,
                last: 0,
            },
        );
    }

    let mut outcomes = Vec::with_capacity(captures.len());
    let n = captures.len();
    let mut col_bin = Vec::with_capacity(n);
    let mut col_seq = Vec::with_capacity(n);
    let mut col_received = Vec::with_capacity(n);
    let mut col_method = Vec::with_capacity(n);
    let mut col_path = Vec::with_capacity(n);
    let mut col_subpath = Vec::with_capacity(n);
    let mut col_query = Vec::with_capacity(n);
    let mut col_type = Vec::with_capacity(n);
    let mut col_size = Vec::with_capacity(n);
    let mut col_truncated = Vec::with_capacity(n);
    let mut col_addr = Vec::with_capacity(n);
    let mut col_version = Vec::with_capacity(n);
    let mut col_headers = Vec::with_capacity(n);
    let mut col_body = Vec::with_capacity(n);
    let mut col_response: Vec<Option<String>> = Vec::with_capacity(n);
    for (i, c) in captures.iter().enumerate() {
        let r = &c.request;
        let Some(tally) = bins
            .get_mut(r.bin_id.as_str())
            .filter(|t| t.expires_at > r.received_at)
        else {
            outcomes.push(CaptureOutcome::BinGone);
            continue;
        };
        tally.last_id += 1;
        if tally.added == 0 {
            tally.first_id = tally.last_id;
            tally.max_per_bin = c.max_per_bin;
            tally.max_bytes = c.max_bin_bytes;
        }
        tally.added += 1;
        tally.added_bytes += c.stored_bytes() as i64;
        tally.last = i;
        outcomes.push(CaptureOutcome::Stored {
            id: tally.last_id,
            evicted: 0,
        });
        col_bin.push(r.bin_id.as_str());
        col_seq.push(tally.last_id);
        col_received.push(r.received_at);
        col_method.push(r.method.as_str());
        col_path.push(r.path.as_str());
        col_subpath.push(r.subpath.as_str());
        col_query.push(r.query.as_str());
        col_type.push(c.content_type.as_deref());
        col_size.push(r.body_size as i64);
        col_truncated.push(r.body_truncated);
        col_addr.push(r.remote_addr.as_str());
        col_version.push(r.http_version.as_str());
        col_headers.push(c.headers_blob.as_slice());
        col_body.push(r.body.as_slice());
        col_response.push(
            r.response
                .as_ref()
                .map(crate::model::ResponseRecord::to_json),
        );
    }
    if col_bin.is_empty() {
        // Nothing to store (every bin was gone): no changes, nothing to announce.
        return Ok((outcomes, 0));
    }
    let insert = tx
        .prepare_cached(
            "INSERT INTO bin_requests (bin_id, seq, received_at, method, path, subpath, query,
                 content_type, body_size, body_truncated, remote_addr, http_version, headers, body,
                 response)
             SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::text[],
                 $6::text[], $7::text[], $8::text[], $9::int8[], $10::bool[], $11::text[],
                 $12::text[], $13::bytea[], $14::bytea[], $15::text[])",
        )
        .await
        .map_err(db_error)?;
    // One INSERT per slice of at most INSERT_BYTES of bodies: the driver copies a statement's
    // parameters into one message, so a batch of large bodies in one statement would hold
    // them all twice at once (the memory budget of --max-body-memory counts them once).
    let mut start = 0;
    while start < col_bin.len() {
        let mut end = start + 1;
        let mut bytes = col_body[start].len();
        while end < col_bin.len() && bytes + col_body[end].len() <= INSERT_BYTES {
            bytes += col_body[end].len();
            end += 1;
        }
        let r = start..end;
        tx.execute(
            &insert,
            &[
                &&col_bin[r.clone()],
                &&col_seq[r.clone()],
                &&col_received[r.clone()],
                &&col_method[r.clone()],
                &&col_path[r.clone()],
                &&col_subpath[r.clone()],
                &&col_query[r.clone()],
                &&col_type[r.clone()],
                &&col_size[r.clone()],
                &&col_truncated[r.clone()],
                &&col_addr[r.clone()],
                &&col_version[r.clone()],
                &&col_headers[r.clone()],
                &&col_body[r.clone()],
                &&col_response[r],
            ],
        )
        .await
        .map_err(db_error)?;
        start = end;
    }

    // Evict the oldest beyond each bin's caps (requests, bytes; never the newest request), then
    // record counts, bytes and newest ids in one UPDATE.
    let oldest = tx
        .prepare_cached(
            "SELECT seq, (octet_length(body) + octet_length(headers))::int8 FROM bin_requests
             WHERE bin_id = $1 AND seq < $2 ORDER BY seq",
        )
        .await
        .map_err(db_error)?;
    let evict = tx
        .prepare_cached("DELETE FROM bin_requests WHERE bin_id = $1 AND seq <= $2")
        .await
        .map_err(db_error)?;
    let (mut up_id, mut up_count, mut up_last, mut up_bytes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut payload = Payload::new(node, batch_no);
    let mut delta = 0i64;
    for (id, tally) in bins.iter_mut().filter(|(_, t)| t.added > 0) {
        let mut count = tally.count + tally.added;
        let mut bytes = (tally.bytes + tally.added_bytes).max(0);
        let over = |count: i64, bytes: i64| {
            count as u64 > tally.max_per_bin || bytes as u64 > tally.max_bytes
        };
        if over(count, bytes) {
            let rows = tx
                .query(&oldest, &[id, &tally.last_id])
                .await
                .map_err(db_error)?;
            let (mut cutoff, mut evicted) = (None, 0u64);
            for row in &rows {
                if !over(count, bytes) {
                    break;
                }
                cutoff = Some(row.try_get::<_, i64>(0).map_err(db_error)?);
                bytes -= row.try_get::<_, i64>(1).map_err(db_error)?.max(0);
                count -= 1;
                evicted += 1;
            }
            if let Some(cutoff) = cutoff {
                tx.execute(&evict, &[id, &cutoff]).await.map_err(db_error)?;
            }
            if let CaptureOutcome::Stored { evicted: e, .. } = &mut outcomes[tally.last] {
                *e = evicted;
            }
        }
        up_id.push(id.as_str());
        up_count.push(count);
        up_last.push(tally.last_id);
        up_bytes.push(bytes.max(0));
        delta += bytes.max(0) - tally.bytes;
        payload.add(id, tally.first_id, tally.last_id);
    }
    let update = tx
        .prepare_cached(
            "UPDATE bins SET request_count = v.count, last_request_id = v.last,
                 bytes_used = v.bytes
             FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[])
                 AS v(id, count, last, bytes)
             WHERE bins.id = v.id",
        )
        .await
        .map_err(db_error)?;
    tx.execute(&update, &[&up_id, &up_count, &up_last, &up_bytes])
        .await
        .map_err(db_error)?;
    let notify = tx
        .prepare_cached("SELECT pg_notify($1, $2)::text")
        .await
        .map_err(db_error)?;
    for chunk in payload.finish() {
        tx.query(&notify, &[&CHANNEL_REQUESTS, &chunk])
            .await
            .map_err(db_error)?;
    }
    tx.commit().await.map_err(db_error)?;
    Ok((outcomes, delta))
}

/// The NOTIFY text of a batch: a `{node} {batch} {chunk}` line, then `{bin} {first} {last}`
/// lines, cut into chunks that fit PostgreSQL's payload limit.
struct Payload {
    head: String,
    chunks: Vec<String>,
}

impl Payload {
    fn new(node: &str, batch_no: u64) -> Self {
        Payload {
            head: format!("{node} {batch_no}"),
            chunks: Vec::new(),
        }
    }

    fn add(&mut self, bin: &str, first: i64, last: i64) {
        let line = format!("\n{bin} {first} {last}");
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() + line.len() <= NOTIFY_CHUNK => chunk.push_str(&line),
            _ => {
                let n = self.chunks.len();
                self.chunks.push(format!("{} {n}{line}", self.head));
            }
        }
    }

    fn finish(self) -> Vec<String> {
        self.chunks
    }
}

/// One parsed chunk of a NOTIFY payload.
#[derive(Debug, PartialEq, Eq)]
pub struct Notice<'a> {
    pub node: &'a str,
    pub batch_no: u64,
    pub chunk: u64,
    /// `(bin, first id, last id)`.
    pub bins: Vec<(&'a str, i64, i64)>,
}

pub fn parse_notice(payload: &str) -> Option<Notice<'_>> {
    let mut lines = payload.lines();
    let mut head = lines.next()?.split(' ');
    let node = head.next()?;
    let batch_no = head.next()?.parse().ok()?;
    let chunk = head.next()?.parse().ok()?;
    let mut bins = Vec::new();
    for line in lines {
        let mut f = line.split(' ');
        let bin = f.next()?;
        let first = f.next()?.parse().ok()?;
        let last = f.next()?.parse().ok()?;
        bins.push((bin, first, last));
    }
    Some(Notice {
        node,
        batch_no,
        chunk,
        bins,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_and_fit_the_limit() {
        let mut p = Payload::new("node1", 7);
        let bins: Vec<String> = (0..600).map(|i| format!("bin{i:020}")).collect();
        for (i, bin) in bins.iter().enumerate() {
            p.add(bin, i as i64, i as i64 + 3);
        }
        let chunks = p.finish();
        assert!(chunks.len() > 1);
        let mut seen = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            assert!(chunk.len() < 8000);
            let notice = parse_notice(chunk).unwrap();
            assert_eq!((notice.node, notice.batch_no), ("node1", 7));
            assert_eq!(notice.chunk, i as u64);
            seen.extend(notice.bins.iter().map(|b| b.0.to_owned()));
        }
        assert_eq!(seen, bins);
    }
}
