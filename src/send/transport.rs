//! The HTTP boundary of `hookbin send` and `hookbin probe`: the one file that talks to an HTTP
//! client. Everything else builds an [`Outgoing`] and reads a [`Reply`] through [`Transport`], so
//! tests can put a fake in its place, and moving to another client changes this file only.
//!
//! Today it drives hyper's HTTP/1.1 client connection directly (TLS through the `tokio-rustls`
//! settings of [`crate::forward::client::tls_config`]) and fetches `--from` requests with
//! `hookbin forward`'s API client. hyper does not keep the case of header names; they are sent in
//! Title-Case (`Stripe-Signature`, `X-Hub-Signature-256`, `Webhook-Id`), which is how most
//! providers spell them, and HTTP compares names without regard to case anyway.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{HOST, HeaderName, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::ClientConfig;
use tokio_rustls::rustls::pki_types::ServerName;

use super::target::Target;
use crate::model::StoredRequest;

/// How much of an answer is kept: the output shows its first 80 bytes.
pub const ANSWER_BYTES: usize = 1024;

/// One request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub method: String,
    pub target: Target,
    /// In the order they are sent, after `Host`.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// The first [`ANSWER_BYTES`] of the body (or fewer).
    pub body_start: Vec<u8>,
}

/// Sends one request and waits at most `timeout` for the answer. `Err` is a sentence: the
/// connection failed, the TLS handshake failed, no answer in time...
pub trait Transport {
    fn send(
        &self,
        req: &Outgoing,
        timeout: Duration,
    ) -> impl Future<Output = Result<Reply, String>>;
}

/// The real client.
pub struct Http {
    /// Built on the first https request; its certificate file is read then.
    ca_cert: Option<PathBuf>,
    tls: std::sync::OnceLock<Arc<ClientConfig>>,
}

impl Http {
    /// A client that trusts the web PKI roots and the certificates in `ca_cert`. The file is
    /// read here, so a bad one is a usage error before anything is sent.
    pub fn new(ca_cert: Option<&Path>) -> Result<Http, String> {
        let http = Http {
            ca_cert: ca_cert.map(Path::to_owned),
            tls: std::sync::OnceLock::new(),
        };
        if ca_cert.is_some() {
            http.tls_config()?;
        }
        Ok(http)
    }

    fn tls_config(&self) -> Result<Arc<ClientConfig>, String> {
        if let Some(config) = self.tls.get() {
            return Ok(config.clone());
        }
        let config = crate::forward::client::tls_config(self.ca_cert.as_deref())?;
        Ok(self.tls.get_or_init(|| config).clone())
    }

    async fn exchange(&self, req: &Outgoing) -> Result<Reply, String> {
        let target = &req.target;
        let tcp = TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", target.authority))?;
        let _ = tcp.set_nodelay(true);
        let conn = if target.tls {
            let name = ServerName::try_from(target.host.clone())
                .map_err(|e| format!("{}: {e}", target.host))?;
            let stream = TlsConnector::from(self.tls_config()?)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {}: {e}", target.authority))?;
            Conn::Tls(Box::new(stream))
        } else {
            Conn::Plain(tcp)
        };
        let (mut sender, connection) = http1::Builder::new()
            .title_case_headers(true)
            .handshake(TokioIo::new(conn))
            .await
            .map_err(|e| format!("{}: {e}", target.authority))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        let result = async {
            let response = sender
                .send_request(request(req)?)
                .await
                .map_err(|e| describe_hyper_error(&e))?;
            let status = response.status().as_u16();
            let mut body = response.into_body();
            let mut body_start = Vec::new();
            while body_start.len() < ANSWER_BYTES {
                match body.frame().await {
                    None => break,
                    Some(Err(e)) => return Err(format!("reading the answer: {e}")),
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            let room = ANSWER_BYTES - body_start.len();
                            body_start.extend_from_slice(&data[..data.len().min(room)]);
                        }
                    }
                }
            }
            Ok(Reply { status, body_start })
        }
        .await;
        // The rest of a long answer is not needed: closing the connection ends it.
        driver.abort();
        result
    }
}

impl Transport for Http {
    async fn send(&self, req: &Outgoing, timeout: Duration) -> Result<Reply, String> {
        tokio::time::timeout(timeout, self.exchange(req))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "timed out after {}",
                    humantime::format_duration(timeout)
                ))
            })
    }
}

