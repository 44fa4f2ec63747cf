//! Storage: bins and captured requests, in SQLite (the default) or PostgreSQL.
//!
//! [`Store`] is the one interface everything above uses; it dispatches to an engine:
//! - [`sqlite`]: one file, one writer thread with group commit, a pool of read-only connections,
//!   and an authoritative in-memory index of the live bins (one process owns the file);
//! - [`postgres`]: several hookbin nodes on one database. A writer task per node commits captures
//!   in batches (one multi-row INSERT per batch), live bins are cached (a miss asks the database,
//!   since another node may have made the bin), and LISTEN/NOTIFY tells every node's event
//!   streams about every node's commits.
//!
//! Both engines give the same guarantees: a capture is answered only after its commit, each bin
//! keeps at most `max_per_bin` requests (oldest evicted), deleting a bin deletes its requests,
//! request ids count per bin and are never reused, and expired bins answer 404 until reaped.

mod headers;
pub mod postgres;
pub mod sqlite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::events::{Event, EventHub};
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;

pub use sqlite::{SCHEMA_SQL, SCHEMA_VERSION};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("cannot open database {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("database schema: {0}")]
    Schema(String),
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    /// The disk (or the filesystem) holding the database is full: nothing of the operation was
    /// stored. Captures answer `507 storage_full`; reads and deletes keep working.
    #[error("the database's disk is full: {0}")]
    Full(String),
    /// A PostgreSQL statement failed (the server answered with an error).
    #[error("database error: {0}")]
    Postgres(String),
    /// The database cannot be reached (connection refused or lost, or no answer within the
    /// timeout). Nothing of the operation was acknowledged; retrying later may succeed.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The batch this operation was in failed to commit; nothing of it was stored.
    #[error("commit failed: {0}")]
    Commit(String),
    /// The write queue is full; the caller should answer 503 and ask to retry.
    #[error("the write queue is full")]
    QueueFull,
    /// The writer has stopped (shutdown, or it died).
    #[error("the database writer has stopped")]
    Closed,
    #[error("a stored row is damaged: {0}")]
    Corrupt(String),
    /// A read did not run to its end (its thread panicked, or the runtime is stopping).
    #[error("a database read failed: {0}")]
    ReadTask(String),
    /// A bug in this module (an operation got another's result), not a database failure.
    #[error("internal storage error: {0}")]
    Internal(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        if is_disk_full(&e) {
            StoreError::Full(e.to_string())
        } else {
            StoreError::Sqlite(e)
        }
    }
}

/// SQLite's "database or disk is full" (SQLITE_FULL): also what a filesystem quota gives.
pub(crate) fn is_disk_full(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
}

impl StoreError {
    fn open(path: &Path, e: rusqlite::Error) -> Self {
        StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        }
    }
}

/// How much one search page may scan before it stops and hands back a cursor to go on from.
#[derive(Debug, Clone, Copy)]
pub struct ScanBudget {
    pub max_rows: usize,
    /// Stored body bytes read (the decoded size is bounded by the matcher's own limit).
    pub max_bytes: usize,
    /// Wall time: decoding is what a budget of rows and bytes cannot bound.
    pub max_time: std::time::Duration,
    /// Rows always scanned before `max_time` counts, so that a small bin is searched in one page
    /// whatever the machine's load (a scan preempted for a while would otherwise stop early).
    pub time_after_rows: usize,
}

impl ScanBudget {
    /// Whether a scan that has looked at `rows` rows and `bytes` stored body bytes since
    /// `started` has to stop here.
    pub fn spent(&self, rows: usize, bytes: usize, started: std::time::Instant) -> bool {
        rows >= self.max_rows
            || bytes >= self.max_bytes
            || (rows >= self.time_after_rows && started.elapsed() >= self.max_time)
    }
}

#[cfg(test)]
mod scan_budget_tests {
    use super::ScanBudget;
    use std::time::{Duration, Instant};

