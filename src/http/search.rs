//! Search: one page of a bin's requests that match a `q` (API.md "Search"), for the JSON list
//! and the bin page alike.
//!
//! The scan runs on the read pool's blocking threads, newest first, and stops at a budget so
//! that no query (a full bin of decompression bombs, a bin far above the default cap) holds a
//! read connection for long: a page may then hold fewer than `limit` matches, even none, and
//! still carry a `next_cursor` to go on from where the scan stopped.

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;

use super::error::ApiError;
use crate::ids;
use crate::model::RequestSummary;
use crate::search::Query;
use crate::state::AppState;
use crate::storage::ScanBudget;

/// Decoded bytes searched per body. Far below `--max-decoded-bytes` (64 MiB by default): a
/// search reads a whole bin, and a 64 MiB decode per request would let one bin of bombs make
/// every search take seconds. A `body:` term matches only in the first MiB of a decoded body
/// (stored bodies that are not encoded are searched whole).
pub const SEARCH_DECODE_LIMIT: usize = 1024 * 1024;

/// One page's scan: rows, stored body bytes, time. A full default bin (1000 requests) fits
/// many times over; the time bound is for encoded bodies, whose decoding rows and bytes do
/// not bound.
const BUDGET: ScanBudget = ScanBudget {
    max_rows: 20_000,
    max_bytes: 256 * 1024 * 1024,
    max_time: Duration::from_secs(2),
};

/// A parsed `q` with its text (the cursor carries the text's fingerprint).
#[derive(Debug, Clone)]
pub struct Search {
    pub text: String,
    pub query: Arc<Query>,
}

impl Search {
    /// Parses `q`; `None` for an empty or blank `q` (no filter). A bad `q` is `400
    /// invalid_query` naming the term.
    pub fn parse(q: &str) -> Result<Option<Search>, ApiError> {
        if q.trim().is_empty() {
            return Ok(None);
        }
        let query = crate::search::parse(q).map_err(invalid_query)?;
        Ok(Some(Search {
            text: q.to_owned(),
            query: Arc::new(query),
        }))
    }
}

/// The API's error for a `q` that does not parse.
pub fn invalid_query(e: crate::search::QueryError) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", format!("q: {e}"))
}

/// Up to `limit` summaries of requests older than `cursor` matching `search`, newest first,
/// and the cursor of the next page (bound to `search.text`) when the scan did not reach the
/// bin's first request.
pub async fn search_page(
    state: &AppState,
    bin: &str,
    search: &Search,
    cursor: Option<i64>,
    limit: usize,
) -> Result<(Vec<RequestSummary>, Option<String>), ApiError> {
    let decode_limit = SEARCH_DECODE_LIMIT.min(state.config.max_decoded_bytes);
    let query = search.query.clone();
    let with_body = query.reads_body();
    let page = state
        .store
        .search_requests(bin, cursor, limit, with_body, BUDGET, move |r| {
            query.matches(r, decode_limit)
        })
        .await?;
    let next = page
        .resume_before
        .map(|id| ids::encode_search_cursor(id, &search.text));
    Ok((page.rows, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_q_is_no_filter_and_bad_q_names_the_term() {
        assert!(Search::parse("").unwrap().is_none());
        assert!(Search::parse("   ").unwrap().is_none());
        assert!(Search::parse("method:post").unwrap().is_some());
        let e = Search::parse("method:post \"open").unwrap_err();
        assert_eq!(e.code, "invalid_query");
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("\"open"), "{}", e.message);
        let e = Search::parse("colour:red").unwrap_err();
        assert!(e.message.contains("colour:red"), "{}", e.message);
    }
}
