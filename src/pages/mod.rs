//! Server-rendered HTML pages (askama templates in `templates/`) and the static assets they use.
//!
//! Routes (API.md, HTML pages). HTML forms can only GET and POST, so every change is a POST that
//! answers `303` back to a page:
//!
//! | route | what |
//! |---|---|
//! | `GET /` | home: what this is, "Create new URL" |
//! | `POST /bins` | create a bin, `303` to its page (per-address limit as the API) |
//! | `GET /bins/{bin}` | the inspector: `?cursor=` pages the list, `?req=` selects the detail |
//! | `GET /bins/{bin}/requests/{req}` | one request on its own page (also the phone view) |
//! | `POST /bins/{bin}/delete`, `/clear` | delete the bin, delete all its requests |
//! | `POST /bins/{bin}/requests/{req}/delete` | delete one request |
//! | `POST /bins/{bin}/response`, `/response/clear` | set / reset the custom response |
//! | `POST /bins/{bin}/requests/{req}/verify` | check a signature against the captured bytes ([`crate::verify`]); `GET`: `303` to the request's verify form |
//! | `GET /static/{file}` | embedded CSS/JS, cached forever under a content-hashed URL |
//! | `GET /lang/{en,ru,uk}?back=/path` | set the `lang` cookie and go back to `back` ([`i18n`]) |
//!
//! Every page is in the language [`i18n::negotiate`] picks; its text comes from the catalogs
//! in `locales/` through the page's [`i18n::Ui`].
//!
//! Safety: every captured byte reaches the page through askama's HTML escaping (no `|safe`
//! anywhere), pages carry a strict Content-Security-Policy with no inline script or style, and
//! are never cached (they contain the bin URL, which is the bin's only secret).

mod assets;
mod bin;
mod body;
mod format;
mod home;
pub mod i18n;
mod integrations;
mod request;

use std::sync::Arc;

use askama::Template;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, HeaderValue, LOCATION, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};

use self::i18n::Ui;
use crate::bins;
use crate::state::AppState;
use crate::web::ConnInfo;
use crate::web::body::{self as http_body, Body};
use crate::web::error::ApiError;

/// The Content-Security-Policy of every HTML page: our own script and style files only.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

type PageResult = Result<Response<Body>, PageError>;

/// Everything that is not capture, API or operations: `/`, `/bins...`, `/static/...`.
pub async fn route(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    conn: &ConnInfo,
) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ui = &Ui::new(i18n::negotiate(req.headers()), back_path(&req, &segments));
    // Ids are parsed here, once: a malformed one is the same 404 page as an unknown one. A
    // form from another site is refused first, whatever its ids (as `read_form` would).
    let same_site = || {
        if post {
            check_same_site(state, &req)
        } else {
            Ok(())
        }
    };
    let bin_id = |bin: &str| {
        same_site()?;
        bins::bin_id(bin).map_err(PageError::from)
    };
    let ids = async |bin: &str, id: &str| {
        same_site()?;
        bins::path_ids(state, bin, id)
            .await
            .map_err(PageError::from)
    };
    // A private bin's pages answer only to its token (its cookie, or a link's `?token=`, which
    // sets the cookie and comes back without it); without, exactly as an unknown bin.
    let gate = match segments.as_slice() {
        ["bins", bin, ..] if get || post => private_gate(state, &req, bin).await,
        _ => Ok(None),
    };
    let result = match (gate, segments.as_slice()) {
        (Err(e), _) => Err(e),
        (Ok(Some(redirect)), _) => Ok(redirect),
        (Ok(None), segments) => match segments {
            [""] if get => home::page(state, &req, ui),
            ["static", name] if get => static_file(name, req.uri().query()),
            ["lang", code] if get => switch_language(code, &req),
            ["bins"] if post => home::create_bin(state, req, conn).await,
            ["bins", bin] if get => match bin_id(bin) {
                Ok(bin) => bin::page(state, &req, &bin, ui).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "delete"] if post => match bin_id(bin) {
                Ok(bin) => bin::delete_bin(state, req, &bin).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "clear"] if post => match bin_id(bin) {
                Ok(bin) => bin::clear(state, req, &bin).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "response"] if post => match bin_id(bin) {
                Ok(bin) => bin::set_response(state, req, &bin, ui).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "response", "clear"] if post => match bin_id(bin) {
                Ok(bin) => bin::clear_response(state, req, &bin).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "requests", id] if get => match ids(bin, id).await {
                Ok(ids) => request::page(state, &req, ids, ui).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "requests", id, "delete"] if post => match ids(bin, id).await {
                Ok(ids) => request::delete(state, req, ids).await,
                Err(e) => Err(e),
            },
            ["bins", bin, "requests", id, "verify"] if post => match ids(bin, id).await {
                Ok(ids) => request::verify(state, req, ids, ui).await,
                Err(e) => Err(e),
            },
            // The URL a verify form posts to, opened again (reload, a bookmark, Back): the
            // request page at its verify form, not a 405.
            ["bins", bin, "requests", id, "verify"] if get => match ids(bin, id).await {
                Ok((bin, id)) => Ok(see_other(&format!("/bins/{bin}/requests/{id}#verify"))),
                Err(e) => Err(e),
            },
            [""] | ["static", _] | ["lang", _] | ["bins", _] | ["bins", _, "requests", _] => {
                Err(PageError::method_not_allowed("GET, HEAD"))
            }
            ["bins"]
            | ["bins", _, "delete" | "clear" | "response"]
            | ["bins", _, "response", "clear"]
            | ["bins", _, "requests", _, "delete"] => Err(PageError::method_not_allowed("POST")),
            ["bins", _, "requests", _, "verify"] => Err(PageError::method_not_allowed("GET, POST")),
            _ => Err(PageError::not_found("err-no-page")),
        },
    };
    result.unwrap_or_else(|e| e.into_response(ui))
}

