//! `GET /` and `POST /bins` (the "Create new URL" button).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use askama::Template;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::{PageError, PageResult, check_same_site, query_param, render, see_other};
use crate::clock::now_ms;
use crate::http::ConnInfo;
use crate::http::client::{client_ip, public_base};
use crate::ids;
use crate::model::Bin;
use crate::state::AppState;

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    /// What a bin URL looks like on this server, for the how-to.
    example_url: String,
    ttl: String,
    deleted: bool,
}

pub fn page(state: &AppState, req: &Request<Incoming>) -> PageResult {
    let base = public_base(&state.config, req.headers());
    render(
        StatusCode::OK,
        &HomePage {
            example_url: format!("{base}/r/<your-bin-id>"),
            ttl: super::format::duration_words(state.config.bin_ttl.as_millis() as i64),
            deleted: query_param(req, "deleted").is_some(),
        },
    )
}

pub async fn create_bin(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    conn: &ConnInfo,
) -> PageResult {
    check_same_site(&req)?;
    let now = now_ms();
    let ip = client_ip(&state.config, conn.peer, req.headers());
    if let Err(wait) = state.bin_limit.check(ip, now) {
        state.metrics.bins_rate_limited.fetch_add(1, Relaxed);
        return Err(PageError {
            retry_after: Some(wait),
            ..PageError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "This address may create {} bins a minute. Try again in {wait} s.",
                    state.config.max_bins_per_minute
                ),
            )
        });
    }
    let bin = Bin {
        id: ids::new_bin_id(),
        created_at: now,
        expires_at: now.saturating_add(state.config.bin_ttl.as_millis() as i64),
        response: None,
        request_count: 0,
    };
    state.store.create_bin(bin.clone(), None).await?;
    state.metrics.bins_created.fetch_add(1, Relaxed);
    tracing::info!(bin_id = %bin.id, %ip, "bin created from the home page");
    Ok(see_other(&format!("/bins/{}", bin.id)))
}
