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
    let mut floors = Floors::new();
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
        match commit(
            &pool,
            &shared,
            &mut floors,
            batch_no,
            std::mem::take(&mut batch),
        )
        .await
        {
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
                    if let Err((e, mut one)) =
                        commit(&pool, &shared, &mut floors, batch_no, vec![capture]).await
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
    floors: &mut Floors,
    batch_no: u64,
    batch: Vec<Capture>,
) -> Result<(), (StoreError, Vec<Capture>)> {
    // Registered before the COMMIT: if the listener is up now, our NOTIFY reaches it. Only a
    // batch with a bin some local stream watches waits for it: the others are answered right
    // after the COMMIT (no hop through the listener), and should a stream open on one of their
    // bins meanwhile, the listener takes their notification like another node's and catches
    // that stream up from the database, in commit order.
    let watched = batch
        .iter()
        .any(|c| shared.events.is_watched(&c.capture.request.bin_id));
    let (ready, waiting) = oneshot::channel::<Delivery>();
    let (relayed, listening) = {
        let mut relay = shared.relay();
        if relay.listening && watched {
            relay.pending.insert(batch_no, waiting);
            (true, true)
        } else {
            (false, relay.listening)
        }
    };
    let captures: Vec<&NewCapture> = batch.iter().map(|c| &*c.capture).collect();
    let result = match tokio::time::timeout(
        DB_TIMEOUT,
        store(pool, &shared.node, floors, batch_no, &captures),
    )
    .await
    {
        Ok(result) => result,
        Err(_) => Err(StoreError::Unavailable(format!(
            "no commit within {DB_TIMEOUT:?}"
        ))),
    };
    let outcomes = match result {
        Ok((outcomes, delta, evicted_through)) => {
            floors.raise(evicted_through);
            shared
                .batches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
                // Building a summary costs allocations; only do it when a stream listens and
                // this batch publishes (see above).
                if (relayed || !listening) && shared.events.is_watched(&request.bin_id) {
                    summaries.push(c.capture.summary(id));
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

/// What a committed batch evicted up to, per bin: `(bin, highest evicted id)`.
type EvictedThrough = Vec<(String, i64)>;

/// Per bin, an id at or below which every request is known to be gone (evicted by this node).
/// Only a lower bound: other nodes' evictions and deletions are not seen, which makes a scan
/// longer, never wrong, because ids are never given twice in a bin.
#[derive(Debug, Default)]
struct Floors(HashMap<String, i64>);

impl Floors {
    /// Bins remembered at most; past it the map starts over (one longer scan per bin).
    const MAX: usize = 10_000;

    fn new() -> Self {
        Floors::default()
    }

    fn get(&self, bin: &str) -> i64 {
        self.0.get(bin).copied().unwrap_or(0)
    }

    /// Called only after the COMMIT: a rolled-back eviction deleted nothing.
    fn raise(&mut self, evicted: EvictedThrough) {
        if self.0.len() + evicted.len() > Self::MAX {
            self.0.clear();
        }
        for (bin, id) in evicted {
            let floor = self.0.entry(bin).or_default();
            *floor = (*floor).max(id);
        }
    }
}

/// Opens a batch's transaction. Generic plans: the batch's statements are the same every time,
/// but with `auto` the server planned each execution again (a custom plan looks cheaper when
/// it can see how long the arrays are), 5% of the backend's time per batch.
const BEGIN_SQL: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";
/// The statements of a batch, prepared once per connection (the driver caches them).
const LOCK_SQL: &str = "SELECT id, expires_at, request_count, last_request_id, bytes_used FROM bins
     WHERE id = ANY($1) ORDER BY id FOR UPDATE";
/// The arrays unnested in the select list (in lockstep: they are all as long), not in `FROM`:
/// `FROM unnest(...)` first copies every row into a tuplestore, 10% of the database backend's
/// time per batch (perf on the backend under load).
const INSERT_SQL: &str =
    "INSERT INTO bin_requests (bin_id, seq, received_at, method, path, subpath,
         query, content_type, body_size, body_truncated, remote_addr, http_version, headers, body,
         response)
     SELECT unnest($1::text[]), unnest($2::int8[]), unnest($3::int8[]), unnest($4::text[]),
         unnest($5::text[]), unnest($6::text[]), unnest($7::text[]), unnest($8::text[]),
         unnest($9::int8[]), unnest($10::bool[]), unnest($11::text[]), unnest($12::text[]),
         unnest($13::bytea[]), unnest($14::bytea[]), unnest($15::text[])";
/// The request cap of one bin: deletes its oldest `$4` requests above the floor `$2` and below
/// its newest `$3`, and records the bin's count (`$5` before the eviction), newest id and bytes
/// (`$6` before). Returns how many went, the highest id that went and their bytes.
///
/// The doomed requests are every request of the bin from the floor up to the `$4`-th one, so
/// they go in one range scan of the index rather than one index lookup each (the bin's row
/// lock keeps other writers out in between).
const EVICT_SQL: &str = "WITH cut AS (
         SELECT max(seq) AS seq FROM (
             SELECT seq FROM bin_requests
             WHERE bin_id = $1 AND seq > $2 AND seq < $3 ORDER BY seq LIMIT $4
         ) doomed
     ), gone AS (
         DELETE FROM bin_requests r USING cut
         WHERE r.bin_id = $1 AND r.seq > $2 AND r.seq <= cut.seq
         RETURNING r.seq, (octet_length(r.body) + octet_length(r.headers))::int8 AS b
     ), freed AS (
         SELECT count(*)::int8 AS n, coalesce(max(seq), 0)::int8 AS cutoff,
             coalesce(sum(b), 0)::int8 AS bytes
         FROM gone
     ), bin AS (
         UPDATE bins SET request_count = $5 - freed.n, last_request_id = $3,
             bytes_used = greatest($6 - freed.bytes, 0)
         FROM freed WHERE bins.id = $1
     )
     SELECT n, cutoff, bytes FROM freed";
const OLDEST_SQL: &str = "SELECT seq, (octet_length(body) + octet_length(headers))::int8
     FROM bin_requests WHERE bin_id = $1 AND seq > $2 AND seq < $3 ORDER BY seq";
const DELETE_SQL: &str = "DELETE FROM bin_requests WHERE bin_id = $1 AND seq > $2 AND seq <= $3";
const UPDATE_SQL: &str = "UPDATE bins SET request_count = v.count, last_request_id = v.last,
         bytes_used = v.bytes
     FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[]) AS v(id, count, last, bytes)
     WHERE bins.id = v.id";
const NOTIFY_SQL: &str = "SELECT pg_notify($1, $2)::text";

/// A pooled connection that goes back to the pool only once its transaction ended (committed
/// or rolled back, as the server said). Dropped in between (an error, or the batch's timeout
/// dropping the future), it is closed instead, and the server rolls the transaction back: a
/// connection left inside a transaction must never serve anyone else.
struct TxConn {
    client: Option<deadpool_postgres::Object>,
    open: bool,
}

impl Drop for TxConn {
    fn drop(&mut self) {
        if self.open
            && let Some(client) = self.client.take()
        {
            drop(deadpool_postgres::Object::take(client));
        }
    }
}

impl std::ops::Deref for TxConn {
    type Target = deadpool_postgres::Object;
    fn deref(&self) -> &Self::Target {
        self.client.as_ref().expect("present until dropped")
    }
}

/// Runs `steps` pipelined on one connection: every statement is sent before the first answer
/// is awaited, in the order given (each step sends its statement when first polled, and they
/// are first polled in order), then all answers are collected.
async fn pipeline<'a, T>(
    mut steps: Vec<std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>>,
) -> Vec<T> {
    let mut done: Vec<Option<T>> = steps.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (step, out) in steps.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match step.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// One transaction for the whole batch; the outcome of each capture, in order, the change in
/// stored bytes, and how far each bin's evictions went.
///
/// Two round trips in the usual case: `BEGIN` and the bins' row locks, then the INSERTs, each
/// evicting bin's DELETE + UPDATE, the other bins' UPDATE, the NOTIFY and the `COMMIT`, all
/// pipelined. Each round trip is a wake-up of the database and of this task; on a busy
/// machine those cost more than the statements. A bin that may exceed its byte cap is evicted
/// by walking its oldest requests, which needs the answers in between (one round trip more
/// per such bin).
async fn store(
    pool: &Pool,
    node: &str,
    floors: &Floors,
    batch_no: u64,
    captures: &[&NewCapture],
) -> Result<(Vec<CaptureOutcome>, i64, EvictedThrough), StoreError> {
    let mut conn = TxConn {
        client: Some(pool.get().await.map_err(pool_error)?),
        open: false,
    };
    let lock = conn.prepare_cached(LOCK_SQL).await.map_err(db_error)?;
    let insert = conn.prepare_cached(INSERT_SQL).await.map_err(db_error)?;
    let evict_count = conn.prepare_cached(EVICT_SQL).await.map_err(db_error)?;
    let update = conn.prepare_cached(UPDATE_SQL).await.map_err(db_error)?;
    let notify = conn.prepare_cached(NOTIFY_SQL).await.map_err(db_error)?;

    let mut ids: Vec<&str> = captures.iter().map(|c| c.request.bin_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    conn.open = true;
    // Pipelined: `biased` polls (so sends) in the order written.
    let lock_params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&ids];
    let (begun, locked) = tokio::join!(
        biased;
        conn.batch_execute(BEGIN_SQL),
        conn.query(&lock, &lock_params)
    );
    begun.map_err(db_error)?;
    let mut bins: HashMap<String, Tally> = HashMap::new();
    for row in locked.map_err(db_error)? {
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
    let mut cols = Columns::with_capacity(captures.len());
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
        cols.push(c, tally.last_id);
    }
    if cols.bin.is_empty() {
        // Nothing to store (every bin was gone): no changes, nothing to announce.
        conn.batch_execute("COMMIT").await.map_err(db_error)?;
        conn.open = false;
        return Ok((outcomes, 0, Vec::new()));
    }

    // What each bin becomes. A bin over its request cap only is evicted in the pipeline; one
    // that may be over its byte cap is walked first (`evict_by_bytes`).
    let mut payload = Payload::new(node, batch_no);
    let mut delta = 0i64;
    let mut plain: Vec<(&str, i64, i64, i64)> = Vec::new();
    let mut capped: Vec<(&str, i64)> = Vec::new();
    let mut walked: Vec<&str> = Vec::new();
    for (id, tally) in bins.iter().filter(|(_, t)| t.added > 0) {
        payload.add(id, tally.first_id, tally.last_id);
        let count = tally.count + tally.added;
        let bytes = (tally.bytes + tally.added_bytes).max(0);
        if bytes as u64 > tally.max_bytes {
            walked.push(id);
        } else if count as u64 > tally.max_per_bin {
            capped.push((id, count - tally.max_per_bin.min(i64::MAX as u64) as i64));
        } else {
            plain.push((id, count, tally.last_id, bytes));
            delta += bytes - tally.bytes;
        }
    }
    let chunks = payload.finish();

    let mut new_floors = EvictedThrough::new();
    if !walked.is_empty() {
        // Rare (the default byte cap is 100 MiB): insert, then walk, before the rest; the
        // pipeline below then has no INSERT.
        for r in cols.slices() {
            conn.execute(&insert, &cols.rows(r).params())
                .await
                .map_err(db_error)?;
        }
        for &id in &walked {
            let tally = &bins[id];
            let (count, bytes, evicted, cutoff) = evict_by_bytes(&conn, floors, id, tally).await?;
            if let CaptureOutcome::Stored { evicted: e, .. } = &mut outcomes[tally.last] {
                *e = evicted;
            }
            if let Some(cutoff) = cutoff {
                new_floors.push((id.to_owned(), cutoff));
            }
            delta += bytes - tally.bytes;
            plain.push((id, count, tally.last_id, bytes));
        }
    }

    // The pipeline: everything below is sent at once, then the answers are read.
    type Step<'a> = std::pin::Pin<
        Box<
            dyn Future<Output = Result<Option<tokio_postgres::Row>, tokio_postgres::Error>>
                + Send
                + 'a,
        >,
    >;
    let mut steps: Vec<Step<'_>> = Vec::new();
    let client: &deadpool_postgres::Object = &conn;
    if walked.is_empty() {
        for r in cols.slices() {
            let rows = cols.rows(r);
            let insert = &insert;
            steps.push(Box::pin(async move {
                client.execute(insert, &rows.params()).await.map(|_| None)
            }));
        }
    }
    let first_evict = steps.len();
    for &(id, k) in &capped {
        let t = &bins[id];
        let (floor, last, count, bytes) = (
            floors.get(id),
            t.last_id,
            t.count + t.added,
            (t.bytes + t.added_bytes).max(0),
        );
        let evict_count = &evict_count;
        steps.push(Box::pin(async move {
            client
                .query_one(evict_count, &[&id, &floor, &last, &k, &count, &bytes])
                .await
                .map(Some)
        }));
    }
    if !plain.is_empty() {
        let update = &update;
        let plain = &plain;
        steps.push(Box::pin(async move {
            let up_id: Vec<&str> = plain.iter().map(|p| p.0).collect();
            let up_count: Vec<i64> = plain.iter().map(|p| p.1).collect();
            let up_last: Vec<i64> = plain.iter().map(|p| p.2).collect();
            let up_bytes: Vec<i64> = plain.iter().map(|p| p.3).collect();
            client
                .execute(update, &[&up_id, &up_count, &up_last, &up_bytes])
                .await
                .map(|_| None)
        }));
    }
    for chunk in &chunks {
        let notify = &notify;
        steps.push(Box::pin(async move {
            client
                .query(notify, &[&CHANNEL_REQUESTS, chunk])
                .await
                .map(|_| None)
        }));
    }
    steps.push(Box::pin(async move {
        client.batch_execute("COMMIT").await.map(|()| None)
    }));
    let answers = pipeline(steps).await;
    // After a failed statement the server ignores the rest of the transaction and answers the
    // COMMIT with a rollback: the first error is the batch's.
    let mut evicted_rows = Vec::with_capacity(capped.len());
    for (i, answer) in answers.into_iter().enumerate() {
        let row = answer.map_err(db_error)?;
        if i >= first_evict && i < first_evict + capped.len() {
            evicted_rows.push(row);
        }
    }
    conn.open = false;

    for (&(id, _), row) in capped.iter().zip(evicted_rows) {
        let tally = &bins[id];
        let row = row.expect("an eviction answers one row");
        let n: i64 = row.try_get(0).map_err(db_error)?;
        let cutoff: i64 = row.try_get(1).map_err(db_error)?;
        let freed: i64 = row.try_get(2).map_err(db_error)?;
        if n > 0 {
            new_floors.push((id.to_owned(), cutoff));
        }
        if let CaptureOutcome::Stored { evicted: e, .. } = &mut outcomes[tally.last] {
            *e = n as u64;
        }
        delta += ((tally.bytes + tally.added_bytes).max(0) - freed).max(0) - tally.bytes;
    }
    Ok((outcomes, delta, new_floors))
}

/// The batch's rows as one array per column, for the INSERT over `unnest`.
struct Columns<'a> {
    bin: Vec<&'a str>,
    seq: Vec<i64>,
    received: Vec<i64>,
    method: Vec<&'a str>,
    path: Vec<&'a str>,
    subpath: Vec<&'a str>,
    query: Vec<&'a str>,
    content_type: Vec<Option<&'a str>>,
    size: Vec<i64>,
    truncated: Vec<bool>,
    addr: Vec<&'a str>,
    version: Vec<&'a str>,
    headers: Vec<&'a [u8]>,
    body: Vec<&'a [u8]>,
    response: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn with_capacity(n: usize) -> Self {
        Columns {
            bin: Vec::with_capacity(n),
            seq: Vec::with_capacity(n),
            received: Vec::with_capacity(n),
            method: Vec::with_capacity(n),
            path: Vec::with_capacity(n),
            subpath: Vec::with_capacity(n),
            query: Vec::with_capacity(n),
            content_type: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            truncated: Vec::with_capacity(n),
            addr: Vec::with_capacity(n),
            version: Vec::with_capacity(n),
            headers: Vec::with_capacity(n),
            body: Vec::with_capacity(n),
            response: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, c: &'a NewCapture, seq: i64) {
        let r = &c.request;
        self.bin.push(r.bin_id.as_str());
        self.seq.push(seq);
        self.received.push(r.received_at);
        self.method.push(r.method.as_str());
        self.path.push(r.path.as_str());
        self.subpath.push(r.subpath.as_str());
        self.query.push(r.query.as_str());
        self.content_type.push(c.content_type.as_deref());
        self.size.push(r.body_size as i64);
        self.truncated.push(r.body_truncated);
        self.addr.push(r.remote_addr.as_str());
        self.version.push(r.http_version.as_str());
        self.headers.push(c.headers_blob.as_slice());
        self.body.push(r.body.as_slice());
        // Serialized by the caller, off the writer (`NewCapture::new`).
        self.response.push(c.response_json.as_deref());
    }

    /// The rows cut into INSERT statements of at most [`INSERT_BYTES`] of bodies each: the
    /// driver copies a statement's parameters into one message, so a batch of large bodies in
    /// one statement would hold them all twice at once (the memory budget of
    /// `--max-body-memory` counts them once).
    fn slices(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= self.bin.len() {
                return None;
            }
            let mut end = start + 1;
            let mut bytes = self.body[start].len();
            while end < self.bin.len() && bytes + self.body[end].len() <= INSERT_BYTES {
                bytes += self.body[end].len();
                end += 1;
            }
            let r = start..end;
            start = end;
            Some(r)
        })
    }

    /// The INSERT's parameters for rows `r`.
    fn rows(&self, r: std::ops::Range<usize>) -> Rows<'_> {
        Rows(
            &self.bin[r.clone()],
            &self.seq[r.clone()],
            &self.received[r.clone()],
            &self.method[r.clone()],
            &self.path[r.clone()],
            &self.subpath[r.clone()],
            &self.query[r.clone()],
            &self.content_type[r.clone()],
            &self.size[r.clone()],
            &self.truncated[r.clone()],
            &self.addr[r.clone()],
            &self.version[r.clone()],
            &self.headers[r.clone()],
            &self.body[r.clone()],
            &self.response[r],
        )
    }
}

