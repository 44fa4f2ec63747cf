//! The PostgreSQL engine: several hookbin nodes on one database.
//!
//! - Captures go to a writer task per node that commits them in batches (group commit): the
//!   bins of a batch are locked (`FOR UPDATE`, in id order, so nodes never deadlock on them),
//!   numbered from their `last_request_id`, and inserted with one multi-row INSERT; callers are
//!   answered only after the COMMIT.
//! - Everything else (bins, deletions, reads) runs on a small pool of connections, each call
//!   bounded by [`DB_TIMEOUT`]: an unreachable database is a [`StoreError::Unavailable`] within
//!   it, never a hang, and the pool reconnects by itself when the database is back.
//! - Live bins are cached, but the cache is not authoritative: another node may create a bin, so
//!   a miss asks the database (and caches the answer). Changes made on any node (a bin created
//!   or deleted, its response changed) are announced with NOTIFY and drop the other nodes'
//!   entries; the writer's own check in the transaction is what finally decides. Bins found
//!   missing are remembered briefly, while creations are announced to this node (`misses.rs`).
//! - Event streams: each commit NOTIFYs which bins got which request ids, and every node's
//!   listener (one dedicated connection, `listen.rs`) publishes them to its local streams, in
//!   commit order. After a lost listener connection it reconnects and catches up from the
//!   database, so nothing is missed.
//! - The reaper runs on one node at a time: a step only runs under a transaction-level advisory
//!   lock ([`REAPER_LOCK`]).
//!
//! TLS to PostgreSQL is not supported yet (the driver is built without a TLS connector): run the
//! database on loopback or a private network, or put a TLS tunnel (stunnel, a local pgbouncer)
//! in between. A URL that requires TLS (`sslmode=require`) fails at start with a clear error.

mod listen;
mod misses;
mod read;
mod schema;
mod writer;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_postgres::NoTls;

use super::{
    BinEntry, NewCapture, PendingCapture, ReapProgress, ScanBudget, SearchPage, StoreConfig,
    StoreError, Subscription, WriteStats, stored_response,
};
use crate::events::EventHub;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;

pub use schema::{SCHEMA_SQL, SCHEMA_VERSION};

/// How long any database call may take before it fails as [`StoreError::Unavailable`].
pub const DB_TIMEOUT: Duration = Duration::from_secs(5);
/// The advisory lock a reaping step holds ("hookbin" and 1): one node reaps at a time.
pub const REAPER_LOCK: i64 = 0x686f_6f6b_6269_6e01;
/// The advisory lock schema migrations run under, so nodes starting together migrate once.
pub const MIGRATION_LOCK: i64 = 0x686f_6f6b_6269_6e02;
/// NOTIFY channel of committed captures: `{node} {batch}` then `{bin} {first} {last}` lines.
pub const CHANNEL_REQUESTS: &str = "hookbin_requests";
/// NOTIFY channel of bin changes: `created {bin}`, `deleted {bin}` or `changed {bin}`.
pub const CHANNEL_BINS: &str = "hookbin_bins";

/// The URL without its password, for logs and errors.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

/// A name for this process in NOTIFY payloads: its pid and start time, in ns (two nodes on
/// different machines would need the same pid started in the same nanosecond to collide).
fn node_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:x}-{nanos:x}", std::process::id())
}

/// A driver error as a [`StoreError`]: connection-level failures are `Unavailable` (503, retry),
/// errors the server answered are `Postgres` (a bug or a damaged database: 500).
fn db_error(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        // 08: connection exceptions, 57P: the server shutting down, 53: out of resources.
        if code.starts_with("08") || code.starts_with("57P") || code.starts_with("53") {
            return StoreError::Unavailable(db.to_string());
        }
        return StoreError::Postgres(db.to_string());
    }
    StoreError::Unavailable(e.to_string())
}

fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Backend(e) => db_error(e),
        other => StoreError::Unavailable(other.to_string()),
    }
}

