//! The use cases on bins and their requests, once: what the JSON API, capture and the pages all
//! do, with the checks, metrics and log lines that go with each.
//!
//! Handlers in [`crate::http`] and [`crate::pages`] parse their input, call one of these, and turn
//! the answer (or an [`Error`]) into their own response; they never call each other. Below this
//! is [`crate::storage`]. Ids arrive parsed ([`BinId`], [`RequestId`]): a malformed one never
//! gets this far. Every use case on an existing bin checks first that it is live (known and not
//! expired, from memory: no query), so an unknown or expired bin is the same
//! [`Error::BinNotFound`] everywhere.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::clock::now_ms;
use crate::ids::{self, BinId, RequestId};
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;
use crate::state::AppState;
use crate::storage::{BinEntry, CaptureOutcome, StoreError};

/// Why a use case did not happen. The HTTP side maps each to its status
/// (`web::error::ApiError: From<Error>`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Unknown, expired, deleted, or (at the edge) not a bin id at all.
    #[error("no such bin")]
    BinNotFound,
    /// No such request in this bin (deleted or evicted), or (at the edge) not a request id.
    #[error("no such request in this bin")]
    RequestNotFound,
    /// `--max-bins-per-minute` reached for this client.
    #[error("at most {per_minute} bins per minute per client address; retry in {retry_after} s")]
    TooManyBins { retry_after: u64, per_minute: u32 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The live bin `bin`, from the in-memory index.
pub fn live(state: &AppState, bin: &BinId, now: i64) -> Result<BinEntry, Error> {
    state
        .store
        .bin_entry(bin.as_str(), now)
        .ok_or(Error::BinNotFound)
}

/// Counts a bin creation against `--max-bins-per-minute` for `ip`. Checked before anything
/// else of a creation is read, so a flood costs no parsing.
pub fn admit(state: &AppState, ip: IpAddr, now: i64) -> Result<(), Error> {
    // IPv6 clients by their /64, like every per-client limit.
    state
        .bin_limit
        .check(crate::limits::client_key(ip), now)
        .map_err(|wait| {
            state.metrics.bins_rate_limited.fetch_add(1, Relaxed);
            Error::TooManyBins {
                retry_after: wait,
                per_minute: state.config.max_bins_per_minute,
            }
        })
}

/// Creates bin `id` (a fresh [`BinId::new`], after [`admit`]): stored, counted and logged.
pub async fn create(
    state: &AppState,
    id: BinId,
    ip: IpAddr,
    ttl: Duration,
    response: Option<ResponseSpec>,
) -> Result<Bin, Error> {
    let now = now_ms();
    let bin = Bin {
        id: id.into_string(),
        created_at: now,
        expires_at: now.saturating_add(ttl.as_millis() as i64),
        response: response.as_ref().map(ResponseSpec::to_json),
        request_count: 0,
    };
    state
        .store
        .create_bin(bin.clone(), response.map(Arc::new))
        .await?;
    state.metrics.bins_created.fetch_add(1, Relaxed);
    tracing::info!(bin_id = %bin.id, %ip, "bin created");
    Ok(bin)
}

/// The live bin with its current request count.
pub async fn get(state: &AppState, bin: &BinId, now: i64) -> Result<Bin, Error> {
    live(state, bin, now)?;
    state
        .store
        .get_bin(bin.as_str(), now)
        .await?
        .ok_or(Error::BinNotFound)
}

/// Deletes the bin and its requests; `false` when it went away between the check and the
/// delete (expired or deleted concurrently).
pub async fn delete(state: &AppState, bin: &BinId) -> Result<bool, Error> {
    live(state, bin, now_ms())?;
    let deleted = state.store.delete_bin(bin.as_str()).await?;
    if deleted {
        state.metrics.bins_deleted.fetch_add(1, Relaxed);
        tracing::info!(bin_id = %bin, "bin deleted");
    }
    Ok(deleted)
}

/// Sets (or with `None` resets to `200 ok`) the bin's custom response; the updated bin.
pub async fn set_response(
    state: &AppState,
    bin: &BinId,
    response: Option<ResponseSpec>,
    now: i64,
) -> Result<Bin, Error> {
    live(state, bin, now)?;
    state
        .store
        .set_response(bin.as_str(), response.map(Arc::new), now)
        .await?
        .ok_or(Error::BinNotFound)
}

/// Deletes every request of the bin, keeping the bin.
pub async fn clear_requests(state: &AppState, bin: &BinId) -> Result<(), Error> {
    live(state, bin, now_ms())?;
    Ok(state.store.clear_requests(bin.as_str()).await?)
}

/// Up to `limit` summaries older than `cursor`, newest first, and the cursor of the next page
/// when there is one (one extra row is fetched to know).
pub async fn page(
    state: &AppState,
    bin: &BinId,
    cursor: Option<RequestId>,
    limit: usize,
) -> Result<(Vec<RequestSummary>, Option<String>), Error> {
    live(state, bin, now_ms())?;
    let before = cursor.map(RequestId::get);
    let mut rows = state
        .store
        .list_requests(bin.as_str(), before, limit + 1)
        .await?;
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|r| ids::encode_cursor(r.id))
    } else {
        None
    };
    Ok((rows, next))
}

