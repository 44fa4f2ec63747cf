//! Undoing `Content-Encoding`: gzip (and `x-gzip`), deflate (zlib-wrapped or raw, as servers
//! send both), br and zstd, several in a row, with a bound on the decoded size.
//!
//! RFC 9110 §8.4: the header lists the codings in the order they were applied, so they are
//! undone from the last to the first (`gzip, br` is br over gzip: br is undone first).
//! `identity` is no coding at all.
//!
//! The decoders are chained as streams, so no stage ever holds more than its buffers and the
//! whole chain stops when the output reaches the limit: a small body that expands to gigabytes
//! (a decompression bomb) costs `limit` bytes of memory and the time to produce them, and is
//! reported as cut there.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// One content coding hookbin can undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` or `x-gzip` (one or more gzip members).
    Gzip,
    /// `deflate`: a zlib stream (RFC 1950) as the RFC says, or raw deflate (RFC 1951) as some
    /// servers send; told apart by the zlib header.
    Deflate,
    /// `br` (RFC 7932).
    Brotli,
    /// `zstd` (RFC 8878), one or more frames.
    Zstd,
}

impl Coding {
    /// The name used in `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Brotli => "br",
            Coding::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Coding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a body could not be decoded: the coding (as the header names it) and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{coding}: {reason}")]
pub struct DecodeError {
    /// The coding as written in the header, lowercased (`x-gzip`, `compress`, `br`).
    pub coding: String,
    pub reason: String,
}

/// How decoding ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The whole body was decoded (or there was nothing to undo).
    Complete,
    /// The decoded body reached the limit: `bytes` holds its first `limit` bytes.
    Cut { limit: usize },
    /// A coding is unknown or its bytes do not decode: `bytes` holds what was decoded before
    /// the damage (often empty; the start of the content for a body cut at capture).
    Failed(DecodeError),
}

/// A body with its `Content-Encoding` undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded<'a> {
    /// The decoded bytes; the stored body itself (borrowed) when there was nothing to undo.
    pub bytes: Cow<'a, [u8]>,
    /// The codings undone, in the header's order; empty when there was nothing to undo.
    pub codings: Vec<Coding>,
    pub outcome: Outcome,
}

impl Decoded<'_> {
    /// Whether a coding was undone (or tried): `false` for a body sent without one.
    pub fn was_encoded(&self) -> bool {
        !self.codings.is_empty() || matches!(self.outcome, Outcome::Failed(_))
    }
}

/// The codings of a `Content-Encoding` value, in the order they were applied. `identity` and
/// empty list elements are skipped; an unknown coding is an error naming it.
pub fn parse_codings(content_encoding: &str) -> Result<Vec<Coding>, DecodeError> {
    let mut codings = Vec::new();
    for token in content_encoding.split(',') {
        let token = token.trim();
        let coding = match token.to_ascii_lowercase().as_str() {
            "" | "identity" => continue,
            "gzip" | "x-gzip" => Coding::Gzip,
            "deflate" => Coding::Deflate,
            "br" => Coding::Brotli,
            "zstd" => Coding::Zstd,
            other => {
                return Err(DecodeError {
                    coding: other.to_owned(),
                    reason: "not a coding hookbin can undo (it knows gzip, x-gzip, deflate, \
                             br and zstd)"
                        .into(),
                });
            }
        };
        codings.push(coding);
    }
    Ok(codings)
}

/// `body` with `content_encoding` (the header's value, `None` without one) undone, producing
/// at most `limit` bytes. Never fails: an unknown coding or bytes that do not decode give
/// [`Outcome::Failed`] with what was decoded before the damage. An empty body stays empty
/// whatever the header says (a header on a body-less request is no reason for an error).
pub fn decode<'a>(body: &'a [u8], content_encoding: Option<&str>, limit: usize) -> Decoded<'a> {
    let codings = match content_encoding.map(parse_codings).transpose() {
        Ok(codings) => codings.unwrap_or_default(),
        Err(e) => {
            return Decoded {
                bytes: Cow::Borrowed(&[]),
                codings: Vec::new(),
                outcome: Outcome::Failed(e),
            };
        }
    };
    if codings.is_empty() || body.is_empty() {
        return Decoded {
            bytes: Cow::Borrowed(body),
            codings,
            outcome: Outcome::Complete,
        };
    }
    // The first failing stage records itself here: an outer decoder may wrap or replace the
    // error of the stage inside it, and the innermost failure is the one worth naming.
    let failure = Rc::new(RefCell::new(None));
    let mut stream: Box<dyn BufRead + 'a> = Box::new(body);
    for &coding in codings.iter().rev() {
        let stage = Named {
            coding,
            inner: decoder(coding, stream),
            failure: failure.clone(),
        };
        stream = Box::new(BufReader::with_capacity(BUFFER, stage));
    }
    let mut out = Vec::new();
    let read = stream
        .take((limit as u64).saturating_add(1))
        .read_to_end(&mut out);
    let outcome = match read {
        Ok(_) if out.len() > limit => {
            out.truncate(limit);
            Outcome::Cut { limit }
        }
        Ok(_) => Outcome::Complete,
        Err(e) => Outcome::Failed(failure.borrow_mut().take().unwrap_or_else(|| DecodeError {
            coding: codings[0].name().to_owned(),
            reason: e.to_string(),
        })),
    };
    Decoded {
        bytes: Cow::Owned(out),
        codings,
        outcome,
    }
}

/// Buffer between two stages.
const BUFFER: usize = 32 * 1024;

