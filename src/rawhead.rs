//! Keeps what hyper's `HeaderMap` throws away: the order of header lines and the spelling of names.
//!
//! `HeaderMap` lowercases names and groups repeated names together, so `A: 1`, `B: 2`, `A: 3`
//! comes out as `a: 1, a: 3, b: 2`. hyper records the original order and case internally, but
//! those types are private. So every connection's socket is wrapped in [`TappedStream`], which
//! shows each byte hyper reads to a [`HeadTap`]. The tap follows HTTP/1.1 framing (head, then a
//! Content-Length or chunked body, then the next head) and keeps each request head, parsed with
//! httparse exactly as hyper parses it. The service then takes the head that belongs to the request
//! it is handling (hyper handles the requests of one connection strictly in order).
//!
//! If the tap ever loses track (input hyper accepts but the tap does not understand), it stops for
//! that connection and capture falls back to `HeaderMap` order. It never makes a request fail.

use std::collections::VecDeque;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::model::{HeaderPair, header_lines};

/// One request head as it arrived: its header lines already in their stored form
/// ([`crate::model::header_lines`]), so that a capture stores them without another copy, and the
/// request line's method and target, in one buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHead {
    /// The header lines (stored form), then the method, then the target.
    bytes: Vec<u8>,
    /// Where the method starts in `bytes`.
    lines_end: usize,
    /// Where the target starts in `bytes`.
    method_end: usize,
    /// Bytes of the head, request line and final blank line included.
    pub len: usize,
}

impl RawHead {
    pub fn method(&self) -> &str {
        // Both were `&str` when they were copied in.
        std::str::from_utf8(&self.bytes[self.lines_end..self.method_end]).unwrap_or_default()
    }

    /// The request target as sent: `/r/abc/x?y=1`, or absolute form.
    pub fn target(&self) -> &str {
        std::str::from_utf8(&self.bytes[self.method_end..]).unwrap_or_default()
    }

    /// The header lines in their stored form.
    pub fn header_lines(&self) -> &[u8] {
        &self.bytes[..self.lines_end]
    }

    /// The header lines in their stored form, without a copy.
    pub fn into_header_lines(self) -> Vec<u8> {
        let mut bytes = self.bytes;
        bytes.truncate(self.lines_end);
        bytes
    }

    /// The header lines as pairs, in order (for tests and the fuzz target).
    pub fn headers(&self) -> Vec<HeaderPair> {
        let mut lines = self.header_lines();
        let mut pairs = Vec::new();
        while let Some((name, value)) = header_lines::next(&mut lines) {
            pairs.push(HeaderPair::new(String::from_utf8_lossy(name), value));
        }
        pairs
    }

    fn is(&self, method: &str, target: &str) -> bool {
        self.bytes[self.lines_end..self.method_end] == *method.as_bytes()
            && self.bytes[self.method_end..] == *target.as_bytes()
    }
}

/// Shared between a connection's [`TappedStream`] and its service.
#[derive(Debug)]
pub struct HeadTap {
    tracker: Mutex<Tracker>,
}

impl HeadTap {
    /// `max_head` bounds the bytes kept while waiting for a head to complete; hyper answers 431
    /// for heads over its own limit, and the tap simply stops following such a connection.
    pub fn new(max_head: usize) -> Arc<Self> {
        Arc::new(Self {
            tracker: Mutex::new(Tracker::new(max_head)),
        })
    }

    /// Shows the tap bytes the connection read, in order (what [`TappedStream`] does; public for
    /// the fuzz target and tests).
    pub fn feed(&self, data: &[u8]) {
        // The lock is never contended: the reader and the service run on the same connection task.
        self.tracker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .feed(data);
    }

    /// The heads followed so far and not yet taken, oldest first (for the fuzz target and tests).
    pub fn ready_heads(&self) -> Vec<RawHead> {
        let t = self.tracker.lock().unwrap_or_else(|e| e.into_inner());
        t.ready.iter().cloned().collect()
    }

