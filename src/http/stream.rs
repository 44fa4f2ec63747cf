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

use std::fmt::Write as _;
use std::sync::Arc;
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
use crate::web::ConnInfo;
use crate::web::body::ChannelBody;
use crate::web::client::client_ip;
use crate::web::error::ApiError;

/// A comment line this often keeps proxies and browsers from closing an idle stream.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Rows fetched per replay query.
const REPLAY_PAGE: usize = 500;

pub async fn stream(
    state: &Arc<AppState>,
    req: &Request<Incoming>,
    bin: &BinId,
    conn: &ConnInfo,
) -> Result<Response<crate::web::body::Body>, ApiError> {
    bins::live(state, bin, now_ms()).await?;
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
    let events = state.events.subscribe(bin.as_str());
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    state.tasks.spawn(feed(
        state.clone(),
        bin.clone(),
        last,
        filter,
        events,
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
    mut events: broadcast::Receiver<crate::events::Event>,
    tx: mpsc::Sender<Bytes>,
    _slot: ClientSlot,
) {
    // Browsers reconnect after `retry` ms; the comment opens the stream at once through proxies.
    if tx
        .send(Bytes::from_static(b"retry: 2000\n: stream open\n\n"))
        .await
        .is_err()
    {
        return;
    }
    let mut last_sent = last.unwrap_or(0);
    let filter = filter.as_ref();
    if last.is_some() && !replay(&state, &bin, filter, &mut last_sent, &tx).await {
        return;
    }
    let shutdown = state.shutdown.clone();
    loop {
        tokio::select! {
            received = events.recv() => match received {
                Ok(summary) => {
                    let id = summary.id.get();
                    if id > last_sent {
                        let event = filtered_event(&state, filter, &summary).await;
                        if tx.send(event).await.is_err() {
                            return;
                        }
                        last_sent = id;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Too slow to keep up live: catch up from the database instead.
                    if !replay(&state, &bin, filter, &mut last_sent, &tx).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => {
                    let _ = tx.send(Bytes::from_static(b"event: bin_deleted\ndata: {}\n\n")).await;
                    return;
                }
            },
            _ = tokio::time::sleep(KEEPALIVE) => {
                if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                    return;
                }
            }
            _ = tx.closed() => return,
            _ = shutdown.triggered() => return,
        }
    }
}

/// Sends every stored request after `last_sent`; false when the client has gone.
async fn replay(
    state: &AppState,
    bin: &BinId,
    filter: Option<&Search>,
    last_sent: &mut i64,
    tx: &mpsc::Sender<Bytes>,
) -> bool {
    loop {
        let rows = match state
            .store
            .requests_after(bin.as_str(), *last_sent, REPLAY_PAGE)
            .await
        {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(bin_id = %bin, cause = %e, "event stream replay failed");
                return false;
            }
        };
        for row in &rows {
            if tx
                .send(filtered_event(state, filter, row).await)
                .await
                .is_err()
            {
                return false;
            }
            *last_sent = row.id.get();
        }
        if rows.len() < REPLAY_PAGE {
            return true;
        }
    }
}
