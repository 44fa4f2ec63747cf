//! The HTTP/1.1 client of the subcommands that send requests: `hookbin forward` (the bin's API,
//! its event stream, and the replays to the local server), `hookbin healthcheck`, and the
//! senders of signed test events (`send`, `probe`).
//!
//! Requests are written byte for byte: header names, their order, duplicates and value bytes go
//! out exactly as given. hyper's client cannot do that (it lowercases names and groups repeated
//! ones in a `HeaderMap`), and a forwarded or signed request must arrive as it was captured or
//! signed. So the head is written here, after the checks of [`crate::wire`], and the answer is
//! read with httparse, as the server side reads requests: the final (non-1xx) head, then the
//! body with its framing removed (`Content-Length`, chunked, or until the server closes).
//!
//! ```no_run
//! # async fn demo() -> Result<(), hookbin::client::ClientError> {
//! use std::time::Duration;
//! use hookbin::client::{Client, Request};
//! use hookbin::wire::url::HttpUrl;
//!
//! let client = Client::new(None)?;
//! let url = HttpUrl::parse("https://example.com/webhooks").unwrap();
//! let request = Request::new("POST", url.request_target())
//!     .header("Content-Type", "application/json")
//!     .header("Webhook-Id", "msg_1")
//!     .body(r#"{"type":"ping"}"#);
//! let answer = client.exchange(&url, &request, Duration::from_secs(10), 80).await?;
//! println!("{} {} ms {:?}", answer.status, answer.elapsed.as_millis(), answer.preview);
//! # Ok(()) }
//! ```
//!
//! Over TLS for `https://` URLs: rustls with the ring provider and the web PKI roots, plus the
//! certificates of `--ca-cert` ([`tls`]). Every wait has a bound: connecting
//! ([`Client::with_connect_timeout`]), [`Client::send`] and [`Client::exchange`] take a timeout
//! for the whole exchange, and body reads are bounded by the caller (`tokio::time::timeout`).

mod conn;
mod response;
pub mod tls;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

use crate::model::{HeaderPair, find_header};
use crate::wire::url::HttpUrl;
use crate::wire::{self, Unsendable};
use response::{Deframer, Framing, Step};

/// How long connecting (TCP and TLS) may take unless set otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bodies up to this size go out in the same write as the head (one segment when small).
const ONE_WRITE: usize = 64 * 1024;

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TLS settings could not be built (an unreadable `--ca-cert`).
    #[error("{0}")]
    Setup(String),
    /// The request cannot be written: no HTTP/1 request can carry it.
    #[error("cannot be sent: {0}")]
    Unsendable(#[from] Unsendable),
    /// The server could not be reached: name resolution, connection, or TLS handshake.
    #[error("cannot connect to {authority}: {reason}")]
    Connect { authority: String, reason: String },
    /// The deadline passed before the answer (or the part of it asked for) arrived.
    #[error("no response within {}", humantime::format_duration(*.0))]
    Timeout(Duration),
    /// Writing the request failed and no answer came.
    #[error("sending failed: {0}")]
    Send(std::io::Error),
    /// The connection broke, or what came back is not an HTTP/1 response.
    #[error("{0}")]
    Response(String),
}

impl ClientError {
    pub fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout(_))
    }

    /// Whether trying again later may work (a network problem), as opposed to a request or a
    /// setup that can never work.
    pub fn is_transient(&self) -> bool {
        !matches!(self, ClientError::Setup(_) | ClientError::Unsendable(_))
    }
}

/// The HTTP version of a request line or a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    Http10,
    #[default]
    Http11,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// One request, written exactly as described: the request line, `Host` (unless the headers
/// carry one), the headers in order, and `Content-Length` when there is a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// The request-target as sent: `/path?query`.
    pub target: String,
    pub version: Version,
    /// Names as spelled, in order, duplicates kept; values as bytes. No framing headers:
    /// `Content-Length` follows from [`Request::body`].
    pub headers: Vec<HeaderPair>,
    /// `None`: no body and no `Content-Length`; `Some` (even empty): `Content-Length` and body.
    pub body: Option<Bytes>,
}