/// The page the language switcher comes back to: this one for a GET; for a form's answer
/// (which has no URL of its own), the page the form belongs to.
fn back_path(req: &Request<Incoming>, segments: &[&str]) -> String {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
    }
    match segments {
        ["bins", bin, "requests", id, ..] => format!("/bins/{bin}/requests/{id}"),
        ["bins", bin, ..] => format!("/bins/{bin}"),
        _ => "/".to_owned(),
    }
}

/// `GET /lang/{code}?back=/path`: remembers the language in the `lang` cookie and goes back to
/// `back` if it is a path on this server (never elsewhere: no open redirect), else to `/`.
fn switch_language(code: &str, req: &Request<Incoming>) -> PageResult {
    let lang = i18n::Lang::from_code(code).ok_or_else(|| PageError::not_found("err-no-page"))?;
    let back = query_param(req, "back");
    let mut res = see_other(i18n::safe_back(back.as_deref()));
    if let Ok(v) = HeaderValue::from_str(&i18n::cookie(lang)) {
        res.headers_mut().insert(SET_COOKIE, v);
    }
    Ok(res)
}

/// The private-bin check of a `/bins/{bin}/...` page: `Ok(None)` to go on, `Ok(Some(303))`
/// when a valid `?token=` link is opened (the cookie is set and the token leaves the address
/// bar, history and Referer), `Err(404)` when the bin is private and no valid token came.
async fn private_gate(
    state: &AppState,
    req: &Request<Incoming>,
    bin: &str,
) -> Result<Option<Response<Body>>, PageError> {
    if let Some(token) = query_param(req, "token") {
        let bin = bins::bin_id(bin)?;
        if !bins::token_opens(state, &bin, &token).await {
            return Err(bins::Error::BinNotFound.into());
        }
        let rest: Vec<(String, String)> = crate::web::query_params(req.uri().query().unwrap_or(""))
            .into_iter()
            .filter(|(k, _)| k != "token")
            .collect();
        let mut location = req.uri().path().to_owned();
        if !rest.is_empty() {
            location.push('?');
            location.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(rest)
                    .finish(),
            );
        }
        let mut res = see_other(&location);
        let entry = bins::live(state, &bin, crate::clock::now_ms()).await?;
        let max_age = ((entry.expires_at - crate::clock::now_ms()).max(0) / 1000) as u64;
        let secure =
            crate::web::client::public_base(&state.config, req.headers()).starts_with("https:");
        for cookie in crate::web::private::cookies(bin.as_str(), &token, max_age, secure) {
            res.headers_mut().append(hyper::header::SET_COOKIE, cookie);
        }
        return Ok(Some(res));
    }
    let token = crate::web::private::presented_token(req.headers());
    bins::authorize(state, bin, token.as_deref()).await?;
    Ok(None)
}

/// An error shown as an HTML page, in the page's language: `message` is a catalog key,
/// `args` its arguments.
#[derive(Debug)]
pub struct PageError {
    pub status: StatusCode,
    pub message: &'static str,
    pub args: Vec<(&'static str, String)>,
    pub retry_after: Option<u64>,
    pub allow: Option<&'static str>,
}

impl PageError {
    pub fn new(status: StatusCode, message: &'static str) -> Self {
        Self {
            status,
            message,
            args: Vec::new(),
            retry_after: None,
            allow: None,
        }
    }

    pub fn not_found(message: &'static str) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    fn with_arg(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.args.push((name, value.into()));
        self
    }

    fn method_not_allowed(allow: &'static str) -> Self {
        Self {
            allow: Some(allow),
            ..Self::new(StatusCode::METHOD_NOT_ALLOWED, "err-method").with_arg("allow", allow)
        }
    }

    fn title(&self, ui: &Ui) -> String {
        ui.t(match self.status {
            StatusCode::NOT_FOUND => "error-title-not-found",
            StatusCode::TOO_MANY_REQUESTS => "error-title-slow-down",
            StatusCode::FORBIDDEN => "error-title-forbidden",
            StatusCode::METHOD_NOT_ALLOWED => "error-title-method",
            StatusCode::SERVICE_UNAVAILABLE => "error-title-busy",
            s if s.is_server_error() => "error-title-server",
            _ => "error-title-other",
        })
    }

    fn message(&self, ui: &Ui) -> String {
        match self.args.as_slice() {
            [] => ui.t(self.message),
            [(name, value)] => ui.t1(self.message, name, value.as_str()),
            [(a, x), (b, y), ..] => ui.t2(self.message, a, x.as_str(), b, y.as_str()),
        }
    }

