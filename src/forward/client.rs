//! The hookbin side of `hookbin forward`: HTTP/1.1 requests to the bin's API, over TLS for an
//! `https://` bin URL (rustls with the ring provider and the web PKI roots, plus `--ca-cert`).
//!
//! hyper's low-level client connection is enough here: one connection for the event stream and
//! one kept alive for fetching requests, reopened when the server has closed it.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, HOST, HeaderValue, USER_AGENT};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};

use super::sse;
use super::urls::BinUrl;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// One API call (connect, request, whole answer) at most.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The server sends a keep-alive comment every 15 s: this long without a byte means the
/// connection is dead (a laptop that slept, a proxy that dropped it silently).
const STREAM_IDLE: Duration = Duration::from_secs(45);
/// A Request JSON holds a body of up to 5 MiB twice (base64 and text) plus headers.
const MAX_JSON: usize = 64 * 1024 * 1024;

const AGENT: &str = concat!("hookbin-forward/", env!("CARGO_PKG_VERSION"));

/// A failed API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The server could not be reached or the connection broke: worth retrying.
    #[error("{0}")]
    Transport(String),
    /// The server answered with an unexpected status.
    #[error("{status}: {message}")]
    Status { status: u16, message: String },
}

impl CallError {
    pub fn is_not_found(&self) -> bool {
        matches!(self, CallError::Status { status: 404, .. })
    }
}

