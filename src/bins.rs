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
use crate::search::Query;
use crate::state::AppState;
use crate::storage::{BinEntry, CaptureOutcome, ScanBudget, StoreError};

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
    /// A search (`q`) that does not parse; the message names the term.
    #[error("q: {0}")]
    InvalidQuery(#[from] crate::search::QueryError),
    /// `--max-db-bytes` reached: a quota of ours, not a full disk; nothing was recorded.
    #[error("--max-db-bytes {max} reached")]
    DbQuotaReached { max: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The live bin `bin`: from the in-memory index (on PostgreSQL, from the database when this
/// node has not seen it: another node may have made it).
pub async fn live(state: &AppState, bin: &BinId, now: i64) -> Result<BinEntry, Error> {
    state
        .store
        .find_bin(bin.as_str(), now)
        .await?
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

/// Creates bin `id` (a fresh [`BinId::new`], after [`admit`]): stored, counted and logged. A
/// private bin comes with its view token, which exists nowhere else: only its hash is stored.
pub async fn create(
    state: &AppState,
    id: BinId,
    ip: IpAddr,
    ttl: Duration,
    response: Option<ResponseSpec>,
    private: bool,
) -> Result<(Bin, Option<String>), Error> {
    let now = now_ms();
    let (token, view_token_hash) = match private.then(ids::new_view_token) {
        Some((token, hash)) => (Some(token), Some(hash)),
        None => (None, None),
    };
    let bin = Bin {
        id: id.into_string(),
        created_at: now,
        expires_at: now.saturating_add(ttl.as_millis() as i64),
        response: response.as_ref().map(ResponseSpec::to_json),
        request_count: 0,
        view_token_hash,
        slots: None,
    };
    state
        .store
        .create_bin(bin.clone(), response.map(Arc::new))
        .await?;
    state.metrics.bins_created.fetch_add(1, Relaxed);
    tracing::info!(bin_id = %bin.id, %ip, private, "bin created");
    Ok((bin, token))
}

/// Whether the caller may use bin `bin` (any read or change; capture is not asked): a public
/// bin, or a private one with its view `token`. Everything else, an unknown or malformed bin
/// included, is the same [`Error::BinNotFound`], so a caller without the token cannot tell a
/// private bin from no bin. The hashes are compared in constant time.
pub async fn authorize(state: &AppState, bin: &str, token: Option<&str>) -> Result<(), Error> {
    use subtle::ConstantTimeEq as _;
    let bin = bin_id(bin)?;
    let entry = live(state, &bin, now_ms()).await?;
    let Some(expected) = entry.view_token_hash else {
        return Ok(());
    };
    let presented = ids::hash_view_token(token.unwrap_or_default());
    if token.is_some() && bool::from(presented.ct_eq(&expected)) {
        Ok(())
    } else {
        Err(Error::BinNotFound)
    }
}

/// Whether `token` opens the private bin `bin` (for a page link that sets the bin's cookie).
pub async fn token_opens(state: &AppState, bin: &BinId, token: &str) -> bool {
    live(state, bin, now_ms())
        .await
        .is_ok_and(|e| e.view_token_hash.is_some())
        && authorize(state, bin.as_str(), Some(token)).await.is_ok()
}

/// The live bin with its current request count.
pub async fn get(state: &AppState, bin: &BinId, now: i64) -> Result<Bin, Error> {
    live(state, bin, now).await?;
    state
        .store
        .get_bin(bin.as_str(), now)
        .await?
        .ok_or(Error::BinNotFound)
}

/// Deletes the bin and its requests; `false` when it went away between the check and the
/// delete (expired or deleted concurrently).
pub async fn delete(state: &AppState, bin: &BinId) -> Result<bool, Error> {
    live(state, bin, now_ms()).await?;
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
    live(state, bin, now).await?;
    state
        .store
        .set_response(bin.as_str(), response.map(Arc::new), now)
        .await?
        .ok_or(Error::BinNotFound)
}

/// Deletes every request of the bin, keeping the bin.
pub async fn clear_requests(state: &AppState, bin: &BinId) -> Result<(), Error> {
    live(state, bin, now_ms()).await?;
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
    live(state, bin, now_ms()).await?;
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

/// Decoded bytes searched per body. Far below `--max-decoded-bytes` (64 MiB by default): a
/// search reads a whole bin, and a 64 MiB decode per request would let one bin of bombs make
/// every search take seconds. A `body:` term matches only in the first MiB of a decoded body
/// (stored bodies that are not encoded are searched whole).
pub const SEARCH_DECODE_LIMIT: usize = 1024 * 1024;

/// One search page's scan: rows, stored body bytes, time. The time bound is what keeps a page
/// quick whatever the bodies are (big, compressed, encoded) and however busy the machine is: a
/// page is answered after about [`SEARCH_SCAN_TIME`] of scanning, and its cursor goes on from
/// there. (At 20,000 rows of 1 KiB JSON and no tighter time bound, a page took 30-50 ms on a
/// 2-core machine: bench/RESULTS.md, growth.) A full bin at the default cap (1000 requests) is
/// always scanned whole, so that its search is one page even on a loaded machine.
const SEARCH_BUDGET: ScanBudget = ScanBudget {
    max_rows: 20_000,
    max_bytes: 256 * 1024 * 1024,
    max_time: SEARCH_SCAN_TIME,
    time_after_rows: 1000,
};

/// How long one search page scans at most (see [`SEARCH_BUDGET`]).
const SEARCH_SCAN_TIME: Duration = Duration::from_millis(25);

/// A parsed `q` (API.md "Search") with its text: the cursors of its pages carry the text's
/// fingerprint, so they are refused with another `q`.
#[derive(Debug, Clone)]
pub struct Search {
    pub text: String,
    pub query: Arc<Query>,
}

impl Search {
    /// Parses `q`; `None` for an empty or blank `q` (no filter).
    pub fn parse(q: &str) -> Result<Option<Search>, Error> {
        if q.trim().is_empty() {
            return Ok(None);
        }
        let query = crate::search::parse(q)?;
        Ok(Some(Search {
            text: q.to_owned(),
            query: Arc::new(query),
        }))
    }

    /// The decoded-body limit for `config`: [`SEARCH_DECODE_LIMIT`], or less.
    pub fn decode_limit(state: &AppState) -> usize {
        SEARCH_DECODE_LIMIT.min(state.config.max_decoded_bytes)
    }

    /// Whether `r` matches (decoding its body if a term needs it: call off the async threads).
    pub fn matches(&self, r: &StoredRequest, decode_limit: usize) -> bool {
        self.query.matches(r, decode_limit)
    }
}

/// A cursor (`meta.next_cursor`) issued for `search` (or for the plain list without one):
/// the request id to go on below, or `None` for a forgery or another query's cursor.
pub fn decode_cursor(cursor: &str, search: Option<&Search>) -> Option<RequestId> {
    ids::decode_search_cursor(cursor, search.map_or("", |s| s.text.as_str()))
}

/// A page of the bin's requests older than `cursor`, newest first: all of them, or those that
/// match `search`. A search scans within a budget, so that no query (a full bin of
/// decompression bombs, a bin far above the default cap) holds a read connection for long: its
/// page may then hold fewer than `limit` matches, even none, and still carry a next cursor to
/// go on from where the scan stopped. The next cursor is bound to the search.
pub async fn search(
    state: &AppState,
    bin: &BinId,
    search: Option<&Search>,
    cursor: Option<RequestId>,
    limit: usize,
) -> Result<(Vec<RequestSummary>, Option<String>), Error> {
    let Some(search) = search else {
        return page(state, bin, cursor, limit).await;
    };
    live(state, bin, now_ms()).await?;
    let decode_limit = Search::decode_limit(state);
    let query = search.query.clone();
    let with_body = query.reads_body();
    let page = state
        .store
        .search_requests(
            bin.as_str(),
            cursor.map(RequestId::get),
            limit,
            with_body,
            SEARCH_BUDGET,
            move |r| query.matches(r, decode_limit),
        )
        .await?;
    let next = page
        .resume_before
        .map(|id| ids::encode_search_cursor(RequestId::from_row(id), &search.text));
    Ok((page.rows, next))
}

/// The highest request id the bin has (`0` when it has none).
pub async fn last_request_id(state: &AppState, bin: &BinId) -> Result<i64, Error> {
    live(state, bin, now_ms()).await?;
    Ok(state.store.last_request_id(bin.as_str()).await?)
}

/// The stored request `id` of the bin.
pub async fn find_request(
    state: &AppState,
    bin: &BinId,
    id: RequestId,
) -> Result<StoredRequest, Error> {
    live(state, bin, now_ms()).await?;
    state
        .store
        .get_request(bin.as_str(), id.get())
        .await?
        .ok_or(Error::RequestNotFound)
}

/// A request id from a path segment. A bin that is not there answers as such even when the
/// request id is malformed too, as it did before ids were typed (`bin_not_found` first).
pub async fn request_id(state: &AppState, bin: &BinId, id: &str) -> Result<RequestId, Error> {
    match RequestId::parse(id) {
        Some(id) => Ok(id),
        None => Err(match live(state, bin, now_ms()).await {
            Ok(_) => Error::RequestNotFound,
            Err(e) => e,
        }),
    }
}

/// Deletes request `id` of the bin; `false` when it was already gone.
pub async fn delete_request(state: &AppState, bin: &BinId, id: RequestId) -> Result<bool, Error> {
    live(state, bin, now_ms()).await?;
    Ok(state.store.delete_request(bin.as_str(), id.get()).await?)
}

/// Records a capture: queues it for the writer without waiting for room (a full queue is an
/// error at once, so a flood gets 503s instead of growing memory) and waits for its commit.
/// `header_lines`: the request's header lines in their stored form (its `headers` are empty);
/// `response_json`: the answer it gets, as stored. The request id once committed.
pub async fn record(
    state: &AppState,
    request: StoredRequest,
    header_lines: Vec<u8>,
    response_json: Arc<str>,
) -> Result<RequestId, Error> {
    let config = &state.config;
    let storage_full = || {
        state
            .metrics
            .captures_rejected_storage_full
            .fetch_add(1, Relaxed);
    };
    // `--max-db-bytes`: refused before it is queued, so nothing is recorded; deletes and the
    // reaper bring the figure back down.
    if let Some(max) = config.max_db_bytes
        && state.store.used_bytes() >= max
    {
        storage_full();
        return Err(Error::DbQuotaReached { max });
    }
    let pending = state
        .store
        .try_capture_lines(
            request,
            header_lines,
            Some(response_json),
            config.max_requests_per_bin,
            config.max_bin_bytes,
        )
        .inspect_err(|e| {
            if matches!(e, StoreError::QueueFull) {
                state
                    .metrics
                    .captures_rejected_queue_full
                    .fetch_add(1, Relaxed);
                tracing::warn!("write queue full: answering 503");
            } else if !matches!(e, StoreError::Closed | StoreError::Full(_)) {
                state.metrics.capture_failures.fetch_add(1, Relaxed);
            }
        })?;
    let outcome = pending.outcome().await.inspect_err(|e| {
        // Stopping is not a failure: the 503 says so and the client retries elsewhere.
        if matches!(e, StoreError::Full(_)) {
            storage_full();
        } else if !matches!(e, StoreError::Closed) {
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
pub async fn path_ids(state: &AppState, bin: &str, id: &str) -> Result<(BinId, RequestId), Error> {
    let bin = bin_id(bin)?;
    let id = request_id(state, &bin, id).await?;
    Ok((bin, id))
}

#[cfg(test)]
mod search_tests {
    use super::*;

    #[test]
    fn blank_q_is_no_filter_and_a_bad_q_names_the_term() {
        assert!(Search::parse("").unwrap().is_none());
        assert!(Search::parse("   ").unwrap().is_none());
        assert!(Search::parse("method:post").unwrap().is_some());
        let e = Search::parse("method:post \"open").unwrap_err();
        assert!(matches!(e, Error::InvalidQuery(_)));
        assert!(e.to_string().starts_with("q: "), "{e}");
        assert!(e.to_string().contains("\"open"), "{e}");
        let e = Search::parse("colour:red").unwrap_err();
        assert!(e.to_string().contains("colour:red"), "{e}");
    }
}
