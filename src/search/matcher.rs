//! Evaluating a [`Query`] against one stored request.
//!
//! Built to scan a full bin (1000 requests of 10 KiB) fast: needles are folded once per query,
//! haystacks are folded a chunk at a time into a stack buffer and searched with memchr's SIMD
//! substring finder (no copies on the heap), terms that never read the body run first (one miss
//! ends the request), and a body is decoded only when a term needs it and the request has a
//! `Content-Encoding`, at most once per request.

use std::borrow::Cow;

use super::query::{Field, Needle, Query, Term};
use crate::content::coding::Outcome;
use crate::model::StoredRequest;

impl Query {
    /// Whether `r` matches every term. `decode_limit` bounds the decoded body searched by
    /// `body:` and bare terms (`--max-decoded-bytes`); past it the rest is not searched.
    pub fn matches(&self, r: &StoredRequest, decode_limit: usize) -> bool {
        let mut body = LazyBody {
            request: r,
            limit: decode_limit,
            bytes: None,
        };
        // Terms that never need the body first: cheap, and one miss ends the request.
        self.terms
            .iter()
            .filter(|t| !t.reads_body())
            .all(|t| t.holds(r, &mut body))
            && self
                .terms
                .iter()
                .filter(|t| t.reads_body())
                .all(|t| t.holds(r, &mut body))
    }
}

impl Term {
    fn holds(&self, r: &StoredRequest, body: &mut LazyBody<'_>) -> bool {
        let hit = match &self.field {
            Field::Method(m) => r.method.eq_ignore_ascii_case(m),
            Field::Path(n) => in_path(n, r),
            Field::Header { name, value } => r.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case(name)
                    && value.as_ref().is_none_or(|v| v.is_in(&h.value))
            }),
            Field::Body(n) => n.is_in(body.get()),
            Field::Any(n) => {
                r.method.eq_ignore_ascii_case(n.text())
                    || in_path(n, r)
                    || r.headers
                        .iter()
                        .any(|h| n.is_in(h.name.as_bytes()) || n.is_in(&h.value))
                    || n.is_in(body.get())
            }
        };
        hit != self.negated
    }
}

/// The body as search sees it, made on first use.
struct LazyBody<'r> {
    request: &'r StoredRequest,
    limit: usize,
    bytes: Option<Cow<'r, [u8]>>,
}

impl LazyBody<'_> {
    fn get(&mut self) -> &[u8] {
        self.bytes
            .get_or_insert_with(|| searchable_body(self.request, self.limit))
    }
}

/// The body search looks in: after undoing `Content-Encoding` (at most `limit` bytes; as far as
/// it decodes when damaged), or the stored bytes when there is no encoding or nothing decodes
/// at all (an unknown coding, or a header that does not describe the body).
pub fn searchable_body(r: &StoredRequest, limit: usize) -> Cow<'_, [u8]> {
    let decoded = crate::content::decoded_body(r, limit);
    match decoded.outcome {
        Outcome::Failed(_) if decoded.bytes.is_empty() => Cow::Borrowed(&r.body),
        _ => decoded.bytes,
    }
}

/// `n` in `path?query` as received (the query part only when there is one).
fn in_path(n: &Needle, r: &StoredRequest) -> bool {
    if r.query.is_empty() {
        return n.is_in(r.path.as_bytes());
    }
    if n.is_in(r.path.as_bytes()) || n.is_in(r.query.as_bytes()) {
        return true;
    }
    // A match across the `?` needs both sides joined; short ones are joined on the stack.
    let len = r.path.len() + 1 + r.query.len();
    let mut stack = [0u8; 1024];
    let mut heap = Vec::new();
    let joined: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    joined[..r.path.len()].copy_from_slice(r.path.as_bytes());
    joined[r.path.len()] = b'?';
    joined[r.path.len() + 1..].copy_from_slice(r.query.as_bytes());
    n.is_in(joined)
}