impl Request {
    /// `method target HTTP/1.1` with no headers and no body.
    pub fn new(method: impl Into<String>, target: impl Into<String>) -> Request {
        Request {
            method: method.into(),
            target: target.into(),
            version: Version::Http11,
            headers: Vec::new(),
            body: None,
        }
    }

    pub fn version(mut self, version: Version) -> Request {
        self.version = version;
        self
    }

    /// Appends one header line.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) -> Request {
        self.headers.push(HeaderPair::new(name, value));
        self
    }

    pub fn body(mut self, body: impl Into<Bytes>) -> Request {
        self.body = Some(body.into());
        self
    }

    fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// The request head for a server at `authority` (the `Host` value when the headers have no
    /// `Host`). Refuses what no HTTP/1 request can carry, and framing headers (the client
    /// writes `Content-Length` itself and does not chunk).
    pub fn head(&self, authority: &str) -> Result<Vec<u8>, Unsendable> {
        wire::check_method(&self.method)?;
        wire::check_target(&self.target)?;
        let mut head = Vec::with_capacity(256);
        let line = format!(
            "{} {} {}\r\n",
            self.method,
            self.target,
            self.version.as_str()
        );
        head.extend_from_slice(line.as_bytes());
        if find_header(&self.headers, "host").is_none() {
            head.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
        }
        for HeaderPair { name, value } in &self.headers {
            wire::check_header(name, value)?;
            if name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                return Err(Unsendable::Framing);
            }
            head.extend_from_slice(name.as_bytes());
            head.push(b':');
            if !value.is_empty() {
                head.push(b' ');
                head.extend_from_slice(value);
            }
            head.extend_from_slice(b"\r\n");
        }
        if let Some(body) = &self.body {
            head.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        Ok(head)
    }
}

/// Connects to servers: TCP, or TLS for `https://`. Cheap to clone and share.
#[derive(Clone)]
pub struct Client {
    tls: TlsConnector,
    connect_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client that trusts the bundled web PKI roots, plus the PEM certificates in `ca_cert`
    /// (a private CA or a self-signed server).
    pub fn new(ca_cert: Option<&Path>) -> Result<Client, ClientError> {
        let config = tls::config(ca_cert).map_err(ClientError::Setup)?;
        Ok(Client {
            tls: TlsConnector::from(config),
            connect_timeout: CONNECT_TIMEOUT,
        })
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Client {
        self.connect_timeout = timeout;
        self
    }

    /// Opens a connection to the URL's host and port (TLS for `https`), within the connect
    /// timeout.
    pub async fn connect(&self, url: &HttpUrl) -> Result<Connection, ClientError> {
        let failed = |reason: String| ClientError::Connect {
            authority: url.authority().to_owned(),
            reason,
        };
        let stream = tokio::time::timeout(self.connect_timeout, conn::open(url, &self.tls))
            .await
            .map_err(|_| failed("timed out".into()))?
            .map_err(failed)?;
        Ok(Connection {
            stream,
            buf: BytesMut::new(),
            authority: url.authority().to_owned(),
        })
    }

    /// Connects, sends `request` and waits for the final response head, all within `timeout`.
    /// [`Response::elapsed`] counts from before connecting.
    pub async fn send(
        &self,
        url: &HttpUrl,
        request: &Request,
        timeout: Duration,
    ) -> Result<Response, ClientError> {
        let started = Instant::now();
        let exchange = async {
            let connection = self.connect(url).await?;
            connection.send_from(request, started).await
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or(Err(ClientError::Timeout(timeout)))
    }

    /// [`Client::send`], then up to `preview` bytes of the body, all within `timeout`: the
    /// status, the time to the response head, and the first bytes of the answer.
    pub async fn exchange(
        &self,
        url: &HttpUrl,
        request: &Request,
        timeout: Duration,
        preview: usize,
    ) -> Result<Exchange, ClientError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut response = self.send(url, request, timeout).await?;
        let preview = tokio::time::timeout_at(deadline, response.prefix(preview))
            .await
            .map_err(|_| ClientError::Timeout(timeout))??;
        Ok(Exchange {
            status: response.status,
            reason: std::mem::take(&mut response.reason),
            headers: std::mem::take(&mut response.headers),
            elapsed: response.elapsed,
            complete: response.is_complete(),
            preview,
        })
    }
}

/// What [`Client::exchange`] got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<HeaderPair>,
    /// From before connecting to the end of the response head.
    pub elapsed: Duration,
    /// The first bytes of the body (framing removed), at most the `preview` asked for.
    pub preview: Vec<u8>,
    /// Whether `preview` is known to be the whole body (a chunked body that ends exactly at
    /// the preview's size is only known to end with the next read).
    pub complete: bool,
}

