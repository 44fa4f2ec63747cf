//! The domain types every layer shares: a bin, a captured request, a header pair.
//!
//! These are plain data. Storage fills them, the JSON API, the pages, the curl/HAR renderers and
//! the signature verifier read them. Captured bytes stay bytes here (`Vec<u8>`): anything that needs
//! text decides for itself how to show bytes that are not UTF-8.

use crate::ids::RequestId;

/// One header line exactly as received: name as the sender spelled it, value as raw bytes
/// (HTTP allows obs-text, so a value need not be UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderPair {
    pub name: String,
    pub value: Vec<u8>,
}

impl HeaderPair {
    pub fn new(name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }

    /// The value as text; bytes that are not UTF-8 become U+FFFD.
    pub fn value_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.value)
    }
}

/// Finds the first header called `name` (ASCII case-insensitive, as HTTP requires).
pub fn find_header<'a>(headers: &'a [HeaderPair], name: &str) -> Option<&'a HeaderPair> {
    headers.iter().find(|h| h.name.eq_ignore_ascii_case(name))
}

/// Header lines in their stored form, one buffer (the `headers` column, `storage::headers`):
/// per line, the name's length (u32 LE), the name's bytes, the value's length (u32 LE), the
/// value's bytes. The capture path writes a request's lines straight into it as they are read
/// (`rawhead`), without a [`HeaderPair`] and its two allocations per line.
pub mod header_lines {
    /// Appends one line.
    pub fn push(blob: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        blob.extend_from_slice(&(name.len() as u32).to_le_bytes());
        blob.extend_from_slice(name);
        blob.extend_from_slice(&(value.len() as u32).to_le_bytes());
        blob.extend_from_slice(value);
    }

    /// The bytes [`push`] adds for a line.
    pub fn size(name: &[u8], value: &[u8]) -> usize {
        8 + name.len() + value.len()
    }

    /// The lines `lines()` walks, in one buffer allocated once, with room for `extra` bytes more
    /// (which the caller appends); walked twice, to size the buffer and to fill it.
    pub fn encode<'a, I>(lines: impl Fn() -> I, extra: usize) -> Vec<u8>
    where
        I: Iterator<Item = (&'a [u8], &'a [u8])>,
    {
        let size: usize = lines().map(|(n, v)| size(n, v)).sum();
        let mut blob = Vec::with_capacity(size + extra);
        for (name, value) in lines() {
            push(&mut blob, name, value);
        }
        blob
    }

    /// Takes the first line off `blob`: `(name, value)`, `None` when `blob` is empty or not in
    /// the layout (a damaged database row).
    pub fn next<'a>(blob: &mut &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        fn take<'a>(blob: &mut &'a [u8]) -> Option<&'a [u8]> {
            let (len, rest) = blob.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            if rest.len() < len {
                return None;
            }
            let (field, rest) = rest.split_at(len);
            *blob = rest;
            Some(field)
        }
        let mut rest = *blob;
        let name = take(&mut rest)?;
        let value = take(&mut rest)?;
        *blob = rest;
        Some((name, value))
    }

    /// The value of the first line called `name` (ASCII case-insensitive), as
    /// [`super::find_header`] finds it.
    pub fn find<'a>(mut blob: &'a [u8], name: &str) -> Option<&'a [u8]> {
        while let Some((n, v)) = next(&mut blob) {
            if n.eq_ignore_ascii_case(name.as_bytes()) {
                return Some(v);
            }
        }
        None
    }
}

/// A bin as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bin {
    pub id: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds; at or after this instant the bin is gone for every caller.
    pub expires_at: i64,
    /// The custom response as its canonical JSON text, or `None` for the default `200 ok`.
    pub response: Option<String>,
    pub request_count: u64,
    /// SHA-256 of a private bin's view token (`None`: a public bin). The token itself is never
    /// stored: it is shown once, when the bin is created.
    pub view_token_hash: Option<[u8; 32]>,
    /// The most requests the bin can hold whatever `--max-requests-per-bin` says now: on SQLite
    /// its ring, the cap at its first capture (`storage/sqlite/ring.rs`; a cap raised since
    /// applies once it is cleared). `None` when only the cap applies (PostgreSQL, or a bin
    /// without a capture yet).
    pub slots: Option<u64>,
}

impl Bin {
    pub fn is_private(&self) -> bool {
        self.view_token_hash.is_some()
    }

    /// How many requests the bin keeps at most under the cap `cap` now in force.
    pub fn cap(&self, cap: u64) -> u64 {
        self.slots.map_or(cap, |slots| slots.min(cap))
    }
}

/// A captured request, complete: what the writer stores and the API returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRequest {
    /// The row id (unique, increasing with arrival); [`RequestId::PENDING`] until committed.
    pub id: RequestId,
    pub bin_id: String,
    /// As received, including non-standard methods such as `PROPFIND`.
    pub method: String,
    /// The path as received (percent-encoding kept), without the query: `/r/{bin}/hooks/a%20b`.
    pub path: String,
    /// The part of `path` after `/r/{bin}`: `""` for the bare bin URL, else starting with `/`.
    pub subpath: String,
    /// The raw query string without `?`; `""` when there was none.
    pub query: String,
    /// Every header line in received order, duplicates kept, names spelled as sent.
    pub headers: Vec<HeaderPair>,
    /// The body bytes exactly as received (after de-chunking; never decoded or decompressed).
    /// When `body_truncated`, only the first `--max-body-bytes` bytes.
    pub body: Vec<u8>,
    /// The full body size: `body.len()`, or for a truncated body the declared Content-Length
    /// (or the bytes received) as API.md describes.
    pub body_size: u64,
    pub body_truncated: bool,
    /// Client IP address, no port.
    pub remote_addr: String,
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub http_version: String,
    /// Unix milliseconds.
    pub received_at: i64,
    /// What hookbin answered, as sent at capture time; `None` for requests captured before
    /// hookbin kept it (schema version 5).
    pub response: Option<ResponseRecord>,
}

