//! One captured request: the detail shown beside the list and on its own page.

use std::sync::Arc;

use askama::Template;
use hyper::body::Incoming;
use hyper::{Request, StatusCode};

use super::body::{BodyView, PAGE_CAPS, PANE_CAPS, Panel};
use super::format::{absolute_time, exact_bytes, human_size, method_class};
use super::integrations::{self, VERIFY_SCHEMES, Verification, VerifyWhen};
use super::{PageError, PageResult, field, query_param, read_form, render, see_other};
use crate::bins;
use crate::clock::rfc3339_ms;
use crate::ids::{BinId, RequestId};
use crate::model::StoredRequest;
use crate::state::AppState;
use crate::web::client::capture_base;
use crate::web::query_params;

/// A copy-as-curl command longer than this is not put in the page: it carries the body, and a
/// 1.9 MB JSON body made a 3.8 MB page (issue 12). It is fetched from `/curl` when copied, or
/// downloaded.
const CURL_INLINE_MAX: usize = 16 * 1024;

/// Header values longer than this are folded behind a "show all" toggle.
const LONG_HEADER: usize = 300;
/// How much of a folded value is shown before the toggle.
const HEADER_PREVIEW: usize = 160;

pub struct HeaderRow {
    pub name: String,
    pub value: String,
    /// The start of a long value (empty when the value is short enough to show whole).
    pub preview: String,
    /// The value had bytes that are not UTF-8 (shown as U+FFFD).
    pub lossy: bool,
}

/// What hookbin answered the request, as the page shows it.
pub struct AnswerView {
    pub status: u16,
    pub reason: &'static str,
    pub headers: Vec<(String, String)>,
    pub size: String,
    pub delay_ms: u64,
}

/// Everything the detail template shows about one request.
pub struct Detail {
    pub bin: String,
    pub id: String,
    pub method: String,
    pub method_class: &'static str,
    /// Public base + path as received + `?query`.
    pub url: String,
    pub received_iso: String,
    pub received_abs: String,
    pub remote_addr: String,
    pub http_version: String,
    pub size: String,
    pub size_exact: String,
    pub truncated: bool,
    pub stored_size: String,
    pub content_type: Option<String>,
    pub query: Vec<(String, String)>,
    pub headers: Vec<HeaderRow>,
    pub body: BodyView,
    /// What hookbin answered; `None` for requests captured before it kept that.
    pub answer: Option<AnswerView>,
    pub curl: Result<String, String>,
    /// The command is too long to put in the page (a large body is in it): its size, and the
    /// page offers a download and a copy fetched on demand instead. `curl` is then empty.
    pub curl_large: Option<String>,
    /// `/curl?download=1` with the target: the command as a file.
    pub curl_download: String,
    pub curl_target: String,
    /// Where the curl target form sends its GET (the page showing this detail).
    pub curl_form_action: String,
    /// Hidden fields that form must carry to come back to this detail.
    pub curl_form_req: Option<String>,
    pub verification: Option<Result<Verification, String>>,
    /// The verify form's tolerance field, as typed (empty: the default).
    pub verify_tolerance: String,
    /// The verify form's "check as of capture time" box.
    pub verify_at_capture: bool,
    /// The schemes offered, and whether each is the one chosen.
    pub schemes: Vec<(&'static str, bool)>,
    /// On its own page (no "open on its own page" link).
    pub standalone: bool,
}

impl Detail {
    /// `base` is the base of capture URLs (`--capture-url`, else the public base URL); `target` the curl target asked for, if any;
    /// `decode_limit` bounds the decoding of an encoded body (`--max-decoded-bytes`).
    pub fn new(
        r: &StoredRequest,
        base: &str,
        target: Option<&str>,
        standalone: bool,
        decode_limit: usize,
    ) -> Self {
        let url = if r.query.is_empty() {
            format!("{base}{}", r.path)
        } else {
            format!("{base}{}?{}", r.path, r.query)
        };
        let content_type = r.content_type();
        let target = target.map(str::trim).filter(|t| !t.is_empty());
        let headers = r
            .headers
            .iter()
            .map(|h| {
                let value = h.value_lossy().into_owned();
                let lossy = std::str::from_utf8(&h.value).is_err();
                let preview = if value.chars().count() > LONG_HEADER {
                    value.chars().take(HEADER_PREVIEW).collect()
                } else {
                    String::new()
                };
                HeaderRow {
                    name: h.name.clone(),
                    value,
                    preview,
                    lossy,
                }
            })
            .collect();
        let mut curl = integrations::curl_for(r, base, target);
        let curl_large = match &mut curl {
            Ok(command) if command.len() > CURL_INLINE_MAX => {
                let size = human_size(command.len() as u64);
                command.clear();
                Some(size)
            }
            _ => None,
        };
        Detail {
            bin: r.bin_id.clone(),
            id: r.id.to_string(),
            method: r.method.clone(),
            method_class: method_class(&r.method),
            url,
            received_iso: rfc3339_ms(r.received_at),
            received_abs: absolute_time(r.received_at),
            remote_addr: r.remote_addr.clone(),
            http_version: r.http_version.clone(),
            size: human_size(r.body_size),
            size_exact: exact_bytes(r.body_size),
            truncated: r.body_truncated,
            stored_size: exact_bytes(r.body.len() as u64),
            body: super::body::request_view(
                r,
                if standalone { PAGE_CAPS } else { PANE_CAPS },
                decode_limit,
            ),
            answer: r.response.as_ref().map(|a| AnswerView {
                status: a.status,
                reason: hyper::StatusCode::from_u16(a.status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or(""),
                headers: a.headers_as_sent(r.id),
                size: exact_bytes(a.body_size),
                delay_ms: a.delay_ms,
            }),
            content_type,
            query: query_params(&r.query),
            headers,
            curl,
            curl_large,
            curl_download: {
                let mut href = format!("/api/bins/{}/requests/{}/curl?download=1", r.bin_id, r.id);
                if let Some(t) = target {
                    href.push_str("&target=");
                    href.extend(form_urlencoded::byte_serialize(t.as_bytes()));
                }
                href
            },
            curl_target: target.unwrap_or_default().to_owned(),
            curl_form_action: if standalone {
                format!("/bins/{}/requests/{}", r.bin_id, r.id)
            } else {
                format!("/bins/{}", r.bin_id)
            },
            curl_form_req: (!standalone).then(|| r.id.to_string()),
            verification: None,
            verify_tolerance: String::new(),
            verify_at_capture: false,
            schemes: VERIFY_SCHEMES.iter().map(|s| (*s, false)).collect(),
            standalone,
        }
    }
}

/// [`Detail::new`] off the async threads (decoding a body takes a while), handing the request
/// back.
pub async fn detail(
    state: &AppState,
    r: StoredRequest,
    base: &str,
    target: Option<&str>,
    standalone: bool,
) -> Result<(Detail, StoredRequest), PageError> {
    let (base, target) = (base.to_owned(), target.map(str::to_owned));
    let limit = state.config.max_decoded_bytes;
    tokio::task::spawn_blocking(move || {
        let d = Detail::new(&r, &base, target.as_deref(), standalone, limit);
        (d, r)
    })
    .await
    .map_err(|e| crate::web::error::ApiError::internal("rendering a request", &e).into())
}

/// The pieces of [`Panel`] the template matches on, so it needs no enum paths.
impl Panel {
    pub fn json(&self) -> Option<&[super::body::Token]> {
        match self {
            Panel::Json(t) => Some(t),
            _ => None,
        }
    }

