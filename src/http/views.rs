//! The JSON shapes of API.md: Bin, Summary, Request.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::clock::rfc3339_ms;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;

/// `base` is the public base URL, `capture_base` that of capture URLs (the same unless
/// `--capture-url` is set), both without a trailing slash.
pub fn bin(bin: &Bin, base: &str, capture_base: &str) -> Value {
    let response = bin
        .response
        .as_deref()
        .and_then(|json| ResponseSpec::from_stored(json, &bin.id).ok())
        .map(|spec| spec.to_value());
    json!({
        "id": bin.id,
        "url": format!("{capture_base}/r/{}", bin.id),
        "inspect_url": format!("{base}/bins/{}", bin.id),
        "created_at": rfc3339_ms(bin.created_at),
        "expires_at": rfc3339_ms(bin.expires_at),
        "request_count": bin.request_count,
        "response": response,
    })
}

pub fn summary(s: &RequestSummary) -> Value {
    json!({
        "id": s.id,
        "method": s.method,
        "path": s.path,
        "subpath": s.subpath,
        "query": s.query,
        "content_type": s.content_type,
        "body_size": s.body_size,
        "body_truncated": s.body_truncated,
        "remote_addr": s.remote_addr,
        "received_at": rfc3339_ms(s.received_at),
    })
}

/// Query parameters decoded as application/x-www-form-urlencoded (`+` is a space), in order.
pub fn query_params(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub fn request(r: &StoredRequest) -> Value {
    let mut value = summary(&RequestSummary::from(r));
    let headers: Vec<[String; 2]> = r
        .headers
        .iter()
        .map(|h| [h.name.clone(), h.value_lossy().into_owned()])
        .collect();
    // Additive to API.md's Request: the exact value bytes, which `headers` shows lossily when a
    // value is not UTF-8 (obs-text). `hookbin forward` replays from this.
    let headers_base64: Vec<[String; 2]> = r
        .headers
        .iter()
        .map(|h| [h.name.clone(), STANDARD.encode(&h.value)])
        .collect();
    let params: Vec<[String; 2]> = query_params(&r.query)
        .into_iter()
        .map(|(k, v)| [k, v])
        .collect();
    let extra = json!({
        "http_version": r.http_version,
        "query_params": params,
        "headers": headers,
        "headers_base64": headers_base64,
        "body_base64": STANDARD.encode(&r.body),
        "body_text": std::str::from_utf8(&r.body).ok(),
        "body_truncated": r.body_truncated,
    });
    if let (Value::Object(map), Value::Object(extra)) = (&mut value, extra) {
        map.extend(extra);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_decode_plus_and_keep_repeats() {
        assert_eq!(
            query_params("a=1+2&b=%26&a=3&flag"),
            vec![
                ("a".into(), "1 2".into()),
                ("b".into(), "&".into()),
                ("a".into(), "3".into()),
                ("flag".into(), "".into())
            ]
        );
    }
}