    #[test]
    fn time_counts_only_after_the_first_rows() {
        let budget = ScanBudget {
            max_rows: 100,
            max_bytes: 1000,
            max_time: Duration::ZERO,
            time_after_rows: 10,
        };
        let started = Instant::now();
        // Out of time from the start, but the first 10 rows are always scanned.
        assert!(!budget.spent(9, 0, started));
        assert!(budget.spent(10, 0, started));
        let timeless = ScanBudget {
            max_time: Duration::from_secs(3600),
            ..budget
        };
        assert!(!timeless.spent(99, 999, started));
        assert!(timeless.spent(100, 0, started));
        assert!(timeless.spent(0, 1000, started));
    }
}

/// One page of a search: the matches (newest first) and, when the scan did not reach the
/// bin's oldest request, the id to resume below.
#[derive(Debug, Clone, Default)]
pub struct SearchPage {
    pub rows: Vec<RequestSummary>,
    pub resume_before: Option<i64>,
}

/// Where the data lives: what `--db` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection string (`postgres://...` or `postgresql://...`).
    Postgres(String),
}

impl Location {
    /// `postgres://` and `postgresql://` select PostgreSQL; anything else is a SQLite path.
    pub fn parse(db: &Path) -> Location {
        match db.to_str() {
            Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
                Location::Postgres(s.to_owned())
            }
            _ => Location::Sqlite(db.to_owned()),
        }
    }

    /// For logs: the path, or the URL without its password.
    pub fn redacted(&self) -> String {
        match self {
            Location::Sqlite(path) => path.display().to_string(),
            Location::Postgres(url) => postgres::redact(url),
        }
    }
}

/// A queued capture; [`PendingCapture::outcome`] resolves once its batch is committed.
#[derive(Debug)]
pub struct PendingCapture(oneshot::Receiver<(Result<CaptureOutcome, StoreError>, Box<NewCapture>)>);

impl PendingCapture {
    pub async fn outcome(self) -> Result<CaptureOutcome, StoreError> {
        match self.0.await {
            // The request's buffers are dropped here, on the caller's thread.
            Ok((outcome, _capture)) => outcome,
            Err(_) => Err(StoreError::Closed),
        }
    }
}

/// A capture's answer carries the capture back: its buffers are then freed by the waiting task,
/// not by the writer, which is the one every capture waits for (freeing was 14% of its time).
pub type CaptureReply = oneshot::Sender<(Result<CaptureOutcome, StoreError>, Box<NewCapture>)>;

/// A request to store, with the columns derived from it prepared by the caller (off the writer,
/// which is the bottleneck under load).
#[derive(Debug)]
pub struct NewCapture {
    /// Without its header lines (`request.headers` is empty): they are in `headers_blob`.
    pub request: StoredRequest,
    /// The header lines in their stored form ([`crate::model::header_lines`]).
    pub headers_blob: Vec<u8>,
    pub content_type: Option<String>,
    /// The answer sent to the capture, as stored ([`crate::model::ResponseRecord::to_json`]):
    /// made by the capture (the default answer's once for all, `http::capture`), not from
    /// `request.response`, which only reads fill.
    pub response_json: Option<Arc<str>>,
    /// The body as SQLite stores it when compressed (`sqlite::body`); set by that engine only.
    pub packed_body: Option<Vec<u8>>,
    pub max_per_bin: u64,
    /// `--max-bin-bytes`: the bin's oldest requests are evicted beyond this many stored bytes.
    pub max_bin_bytes: u64,
}

impl NewCapture {
    /// What this request adds to its bin's `bytes_used`: the stored body and header bytes (the
    /// same measure as `length(body) + length(headers)` in SQL).
    pub fn stored_bytes(&self) -> u64 {
        (self.request.body.len() + self.headers_blob.len()) as u64
    }

    /// `request` without its header lines, which `headers_blob` holds.
    fn new(
        request: StoredRequest,
        headers_blob: Vec<u8>,
        response_json: Option<Arc<str>>,
        max_per_bin: u64,
        max_bin_bytes: u64,
    ) -> Box<Self> {
        debug_assert!(request.headers.is_empty());
        Box::new(NewCapture {
            // PostgreSQL's text cannot hold NUL: the list column gets U+FFFD instead (the
            // header itself is kept byte-exact in the headers column).
            content_type: Self::content_type_of(&headers_blob).map(|t| {
                if t.contains('\0') {
                    t.replace('\0', "\u{fffd}")
                } else {
                    t
                }
            }),
            headers_blob,
            response_json,
            packed_body: None,
            request,
            max_per_bin,
            max_bin_bytes,
        })
    }

