//! The bin page (`/bins/{bin}`), the page people keep open, and its forms.
//!
//! One page costs at most three reads: the bin, one page of summaries (never headers or
//! bodies), and the selected request.

use std::sync::Arc;

use askama::Template;
use hyper::body::Incoming;
use hyper::{HeaderMap, Request, StatusCode};
use serde_json::{Value, json};

use super::format::{
    absolute_time, exact_bytes, human_size, method_class, row_target, row_time, time_until,
};
use super::i18n::Ui;
use super::request::{Detail, detail};
use super::{PageError, PageResult, field, query_param, read_form, render, see_other, shell_quote};
use crate::bins::{self, Search};
use crate::clock::{now_ms, rfc3339_ms};
use crate::ids::{self, BinId, RequestId};
use crate::model::{Bin, RequestSummary};
use crate::response::ResponseSpec;
use crate::state::AppState;
use crate::web::client::capture_base;

/// Rows per page of the request list.
const PAGE_SIZE: usize = 50;

/// One row of the request list.
pub struct Row {
    pub id: String,
    pub href: String,
    pub method: String,
    pub method_class: &'static str,
    pub target: String,
    pub time_iso: String,
    pub time_abs: String,
    pub time_text: String,
    pub size: String,
    pub size_exact: String,
    pub content_type: String,
    pub truncated: bool,
    pub selected: bool,
}

impl Row {
    fn new(s: &RequestSummary, href: String, selected: bool, now: i64, ui: &Ui) -> Self {
        Row {
            id: s.id.to_string(),
            href,
            method: s.method.clone(),
            method_class: method_class(&s.method),
            target: row_target(&s.subpath, &s.query),
            time_iso: rfc3339_ms(s.received_at),
            time_abs: absolute_time(s.received_at, ui.lang),
            time_text: row_time(s.received_at, now, ui.lang),
            size: human_size(s.body_size, ui),
            size_exact: exact_bytes(s.body_size, ui),
            content_type: s.content_type.clone().unwrap_or_default(),
            truncated: s.body_truncated,
            selected,
        }
    }

    /// The empty row cloned by the page's JavaScript for live arrivals.
    fn blank() -> Self {
        Row {
            id: String::new(),
            href: String::new(),
            method: String::new(),
            method_class: "m-other",
            target: String::new(),
            time_iso: String::new(),
            time_abs: String::new(),
            time_text: String::new(),
            size: String::new(),
            size_exact: String::new(),
            content_type: String::new(),
            truncated: false,
            selected: false,
        }
    }
}

/// The custom-response form: its fields as text, so a rejected submission comes back as typed.
pub struct ResponseForm {
    pub status: String,
    pub headers: String,
    pub body: String,
    pub delay_ms: String,
    pub error: Option<String>,
}

impl ResponseForm {
    fn from_spec(spec: Option<&ResponseSpec>) -> Self {
        match spec {
            None => ResponseForm {
                status: "200".into(),
                headers: String::new(),
                body: String::new(),
                delay_ms: "0".into(),
                error: None,
            },
            Some(s) => ResponseForm {
                status: s.status.to_string(),
                headers: s
                    .headers
                    .iter()
                    .map(|(n, v)| format!("{n}: {v}\n"))
                    .collect(),
                body: s.body.clone(),
                delay_ms: s.delay_ms.to_string(),
                error: None,
            },
        }
    }

    fn from_form(form: &[(String, String)]) -> Self {
        ResponseForm {
            status: field(form, "status").to_owned(),
            headers: field(form, "headers").to_owned(),
            body: field(form, "body").to_owned(),
            delay_ms: field(form, "delay_ms").to_owned(),
            error: None,
        }
    }

    /// The spec as `PUT /api/bins/{bin}/response` would receive it, validated the same way.
    fn to_spec(&self, bin: &BinId, ui: &Ui) -> Result<ResponseSpec, String> {
        let number = |text: &str, default: u64| -> Value {
            let text = text.trim();
            if text.is_empty() {
                return json!(default);
            }
            // Not a number: pass the text on, so the validator names the field.
            text.parse::<u64>().map(Value::from).unwrap_or(json!(text))
        };
        let mut headers = Vec::new();
        for (i, line) in self.headers.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(ui.t2(
                    "bin-form-line",
                    "line",
                    (i + 1).to_string(),
                    "got",
                    format!("{:?}", line.trim()),
                ));
            };
            headers.push(json!([name.trim(), value.trim()]));
        }
        let value = json!({
            "status": number(&self.status, 200),
            "headers": headers,
            "body": self.body.replace("\r\n", "\n"),
            "delay_ms": number(&self.delay_ms, 0),
        });
        ResponseSpec::from_json(&value, "", bin.as_str()).map_err(|e| e.to_string())
    }
}