/// An open connection to one server; [`Connection::send`] hands it to the [`Response`], which
/// gives it back ([`Response::into_connection`]) when it can carry another request.
pub struct Connection {
    stream: conn::Stream,
    /// Bytes read and not consumed yet.
    buf: BytesMut,
    authority: String,
}

impl Connection {
    /// Sends `request` and reads up to the final response head. No timeout of its own: wrap
    /// it in one.
    pub async fn send(self, request: &Request) -> Result<Response, ClientError> {
        self.send_from(request, Instant::now()).await
    }

    async fn send_from(
        mut self,
        request: &Request,
        started: Instant,
    ) -> Result<Response, ClientError> {
        let head = request.head(&self.authority)?;
        let body = request.body.as_deref().unwrap_or_default();
        // A server may answer (say 413) and close before reading a large body: then the write
        // fails but the answer is still there to read.
        let write_error = self.write(&head, body).await.err();
        let head = match self.read_head().await {
            Ok(head) => head,
            Err(e) => return Err(write_error.map_or(e, ClientError::Send)),
        };
        Ok(Response {
            elapsed: started.elapsed(),
            keep_alive: response::keeps_alive(&head),
            deframer: Deframer::new(Framing::of(&head, request.is_head())),
            pending: Bytes::new(),
            status: head.status,
            reason: head.reason,
            version: head.version,
            headers: head.headers,
            connection: self,
        })
    }

    async fn write(&mut self, head: &[u8], body: &[u8]) -> std::io::Result<()> {
        if body.len() <= ONE_WRITE {
            let mut all = Vec::with_capacity(head.len() + body.len());
            all.extend_from_slice(head);
            all.extend_from_slice(body);
            self.stream.write_all(&all).await?;
        } else {
            self.stream.write_all(head).await?;
            self.stream.write_all(body).await?;
        }
        self.stream.flush().await
    }

    /// Reads more bytes into the buffer; 0 when the server has closed.
    async fn fill(&mut self) -> Result<usize, ClientError> {
        self.buf.reserve(16 * 1024);
        self.stream
            .read_buf(&mut self.buf)
            .await
            .map_err(|e| ClientError::Response(format!("reading the response failed: {e}")))
    }

    /// The final response head (interim 1xx heads are skipped).
    async fn read_head(&mut self) -> Result<response::Head, ClientError> {
        loop {
            if let Some((head, len)) =
                response::parse_head(&self.buf).map_err(ClientError::Response)?
            {
                let _ = self.buf.split_to(len);
                if response::is_interim(head.status) {
                    continue;
                }
                return Ok(head);
            }
            if self.fill().await? == 0 {
                return Err(ClientError::Response(
                    "the connection closed before a response".into(),
                ));
            }
        }
    }
}

/// A response head, with the body still to read from the connection.
pub struct Response {
    pub status: u16,
    pub reason: String,
    pub version: Version,
    /// As received: names as spelled, in order, values as bytes.
    pub headers: Vec<HeaderPair>,
    /// From the start of the exchange (before connecting, for [`Client::send`]) to the end of
    /// the final response head.
    pub elapsed: Duration,
    keep_alive: bool,
    deframer: Deframer,
    /// Body bytes taken from the connection but not handed out yet (see [`Response::prefix`]).
    pending: Bytes,
    connection: Connection,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("reason", &self.reason)
            .field("version", &self.version)
            .field("headers", &self.headers)
            .field("elapsed", &self.elapsed)
            .finish_non_exhaustive()
    }
}