    /// The first `Content-Type` value as text, as [`StoredRequest::content_type`] reads it.
    fn content_type_of(headers_blob: &[u8]) -> Option<String> {
        crate::model::header_lines::find(headers_blob, "content-type")
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// What live streams are told of this capture once it is stored as `id` (the
    /// [`RequestSummary`] of the request with its headers).
    pub fn summary(&self, id: i64) -> RequestSummary {
        let r = &self.request;
        RequestSummary {
            id: crate::ids::RequestId::from_row(id),
            bin_id: r.bin_id.clone(),
            method: r.method.clone(),
            path: r.path.clone(),
            subpath: r.subpath.clone(),
            query: r.query.clone(),
            content_type: Self::content_type_of(&self.headers_blob),
            body_size: r.body_size,
            body_truncated: r.body_truncated,
            remote_addr: r.remote_addr.clone(),
            received_at: r.received_at,
        }
    }
}

#[cfg(test)]
mod new_capture_tests {
    use super::*;

    #[test]
    fn the_content_type_and_the_summary_come_from_the_header_lines() {
        let request = StoredRequest::sample::<&[u8]>(
            "b",
            "/x",
            "q=1",
            &[
                ("X-A", &b"1"[..]),
                ("Content-TYPE", &b"text/a\xff"[..]),
                ("content-type", &b"text/b"[..]),
            ],
            b"body",
        );
        let summary_of_pairs = RequestSummary::from(&request);
        let sent = request.headers.clone();
        let blob = headers::encode(&request.headers);
        let mut request = request;
        request.headers = Vec::new();
        let capture = NewCapture::new(request, blob, None, 10, 1000);
        assert_eq!(capture.content_type.as_deref(), Some("text/a\u{fffd}"));
        let summary = capture.summary(7);
        assert_eq!(summary.id.get(), 7);
        assert_eq!(
            RequestSummary {
                id: summary_of_pairs.id,
                ..summary
            },
            summary_of_pairs,
            "the summary a stream gets is the request's"
        );
        let pairs = headers::decode(&capture.headers_blob).unwrap();
        assert_eq!(pairs, sent);
        assert_eq!(
            capture.stored_bytes(),
            (4 + capture.headers_blob.len()) as u64
        );
    }
}

/// The result of a capture, known only after its batch committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureOutcome {
    /// Stored under this request id; `evicted` older requests were dropped to respect the cap.
    Stored { id: i64, evicted: u64 },
    /// The bin was deleted or expired before the row could be written; nothing stored.
    BinGone,
}

/// What one reaping step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapProgress {
    pub requests_deleted: u64,
    pub bins_deleted: Vec<String>,
    /// True when no expired bin is left (or, on PostgreSQL, another node is reaping).
    pub done: bool,
    /// The step's own time in the database, COMMIT included but without its wait in the write
    /// queue, when the engine measures it (SQLite's writer does); the reaper paces itself by it.
    pub step_time: Option<std::time::Duration>,
}

/// SQLite's `synchronous` setting: what a commit waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// Survives a crash of hookbin (kill -9); the last commits may be lost on power failure.
    Normal,
    /// Also survives power failure: one fsync per committed batch.
    Full,
}

/// Settings for [`Store::open`].
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub location: Location,
    /// SQLite only; PostgreSQL commits durably as its server is configured.
    pub synchronous: Synchronous,
    pub write_queue: usize,
    /// Read connections (SQLite) or pooled connections (PostgreSQL).
    pub read_connections: usize,
}

/// What a capture needs to know about a live bin, without a query.
#[derive(Debug, Clone)]
pub struct BinEntry {
    pub expires_at: i64,
    pub response: Option<Arc<ResponseSpec>>,
    /// A private bin's view token hash: every read needs the token (checked without a query).
    pub view_token_hash: Option<[u8; 32]>,
}

