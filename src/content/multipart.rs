//! Splitting a `multipart/*` body (RFC 2046 §5.1, RFC 7578 for `multipart/form-data`) into its
//! parts, each with its headers and the byte range of its content in the body, so a part's
//! bytes can be served exactly as they were sent.
//!
//! Why not a crate: the body is already in memory and we need offsets into it. `multer` (the
//! usual choice) is an async stream parser that hands out copied chunks and no offsets; wrapping
//! it would cost more code than this parser, whose only hard part (part headers) is done by
//! `httparse`, the parser hyper itself uses.
//!
//! Damage never fails the whole reading: parsing stops at the first thing it cannot read and
//! keeps the parts before it, saying where it stopped. A body cut at capture keeps its last
//! part, marked incomplete.

use std::ops::Range;

use crate::model::HeaderPair;

/// Parts listed at most; a body with more says so in [`Multipart::problem`].
pub const MAX_PARTS: usize = 1000;
/// Header lines one part may have.
const MAX_PART_HEADERS: usize = 64;
/// Longest boundary accepted (RFC 2046 allows 70 characters; some clients send more).
const MAX_BOUNDARY: usize = 256;

/// One part of a multipart body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The part's header lines in order, names as sent.
    pub headers: Vec<HeaderPair>,
    /// `name` of its `Content-Disposition` (the form field).
    pub name: Option<String>,
    /// `filename*` (RFC 6266, decoded) or else `filename` of its `Content-Disposition`.
    pub filename: Option<String>,
    /// Its `Content-Type` header as sent, parameters included.
    pub content_type: Option<String>,
    /// Where its content is in the body that was parsed.
    pub range: Range<usize>,
    /// `false` when the body ended before the delimiter that closes this part (a body cut at
    /// capture): the range runs to the end of the body.
    pub complete: bool,
}

impl Part {
    /// Content size in bytes.
    pub fn size(&self) -> usize {
        self.range.len()
    }

    /// The content, from the body the part was parsed from.
    pub fn bytes<'b>(&self, body: &'b [u8]) -> &'b [u8] {
        &body[self.range.clone()]
    }
}

/// The parts of a body, and why parsing stopped early if it did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Multipart {
    pub parts: Vec<Part>,
    /// What was wrong with the body, in words; `None` for a well-formed one.
    pub problem: Option<String>,
}

/// The boundary of a `multipart/*` `Content-Type` value; `None` for another type or when the
/// boundary is missing, empty or absurdly long.
pub fn boundary(content_type: &str) -> Option<String> {
    if !super::media_type(content_type).starts_with("multipart/") {
        return None;
    }
    let b = super::parameter(content_type, "boundary")?;
    (!b.is_empty() && b.len() <= MAX_BOUNDARY).then(|| b.into_owned())
}

/// Splits `body` at `boundary` (as [`boundary`] gives it).
pub fn parse(body: &[u8], boundary: &str) -> Multipart {
    let mut out = Multipart::default();
    let mut delim = Vec::with_capacity(boundary.len() + 2);
    delim.extend_from_slice(b"--");
    delim.extend_from_slice(boundary.as_bytes());
    let finder = memchr::memmem::Finder::new(&delim);
    let Some(first) = find_delimiter(body, 0, &finder) else {
        out.problem = Some(format!(
            "No line \"--{boundary}\" (the declared boundary) in the body: no parts."
        ));
        return out;
    };
    if first.close {
        return out;
    }
    let mut cursor = first.next;
    loop {
        let number = out.parts.len() + 1;
        if out.parts.len() == MAX_PARTS {
            out.problem = Some(format!("Only the first {MAX_PARTS} parts are listed."));
            return out;
        }
        let mut slots = [httparse::EMPTY_HEADER; MAX_PART_HEADERS];
        let (header_len, parsed) = match httparse::parse_headers(&body[cursor..], &mut slots) {
            Ok(httparse::Status::Complete(done)) => done,
            Ok(httparse::Status::Partial) => {
                out.problem = Some(format!(
                    "The body ends inside the headers of part {number}."
                ));
                return out;
            }
            Err(e) => {
                out.problem = Some(format!(
                    "Part {number} has malformed headers ({e}); the parts before it are listed."
                ));
                return out;
            }
        };
        let headers: Vec<HeaderPair> = parsed
            .iter()
            .map(|h| HeaderPair::new(h.name, h.value))
            .collect();
        let start = cursor + header_len;
        let (end, next) = match find_delimiter(body, start, &finder) {
            Some(d) => (d.content_end, Some(d)),
            None => (body.len(), None),
        };
        out.parts.push(part(headers, start..end, next.is_some()));
        match next {
            None => {
                out.problem = Some(format!(
                    "The body ends inside part {number} (no closing \"--{boundary}--\"): \
                     that part is incomplete."
                ));
                return out;
            }
            Some(d) if d.close => return out,
            Some(d) => cursor = d.next,
        }
    }
}

