//! `GET /` and `POST /bins` (the "Create new URL" button).

use std::sync::Arc;

use askama::Template;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::{PageResult, field, query_param, read_form, render, see_other};
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
    /// `--private-bins`: the "private" choice is preselected.
    private_default: bool,
}

pub fn page(state: &AppState, req: &Request<Incoming>) -> PageResult {
    let base = capture_base(&state.config, req.headers());
    render(
        StatusCode::OK,
        &HomePage {
            example_url: format!("{base}/r/<your-bin-id>"),
            ttl: super::format::duration_words(state.config.bin_ttl.as_millis() as i64),
            deleted: query_param(req, "deleted").is_some(),
            private_default: state.config.private_bins,
        },
    )
}

pub async fn create_bin(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    conn: &ConnInfo,
) -> PageResult {
    let ip = client_ip(&state.config, conn.peer, req.headers());
    bins::admit(state, ip, now_ms())?;
    let form = read_form(state, req).await?;
    let private = match field(&form, "visibility") {
        "private" => true,
        "public" => false,
        _ => state.config.private_bins,
    };
    let id = crate::ids::BinId::new();
    let (bin, token) = bins::create(state, id, ip, state.config.bin_ttl, None, private).await?;
    // A private bin's page opens through its token link, which sets the bin's cookie.
    Ok(see_other(&match token {
        Some(token) => format!("/bins/{}?token={token}", bin.id),
        None => format!("/bins/{}", bin.id),
    }))
}