/// An event stream's subscription to a bin's new captures: [`Store::subscribe`]. Every capture
/// committed after subscribing reaches `events`, in id order; a stream skips ids it already
/// sent (on PostgreSQL a catch-up may repeat some).
#[derive(Debug)]
pub struct Subscription {
    pub events: tokio::sync::broadcast::Receiver<Event>,
    /// The bin's newest id just before subscribing: where a live stream starts, and the floor of
    /// its catch-ups. Ids at or below it may still arrive (another stream's catch-up on
    /// PostgreSQL; on SQLite, batches other streams of the bin kept in memory) and are not new.
    pub start: i64,
}

/// A stored custom response, checked again. Headers an older hookbin accepted and this one
/// refuses are left out (the rest of the response still applies), and a response that cannot be
/// read at all is ignored (the bin answers `200 ok`): either way with a warning.
fn stored_response(id: &str, json: &str) -> Option<Arc<ResponseSpec>> {
    let noted = |e: crate::response::SpecError| {
        tracing::warn!(bin_id = %id, "custom response: {e}; that header is no longer sent");
    };
    match ResponseSpec::from_stored_noting(json, id, noted) {
        Ok(spec) => Some(Arc::new(spec)),
        Err(e) => {
            tracing::warn!(
                bin_id = %id,
                "custom response cannot be read ({e}); the bin answers 200 ok instead"
            );
            None
        }
    }
}

/// The handle every part of the server uses. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub enum Store {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

/// The engine's background work (writer, checkpoints, listener): see [`Workers::join`].
#[derive(Debug)]
pub enum Workers {
    Sqlite(sqlite::WriterThread),
    Postgres(postgres::PgWorkers),
}

impl Workers {
    /// Waits until every queued write has been committed and the background work has stopped.
    /// Call after dropping every `Store` handle, or this waits forever.
    pub async fn join(self) {
        match self {
            Workers::Sqlite(threads) => {
                let _ = tokio::task::spawn_blocking(move || threads.join()).await;
            }
            Workers::Postgres(workers) => workers.join().await,
        }
    }
}

/// Calls the same method on whichever engine this is.
macro_rules! dispatch {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Store::Sqlite($s) => $call,
            Store::Postgres($s) => $call,
        }
    };
}

/// The writer's work since the process started, for /metrics: with the captures counted there,
/// captures per batch (group commit) and WAL bytes per capture, the two figures that set how
/// much a capture costs the disk (bench/RESULTS.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Write transactions committed: one per batch (SQLite: every write the writer thread
    /// commits, captures and the rest; PostgreSQL: the capture batches).
    pub batches: u64,
    /// Bytes SQLite wrote to its WAL (frames and headers); `None` on PostgreSQL.
    pub wal_bytes: Option<u64>,
}

impl Store {
    /// Opens the database named by `config.location` (creating or migrating its schema) and
    /// starts the engine's writer. `now` is the current unix time in ms.
    pub async fn open(
        config: &StoreConfig,
        events: Arc<EventHub>,
        now: i64,
    ) -> Result<(Store, Workers), StoreError> {
        match &config.location {
            Location::Sqlite(path) => {
                let (store, threads) = sqlite::SqliteStore::open(path, config, events, now)?;
                Ok((Store::Sqlite(store), Workers::Sqlite(threads)))
            }
            Location::Postgres(url) => {
                let (store, workers) = postgres::PgStore::open(url, config, events).await?;
                Ok((Store::Postgres(store), Workers::Postgres(workers)))
            }
        }
    }

    /// The SQLite file, when this is SQLite (for its size on /metrics).
    pub fn file_path(&self) -> Option<&Path> {
        match self {
            Store::Sqlite(s) => Some(s.path()),
            Store::Postgres(_) => None,
        }
    }