    pub fn into_response(self, ui: &Ui) -> Response<Body> {
        let message = self.message(ui);
        let page = ErrorPage {
            // The switcher of an error page goes back to the start page: the page is the
            // same for every address that fails alike (a private bin's 404 is byte for byte
            // an unknown bin's), so it must not echo the address.
            ui: Ui::new(ui.lang, "/"),
            title: self.title(ui),
            status: self.status.as_u16(),
            message: message.clone(),
        };
        let mut res = match page.render() {
            Ok(html_text) => html(self.status, html_text),
            // The plain-text fallback of the error page itself.
            Err(_) => secure(http_body::text(self.status, message)),
        };
        crate::web::error::add_retry_and_allow(&mut res, self.retry_after, self.allow);
        res
    }
}

impl From<ApiError> for PageError {
    /// The API's codes in the page's words; a code without its own message shows the API's
    /// English one inside a translated sentence.
    fn from(e: ApiError) -> Self {
        let key = match e.code {
            "bin_not_found" => "err-bin-not-found",
            "request_not_found" => "err-request-not-found",
            "too_many_bins" => "err-too-many-bins",
            "write_queue_full" => "err-queue-full",
            "storage_full" => "err-storage-full",
            "shutting_down" => "err-shutting-down",
            "internal_error" => "err-internal",
            "body_timeout" => "err-form-timeout",
            "body_too_large" => "err-form-too-large",
            _ => "err-other",
        };
        let mut page = Self {
            retry_after: e.retry_after,
            allow: e.allow,
            ..Self::new(e.status, key)
        };
        match key {
            "err-too-many-bins" => {
                page = page.with_arg("seconds", e.retry_after.unwrap_or(60).to_string())
            }
            "err-other" => page = page.with_arg("detail", e.message),
            _ => {}
        }
        page
    }
}

impl From<bins::Error> for PageError {
    fn from(e: bins::Error) -> Self {
        ApiError::from(e).into()
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    ui: Ui,
    title: String,
    status: u16,
    message: String,
}

/// Adds the headers every HTML response carries.
fn secure(mut res: Response<Body>) -> Response<Body> {
    let h = res.headers_mut();
    h.insert("content-security-policy", HeaderValue::from_static(CSP));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

fn html(status: StatusCode, text: String) -> Response<Body> {
    secure(http_body::with_type(
        status,
        "text/html; charset=utf-8",
        text,
    ))
}

/// Renders `page`, or the generic error page if rendering fails.
fn render(status: StatusCode, page: &impl Template) -> PageResult {
    page.render()
        .map(|text| html(status, text))
        .map_err(|e| ApiError::internal("page rendering failed", &e).into())
}

/// `303 See Other` to `location` (a path on this server).
fn see_other(location: &str) -> Response<Body> {
    let mut res = secure(http_body::text(StatusCode::SEE_OTHER, ""));
    if let Ok(v) = HeaderValue::from_str(location) {
        res.headers_mut().insert(LOCATION, v);
    }
    res
}

/// Refuses a form POST that a browser says came from another site or origin
/// ([`crate::web::client::is_cross_site`]). (Without the bin id a foreign page can do little,
/// but it should not even create bins in a user's name.)
fn check_same_site(state: &AppState, req: &Request<Incoming>) -> Result<(), PageError> {
    if crate::web::client::is_cross_site(&state.config, req.headers()) {
        return Err(PageError::new(StatusCode::FORBIDDEN, "err-cross-site"));
    }
    Ok(())
}

/// Most bytes read from an HTML form (the custom response body alone may be 64 KiB).
const MAX_FORM_BYTES: usize = 512 * 1024;

/// Reads an `application/x-www-form-urlencoded` body as ordered pairs.
async fn read_form(
    state: &AppState,
    req: Request<Incoming>,
) -> Result<Vec<(String, String)>, PageError> {
    check_same_site(state, &req)?;
    let bytes =
        http_body::read_small_body(req.into_body(), MAX_FORM_BYTES, state.config.body_timeout)
            .await?;
    Ok(form_urlencoded::parse(&bytes)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect())
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> &'a str {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// The first value of query parameter `name`.
fn query_param(req: &Request<Incoming>, name: &str) -> Option<String> {
    form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// `GET /static/{name}`: cached for a year when asked for under the current version, else
/// revalidated (an old page asking for an old version gets the current file, uncached).
fn static_file(name: &str, query: Option<&str>) -> PageResult {
    let Some(asset) = assets::find(name) else {
        return Err(PageError::not_found("err-no-file"));
    };
    let mut res = http_body::with_type(StatusCode::OK, asset.content_type, asset.bytes);
    let current = query
        .and_then(|q| q.strip_prefix("v="))
        .is_some_and(|v| v == assets::version(asset));
    let cache = if current {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let h = res.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", assets::version(asset))) {
        h.insert("etag", etag);
    }
    Ok(res)
}

/// Quotes `s` for a POSIX shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("http://a/r/b"), "'http://a/r/b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
