//! Pure readings of a captured body, for the views, the API and search: undoing its
//! `Content-Encoding` ([`coding`]), splitting a `multipart/*` body into parts ([`multipart`]),
//! pretty-printing XML ([`xml`]).
//!
//! No I/O and no HTTP types: bytes and header values in, plain data out. The stored body is
//! never changed; everything here is a reading of it.

pub mod coding;
pub mod multipart;
pub mod xml;

use std::borrow::Cow;

use crate::model::{HeaderPair, StoredRequest};

/// The media type of a `Content-Type` value, lowercased, without parameters:
/// `Multipart/Form-Data; boundary=x` gives `multipart/form-data`.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether `media` (as [`media_type`] gives it) is XML: `application/xml`, `text/xml` or a
/// `+xml` type such as `image/svg+xml`.
pub fn is_xml_type(media: &str) -> bool {
    media == "application/xml" || media == "text/xml" || media.ends_with("+xml")
}

/// The value of parameter `name` (ASCII case-insensitive) in a header value such as
/// `Content-Type` or `Content-Disposition` (RFC 9110 §5.6.6): a token, or a quoted string with
/// its backslash escapes undone. `None` when absent; an unterminated quoted string runs to the
/// end of the value rather than failing (clients get this wrong, and the value is still useful).
pub fn parameter<'a>(value: &'a str, name: &str) -> Option<Cow<'a, str>> {
    let mut rest = value.split_once(';')?.1;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ';']);
        if rest.is_empty() {
            return None;
        }
        let (key, after) = match rest.find(['=', ';']) {
            Some(i) if rest.as_bytes()[i] == b'=' => (&rest[..i], &rest[i + 1..]),
            // A parameter without a value: skip it.
            Some(i) => {
                rest = &rest[i..];
                continue;
            }
            None => return None,
        };
        let after = after.trim_start_matches([' ', '\t']);
        let (found, next) = if let Some(quoted) = after.strip_prefix('"') {
            let (text, next) = quoted_string(quoted);
            (text, next)
        } else {
            let end = after.find(';').unwrap_or(after.len());
            (Cow::Borrowed(after[..end].trim_end()), &after[end..])
        };
        if key.trim().eq_ignore_ascii_case(name) {
            return Some(found);
        }
        rest = next;
    }
}

/// The text of a quoted string whose opening quote is already consumed, and what follows its
/// closing quote.
fn quoted_string(s: &str) -> (Cow<'_, str>, &str) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut owned: Option<String> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let text = owned.map_or(Cow::Borrowed(&s[..i]), Cow::Owned);
                return (text, &s[i + 1..]);
            }
            b'\\' if i + 1 < bytes.len() => {
                let o = owned.get_or_insert_with(|| s[..i].to_owned());
                // The escaped character may be multi-byte: copy it whole.
                let c = s[i + 1..].chars().next().unwrap_or('\\');
                o.push(c);
                i += 1 + c.len_utf8();
            }
            _ => {
                let c = s[i..].chars().next().unwrap_or('\u{fffd}');
                if let Some(o) = owned.as_mut() {
                    o.push(c);
                }
                i += c.len_utf8();
            }
        }
    }
    (owned.map_or(Cow::Borrowed(s), Cow::Owned), "")
}

/// The request's `Content-Encoding` as one list: several header lines are joined with `", "`
/// (RFC 9110 §5.3 makes them equivalent). `None` when the request has none.
pub fn content_encoding(headers: &[HeaderPair]) -> Option<String> {
    let mut joined: Option<String> = None;
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-encoding"))
    {
        let value = h.value_lossy();
        match joined.as_mut() {
            None => joined = Some(value.into_owned()),
            Some(j) => {
                j.push_str(", ");
                j.push_str(&value);
            }
        }
    }
    joined
}

/// The body with its `Content-Encoding` undone, at most `limit` bytes of it (see
/// [`coding::decode`]); the stored bytes themselves when the request has no encoding.
pub fn decoded_body(r: &StoredRequest, limit: usize) -> coding::Decoded<'_> {
    coding::decode(&r.body, content_encoding(&r.headers).as_deref(), limit)
}

/// The parts of a `multipart/*` request, read from its body after undoing `Content-Encoding`
/// (so part byte ranges index [`coding::Decoded::bytes`]); `None` when the request is not
/// `multipart/*` or names no boundary.
pub fn request_parts(
    r: &StoredRequest,
    limit: usize,
) -> Option<(coding::Decoded<'_>, multipart::Multipart)> {
    let content_type = r.content_type()?;
    let boundary = multipart::boundary(&content_type)?;
    let decoded = decoded_body(r, limit);
    let parts = multipart::parse(&decoded.bytes, &boundary);
    Some((decoded, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types() {
        assert_eq!(
            media_type("Multipart/Form-Data; boundary=x"),
            "multipart/form-data"
        );
        assert_eq!(media_type("  text/plain  "), "text/plain");
        assert_eq!(media_type(""), "");
        assert!(is_xml_type("application/xml"));
        assert!(is_xml_type("text/xml"));
        assert!(is_xml_type("image/svg+xml"));
        assert!(!is_xml_type("application/json"));
    }

    #[test]
    fn parameters_tokens_and_quoted_strings() {
        let ct = "multipart/form-data; charset=utf-8; Boundary=\"a b\\\"c\"; x";
        assert_eq!(parameter(ct, "boundary").unwrap(), "a b\"c");
        assert_eq!(parameter(ct, "charset").unwrap(), "utf-8");
        assert_eq!(parameter(ct, "x"), None);
        assert_eq!(parameter("text/plain", "charset"), None);
        assert_eq!(
            parameter("form-data; name=\"f\"; filename=\"ü.png\"", "filename").unwrap(),
            "ü.png"
        );
        assert_eq!(
            parameter("form-data; name=\"é\\ü\"", "name").unwrap(),
            "éü",
            "a multi-byte escaped character"
        );
        // An unterminated quote runs to the end; a trailing backslash is kept.
        assert_eq!(parameter("a; b=\"xy", "b").unwrap(), "xy");
        assert_eq!(parameter("a; b=\"xy\\", "b").unwrap(), "xy\\");
        assert_eq!(parameter("a; b = 1 ; c=2", "c").unwrap(), "2");
        assert_eq!(parameter("a; b = 1 ; c=2", "b").unwrap(), "1");
        assert_eq!(parameter("a;;; b=1", "b").unwrap(), "1");
        assert_eq!(parameter("a; b", "b"), None);
    }

    #[test]
    fn content_encoding_joins_header_lines() {
        let h = |v: &str| HeaderPair::new("Content-Encoding", v);
        assert_eq!(content_encoding(&[]), None);
        assert_eq!(content_encoding(&[h("gzip")]).unwrap(), "gzip");
        assert_eq!(
            content_encoding(&[h("gzip"), HeaderPair::new("X", "y"), h("br")]).unwrap(),
            "gzip, br"
        );
    }
}
