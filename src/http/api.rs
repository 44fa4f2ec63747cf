//! The JSON API under `/api` (see API.md).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{
    CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue, LOCATION, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::ConnInfo;
use super::body::{self, Body};
use super::client::{capture_base, client_ip, is_cross_site, public_base};
use super::error::ApiError;
use super::views;
use crate::clock::now_ms;
use crate::ids;
use crate::model::{Bin, RequestSummary};
use crate::response::ResponseSpec;
use crate::state::AppState;

/// JSON bodies sent to the API are small (a ResponseSpec body is at most 64 KiB).
const MAX_API_BODY: usize = 1024 * 1024;
/// Longest bin lifetime a client may ask for: 30 days.
const MAX_TTL_SECONDS: u64 = 2_592_000;
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 500;

type ApiResult = Result<Response<Body>, ApiError>;

pub async fn route(state: &Arc<AppState>, req: Request<Incoming>, conn: &ConnInfo) -> ApiResult {
    let path = req.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches("/api/").split('/').collect();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    // A page of another site may not change anything here in the user's name: a no-cors
    // `fetch('/api/bins', {method: 'POST'})` needs no preflight, so the browser alone would
    // let it through.
    if !get && method != Method::OPTIONS && is_cross_site(&state.config, req.headers()) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_site_request",
            "this API does not accept changes sent by another site's page",
        ));
    }
    match segments.as_slice() {
        ["bins"] => match method {
            Method::POST => create_bin(state, req, conn).await,
            _ => Err(ApiError::method_not_allowed("POST")),
        },
        ["bins", bin] => match method {
            _ if get => get_bin(state, &req, bin).await,
            Method::DELETE => delete_bin(state, bin).await,
            _ => Err(ApiError::method_not_allowed("GET, DELETE")),
        },
        ["bins", bin, "response"] => match method {
            Method::PUT => put_response(state, req, bin).await,
            Method::DELETE => delete_response(state, bin).await,
            _ => Err(ApiError::method_not_allowed("PUT, DELETE")),
        },
        ["bins", bin, "requests"] => match method {
            _ if get => list_requests(state, &req, bin).await,
            Method::DELETE => clear_requests(state, bin).await,
            _ => Err(ApiError::method_not_allowed("GET, DELETE")),
        },
        ["bins", bin, "requests", id] => match method {
            _ if get => get_request(state, bin, id).await,
            Method::DELETE => delete_request(state, bin, id).await,
            _ => Err(ApiError::method_not_allowed("GET, DELETE")),
        },
        ["bins", bin, "requests", id, "body"] => match method {
            _ if get => get_body(state, &req, bin, id).await,
            _ => Err(ApiError::method_not_allowed("GET")),
        },
        ["bins", bin, "requests", id, "body", "parts", n] => match method {
            _ if get => get_part(state, bin, id, n).await,
            _ => Err(ApiError::method_not_allowed("GET")),
        },
        ["bins", bin, "requests", id, "verify"] => match method {
            Method::POST => super::signature::verify(state, req, bin, id).await,
            _ => Err(ApiError::method_not_allowed("POST")),
        },
        ["bins", bin, "requests", id, "curl"] => match method {
            _ if get => super::replay::curl(state, &req, bin, id).await,
            _ => Err(ApiError::method_not_allowed("GET")),
        },
        ["bins", bin, "export"] => match method {
            _ if get => super::replay::export(state, &req, bin).await,
            _ => Err(ApiError::method_not_allowed("GET")),
        },
        ["bins", bin, "stream"] => match method {
            _ if get => super::stream::stream(state, &req, bin, conn).await,
            _ => Err(ApiError::method_not_allowed("GET")),
        },
        _ => Err(ApiError::route_not_found()),
    }
}

/// Fails with 404 unless `id` names a live bin (on PostgreSQL, possibly one another node made).
pub async fn live_bin(state: &AppState, id: &str, now: i64) -> Result<(), ApiError> {
    if ids::is_valid_bin_id(id) && state.store.find_bin(id, now).await?.is_some() {
        Ok(())
    } else {
        Err(ApiError::bin_not_found())
    }
}