fn part(headers: Vec<HeaderPair>, range: Range<usize>, complete: bool) -> Part {
    let text = |name: &str| {
        crate::model::find_header(&headers, name).map(|h| h.value_lossy().into_owned())
    };
    let disposition = text("content-disposition");
    let param = |name: &str| {
        disposition
            .as_deref()
            .and_then(|d| super::parameter(d, name))
            .map(|v| v.into_owned())
    };
    let filename = param("filename*")
        .and_then(|v| ext_value(&v))
        .or_else(|| param("filename"));
    Part {
        name: param("name"),
        filename,
        content_type: text("content-type"),
        range,
        complete,
        headers,
    }
}

/// An RFC 8187 `ext-value` (`UTF-8''%E2%82%AC%20rates.pdf`) decoded; `None` unless UTF-8.
fn ext_value(v: &str) -> Option<String> {
    let mut pieces = v.splitn(3, '\'');
    let charset = pieces.next()?;
    let _language = pieces.next()?;
    let encoded = pieces.next()?;
    if !charset.eq_ignore_ascii_case("utf-8") {
        return None;
    }
    let mut bytes = Vec::with_capacity(encoded.len());
    let raw = encoded.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (raw[i], raw.get(i + 1).copied(), raw.get(i + 2).copied()) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                bytes.push((hex(h)? * 16 + hex(l)?) as u8);
                i += 3;
            }
            (b, _, _) => {
                bytes.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(bytes).ok()
}

/// A delimiter line found in the body.
#[derive(Debug, Clone, Copy)]
struct Delimiter {
    /// Where the content before it ends (before the line break that belongs to the delimiter).
    content_end: usize,
    /// Just after the delimiter line (after `--boundary`, padding and the line break).
    next: usize,
    /// `--boundary--`: the last one.
    close: bool,
}

