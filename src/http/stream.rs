//! `GET /api/bins/{bin}/stream`: new captures as server-sent events.
//!
//! Each event is `id: {request id}`, `event: request`, `data: Summary`. A client that reconnects
//! with `Last-Event-ID` (or `?last_event_id=`) first gets every request after that id from the
//! database, then live ones, with no gap and no duplicate: the subscription starts before the
//! replay query, and live events at or below the last id sent are skipped. `Last-Event-ID: 0`
//! replays the whole bin.
//!
//! `?q=` (API.md "Search") filters the stream on the server: a request that does not match is
//! sent as `event: filtered` with only its id (`data: {"id": "N"}`), so a page still counts it
//! and a reconnect resumes after it. The server filters, not the page, because the page cannot
//! evaluate `body:` or header terms from a summary: it would fetch every arrival to find out,
//! and it would need a second implementation of the language.
//!
//! A stream too slow to keep up with the live events (the bin's channel ran past it) catches
//! up from the bin's recent batches kept in memory ([`crate::events::EventHub::recent_after`]:
//! the same shared text, no query), and from the database only for the ids those no longer
//! hold; either way it goes on after the last id it sent.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use tokio::sync::{broadcast, mpsc};

use super::views;
use crate::bins::{self, Search};
use crate::clock::now_ms;
use crate::ids::{BinId, RequestId};
use crate::limits::{ClientSlot, Slot};
use crate::model::RequestSummary;
use crate::state::AppState;
use crate::storage::Subscription;
use crate::web::ConnInfo;
use crate::web::body::ChannelBody;
use crate::web::client::client_ip;
use crate::web::error::ApiError;

/// A comment line this often keeps proxies and browsers from closing an idle stream.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Writes waiting for the client per stream, each up to GATHER's worth of events: 1.6 s of
/// events. A stream whose feed finds the queue full stops taking live events and later catches
/// up (from the recent batches in memory, or past them from the database, which costs far
/// more than the queue's memory): with 100 ms of queue
/// (4 writes of 25 ms), 500 streams at 39,500 captures/s (an overload on 2 cores) caught up
/// 20,230 times in 20 s, missed events past the bin's cap and peaked at 128 MiB, against no
/// catch-up at all with 1.6 s (64 writes of 25 ms).
const STREAM_QUEUE: usize = 16;
/// The most text a write joins into one piece. A stream that keeps up sends one event's text a
/// write, the bin's period shared by all its streams, never copied; one that fell behind has
/// several, which are joined only when small (a few frames of chunked encoding would cost more
/// than the copy). Large ones go as they are: 500 streams joining the same periods each into a
/// copy of their own, held in their queues, took hookbin's RSS to 172-210 MiB at 10,000
/// captures/s (issue 15, `bench/viewers.sh`, 2026-12-03).
const COPY_AT_MOST: usize = 64 * 1024;
/// Rows fetched per replay query.
const REPLAY_PAGE: usize = 500;
/// Time between two writes to one busy stream. Each write costs a wake-up, a system call
/// and TCP segments per stream, on the server and on the viewer's side: with 500 streams on a
/// bin paced at 1500 captures/s, writing every commit as it came gave a capture p99 of 144 ms
/// (busy machine), gathering what arrives within 25 ms into one write 8-20 ms. From 25 to
/// 100 ms, 500 streams at 3000 captures/s cost the server's stream threads a third less CPU
/// (4.0-4.3 s per 10 s against 6.2-6.4 s) and the capture p99 fell from 7.7-8.8 ms to
/// 2.6-4.0 ms, against 2.5-3.8 ms without streams (issue 15, `bench/viewers.sh`). An idle
/// stream still writes at once; 100 ms is about what a person can just notice. A busy bin sends
/// its streams an event this often too ([`crate::events::PERIOD`]): a stream writes one period
/// at its own phase of the next.
const GATHER: Duration = crate::events::PERIOD;