/// The hyper request: `Host` first, then the headers in order, then the body (hyper adds
/// `Content-Length`).
fn request(req: &Outgoing) -> Result<Request<Full<Bytes>>, String> {
    let method = Method::from_bytes(req.method.as_bytes())
        .map_err(|_| format!("{:?} is not an HTTP method", req.method))?;
    let mut request = Request::builder()
        .method(method)
        .uri(req.target.path_and_query.as_str())
        .body(Full::new(Bytes::from(req.body.clone())))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let headers = request.headers_mut();
    let host = HeaderValue::from_str(&req.target.authority)
        .map_err(|_| format!("{:?} cannot be a Host header", req.target.authority))?;
    headers.insert(HOST, host);
    for (name, value) in &req.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{name:?} is not a header name"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the {name} value holds bytes a header cannot carry"))?;
        headers.append(name, value);
    }
    Ok(request)
}

/// hyper's errors say "connection closed before message completed" and the like; its source
/// (an I/O error) says why.
fn describe_hyper_error(e: &hyper::Error) -> String {
    match std::error::Error::source(e) {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
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

/// Why a `--from` request could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL is not a captured request's URL (a usage error).
    #[error("--from {url:?}: {reason}")]
    Url { url: String, reason: String },
    /// The server could not be reached, or answered with an error.
    #[error("--from {url}: {reason}")]
    Failed { url: String, reason: String },
}

/// Fetches the request a `--from` URL names: its API URL (`/api/bins/BIN/requests/ID`) or a page
/// URL (`/bins/BIN/requests/ID`, `/bins/BIN?req=ID`), under any path prefix.
pub async fn fetch_captured(
    url: &str,
    ca_cert: Option<&Path>,
) -> Result<StoredRequest, FetchError> {
    use crate::forward::{client::Api, parse_request, urls::BinUrl};
    let bad = |reason: String| FetchError::Url {
        url: url.to_owned(),
        reason,
    };
    let bin = BinUrl::parse(url).map_err(|e| bad(e.to_string()))?;
    let id = captured_request_id(url).ok_or_else(|| {
        bad(
            "expected a captured request's URL, such as https://HOST/api/bins/BIN/requests/ID or \
             https://HOST/bins/BIN/requests/ID"
                .to_owned(),
        )
    })?;
    let rest = format!("/requests/{id}");
    let failed = |reason: String| FetchError::Failed {
        url: url.to_owned(),
        reason,
    };
    let mut api = Api::new(&bin, ca_cert).map_err(bad)?;
    let json = api
        .get_json(&rest)
        .await
        .map_err(|e| failed(e.to_string()))?;
    parse_request(&json)
        .map(|fetched| fetched.request)
        .map_err(failed)
}

/// The request id in a captured request's URL: the segment after `requests`, or `?req=`.
fn captured_request_id(url: &str) -> Option<String> {
    let without_fragment = url.split('#').next().unwrap_or(url);
    let (path, query) = without_fragment
        .split_once('?')
        .unwrap_or((without_fragment, ""));
    let segments: Vec<&str> = path.split('/').collect();
    let in_path = segments
        .windows(2)
        .rev()
        .find(|w| w[0] == "requests" && crate::ids::parse_request_id(w[1]).is_some())
        .map(|w| w[1].to_owned());
    in_path.or_else(|| {
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, v)| k == "req" && crate::ids::parse_request_id(v).is_some())
            .map(|(_, v)| v.into_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_request_ids_come_from_api_and_page_urls() {
        let bin = "0123456789abcdefghij";
        for (url, id) in [
            (format!("http://h/api/bins/{bin}/requests/42"), Some("42")),
            (format!("https://h/hooks/bins/{bin}/requests/7/"), Some("7")),
            (format!("http://h/bins/{bin}?req=9"), Some("9")),
            (format!("http://h/bins/{bin}"), None),
            (format!("http://h/api/bins/{bin}/requests/0x1"), None),
        ] {
            assert_eq!(captured_request_id(&url).as_deref(), id, "{url}");
        }
    }

    #[test]
    fn requests_carry_host_then_the_headers_in_order() {
        let out = Outgoing {
            method: "PATCH".into(),
            target: Target::parse("http://h:8080/in?x=1").unwrap(),
            headers: vec![
                ("Content-Type".into(), "application/json".into()),
                ("X-B".into(), "2".into()),
                ("X-A".into(), "1".into()),
            ],
            body: b"{}".to_vec(),
        };
        let req = request(&out).unwrap();
        assert_eq!(req.method(), "PATCH");
        assert_eq!(req.uri(), "/in?x=1");
        let names: Vec<&str> = req.headers().keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["host", "content-type", "x-b", "x-a"]);
        assert_eq!(req.headers()["host"], "h:8080");
    }
}