fn request_id(id: &str) -> Result<i64, ApiError> {
    ids::parse_request_id(id).ok_or_else(ApiError::request_not_found)
}

/// Reads a JSON request body; `None` when the body is empty.
pub async fn read_json(
    state: &AppState,
    req: Request<Incoming>,
) -> Result<Option<Value>, ApiError> {
    let timeout = state.config.body_timeout;
    let bytes = read_small_body(req.into_body(), MAX_API_BODY, timeout).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}"))
    })
}

pub async fn read_small_body(
    body: Incoming,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let collect = Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, collect).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "the request body did not arrive in time",
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("API request bodies are limited to {limit} bytes"),
        )),
        Ok(Err(e)) => Err(ApiError::bad_request(
            "bad_body",
            format!("cannot read the body: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

async fn create_bin(state: &Arc<AppState>, req: Request<Incoming>, conn: &ConnInfo) -> ApiResult {
    let ip = client_ip(&state.config, conn.peer, req.headers());
    let base = public_base(&state.config, req.headers());
    let capture = capture_base(&state.config, req.headers());
    // The limit is checked before the body is read: a flood costs no parsing.
    admit_new_bin(state, ip, now_ms())?;
    let options = read_json(state, req).await?;
    // The id comes first: a custom response is checked against its bin (cookie paths...).
    let id = ids::new_bin_id();
    let (ttl, response) = bin_options(options.as_ref(), state.config.bin_ttl, &id)?;
    let bin = store_new_bin(state, id, ip, ttl, response).await?;
    let mut res = body::json(StatusCode::CREATED, &views::bin(&bin, &base, &capture));
    if let Ok(location) = HeaderValue::from_str(&format!("/api/bins/{}", bin.id)) {
        res.headers_mut().insert(LOCATION, location);
    }
    Ok(res)
}

/// Counts a bin creation against `--max-bins-per-minute` for `ip`; 429 beyond it.
pub fn admit_new_bin(state: &AppState, ip: IpAddr, now: i64) -> Result<(), ApiError> {
    // IPv6 clients by their /64, like every per-client limit.
    state
        .bin_limit
        .check(crate::limits::client_key(ip), now)
        .map_err(|wait| {
            state.metrics.bins_rate_limited.fetch_add(1, Relaxed);
            ApiError {
                retry_after: Some(wait),
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_bins",
                    format!(
                        "at most {} bins per minute per client address; retry in {wait} s",
                        state.config.max_bins_per_minute
                    ),
                )
            }
        })
}

/// Creates bin `id` (a fresh [`ids::new_bin_id`], after [`admit_new_bin`]): stored, counted
/// and logged.
pub async fn store_new_bin(
    state: &AppState,
    id: String,
    ip: IpAddr,
    ttl: Duration,
    response: Option<ResponseSpec>,
) -> Result<Bin, ApiError> {
    let now = now_ms();
    let bin = Bin {
        id,
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

/// `{"ttl_seconds": n, "response": ResponseSpec}`, both optional, for the new bin `bin`.
pub fn bin_options(
    options: Option<&Value>,
    default_ttl: Duration,
    bin: &str,
) -> Result<(Duration, Option<ResponseSpec>), ApiError> {
    let Some(options) = options else {
        return Ok((default_ttl, None));
    };
    let Value::Object(map) = options else {
        return Err(ApiError::unprocessable(
            "invalid_bin",
            "the body must be a JSON object",
        ));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !["ttl_seconds", "response"].contains(&k.as_str()))
    {
        return Err(ApiError::unprocessable(
            "invalid_bin",
            format!("{key}: unknown field (expected ttl_seconds, response)"),
        ));
    }
    let ttl = match map.get("ttl_seconds") {
        None | Some(Value::Null) => default_ttl,
        Some(v) => match v.as_u64().filter(|s| (1..=MAX_TTL_SECONDS).contains(s)) {
            Some(s) => Duration::from_secs(s),
            None => {
                return Err(ApiError::unprocessable(
                    "invalid_ttl",
                    format!("ttl_seconds: must be an integer from 1 to {MAX_TTL_SECONDS}"),
                ));
            }
        },
    };
    let response = match map.get("response") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            ResponseSpec::from_json(v, "response.", bin)
                .map_err(|e| ApiError::unprocessable("invalid_response", e.to_string()))?,
        ),
    };
    Ok((ttl, response))
}

async fn get_bin(state: &AppState, req: &Request<Incoming>, id: &str) -> ApiResult {
    let now = now_ms();
    live_bin(state, id, now).await?;
    let bin = state
        .store
        .get_bin(id, now)
        .await?
        .ok_or_else(ApiError::bin_not_found)?;
    Ok(body::json(
        StatusCode::OK,
        &views::bin(
            &bin,
            &public_base(&state.config, req.headers()),
            &capture_base(&state.config, req.headers()),
        ),
    ))
}

async fn delete_bin(state: &AppState, id: &str) -> ApiResult {
    live_bin(state, id, now_ms()).await?;
    if !state.store.delete_bin(id).await? {
        return Err(ApiError::bin_not_found());
    }
    state.metrics.bins_deleted.fetch_add(1, Relaxed);
    tracing::info!(bin_id = %id, "bin deleted");
    Ok(body::no_content())
}

async fn put_response(state: &AppState, req: Request<Incoming>, id: &str) -> ApiResult {
    let now = now_ms();
    live_bin(state, id, now).await?;
    let base = public_base(&state.config, req.headers());
    let capture = capture_base(&state.config, req.headers());
    let value = read_json(state, req).await?.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_json",
            "expected a ResponseSpec JSON object, got an empty body",
        )
    })?;
    let spec = ResponseSpec::from_json(&value, "", id)
        .map_err(|e| ApiError::unprocessable("invalid_response", e.to_string()))?;
    let bin = state
        .store
        .set_response(id, Some(Arc::new(spec)), now)
        .await?
        .ok_or_else(ApiError::bin_not_found)?;
    Ok(body::json(
        StatusCode::OK,
        &views::bin(&bin, &base, &capture),
    ))
}