/// Runs `f`, failing as `Unavailable` if it takes longer than [`DB_TIMEOUT`].
async fn timed<T>(
    what: &str,
    f: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    match tokio::time::timeout(DB_TIMEOUT, f).await {
        Ok(result) => result,
        Err(_) => Err(StoreError::Unavailable(format!(
            "no answer within {DB_TIMEOUT:?} ({what})"
        ))),
    }
}

/// What the store, its writer and its listener share.
#[derive(Debug)]
struct Shared {
    events: Arc<EventHub>,
    /// Live bins this node has seen: a cache (see the module docs).
    bins: RwLock<HashMap<String, BinEntry>>,
    /// This process's name in NOTIFY payloads, to tell its own commits from other nodes'.
    node: String,
    relay: Mutex<listen::Relay>,
    /// Bins looked up and not found, while that can be trusted.
    misses: Mutex<misses::Misses>,
    /// The stored bytes of every bin (`--max-db-bytes`): refreshed from the database once a
    /// second while capturing and after deletes, plus this node's batches in between.
    used_bytes: AtomicU64,
    /// Capture batches the writer committed (/metrics).
    batches: AtomicU64,
}

impl Shared {
    fn forget_bin(&self, id: &str) {
        self.bins
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    fn relay(&self) -> std::sync::MutexGuard<'_, listen::Relay> {
        self.relay.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn misses(&self) -> std::sync::MutexGuard<'_, misses::Misses> {
        self.misses.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The PostgreSQL engine behind [`super::Store`].
#[derive(Debug)]
pub struct PgStore {
    pool: Pool,
    writes: mpsc::Sender<writer::Capture>,
    write_capacity: usize,
    shared: Arc<Shared>,
}

/// The writer and listener tasks of a [`PgStore`].
#[derive(Debug)]
pub struct PgWorkers {
    writer: JoinHandle<()>,
    listener: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

impl PgWorkers {
    /// Waits for the writer to commit what is queued (it ends once every store handle is
    /// dropped), then stops the listener.
    pub async fn join(self) {
        if self.writer.await.is_err() {
            tracing::error!("the database writer task panicked");
        }
        let _ = self.stop.send(true);
        let _ = self.listener.await;
    }
}

impl PgStore {
    /// Connects, creates or migrates the schema, and starts the writer and the listener.
    pub async fn open(
        url: &str,
        config: &StoreConfig,
        events: Arc<EventHub>,
    ) -> Result<(PgStore, PgWorkers), StoreError> {
        let failed = |reason: String| StoreError::Open {
            path: redact(url),
            reason,
        };
        let mut pg: tokio_postgres::Config = url
            .parse()
            .map_err(|e| failed(format!("not a PostgreSQL connection string: {e}")))?;
        pg.connect_timeout(DB_TIMEOUT);
        if pg.get_application_name().is_none() {
            pg.application_name("hookbin");
        }
        let manager = Manager::from_config(
            pg.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        // The writer holds one connection, the listener its own outside the pool.
        let pool = Pool::builder(manager)
            .max_size(config.read_connections.max(1) + 2)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(DB_TIMEOUT))
            .create_timeout(Some(DB_TIMEOUT))
            .recycle_timeout(Some(DB_TIMEOUT))
            .build()
            .map_err(|e| failed(e.to_string()))?;
        schema::migrate(&pool)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let shared = Arc::new(Shared {
            events,
            bins: RwLock::new(HashMap::new()),
            node: node_name(),
            relay: Mutex::new(listen::Relay::default()),
            misses: Mutex::new(misses::Misses::default()),
            used_bytes: AtomicU64::new(0),
            batches: AtomicU64::new(0),
        });
        writer::refresh_size(&pool, &shared).await;
        // The first LISTEN before serving: a stream opened on this node from now on sees every
        // node's commits.
        let connection = listen::connect(&pg)
            .await
            .map_err(|e| failed(format!("cannot LISTEN: {e}")))?;
        shared.relay().listening = true;
        shared.misses().reset(true);
        let (stop, stopped) = watch::channel(false);
        let listener = tokio::spawn(listen::run(
            pg,
            pool.clone(),
            shared.clone(),
            connection,
            stopped,
        ));
        let (tx, rx) = mpsc::channel(config.write_queue.max(1));
        let writer = tokio::spawn(writer::run(pool.clone(), rx, shared.clone()));
        let store = PgStore {
            pool,
            writes: tx,
            write_capacity: config.write_queue.max(1),
            shared,
        };
        Ok((
            store,
            PgWorkers {
                writer,
                listener,
                stop,
            },
        ))
    }

    pub fn used_bytes(&self) -> u64 {
        self.shared.used_bytes.load(Ordering::Relaxed)
    }

    /// The capture batches committed; PostgreSQL's WAL is the server's, not counted here.
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            wal_bytes: None,
        }
    }

    pub fn queue_depth(&self) -> usize {
        self.write_capacity - self.writes.capacity()
    }

    pub fn bin_entry(&self, id: &str, now: i64) -> Option<BinEntry> {
        let bins = self.shared.bins.read().unwrap_or_else(|e| e.into_inner());
        bins.get(id).filter(|b| b.expires_at > now).cloned()
    }

    /// From the cache, else from the database (then cached, found or not: see `misses.rs`).
    pub async fn find_bin(&self, id: &str, now: i64) -> Result<Option<BinEntry>, StoreError> {
        if let Some(entry) = self.bin_entry(id, now) {
            return Ok(Some(entry));
        }
        let lookup = {
            let misses = self.shared.misses();
            if misses.missing(id, std::time::Instant::now()) {
                return Ok(None);
            }
            misses.begin()
        };
        let found = timed("bin lookup", async {
            let client = self.pool.get().await.map_err(pool_error)?;
            read::live_bin(&client, id, now).await.map_err(db_error)
        })
        .await?;
        let Some((expires_at, response, view_token_hash)) = found else {
            self.shared
                .misses()
                .remember(id, lookup, std::time::Instant::now());
            return Ok(None);
        };
        let entry = BinEntry {
            expires_at,
            response: response.and_then(|json| stored_response(id, &json)),
            view_token_hash,
        };
        self.remember_bin(id, entry.clone());
        Ok(Some(entry))
    }

    pub fn bin_count(&self) -> usize {
        self.shared
            .bins
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    fn remember_bin(&self, id: &str, entry: BinEntry) {
        self.shared
            .bins
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), entry);
    }