/// Where in each GATHER period a stream writes: streams opened one after another get phases
/// spread evenly over the period (steps of the golden ratio), so that the streams of a bin,
/// which all get the same commits, do not all write at the same moment. In step, 500 streams at
/// 10,000 captures/s wrote 40 MB in one burst every period, and the captures that came during a
/// burst waited behind it (issue 15, `bench/viewers.sh`).
fn next_phase() -> Duration {
    static OPENED: AtomicU64 = AtomicU64::new(0);
    let n = OPENED.fetch_add(1, Ordering::Relaxed);
    GATHER.mul_f64((n as f64 * 0.618_033_988_749_895).fract())
}

pub async fn stream(
    state: &Arc<AppState>,
    req: &Request<Incoming>,
    bin: &BinId,
    conn: &ConnInfo,
) -> Result<Response<crate::web::body::Body>, ApiError> {
    let now = now_ms();
    bins::live(state, bin, now).await?;
    let last = last_event_id(req)?;
    let filter = stream_filter(req)?;
    // Held by the feeding task: the client's stream count drops when the stream ends.
    let ip = client_ip(&state.config, conn.peer, req.headers());
    let Some(slot) = state.clients.take(ip, Slot::Stream) else {
        state
            .metrics
            .client_limit_rejections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return Err(ApiError {
            retry_after: Some(5),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "this client address already has {} event streams open; close one first",
                    state.clients.cap(Slot::Stream)
                ),
            )
        });
    };
    // Before the response: a capture its client makes once the stream is open must come after
    // the subscription's start.
    let subscription = state.store.subscribe(bin.as_str(), now).await?;
    let (tx, rx) = mpsc::channel::<Bytes>(STREAM_QUEUE);
    state.tasks.spawn(feed(
        state.clone(),
        bin.clone(),
        last,
        filter,
        subscription,
        tx,
        slot,
    ));
    let mut res = Response::new(ChannelBody(rx).boxed_unsync());
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tells nginx not to buffer this response, whatever its proxy_buffering says.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(res)
}

fn last_event_id(req: &Request<Incoming>) -> Result<Option<i64>, ApiError> {
    let from_query = req.uri().query().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "last_event_id")
            .map(|(_, v)| v.into_owned())
    });
    let raw = match req.headers().get("last-event-id") {
        Some(v) => Some(v.to_str().unwrap_or("").trim().to_owned()),
        None => from_query,
    };
    match raw.as_deref() {
        None | Some("") => Ok(None),
        // "0": everything from the start: a page rendered while the bin was still empty, or
        // `hookbin forward` resuming after losing the stream before the first event.
        Some("0") => Ok(Some(0)),
        Some(s) => RequestId::parse(s).map(|id| Some(id.get())).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_last_event_id",
                "Last-Event-ID must be a request id",
            )
        }),
    }
}

/// `?q=`: `None` without one (or a blank one); a bad `q` is `400 invalid_query`.
fn stream_filter(req: &Request<Incoming>) -> Result<Option<Search>, ApiError> {
    let q = req.uri().query().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "q")
            .map(|(_, v)| v.into_owned())
    });
    Ok(Search::parse(q.as_deref().unwrap_or(""))?)
}

fn event(summary: &RequestSummary) -> Bytes {
    let mut out = String::with_capacity(256);
    let data = views::summary(summary);
    let _ = write!(out, "id: {}\nevent: request\ndata: {data}\n\n", summary.id);
    Bytes::from(out)
}

/// The events of a batch of captures, one after the other.
fn render(summaries: &[RequestSummary]) -> Bytes {
    let mut text = Vec::with_capacity(summaries.len() * 320);
    for summary in summaries {
        text.extend_from_slice(&event(summary));
    }
    Bytes::from(text)
}