impl Response {
    /// The first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&HeaderPair> {
        find_header(&self.headers, name)
    }

    /// Whether the whole body has been read.
    pub fn is_complete(&self) -> bool {
        self.pending.is_empty() && self.deframer.is_done()
    }

    /// The next piece of the body as it arrives, framing removed; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ClientError> {
        if !self.pending.is_empty() {
            return Ok(Some(std::mem::take(&mut self.pending)));
        }
        loop {
            match self
                .deframer
                .next(&mut self.connection.buf)
                .map_err(ClientError::Response)?
            {
                Step::Data(data) => return Ok(Some(data)),
                Step::End => return Ok(None),
                Step::NeedMore => {
                    if self.connection.fill().await? == 0 {
                        self.deframer.at_eof().map_err(ClientError::Response)?;
                    }
                }
            }
        }
    }

    /// The whole body; an error once it passes `limit` bytes.
    pub async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, ClientError> {
        let mut body = Vec::new();
        while let Some(data) = self.chunk().await? {
            if body.len() + data.len() > limit {
                return Err(ClientError::Response(format!(
                    "the response body is larger than {limit} bytes"
                )));
            }
            body.extend_from_slice(&data);
        }
        Ok(body)
    }

    /// The first `n` bytes of the body (fewer when it is shorter); the rest stays unread.
    pub async fn prefix(&mut self, n: usize) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        while out.len() < n {
            let Some(data) = self.chunk().await? else {
                break;
            };
            let take = data.len().min(n - out.len());
            out.extend_from_slice(&data[..take]);
            // The rest is handed out by the next read.
            self.pending = data.slice(take..);
        }
        Ok(out)
    }

    /// Reads and discards the rest of the body, for at most `max_time` and `max_bytes`, then
    /// closes: a server that is still writing its answer is not reset mid-write.
    pub async fn drain(mut self, max_bytes: u64, max_time: Duration) {
        let read = async {
            let mut left = max_bytes;
            while left > 0 {
                match self.chunk().await {
                    Ok(Some(data)) => left = left.saturating_sub(data.len() as u64),
                    Ok(None) | Err(_) => break,
                }
            }
        };
        let _ = tokio::time::timeout(max_time, read).await;
    }

    /// The connection, once the body has been read to its end, if the server keeps it open.
    pub fn into_connection(self) -> Option<Connection> {
        (self.keep_alive && self.is_complete()).then_some(self.connection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_written_exactly() {
        let r = Request::new("POST", "/a?b=1")
            .header("X-Dup", "1")
            .header("content-TYPE", "application/json")
            .header("x-dup", "2")
            .header("X-Empty", "")
            .header("X-Obs", b"caf\xe9".to_vec())
            .body("{}");
        assert_eq!(
            r.head("h:1").unwrap(),
            b"POST /a?b=1 HTTP/1.1\r\nHost: h:1\r\nX-Dup: 1\r\ncontent-TYPE: application/json\r\n\
              x-dup: 2\r\nX-Empty:\r\nX-Obs: caf\xe9\r\nContent-Length: 2\r\n\r\n"
                .to_vec()
        );
        // A Host among the headers is written where it stands; HTTP/1.0 and an empty body.
        let r = Request::new("PUT", "/")
            .version(Version::Http10)
            .header("X", "1")
            .header("host", "other")
            .body(Bytes::new());
        assert_eq!(
            r.head("h").unwrap(),
            b"PUT / HTTP/1.0\r\nX: 1\r\nhost: other\r\nContent-Length: 0\r\n\r\n".to_vec()
        );
        assert_eq!(
            Request::new("GET", "/").head("h").unwrap(),
            b"GET / HTTP/1.1\r\nHost: h\r\n\r\n".to_vec()
        );
    }

    /// A server on 127.0.0.1:0 that reads one request head per answer in `answers` from one
    /// connection and writes the answer; the URL and what it received.
    async fn serve(answers: Vec<&'static [u8]>) -> (HttpUrl, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = HttpUrl::parse(&format!("http://{}/x", listener.local_addr().unwrap())).unwrap();
        let server = tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut received = Vec::new();
            for answer in answers {
                let mut heads = received.windows(4).filter(|w| w == b"\r\n\r\n").count();
                let want = heads + 1;
                while heads < want {
                    let mut chunk = [0u8; 4096];
                    let n = conn.read(&mut chunk).await.unwrap();
                    assert!(n > 0, "the client closed early");
                    received.extend_from_slice(&chunk[..n]);
                    heads = received.windows(4).filter(|w| w == b"\r\n\r\n").count();
                }
                conn.write_all(answer).await.unwrap();
            }
            received
        });
        (url, server)
    }

    #[tokio::test]
    async fn exchange_gives_status_time_and_the_first_bytes_of_a_chunked_answer() {
        let (url, server) = serve(vec![
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n\
              4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n",
        ])
        .await;
        let client = Client::new(None).unwrap();
        let request = Request::new("POST", url.request_target())
            .header("Webhook-Id", "msg_1")
            .body("{}");
        let got = client
            .exchange(&url, &request, Duration::from_secs(10), 6)
            .await
            .unwrap();
        assert_eq!((got.status, got.reason.as_str()), (201, "Created"));
        assert_eq!(got.preview, b"abcdef");
        assert!(!got.complete);
        assert_eq!(
            server.await.unwrap(),
            format!("POST /x HTTP/1.1\r\nHost: {}\r\nWebhook-Id: msg_1\r\nContent-Length: 2\r\n\r\n{{}}", url.authority()).into_bytes()
        );
    }

    #[tokio::test]
    async fn a_kept_alive_connection_carries_the_next_request() {
        let (url, server) = serve(vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none",
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\ntwo",
        ])
        .await;
        let client = Client::new(None).unwrap();
        let connection = client.connect(&url).await.unwrap();
        let mut first = connection.send(&Request::new("GET", "/1")).await.unwrap();
        assert_eq!(first.read_to_end(100).await.unwrap(), b"one");
        let connection = first.into_connection().expect("kept alive");
        let mut second = connection.send(&Request::new("GET", "/2")).await.unwrap();
        assert_eq!(second.status, 404);
        assert_eq!(second.read_to_end(100).await.unwrap(), b"two");
        assert!(second.into_connection().is_none(), "the server said close");
        let received = String::from_utf8(server.await.unwrap()).unwrap();
        assert!(
            received.contains("GET /1 HTTP/1.1\r\n") && received.contains("GET /2 HTTP/1.1\r\n")
        );
    }

    #[tokio::test]
    async fn silence_is_a_timeout_and_a_closed_port_a_connect_error() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = HttpUrl::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
        let client = Client::new(None).unwrap();
        let request = Request::new("GET", "/");
        // Accepted by the kernel's backlog, never answered.
        let e = client
            .send(&url, &request, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(e.is_timeout() && e.is_transient(), "{e}");
        // A port that is bound but not listening refuses connections, and stays ours for the
        // whole test: a dropped listener's port could be taken by another test's bind in
        // between (seen once, as "connection reset" instead of a connect error).
        let closed =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let any_port: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        closed.bind(&any_port.into()).unwrap();
        let closed_addr = closed.local_addr().unwrap().as_socket().unwrap();
        let url = HttpUrl::parse(&format!("http://{closed_addr}/")).unwrap();
        let e = client
            .send(&url, &request, Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(matches!(e, ClientError::Connect { .. }), "{e}");
        assert!(
            e.to_string().starts_with("cannot connect to 127.0.0.1:"),
            "{e}"
        );
    }

    #[test]
    fn unsendable_requests_are_refused() {
        let bad = [
            Request::new("GE T", "/"),
            Request::new("GET", "/a b"),
            Request::new("GET", "/").header("X", "a\r\nInjected: 1"),
            Request::new("GET", "/").header("Bad Name", "a"),
            Request::new("POST", "/").header("Content-Length", "1"),
            Request::new("POST", "/").header("Transfer-Encoding", "chunked"),
        ];
        for r in bad {
            assert!(r.head("h").is_err(), "{r:?}");
        }
    }
}
