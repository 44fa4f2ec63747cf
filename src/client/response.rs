//! Reading an answer: the response head (httparse, as the server side uses) and the body framing
//! of RFC 9112 §6.3 (none, `Content-Length`, chunked, or until the server closes).
//!
//! [`Deframer`] is a pure state machine over the connection's read buffer, so it is tested here
//! with every split of its input; [`super::Response`] feeds it from the socket.

use bytes::{Bytes, BytesMut};

use crate::model::{HeaderPair, find_header};

use super::Version;

/// Largest response head accepted.
pub(super) const MAX_HEAD: usize = 64 * 1024;
/// Largest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Trailer lines accepted after the last chunk.
const MAX_TRAILERS: usize = 100;

/// A parsed response head.
#[derive(Debug)]
pub(super) struct Head {
    pub status: u16,
    pub reason: String,
    pub version: Version,
    pub headers: Vec<HeaderPair>,
}

/// Parses a response head at the start of `buf`: `None` until it is complete, else the head and
/// its length in bytes.
pub(super) fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut res = httparse::Response::new(&mut headers);
    match res.parse(buf) {
        Ok(httparse::Status::Complete(len)) => Ok(Some((
            Head {
                status: res.code.unwrap_or(0),
                reason: res.reason.unwrap_or("").to_owned(),
                version: if res.version == Some(0) {
                    Version::Http10
                } else {
                    Version::Http11
                },
                headers: res
                    .headers
                    .iter()
                    .map(|h| HeaderPair::new(h.name, h.value))
                    .collect(),
            },
            len,
        ))),
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => Ok(None),
        Ok(httparse::Status::Partial) => Err("the response head is too large".into()),
        Err(e) => Err(format!("invalid response: {e}")),
    }
}

/// Whether a head is interim (`100 Continue`, `103 Early Hints`): the final one follows.
pub(super) fn is_interim(status: u16) -> bool {
    (100..200).contains(&status) && status != 101
}

/// Whether the connection can carry another request once this body has been read.
pub(super) fn keeps_alive(head: &Head) -> bool {
    let close = find_header(&head.headers, "connection").is_some_and(|h| {
        h.value
            .split(|&b| b == b',')
            .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
    });
    head.version == Version::Http11 && !close
}

/// What follows the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

impl Framing {
    pub(super) fn of(head: &Head, head_request: bool) -> Framing {
        if head_request || is_interim(head.status) || matches!(head.status, 101 | 204 | 304) {
            return Framing::Empty;
        }
        if let Some(te) = find_header(&head.headers, "transfer-encoding") {
            let last = te.value.rsplit(|&b| b == b',').next().unwrap_or_default();
            return if last.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                Framing::Chunked
            } else {
                Framing::UntilClose
            };
        }
        match find_header(&head.headers, "content-length")
            .and_then(|h| std::str::from_utf8(&h.value).ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            Some(0) => Framing::Empty,
            Some(n) => Framing::Length(n),
            None => Framing::UntilClose,
        }
    }
}

/// One step of reading a body out of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    Data(Bytes),
    /// The buffer holds no complete piece: read more from the connection.
    NeedMore,
    End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length(u64),
    UntilClose,
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers(usize),
    Done,
}

/// Takes a body out of the bytes that follow a response head, framing removed.
#[derive(Debug)]
pub(super) struct Deframer {
    state: State,
}

impl Deframer {
    pub(super) fn new(framing: Framing) -> Deframer {
        let state = match framing {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::UntilClose => State::UntilClose,
        };
        Deframer { state }
    }

    /// Whether the whole body has been taken.
    pub(super) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The next piece of body in `buf` (which it consumes), or what is needed to go on.
    pub(super) fn next(&mut self, buf: &mut BytesMut) -> Result<Step, String> {
        loop {
            match self.state {
                State::Done => return Ok(Step::End),
                State::Length(0) => self.state = State::Done,
                State::ChunkData(0) => self.state = State::ChunkEnd,
                State::Length(n) | State::ChunkData(n) => {
                    if buf.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    let take = n.min(buf.len() as u64);
                    let left = n - take;
                    self.state = match self.state {
                        // Known to end here: done without another call.
                        State::Length(_) if left == 0 => State::Done,
                        State::Length(_) => State::Length(left),
                        _ => State::ChunkData(left),
                    };
                    return Ok(Step::Data(buf.split_to(take as usize).freeze()));
                }
                State::UntilClose => {
                    if buf.is_empty() {
                        return Ok(Step::NeedMore);
                    }
                    return Ok(Step::Data(buf.split().freeze()));
                }
                State::ChunkSize => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    // `size[;extensions]`; extensions are ignored.
                    let size = line[..].split(|&b| b == b';').next().unwrap_or_default();
                    let size = std::str::from_utf8(size.trim_ascii())
                        .ok()
                        .filter(|s| !s.is_empty())
                        .and_then(|s| u64::from_str_radix(s, 16).ok())
                        .ok_or("invalid chunk size in the response")?;
                    self.state = match size {
                        0 => State::Trailers(0),
                        n => State::ChunkData(n),
                    };
                }
                State::ChunkEnd => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    if !line.is_empty() {
                        return Err("a chunk of the response is longer than announced".into());
                    }
                    self.state = State::ChunkSize;
                }
                State::Trailers(n) => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::NeedMore);
                    };
                    self.state = if line.is_empty() {
                        State::Done
                    } else if n < MAX_TRAILERS {
                        State::Trailers(n + 1)
                    } else {
                        return Err("too many trailer lines in the response".into());
                    };
                }
            }
        }
    }

    /// The connection closed: the end of a close-delimited body, else a body cut short.
    pub(super) fn at_eof(&mut self) -> Result<(), String> {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err("the connection closed before the end of the response body".into()),
        }
    }
}

