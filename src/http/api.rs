//! The JSON API under `/api` (see API.md).

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{
    CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue, LOCATION, X_CONTENT_TYPE_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::views;
use crate::bins;
use crate::clock::now_ms;
use crate::ids::{BinId, RequestId};
use crate::response::ResponseSpec;
use crate::state::AppState;
use crate::web::ConnInfo;
use crate::web::body::{self, Body, read_small_body};
use crate::web::client::{capture_base, client_ip, is_cross_site, public_base};
use crate::web::error::ApiError;

/// JSON bodies sent to the API are small (a ResponseSpec body is at most 64 KiB).
const MAX_API_BODY: usize = 1024 * 1024;
/// Longest bin lifetime a client may ask for: 30 days.
const MAX_TTL_SECONDS: u64 = 2_592_000;
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 500;

type ApiResult = Result<Response<Body>, ApiError>;

/// What a route of [`ROUTES`] does; the router dispatches on it with the method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    OpenApi,
    Bins,
    Bin,
    BinResponse,
    Requests,
    Request,
    Body,
    Part,
    Verify,
    Curl,
    Export,
    Stream,
}

/// One route of the JSON API: a path template (`{name}` matches one non-empty segment) and the
/// methods it accepts, as its `405` answer's `Allow` says them (`GET` includes `HEAD`).
#[derive(Debug, Clone, Copy)]
pub struct ApiRoute {
    pub path: &'static str,
    pub allow: &'static str,
    endpoint: Endpoint,
}

impl ApiRoute {
    /// The methods of `allow`, one by one.
    pub fn methods(&self) -> impl Iterator<Item = &'static str> {
        self.allow.split(", ")
    }

    /// The values of the path's `{...}` segments when `segments` (the path split on `/`, after
    /// `/api/`) fits this template.
    fn params<'a>(&self, segments: &[&'a str]) -> Option<Vec<&'a str>> {
        let template: Vec<&str> = self.path.trim_start_matches("/api/").split('/').collect();
        if template.len() != segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (t, s) in template.iter().zip(segments) {
            if t.starts_with('{') {
                if s.is_empty() {
                    return None;
                }
                params.push(*s);
            } else if t != s {
                return None;
            }
        }
        Some(params)
    }
}

const fn api(path: &'static str, allow: &'static str, endpoint: Endpoint) -> ApiRoute {
    ApiRoute {
        path,
        allow,
        endpoint,
    }
}

/// Every route of the JSON API: the router below is this table, and the OpenAPI document
/// (`docs/openapi.json`, served at `/api/openapi.json`) lists exactly these paths and methods
/// (`tests/it/openapi.rs` checks both ways).
pub const ROUTES: &[ApiRoute] = &[
    api("/api/openapi.json", "GET", Endpoint::OpenApi),
    api("/api/bins", "POST", Endpoint::Bins),
    api("/api/bins/{bin}", "GET, DELETE", Endpoint::Bin),
    api(
        "/api/bins/{bin}/response",
        "PUT, DELETE",
        Endpoint::BinResponse,
    ),
    api(
        "/api/bins/{bin}/requests",
        "GET, DELETE",
        Endpoint::Requests,
    ),
    api(
        "/api/bins/{bin}/requests/{req}",
        "GET, DELETE",
        Endpoint::Request,
    ),
    api("/api/bins/{bin}/requests/{req}/body", "GET", Endpoint::Body),
    api(
        "/api/bins/{bin}/requests/{req}/body/parts/{n}",
        "GET",
        Endpoint::Part,
    ),
    api(
        "/api/bins/{bin}/requests/{req}/verify",
        "POST",
        Endpoint::Verify,
    ),
    api("/api/bins/{bin}/requests/{req}/curl", "GET", Endpoint::Curl),
    api("/api/bins/{bin}/export", "GET", Endpoint::Export),
    api("/api/bins/{bin}/stream", "GET", Endpoint::Stream),
];

