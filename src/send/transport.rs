//! The HTTP boundary of `hookbin send` and `hookbin probe`: the one file that talks to the HTTP
//! client. Everything else builds an [`Outgoing`] and reads a [`Reply`] through [`Transport`], so
//! tests can put a fake in its place.
//!
//! The real transport is the shared [`crate::client::Client`], which writes the request byte for
//! byte: header names keep the provider's spelling (`Stripe-Signature`, `webhook-id`,
//! `X-BOTIX-Signature`) and their order. `--from` is fetched with `hookbin forward`'s API client.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;

use crate::client::{Client, ClientError, Request};
use crate::model::{HeaderPair, StoredRequest};
use crate::wire::url::HttpUrl;

/// How much of an answer is read: the output shows its first 80 bytes.
pub const ANSWER_BYTES: usize = 80;

/// One request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub method: String,
    pub url: HttpUrl,
    /// In the order they are sent, after `Host`; names as spelled.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// From before connecting to the end of the response head.
    pub elapsed: Duration,
    /// The first [`ANSWER_BYTES`] of the body (or fewer).
    pub body_start: Vec<u8>,
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// A sentence: the connection failed, no answer in time...
    pub message: String,
    /// Whether trying again later may work (a network problem or a timeout), as opposed to a
    /// request or a setup that can never work.
    pub transient: bool,
}

/// Sends one request and waits at most `timeout` for the answer.
pub trait Transport {
    fn send(
        &self,
        req: &Outgoing,
        timeout: Duration,
    ) -> impl Future<Output = Result<Reply, Failure>>;
}

/// The real client.
pub struct Http {
    client: Client,
}

impl Http {
    /// A client that trusts the web PKI roots and the certificates in `ca_cert`. The file is
    /// read here, so a bad one is a usage error before anything is sent.
    pub fn new(ca_cert: Option<&Path>) -> Result<Http, String> {
        let client = Client::new(ca_cert).map_err(|e| e.to_string())?;
        Ok(Http { client })
    }
}

impl Transport for Http {
    async fn send(&self, req: &Outgoing, timeout: Duration) -> Result<Reply, Failure> {
        let mut request = Request::new(req.method.as_str(), req.url.request_target());
        request.headers = req
            .headers
            .iter()
            .map(|(n, v)| HeaderPair::new(n.as_str(), v.as_bytes()))
            .collect();
        // A GET or HEAD without a body goes without `Content-Length: 0`.
        if !req.body.is_empty() || !matches!(req.method.as_str(), "GET" | "HEAD") {
            request = request.body(Bytes::from(req.body.clone()));
        }
        match self
            .client
            .exchange(&req.url, &request, timeout, ANSWER_BYTES)
            .await
        {
            Ok(exchange) => Ok(Reply {
                status: exchange.status,
                elapsed: exchange.elapsed,
                body_start: exchange.preview,
            }),
            Err(e) => Err(failure(&e)),
        }
    }
}

fn failure(e: &ClientError) -> Failure {
    Failure {
        message: e.to_string(),
        transient: e.is_transient(),
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
pub async fn fetch_captured(url: &str, transport: &Http) -> Result<StoredRequest, FetchError> {
    use crate::forward::{client::Api, parse_request, urls::BinUrl};
    let bad = |reason: String| FetchError::Url {
        url: url.to_owned(),
        reason,
    };
    // The page form's `?req=ID` names the request; the bin's URL is what comes before it.
    let without_query = url.split_once('?').map_or(url, |(before, _)| before);
    let bin = BinUrl::parse(without_query).map_err(bad)?;
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
    let mut api = Api::new(&bin, transport.client.clone());
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
}
