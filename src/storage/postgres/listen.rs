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
//! When the connection is lost, batches waiting for their notification are published and
//! answered at once (they are committed), the writer publishes by itself until the listener is
//! back, and after reconnecting the listener catches every stream up from the database: from the
//! last id it published for the bin, so a stream that stayed open misses nothing. The bin cache
//! is dropped too, since changes announced meanwhile were missed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::{AsyncMessage, Client, NoTls, Notification};

use super::writer::parse_notice;
use super::{CHANNEL_BINS, CHANNEL_REQUESTS, DB_TIMEOUT, Shared, read};
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
    /// The highest request id published per watched bin: where a catch-up starts.
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

/// Publishes the batch to local streams, then answers its callers.
pub fn deliver(shared: &Shared, delivery: Delivery) {
    publish(shared, delivery.summaries);
    for (reply, outcome, capture) in delivery.answers {
        // The caller may have gone away (client disconnected); nothing to do then.
        let _ = reply.send((outcome, capture));
    }
}

fn publish(shared: &Shared, summaries: Vec<RequestSummary>) {
    if summaries.is_empty() {
        return;
    }
    {
        let mut relay = shared.relay();
        for s in &summaries {
            let seen = relay.seen.entry(s.bin_id.clone()).or_default();
            *seen = (*seen).max(s.id.get());
        }
    }
    shared.events.publish(summaries);
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
    if notice.node == shared.node {
        let waiting = shared.relay().pending.remove(&notice.batch_no);
        if let Some(waiting) = waiting {
            // The writer hands the batch over right after its COMMIT returns.
            if let Ok(Ok(delivery)) = tokio::time::timeout(DB_TIMEOUT, waiting).await {
                deliver(shared, delivery);
            }
            return;
        }
        // A batch the writer answered by itself (no watched bin when it committed), or a
        // later chunk of one delivered above: a stream opened meanwhile is caught up below,
        // and the published ids (`seen`) make the rest a no-op.
    }
    for (bin, first, last) in notice.bins {
        let from = {
            let mut relay = shared.relay();
            if !shared.events.is_watched(bin) {
                relay.seen.remove(bin);
                continue;
            }
            match relay.seen.get(bin) {
                Some(&seen) if seen >= last => continue,
                // From the last published id: also fills a gap a failed read left.
                Some(&seen) => seen,
                None => first - 1,
            }
        };
        catch_up(pool, shared, bin, from, Some(last)).await;
    }
}

/// Publishes the bin's requests after `from` (up to `upto` when given) from the database.
async fn catch_up(pool: &Pool, shared: &Shared, bin: &str, mut from: i64, upto: Option<i64>) {
    loop {
        let fetched = tokio::time::timeout(DB_TIMEOUT, async {
            let client = pool.get().await.map_err(super::pool_error)?;
            read::summaries_after(&client, bin, from, PAGE)
                .await
                .map_err(super::db_error)
        })
        .await;
        let rows = match fetched {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                tracing::warn!(bin_id = %bin, cause = %e, "catching a stream up failed");
                return;
            }
            Err(_) => {
                tracing::warn!(bin_id = %bin, "catching a stream up timed out");
                return;
            }
        };
        let full = rows.len() == PAGE;
        let rows: Vec<RequestSummary> = rows
            .into_iter()
            .filter(|r| upto.is_none_or(|u| r.id.get() <= u))
            .collect();
        if let Some(last) = rows.last() {
            from = last.id.get();
        }
        let done = !full || rows.is_empty() || upto.is_some_and(|u| from >= u);
        publish(shared, rows);
        if done {
            return;
        }
    }
}

fn on_bin(shared: &Shared, payload: &str) {
    let Some((what, bin)) = payload.split_once(' ') else {
        return;
    };
    shared.forget_bin(bin);
    if what == "deleted" {
        shared.relay().seen.remove(bin);
        shared.events.close(bin);
    }
}

/// The connection is gone: from now on the writer publishes by itself, and batches waiting for
/// their notification are delivered now (in order: they committed in that order).
async fn lost(shared: &Shared) {
    let pending = {
        let mut relay = shared.relay();
        relay.listening = false;
        std::mem::take(&mut relay.pending)
    };
    for (_, waiting) in pending {
        if let Ok(Ok(delivery)) = tokio::time::timeout(DB_TIMEOUT, waiting).await {
            deliver(shared, delivery);
        }
    }
}

/// After a reconnection: drop the bin cache (changes were missed) and catch every watched bin
/// up from the last id published for it.
async fn resync(pool: &Pool, shared: &Shared) {
    shared
        .bins
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    let bins: Vec<(String, i64)> = {
        let mut relay = shared.relay();
        relay.seen.retain(|bin, _| shared.events.is_watched(bin));
        relay.seen.iter().map(|(b, s)| (b.clone(), *s)).collect()
    };
    for (bin, from) in bins {
        catch_up(pool, shared, &bin, from, None).await;
    }
}
