//! Twilio: `X-Twilio-Signature: <base64>`, HMAC-SHA1 keyed by the auth token over the URL and
//! the sorted form parameters; the rules are [`crate::signing::twilio`]'s. What this module adds
//! is twilio-python's leniency and the diagnostics:
//! - a signature made for the URL with or without its port is accepted (`add_port` appends
//!   `:443`/`:80` when the URL has no port, `remove_port` strips whatever port it has);
//! - a body that is not a form is covered when the URL carries `bodySHA256`, which must equal
//!   the body's SHA-256.
//!
//! The signed URL is the *public* one the provider called, which the caller passes (`url`, else
//! the bin URL as captured). Behind a TLS-terminating proxy the two differ, which the mismatch
//! hints recognise.

use super::{Context, Finding, Outcome, value_text};
use crate::signing::crypto::{decode_hex, first_match, sha256, tags_equal};
use crate::signing::twilio::{
    BODY_HASH_PARAM, FORM, HEADER, decode_signature, form_params, mac, signed_params,
};
use crate::verify::keys;
use crate::verify::{Scheme, VerifyError, text};

pub(super) fn verify(ctx: &Context<'_>) -> Result<Outcome, VerifyError> {
    let url = Url::parse(ctx.url).ok_or(VerifyError::InvalidUrl)?;
    let Some(header) = ctx.header(HEADER) else {
        return Ok(Outcome::missing(
            Scheme::Twilio,
            &[HEADER],
            "Twilio sends the base64 HMAC-SHA1 of the URL and the sorted POST parameters there.",
        ));
    };
    let tags: Vec<Vec<u8>> = decode_signature(&value_text(header)).into_iter().collect();
    let token = ctx.secret.as_bytes();
    let content_type = ctx.req.content_type();
    let form = is_form(ctx);
    let params = signed_params(content_type.as_deref(), &ctx.req.body);
    // Only a non-form body is covered by bodySHA256, as in the library (there `params` is then
    // the body text rather than a dict).
    let body_hash_ok = (!form)
        .then(|| url.query_param(BODY_HASH_PARAM))
        .flatten()
        .map(|expected| body_hash_matches(&ctx.req.body, &expected));

    let matched = matching_form(token, &url, &params, &tags);
    let hint = match (matched, body_hash_ok) {
        (Some(_), Some(false)) => Some(
            "the URL signature matches, but the SHA-256 of the body differs from the \
             bodySHA256 in the URL: the body changed after it was signed"
                .to_owned(),
        ),
        (Some(_), _) => None,
        (None, _) => Some(explain(ctx, &url, form, &params, &tags).unwrap_or_else(|| {
            format!(
                "{} was not made with this auth token over this URL and these parameters; \
                 either the token is wrong, or the URL Twilio called differs from {:?} (pass \
                 \"url\" with the public URL the provider was given)",
                header.name,
                text::shorten(ctx.url, 200)
            )
        })),
    };
    let matched = matched
        .filter(|_| body_hash_ok != Some(false))
        .map(|form| format!("the signature for the URL {form}"));
    let mut signed = describe_signed(ctx.url, &params, body_hash_ok);
    if !form && body_hash_ok.is_none() && !ctx.req.body.is_empty() {
        signed.push_str(
            "; the body is not form-encoded and the URL has no bodySHA256, so the body itself \
             is not covered",
        );
    }
    Ok(Finding {
        scheme: Scheme::Twilio,
        matched,
        hint,
        method: "HMAC-SHA1 with the auth token as text".to_owned(),
        signed,
        freshness: None,
        header: header.name.clone(),
    }
    .into_outcome())
}

/// Whether the request's Content-Type is a form (its media type, parameters ignored).
fn is_form(ctx: &Context<'_>) -> bool {
    crate::signing::twilio::is_form(ctx.req.content_type().as_deref())
}

fn body_hash_matches(body: &[u8], expected_hex: &str) -> bool {
    decode_hex(expected_hex).is_some_and(|expected| tags_equal(&sha256(body), &expected))
}