    pub fn form(&self) -> Option<&[(String, String)]> {
        match self {
            Panel::Form(f) => Some(f),
            _ => None,
        }
    }

    /// Plain text or a hex dump: both shown preformatted.
    pub fn text(&self) -> Option<&str> {
        match self {
            Panel::Text(t) | Panel::Hex(t) => Some(t),
            _ => None,
        }
    }

    pub fn is_hex(&self) -> bool {
        matches!(self, Panel::Hex(_))
    }

    pub fn parts(&self) -> Option<&[super::body::PartView]> {
        match self {
            Panel::Parts(p) => Some(p),
            _ => None,
        }
    }
}

#[derive(Template)]
#[template(path = "request.html")]
struct RequestPage {
    capture_url: String,
    detail: Detail,
}

pub async fn page(
    state: &AppState,
    req: &Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> PageResult {
    let stored = bins::find_request(state, &bin, id).await?;
    let base = capture_base(&state.config, req.headers());
    let target = query_param(req, "target");
    let (detail, _) = detail(state, stored, &base, target.as_deref(), true).await?;
    render(
        StatusCode::OK,
        &RequestPage {
            capture_url: format!("{base}/r/{bin}"),
            detail,
        },
    )
}

pub async fn delete(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> PageResult {
    read_form(state, req).await?;
    // Already gone (deleted in another tab, or evicted) is fine: the list is what the user wants.
    bins::delete_request(state, &bin, id).await?;
    Ok(see_other(&format!("/bins/{bin}")))
}

/// `POST .../verify` with `secret` and `scheme`: the request page with the answer. The secret
/// is used for this one check and neither stored, logged, nor put back into the page.
pub async fn verify(
    state: &Arc<AppState>,
    req: Request<Incoming>,
    (bin, id): (BinId, RequestId),
) -> PageResult {
    let base = capture_base(&state.config, req.headers());
    let form = read_form(state, req).await?;
    let stored = bins::find_request(state, &bin, id).await?;
    let scheme = field(&form, "scheme");
    let scheme = (!scheme.is_empty()).then_some(scheme);
    let (mut detail, stored) = detail(state, stored, &base, None, true).await?;
    let tolerance = field(&form, "tolerance").trim();
    let at_capture = matches!(field(&form, "at_capture"), "1" | "on" | "true");
    detail.verify_tolerance = tolerance.to_owned();
    detail.verify_at_capture = at_capture;
    detail.verification = Some(match tolerance_seconds(tolerance) {
        Ok(tolerance_seconds) => integrations::verify_for(
            &stored,
            field(&form, "secret"),
            scheme,
            &detail.url,
            VerifyWhen {
                tolerance_seconds,
                at_capture,
            },
        ),
        Err(e) => Err(e),
    });
    for (name, chosen) in &mut detail.schemes {
        *chosen = Some(*name) == scheme;
    }
    render(
        StatusCode::OK,
        &RequestPage {
            capture_url: format!("{base}/r/{bin}"),
            detail,
        },
    )
}

/// The tolerance field: empty for the default, else whole seconds.
fn tolerance_seconds(text: &str) -> Result<Option<u64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("tolerance: {text:?} is not a number of seconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1 << 20;

    fn stored() -> StoredRequest {
        StoredRequest {
            id: crate::ids::RequestId::from_row(7),
            received_at: 1_750_000_000_000,
            ..StoredRequest::sample(
                "0123456789abcdefghij",
                "/hook",
                "",
                &[("Stripe-Signature", "t=1,v1=<abc>")],
                b"{}",
            )
        }
    }

    fn d_clone(d: &Detail) -> Detail {
        Detail::new(&stored(), "http://h", Some(&d.curl_target), true, LIMIT)
    }

    fn render(detail: Detail) -> String {
        RequestPage {
            capture_url: "http://h/r/0123456789abcdefghij".into(),
            detail,
        }
        .render()
        .unwrap()
    }

    #[test]
    fn curl_section_renders_escaped_with_its_target_form() {
        let mut d = Detail::new(
            &stored(),
            "http://h",
            Some("http://localhost:3000"),
            true,
            LIMIT,
        );
        let real = render(d_clone(&d));
        assert!(real.contains("id=\"curl-section\""));
        assert!(real.contains("http://localhost:3000/hook"), "{real}");
        d.curl = Ok("curl -H 'X: <b>' 'http://localhost:3000/hook'".into());
        let html = render(d);
        assert!(html.contains(
            "id=\"curl-command\" data-api=\"/api/bins/0123456789abcdefghij/requests/7/curl\""
        ));
        assert!(html.contains("curl -H &#39;X: &#60;b&#62;&#39;"), "{html}");
        assert!(html.contains("value=\"http://localhost:3000\""));
        assert!(html.contains("action=\"/bins/0123456789abcdefghij/requests/7\""));
    }

    #[test]
    fn a_bad_curl_target_is_explained_and_can_be_corrected() {
        let html = render(Detail::new(
            &stored(),
            "http://h",
            Some("ftp://x"),
            true,
            LIMIT,
        ));
        assert!(html.contains("role=\"alert\""), "{html}");
        assert!(!html.contains("id=\"curl-command\""));
        assert!(
            html.contains("value=\"ftp://x\""),
            "the form keeps the typed target"
        );
    }

    #[test]
    fn verify_section_renders_the_verdict_and_never_the_secret() {
        let plain = render(Detail::new(&stored(), "http://h", None, true, LIMIT));
        assert!(plain.contains("verify-secret"));
        let mut d = Detail::new(&stored(), "http://h", None, true, LIMIT);
        d.schemes[2].1 = true;
        d.verification = Some(Ok(Verification {
            scheme: Some("stripe".into()),
            valid: false,
            stale: false,
            timestamp_ok: Some(false),
            detail: "The signature does not match: <likely a different secret>.".into(),
            signed: Some("\"1.\" followed by the raw body (2 bytes)".into()),
        }));
        let html = render(d);
        assert!(html.contains("class=\"verdict bad\""), "{html}");
        assert!(html.contains("Not a valid signature</strong> (stripe)"));
        assert!(html.contains("outside the tolerance"));
        assert!(html.contains("&#60;likely a different secret&#62;"));
        assert!(html.contains("<option value=\"stripe\" selected>"));
        assert!(html.contains("name=\"secret\" type=\"password\""));
        assert!(
            !html.contains("value=\"whsec"),
            "the secret is never put back"
        );
        let mut d = Detail::new(&stored(), "http://h", None, true, LIMIT);
        d.verification = Some(Err("secret: the secret is empty".into()));
        assert!(render(d).contains("Cannot check: secret: the secret is empty"));
    }
}
