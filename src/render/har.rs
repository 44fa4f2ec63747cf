//! HAR 1.2 export of a bin (<http://www.softwareishard.com/blog/har-12-spec/>), importable into
//! browser devtools, Insomnia and Postman.
//!
//! Each entry's `response` is what hookbin answered at capture time (status, header lines, body
//! size; the body itself is not kept, so `content.text` is absent), and its `timings.wait` the
//! custom delay. Requests captured before hookbin kept its answers get the minimal placeholder
//! the spec requires (status `0`, empty strings, `-1` sizes, the convention browsers use for a
//! response they never saw). Other timings are unknown and written as `0`. Everything the spec has no field for goes into underscore-prefixed
//! custom fields (`_hookbin`, `_valueBase64`), which the spec allows on any object.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::clock::rfc3339_ms;
use crate::model::{HeaderPair, StoredRequest};

/// The HAR log for `requests`, entries in the order given (pass them oldest first: HAR viewers
/// show entries as a timeline). `bin_url` is `{public}/r/{bin}`; each entry's URL is
/// `{bin_url}{subpath}?{query}`.
pub fn har(requests: &[StoredRequest], bin_url: &str, creator_version: &str) -> Value {
    let entries: Vec<Value> = requests.iter().map(|r| entry(r, bin_url)).collect();
    json!({
        "log": {
            "version": "1.2",
            "creator": { "name": "hookbin", "version": creator_version },
            "pages": [],
            "entries": entries,
        }
    })
}

fn entry(req: &StoredRequest, bin_url: &str) -> Value {
    json!({
        "startedDateTime": rfc3339_ms(req.received_at),
        "time": 0,
        "request": request(req, bin_url),
        "response": req.response.as_ref().map_or_else(placeholder_response, |r| response(req, r)),
        "cache": {},
        "timings": { "send": 0, "wait": req.response.as_ref().map_or(0, |r| r.delay_ms), "receive": 0 },
        "_hookbin": {
            "id": req.id,
            "bin_id": req.bin_id,
            "subpath": req.subpath,
            "remote_addr": req.remote_addr,
            "body_size": req.body_size,
            "body_truncated": req.body_truncated,
        },
    })
}

fn request(req: &StoredRequest, bin_url: &str) -> Value {
    let mut url = format!("{}{}", bin_url.trim_end_matches('/'), req.subpath);
    if !req.query.is_empty() {
        url.push('?');
        url.push_str(&req.query);
    }
    let mut r = json!({
        "method": req.method,
        "url": url,
        "httpVersion": req.http_version,
        "cookies": cookies(&req.headers),
        "headers": req.headers.iter().map(header).collect::<Vec<_>>(),
        "queryString": name_values(form_urlencoded::parse(req.query.as_bytes())),
        "headersSize": -1,
        // The size the sender sent; for a truncated capture `postData` holds only a prefix.
        "bodySize": req.body_size,
    });
    if !req.body.is_empty() {
        r["postData"] = post_data(req);
    }
    r
}

/// `{name, value}`; a value that is not UTF-8 is shown lossily and kept exactly in `_valueBase64`.
fn header(h: &HeaderPair) -> Value {
    let mut v = json!({ "name": h.name, "value": h.value_lossy() });
    if std::str::from_utf8(&h.value).is_err() {
        v["_valueBase64"] = json!(BASE64.encode(&h.value));
    }
    v
}

