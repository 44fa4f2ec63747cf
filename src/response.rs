//! Custom responses: what a bin answers instead of the default `200 ok`.
//!
//! A spec is validated once, when it is set, and stored as JSON. Captures then only copy it into
//! a response, so a bad spec can never break a capture.
//!
//! A custom response is written by whoever holds the bin id, and it may be served on the same
//! origin as the inspector (unless `--capture-url` puts captures on a host of their own). So a
//! spec may not carry headers that act beyond its own response, on the whole origin or host
//! (`ORIGIN_WIDE`), nor cookies outside its bin, nor redirects away from it. Capture responses
//! also always carry `Content-Security-Policy: sandbox` (see `capture.rs`), which no spec can
//! set or remove: whatever a spec's body holds, no script of it runs with the origin's rights.

use serde::Serialize;
use serde_json::Value;

use crate::wire::is_hop_by_hop;

/// Longest body a custom response may carry.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest delay before answering, in milliseconds.
pub const MAX_DELAY_MS: u64 = 30_000;

/// Headers a spec may not set because they act on more than the one response: on the whole
/// origin or host (workers, storage, security policy, transport, reporting, client hints), or
/// they redirect (`Refresh`). Lower case. Permissions-Policy, Cross-Origin-*-Policy, CORS and
/// caching headers stay allowed: they only concern the response they come with.
const ORIGIN_WIDE: &[&str] = &[
    // A service worker scope wider than the script's directory: the hole of issue 11.
    "service-worker-allowed",
    // Wipes the origin's cookies, storage and caches.
    "clear-site-data",
    // The server's own `sandbox` policy must stay the only one (a second policy could only
    // narrow it, but a spec has no business with it either way).
    "content-security-policy",
    "content-security-policy-report-only",
    // Changes how the browser groups every page of the origin.
    "origin-agent-cluster",
    // Host-wide and sticky: HSTS (max-age=0 would lift the operator's), alternative services.
    "strict-transport-security",
    "expect-ct",
    "alt-svc",
    // Reporting endpoints for the origin: NEL would send the URLs (bin ids) of later failures
    // to whoever the spec names.
    "nel",
    "report-to",
    "reporting-endpoints",
    // Remembered for the origin.
    "accept-ch",
    "critical-ch",
    "set-login",
    // A redirect that `Location`'s rule below would not see.
    "refresh",
];

/// Headers the server sets on every capture response.
const SERVER_OWNED: &[&str] = &["content-length", "x-content-type-options"];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResponseSpec {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay_ms: u64,
}

/// Why a spec was refused, naming the offending field (`response.status`, `headers[1][0]`...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct SpecError {
    pub field: String,
    pub reason: String,
}

fn err(field: impl Into<String>, reason: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        reason: reason.into(),
    }
}

impl ResponseSpec {
    /// Validates a spec for bin `bin` from JSON. Missing fields take defaults: status 200, no
    /// headers, empty body, no delay. `prefix` names the spec in error messages (`response.`
    /// inside a bin).
    pub fn from_json(value: &Value, prefix: &str, bin: &str) -> Result<Self, SpecError> {
        Self::parse(value, prefix, bin, None)
    }