    /// Runs `f` with a pooled connection, within [`DB_TIMEOUT`].
    async fn with_client<T, F>(&self, what: &str, f: F) -> Result<T, StoreError>
    where
        F: AsyncFnOnce(&mut deadpool_postgres::Client) -> Result<T, tokio_postgres::Error>,
    {
        timed(what, async {
            let mut client = self.pool.get().await.map_err(pool_error)?;
            f(&mut client).await.map_err(db_error)
        })
        .await
    }

    pub async fn create_bin(
        &self,
        bin: Bin,
        response: Option<Arc<ResponseSpec>>,
    ) -> Result<(), StoreError> {
        self.with_client("create bin", async |c| read::create_bin(&*c, &bin).await)
            .await?;
        self.shared.misses().created(&bin.id);
        self.remember_bin(
            &bin.id,
            BinEntry {
                expires_at: bin.expires_at,
                response,
                view_token_hash: bin.view_token_hash,
            },
        );
        Ok(())
    }

    pub async fn get_bin(&self, id: &str, now: i64) -> Result<Option<Bin>, StoreError> {
        self.with_client("get bin", async |c| read::bin(&*c, id, now).await)
            .await
    }

    pub async fn delete_bin(&self, id: &str) -> Result<bool, StoreError> {
        // Forget first: from now on captures to this bin on this node look it up again.
        self.shared.forget_bin(id);
        let deleted = self
            .with_client("delete bin", async |c| read::delete_bin(c, id).await)
            .await?;
        if deleted {
            self.shared.events.close(id);
            writer::refresh_size(&self.pool, &self.shared).await;
        }
        Ok(deleted)
    }