async fn delete_response(state: &AppState, id: &str) -> ApiResult {
    let now = now_ms();
    live_bin(state, id, now).await?;
    state
        .store
        .set_response(id, None, now)
        .await?
        .ok_or_else(ApiError::bin_not_found)?;
    Ok(body::no_content())
}

/// `limit` (1..=500, default 50) and `cursor` (as issued in `meta.next_cursor`).
pub fn page_params(query: Option<&str>) -> Result<(usize, Option<i64>), ApiError> {
    let mut limit = DEFAULT_PAGE;
    let mut cursor = None;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match key.as_ref() {
            "limit" => {
                limit = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_PAGE).contains(n))
                    .ok_or_else(|| {
                        ApiError::bad_request(
                            "invalid_limit",
                            format!("limit must be an integer from 1 to {MAX_PAGE}"),
                        )
                    })?;
            }
            "cursor" if value.is_empty() => {}
            "cursor" => {
                cursor = Some(ids::decode_cursor(&value).ok_or_else(|| {
                    ApiError::bad_request("invalid_cursor", "cursor was not issued by this server")
                })?);
            }
            _ => {}
        }
    }
    Ok((limit, cursor))
}

async fn list_requests(state: &AppState, req: &Request<Incoming>, bin: &str) -> ApiResult {
    live_bin(state, bin, now_ms()).await?;
    let (limit, cursor) = page_params(req.uri().query())?;
    let (rows, next) = request_page(state, bin, cursor, limit).await?;
    let data: Vec<Value> = rows.iter().map(views::summary).collect();
    Ok(body::json(
        StatusCode::OK,
        &json!({"data": data, "meta": {"next_cursor": next}}),
    ))
}