/// Haystack bytes folded per round: big enough that memchr's finder runs at full speed, small
/// enough to live on the stack.
const CHUNK: usize = 4096;
/// Haystacks up to this long are compared in place (header values, methods): folding a copy
/// costs more than it saves there.
const SMALL: usize = 64;

impl Needle {
    /// Whether the needle occurs in `hay`, ASCII case-insensitively.
    pub fn is_in(&self, hay: &[u8]) -> bool {
        let n = self.folded.len();
        if n == 0 {
            return true;
        }
        if hay.len() < n {
            return false;
        }
        if hay.len() <= SMALL || n > CHUNK / 2 {
            return hay.windows(n).any(|w| w.eq_ignore_ascii_case(&self.folded));
        }
        let mut buf = [0u8; CHUNK];
        let mut start = 0;
        loop {
            let end = (start + CHUNK).min(hay.len());
            let chunk = &mut buf[..end - start];
            chunk.copy_from_slice(&hay[start..end]);
            chunk.make_ascii_lowercase();
            if self.finder.find(chunk).is_some() {
                return true;
            }
            if end == hay.len() {
                return false;
            }
            // Overlap by one byte less than the needle, so a match across the border is seen.
            start = end - (n - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::parse;
    use proptest::prelude::*;

    const LIMIT: usize = 1 << 20;

    fn request() -> StoredRequest {
        StoredRequest {
            method: "PATCH".into(),
            ..StoredRequest::sample(
                "0123456789abcdefghij",
                "/hooks/Stripe",
                "event=Invoice.Paid&x=%20",
                &[
                    ("Content-Type", "application/json".as_bytes()),
                    ("X-Signature", b"t=1,v1=ABCdef"),
                    ("X-Signature", b"second"),
                    ("X-Bytes", b"\xff\xfeRaw"),
                ],
                "{\"customer\": \"Jürgen\", \"amount\": 4200}".as_bytes(),
            )
        }
    }

    fn hits(q: &str, r: &StoredRequest) -> bool {
        parse(q).unwrap().matches(r, LIMIT)
    }

    #[test]
    fn method_is_equal_in_any_case() {
        let r = request();
        assert!(hits("method:patch", &r));
        assert!(hits("METHOD:PaTcH", &r));
        assert!(!hits("method:PAT", &r), "equal, not a substring");
        assert!(hits("-method:GET", &r));
        assert!(!hits("-method:patch", &r));
    }

    #[test]
    fn path_covers_path_and_query_as_received() {
        let r = request();
        assert!(hits("path:/HOOKS/stripe", &r));
        assert!(hits("path:invoice.paid", &r));
        assert!(hits("path:stripe?event", &r), "across the ?");
        assert!(hits("path:%20", &r), "percent-encoding kept");
        assert!(!hits("path:\" \"", &r), "not decoded");
        assert!(hits("path:/r/0123456789abcdefghij/hooks", &r));
        assert!(!hits("path:customer", &r), "not the body");
        let mut no_query = request();
        no_query.query.clear();
        assert!(!hits("path:?", &no_query));
        let mut long = request();
        long.path = format!("/r/b/{}", "a".repeat(2000));
        long.query = format!("{}z=1", "q".repeat(2000));
        assert!(hits("path:aaa?qqq", &long), "joined on the heap when long");
    }

    #[test]
    fn header_presence_and_values() {
        let r = request();
        assert!(hits("header:x-signature", &r));
        assert!(hits("header:X-SIGNATURE=abcDEF", &r));
        assert!(hits("header:x-signature=second", &r), "any of its values");
        assert!(
            !hits("header:x-signature=application", &r),
            "only its own values"
        );
        assert!(
            !hits("header:X-Sig", &r),
            "the name is equal, not a substring"
        );
        assert!(
            hits("header:x-bytes=raw", &r),
            "bytes that are not UTF-8 around it"
        );
        assert!(hits("-header:authorization", &r));
        assert!(hits("header:x-signature=", &r));
    }

    #[test]
    fn body_and_bare_terms() {
        let r = request();
        assert!(hits("body:jürgen", &r));
        assert!(!hits("body:JÜRGEN", &r), "only ASCII folds");
        assert!(hits("body:\"amount\\\": 4200\"", &r));
        assert!(!hits("body:stripe", &r), "not the path");
        // A bare term looks everywhere.
        for q in [
            "patch",
            "stripe",
            "invoice.paid",
            "x-signature",
            "ABCDEF",
            "jürgen",
        ] {
            assert!(hits(q, &r), "{q}");
        }
        assert!(!hits("nowhere", &r));
        assert!(hits("-nowhere", &r));
        assert!(!hits("-jürgen", &r));
        // Every term must match.
        assert!(hits("method:patch stripe -nowhere body:4200", &r));
        assert!(!hits("method:patch stripe nowhere", &r));
        assert!(hits("", &r), "no terms: everything");
    }

    /// `data` gzipped by flate2 (the decoder tests use the real tools; here only search is
    /// under test).
    fn gzipped(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn encoded_bodies_are_searched_decoded() {
        let mut r = request();
        r.body = gzipped(b"{\"status\": \"Delivered\"}");
        r.headers
            .push(crate::model::HeaderPair::new("Content-Encoding", "gzip"));
        assert!(hits("body:delivered", &r));
        assert!(hits("delivered", &r));
        assert!(!hits("-body:delivered", &r));
        // Within the limit only.
        assert!(!parse("body:delivered").unwrap().matches(&r, 5));
        // Not gzip after all: the stored bytes are searched.
        r.body = b"plain Delivered".to_vec();
        assert!(hits("body:delivered", &r));
        // An unknown coding: the stored bytes too.
        r.headers.last_mut().unwrap().value = b"compress".to_vec();
        assert!(hits("body:delivered", &r));
    }

    #[test]
    fn matches_across_chunk_borders() {
        let mut r = request();
        let mut body = vec![b'.'; 3 * CHUNK];
        let at = CHUNK - 3;
        body[at..at + 7].copy_from_slice(b"NeEdLe!");
        r.body = body;
        assert!(hits("body:needle!", &r));
        assert!(!hits("body:needles", &r));
        assert!(Needle::new("x").is_in(&[b'X'; 10_000]));
        assert!(!Needle::new("xy").is_in(&[b'X'; 10_000]));
        let long = "ab".repeat(CHUNK);
        assert!(Needle::new(long.to_ascii_uppercase()).is_in(format!("_{long}_").as_bytes()));
    }

    /// `len` bytes from `alphabet`, chosen by a small PRNG from `seed` (generating big
    /// haystacks byte by byte through proptest is what makes such tests slow).
    fn haystack(seed: u64, len: usize, alphabet: &[u8]) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    proptest! {
        #[test]
        fn a_slice_of_the_body_in_any_case_is_found(
            seed in any::<u64>(),
            size in 1..(3 * CHUNK),
            at in any::<proptest::sample::Index>(),
            len in 1usize..40,
            flip in any::<u64>(),
        ) {
            let body = haystack(seed, size, b"aAbB{}\"\":, 0123xyzXYZ\r\n\t");
            let start = at.index(body.len());
            let end = (start + len).min(body.len());
            let mut wanted = body[start..end].to_vec();
            for (i, b) in wanted.iter_mut().enumerate() {
                if flip >> (i % 64) & 1 == 1 {
                    *b = if b.is_ascii_lowercase() { b.to_ascii_uppercase() } else { b.to_ascii_lowercase() };
                }
            }
            let n = Needle::new(String::from_utf8(wanted).unwrap());
            prop_assert!(n.is_in(&body));
        }

        #[test]
        fn is_in_agrees_with_a_naive_search(
            seed in any::<u64>(),
            size in 0..(2 * CHUNK + 10),
            needle in "[aAbBc]{1,6}",
        ) {
            let hay = haystack(seed, size, b"aBc");
            let naive = hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()));
            prop_assert_eq!(Needle::new(needle).is_in(&hay), naive);
        }
    }
}