/// The event for `summary` under `filter`: the summary when it matches (or there is no filter),
/// else a `filtered` event with the id only. A request gone before it could be read (deleted,
/// evicted) is `filtered` too.
async fn filtered_event(
    state: &AppState,
    filter: Option<&Search>,
    summary: &RequestSummary,
) -> Bytes {
    let Some(search) = filter else {
        return event(summary);
    };
    let id = summary.id.get();
    let stored = match state.store.get_request(&summary.bin_id, id).await {
        Ok(stored) => stored,
        Err(e) => {
            tracing::warn!(bin_id = %summary.bin_id, cause = %e, "event stream filter: read failed");
            None
        }
    };
    let query = search.query.clone();
    let limit = Search::decode_limit(state);
    // Off the async threads: matching a body may mean decoding it.
    let hit = match stored {
        Some(r) => tokio::task::spawn_blocking(move || query.matches(&r, limit))
            .await
            .unwrap_or(false),
        None => false,
    };
    if hit {
        event(summary)
    } else {
        Bytes::from(format!(
            "id: {0}\nevent: filtered\ndata: {{\"id\":\"{0}\"}}\n\n",
            summary.id
        ))
    }
}

/// Sends events until the client goes, the bin goes, or the server shuts down. `_slot` is the
/// client's stream slot, given back when this ends.
async fn feed(
    state: Arc<AppState>,
    bin: BinId,
    last: Option<i64>,
    filter: Option<Search>,
    subscription: Subscription,
    tx: mpsc::Sender<Bytes>,
    _slot: ClientSlot,
) {
    let Subscription { mut events, start } = subscription;
    // Browsers reconnect after `retry` ms; the comment opens the stream at once through proxies.
    if tx
        .send(Bytes::from_static(b"retry: 2000\n: stream open\n\n"))
        .await
        .is_err()
    {
        return;
    }
    // A live stream starts where the subscription does: what the engine may deliver from
    // before it (`Subscription::start`) is not new.
    let mut last_sent = last.unwrap_or(start);
    let filter = filter.as_ref();
    if last.is_some() && !replay(&state, &bin, filter, &mut last_sent, i64::MAX, &tx).await {
        return;
    }
    let shutdown = state.shutdown.clone();
    // The stream's write slots: GATHER apart, at its own phase.
    let mut slot = tokio::time::Instant::now() + next_phase();
    let mut wrote_at = None;
    loop {
        // After a write, the next one waits for the stream's next slot: what arrives meanwhile
        // waits in the channel and goes out then. A stream that was idle writes at once.
        if let Some(at) = wrote_at.take() {
            if slot <= at {
                // Whole periods, counted rather than stepped: the stream may have been idle long.
                let periods = (at - slot).as_nanos() / GATHER.as_nanos() + 1;
                slot += GATHER * u32::try_from(periods).unwrap_or(u32::MAX);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(slot) => {}
                _ = tx.closed() => return,
                _ = shutdown.triggered() => return,
            }
        }
        let mut received = tokio::select! {
            received = events.recv() => received,
            _ = tokio::time::sleep(KEEPALIVE) => {
                if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                    return;
                }
                continue;
            }
            _ = tx.closed() => return,
            _ = shutdown.triggered() => return,
        };
        // The event that woke us, then every one already waiting, as one write.
        let mut out = Vec::new();
        loop {
            match received {
                Ok(batch) => append_batch(&state, filter, &batch, &mut last_sent, &mut out).await,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if !resume(&state, &bin, filter, &mut last_sent, &mut out, &tx).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    out.push(Bytes::from_static(b"event: bin_deleted\ndata: {}\n\n"));
                    flush(&mut out, &tx).await;
                    return;
                }
            }
            received = match events.try_recv() {
                Ok(batch) => Ok(batch),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    Err(broadcast::error::RecvError::Lagged(n))
                }
                Err(broadcast::error::TryRecvError::Closed) => {
                    Err(broadcast::error::RecvError::Closed)
                }
                Err(broadcast::error::TryRecvError::Empty) => break,
            };
        }
        if !flush(&mut out, &tx).await {
            return;
        }
        wrote_at = Some(tokio::time::Instant::now());
    }
}