/// One sentence on what the bin answers.
fn response_summary(spec: Option<&ResponseSpec>, ui: &Ui) -> String {
    let Some(s) = spec else {
        return ui.t("bin-answers-default");
    };
    let mut parts = vec![ui.t1("bin-answers", "status", s.status.to_string())];
    if !s.headers.is_empty() {
        parts.push(ui.count("bin-answers-headers", s.headers.len() as u64));
    }
    if !s.body.is_empty() {
        let size = human_size(s.body.len() as u64, ui);
        parts.push(ui.t1("bin-answers-body", "size", size));
    }
    if s.delay_ms > 0 {
        parts.push(ui.t1("bin-answers-delay", "ms", ui.lang.int(s.delay_ms)));
    }
    format!("{}.", parts.join(", "))
}

#[derive(Template)]
#[template(path = "bin.html")]
struct BinPage {
    ui: Ui,
    bin: String,
    capture_url: String,
    example_curl: String,
    expires_iso: String,
    expires_abs: String,
    expires_text: String,
    count: u64,
    cap: u64,
    rows: Vec<Row>,
    blank_row: Option<Row>,
    /// On a later page: the link back to the newest requests.
    newest_href: Option<String>,
    older_href: Option<String>,
    /// `/api/bins/{bin}/stream`, with `?last_event_id=` so nothing between render and connect
    /// is missed.
    stream_url: String,
    first_page: bool,
    selected: Option<Detail>,
    /// The user picked the selected request (`?req=`): on a phone, the detail replaces the list.
    picked: bool,
    /// `?req=` named a request that is gone.
    missing: bool,
    response_active: bool,
    /// The custom response's status, for the header bar.
    response_status: u16,
    response_summary: String,
    form: ResponseForm,
    form_open: bool,
    /// The search box's text (`?q=`), as typed.
    q: String,
    /// `?q=` did not parse: why, naming the term.
    q_error: Option<String>,
    /// A valid, non-blank `q` filters the list and the live rows.
    filtered: bool,
    /// The first page of the list with this page's `q`.
    list_href: String,
    /// A private bin's view link, rebuilt from the token its cookie carries (only its hash is
    /// stored): shown so the user can keep or share it.
    view_url: Option<String>,
}

pub async fn page(state: &AppState, req: &Request<Incoming>, bin: &BinId, ui: &Ui) -> PageResult {
    let q = query_param(req, "q").unwrap_or_default();
    // A bad query is shown on the page, beside the box, not as an error page: the user fixes
    // it in place. The list then shows nothing rather than everything, so that an unfiltered
    // list is never mistaken for results.
    let (search, q_error) = match Search::parse(&q) {
        Ok(search) => (search, None),
        Err(bins::Error::InvalidQuery(e)) => (None, Some(e.to_string())),
        Err(e) => return Err(PageError::from(e)),
    };
    let cursor = match query_param(req, "cursor").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            bins::decode_cursor(&c, search.as_ref())
                .ok_or_else(|| PageError::new(StatusCode::BAD_REQUEST, "err-bad-cursor"))?,
        ),
    };
    // `?req=` that is not a request id picks nothing: the page says it is gone.
    let picked = query_param(req, "req");
    let target = query_param(req, "target");
    render_page(
        state,
        req.headers(),
        bin,
        PageQuery {
            cursor,
            picked: picked.is_some(),
            selected: picked.as_deref().and_then(RequestId::parse),
            target: target.as_deref(),
            q: &q,
            search: search.as_ref(),
            q_error,
        },
        None,
        ui,
    )
    .await
}

struct PageQuery<'a> {
    cursor: Option<RequestId>,
    /// `?req=` was given, valid or not.
    picked: bool,
    selected: Option<RequestId>,
    target: Option<&'a str>,
    /// `?q=` as typed (kept in every link of the page).
    q: &'a str,
    search: Option<&'a Search>,
    q_error: Option<String>,
}