/// The OpenAPI 3.1 document of this API, kept in the repository beside the code it describes.
pub const OPENAPI_JSON: &str = include_str!("../../docs/openapi.json");

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
    let Some((route, params)) = ROUTES
        .iter()
        .find_map(|r| r.params(&segments).map(|p| (r, p)))
    else {
        return Err(ApiError::route_not_found());
    };
    // A private bin answers only to its token; without it, exactly as an unknown bin does (so
    // only where the method is allowed: elsewhere both get the same 405).
    let allowed = route
        .methods()
        .any(|m| m == method.as_str() || (m == "GET" && method == Method::HEAD));
    if allowed && route.path.starts_with("/api/bins/{bin}") {
        let token = crate::web::private::presented_token(req.headers());
        bins::authorize(state, params[0], token.as_deref()).await?;
    }
    let wrong_method = || Err(ApiError::method_not_allowed(route.allow));
    let delete = method == Method::DELETE;
    match (route.endpoint, params.as_slice()) {
        (Endpoint::OpenApi, []) if get => Ok(body::with_type(
            StatusCode::OK,
            "application/json",
            OPENAPI_JSON,
        )),
        (Endpoint::Bins, []) if method == Method::POST => create_bin(state, req, conn).await,
        (Endpoint::Bin, [bin]) if get => get_bin(state, &req, &bins::bin_id(bin)?).await,
        (Endpoint::Bin, [bin]) if delete => delete_bin(state, &bins::bin_id(bin)?).await,
        (Endpoint::BinResponse, [bin]) if method == Method::PUT => {
            put_response(state, req, &bins::bin_id(bin)?).await
        }
        (Endpoint::BinResponse, [bin]) if delete => {
            delete_response(state, &bins::bin_id(bin)?).await
        }
        (Endpoint::Requests, [bin]) if get => list_requests(state, &req, &bins::bin_id(bin)?).await,
        (Endpoint::Requests, [bin]) if delete => clear_requests(state, &bins::bin_id(bin)?).await,
        (Endpoint::Request, [bin, id]) if get => {
            get_request(state, bins::path_ids(state, bin, id).await?).await
        }
        (Endpoint::Request, [bin, id]) if delete => {
            delete_request(state, bins::path_ids(state, bin, id).await?).await
        }
        (Endpoint::Body, [bin, id]) if get => {
            get_body(state, &req, bins::path_ids(state, bin, id).await?).await
        }
        (Endpoint::Part, [bin, id, n]) if get => {
            get_part(state, bins::path_ids(state, bin, id).await?, n).await
        }
        (Endpoint::Verify, [bin, id]) if method == Method::POST => {
            let ids = bins::path_ids(state, bin, id).await?;
            super::signature::verify(state, req, ids).await
        }
        (Endpoint::Curl, [bin, id]) if get => {
            super::replay::curl(state, &req, bins::path_ids(state, bin, id).await?).await
        }
        (Endpoint::Export, [bin]) if get => {
            super::replay::export(state, &req, &bins::bin_id(bin)?).await
        }
        (Endpoint::Stream, [bin]) if get => {
            super::stream::stream(state, &req, &bins::bin_id(bin)?, conn).await
        }
        _ => wrong_method(),
    }
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

async fn create_bin(state: &Arc<AppState>, req: Request<Incoming>, conn: &ConnInfo) -> ApiResult {
    let ip = client_ip(&state.config, conn.peer, req.headers());
    let base = public_base(&state.config, req.headers());
    let capture = capture_base(&state.config, req.headers());
    // The limit is checked before the body is read: a flood costs no parsing.
    bins::admit(state, ip, now_ms())?;
    let options = read_json(state, req).await?;
    // The id comes first: a custom response is checked against its bin (cookie paths...).
    let id = BinId::new();
    let (ttl, response, private) = bin_options(options.as_ref(), state.config.bin_ttl, &id)?;
    let private = private.unwrap_or(state.config.private_bins);
    let (bin, token) = bins::create(state, id, ip, ttl, response, private).await?;
    let mut view = views::bin(&bin, &base, &capture);
    if let Some(token) = token {
        // Shown this once: only its hash is stored.
        view["view_token"] = Value::from(token.as_str());
        view["view_url"] = Value::from(format!("{base}/bins/{}?token={token}", bin.id));
    }
    let mut res = body::json(StatusCode::CREATED, &view);
    if let Ok(location) = HeaderValue::from_str(&format!("/api/bins/{}", bin.id)) {
        res.headers_mut().insert(LOCATION, location);
    }
    Ok(res)
}

/// `{"ttl_seconds": n, "response": ResponseSpec, "private": bool}`, each optional, for the new
/// bin `bin`; `private` is `None` when not given (the instance's `--private-bins` decides).
pub fn bin_options(
    options: Option<&Value>,
    default_ttl: Duration,
    bin: &BinId,
) -> Result<(Duration, Option<ResponseSpec>, Option<bool>), ApiError> {
    let Some(options) = options else {
        return Ok((default_ttl, None, None));
    };
    let Value::Object(map) = options else {
        return Err(ApiError::unprocessable(
            "invalid_bin",
            "the body must be a JSON object",
        ));
    };
    if let Some(key) = map
        .keys()
        .find(|k| !["ttl_seconds", "response", "private"].contains(&k.as_str()))
    {
        return Err(ApiError::unprocessable(
            "invalid_bin",
            format!("{key}: unknown field (expected ttl_seconds, response, private)"),
        ));
    }
    let private = match map.get("private") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(ApiError::unprocessable(
                "invalid_bin",
                "private: must be true or false",
            ));
        }
    };
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
            ResponseSpec::from_json(v, "response.", bin.as_str())
                .map_err(|e| ApiError::unprocessable("invalid_response", e.to_string()))?,
        ),
    };
    Ok((ttl, response, private))
}