    /// The head of the request hyper is handing to the service, if the tap followed it.
    /// `method` and `target` must match, or the tap gives up on this connection.
    pub fn take(&self, method: &str, target: &str) -> Option<RawHead> {
        let mut t = self.tracker.lock().unwrap_or_else(|e| e.into_inner());
        let head = t.ready.pop_front()?;
        if head.is(method, target) {
            Some(head)
        } else {
            tracing::debug!("header-order tap lost track of the connection; using HeaderMap order");
            t.state = State::Broken;
            t.ready.clear();
            None
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for (the rest of) a request head.
    Head,
    /// Inside a Content-Length body: bytes still to come.
    Length(u64),
    Chunked(Chunk),
    /// Lost track; ignore the rest of the connection.
    Broken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size line; `ext` once past the digits (chunk extensions are skipped).
    Size {
        value: u64,
        digits: u8,
        ext: bool,
    },
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk; `line` counts bytes on the current line.
    Trailer {
        line: usize,
    },
}

#[derive(Debug)]
struct Tracker {
    state: State,
    buf: Vec<u8>,
    ready: VecDeque<RawHead>,
    max_head: usize,
}

impl Tracker {
    fn new(max_head: usize) -> Self {
        Self {
            state: State::Head,
            buf: Vec::new(),
            ready: VecDeque::new(),
            max_head,
        }
    }

    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let used = match self.state {
                State::Broken => return,
                State::Head => match self.feed_head(data) {
                    Some(used) => used,
                    None => return,
                },
                State::Length(left) => {
                    let used = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let left = left - used as u64;
                    self.state = if left == 0 {
                        State::Head
                    } else {
                        State::Length(left)
                    };
                    used
                }
                State::Chunked(chunk) => self.feed_chunked(chunk, data),
            };
            data = &data[used..];
        }
    }

    /// Adds head bytes. On a complete head, queues it and returns how many bytes of `data` it
    /// used; `None` means all of `data` was taken and the head is not complete yet.
    fn feed_head(&mut self, data: &[u8]) -> Option<usize> {
        // Blank lines before a request line are allowed (RFC 9112 §2.2) and skipped by hyper.
        let blank = if self.buf.is_empty() {
            data.iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count()
        } else {
            0
        };
        let rest = &data[blank..];
        if rest.is_empty() {
            return Some(blank);
        }
        // A head that arrives whole in one read (the usual case) is parsed where it lies;
        // only a head split over reads is gathered in `buf`.
        let old = self.buf.len();
        let parsed = if old == 0 {
            parse_head(rest)
        } else {
            self.buf.extend_from_slice(rest);
            parse_head(&self.buf)
        };
        match parsed {
            Parsed::Partial => {
                if old == 0 {
                    self.buf.extend_from_slice(rest);
                }
                if self.buf.len() > self.max_head {
                    self.give_up();
                }
                None
            }
            Parsed::Invalid => {
                self.give_up();
                None
            }
            Parsed::Complete(head, framing) => {
                let used = blank + head.len - old;
                self.buf.clear();
                self.ready.push_back(head);
                self.state = match framing {
                    Framing::Length(0) => State::Head,
                    Framing::Length(n) => State::Length(n),
                    Framing::Chunked => State::Chunked(CHUNK_START),
                };
                Some(used)
            }
        }
    }

    /// Follows a chunked body; returns the bytes used (all of `data` unless the body ended).
    fn feed_chunked(&mut self, mut chunk: Chunk, data: &[u8]) -> usize {
        let mut i = 0;
        while i < data.len() {
            if let Chunk::Data(left) = chunk {
                let used = (data.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                i += used;
                let left = left - used as u64;
                chunk = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
                continue;
            }
            let b = data[i];
            i += 1;
            chunk = match (chunk, b) {
                (Chunk::Data(_), _) => unreachable!("handled above"),
                (Chunk::Size { digits: 0, .. }, b'\n') => return self.give_up_all(data),
                (Chunk::Size { value: 0, .. }, b'\n') => Chunk::Trailer { line: 0 },
                (Chunk::Size { value, .. }, b'\n') => Chunk::Data(value),
                (size @ Chunk::Size { .. }, b'\r') => size,
                (
                    Chunk::Size {
                        value,
                        digits,
                        ext: false,
                    },
                    b,
                ) if b.is_ascii_hexdigit() => {
                    if digits >= 15 {
                        return self.give_up_all(data);
                    }
                    let d = (b as char).to_digit(16).map(u64::from).unwrap_or(0);
                    Chunk::Size {
                        value: value * 16 + d,
                        digits: digits + 1,
                        ext: false,
                    }
                }
                // A chunk extension (`;name=value`) or whitespace before it: skipped to the LF.
                (Chunk::Size { value, digits, .. }, _) => Chunk::Size {
                    value,
                    digits,
                    ext: true,
                },
                (Chunk::DataEnd, b'\r') => Chunk::DataEnd,
                (Chunk::DataEnd, b'\n') => CHUNK_START,
                (Chunk::DataEnd, _) => return self.give_up_all(data),
                (Chunk::Trailer { line }, b'\r') => Chunk::Trailer { line },
                (Chunk::Trailer { line: 0 }, b'\n') => {
                    self.state = State::Head;
                    return i;
                }
                (Chunk::Trailer { .. }, b'\n') => Chunk::Trailer { line: 0 },
                (Chunk::Trailer { line }, _) => Chunk::Trailer { line: line + 1 },
            };
        }
        self.state = State::Chunked(chunk);
        i
    }

    fn give_up(&mut self) {
        self.state = State::Broken;
        self.buf = Vec::new();
    }

    fn give_up_all(&mut self, data: &[u8]) -> usize {
        self.give_up();
        data.len()
    }
}

const CHUNK_START: Chunk = Chunk::Size {
    value: 0,
    digits: 0,
    ext: false,
};

/// How the body after a head is delimited (RFC 9112 §6.3, for requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
}