/// Which form of `url` (without / with its port) the signature was made for, if any.
fn matching_form(
    token: &[u8],
    url: &Url<'_>,
    params: &[(String, String)],
    tags: &[Vec<u8>],
) -> Option<&'static str> {
    url.forms()
        .into_iter()
        .find_map(|(form, text)| first_match(&mac(token, &text, params), tags).map(|_| form))
}

/// Tries the usual ways the signed URL, parameters or token differ from what was checked.
fn explain(
    ctx: &Context<'_>,
    url: &Url<'_>,
    form: bool,
    params: &[(String, String)],
    tags: &[Vec<u8>],
) -> Option<String> {
    let token = ctx.secret.as_bytes();
    let url_hint = url_variants(ctx, url)
        .into_iter()
        .find_map(|(hint, other)| {
            let other = Url::parse(&other)?;
            matching_form(token, &other, params, tags).map(|_| hint)
        });
    let params_hint = || {
        if form && !params.is_empty() {
            matching_form(token, url, &[], tags).map(|_| {
                "signature covers the URL only: the form parameters in the body were not \
                 signed"
                    .to_owned()
            })
        } else if !form && !ctx.req.body.is_empty() {
            let as_form = form_params(&ctx.req.body);
            matching_form(token, url, &as_form, tags).map(|_| {
                format!(
                    "signature matches when the body is read as form parameters, but the \
                     Content-Type is {:?}, not {FORM}",
                    text::shorten(&ctx.req.content_type().unwrap_or_default(), 60)
                )
            })
        } else {
            None
        }
    };
    let key_hint = || {
        keys::alternatives_to_text_key(ctx.secret)
            .into_iter()
            .find(|alt| matching_form(&alt.bytes, url, params, tags).is_some())
            .map(|alt| alt.hint)
    };
    url_hint.or_else(params_hint).or_else(key_hint)
}

/// Other URLs the provider may have signed, with the hint for each.
fn url_variants(ctx: &Context<'_>, url: &Url<'_>) -> Vec<(String, String)> {
    let mut variants = Vec::new();
    let other_scheme = if url.is_https() { "http" } else { "https" };
    variants.push((
        format!(
            "signature matches the {other_scheme}:// form of the URL: the URL the provider called \
             differs from the one checked (a TLS-terminating proxy in front? pass \"url\" with \
             the public URL)"
        ),
        format!("{other_scheme}://{}{}", url.authority, url.rest),
    ));
    if ctx.url_given && ctx.default_url != ctx.url {
        variants.push((
            "signature matches the bin URL as captured, not the \"url\" given".to_owned(),
            ctx.default_url.to_owned(),
        ));
    }
    variants.push(
        match url.path().strip_suffix('/').filter(|p| !p.is_empty()) {
            Some(without) => (
                "signature matches the URL without the trailing slash on its path".to_owned(),
                url.with_path(without),
            ),
            None => (
                "signature matches the URL with a trailing slash on its path".to_owned(),
                url.with_path(&format!("{}/", url.path())),
            ),
        },
    );
    if !url.query().is_empty() {
        variants.push((
            "signature matches the URL without its query string".to_owned(),
            format!("{}://{}{}", url.scheme, url.authority, url.path()),
        ));
    }
    variants
}

/// `signed` for Twilio: the URL and the parameter names (values can be long; they are in the
/// request anyway). `body_hash_ok` is set when the body is covered by `bodySHA256`.
fn describe_signed(url: &str, params: &[(String, String)], body_hash_ok: Option<bool>) -> String {
    let url = format!("{:?}", text::shorten(url, 300));
    if params.is_empty() {
        return match body_hash_ok {
            Some(true) => format!(
                "the URL {url} alone; the body is covered by the bodySHA256 query parameter, \
                 which equals the body's SHA-256"
            ),
            Some(false) => format!(
                "the URL {url} alone; the body is covered by the bodySHA256 query parameter, \
                 which does not equal the body's SHA-256"
            ),
            None => format!("the URL {url} alone (no form parameters)"),
        };
    }
    let mut names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    format!(
        "the URL {url} followed by {} sorted by name, each as name then value ({})",
        text::count(params.len(), "form parameter"),
        text::shorten(&names.join(", "), 300)
    )
}