/// TCP, or TLS over TCP.
enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The TLS client settings: ring, the web PKI roots, and the certificates of `ca_cert`.
pub fn tls_config(ca_cert: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_cert {
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("--ca-cert {}: {e}", path.display()))?;
        let mut added = 0;
        for cert in certs {
            let cert = cert.map_err(|e| format!("--ca-cert {}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("--ca-cert {}: {e}", path.display()))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!(
                "--ca-cert {}: no PEM certificate in the file",
                path.display()
            ));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // hyper speaks HTTP/1.1 here; say so, so that a server never picks h2.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Talks to one bin's API.
pub struct Api {
    bin: BinUrl,
    tls: Option<TlsConnector>,
    /// The kept-alive connection for fetches, if one is open.
    fetcher: Option<SendRequest<Empty<Bytes>>>,
}

impl Api {
    pub fn new(bin: &BinUrl, ca_cert: Option<&Path>) -> Result<Api, String> {
        let tls = if bin.url.is_https() {
            Some(TlsConnector::from(tls_config(ca_cert)?))
        } else {
            None
        };
        Ok(Api {
            bin: bin.clone(),
            tls,
            fetcher: None,
        })
    }

    async fn connect(&self) -> Result<SendRequest<Empty<Bytes>>, CallError> {
        let url = &self.bin.url;
        let transport = |e: &dyn std::fmt::Display| {
            CallError::Transport(format!("cannot connect to {}: {e}", url.authority()))
        };
        let connect = async {
            let tcp = TcpStream::connect((url.host(), url.port()))
                .await
                .map_err(|e| transport(&e))?;
            let _ = tcp.set_nodelay(true);
            let conn = match &self.tls {
                None => Conn::Plain(tcp),
                Some(tls) => {
                    let name =
                        ServerName::try_from(url.host().to_owned()).map_err(|e| transport(&e))?;
                    let stream = tls
                        .connect(name, tcp)
                        .await
                        .map_err(|e| transport(&format!("TLS: {e}")))?;
                    Conn::Tls(Box::new(stream))
                }
            };
            let (sender, connection) = http1::handshake(TokioIo::new(conn))
                .await
                .map_err(|e| transport(&e))?;
            // Drives the connection; ends when both sides are done with it.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(sender)
        };
        tokio::time::timeout(CONNECT_TIMEOUT, connect)
            .await
            .unwrap_or_else(|_| Err(transport(&"timed out")))
    }

    fn request(
        &self,
        path: &str,
        accept: &'static str,
    ) -> Result<Request<Empty<Bytes>>, CallError> {
        let mut req = Request::get(path)
            .body(Empty::new())
            .map_err(|e| CallError::Transport(format!("bad request path {path:?}: {e}")))?;
        let h = req.headers_mut();
        if let Ok(host) = HeaderValue::from_str(self.bin.url.authority()) {
            h.insert(HOST, host);
        }
        h.insert(USER_AGENT, HeaderValue::from_static(AGENT));
        h.insert(ACCEPT, HeaderValue::from_static(accept));
        Ok(req)
    }

    /// GETs `{prefix}/api/bins/{bin}{rest}` and parses the JSON answer; a non-200 status is a
    /// [`CallError::Status`] with the server's error message.
    pub async fn get_json(&mut self, rest: &str) -> Result<Value, CallError> {
        let path = self.bin.api_path(rest);
        match tokio::time::timeout(CALL_TIMEOUT, self.get_json_once(&path)).await {
            Ok(result) => result,
            Err(_) => {
                self.fetcher = None;
                Err(CallError::Transport(format!("{path}: no answer in time")))
            }
        }
    }

    async fn get_json_once(&mut self, path: &str) -> Result<Value, CallError> {
        let response = self.send_kept_alive(path).await?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_JSON)
            .collect()
            .await
            .map_err(|e| {
                self.fetcher = None;
                CallError::Transport(format!("reading {path}: {e}"))
            })?
            .to_bytes();
        let json: Result<Value, _> = serde_json::from_slice(&bytes);
        if status != StatusCode::OK {
            let message = json
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(200).collect());
            return Err(CallError::Status {
                status: status.as_u16(),
                message,
            });
        }
        json.map_err(|e| CallError::Transport(format!("{path}: the answer is not JSON: {e}")))
    }

    /// Sends on the kept-alive connection; a connection the server closed meanwhile is replaced
    /// once (a GET is safe to repeat).
    async fn send_kept_alive(&mut self, path: &str) -> Result<Response<Incoming>, CallError> {
        for attempt in 0..2 {
            let reused = self.fetcher.is_some();
            let mut sender = match self.fetcher.take() {
                Some(s) => s,
                None => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                if reused {
                    continue;
                }
                return Err(CallError::Transport("the connection closed".into()));
            }
            match sender
                .send_request(self.request(path, "application/json")?)
                .await
            {
                Ok(response) => {
                    self.fetcher = Some(sender);
                    return Ok(response);
                }
                Err(_) if reused && attempt == 0 => continue,
                Err(e) => return Err(CallError::Transport(format!("{path}: {e}"))),
            }
        }
        Err(CallError::Transport(format!(
            "{path}: the connection closed"
        )))
    }

    /// Opens the bin's event stream on a connection of its own, resuming after `last_id`
    /// (`0`: from the start of the bin).
    pub async fn open_stream(&self, last_id: i64) -> Result<EventStream, CallError> {
        let path = self.bin.api_path("/stream");
        let open = async {
            let mut sender = self.connect().await?;
            let mut req = self.request(&path, "text/event-stream")?;
            req.headers_mut()
                .insert("last-event-id", HeaderValue::from(last_id));
            let response = sender
                .send_request(req)
                .await
                .map_err(|e| CallError::Transport(format!("{path}: {e}")))?;
            Ok::<_, CallError>((sender, response))
        };
        let (sender, response) = tokio::time::timeout(CALL_TIMEOUT, open)
            .await
            .map_err(|_| CallError::Transport(format!("{path}: no answer in time")))??;
        let status = response.status();
        if status != StatusCode::OK {
            let bytes = Limited::new(response.into_body(), 64 * 1024)
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("").to_owned());
            return Err(CallError::Status {
                status: status.as_u16(),
                message,
            });
        }
        Ok(EventStream {
            _sender: sender,
            body: response.into_body(),
            parser: sse::Parser::default(),
            ready: Default::default(),
        })
    }
}

/// An open event stream.
pub struct EventStream {
    /// Keeps the connection open.
    _sender: SendRequest<Empty<Bytes>>,
    body: Incoming,
    parser: sse::Parser,
    ready: std::collections::VecDeque<sse::Event>,
}

impl EventStream {
    /// The next event; `Err` when the stream ended or broke (reconnect).
    pub async fn next(&mut self) -> Result<sse::Event, String> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(event);
            }
            match tokio::time::timeout(STREAM_IDLE, self.body.frame()).await {
                Err(_) => {
                    return Err(format!("no data for {} s", STREAM_IDLE.as_secs()));
                }
                Ok(None) => return Err("the server closed the stream".into()),
                Ok(Some(Err(e))) => return Err(format!("the stream broke: {e}")),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.ready.extend(self.parser.feed(&data));
                    }
                }
            }
        }
    }
}