/// Up to `limit` summaries older than `cursor`, newest first, and the cursor of the next page
/// when there is one (one extra row is fetched to know).
pub async fn request_page(
    state: &AppState,
    bin: &str,
    cursor: Option<i64>,
    limit: usize,
) -> Result<(Vec<RequestSummary>, Option<String>), ApiError> {
    let mut rows = state.store.list_requests(bin, cursor, limit + 1).await?;
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last()
            .and_then(|r| r.id.parse().ok())
            .map(ids::encode_cursor)
    } else {
        None
    };
    Ok((rows, next))
}

async fn clear_requests(state: &AppState, bin: &str) -> ApiResult {
    live_bin(state, bin, now_ms()).await?;
    state.store.clear_requests(bin).await?;
    Ok(body::no_content())
}

/// The stored request, or 404 for an unknown bin or request id.
pub async fn find_request(
    state: &AppState,
    bin: &str,
    id: &str,
) -> Result<crate::model::StoredRequest, ApiError> {
    live_bin(state, bin, now_ms()).await?;
    let id = request_id(id)?;
    state
        .store
        .get_request(bin, id)
        .await?
        .ok_or_else(ApiError::request_not_found)
}

async fn get_request(state: &AppState, bin: &str, id: &str) -> ApiResult {
    let request = find_request(state, bin, id).await?;
    let limit = state.config.max_decoded_bytes;
    // Off the async threads: `parts` of an encoded multipart body means decoding it.
    let value = tokio::task::spawn_blocking(move || views::request(&request, limit))
        .await
        .map_err(|e| ApiError::internal("rendering a request", &e))?;
    Ok(body::json(StatusCode::OK, &value))
}

async fn delete_request(state: &AppState, bin: &str, id: &str) -> ApiResult {
    live_bin(state, bin, now_ms()).await?;
    if !state.store.delete_request(bin, request_id(id)?).await? {
        return Err(ApiError::request_not_found());
    }
    Ok(body::no_content())
}

/// The body as a download (`?decode=1`: with its `Content-Encoding` undone).
async fn get_body(state: &AppState, req: &Request<Incoming>, bin: &str, id: &str) -> ApiResult {
    let decode = decode_param(req.uri().query())?;
    let request = find_request(state, bin, id).await?;
    let raw_name = format!("request-{}.bin", request.id);
    let Some(encoding) = decode
        .then(|| crate::content::content_encoding(&request.headers))
        .flatten()
    else {
        return Ok(download(request.body, &raw_name, None));
    };
    let limit = state.config.max_decoded_bytes;
    let (bytes, outcome) = tokio::task::spawn_blocking(move || {
        let d = crate::content::coding::decode(&request.body, Some(&encoding), limit);
        (d.bytes.into_owned(), d.outcome)
    })
    .await
    .map_err(|e| ApiError::internal("decoding a body", &e))?;
    use crate::content::coding::Outcome;
    match outcome {
        Outcome::Complete => Ok(download(bytes, &format!("request-{id}.decoded.bin"), None)),
        Outcome::Cut { limit } => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "decoded_too_large",
            format!(
                "the body decodes to more than {limit} bytes (--max-decoded-bytes); \
                 download it without decode=1"
            ),
        )),
        Outcome::Failed(e) => Err(ApiError::unprocessable(
            "undecodable_body",
            format!("the body does not decode as its Content-Encoding says: {e}"),
        )),
    }
}

/// `decode`: `1`/`true` or `0`/`false` (absent or empty: `0`).
fn decode_param(query: Option<&str>) -> Result<bool, ApiError> {
    let mut decode = false;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key == "decode" {
            decode = match value.as_ref() {
                "1" | "true" => true,
                "" | "0" | "false" => false,
                _ => {
                    return Err(ApiError::bad_request(
                        "invalid_decode",
                        "decode must be 1 or 0",
                    ));
                }
            };
        }
    }
    Ok(decode)
}

