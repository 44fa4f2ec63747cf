//! How a caller presents a private bin's view token (issue 18): the API takes
//! `Authorization: Bearer TOKEN`; a browser gets the bin's cookie from a link with `?token=`
//! and sends it from then on. The check itself is [`crate::bins::authorize`].

use hyper::HeaderMap;
use hyper::header::{AUTHORIZATION, COOKIE, HeaderValue};

/// The cookie that carries a private bin's token. One name for every bin: each bin's cookie is
/// scoped to that bin's own paths, so a browser sends a bin only its own token.
pub const COOKIE_NAME: &str = "hookbin_view";

/// The token a request presents: the Bearer credential, else the bin's cookie.
pub fn presented_token(headers: &HeaderMap) -> Option<String> {
    bearer(headers).or_else(|| cookie(headers))
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim_matches('"').to_owned())
        .filter(|t| !t.is_empty())
}

/// The `Set-Cookie` values that let a browser into private bin `bin` with `token`: one for its
/// pages, one for the API its pages call (streams, verify, curl, exports). HttpOnly (no script
/// reads it), SameSite=Strict (no other site's page sends it), and it lives as long as the bin.
pub fn cookies(bin: &str, token: &str, max_age_secs: u64, secure: bool) -> Vec<HeaderValue> {
    ["/bins/", "/api/bins/"]
        .iter()
        .filter_map(|prefix| {
            let secure = if secure { "; Secure" } else { "" };
            HeaderValue::from_str(&format!(
                "{COOKIE_NAME}={token}; Path={prefix}{bin}; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict{secure}"
            ))
            .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn bearer_first_then_the_cookie() {
        let both = headers(&[
            ("authorization", "Bearer abc"),
            ("cookie", "a=1; hookbin_view=xyz"),
        ]);
        assert_eq!(presented_token(&both).as_deref(), Some("abc"));
        let cookie = headers(&[("cookie", "a=1; hookbin_view=xyz; b=2")]);
        assert_eq!(presented_token(&cookie).as_deref(), Some("xyz"));
        for none in [
            headers(&[]),
            headers(&[("authorization", "Basic abc")]),
            headers(&[("authorization", "Bearer ")]),
            headers(&[("cookie", "hookbin_viewx=1; other=hookbin_view")]),
        ] {
            assert_eq!(presented_token(&none), None, "{none:?}");
        }
    }

    #[test]
    fn cookies_are_scoped_to_the_bin_and_hidden_from_scripts() {
        let c = cookies("b1", "t", 60, true);
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0],
            "hookbin_view=t; Path=/bins/b1; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        assert!(c[1].to_str().unwrap().contains("Path=/api/bins/b1;"));
    }
}