/// Just enough URL parsing for Twilio's port rule: `scheme://authority` + the rest, with the
/// authority split into host and port.
struct Url<'a> {
    text: &'a str,
    scheme: &'a str,
    authority: &'a str,
    host: &'a str,
    port: Option<&'a str>,
    /// Path, query and fragment, as given.
    rest: &'a str,
}

impl<'a> Url<'a> {
    /// An absolute `http(s)://host...` URL; `None` for anything else.
    fn parse(text: &'a str) -> Option<Url<'a>> {
        let (scheme, after) = text.split_once("://")?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        let (authority, rest) = after.split_at(end);
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
                (host, Some(port))
            }
            _ => (authority, None),
        };
        if host.is_empty() || host.contains(char::is_whitespace) {
            return None;
        }
        Some(Url {
            text,
            scheme,
            authority,
            host,
            port,
            rest,
        })
    }

    fn is_https(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("https")
    }

    /// The two URLs the library tries: without any port, and with the port (the default one
    /// added when there is none). Each with the words that say which one matched.
    fn forms(&self) -> Vec<(&'static str, String)> {
        match self.port {
            Some(_) => vec![
                ("as given", self.text.to_owned()),
                (
                    "without its port",
                    format!("{}://{}{}", self.scheme, self.host, self.rest),
                ),
            ],
            None => {
                let (port, label) = if self.is_https() {
                    ("443", "with the default port :443 added")
                } else {
                    ("80", "with the default port :80 added")
                };
                vec![
                    ("as given", self.text.to_owned()),
                    (
                        label,
                        format!("{}://{}:{port}{}", self.scheme, self.host, self.rest),
                    ),
                ]
            }
        }
    }

    fn path(&self) -> &'a str {
        let end = self.rest.find(['?', '#']).unwrap_or(self.rest.len());
        &self.rest[..end]
    }

    fn query(&self) -> &'a str {
        let Some(start) = self.rest.find('?') else {
            return "";
        };
        let query = &self.rest[start + 1..];
        query.split('#').next().unwrap_or_default()
    }

    /// The first value of query parameter `name`, decoded.
    fn query_param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query().as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    fn with_path(&self, path: &str) -> String {
        format!(
            "{}://{}{path}{}",
            self.scheme,
            self.authority,
            &self.rest[self.path().len()..]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_forms_follow_the_port_rule() {
        let url = Url::parse("https://example.com/a?b=1").unwrap();
        let forms: Vec<String> = url.forms().into_iter().map(|(_, u)| u).collect();
        assert_eq!(
            forms,
            ["https://example.com/a?b=1", "https://example.com:443/a?b=1"]
        );
        let url = Url::parse("http://example.com:8080").unwrap();
        let forms: Vec<String> = url.forms().into_iter().map(|(_, u)| u).collect();
        assert_eq!(forms, ["http://example.com:8080", "http://example.com"]);
        let url = Url::parse("http://[::1]:8080/x").unwrap();
        assert_eq!(url.host, "[::1]");
        assert_eq!(Url::parse("http://[::1]/x").unwrap().port, None);
    }

    #[test]
    fn url_parts() {
        let url = Url::parse("https://h/p/?q=1&bodySHA256=ab#f").unwrap();
        assert_eq!(url.path(), "/p/");
        assert_eq!(url.query(), "q=1&bodySHA256=ab");
        assert_eq!(url.query_param("bodySHA256").as_deref(), Some("ab"));
        assert_eq!(url.with_path("/p"), "https://h/p?q=1&bodySHA256=ab#f");
        for bad in [
            "",
            "/r/abc",
            "ftp://h/x",
            "https://",
            "https:///x",
            "https://a b/",
        ] {
            assert!(Url::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn published_vector_matches_as_given() {
        let params = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+14158675309"),
            ("Digits", "1234"),
            ("From", "+14158675309"),
            ("To", "+18005551212"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let url = Url::parse("https://mycompany.com/myapp.php?foo=1&bar=2").unwrap();
        let tag = decode_signature("RSOYDt4T1cUTdK1PDd93/VVr8B8=").unwrap();
        assert_eq!(
            matching_form(b"12345", &url, &params, &[tag]),
            Some("as given")
        );
    }
}