/// Appends the events of `batch` after `last_sent` to `out`.
async fn append_batch(
    state: &AppState,
    filter: Option<&Search>,
    batch: &crate::events::Batch,
    last_sent: &mut i64,
    out: &mut Vec<Bytes>,
) {
    if batch.last_id() <= *last_sent {
        return;
    }
    if filter.is_none() && batch.first_id() > *last_sent {
        // The common case: the text every unfiltered stream shares.
        out.push(batch.text(render));
    } else {
        for summary in batch.summaries().iter().filter(|s| s.id.get() > *last_sent) {
            out.push(filtered_event(state, filter, summary).await);
        }
    }
    *last_sent = batch.last_id();
}

/// A stream too slow to keep up live (the bin's channel ran past it) gets what it missed: from
/// the bin's recent batches in memory, and from the database only the ids those no longer hold
/// (any the database no longer holds either are gone: deleted, or evicted past the bin's cap).
/// False when the client has gone.
///
/// Only those ids: reading everything after the stream's last id from the database instead, as
/// this once did, skipped what the recent batches still held past the bin's newest requests
/// (with the default cap of 1000 the database holds a tenth of a second at 10,000 captures/s,
/// the recent batches seconds), and cost each stream a query and its own rendering of up to a
/// cap's worth of events where the batches' text is shared.
async fn resume(
    state: &AppState,
    bin: &BinId,
    filter: Option<&Search>,
    last_sent: &mut i64,
    out: &mut Vec<Bytes>,
    tx: &mpsc::Sender<Bytes>,
) -> bool {
    loop {
        match catch_up(state, bin, filter, last_sent, out).await {
            Ok(()) => {
                state
                    .metrics
                    .stream_catchups
                    .fetch_add(1, Ordering::Relaxed);
                return true;
            }
            Err(through) => {
                state.metrics.stream_resyncs.fetch_add(1, Ordering::Relaxed);
                if !flush(out, tx).await
                    || !replay(state, bin, filter, last_sent, through, tx).await
                {
                    return false;
                }
                if through == i64::MAX {
                    return true;
                }
                // What the database did not have up to `through` is gone; the rest is in the
                // recent batches (unless they dropped more meanwhile: then round again).
                *last_sent = (*last_sent).max(through);
            }
        }
    }
}

/// Appends the events after `last_sent` from the bin's recent batches to `out`; when some of
/// them are no longer kept there, `Err(through)`: the ids up to `through` are only in the
/// database (what was appended stays).
async fn catch_up(
    state: &AppState,
    bin: &BinId,
    filter: Option<&Search>,
    last_sent: &mut i64,
    out: &mut Vec<Bytes>,
) -> Result<(), i64> {
    loop {
        let batches = state.events.recent_after(bin.as_str(), *last_sent)?;
        if batches.is_empty() {
            return Ok(());
        }
        for batch in &batches {
            append_batch(state, filter, batch, last_sent, out).await;
        }
    }
}

/// Sends `out` and empties it; false when the client has gone. A single piece goes as it is (the
/// bin's shared text, uncopied); several are joined into one piece (one frame, one write) up to
/// [`COPY_AT_MOST`] in all, and past it go one by one, uncopied. Sending many small pieces as
/// frames of their own (hyper writes up to 16 a time with `writev`) cost more than joining
/// them, at 500 streams on a bin taking 5,000 captures/s when each commit was an event: the
/// server's CPU per capture 193.5 us against 151.2, the viewers' reads half as much again, and
/// a higher RSS (issue 15, `bench/viewers.sh`).
async fn flush(out: &mut Vec<Bytes>, tx: &mpsc::Sender<Bytes>) -> bool {
    let text = match out.len() {
        0 => return true,
        1 => out.pop().unwrap_or_default(),
        _ if out.iter().map(Bytes::len).sum::<usize>() > COPY_AT_MOST => {
            for piece in out.drain(..) {
                if tx.send(piece).await.is_err() {
                    return false;
                }
            }
            return true;
        }
        _ => {
            let text = Bytes::from(out.concat());
            out.clear();
            text
        }
    };
    tx.send(text).await.is_ok()
}

