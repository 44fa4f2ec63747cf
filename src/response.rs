//! Custom responses: what a bin answers instead of the default `200 ok`.
//!
//! A spec is validated once, when it is set, and stored as JSON. Captures then only copy it into
//! a response, so a bad spec can never break a capture.

use serde::Serialize;
use serde_json::Value;

use crate::wire::is_hop_by_hop;

/// Longest body a custom response may carry.
pub const MAX_BODY: usize = 64 * 1024;
/// Longest delay before answering, in milliseconds.
pub const MAX_DELAY_MS: u64 = 30_000;

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
    /// Validates a spec from JSON. Missing fields take defaults: status 200, no headers, empty
    /// body, no delay. `prefix` names the spec in error messages (`response.` inside a bin).
    pub fn from_json(value: &Value, prefix: &str) -> Result<Self, SpecError> {
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
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| header(item, &field(&format!("headers[{i}]"))))
                .collect::<Result<_, _>>()?,
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

    /// Reads a spec back from the database (validated again: the file may be old or edited).
    pub fn from_stored(json: &str) -> Result<Self, SpecError> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| err("response", e.to_string()))?;
        Self::from_json(&value, "")
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
    // The server owns the connection (hop-by-hop headers) and the body framing.
    if is_hop_by_hop(name) || name.eq_ignore_ascii_case("content-length") {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(v: Value) -> String {
        ResponseSpec::from_json(&v, "response.").unwrap_err().field
    }

    #[test]
    fn defaults_and_round_trip() {
        let spec = ResponseSpec::from_json(&json!({}), "").unwrap();
        assert_eq!(spec.status, 200);
        let spec = ResponseSpec::from_json(
            &json!({"status": 429, "headers": [["Retry-After", "5"]], "body": "slow down", "delay_ms": 10}),
            "",
        )
        .unwrap();
        assert_eq!(ResponseSpec::from_stored(&spec.to_json()).unwrap(), spec);
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
        assert!(ResponseSpec::from_json(&ok, "").is_ok());
        assert!(ResponseSpec::from_json(&json!({"status": 100}), "").is_ok());
    }
}