async fn render_page(
    state: &AppState,
    headers: &HeaderMap,
    bin_id: &BinId,
    query: PageQuery<'_>,
    rejected: Option<ResponseForm>,
    ui: &Ui,
) -> PageResult {
    let now = now_ms();
    let bin: Bin = bins::get(state, bin_id, now).await?;
    // Read before the search: the stream resumes after it, so that a request arriving during
    // the search is sent live (the page skips one it already shows).
    let last_id = match query.search {
        Some(_) => bins::last_request_id(state, bin_id).await?,
        None => 0,
    };
    let (summaries, older) = match query.q_error {
        Some(_) => (Vec::new(), None),
        None => bins::search(state, bin_id, query.search, query.cursor, PAGE_SIZE).await?,
    };
    let filtered = query.search.is_some();
    let q_suffix = if query.q.is_empty() {
        String::new()
    } else {
        format!("&q={}", encode_param(query.q))
    };
    let search_text = query.search.map_or("", |s| s.text.as_str());
    let page_suffix = query
        .cursor
        .map(|c| format!("&cursor={}", ids::encode_search_cursor(c, search_text)))
        .unwrap_or_default();

    // The selected request: the one asked for, else the newest on this page.
    let wanted = if query.picked {
        query.selected
    } else {
        summaries.first().map(|s| s.id)
    };
    let base = capture_base(&state.config, headers);
    let stored = match wanted {
        Some(id) => match bins::find_request(state, bin_id, id).await {
            Ok(r) => Some(r),
            Err(bins::Error::RequestNotFound) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let missing = query.picked && stored.is_none();
    let selected_id = stored.as_ref().map(|r| r.id);
    let selected = match stored {
        Some(r) => Some(detail(state, r, &base, query.target, false, ui).await?.0),
        None => None,
    };

    let rows = summaries
        .iter()
        .map(|s| {
            let href = format!("/bins/{bin_id}?req={}{q_suffix}{page_suffix}", s.id);
            Row::new(s, href, selected_id == Some(s.id), now, ui)
        })
        .collect();
    let first_page = query.cursor.is_none();
    let stream_url = match (first_page, summaries.first()) {
        // Filtered: the server filters the stream too, from the bin's newest request on.
        (true, _) if filtered => {
            format!("/api/bins/{bin_id}/stream?last_event_id={last_id}{q_suffix}")
        }
        (true, Some(newest)) => format!("/api/bins/{bin_id}/stream?last_event_id={}", newest.id),
        // An empty bin: replay from the start, so a request that lands between this render and
        // the stream's start still shows up.
        (true, None) => format!("/api/bins/{bin_id}/stream?last_event_id=0"),
        // A later page only counts what arrives, to offer a link back to the newest.
        (false, _) => format!("/api/bins/{bin_id}/stream"),
    };
    let spec = bin
        .response
        .as_deref()
        .and_then(|j| ResponseSpec::from_stored(j, bin_id.as_str()).ok());
    let capture_url = format!("{base}/r/{bin_id}");
    let form_open = rejected.is_some();
    let status = if rejected.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else if query.q_error.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let view_url = bin.is_private().then(|| {
        let token = crate::web::private::presented_token(headers).unwrap_or_default();
        format!(
            "{}/bins/{bin_id}?token={}",
            crate::web::client::public_base(&state.config, headers),
            encode_param(&token)
        )
    });
    let page = BinPage {
        ui: ui.clone(),
        view_url,
        bin: bin_id.to_string(),
        example_curl: format!(
            "curl -X POST {} -H 'Content-Type: application/json' -d '{{\"hello\":\"world\"}}'",
            shell_quote(&capture_url)
        ),
        capture_url,
        expires_iso: rfc3339_ms(bin.expires_at),
        expires_abs: absolute_time(bin.expires_at, ui.lang),
        expires_text: time_until(bin.expires_at, now, ui),
        count: bin.request_count,
        cap: bin.cap(state.config.max_requests_per_bin),
        rows,
        blank_row: Some(Row::blank()),
        newest_href: (!first_page).then(|| list_href(bin_id, query.q)),
        older_href: older.map(|c| format!("/bins/{bin_id}?cursor={c}{q_suffix}")),
        stream_url,
        first_page,
        selected,
        picked: query.picked,
        missing,
        response_active: spec.is_some(),
        response_status: spec.as_ref().map_or(200, |s| s.status),
        response_summary: response_summary(spec.as_ref(), ui),
        form: rejected.unwrap_or_else(|| ResponseForm::from_spec(spec.as_ref())),
        form_open,
        list_href: list_href(bin_id, query.q),
        q: query.q.to_owned(),
        q_error: query.q_error,
        filtered,
    };
    render(status, &page)
}

/// The first page of the list, filtered by `q` when there is one.
fn list_href(bin: &BinId, q: &str) -> String {
    if q.is_empty() {
        format!("/bins/{bin}")
    } else {
        format!("/bins/{bin}?q={}", encode_param(q))
    }
}

/// `text` as a query parameter value (`application/x-www-form-urlencoded`).
fn encode_param(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

pub async fn delete_bin(state: &Arc<AppState>, req: Request<Incoming>, bin: &BinId) -> PageResult {
    read_form(state, req).await?;
    // Gone between the check and the delete is fine: it is gone, as the user wanted.
    bins::delete(state, bin).await?;
    Ok(see_other("/?deleted=1"))
}

pub async fn clear(state: &Arc<AppState>, req: Request<Incoming>, bin: &BinId) -> PageResult {
    read_form(state, req).await?;
    bins::clear_requests(state, bin).await?;
    Ok(see_other(&format!("/bins/{bin}")))
}

pub async fn set_response(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    bin: &BinId,
    ui: &Ui,
) -> PageResult {
    let headers = req.headers().clone();
    let form = read_form(state, req).await?;
    let now = now_ms();
    bins::live(state, bin, now).await?;
    let mut typed = ResponseForm::from_form(&form);
    match typed.to_spec(bin, ui) {
        Ok(spec) => {
            bins::set_response(state, bin, Some(spec), now).await?;
            Ok(see_other(&format!("/bins/{bin}#response")))
        }
        Err(message) => {
            // The page again, the form open with what was typed and why it was refused.
            typed.error = Some(message);
            let query = PageQuery {
                cursor: None,
                picked: false,
                selected: None,
                target: None,
                q: "",
                search: None,
                q_error: None,
            };
            render_page(state, &headers, bin, query, Some(typed), ui).await
        }
    }
}

pub async fn clear_response(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    bin: &BinId,
) -> PageResult {
    read_form(state, req).await?;
    bins::set_response(state, bin, None, now_ms()).await?;
    Ok(see_other(&format!("/bins/{bin}#response")))
}
