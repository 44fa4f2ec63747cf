//! The JSON shapes of API.md: Bin, Summary, Request.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::clock::rfc3339_ms;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;
use crate::web::query_params;

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
        "private": bin.is_private(),
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

/// `decode_limit` (`--max-decoded-bytes`) bounds the decoding of an encoded multipart body.
pub fn request(r: &StoredRequest, decode_limit: usize) -> Value {
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
        "content_encoding": crate::content::content_encoding(&r.headers),
        "response": r.response.as_ref().map(|resp| json!({
            "status": resp.status,
            "headers": resp.headers_as_sent(r.id).into_iter().map(|(n, v)| [n, v]).collect::<Vec<_>>(),
            "body_size": resp.body_size,
            "delay_ms": resp.delay_ms,
        })),
    });
    if let (Value::Object(map), Value::Object(extra)) = (&mut value, extra) {
        map.extend(extra);
        if let Some(parts) = parts(r, decode_limit) {
            map.insert("parts".into(), parts);
        }
    }
    value
}

/// `parts` of a `multipart/*` request (API.md, "Decoded bodies"), `None` for other types; a
/// multipart body without a boundary or without parts has none.
fn parts(r: &StoredRequest, decode_limit: usize) -> Option<Value> {
    let media = crate::content::media_type(&r.content_type()?);
    if !media.starts_with("multipart/") {
        return None;
    }
    let Some((_, multipart)) = crate::content::request_parts(r, decode_limit) else {
        return Some(json!([]));
    };
    let parts: Vec<Value> = multipart
        .parts
        .iter()
        .map(|p| {
            let headers: Vec<[String; 2]> = p
                .headers
                .iter()
                .map(|h| [h.name.clone(), h.value_lossy().into_owned()])
                .collect();
            json!({
                "name": p.name,
                "filename": p.filename,
                "content_type": p.content_type,
                "size": p.size(),
                "headers": headers,
                "complete": p.complete,
            })
        })
        .collect();
    Some(Value::Array(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_has_content_encoding_and_multipart_parts() {
        let body = b"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"<x>.png\"\r\n\
                     Content-Type: image/png\r\n\r\n\x89PNG\r\n--b\r\n\r\nplain\r\n--b--\r\n";
        let r = StoredRequest::sample(
            "0123456789abcdefghij",
            "",
            "",
            &[("Content-Type", "multipart/form-data; boundary=b")],
            body,
        );
        let v = request(&r, 1 << 20);
        assert_eq!(v["content_encoding"], Value::Null);
        assert_eq!(
            v["parts"],
            json!([
                {"name": "f", "filename": "<x>.png", "content_type": "image/png", "size": 4,
                 "headers": [["Content-Disposition", "form-data; name=\"f\"; filename=\"<x>.png\""],
                             ["Content-Type", "image/png"]],
                 "complete": true},
                {"name": null, "filename": null, "content_type": null, "size": 5, "headers": [],
                 "complete": true},
            ])
        );
        let r = StoredRequest::sample(
            "0123456789abcdefghij",
            "",
            "",
            &[
                ("Content-Type", "multipart/mixed"),
                ("Content-Encoding", "gzip"),
                ("content-encoding", "br"),
            ],
            b"",
        );
        let v = request(&r, 1 << 20);
        assert_eq!(v["parts"], json!([]), "multipart without a boundary");
        assert_eq!(v["content_encoding"], "gzip, br");
        let r = StoredRequest::sample("0123456789abcdefghij", "", "", &[("A", "b")], b"x");
        assert!(request(&r, 1).get("parts").is_none(), "only for multipart");
    }

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