/// The answer hookbin sent to a capture: status, the header lines it wrote (in order), the body
/// size, and the delay it waited before answering.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ResponseRecord {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body_size: u64,
    pub delay_ms: u64,
}

impl ResponseRecord {
    /// The stored form (a JSON object, the same shape as the API's).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// `None` for text that is not a stored record.
    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The header lines as sent to request `id`: the stored ones, then `x-request-id` (set once
    /// the id was known) and the `content-length` hyper writes last for a body of known size
    /// (none for statuses that have no body).
    pub fn headers_as_sent(&self, id: RequestId) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        headers.push(("x-request-id".to_owned(), id.to_string()));
        let bodiless = self.status < 200 || self.status == 204 || self.status == 304;
        if !bodiless
            && !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        {
            headers.push(("content-length".to_owned(), self.body_size.to_string()));
        }
        headers
    }
}

impl StoredRequest {
    /// The first `Content-Type` value as text, if any.
    pub fn content_type(&self) -> Option<String> {
        find_header(&self.headers, "content-type").map(|h| h.value_lossy().into_owned())
    }
}

#[cfg(test)]
impl Bin {
    /// For unit tests: a public bin made at 0 that expires at `expires_at`, with nothing in it.
    pub fn sample(id: &str, expires_at: i64) -> Bin {
        Bin {
            id: id.into(),
            created_at: 0,
            expires_at,
            response: None,
            request_count: 0,
            view_token_hash: None,
            slots: None,
        }
    }
}

#[cfg(test)]
impl StoredRequest {
    /// A POST captured at `/r/{bin}{subpath}?{query}`, for unit tests; the other fields are plain
    /// defaults that a test overrides with struct update syntax.
    pub fn sample<V: AsRef<[u8]>>(
        bin: &str,
        subpath: &str,
        query: &str,
        headers: &[(&str, V)],
        body: &[u8],
    ) -> Self {
        StoredRequest {
            id: RequestId::from_row(1),
            bin_id: bin.into(),
            method: "POST".into(),
            path: format!("/r/{bin}{subpath}"),
            subpath: subpath.into(),
            query: query.into(),
            headers: headers
                .iter()
                .map(|(n, v)| HeaderPair::new(*n, v.as_ref()))
                .collect(),
            body: body.to_vec(),
            body_size: body.len() as u64,
            body_truncated: false,
            remote_addr: "127.0.0.1".into(),
            http_version: "HTTP/1.1".into(),
            received_at: 0,
            response: None,
        }
    }
}

/// What the request list shows: a [`StoredRequest`] without headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSummary {
    pub id: RequestId,
    pub bin_id: String,
    pub method: String,
    pub path: String,
    pub subpath: String,
    pub query: String,
    pub content_type: Option<String>,
    pub body_size: u64,
    pub body_truncated: bool,
    pub remote_addr: String,
    pub received_at: i64,
}

#[cfg(test)]
impl RequestSummary {
    /// For unit tests: an empty POST to `/r/{bin}` stored as request `id`.
    pub fn sample(bin: &str, id: i64) -> Self {
        RequestSummary {
            id: RequestId::from_row(id),
            bin_id: bin.into(),
            method: "POST".into(),
            path: format!("/r/{bin}"),
            subpath: String::new(),
            query: String::new(),
            content_type: None,
            body_size: 0,
            body_truncated: false,
            remote_addr: "127.0.0.1".into(),
            received_at: 0,
        }
    }
}

impl From<&StoredRequest> for RequestSummary {
    fn from(r: &StoredRequest) -> Self {
        Self {
            id: r.id,
            bin_id: r.bin_id.clone(),
            method: r.method.clone(),
            path: r.path.clone(),
            subpath: r.subpath.clone(),
            query: r.query.clone(),
            content_type: r.content_type(),
            body_size: r.body_size,
            body_truncated: r.body_truncated,
            remote_addr: r.remote_addr.clone(),
            received_at: r.received_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_keep_order_case_and_bytes_and_find_the_first() {
        let mut blob = Vec::new();
        let lines: [(&[u8], &[u8]); 4] = [
            (b"X-A", b"1"),
            (b"Content-TYPE", b"text/first"),
            (b"content-type", b"text/second"),
            (b"Bin", b"\xff\x00\n"),
        ];
        for (name, value) in lines {
            header_lines::push(&mut blob, name, value);
        }
        let size: usize = lines.iter().map(|(n, v)| header_lines::size(n, v)).sum();
        assert_eq!(blob.len(), size);
        let encoded = header_lines::encode(|| lines.iter().copied(), 7);
        assert_eq!(encoded, blob, "encode is push line by line");
        assert!(encoded.capacity() >= size + 7);
        let mut rest = blob.as_slice();
        for expected in lines {
            assert_eq!(header_lines::next(&mut rest), Some(expected));
        }
        assert_eq!(header_lines::next(&mut rest), None);
        assert_eq!(
            header_lines::find(&blob, "content-type"),
            Some(&b"text/first"[..])
        );
        assert_eq!(header_lines::find(&blob, "x-b"), None);
        // A damaged blob ends the lines where it stops making sense, and is left as it was.
        let mut cut = &blob[..blob.len() - 1];
        let mut n = 0;
        while header_lines::next(&mut cut).is_some() {
            n += 1;
        }
        assert_eq!(
            (n, cut.len()),
            (3, header_lines::size(b"Bin", b"\xff\x00\n") - 1)
        );
    }
}