    /// `on_dropped`: instead of failing on a header that [`origin_rule`] refuses, drop it and
    /// report it here (for specs stored before the rule existed).
    fn parse(
        value: &Value,
        prefix: &str,
        bin: &str,
        mut on_dropped: Option<&mut dyn FnMut(SpecError)>,
    ) -> Result<Self, SpecError> {
        let field = |name: &str| format!("{prefix}{name}");
        let Value::Object(map) = value else {
            return Err(err(prefix.trim_end_matches('.'), "must be a JSON object"));
        };
        if let Some(key) = map
            .keys()
            .find(|k| !["status", "headers", "body", "delay_ms"].contains(&k.as_str()))
        {
            return Err(err(
                field(key),
                "unknown field (expected status, headers, body, delay_ms)",
            ));
        }
        let status = match map.get("status") {
            None => 200,
            Some(v) => v
                .as_u64()
                .filter(|s| (100..=599).contains(s))
                .ok_or_else(|| err(field("status"), "must be an integer from 100 to 599"))?
                as u16,
        };
        let body = match map.get("body") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.len() <= MAX_BODY => s.clone(),
            Some(Value::String(s)) => {
                return Err(err(
                    field("body"),
                    format!("is {} bytes; at most {MAX_BODY} are allowed", s.len()),
                ));
            }
            Some(_) => return Err(err(field("body"), "must be a string")),
        };
        let delay_ms = match map.get("delay_ms") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .filter(|d| *d <= MAX_DELAY_MS)
                .ok_or_else(|| err(field("delay_ms"), "must be an integer from 0 to 30000"))?,
        };
        let headers = match map.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut headers = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let at = field(&format!("headers[{i}]"));
                    let (name, value) = header(item, &at)?;
                    match (origin_rule(&name, &value, bin, &at), on_dropped.as_mut()) {
                        (Ok(()), _) => headers.push((name, value)),
                        (Err(e), Some(drop)) => drop(e),
                        (Err(e), None) => return Err(e),
                    }
                }
                headers
            }
            Some(_) => {
                return Err(err(
                    field("headers"),
                    "must be an array of [name, value] pairs",
                ));
            }
        };
        Ok(Self {
            status,
            headers,
            body,
            delay_ms,
        })
    }

    /// The canonical JSON stored in the database.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a spec always serializes")
    }

    /// Reads bin `bin`'s spec back from the database, validated again (the file may be old or
    /// edited). A header that an older hookbin accepted and this one refuses is left out, so the
    /// spec still works without it; see [`ResponseSpec::from_stored_noting`].
    pub fn from_stored(json: &str, bin: &str) -> Result<Self, SpecError> {
        Self::from_stored_noting(json, bin, |_| {})
    }

    /// [`ResponseSpec::from_stored`], telling `on_dropped` about each header left out.
    pub fn from_stored_noting(
        json: &str,
        bin: &str,
        mut on_dropped: impl FnMut(SpecError),
    ) -> Result<Self, SpecError> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| err("response", e.to_string()))?;
        Self::parse(&value, "", bin, Some(&mut on_dropped))
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a spec always serializes")
    }

    /// Whether the spec sets header `name` itself.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

