//! `GET /` and `POST /bins` (the "Create new URL" button).

use std::sync::Arc;

use askama::Template;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::{PageResult, check_same_site, query_param, render, see_other};
use crate::bins;
use crate::clock::now_ms;
use crate::state::AppState;
use crate::web::ConnInfo;
use crate::web::client::{capture_base, client_ip};

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage {
    /// What a bin URL looks like on this server, for the how-to.
    example_url: String,
    ttl: String,
    deleted: bool,
}

pub fn page(state: &AppState, req: &Request<Incoming>) -> PageResult {
    let base = capture_base(&state.config, req.headers());
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
    check_same_site(state, &req)?;
    let ip = client_ip(&state.config, conn.peer, req.headers());
    bins::admit(state, ip, now_ms())?;
    let id = crate::ids::BinId::new();
    let bin = bins::create(state, id, ip, state.config.bin_ttl, None).await?;
    Ok(see_other(&format!("/bins/{}", bin.id)))
}