/// The stored request `id` of the bin.
pub async fn find_request(
    state: &AppState,
    bin: &BinId,
    id: RequestId,
) -> Result<StoredRequest, Error> {
    live(state, bin, now_ms())?;
    state
        .store
        .get_request(bin.as_str(), id.get())
        .await?
        .ok_or(Error::RequestNotFound)
}

/// A request id from a path segment. A bin that is not there answers as such even when the
/// request id is malformed too, as it did before ids were typed (`bin_not_found` first).
pub fn request_id(state: &AppState, bin: &BinId, id: &str) -> Result<RequestId, Error> {
    RequestId::parse(id).ok_or_else(|| match live(state, bin, now_ms()) {
        Ok(_) => Error::RequestNotFound,
        Err(e) => e,
    })
}

/// Deletes request `id` of the bin; `false` when it was already gone.
pub async fn delete_request(state: &AppState, bin: &BinId, id: RequestId) -> Result<bool, Error> {
    live(state, bin, now_ms())?;
    Ok(state.store.delete_request(bin.as_str(), id.get()).await?)
}

/// Records a capture: queues it for the writer without waiting for room (a full queue is an
/// error at once, so a flood gets 503s instead of growing memory) and waits for its commit.
/// The request id once committed.
pub async fn record(state: &AppState, request: StoredRequest) -> Result<RequestId, Error> {
    let pending = state
        .store
        .try_capture(request, state.config.max_requests_per_bin)
        .inspect_err(|e| {
            if matches!(e, StoreError::QueueFull) {
                state
                    .metrics
                    .captures_rejected_queue_full
                    .fetch_add(1, Relaxed);
                tracing::warn!("write queue full: answering 503");
            } else if !matches!(e, StoreError::Closed) {
                state.metrics.capture_failures.fetch_add(1, Relaxed);
            }
        })?;
    let outcome = pending.outcome().await.inspect_err(|e| {
        // Stopping is not a failure: the 503 says so and the client retries elsewhere.
        if !matches!(e, StoreError::Closed) {
            state.metrics.capture_failures.fetch_add(1, Relaxed);
        }
    })?;
    match outcome {
        CaptureOutcome::Stored { id, evicted } => {
            state.metrics.requests_captured.fetch_add(1, Relaxed);
            state.metrics.requests_evicted.fetch_add(evicted, Relaxed);
            Ok(RequestId::from_row(id))
        }
        CaptureOutcome::BinGone => Err(Error::BinNotFound),
    }
}

/// A bin id from a path segment: malformed is the same 404 as unknown.
pub fn bin_id(id: &str) -> Result<BinId, Error> {
    BinId::parse(id).ok_or(Error::BinNotFound)
}

/// The ids of a `.../bins/{bin}/requests/{id}` path.
pub fn path_ids(state: &AppState, bin: &str, id: &str) -> Result<(BinId, RequestId), Error> {
    let bin = bin_id(bin)?;
    let id = request_id(state, &bin, id)?;
    Ok((bin, id))
}