/// Sends every stored request after `last_sent` up to `through` (`i64::MAX`: the newest); false
/// when the client has gone.
async fn replay(
    state: &AppState,
    bin: &BinId,
    filter: Option<&Search>,
    last_sent: &mut i64,
    through: i64,
    tx: &mpsc::Sender<Bytes>,
) -> bool {
    loop {
        let rows = match state
            .store
            .requests_after(bin.as_str(), *last_sent, through, REPLAY_PAGE)
            .await
        {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(bin_id = %bin, cause = %e, "event stream replay failed");
                return false;
            }
        };
        // A page goes out as one piece (one write), not a frame per row.
        let page = match filter {
            None => render(&rows),
            Some(_) => {
                let mut page = Vec::with_capacity(rows.len());
                for row in &rows {
                    page.extend_from_slice(&filtered_event(state, filter, row).await);
                }
                Bytes::from(page)
            }
        };
        if let Some(row) = rows.last() {
            if tx.send(page).await.is_err() {
                return false;
            }
            *last_sent = row.id.get();
        }
        if rows.len() < REPLAY_PAGE {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bin, StoredRequest};

    /// The ids of the `request` events in `text`, in order.
    fn request_ids(text: &str) -> Vec<i64> {
        text.split("\n\n")
            .filter(|event| event.contains("\nevent: request\n"))
            .filter_map(|event| event.strip_prefix("id: ")?.split('\n').next()?.parse().ok())
            .collect()
    }

    /// A test's state, its bin, and what must stay alive while it runs (the writer, the stop
    /// trigger, the database's directory).
    type TestBin = (
        Arc<AppState>,
        BinId,
        (
            crate::storage::Workers,
            crate::shutdown::ShutdownTrigger,
            tempfile::TempDir,
        ),
    );

    /// A state over a new SQLite database with one bin, whose event hub sends every commit as an
    /// event of its own (so that a test's commits can run past a stream's channel); keep the
    /// rest alive for the test.
    async fn state_with_bin() -> TestBin {
        state_with_bin_and_events(crate::events::EventHub::with_period(Duration::ZERO)).await
    }

    /// [`state_with_bin`] with the given event hub.
    async fn state_with_bin_and_events(events: Arc<crate::events::EventHub>) -> TestBin {
        let dir = tempfile::tempdir().unwrap();
        let (state, writer, trigger) =
            AppState::for_tests_with_events(dir.path().join("stream.db"), events).await;
        let bin = BinId::new();
        let row = Bin::sample(bin.as_str(), i64::MAX);
        state.store.create_bin(row, None).await.unwrap();
        (Arc::new(state), bin, (writer, trigger, dir))
    }

    /// Stores `n` captures in the bin, one commit each (each awaited).
    async fn capture(state: &AppState, bin: &BinId, n: usize) {
        for _ in 0..n {
            let request = StoredRequest::sample::<&[u8]>(bin.as_str(), "", "", &[], b"x");
            state.store_for_tests(request).await;
        }
    }

    /// Feeds a live stream (no `Last-Event-ID`) of `subscription` into a queue of `room`
    /// messages.
    fn spawn_feed(
        state: &Arc<AppState>,
        bin: &BinId,
        subscription: Subscription,
        room: usize,
    ) -> (tokio::task::JoinHandle<()>, mpsc::Receiver<Bytes>) {
        let slot = state
            .clients
            .take(std::net::Ipv4Addr::LOCALHOST.into(), Slot::Stream)
            .unwrap();
        let (tx, rx) = mpsc::channel(room);
        let feeding = tokio::spawn(feed(
            state.clone(),
            bin.clone(),
            None,
            None,
            subscription,
            tx,
            slot,
        ));
        (feeding, rx)
    }

    /// Reads the stream until it has sent the request `last`; the ids of every request sent.
    /// Write by write: each holds whole events, and some are megabytes.
    async fn read_through(rx: &mut mpsc::Receiver<Bytes>, last: i64) -> Vec<i64> {
        let mut ids = Vec::new();
        while ids.last() != Some(&last) {
            let write = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("the stream went quiet before the last capture")
                .expect("the stream ended");
            ids.extend(request_ids(std::str::from_utf8(&write).unwrap()));
        }
        ids
    }

    /// A stream whose client stops reading falls behind the bin's channel (16 events), and
    /// once read again gets what it missed from the recent batches in memory, not from the
    /// database: every capture once, in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_that_fell_behind_catches_up_from_the_recent_batches() {
        let (state, bin, _keep) = state_with_bin().await;
        let subscription = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        // Room for one message: the opening comment fills it, so the feed waits at its first
        // write while the captures below go on.
        let (feeding, mut rx) = spawn_feed(&state, &bin, subscription, 1);
        // One commit each: 400 events on the channel, more than it keeps.
        capture(&state, &bin, 400).await;

        assert_eq!(
            read_through(&mut rx, 400).await,
            (1..=400).collect::<Vec<_>>()
        );
        assert!(state.metrics.stream_catchups.load(Ordering::Relaxed) >= 1);
        assert_eq!(state.metrics.stream_resyncs.load(Ordering::Relaxed), 0);
        drop(rx);
        feeding.await.unwrap();
    }

    /// With the hub's real period, the captures of a busy bin reach its streams held and sent
    /// together (the last ones by the hub's flusher thread, with no capture after them): every
    /// capture once, in order, on every stream.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_stream_of_a_busy_bin_gets_every_capture_once_in_order() {
        let (state, bin, _keep) = state_with_bin_and_events(crate::events::EventHub::new()).await;
        let mut streams = Vec::new();
        for _ in 0..2 {
            let subscription = state.store.subscribe(bin.as_str(), 0).await.unwrap();
            streams.push(spawn_feed(&state, &bin, subscription, STREAM_QUEUE));
        }
        capture(&state, &bin, 300).await;
        for (feeding, mut rx) in streams {
            assert_eq!(
                read_through(&mut rx, 300).await,
                (1..=300).collect::<Vec<_>>()
            );
            drop(rx);
            feeding.await.unwrap();
        }
    }

    /// One piece goes as it is (the bin's shared text, not a copy of it); small pieces are
    /// joined into one write; large ones go one by one, uncopied.
    #[tokio::test]
    async fn a_write_copies_only_small_pieces() {
        let (tx, mut rx) = mpsc::channel(STREAM_QUEUE);
        let shared = Bytes::from(vec![b'a'; 100]);
        let mut out = vec![shared.clone()];
        assert!(flush(&mut out, &tx).await);
        assert!(out.is_empty());
        assert_eq!(rx.recv().await.unwrap().as_ptr(), shared.as_ptr());

        let mut out = vec![Bytes::from_static(b"ab"), Bytes::from_static(b"cd")];
        assert!(flush(&mut out, &tx).await);
        assert_eq!(rx.recv().await.unwrap(), "abcd");
        assert!(rx.try_recv().is_err());

        let big = [
            Bytes::from(vec![b'x'; COPY_AT_MOST]),
            Bytes::from(vec![b'y'; 10]),
        ];
        let mut out = big.to_vec();
        assert!(flush(&mut out, &tx).await);
        for piece in &big {
            assert_eq!(rx.recv().await.unwrap().as_ptr(), piece.as_ptr());
        }
        drop(rx);
        assert!(!flush(&mut vec![shared], &tx).await, "the client has gone");
    }

    /// A stream that fell behind further than the recent batches reads from the database only
    /// the ids those dropped, and the rest from memory: here the database has evicted the
    /// dropped ones (past the cap of 1000) and many the recent batches still hold, and the
    /// stream gets every one of the latter. Replaying everything after its last id from the
    /// database instead skipped ids 3-103. The feed starts after the captures, so it took
    /// nothing live: when it took ids 1 and 2 before falling behind (the timing of a loaded
    /// machine), it needed nothing from the database, and the check of its read failed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_behind_the_recent_batches_reads_only_what_they_dropped_from_the_database() {
        let (state, bin, _keep) = state_with_bin().await;
        let subscription = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        // Three captures of a third of the recent batches' bytes each (their summaries count
        // twice): the bin's recent batches drop the first two.
        let big = format!("q={}", "x".repeat(crate::events::RECENT_BYTES / 3));
        for _ in 0..3 {
            let request = StoredRequest::sample::<&[u8]>(bin.as_str(), "", &big, &[], b"x");
            state.store_for_tests(request).await;
        }
        // Then 1100 commits: the channel runs past the stream, and the database keeps the
        // newest 1000 (104-1103).
        capture(&state, &bin, 1100).await;
        assert_eq!(
            state
                .store
                .requests_after(bin.as_str(), 0, 3, 10)
                .await
                .unwrap(),
            [],
            "ids 1-3 evicted"
        );
        let (feeding, mut rx) = spawn_feed(&state, &bin, subscription, 1);

        assert_eq!(
            read_through(&mut rx, 1103).await,
            (3..=1103).collect::<Vec<_>>()
        );
        assert!(state.metrics.stream_resyncs.load(Ordering::Relaxed) >= 1);
        assert!(state.metrics.stream_catchups.load(Ordering::Relaxed) >= 1);
        drop(rx);
        feeding.await.unwrap();
    }

    /// A subscription made while the bin was being deleted (or reaped) ends like one the delete
    /// found: the delete can close the bin's channel before the subscription makes a new one.
    #[tokio::test]
    async fn a_subscription_to_a_bin_gone_meanwhile_is_closed() {
        use broadcast::error::TryRecvError;
        let (state, bin, _keep) = state_with_bin().await;
        let mut live = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        assert!(matches!(live.events.try_recv(), Err(TryRecvError::Empty)));
        // Expired at `now` (the reaper's to delete): closed, for every stream of the bin.
        let mut expired = state.store.subscribe(bin.as_str(), i64::MAX).await.unwrap();
        assert!(matches!(
            expired.events.try_recv(),
            Err(TryRecvError::Closed)
        ));
        assert!(matches!(live.events.try_recv(), Err(TryRecvError::Closed)));
        // Deleted.
        assert!(state.store.delete_bin(bin.as_str()).await.unwrap());
        let mut deleted = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        assert!(matches!(
            deleted.events.try_recv(),
            Err(TryRecvError::Closed)
        ));
    }

    /// A live stream that falls behind before its first event catches up from where it
    /// subscribed: not from the bin's first request, and not with the batches another stream
    /// of the bin kept in memory from before it opened.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_that_fell_behind_at_once_sends_nothing_from_before_it_opened() {
        let (state, bin, _keep) = state_with_bin().await;
        // Another viewer keeps the bin's channel, and with it the recent batches of these.
        let _other = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        capture(&state, &bin, 5).await;
        // Subscribed, then 400 commits before the feed reads its first event: it starts lagged.
        let subscription = state.store.subscribe(bin.as_str(), 0).await.unwrap();
        capture(&state, &bin, 400).await;
        let (feeding, mut rx) = spawn_feed(&state, &bin, subscription, 16);

        assert_eq!(
            read_through(&mut rx, 405).await,
            (6..=405).collect::<Vec<_>>()
        );
        assert!(state.metrics.stream_catchups.load(Ordering::Relaxed) >= 1);
        drop(rx);
        feeding.await.unwrap();
    }
}