/// Cookies from every `Cookie` header (`a=1; b=2`), in order. Values are not decoded: cookie
/// values have no standard encoding.
fn cookies(headers: &[HeaderPair]) -> Vec<Value> {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("cookie"))
        .flat_map(|h| {
            h.value_lossy()
                .split(';')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (name, value) = p.split_once('=').unwrap_or((p, ""));
                    json!({ "name": name.trim(), "value": value.trim() })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn name_values<'a>(
    pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
) -> Vec<Value> {
    pairs
        .map(|(n, v)| json!({ "name": n, "value": v }))
        .collect()
}

/// `postData` for a non-empty body.
///
/// A UTF-8 body is `text` as is. Any other body is base64 in `text` with `"encoding": "base64"`:
/// HAR 1.2 defines `encoding` only for response content, but Chrome/Firefox devtools and Fiddler
/// write and read it on `postData` too, and it is the only way to keep binary bodies exact.
/// For `application/x-www-form-urlencoded` bodies `params` is added next to `text`, as browsers
/// export it (the spec calls the two mutually exclusive; importers accept both).
fn post_data(req: &StoredRequest) -> Value {
    let mime = req.content_type().unwrap_or_default();
    match std::str::from_utf8(&req.body) {
        Ok(text) => {
            let mut pd = json!({ "mimeType": mime, "text": text });
            if is_form(&mime) {
                pd["params"] = json!(name_values(form_urlencoded::parse(&req.body)));
            }
            pd
        }
        Err(_) => json!({
            "mimeType": mime,
            "text": BASE64.encode(&req.body),
            "encoding": "base64",
        }),
    }
}

fn is_form(mime: &str) -> bool {
    mime.split(';').next().is_some_and(|t| {
        t.trim()
            .eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}

/// hookbin's recorded answer as a HAR response.
fn response(req: &StoredRequest, r: &crate::model::ResponseRecord) -> Value {
    let headers: Vec<Value> = r
        .headers_as_sent(req.id)
        .into_iter()
        .map(|(name, value)| json!({ "name": name, "value": value }))
        .collect();
    let mime = r
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map_or("", |(_, v)| v.as_str());
    json!({
        "status": r.status,
        "statusText": hyper::StatusCode::from_u16(r.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or(""),
        "httpVersion": req.http_version,
        "cookies": [],
        "headers": headers,
        "content": { "size": r.body_size, "mimeType": mime },
        "redirectURL": r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("location")).map_or("", |(_, v)| v.as_str()),
        "headersSize": -1,
        "bodySize": r.body_size,
    })
}

/// The response object HAR requires when hookbin's answer is not known, so `0`/`""`, as devtools
/// write for a request that got no response.
fn placeholder_response() -> Value {
    json!({
        "status": 0,
        "statusText": "",
        "httpVersion": "",
        "cookies": [],
        "headers": [],
        "content": { "size": 0, "mimeType": "" },
        "redirectURL": "",
        "headersSize": -1,
        "bodySize": -1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(id: &str, headers: &[(&str, &[u8])], body: &[u8]) -> StoredRequest {
        StoredRequest {
            id: crate::ids::RequestId::parse(id).unwrap(),
            remote_addr: "10.0.0.1".into(),
            received_at: 1_700_000_000_123,
            ..StoredRequest::sample(
                "abcdefghijklmnop",
                "/hooks",
                "a=1&b=x+y&a=%2F",
                headers,
                body,
            )
        }
    }

    const BIN: &str = "http://127.0.0.1:8080/r/abcdefghijklmnop";

    fn has_keys(v: &Value, keys: &[&str]) {
        for k in keys {
            assert!(v.get(k).is_some(), "missing {k} in {v}");
        }
    }

    #[test]
    fn log_has_every_required_har_field() {
        let reqs = [
            stored("1", &[("Content-Type", b"application/json")], b"{}"),
            stored("2", &[], b""),
        ];
        let h = har(&reqs, BIN, "0.1.0");
        let log = &h["log"];
        assert_eq!(log["version"], "1.2");
        assert_eq!(
            log["creator"],
            json!({"name": "hookbin", "version": "0.1.0"})
        );
        let entries = log["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        for e in entries {
            has_keys(
                e,
                &[
                    "startedDateTime",
                    "time",
                    "request",
                    "response",
                    "cache",
                    "timings",
                ],
            );
            has_keys(
                &e["request"],
                &[
                    "method",
                    "url",
                    "httpVersion",
                    "cookies",
                    "headers",
                    "queryString",
                    "headersSize",
                    "bodySize",
                ],
            );
            has_keys(
                &e["response"],
                &[
                    "status",
                    "statusText",
                    "httpVersion",
                    "cookies",
                    "headers",
                    "content",
                    "redirectURL",
                    "headersSize",
                    "bodySize",
                ],
            );
            has_keys(&e["response"]["content"], &["size", "mimeType"]);
            has_keys(&e["timings"], &["send", "wait", "receive"]);
            assert!(e["cache"].as_object().unwrap().is_empty());
        }
        let e = &entries[0];
        assert_eq!(e["startedDateTime"], "2023-11-14T22:13:20.123Z");
        assert_eq!(e["request"]["url"], format!("{BIN}/hooks?a=1&b=x+y&a=%2F"));
        assert_eq!(e["request"]["httpVersion"], "HTTP/1.1");
        assert_eq!(e["request"]["headersSize"], -1);
        assert_eq!(e["request"]["bodySize"], 2);
        assert_eq!(
            e["request"]["postData"],
            json!({"mimeType": "application/json", "text": "{}"})
        );
        assert_eq!(e["_hookbin"]["id"], "1");
        assert_eq!(e["_hookbin"]["remote_addr"], "10.0.0.1");
        assert_eq!(e["_hookbin"]["body_truncated"], false);
        assert!(entries[1]["request"].get("postData").is_none());
    }

    #[test]
    fn query_is_decoded_in_order_with_repeats() {
        let h = har(&[stored("1", &[], b"")], BIN, "v");
        assert_eq!(
            h["log"]["entries"][0]["request"]["queryString"],
            json!([
                {"name": "a", "value": "1"},
                {"name": "b", "value": "x y"},
                {"name": "a", "value": "/"},
            ])
        );
    }

    #[test]
    fn headers_keep_order_duplicates_and_exact_bytes() {
        let r = stored(
            "1",
            &[
                ("X-Dup", b"1"),
                ("Cookie", b"a=1; b=2=3"),
                ("X-Dup", b"2"),
                ("X-Obs", b"caf\xe9"),
                ("cookie", b"c"),
            ],
            b"",
        );
        let req = &har(&[r], BIN, "v")["log"]["entries"][0]["request"];
        assert_eq!(
            req["headers"],
            json!([
                {"name": "X-Dup", "value": "1"},
                {"name": "Cookie", "value": "a=1; b=2=3"},
                {"name": "X-Dup", "value": "2"},
                {"name": "X-Obs", "value": "caf\u{fffd}", "_valueBase64": "Y2Fm6Q=="},
                {"name": "cookie", "value": "c"},
            ])
        );
        assert_eq!(
            req["cookies"],
            json!([
                {"name": "a", "value": "1"},
                {"name": "b", "value": "2=3"},
                {"name": "c", "value": ""},
            ])
        );
    }

    #[test]
    fn binary_body_is_base64() {
        let r = stored(
            "1",
            &[("Content-Type", b"application/octet-stream")],
            b"\x00\xff\xfeA",
        );
        let pd = &har(&[r], BIN, "v")["log"]["entries"][0]["request"]["postData"];
        assert_eq!(
            *pd,
            json!({
                "mimeType": "application/octet-stream",
                "text": "AP/+QQ==",
                "encoding": "base64",
            })
        );
    }

    #[test]
    fn form_body_has_params_and_text() {
        let r = stored(
            "1",
            &[(
                "content-type",
                b"Application/X-WWW-Form-Urlencoded; charset=utf-8",
            )],
            b"a=1&b=x+y%21",
        );
        let pd = &har(&[r], BIN, "v")["log"]["entries"][0]["request"]["postData"];
        assert_eq!(pd["text"], "a=1&b=x+y%21");
        assert_eq!(
            pd["params"],
            json!([{"name": "a", "value": "1"}, {"name": "b", "value": "x y!"}])
        );
    }

    #[test]
    fn truncated_and_bare_bin_requests() {
        let mut r = stored("9", &[], b"abc");
        r.body_truncated = true;
        r.body_size = 10_000;
        r.subpath = String::new();
        r.query = String::new();
        let e = &har(&[r], &format!("{BIN}/"), "v")["log"]["entries"][0];
        assert_eq!(e["request"]["url"], BIN);
        assert_eq!(e["request"]["bodySize"], 10_000);
        assert_eq!(e["request"]["postData"]["text"], "abc");
        assert_eq!(e["_hookbin"]["body_truncated"], true);
        assert_eq!(e["_hookbin"]["body_size"], 10_000);
    }

    #[test]
    fn timestamps_are_rfc3339_ms_utc() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_700_000_000_007), "2023-11-14T22:13:20.007Z");
        assert_eq!(rfc3339_ms(i64::MAX), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn empty_bin_is_a_valid_log() {
        let h = har(&[], BIN, "v");
        assert_eq!(h["log"]["entries"], json!([]));
    }
}
