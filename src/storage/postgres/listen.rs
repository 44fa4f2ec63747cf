//! The listener: one dedicated connection that LISTENs for every node's commits, so that event
//! streams on this node see captures made on any node.
//!
//! PostgreSQL delivers notifications in commit order, and a bin's ids are given in commit order
//! (writers lock the bin's row), so publishing from notifications gives each stream its bin's
//! requests in id order whoever stored them. That includes this node's own batches: the writer
//! registers each batch that has a watched bin before its COMMIT and hands over its summaries and
//! callers' answers after it; the listener publishes them and answers the callers when the
//! batch's own notification arrives. Acknowledging after publishing keeps what the SQLite writer
//! promises: once a capture is answered, live streams already have it. A batch with no watched
//! bin is answered by the writer right after its COMMIT, and its notification is handled like
//! another node's (a stream that opened meanwhile is caught up from the database).
//!
//! A stream drops an id at or below the last one it sent, so a bin's requests must be published
//! without a hole: [`Relay::seen`] is, per watched bin, the id up to which its streams have
//! everything, and nothing is published past a gap after it. A stream sets it (or lowers it) to
//! the bin's newest id when it subscribes ([`subscribe`]), so every watched bin has one. Memory
//! batches that would leave a gap (another node committed in between, unseen yet) are held back
//! and read from the database instead: at once by the listener, or by the catch-up after a
//! reconnection when the writer publishes by itself.
//!
//! When the connection is lost, batches waiting for their notification are published and
//! answered at once (they are committed), the writer publishes by itself until the listener is
//! back, and after reconnecting the listener catches every watched bin up from the database,
//! from its `seen`, so a stream that stayed open misses nothing, even one whose bin had no
//! capture before. The bin cache is dropped too, since changes announced meanwhile were missed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification};

use super::writer::parse_notice;
use super::{CHANNEL_BINS, CHANNEL_REQUESTS, DB_TIMEOUT, Shared, read};
use crate::events::Event;
use crate::model::RequestSummary;
use crate::storage::{CaptureOutcome, CaptureReply, NewCapture, StoreError};

/// Reconnection delays: doubling from the first to the last.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_LAST: Duration = Duration::from_secs(2);
/// Catch-up reads fetch this many summaries at a time.
const PAGE: usize = 500;

/// What the writer and the listener share.
#[derive(Debug, Default)]
pub struct Relay {
    /// Whether the listener has a live connection (so a NOTIFY sent now reaches it).
    pub listening: bool,
    /// This node's batches that committed or are committing, by batch number, waiting for
    /// their notification.
    pub pending: BTreeMap<u64, oneshot::Receiver<Delivery>>,
    /// Per watched bin, the id up to which its streams have every request (published to them,
    /// or older than they are): where publishing goes on, and a catch-up starts. Set when a
    /// stream subscribes; dropped once nobody watches the bin.
    pub seen: HashMap<String, i64>,
}

/// A committed batch's summaries (for watched bins) and its callers' answers.
#[derive(Debug)]
pub struct Delivery {
    pub summaries: Vec<RequestSummary>,
    pub answers: Vec<(
        CaptureReply,
        Result<CaptureOutcome, StoreError>,
        Box<NewCapture>,
    )>,
}

/// Subscribes a stream to `bin`, whose newest id was `newest` just before. Under the relay's
/// lock, so no publisher finds the bin watched without a `seen`. Lowering `seen` is always
/// safe (streams drop what they already have); the new stream needs everything after `newest`.
pub fn subscribe(shared: &Shared, bin: &str, newest: i64) -> broadcast::Receiver<Event> {
    let mut relay = shared.relay();
    let events = shared.events.subscribe(bin);
    let seen = relay.seen.entry(bin.to_owned()).or_insert(newest);
    *seen = (*seen).min(newest);
    events
}

/// Publishes the batch to local streams, then answers its callers. What would leave a gap is
/// not published: the caller catches up (the listener) or the next resync does (the writer and
/// [`lost`] run while the listener is down or going down).
pub fn deliver(shared: &Shared, delivery: Delivery) {
    publish_batch(shared, delivery.summaries);
    answer(delivery.answers);
}