/// The first delimiter line at or after `from`: `--boundary` at the start of the body or of a
/// line, then `--` (the close delimiter) or optional spaces and tabs and a line break. CRLF is
/// the rule; a bare LF is accepted too, as some hand-made bodies use it.
fn find_delimiter(
    body: &[u8],
    from: usize,
    finder: &memchr::memmem::Finder<'_>,
) -> Option<Delimiter> {
    let len = finder.needle().len();
    let mut search = from;
    while search <= body.len() {
        let at = search + finder.find(&body[search..])?;
        search = at + 1;
        let line_start = at == from || body[at - 1] == b'\n';
        if !line_start {
            continue;
        }
        let mut content_end = at;
        if at > from && body[at - 1] == b'\n' {
            content_end -= 1;
            if content_end > from && body[content_end - 1] == b'\r' {
                content_end -= 1;
            }
        }
        let after = at + len;
        let rest = &body[after..];
        if rest.starts_with(b"--") {
            return Some(Delimiter {
                content_end,
                next: body.len(),
                close: true,
            });
        }
        let padding = rest
            .iter()
            .take_while(|&&b| b == b' ' || b == b'\t')
            .count();
        let rest = &rest[padding..];
        let line_break = if rest.starts_with(b"\r\n") {
            2
        } else if rest.starts_with(b"\n") {
            1
        } else if rest.is_empty() {
            0
        } else {
            // `--boundary` followed by more text: a longer line, not a delimiter.
            continue;
        };
        return Some(Delimiter {
            content_end,
            next: after + padding + line_break,
            close: false,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn names(m: &Multipart) -> Vec<Option<&str>> {
        m.parts.iter().map(|p| p.name.as_deref()).collect()
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\r\n--XY\r\n--X\xff\xfe";

    fn form() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"preamble to ignore\r\n--XYZ\r\n");
        b.extend_from_slice(b"Content-Disposition: form-data; name=\"title\"\r\n\r\n");
        b.extend_from_slice(b"Hello, <b>world</b>\r\n--XYZ\r\n");
        b.extend_from_slice(
            b"Content-Disposition: form-data; name=\"file\"; filename=\"a \\\"q\\\".png\"\r\n",
        );
        b.extend_from_slice(b"Content-Type: image/png\r\n\r\n");
        b.extend_from_slice(PNG);
        b.extend_from_slice(b"\r\n--XYZ\r\n\r\n\r\n--XYZ--\r\nepilogue");
        b
    }

    #[test]
    fn form_data_parts_with_exact_byte_ranges() {
        let body = form();
        let m = parse(&body, "XYZ");
        assert_eq!(m.problem, None);
        assert_eq!(names(&m), [Some("title"), Some("file"), None]);
        assert_eq!(m.parts[0].bytes(&body), b"Hello, <b>world</b>");
        assert_eq!(m.parts[0].filename, None);
        assert_eq!(m.parts[0].content_type, None);
        let file = &m.parts[1];
        assert_eq!(
            file.bytes(&body),
            PNG,
            "binary content, CRLFs and near-delimiters kept"
        );
        assert_eq!(file.size(), PNG.len());
        assert_eq!(file.filename.as_deref(), Some("a \"q\".png"));
        assert_eq!(file.content_type.as_deref(), Some("image/png"));
        assert_eq!(
            file.headers
                .iter()
                .map(|h| h.name.as_str())
                .collect::<Vec<_>>(),
            ["Content-Disposition", "Content-Type"]
        );
        assert!(file.complete);
        // A part with no headers and no content.
        assert_eq!(m.parts[2].headers, []);
        assert_eq!(m.parts[2].size(), 0);
    }

    #[test]
    fn line_feeds_padding_and_other_multipart_types() {
        let body = b"--b \t\nContent-Type: text/plain\n\nfirst\n--b\n\nsecond\r\n--b--";
        let m = parse(body, "b");
        assert_eq!(m.problem, None);
        assert_eq!(m.parts.len(), 2);
        assert_eq!(m.parts[0].bytes(body), b"first");
        assert_eq!(m.parts[1].bytes(body), b"second");
        assert_eq!(
            boundary("multipart/mixed; boundary=\"gc0p4Jq0M2Yt08j34c0p\"").as_deref(),
            Some("gc0p4Jq0M2Yt08j34c0p")
        );
        assert_eq!(
            boundary("Multipart/Related; type=x; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(boundary("multipart/form-data; boundary=\"\""), None);
        assert_eq!(boundary("text/plain; boundary=abc"), None);
        assert_eq!(
            boundary(&format!("multipart/x; boundary={}", "a".repeat(300))),
            None
        );
    }

    #[test]
    fn a_longer_line_that_starts_like_the_boundary_is_content() {
        let body = b"--b\r\n\r\n--bb\r\n--b-not\r\n--b\r\n\r\nx\r\n--b--";
        let m = parse(body, "b");
        assert_eq!(m.parts.len(), 2);
        assert_eq!(m.parts[0].bytes(body), b"--bb\r\n--b-not");
        assert_eq!(m.parts[1].bytes(body), b"x");
    }

    #[test]
    fn a_cut_body_keeps_its_parts_and_marks_the_last_incomplete() {
        let body = form();
        let cut = &body[..body.len() - 30];
        let m = parse(cut, "XYZ");
        assert_eq!(names(&m), [Some("title"), Some("file")]);
        assert!(m.parts[0].complete);
        assert!(!m.parts[1].complete);
        assert!(PNG.starts_with(m.parts[1].bytes(cut)));
        assert!(m.problem.unwrap().contains("ends inside part 2"));
        // Cut inside the headers of part 2 (which start at byte 103).
        let m = parse(&body[..113], "XYZ");
        assert_eq!(names(&m), [Some("title")]);
        assert!(m.problem.unwrap().contains("headers of part 2"));
    }

    #[test]
    fn damage_and_absence_give_no_parts_or_the_parts_before() {
        let m = parse(b"no delimiter here", "XYZ");
        assert_eq!(m.parts, []);
        assert!(m.problem.unwrap().contains("--XYZ"));
        let m = parse(b"--XYZ--\r\n", "XYZ");
        assert_eq!((m.parts.len(), m.problem), (0, None));
        let body = b"--b\r\nA: 1\r\n\r\nok\r\n--b\r\nBad Header\r\n\r\nx\r\n--b--";
        let m = parse(body, "b");
        assert_eq!(m.parts.len(), 1);
        assert!(m.problem.unwrap().contains("Part 2 has malformed headers"));
        let m = parse(b"", "b");
        assert_eq!(m.parts, []);
    }

    #[test]
    fn filename_star_and_raw_utf8_names() {
        let body = "--b\r\nContent-Disposition: form-data; name=\"f\u{fc}\"; filename=\"x.pdf\"; \
                    filename*=UTF-8''%E2%82%AC%20rates.pdf\r\n\r\n\r\n--b--";
        let m = parse(body.as_bytes(), "b");
        assert_eq!(m.parts[0].name.as_deref(), Some("f\u{fc}"));
        assert_eq!(m.parts[0].filename.as_deref(), Some("\u{20ac} rates.pdf"));
        assert_eq!(ext_value("ISO-8859-1''x"), None);
        assert_eq!(ext_value("utf-8'en'a%2"), Some("a%2".into()));
        assert_eq!(ext_value("nonsense"), None);
    }

    #[test]
    fn at_most_max_parts_are_listed() {
        let body = "--b\r\n\r\nx\r\n".repeat(MAX_PARTS + 5) + "--b--";
        let m = parse(body.as_bytes(), "b");
        assert_eq!(m.parts.len(), MAX_PARTS);
        assert!(m.problem.unwrap().contains("first 1000"));
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics_and_ranges_stay_inside(
            body in proptest::collection::vec(
                prop_oneof![Just(b'-'), Just(b'\r'), Just(b'\n'), Just(b'b'), Just(b':'), any::<u8>()],
                0..300,
            ),
        ) {
            let m = parse(&body, "b");
            let mut last = 0;
            for p in &m.parts {
                prop_assert!(p.range.start >= last && p.range.end <= body.len());
                prop_assert!(p.range.start <= p.range.end);
                last = p.range.end;
            }
        }

        #[test]
        fn generated_bodies_give_back_every_part_byte_exact(
            contents in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..6),
        ) {
            let boundary = "----hookbin7MA4YWxkTrZu0gW";
            let mut body = Vec::new();
            for (i, c) in contents.iter().enumerate() {
                body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"p{i}\"\r\n\r\n").as_bytes());
                body.extend_from_slice(c);
                body.extend_from_slice(b"\r\n");
            }
            body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
            let m = parse(&body, boundary);
            prop_assert_eq!(m.problem, None);
            prop_assert_eq!(m.parts.len(), contents.len());
            for (i, (p, c)) in m.parts.iter().zip(&contents).enumerate() {
                prop_assert_eq!(p.bytes(&body), c.as_slice());
                let name = format!("p{i}");
                prop_assert_eq!(p.name.as_deref(), Some(name.as_str()));
            }
        }
    }
}