async fn get_bin(state: &AppState, req: &Request<Incoming>, id: &BinId) -> ApiResult {
    let bin = bins::get(state, id, now_ms()).await?;
    Ok(body::json(
        StatusCode::OK,
        &views::bin(
            &bin,
            &public_base(&state.config, req.headers()),
            &capture_base(&state.config, req.headers()),
        ),
    ))
}

async fn delete_bin(state: &AppState, id: &BinId) -> ApiResult {
    if !bins::delete(state, id).await? {
        return Err(ApiError::bin_not_found());
    }
    Ok(body::no_content())
}

async fn put_response(state: &AppState, req: Request<Incoming>, id: &BinId) -> ApiResult {
    // Checked before the body is read: no parsing for a bin that is not there.
    bins::live(state, id, now_ms()).await?;
    let base = public_base(&state.config, req.headers());
    let capture = capture_base(&state.config, req.headers());
    let value = read_json(state, req).await?.ok_or_else(|| {
        ApiError::bad_request(
            "invalid_json",
            "expected a ResponseSpec JSON object, got an empty body",
        )
    })?;
    let spec = ResponseSpec::from_json(&value, "", id.as_str())
        .map_err(|e| ApiError::unprocessable("invalid_response", e.to_string()))?;
    let bin = bins::set_response(state, id, Some(spec), now_ms()).await?;
    Ok(body::json(
        StatusCode::OK,
        &views::bin(&bin, &base, &capture),
    ))
}

async fn delete_response(state: &AppState, id: &BinId) -> ApiResult {
    bins::set_response(state, id, None, now_ms()).await?;
    Ok(body::no_content())
}

/// The list's parameters: `limit` (1..=500, default 50), `cursor` (as issued in
/// `meta.next_cursor` for the same `q`) and `q` (API.md "Search"; blank: no filter).
pub fn page_params(
    query: Option<&str>,
) -> Result<(usize, Option<RequestId>, Option<bins::Search>), ApiError> {
    let mut limit = DEFAULT_PAGE;
    let mut cursor = None;
    let mut q = String::new();
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
            "cursor" => cursor = Some(value.into_owned()),
            "q" => q = value.into_owned(),
            _ => {}
        }
    }
    let search = bins::Search::parse(&q)?;
    let cursor = match cursor {
        None => None,
        Some(c) => Some(bins::decode_cursor(&c, search.as_ref()).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_cursor",
                "cursor was not issued by this server for this q",
            )
        })?),
    };
    Ok((limit, cursor, search))
}

async fn list_requests(state: &AppState, req: &Request<Incoming>, bin: &BinId) -> ApiResult {
    bins::live(state, bin, now_ms()).await?;
    let (limit, cursor, search) = page_params(req.uri().query())?;
    let (rows, next) = bins::search(state, bin, search.as_ref(), cursor, limit).await?;
    let data: Vec<Value> = rows.iter().map(views::summary).collect();
    Ok(body::json(
        StatusCode::OK,
        &json!({"data": data, "meta": {"next_cursor": next}}),
    ))
}

async fn clear_requests(state: &AppState, bin: &BinId) -> ApiResult {
    bins::clear_requests(state, bin).await?;
    Ok(body::no_content())
}

async fn get_request(state: &AppState, (bin, id): (BinId, RequestId)) -> ApiResult {
    let request = bins::find_request(state, &bin, id).await?;
    let limit = state.config.max_decoded_bytes;
    // Off the async threads: `parts` of an encoded multipart body means decoding it.
    let value = tokio::task::spawn_blocking(move || views::request(&request, limit))
        .await
        .map_err(|e| ApiError::internal("rendering a request", &e))?;
    Ok(body::json(StatusCode::OK, &value))
}

async fn delete_request(state: &AppState, (bin, id): (BinId, RequestId)) -> ApiResult {
    if !bins::delete_request(state, &bin, id).await? {
        return Err(ApiError::request_not_found());
    }
    Ok(body::no_content())
}

/// The body as a download (`?decode=1`: with its `Content-Encoding` undone).
async fn get_body(
    state: &AppState,
    req: &Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> ApiResult {
    let decode = decode_param(req.uri().query())?;
    let request = bins::find_request(state, &bin, id).await?;
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
async fn get_part(state: &AppState, (bin, id): (BinId, RequestId), n: &str) -> ApiResult {
    let request = bins::find_request(state, &bin, id).await?;
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