/// Some rows of [`Columns`]: one INSERT's parameters.
#[allow(clippy::type_complexity)]
struct Rows<'a>(
    &'a [&'a str],
    &'a [i64],
    &'a [i64],
    &'a [&'a str],
    &'a [&'a str],
    &'a [&'a str],
    &'a [&'a str],
    &'a [Option<&'a str>],
    &'a [i64],
    &'a [bool],
    &'a [&'a str],
    &'a [&'a str],
    &'a [&'a [u8]],
    &'a [&'a [u8]],
    &'a [Option<&'a str>],
);

impl Rows<'_> {
    fn params(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 15] {
        [
            &self.0, &self.1, &self.2, &self.3, &self.4, &self.5, &self.6, &self.7, &self.8,
            &self.9, &self.10, &self.11, &self.12, &self.13, &self.14,
        ]
    }
}

/// Evicts a bin that may be over its byte cap: walks its oldest requests (above its floor,
/// never the newest) until both caps hold, and deletes them. The rows of this batch must be
/// inserted already. Returns the bin's count and bytes after it, how many went and the highest
/// id that went.
async fn evict_by_bytes(
    client: &deadpool_postgres::Object,
    floors: &Floors,
    id: &str,
    tally: &Tally,
) -> Result<(i64, i64, u64, Option<i64>), StoreError> {
    let oldest = client.prepare_cached(OLDEST_SQL).await.map_err(db_error)?;
    let delete = client.prepare_cached(DELETE_SQL).await.map_err(db_error)?;
    let floor = floors.get(id);
    let mut count = tally.count + tally.added;
    let mut bytes = (tally.bytes + tally.added_bytes).max(0);
    let over =
        |count: i64, bytes: i64| count as u64 > tally.max_per_bin || bytes as u64 > tally.max_bytes;
    let rows = client
        .query(&oldest, &[&id, &floor, &tally.last_id])
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
        client
            .execute(&delete, &[&id, &floor, &cutoff])
            .await
            .map_err(db_error)?;
    }
    Ok((count, bytes.max(0), evicted, cutoff))
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