enum Parsed {
    Partial,
    Invalid,
    Complete(RawHead, Framing),
}

/// Most requests have far fewer headers; more than this is left to the HeaderMap fallback.
const MAX_HEADERS: usize = 512;

fn parse_head(buf: &[u8]) -> Parsed {
    // Uninitialised: httparse writes only the entries it fills, and filling 64 empty headers
    // first was ~250 instructions a request (a quarter of this function's own).
    let mut storage = [MaybeUninit::<httparse::Header<'_>>::uninit(); 64];
    let mut big;
    let mut headers: &mut [MaybeUninit<httparse::Header<'_>>] = &mut storage;
    loop {
        let mut req = httparse::Request::new(&mut []);
        match req.parse_with_uninit_headers(buf, headers) {
            Ok(httparse::Status::Partial) => return Parsed::Partial,
            Ok(httparse::Status::Complete(len)) => return complete(&req, len),
            Err(httparse::Error::TooManyHeaders) if headers.len() < MAX_HEADERS => {
                big = vec![MaybeUninit::uninit(); MAX_HEADERS];
                headers = &mut big;
            }
            Err(_) => return Parsed::Invalid,
        }
    }
}

fn complete(req: &httparse::Request<'_, '_>, len: usize) -> Parsed {
    let (Some(method), Some(target)) = (req.method, req.path) else {
        return Parsed::Invalid;
    };
    let Some(framing) = framing(req.headers) else {
        return Parsed::Invalid;
    };
    // One allocation for the whole head.
    let mut bytes = header_lines::encode(
        || req.headers.iter().map(|h| (h.name.as_bytes(), h.value)),
        method.len() + target.len(),
    );
    let lines = bytes.len();
    bytes.extend_from_slice(method.as_bytes());
    bytes.extend_from_slice(target.as_bytes());
    let head = RawHead {
        bytes,
        lines_end: lines,
        method_end: lines + method.len(),
        len,
    };
    Parsed::Complete(head, framing)
}

/// `None` for framing hyper would reject (so the connection ends anyway) or the tap cannot follow.
fn framing(headers: &[httparse::Header<'_>]) -> Option<Framing> {
    let mut te_seen = false;
    let mut last_te = Vec::new();
    let mut length: Option<u64> = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            te_seen = true;
            if let Some(last) = h.value.split(|&b| b == b',').next_back() {
                last_te = last.trim_ascii().to_ascii_lowercase();
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            for part in h.value.split(|&b| b == b',') {
                let n: u64 = std::str::from_utf8(part.trim_ascii()).ok()?.parse().ok()?;
                if length.is_some_and(|l| l != n) {
                    return None;
                }
                length = Some(n);
            }
        }
    }
    if te_seen {
        return (last_te == b"chunked").then_some(Framing::Chunked);
    }
    Some(Framing::Length(length.unwrap_or(0)))
}

/// A socket that shows every byte read to a [`HeadTap`].
#[derive(Debug)]
pub struct TappedStream<S> {
    inner: S,
    tap: Arc<HeadTap>,
}

impl<S> TappedStream<S> {
    pub fn new(inner: S, tap: Arc<HeadTap>) -> Self {
        Self { inner, tap }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TappedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let new = &buf.filled()[before..];
        if !new.is_empty() {
            this.tap.feed(new);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TappedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(h: &RawHead) -> Vec<(String, String)> {
        h.headers()
            .iter()
            .map(|p| (p.name.clone(), p.value_lossy().into_owned()))
            .collect()
    }

    /// Feeds `input` in every split into two reads, and in single bytes, and checks each gives
    /// the same heads.
    fn heads_of(input: &[u8]) -> Vec<RawHead> {
        let mut whole = Tracker::new(1 << 20);
        whole.feed(input);
        let expected: Vec<RawHead> = whole.ready.iter().cloned().collect();
        for cut in 0..=input.len() {
            let mut t = Tracker::new(1 << 20);
            t.feed(&input[..cut]);
            t.feed(&input[cut..]);
            assert_eq!(t.ready, expected, "split at {cut}");
        }
        let mut bytewise = Tracker::new(1 << 20);
        for b in input {
            bytewise.feed(std::slice::from_ref(b));
        }
        assert_eq!(bytewise.ready, expected, "byte by byte");
        expected
    }

    #[test]
    fn keeps_order_case_and_duplicates() {
        let heads = heads_of(b"POST /r/x?q=1 HTTP/1.1\r\nHost: h\r\nX-B: 1\r\nx-a: 2\r\nX-B: 3\r\nContent-Length: 3\r\n\r\nabc");
        assert_eq!(heads.len(), 1);
        assert_eq!(heads[0].method(), "POST");
        assert_eq!(heads[0].target(), "/r/x?q=1");
        let expected = [
            ("Host", "h"),
            ("X-B", "1"),
            ("x-a", "2"),
            ("X-B", "3"),
            ("Content-Length", "3"),
        ];
        assert_eq!(
            names(&heads[0]),
            expected.map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
    }

    #[test]
    fn follows_pipelined_requests_across_bodies() {
        // The first body contains something that looks like a request head: it must be skipped.
        let body = b"GET /fake HTTP/1.1\r\n\r\n";
        let mut input =
            format!("PUT /a HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        input.extend_from_slice(body);
        input.extend_from_slice(b"\r\nDELETE /b HTTP/1.1\r\nA: 1\r\n\r\n");
        input.extend_from_slice(b"PATCH /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nGET /\r\n0\r\nTrailer: x\r\n\r\n");
        input.extend_from_slice(b"PROPFIND /d HTTP/1.0\r\n\r\n");
        let heads = heads_of(&input);
        let methods: Vec<&str> = heads.iter().map(|h| h.method()).collect();
        assert_eq!(methods, ["PUT", "DELETE", "PATCH", "PROPFIND"]);
        assert_eq!(heads[3].target(), "/d");
    }

    #[test]
    fn chunk_sizes_in_hex_with_data_that_looks_like_framing() {
        // Chunk data that looks like a last chunk and a new request must be skipped as data.
        let data = b"0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        let mut input = b"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".to_vec();
        input.extend_from_slice(format!("{:X}\r\n", data.len()).as_bytes());
        input.extend_from_slice(data);
        input.extend_from_slice(b"\r\n0\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
        let heads = heads_of(&input);
        let targets: Vec<&str> = heads.iter().map(|h| h.target()).collect();
        assert_eq!(targets, ["/a", "/next"]);
    }

    #[test]
    fn gives_up_on_what_it_cannot_follow() {
        for bad in [
            &b"POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nxx"[..],
            b"POST /a HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\nxx",
            b"POST /a HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            b"\x00\x01 nonsense\r\n\r\n",
        ] {
            let mut t = Tracker::new(1 << 20);
            t.feed(bad);
            assert_eq!(t.state, State::Broken, "{:?}", String::from_utf8_lossy(bad));
        }
        let mut t = Tracker::new(16);
        t.feed(b"GET /a-long-target HTTP/1.1\r\nX: y");
        assert_eq!(t.state, State::Broken);
    }

    #[test]
    fn take_checks_the_request_line() {
        let tap = HeadTap::new(1 << 20);
        tap.feed(b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
        assert_eq!(tap.take("GET", "/a").unwrap().target(), "/a");
        assert!(tap.take("GET", "/c").is_none());
        // Lost track: nothing more is offered.
        assert!(tap.take("GET", "/b").is_none());
    }

    #[test]
    fn many_headers_and_obs_text_values() {
        let mut input = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..200 {
            input.extend_from_slice(format!("H{i}: v{i}\r\n").as_bytes());
        }
        input.extend_from_slice(b"Latin: caf\xe9\r\n\r\n");
        let mut t = Tracker::new(1 << 20);
        t.feed(&input);
        let head = t.ready.pop_front().unwrap();
        let headers = head.headers();
        assert_eq!(headers.len(), 201);
        assert_eq!(headers[200].value, b"caf\xe9");
        assert_eq!(head.len, input.len());
    }
}