/// Removes one line (ending in LF or CRLF) from the front of `buf`, without its ending; `None`
/// while the line is incomplete.
fn take_line(buf: &mut BytesMut) -> Result<Option<BytesMut>, String> {
    match buf.iter().position(|&b| b == b'\n') {
        Some(end) => {
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            Ok(Some(line))
        }
        None if buf.len() > MAX_LINE => Err("a line of the response is too long".into()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: u16, headers: &[(&str, &str)]) -> Head {
        Head {
            status,
            reason: String::new(),
            version: Version::Http11,
            headers: headers
                .iter()
                .map(|(n, v)| HeaderPair::new(*n, *v))
                .collect(),
        }
    }

    /// The body `wire` decodes to, fed in two pieces split at `cut`, and whether it ended.
    fn decode(framing: Framing, wire: &[u8], cut: usize) -> Result<(Vec<u8>, bool), String> {
        let mut d = Deframer::new(framing);
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        for piece in [&wire[..cut], &wire[cut..]] {
            buf.extend_from_slice(piece);
            loop {
                match d.next(&mut buf)? {
                    Step::Data(b) => body.extend_from_slice(&b),
                    Step::NeedMore => break,
                    Step::End => return Ok((body, true)),
                }
            }
        }
        d.at_eof()?;
        Ok((body, false))
    }

    #[test]
    fn chunked_bodies_decode_at_every_split() {
        let wire = b"5;ext=1\r\nhello\r\n1\nX\n0\r\nTrailer: t\r\n\r\nNEXT";
        for cut in 0..=wire.len() {
            assert_eq!(
                decode(Framing::Chunked, wire, cut),
                Ok((b"helloX".to_vec(), true)),
                "cut at {cut}"
            );
        }
        assert!(decode(Framing::Chunked, b"zz\r\n", 4).is_err());
        assert!(decode(Framing::Chunked, b"2\r\nabc\r\n0\r\n\r\n", 0).is_err());
        assert!(
            decode(Framing::Chunked, b"5\r\nhel", 0).is_err(),
            "cut short"
        );
    }

    #[test]
    fn length_and_close_delimited_bodies() {
        for cut in 0..=7 {
            let (body, ended) = decode(Framing::Length(5), b"hello!!", cut).unwrap();
            assert_eq!((body.as_slice(), ended), (&b"hello"[..], true));
            let (body, ended) = decode(Framing::UntilClose, b"hello!!", cut).unwrap();
            assert_eq!((body.as_slice(), ended), (&b"hello!!"[..], false));
        }
        assert!(decode(Framing::Length(9), b"short", 2).is_err());
        assert_eq!(decode(Framing::Empty, b"x", 0), Ok((vec![], true)));
    }

    #[test]
    fn framing_follows_rfc_9112() {
        assert_eq!(Framing::of(&head(200, &[]), false), Framing::UntilClose);
        assert_eq!(Framing::of(&head(200, &[]), true), Framing::Empty);
        assert_eq!(
            Framing::of(&head(200, &[("Content-Length", "12")]), false),
            Framing::Length(12)
        );
        assert_eq!(
            Framing::of(&head(204, &[("Content-Length", "12")]), false),
            Framing::Empty
        );
        assert_eq!(Framing::of(&head(304, &[]), false), Framing::Empty);
        assert_eq!(
            Framing::of(
                &head(
                    200,
                    &[
                        ("transfer-encoding", "gzip, Chunked"),
                        ("Content-Length", "3")
                    ]
                ),
                false
            ),
            Framing::Chunked
        );
        assert_eq!(
            Framing::of(&head(200, &[("Transfer-Encoding", "gzip")]), false),
            Framing::UntilClose
        );
    }

    #[test]
    fn heads_and_keep_alive() {
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\nX: 1\r\n")
                .unwrap()
                .is_none()
        );
        let (h, len) = parse_head(b"HTTP/1.1 404 Not Found\r\nX-A: caf\xe9\r\n\r\nbody")
            .unwrap()
            .unwrap();
        assert_eq!((h.status, h.reason.as_str(), len), (404, "Not Found", 37));
        assert_eq!(h.headers, vec![HeaderPair::new("X-A", b"caf\xe9".to_vec())]);
        assert!(keeps_alive(&h));
        let (h, _) = parse_head(b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!keeps_alive(&h));
        let (h, _) = parse_head(b"HTTP/1.0 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!(h.version, Version::Http10);
        assert!(!keeps_alive(&h));
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(&vec![b'a'; MAX_HEAD + 1]).is_err());
        assert!(is_interim(100) && is_interim(103) && !is_interim(101) && !is_interim(200));
    }
}