fn header(item: &Value, field: &str) -> Result<(String, String), SpecError> {
    let pair = item
        .as_array()
        .filter(|a| a.len() == 2)
        .ok_or_else(|| err(field, "must be a [name, value] pair of strings"))?;
    let (Some(name), Some(value)) = (pair[0].as_str(), pair[1].as_str()) else {
        return Err(err(field, "must be a [name, value] pair of strings"));
    };
    if hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Err(err(format!("{field}[0]"), "is not a valid header name"));
    }
    // The server owns the connection (hop-by-hop headers), the body framing and nosniff.
    if is_hop_by_hop(name) || SERVER_OWNED.iter().any(|s| name.eq_ignore_ascii_case(s)) {
        return Err(err(
            format!("{field}[0]"),
            format!("{name} is set by the server and cannot be customised"),
        ));
    }
    if hyper::header::HeaderValue::from_str(value).is_err() {
        return Err(err(
            format!("{field}[1]"),
            "is not a valid header value (no control characters or line breaks)",
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Whether header `name: value` of bin `bin`'s spec stays within that bin (see the module docs).
/// `at` names the header pair in the error.
fn origin_rule(name: &str, value: &str, bin: &str, at: &str) -> Result<(), SpecError> {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if ORIGIN_WIDE.iter().any(|n| is(n)) {
        return Err(err(
            format!("{at}[0]"),
            format!(
                "{name} acts on the whole site, not just this bin's response, so a custom \
                 response cannot set it"
            ),
        ));
    }
    if is("set-cookie") && !cookie_stays_in_bin(value, bin) {
        return Err(err(
            format!("{at}[1]"),
            format!(
                "a Set-Cookie must stay within this bin: give it Path=/r/{bin} (or a path below \
                 it) and no Domain"
            ),
        ));
    }
    if is("location") && !inside_bin(value, bin) {
        return Err(err(
            format!("{at}[1]"),
            format!(
                "a Location must be a path inside this bin (/r/{bin}...); redirects to other \
                 sites or pages are refused"
            ),
        ));
    }
    Ok(())
}

/// `/r/{bin}`, or a path, query or fragment below it: a same-host reference that cannot leave
/// the bin's URL space (it starts with `/r`, so it is never `//host` either).
fn inside_bin(value: &str, bin: &str) -> bool {
    value
        .strip_prefix("/r/")
        .and_then(|rest| rest.strip_prefix(bin))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?', '#']))
}

/// Every `Path` attribute (there must be one) is `/r/{bin}` or below, and there is no `Domain`
/// attribute (a host-only cookie cannot reach sibling or parent hosts).
fn cookie_stays_in_bin(value: &str, bin: &str) -> bool {
    let mut has_path = false;
    for attribute in value.split(';').skip(1) {
        let (key, val) = attribute.split_once('=').unwrap_or((attribute, ""));
        let key = key.trim();
        if key.eq_ignore_ascii_case("domain") {
            return false;
        }
        if key.eq_ignore_ascii_case("path") {
            let path = val.trim();
            if !inside_bin(path, bin) || path.contains(['?', '#']) {
                return false;
            }
            has_path = true;
        }
    }
    has_path
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BIN: &str = "0123456789abcdefghij";

    fn field_of(v: Value) -> String {
        ResponseSpec::from_json(&v, "response.", BIN)
            .unwrap_err()
            .field
    }

    fn refused(name: &str, value: &str) -> Option<SpecError> {
        ResponseSpec::from_json(
            &json!({"headers": [["X-Fine", "1"], [name, value]]}),
            "",
            BIN,
        )
        .err()
    }

    #[test]
    fn defaults_and_round_trip() {
        let spec = ResponseSpec::from_json(&json!({}), "", BIN).unwrap();
        assert_eq!(spec.status, 200);
        let spec = ResponseSpec::from_json(
            &json!({"status": 429, "headers": [["Retry-After", "5"]], "body": "slow down", "delay_ms": 10}),
            "",
            BIN,
        )
        .unwrap();
        assert_eq!(
            ResponseSpec::from_stored(&spec.to_json(), BIN).unwrap(),
            spec
        );
    }

    #[test]
    fn rejections_name_the_field() {
        assert_eq!(field_of(json!({"status": 99})), "response.status");
        assert_eq!(field_of(json!({"status": 600})), "response.status");
        assert_eq!(field_of(json!({"status": "200"})), "response.status");
        assert_eq!(field_of(json!({"delay_ms": 30001})), "response.delay_ms");
        assert_eq!(
            field_of(json!({"body": "x".repeat(MAX_BODY + 1)})),
            "response.body"
        );
        assert_eq!(
            field_of(json!({"headers": [["Content-Length", "1"]]})),
            "response.headers[0][0]"
        );
        assert_eq!(
            field_of(json!({"headers": [["X", "1"], ["Transfer-Encoding", "chunked"]]})),
            "response.headers[1][0]"
        );
        assert_eq!(
            field_of(json!({"headers": [["Bad Name", "1"]]})),
            "response.headers[0][0]"
        );
        assert_eq!(
            field_of(json!({"headers": [["X", "a\r\nb"]]})),
            "response.headers[0][1]"
        );
        assert_eq!(field_of(json!({"headers": [["X"]]})), "response.headers[0]");
        assert_eq!(field_of(json!({"colour": "red"})), "response.colour");
        assert_eq!(field_of(json!([1])), "response");
    }

    #[test]
    fn limits_are_inclusive() {
        let ok = json!({"status": 599, "delay_ms": 30000, "body": "x".repeat(MAX_BODY)});
        assert!(ResponseSpec::from_json(&ok, "", BIN).is_ok());
        assert!(ResponseSpec::from_json(&json!({"status": 100}), "", BIN).is_ok());
    }

    #[test]
    fn headers_that_act_on_the_whole_origin_are_refused_by_name() {
        for name in [
            "Service-Worker-Allowed",
            "clear-site-data",
            "Content-Security-Policy",
            "Content-Security-Policy-Report-Only",
            "Origin-Agent-Cluster",
            "Strict-Transport-Security",
            "Alt-Svc",
            "NEL",
            "Report-To",
            "Reporting-Endpoints",
            "Accept-CH",
            "Refresh",
            "X-Content-Type-Options",
        ] {
            let e = refused(name, "x").unwrap_or_else(|| panic!("{name} was accepted"));
            assert_eq!(e.field, "headers[1][0]", "{name}");
            assert!(e.reason.contains(name), "{name}: {e}");
        }
        // Headers about this one response stay allowed.
        for name in [
            "Content-Type",
            "Cache-Control",
            "Permissions-Policy",
            "Cross-Origin-Opener-Policy",
            "Cross-Origin-Resource-Policy",
            "Access-Control-Allow-Origin",
            "Link",
            "Retry-After",
        ] {
            assert!(refused(name, "x").is_none(), "{name} was refused");
        }
    }

    #[test]
    fn cookies_stay_in_their_bin() {
        for ok in [
            format!("a=1; Path=/r/{BIN}"),
            format!("a=1; path=/r/{BIN}/deeper; HttpOnly; Secure; SameSite=Lax; Max-Age=60"),
            format!("a=1;Path=/r/{BIN}/"),
        ] {
            assert!(refused("Set-Cookie", &ok).is_none(), "{ok}");
        }
        for bad in [
            "a=1".to_owned(),
            "a=1; Path=/".to_owned(),
            "a=1; Path=/r/".to_owned(),
            "a=1; Path=/bins".to_owned(),
            format!("a=1; Path=/r/{BIN}x"),
            format!("a=1; Path=/r/{BIN}; Path=/"),
            format!("a=1; Path=/r/{BIN}; Domain=example.com"),
            format!("a=1; Path=/r/other{BIN}"),
            format!("Path=/r/{BIN}"),
        ] {
            let e = refused("set-cookie", &bad).unwrap_or_else(|| panic!("{bad} was accepted"));
            assert_eq!(e.field, "headers[1][1]", "{bad}");
            assert!(e.reason.contains("Set-Cookie"), "{e}");
        }
    }

    #[test]
    fn redirects_stay_in_their_bin() {
        for ok in [
            format!("/r/{BIN}"),
            format!("/r/{BIN}/next?x=1"),
            format!("/r/{BIN}?a"),
            format!("/r/{BIN}#f"),
        ] {
            assert!(refused("Location", &ok).is_none(), "{ok}");
        }
        for bad in [
            "https://evil.example/".to_owned(),
            "//evil.example/".to_owned(),
            "/\\evil.example".to_owned(),
            "/bins/x".to_owned(),
            "relative".to_owned(),
            format!("/r/{BIN}x"),
            format!("https://h/r/{BIN}"),
        ] {
            let e = refused("location", &bad).unwrap_or_else(|| panic!("{bad} was accepted"));
            assert_eq!(e.field, "headers[1][1]", "{bad}");
        }
    }

    #[test]
    fn a_stored_spec_loses_the_headers_now_refused_and_keeps_the_rest() {
        let old = json!({
            "status": 302,
            "headers": [
                ["Service-Worker-Allowed", "/"],
                ["X-Kept", "1"],
                ["Location", "https://evil.example/"],
                ["Set-Cookie", "s=1; Path=/"],
            ],
            "body": "<script>x</script>",
            "delay_ms": 0,
        })
        .to_string();
        let mut dropped = Vec::new();
        let spec = ResponseSpec::from_stored_noting(&old, BIN, |e| dropped.push(e.field)).unwrap();
        assert_eq!(spec.headers, [("X-Kept".to_owned(), "1".to_owned())]);
        assert_eq!(spec.status, 302);
        assert_eq!(dropped, ["headers[0][0]", "headers[2][1]", "headers[3][1]"]);
        assert_eq!(ResponseSpec::from_stored(&old, BIN).unwrap(), spec);
        // Damage that is not about these rules still fails.
        assert!(ResponseSpec::from_stored(r#"{"status": 1}"#, BIN).is_err());
    }
}
