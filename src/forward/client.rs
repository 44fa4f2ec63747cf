//! The hookbin side of `hookbin forward`: the bin's API and its event stream, through
//! [`crate::client`] (TLS for an `https://` bin URL).
//!
//! One connection carries the event stream; another is kept alive for fetching requests and
//! reopened when the server has closed it.

use std::time::Duration;

use serde_json::Value;

use super::sse;
use super::urls::BinUrl;
use crate::client::{Client, ClientError, Connection, Request, Response};

/// One API call (connect, request, whole answer) at most.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The server sends a keep-alive comment every 15 s: this long without a byte means the
/// connection is dead (a laptop that slept, a proxy that dropped it silently).
const STREAM_IDLE: Duration = Duration::from_secs(45);
/// A Request JSON holds a body of up to 5 MiB twice (base64 and text) plus headers.
const MAX_JSON: usize = 64 * 1024 * 1024;
/// The error answer of a refused stream is read up to this size.
const MAX_ERROR: usize = 64 * 1024;

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

impl From<ClientError> for CallError {
    fn from(e: ClientError) -> Self {
        CallError::Transport(e.to_string())
    }
}

/// Talks to one bin's API.
pub struct Api {
    client: Client,
    bin: BinUrl,
    /// The kept-alive connection for fetches, if one is open.
    fetcher: Option<Connection>,
}

impl Api {
    pub fn new(bin: &BinUrl, client: Client) -> Api {
        Api {
            client,
            bin: bin.clone(),
            fetcher: None,
        }
    }

    fn request(&self, path: &str, accept: &str) -> Request {
        let request = Request::new("GET", path)
            .header("User-Agent", AGENT)
            .header("Accept", accept);
        match &self.bin.token {
            Some(token) => request.header("Authorization", format!("Bearer {token}")),
            None => request,
        }
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
        let mut response = self.send_kept_alive(path).await?;
        let bytes = response
            .read_to_end(MAX_JSON)
            .await
            .map_err(|e| CallError::Transport(format!("reading {path}: {e}")))?;
        let status = response.status;
        self.fetcher = response.into_connection();
        let json: Result<Value, _> = serde_json::from_slice(&bytes);
        if status != 200 {
            let message = json
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(200).collect());
            return Err(CallError::Status { status, message });
        }
        json.map_err(|e| CallError::Transport(format!("{path}: the answer is not JSON: {e}")))
    }

    /// Sends on the kept-alive connection; a connection the server closed meanwhile is replaced
    /// once (a GET is safe to repeat).
    async fn send_kept_alive(&mut self, path: &str) -> Result<Response, CallError> {
        let request = self.request(path, "application/json");
        if let Some(connection) = self.fetcher.take()
            && let Ok(response) = connection.send(&request).await
        {
            return Ok(response);
        }
        let connection = self.client.connect(&self.bin.url).await?;
        connection
            .send(&request)
            .await
            .map_err(|e| CallError::Transport(format!("{path}: {e}")))
    }

    /// Opens the bin's event stream on a connection of its own, resuming after `last_id`
    /// (`0`: from the start of the bin).
    pub async fn open_stream(&self, last_id: i64) -> Result<EventStream, CallError> {
        let path = self.bin.api_path("/stream");
        let request = self
            .request(&path, "text/event-stream")
            .header("Last-Event-ID", last_id.to_string());
        let open = async {
            let connection = self.client.connect(&self.bin.url).await?;
            connection
                .send(&request)
                .await
                .map_err(|e| CallError::Transport(format!("{path}: {e}")))
        };
        let mut response = tokio::time::timeout(CALL_TIMEOUT, open)
            .await
            .map_err(|_| CallError::Transport(format!("{path}: no answer in time")))??;
        if response.status != 200 {
            let read = tokio::time::timeout(CALL_TIMEOUT, response.read_to_end(MAX_ERROR));
            let bytes = read.await.ok().and_then(Result::ok).unwrap_or_default();
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| response.reason.clone());
            return Err(CallError::Status {
                status: response.status,
                message,
            });
        }
        Ok(EventStream {
            response,
            parser: sse::Parser::default(),
            ready: Default::default(),
        })
    }
}

/// An open event stream.
pub struct EventStream {
    response: Response,
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
            match tokio::time::timeout(STREAM_IDLE, self.response.chunk()).await {
                Err(_) => {
                    return Err(format!("no data for {} s", STREAM_IDLE.as_secs()));
                }
                Ok(Ok(None)) => return Err("the server closed the stream".into()),
                Ok(Err(e)) => return Err(format!("the stream broke: {e}")),
                Ok(Ok(Some(data))) => self.ready.extend(self.parser.feed(&data)),
            }
        }
    }
}
