//! Twilio: `X-Twilio-Signature: <base64>`, HMAC-SHA1 keyed by the auth token (as text) over the
//! full URL Twilio requested followed by every POST parameter, sorted by name, as name + value
//! (decoded). No timestamp. Rules from twilio-python's `RequestValidator` (9.13.0):
//! - only an `application/x-www-form-urlencoded` body contributes parameters;
//! - names sort by code point; a repeated name's values sort too, and identical name/value pairs
//!   count once (it iterates `sorted(set(values))`);
//! - another body can be covered by a `bodySHA256=<hex SHA-256 of the raw body>` query
//!   parameter, in which case the HMAC covers the URL alone.

use super::crypto::{Algo, decode_base64, encode_base64, hmac};
use super::{Header, Message, Role};

pub(crate) const HEADER: &str = "X-Twilio-Signature";
pub(crate) const FORM: &str = "application/x-www-form-urlencoded";
/// The query parameter that carries the SHA-256 of a body that is not a form.
pub(crate) const BODY_HASH_PARAM: &str = "bodySHA256";

/// Whether a Content-Type is a form (its media type, parameters ignored).
pub(crate) fn is_form(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case(FORM))
    })
}

/// The decoded `application/x-www-form-urlencoded` pairs of a raw body, in body order.
pub(crate) fn form_params(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The parameters a request signs: its form parameters, or none for any other body.
pub(crate) fn signed_params(content_type: Option<&str>, body: &[u8]) -> Vec<(String, String)> {
    if is_form(content_type) {
        form_params(body)
    } else {
        Vec::new()
    }
}

/// The URL followed by the sorted, de-duplicated `name + value` pairs.
pub(crate) fn string_to_sign(url: &str, params: &[(String, String)]) -> String {
    let mut pairs: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // Sorting the (name, value) tuples sorts names, then each name's values, by code point
    // (byte order of UTF-8 is code-point order).
    pairs.sort_unstable();
    pairs.dedup();
    let mut signed = url.to_owned();
    for (name, value) in pairs {
        signed.push_str(name);
        signed.push_str(value);
    }
    signed
}

/// The HMAC over `url` and `params`.
pub(crate) fn mac(key: &[u8], url: &str, params: &[(String, String)]) -> Vec<u8> {
    hmac(Algo::Sha1, key, &[string_to_sign(url, params).as_bytes()])
}

pub(crate) fn decode_signature(value: &str) -> Option<Vec<u8>> {
    decode_base64(value)
}

/// Signs `msg.url` as given, with the form parameters of a form body.
pub(crate) fn sign(key: &[u8], msg: &Message<'_>) -> Vec<Header> {
    let params = signed_params(msg.content_type, msg.body);
    let value = encode_base64(&mac(key, msg.url, &params));
    vec![Header::new(HEADER, value, Role::Signature)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_to_sign_sorts_names_and_values_and_drops_repeats() {
        let params = [("b", "2"), ("a", "z"), ("B", "1"), ("a", "y"), ("a", "z")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()));
        assert_eq!(string_to_sign("U", &params), "UB1ayazb2");
    }

    #[test]
    fn only_form_bodies_give_parameters() {
        let form = Some("application/x-www-form-urlencoded; charset=utf-8");
        assert_eq!(
            signed_params(form, b"a=1+2&b=%2B"),
            [
                ("a".to_owned(), "1 2".to_owned()),
                ("b".to_owned(), "+".to_owned())
            ]
        );
        assert!(signed_params(Some("application/json"), b"a=1").is_empty());
        assert!(signed_params(None, b"a=1").is_empty());
    }

    #[test]
    fn published_vector_signs_as_documented() {
        let body = b"CallSid=CA1234567890ABCDE&Digits=1234&From=%2B14158675309&To=%2B18005551212\
                     &Caller=%2B14158675309";
        let msg = Message {
            id: "",
            timestamp: 0,
            body,
            url: "https://mycompany.com/myapp.php?foo=1&bar=2",
            content_type: Some(FORM),
        };
        assert_eq!(
            sign(b"12345", &msg)[0].value,
            "RSOYDt4T1cUTdK1PDd93/VVr8B8="
        );
    }
}