fn answer(
    answers: Vec<(
        CaptureReply,
        Result<CaptureOutcome, StoreError>,
        Box<NewCapture>,
    )>,
) {
    for (reply, outcome, capture) in answers {
        // The caller may have gone away (client disconnected); nothing to do then.
        let _ = reply.send((outcome, capture));
    }
}

/// Publishes this node's summaries (from memory: each bin's ids consecutive) that follow on
/// from `seen`; the rest of a bin after a gap is left to a catch-up from the database. Bins
/// without `seen` are not watched and skipped.
fn publish_batch(shared: &Shared, summaries: Vec<RequestSummary>) {
    if summaries.is_empty() {
        return;
    }
    // Held while publishing: two publishers (the writer, the listener) must not interleave a
    // bin's ids.
    let mut relay = shared.relay();
    let mut next = Vec::with_capacity(summaries.len());
    for s in summaries {
        if let Some(seen) = relay.seen.get_mut(&s.bin_id)
            && s.id.get() == *seen + 1
        {
            *seen += 1;
            next.push(s);
        }
    }
    shared.events.publish(next);
}

/// Publishes `rows` of `bin`, read from the database: all its requests after `after`, oldest
/// first, as far as they go. `false` when that would leave a gap (`seen` was lowered below
/// `after` by a new stream meanwhile): read again from `seen`.
fn publish_read(shared: &Shared, bin: &str, after: i64, rows: Vec<RequestSummary>) -> bool {
    let mut relay = shared.relay();
    let Some(seen) = relay.seen.get_mut(bin) else {
        // Nobody watches the bin any more.
        return true;
    };
    if *seen < after {
        return false;
    }
    let rows: Vec<RequestSummary> = rows.into_iter().filter(|r| r.id.get() > *seen).collect();
    if let Some(last) = rows.last() {
        *seen = last.id.get();
    }
    shared.events.publish(rows);
    true
}

/// A listening connection: the client (kept to keep the session) and its notifications.
pub struct Connection {
    _client: Client,
    notifications: mpsc::Receiver<Notification>,
    driver: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("listen::Connection")
    }
}

/// Connects and LISTENs on both channels.
pub async fn connect(pg: &tokio_postgres::Config) -> Result<Connection, StoreError> {
    let connecting = async {
        let (client, mut connection) = pg.connect(NoTls).await?;
        let (tx, notifications) = mpsc::channel(4096);
        // The connection must be polled for the client to work; notifications arrive there.
        let driver = tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        if tx.send(n).await.is_err() {
                            return;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => {
                        tracing::warn!(cause = %e, "the LISTEN connection failed");
                        return;
                    }
                    None => return,
                }
            }
        });
        client
            .batch_execute(&format!("LISTEN {CHANNEL_REQUESTS}; LISTEN {CHANNEL_BINS}"))
            .await?;
        Ok::<_, tokio_postgres::Error>(Connection {
            _client: client,
            notifications,
            driver,
        })
    };
    match tokio::time::timeout(DB_TIMEOUT, connecting).await {
        Ok(result) => result.map_err(super::db_error),
        Err(_) => Err(StoreError::Unavailable(format!(
            "no answer within {DB_TIMEOUT:?} (LISTEN)"
        ))),
    }
}

/// Listens until `stop`, reconnecting after a lost connection.
pub async fn run(
    pg: tokio_postgres::Config,
    pool: Pool,
    shared: Arc<Shared>,
    first: Connection,
    mut stop: watch::Receiver<bool>,
) {
    let mut connection = Some(first);
    let mut retry = RETRY_FIRST;
    loop {
        if let Some(mut conn) = connection.take() {
            retry = RETRY_FIRST;
            let stopped = listen(&pool, &shared, &mut conn, &mut stop).await;
            conn.driver.abort();
            drop(conn);
            lost(&shared).await;
            if stopped {
                return;
            }
            tracing::warn!("lost the LISTEN connection; reconnecting");
        }
        tokio::select! {
            _ = tokio::time::sleep(retry) => {}
            _ = stop.changed() => return,
        }
        retry = (retry * 2).min(RETRY_LAST);
        match connect(&pg).await {
            Ok(conn) => {
                shared.relay().listening = true;
                shared.misses().reset(true);
                tracing::info!("LISTEN connection back; catching streams up from the database");
                resync(&pool, &shared).await;
                connection = Some(conn);
            }
            Err(e) => tracing::debug!(cause = %e, "LISTEN reconnection failed"),
        }
    }
}