    pub async fn set_response(
        &self,
        id: &str,
        response: Option<Arc<ResponseSpec>>,
        now: i64,
    ) -> Result<Option<Bin>, StoreError> {
        let json = response.as_deref().map(ResponseSpec::to_json);
        let bin = self
            .with_client("set response", async |c| {
                read::set_response(&*c, id, json.as_deref(), now).await
            })
            .await?;
        if let Some(bin) = &bin {
            self.remember_bin(
                id,
                BinEntry {
                    expires_at: bin.expires_at,
                    response,
                    view_token_hash: bin.view_token_hash,
                },
            );
        }
        Ok(bin)
    }

    pub fn try_capture(&self, capture: Box<NewCapture>) -> Result<PendingCapture, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.writes
            .try_send(writer::Capture { capture, reply })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => StoreError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => StoreError::Closed,
            })?;
        Ok(PendingCapture(answer))
    }

    pub async fn list_requests(
        &self,
        bin: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        let before = before.unwrap_or(i64::MAX);
        self.with_client("list requests", async |c| {
            read::summaries_before(&*c, bin, before, limit).await
        })
        .await
    }

    /// A search page (see [`super::Store::search_requests`]): rows are fetched in chunks and
    /// matched on a blocking thread, within the same budget as on SQLite.
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
        const CHUNK: usize = 100;
        let started = std::time::Instant::now();
        let mut scan = Scan {
            page: SearchPage::default(),
            scanned: 0,
            bytes: 0,
            limit,
            budget,
            started,
            keep,
        };
        let mut cursor = before.unwrap_or(i64::MAX);
        loop {
            let rows = self
                .with_client("search", async |c| {
                    read::search_chunk(&*c, bin, cursor, CHUNK, with_body).await
                })
                .await?
                .into_iter()
                .collect::<Result<Vec<_>, _>>()?;
            let full = rows.len() == CHUNK;
            let (back, stop) = tokio::task::spawn_blocking(move || {
                let stop = scan.run(&rows);
                (scan, stop)
            })
            .await
            .map_err(|e| StoreError::ReadTask(e.to_string()))?;
            scan = back;
            match stop {
                Stop::Done => return Ok(scan.page),
                Stop::Budget(seq) => {
                    let more = self
                        .with_client("search", async |c| read::any_before(&*c, bin, seq).await)
                        .await?;
                    if more {
                        scan.page.resume_before = Some(seq);
                    }
                    return Ok(scan.page);
                }
                Stop::Next(seq) if full => cursor = seq,
                Stop::Next(_) => return Ok(scan.page),
            }
        }
    }

    /// Subscribes an event stream. The bin's newest id is read first and the subscription then
    /// starts from it (`listen::subscribe`): whatever the listener publishes for the bin from then
    /// on, including a catch-up after a lost connection, continues from there at the latest.
    /// Read after subscribing instead, a capture committed in between could be taken as
    /// already published.
    pub async fn subscribe(&self, bin: &str) -> Result<Subscription, StoreError> {
        let newest = self
            .with_client("stream start", async |c| read::newest_id(&*c, bin).await)
            .await?;
        Ok(Subscription {
            events: listen::subscribe(&self.shared, bin, newest),
            start: newest,
        })
    }

    /// Where the listener publishes commits and deleted bins are closed.
    pub fn events(&self) -> &EventHub {
        &self.shared.events
    }

    pub async fn requests_after(
        &self,
        bin: &str,
        after: i64,
        through: i64,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        self.with_client("requests after", async |c| {
            read::summaries_after(&*c, bin, after, through, limit).await
        })
        .await
    }

    pub async fn get_request(
        &self,
        bin: &str,
        id: i64,
    ) -> Result<Option<StoredRequest>, StoreError> {
        let row = self
            .with_client("get request", async |c| read::request(&*c, bin, id).await)
            .await?;
        row.transpose()
    }

    pub async fn last_request_id(&self, bin: &str) -> Result<i64, StoreError> {
        self.with_client("last request id", async |c| {
            read::last_request_id(&*c, bin).await
        })
        .await
    }

    pub async fn requests_page(
        &self,
        bin: &str,
        after: i64,
        upto: i64,
        max_rows: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredRequest>, StoreError> {
        let rows = self
            .with_client("requests page", async |c| {
                read::requests_page(&*c, bin, after, upto, max_rows, max_bytes).await
            })
            .await?;
        rows.into_iter().collect()
    }

    pub async fn delete_request(&self, bin: &str, id: i64) -> Result<bool, StoreError> {
        let deleted = self
            .with_client("delete request", async |c| {
                read::delete_request(c, bin, id).await
            })
            .await?;
        writer::refresh_size(&self.pool, &self.shared).await;
        Ok(deleted)
    }

    pub async fn clear_requests(&self, bin: &str) -> Result<(), StoreError> {
        self.with_client("clear requests", async |c| {
            read::clear_requests(c, bin).await
        })
        .await?;
        writer::refresh_size(&self.pool, &self.shared).await;
        Ok(())
    }

    pub async fn expired_requests(&self, upto: i64) -> Result<u64, StoreError> {
        self.with_client("expired requests", async |c| {
            read::expired_requests(&*c, upto).await
        })
        .await
    }

    pub async fn reap_step(&self, now: i64, budget: usize) -> Result<ReapProgress, StoreError> {
        let progress = self
            .with_client("reap", async |c| read::reap(c, now, budget).await)
            .await?;
        for bin in &progress.bins_deleted {
            self.shared.forget_bin(bin);
            self.shared.events.close(bin);
        }
        if progress.requests_deleted > 0 {
            writer::refresh_size(&self.pool, &self.shared).await;
        }
        Ok(progress)
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        self.with_client("ping", async |c| {
            c.simple_query("SELECT 1").await.map(|_| ())
        })
        .await
    }
}