    /// Which engine: `sqlite` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            Store::Sqlite(_) => "sqlite",
            Store::Postgres(_) => "postgres",
        }
    }

    /// Bytes of the database in use, as of the last committed batch (SQLite: its pages holding
    /// data; PostgreSQL: the stored bytes of every bin, refreshed from the database once a
    /// second and after deletes). What `--max-db-bytes` compares.
    pub fn used_bytes(&self) -> u64 {
        dispatch!(self, s => s.used_bytes())
    }

    /// Writes waiting for the writer right now.
    pub fn queue_depth(&self) -> usize {
        dispatch!(self, s => s.queue_depth())
    }

    /// What the writer has committed since the process started (/metrics).
    pub fn write_stats(&self) -> WriteStats {
        dispatch!(self, s => s.write_stats())
    }

    /// The live bin `id` as this node knows it, without a query: authoritative on SQLite, a
    /// cache on PostgreSQL (use [`Store::find_bin`] where a miss must be checked).
    pub fn bin_entry(&self, id: &str, now: i64) -> Option<BinEntry> {
        dispatch!(self, s => s.bin_entry(id, now))
    }

    /// The live bin `id`: from memory, or on PostgreSQL from the database when this node has not
    /// seen it (another node may have created it); then cached.
    pub async fn find_bin(&self, id: &str, now: i64) -> Result<Option<BinEntry>, StoreError> {
        match self {
            Store::Sqlite(s) => Ok(s.bin_entry(id, now)),
            Store::Postgres(s) => s.find_bin(id, now).await,
        }
    }

    /// Live bins known in memory (on PostgreSQL: those this node has cached).
    pub fn bin_count(&self) -> usize {
        dispatch!(self, s => s.bin_count())
    }

    pub async fn create_bin(
        &self,
        bin: Bin,
        response: Option<Arc<ResponseSpec>>,
    ) -> Result<(), StoreError> {
        dispatch!(self, s => s.create_bin(bin, response).await)
    }

    /// The bin with its current request count, or `None` if absent or expired.
    pub async fn get_bin(&self, id: &str, now: i64) -> Result<Option<Bin>, StoreError> {
        dispatch!(self, s => s.get_bin(id, now).await)
    }

    /// Deletes the bin and (cascade) its requests. `false` if there was no such bin.
    pub async fn delete_bin(&self, id: &str) -> Result<bool, StoreError> {
        dispatch!(self, s => s.delete_bin(id).await)
    }

    /// Sets (or with `None` clears) the bin's custom response; the updated bin, or `None`.
    pub async fn set_response(
        &self,
        id: &str,
        response: Option<Arc<ResponseSpec>>,
        now: i64,
    ) -> Result<Option<Bin>, StoreError> {
        dispatch!(self, s => s.set_response(id, response, now).await)
    }

    /// Queues a capture without waiting for room: a full queue is [`StoreError::QueueFull`] at
    /// once, so a flood gets 503s instead of growing memory. Await the receiver for the outcome,
    /// which arrives after the row is committed. `response_json`: the answer the capture gets,
    /// as stored ([`crate::model::ResponseRecord::to_json`]).
    pub fn try_capture(
        &self,
        mut request: StoredRequest,
        response_json: Option<Arc<str>>,
        max_per_bin: u64,
        max_bin_bytes: u64,
    ) -> Result<PendingCapture, StoreError> {
        let blob = headers::encode(&request.headers);
        request.headers = Vec::new();
        self.try_capture_lines(request, blob, response_json, max_per_bin, max_bin_bytes)
    }

    /// [`Store::try_capture`] of a request whose header lines are already in their stored form
    /// (`headers_blob`, [`crate::model::header_lines`]; `request.headers` is empty): the capture
    /// path, which reads them that way.
    pub fn try_capture_lines(
        &self,
        request: StoredRequest,
        headers_blob: Vec<u8>,
        response_json: Option<Arc<str>>,
        max_per_bin: u64,
        max_bin_bytes: u64,
    ) -> Result<PendingCapture, StoreError> {
        // Derived columns are prepared here, on the caller's thread, to keep the writer lean.
        let capture = NewCapture::new(
            request,
            headers_blob,
            response_json,
            max_per_bin,
            max_bin_bytes,
        );
        dispatch!(self, s => s.try_capture(capture))
    }

    /// Summaries newest first, older than `before` when given; `limit + 1` are fetched so the
    /// caller knows whether there is a next page.
    pub async fn list_requests(
        &self,
        bin: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        dispatch!(self, s => s.list_requests(bin, before, limit).await)
    }

    /// One page of a search: the summaries of requests older than `before` (newest first) that
    /// `keep` accepts, at most `limit`, scanning within `budget`; see [`SearchPage`]. `with_body`:
    /// whether `keep` looks at bodies (they are not read otherwise). `keep` runs on a blocking
    /// thread.
    pub async fn search_requests<F>(
        &self,
        bin: &str,
        before: Option<i64>,
        limit: usize,
        with_body: bool,
        budget: ScanBudget,
        keep: F,
    ) -> Result<SearchPage, StoreError>
    where
        F: Fn(&StoredRequest) -> bool + Send + 'static,
    {
        dispatch!(self, s => s.search_requests(bin, before, limit, with_body, budget, keep).await)
    }

    /// Whether a reap step goes through the only writer, so that captures wait for its slices
    /// (SQLite): the reaper then spaces its steps out and paces them by what is left to delete. On
    /// PostgreSQL a step is a transaction beside the captures'.
    pub fn reap_holds_the_writer(&self) -> bool {
        matches!(self, Store::Sqlite(_))
    }

    /// Subscribes an event stream to the bin's new captures. Both engines read the bin's newest
    /// id first (one query): the stream starts after it, and a stream that falls behind catches
    /// up from there at the lowest, never from the bin's first request. On PostgreSQL it also
    /// tells the node's listener where the stream begins, so that after a lost LISTEN connection
    /// it catches the stream up from there.
    ///
    /// A delete or reap that closed the bin's channel before this subscription made a new one
    /// would leave the stream waiting for events that never come. Both engines forget a bin
    /// before its delete is written, and a reaped bin has expired, so the bin is looked up again
    /// once subscribed: one still live at `now` is closed by its delete or reap later, one that
    /// is not has its channel closed now, and the stream ends as if the delete had found it.
    pub async fn subscribe(&self, bin: &str, now: i64) -> Result<Subscription, StoreError> {
        let subscription = dispatch!(self, s => s.subscribe(bin).await)?;
        if self.find_bin(bin, now).await?.is_none() {
            dispatch!(self, s => s.events().close(bin));
        }
        Ok(subscription)
    }

    /// Summaries with an id above `after` and up to `through` (`i64::MAX`: the newest), oldest
    /// first, at most `limit` (event-stream replay).
    pub async fn requests_after(
        &self,
        bin: &str,
        after: i64,
        through: i64,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        dispatch!(self, s => s.requests_after(bin, after, through, limit).await)
    }

    pub async fn get_request(
        &self,
        bin: &str,
        id: i64,
    ) -> Result<Option<StoredRequest>, StoreError> {
        dispatch!(self, s => s.get_request(bin, id).await)
    }

    /// The highest request id of the bin so far, `0` when it has none.
    pub async fn last_request_id(&self, bin: &str) -> Result<i64, StoreError> {
        dispatch!(self, s => s.last_request_id(bin).await)
    }

    /// Requests with `after < id <= upto`, oldest first, in pages bounded by rows and by body
    /// bytes (the row that crosses `max_bytes` is the last): export streams a bin page by page.
    pub async fn requests_page(
        &self,
        bin: &str,
        after: i64,
        upto: i64,
        max_rows: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredRequest>, StoreError> {
        dispatch!(self, s => s.requests_page(bin, after, upto, max_rows, max_bytes).await)
    }

    /// `false` if the bin had no such request.
    pub async fn delete_request(&self, bin: &str, id: i64) -> Result<bool, StoreError> {
        dispatch!(self, s => s.delete_request(bin, id).await)
    }

    pub async fn clear_requests(&self, bin: &str) -> Result<(), StoreError> {
        dispatch!(self, s => s.clear_requests(bin).await)
    }

    /// Requests stored in bins that expire at or before `upto` (unix ms): what the reaper has to
    /// delete by then. From the bins' own counts: no request row is read.
    pub async fn expired_requests(&self, upto: i64) -> Result<u64, StoreError> {
        dispatch!(self, s => s.expired_requests(upto).await)
    }

    /// Deletes up to `budget` requests of bins expired at `now`, and the bins emptied that way.
    /// On PostgreSQL only one node reaps at a time; the others' steps report `done` at once.
    pub async fn reap_step(&self, now: i64, budget: usize) -> Result<ReapProgress, StoreError> {
        dispatch!(self, s => s.reap_step(now, budget).await)
    }

    /// Whether the database answers a query (health check).
    pub async fn ping(&self) -> Result<(), StoreError> {
        dispatch!(self, s => s.ping().await)
    }
}