/// Handles notifications until the connection ends (`false`) or `stop` (`true`).
async fn listen(
    pool: &Pool,
    shared: &Shared,
    conn: &mut Connection,
    stop: &mut watch::Receiver<bool>,
) -> bool {
    loop {
        let n = tokio::select! {
            n = conn.notifications.recv() => match n {
                Some(n) => n,
                None => return false,
            },
            _ = stop.changed() => return true,
        };
        match n.channel() {
            CHANNEL_REQUESTS => on_requests(pool, shared, n.payload()).await,
            CHANNEL_BINS => on_bin(shared, n.payload()),
            _ => {}
        }
    }
}

async fn on_requests(pool: &Pool, shared: &Shared, payload: &str) {
    let Some(notice) = parse_notice(payload) else {
        tracing::warn!(payload, "unreadable notification ignored");
        return;
    };
    let mut answers = Vec::new();
    if notice.node == shared.node {
        let waiting = shared.relay().pending.remove(&notice.batch_no);
        // The writer hands the batch over right after its COMMIT returns.
        if let Some(waiting) = waiting
            && let Ok(Ok(delivery)) = tokio::time::timeout(DB_TIMEOUT, waiting).await
        {
            publish_batch(shared, delivery.summaries);
            answers = delivery.answers;
        }
        // Otherwise a batch the writer answered by itself (no watched bin when it committed),
        // or a later chunk of one delivered here: a stream opened meanwhile is caught up below.
    }
    // Another node's batch, or a gap left above: read what is missing.
    for (bin, _, last) in notice.bins {
        let behind = {
            let mut relay = shared.relay();
            if !shared.events.is_watched(bin) {
                relay.seen.remove(bin);
                continue;
            }
            relay.seen.get(bin).is_some_and(|&seen| seen < last)
        };
        if behind {
            catch_up(pool, shared, bin, Some(last)).await;
        }
    }
    answer(answers);
}

/// Publishes the bin's requests after its `seen` (up to `upto` when given) from the database.
async fn catch_up(pool: &Pool, shared: &Shared, bin: &str, upto: Option<i64>) {
    loop {
        let Some(from) = shared.relay().seen.get(bin).copied() else {
            return;
        };
        if upto.is_some_and(|u| from >= u) {
            return;
        }
        let fetched = tokio::time::timeout(DB_TIMEOUT, async {
            let client = pool.get().await.map_err(super::pool_error)?;
            read::summaries_after(&client, bin, from, i64::MAX, PAGE)
                .await
                .map_err(super::db_error)
        })
        .await;
        let rows = match fetched {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                // `seen` stays: the next notification for the bin, or a resync, reads again.
                tracing::warn!(bin_id = %bin, cause = %e, "catching a stream up failed");
                return;
            }
            Err(_) => {
                tracing::warn!(bin_id = %bin, "catching a stream up timed out");
                return;
            }
        };
        let read_to = rows.last().map(|r| r.id.get());
        let done = rows.len() < PAGE || upto.is_some_and(|u| read_to.is_some_and(|r| r >= u));
        let rows: Vec<RequestSummary> = rows
            .into_iter()
            .filter(|r| upto.is_none_or(|u| r.id.get() <= u))
            .collect();
        if publish_read(shared, bin, from, rows) && done {
            return;
        }
    }
}

fn on_bin(shared: &Shared, payload: &str) {
    let Some((what, bin)) = payload.split_once(' ') else {
        return;
    };
    match what {
        // Whoever made it has it cached; this node may have found it missing before.
        "created" => shared.misses().created(bin),
        "deleted" => {
            shared.forget_bin(bin);
            shared.relay().seen.remove(bin);
            shared.events.close(bin);
        }
        _ => shared.forget_bin(bin),
    }
}