/// RFC 9659: the `zstd` content coding uses windows of at most 8 MiB, and decoders need not
/// accept more. Refusing larger ones bounds the memory a crafted frame header can ask for.
const ZSTD_MAX_WINDOW: u64 = 8 * 1024 * 1024;

fn decoder<'a>(coding: Coding, input: Box<dyn BufRead + 'a>) -> Box<dyn Read + 'a> {
    match coding {
        Coding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        Coding::Deflate => Box::new(Deflate::Undecided(Some(input))),
        Coding::Brotli => Box::new(brotli_decompressor::Decompressor::new(input, BUFFER)),
        Coding::Zstd => Box::new(ZstdFrames::new(input)),
    }
}

/// A decoding stage that records the first failure of the chain under its coding's name.
struct Named<'a> {
    coding: Coding,
    inner: Box<dyn Read + 'a>,
    failure: Rc<RefCell<Option<DecodeError>>>,
}

impl Read for Named<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).inspect_err(|e| {
            let mut failure = self.failure.borrow_mut();
            if failure.is_none() {
                *failure = Some(DecodeError {
                    coding: self.coding.name().to_owned(),
                    reason: describe(e),
                });
            }
        })
    }
}

/// The decoders' messages, made readable where they are terse.
fn describe(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the data ends early (cut, or not all sent)".into(),
        _ => {
            let text = e.to_string();
            match text.as_str() {
                "Invalid Data" => "the data is not valid for this coding".into(),
                _ => text,
            }
        }
    }
}

/// `deflate`: zlib-wrapped when the first two bytes are a zlib header (RFC 1950 §2.2: method
/// 8, and the pair a multiple of 31), raw deflate otherwise. The choice waits for the first read.
enum Deflate<'a> {
    Undecided(Option<Box<dyn BufRead + 'a>>),
    Zlib(flate2::bufread::ZlibDecoder<Box<dyn BufRead + 'a>>),
    Raw(flate2::bufread::DeflateDecoder<Box<dyn BufRead + 'a>>),
}

impl<'a> Read for Deflate<'a> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self {
                Deflate::Zlib(d) => return d.read(buf),
                Deflate::Raw(d) => return d.read(buf),
                Deflate::Undecided(input) => {
                    let mut input = input.take().ok_or_else(|| io::Error::other("no input"))?;
                    // Two bytes decide; a stage before may hand them over one at a time.
                    let mut head = [0u8; 2];
                    let mut got = 0;
                    while got < 2 {
                        match input.read(&mut head[got..])? {
                            0 => break,
                            n => got += n,
                        }
                    }
                    let zlib = got == 2
                        && head[0] & 0x0f == 8
                        && head[0] >> 4 <= 7
                        && u16::from_be_bytes(head) % 31 == 0;
                    let rejoined: Box<dyn BufRead + 'a> =
                        Box::new(io::Cursor::new(head[..got].to_vec()).chain(input));
                    *self = if zlib {
                        Deflate::Zlib(flate2::bufread::ZlibDecoder::new(rejoined))
                    } else {
                        Deflate::Raw(flate2::bufread::DeflateDecoder::new(rejoined))
                    };
                }
            }
        }
    }
}

/// zstd over every frame of the input (RFC 8878 §3: a stream may hold several frames, and
/// skippable frames that carry no content), checking each frame's checksum when it has one.
struct ZstdFrames<'a> {
    input: Box<dyn BufRead + 'a>,
    frame: FrameDecoder,
    in_frame: bool,
    frames: usize,
}

impl<'a> ZstdFrames<'a> {
    fn new(input: Box<dyn BufRead + 'a>) -> Self {
        let mut frame = FrameDecoder::new();
        frame.set_max_window_size(ZSTD_MAX_WINDOW);
        Self {
            input,
            frame,
            in_frame: false,
            frames: 0,
        }
    }
}

impl Read for ZstdFrames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.frame.can_collect() == 0 && !self.frame.is_finished() {
                    self.frame
                        .decode_blocks(&mut self.input, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(zstd_error)?;
                }
                if self.frame.can_collect() > 0 {
                    return self.frame.read(buf);
                }
                if let (Some(sent), Some(computed)) = (
                    self.frame.get_checksum_from_data(),
                    self.frame.get_calculated_checksum(),
                ) && sent != computed
                {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "the frame's checksum does not match its content",
                    ));
                }
                self.in_frame = false;
            }
            if self.input.fill_buf()?.is_empty() {
                return if self.frames == 0 {
                    Err(io::ErrorKind::UnexpectedEof.into())
                } else {
                    Ok(0)
                };
            }
            self.frames += 1;
            match self.frame.init(&mut self.input) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped =
                        io::copy(&mut (&mut self.input).take(length.into()), &mut io::sink())?;
                    if skipped < u64::from(length) {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                }
                Err(e) => return Err(zstd_error(e)),
            }
        }
    }
}

fn zstd_error(e: FrameDecoderError) -> io::Error {
    let text = match &e {
        FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::BadMagicNumber(_)) => {
            "not a zstd frame (bad magic number)".to_owned()
        }
        FrameDecoderError::WindowSizeTooBig { requested, .. } => format!(
            "the frame asks for a {requested}-byte window; the zstd content coding allows at \
             most 8 MiB (RFC 9659)"
        ),
        _ => e.to_string(),
    };
    io::Error::new(io::ErrorKind::InvalidData, text)
}

#[cfg(test)]
mod tests;