/// `GET .../body/parts/{n}`: part `n` (0-based) of a multipart body, as a download.
async fn get_part(state: &AppState, bin: &str, id: &str, n: &str) -> ApiResult {
    let request = find_request(state, bin, id).await?;
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "part_not_found",
            format!("request {id} has no multipart part {n} (parts count from 0)"),
        )
    };
    let index: usize = n.parse().map_err(|_| not_found())?;
    let limit = state.config.max_decoded_bytes;
    let part = tokio::task::spawn_blocking(move || {
        let (decoded, multipart) = crate::content::request_parts(&request, limit)?;
        let part = multipart.parts.get(index)?;
        Some((part.bytes(&decoded.bytes).to_vec(), part.filename.clone()))
    })
    .await
    .map_err(|e| ApiError::internal("reading a multipart body", &e))?;
    let (bytes, filename) = part.ok_or_else(not_found)?;
    let fallback = format!("request-{id}-part-{index}.bin");
    Ok(download(bytes, &fallback, filename.as_deref()))
}

/// Bytes as a download: never inline, never sniffed, sandboxed if opened anyway, so a captured
/// HTML or SVG body cannot run on our origin. `filename` is the sender's name for the file
/// (a multipart part's); it is offered only in a form that cannot break the header.
fn download(bytes: Vec<u8>, fallback: &str, filename: Option<&str>) -> Response<Body> {
    let mut res = Response::new(body::full(bytes));
    let h = res.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&content_disposition(fallback, filename)) {
        h.insert(CONTENT_DISPOSITION, v);
    }
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    res
}

/// `attachment; filename="..."` with an ASCII name, plus `filename*` (RFC 8187) carrying a
/// sender's name exactly. A sender's name loses any directory part; characters outside a
/// plain set become `_` in the ASCII form and are percent-encoded in `filename*`.
fn content_disposition(fallback: &str, filename: Option<&str>) -> String {
    let base = filename
        .map(|f| f.rsplit(['/', '\\']).next().unwrap_or(f).trim())
        .filter(|f| !f.is_empty() && *f != "." && *f != "..");
    let Some(base) = base else {
        return format!("attachment; filename=\"{fallback}\"");
    };
    let ascii: String = base
        .chars()
        .take(150)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for b in base.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_disposition_never_breaks_the_header() {
        assert_eq!(
            content_disposition("request-1.bin", None),
            "attachment; filename=\"request-1.bin\""
        );
        assert_eq!(
            content_disposition("x.bin", Some("../../etc/passwd")),
            "attachment; filename=\"passwd\"; filename*=UTF-8''passwd"
        );
        assert_eq!(
            content_disposition("x.bin", Some("C:\\Users\\me\\photo 1.png")),
            "attachment; filename=\"photo_1.png\"; filename*=UTF-8''photo%201.png"
        );
        let evil = content_disposition("x.bin", Some("a\"\r\nSet-Cookie: x=1;é.html"));
        assert_eq!(
            evil,
            "attachment; filename=\"a___Set-Cookie__x_1__.html\"; \
             filename*=UTF-8''a%22%0D%0ASet-Cookie%3A%20x%3D1%3B%C3%A9.html"
        );
        assert!(HeaderValue::from_str(&evil).is_ok());
        assert_eq!(
            content_disposition("x.bin", Some("..")),
            "attachment; filename=\"x.bin\""
        );
        assert_eq!(
            content_disposition("x.bin", Some("  ")),
            "attachment; filename=\"x.bin\""
        );
    }

    #[test]
    fn decode_parameter() {
        assert_eq!(decode_param(None), Ok(false));
        assert_eq!(decode_param(Some("decode=1")), Ok(true));
        assert_eq!(decode_param(Some("a=b&decode=true")), Ok(true));
        assert_eq!(decode_param(Some("decode=0")), Ok(false));
        assert_eq!(decode_param(Some("decode=")), Ok(false));
        assert_eq!(
            decode_param(Some("decode=yes")).unwrap_err().code,
            "invalid_decode"
        );
    }
}