/// The connection is gone: from now on the writer publishes by itself, misses are not kept, and
/// batches waiting for their notification are delivered now (in order: they committed in that
/// order; a gap another node's unseen commit leaves is filled by the resync).
async fn lost(shared: &Shared) {
    let pending = {
        let mut relay = shared.relay();
        relay.listening = false;
        std::mem::take(&mut relay.pending)
    };
    // Creations are no longer announced to this node: misses cannot be believed.
    shared.misses().reset(false);
    for (_, waiting) in pending {
        if let Ok(Ok(delivery)) = tokio::time::timeout(DB_TIMEOUT, waiting).await {
            deliver(shared, delivery);
        }
    }
}

/// After a reconnection: drop the bin cache (changes were missed) and catch every watched bin
/// up from its `seen` (each has one: see [`subscribe`]).
async fn resync(pool: &Pool, shared: &Shared) {
    shared
        .bins
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    let bins: Vec<String> = {
        let mut relay = shared.relay();
        relay.seen.retain(|bin, _| shared.events.is_watched(bin));
        relay.seen.keys().cloned().collect()
    };
    for bin in bins {
        catch_up(pool, shared, &bin, None).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventHub;

    /// Every publish is an event of its own (no period): these tests are about what the relay
    /// publishes, not about the hub's timing.
    fn shared() -> Shared {
        Shared {
            events: EventHub::with_period(std::time::Duration::ZERO),
            bins: Default::default(),
            node: "test".into(),
            relay: Default::default(),
            misses: Default::default(),
            used_bytes: Default::default(),
            batches: Default::default(),
        }
    }

    fn summary(bin: &str, id: i64) -> RequestSummary {
        RequestSummary::sample(bin, id)
    }

    fn received(rx: &mut broadcast::Receiver<Event>) -> Vec<i64> {
        let mut ids = Vec::new();
        while let Ok(batch) = rx.try_recv() {
            ids.extend(batch.summaries().iter().map(|s| s.id.get()));
        }
        ids
    }

    #[test]
    fn a_batch_after_a_gap_waits_for_the_read_that_fills_it() {
        let shared = shared();
        // The bin had no capture when the stream opened.
        let mut rx = subscribe(&shared, "a", 0);
        // Another node's 1 is not seen yet: this node's 2 must not go first.
        publish_batch(&shared, vec![summary("a", 2)]);
        assert_eq!(received(&mut rx), Vec::<i64>::new());
        // The catch-up reads 1 and 2 from the database.
        assert!(publish_read(
            &shared,
            "a",
            0,
            vec![summary("a", 1), summary("a", 2)]
        ));
        publish_batch(&shared, vec![summary("a", 3), summary("a", 4)]);
        assert_eq!(received(&mut rx), [1, 2, 3, 4]);
        // Nothing twice: a later read from before publishes only what is new.
        assert!(publish_read(
            &shared,
            "a",
            3,
            vec![summary("a", 4), summary("a", 5)]
        ));
        assert_eq!(received(&mut rx), [5]);
    }

    #[test]
    fn a_new_stream_lowers_where_publishing_goes_on_and_a_read_from_above_is_refused() {
        let shared = shared();
        let mut old = subscribe(&shared, "a", 10);
        // A stream opening while 11 and 12 are committed but still to be published.
        let mut new = subscribe(&shared, "a", 12);
        assert_eq!(shared.relay().seen["a"], 10);
        // A stream opening after 11 was published but whose read of the newest id came before:
        // it needs 11 again.
        publish_batch(&shared, vec![summary("a", 11)]);
        let mut late = subscribe(&shared, "a", 10);
        assert_eq!(shared.relay().seen["a"], 10);
        // A read that began from 11 would skip 11 for the late stream.
        assert!(!publish_read(&shared, "a", 11, vec![summary("a", 12)]));
        assert!(publish_read(
            &shared,
            "a",
            10,
            vec![summary("a", 11), summary("a", 12)]
        ));
        assert_eq!(received(&mut old), [11, 11, 12]);
        assert_eq!(received(&mut new), [11, 11, 12]);
        assert_eq!(received(&mut late), [11, 12]);
    }

    #[test]
    fn unwatched_bins_are_not_tracked() {
        let shared = shared();
        publish_batch(&shared, vec![summary("a", 1)]);
        assert!(publish_read(&shared, "a", 0, vec![summary("a", 1)]));
        assert!(shared.relay().seen.is_empty());
    }
}