/// A search in progress: what [`PgStore::search_requests`] carries from chunk to chunk.
struct Scan<F> {
    page: SearchPage,
    scanned: usize,
    bytes: usize,
    limit: usize,
    budget: ScanBudget,
    started: std::time::Instant,
    keep: F,
}

/// Where a chunk left a search.
enum Stop {
    /// The page is complete.
    Done,
    /// The budget ran out at this id; the page resumes below it if any row is left there.
    Budget(i64),
    /// The chunk ended at this id: go on below it (if the chunk was full).
    Next(i64),
}

impl<F: Fn(&StoredRequest) -> bool> Scan<F> {
    /// The same walk as SQLite's `search_before`, over one chunk of rows (newest first).
    fn run(&mut self, rows: &[StoredRequest]) -> Stop {
        let mut last = None;
        for request in rows {
            let seq = request.id.get();
            last = Some(seq);
            if (self.keep)(request) {
                if self.page.rows.len() == self.limit {
                    self.page.resume_before = self.page.rows.last().map(|r| r.id.get());
                    return Stop::Done;
                }
                self.page.rows.push(RequestSummary::from(request));
            }
            self.scanned += 1;
            self.bytes = self.bytes.saturating_add(request.body.len());
            if self.budget.spent(self.scanned, self.bytes, self.started) {
                return Stop::Budget(seq);
            }
        }
        match last {
            Some(seq) => Stop::Next(seq),
            None => Stop::Done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_the_log() {
        assert_eq!(
            redact("postgres://hb:s3cret@db.internal:5432/hookbin?sslmode=disable"),
            "postgres://hb@db.internal:5432/hookbin?sslmode=disable"
        );
        assert_eq!(
            redact("postgresql://127.0.0.1/hookbin"),
            "postgresql://127.0.0.1/hookbin"
        );
        assert_eq!(redact("postgres://a:b@h"), "postgres://a@h");
    }
}
