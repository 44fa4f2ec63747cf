//! The SQLite engine: bins and captured requests in one file.
//!
//! rusqlite is synchronous, so nothing here touches SQLite on the async worker threads:
//! - writes go to one writer thread that owns the only write connection and commits queued
//!   operations in batches (group commit), replying to each caller after its batch committed;
//! - reads run on a small pool of read-only connections through `spawn_blocking`;
//! - two more threads work beside the writer: one copies the WAL back into the database
//!   (`checkpoint.rs`), one reads the rows the reaper's next steps will delete (`prefetch.rs`);
//! - which bins exist (and their custom responses) is mirrored in memory, so a capture checks its
//!   bin without a query. The writer's transaction checks again, so a bin deleted in between
//!   still ends in a 404, never in a row without a bin.

mod body;
mod checkpoint;
mod memo;
mod prefetch;
mod read;
mod ring;
mod schema;
mod writer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::{mpsc, oneshot};

use super::{
    BinEntry, NewCapture, PendingCapture, ReapProgress, ScanBudget, SearchPage, StoreConfig,
    StoreError, Subscription, WriteStats,
};
use crate::events::EventHub;
use crate::model::{Bin, RequestSummary, StoredRequest};
use crate::response::ResponseSpec;

// The size SQLite cuts the WAL file back to after a restart: the durability tests bound it.
pub use checkpoint::WAL_FILE_LIMIT;
pub use schema::{SCHEMA_SQL, SCHEMA_VERSION};

/// Makes SQLite use, for every connection of the process, the page cache that skips the
/// truncations that cannot drop a page (crates/walbuf, `pcache`): the default one scanned the
/// writer's whole cache at most commits of a growing database under 1 GiB. SQLite chooses its
/// page cache once, when it starts, and `sqlite3_config` must not run beside any other use of
/// SQLite: so `main` calls this first, before any thread. A process that runs the server without
/// it (unit tests, which open SQLite from parallel threads) keeps SQLite's default cache, which
/// differs only in speed; the integration tests run the binary, so with this cache.
pub fn install_page_cache() {
    if let Err(rc) = walbuf::pcache::install() {
        tracing::debug!(
            rc,
            "SQLite's default page cache stays (SQLite started already)"
        );
    }
}

/// The SQLite engine behind [`super::Store`].
#[derive(Debug)]
pub struct SqliteStore {
    writes: mpsc::Sender<writer::Op>,
    write_capacity: usize,
    reads: read::ReadPool,
    bins: RwLock<HashMap<String, BinEntry>>,
    path: PathBuf,
    /// Bytes of the database in use, updated by the writer after every batch.
    used_bytes: Arc<AtomicU64>,
    /// What the writer publishes to.
    events: Arc<EventHub>,
    /// The WAL's size and the writer's commits, as its WAL hook reports them.
    wal: Arc<checkpoint::WalSize>,
}

/// The background threads of a [`SqliteStore`]: the writer, and the checkpointer beside it.
#[derive(Debug)]
pub struct WriterThread {
    writer: std::thread::JoinHandle<()>,
    checkpointer: std::thread::JoinHandle<()>,
    stop_checkpoints: std::sync::mpsc::Sender<()>,
}

impl WriterThread {
    /// Waits until every queued write has been committed, the WAL folded into the database file,
    /// and both threads have exited. Call after dropping every `Store` handle, or this waits
    /// forever.
    pub fn join(self) {
        drop(self.stop_checkpoints);
        if self.checkpointer.join().is_err() {
            tracing::error!("the checkpoint thread panicked");
        }
        if self.writer.join().is_err() {
            tracing::error!("the database writer thread panicked");
        }
    }
}

impl SqliteStore {
    /// Opens the database (creating it from `schema.sql` if new), starts the writer thread and
    /// loads the live bins. `now` is the current unix time in ms.
    pub fn open(
        path: &Path,
        config: &StoreConfig,
        events: Arc<EventHub>,
        now: i64,
    ) -> Result<(SqliteStore, WriterThread), StoreError> {
        Self::open_with(path, config, events, now, checkpoint::IDLE_TRUNCATE)
    }

    /// [`SqliteStore::open`], the WAL truncated after `idle_truncate` without writes (tests
    /// shorten it).
    fn open_with(
        path: &Path,
        config: &StoreConfig,
        events: Arc<EventHub>,
        now: i64,
        idle_truncate: std::time::Duration,
    ) -> Result<(SqliteStore, WriterThread), StoreError> {
        let conn = schema::open_writer(path, config.synchronous)?;
        let bins = read::live_bins(&conn, now)?;
        let used_bytes = Arc::new(AtomicU64::new(writer::live_bytes(&conn)?));
        let writer_used = used_bytes.clone();
        let reads = read::ReadPool::new(path, config.read_connections)?;
        let (tx, rx) = mpsc::channel(config.write_queue);
        let spawn_failed = |e: std::io::Error| StoreError::Open {
            path: path.display().to_string(),
            reason: format!("cannot start a database thread: {e}"),
        };
        let wal = Arc::new(checkpoint::WalSize::default());
        let checkpoint_conn = checkpoint::open(path)?;
        let (stop_checkpoints, stop) = std::sync::mpsc::channel();
        let checkpoint_wal = wal.clone();
        let store_wal = wal.clone();
        // A weak handle: the writer still stops once every `Store` handle is gone.
        let idle_writer = tx.downgrade();
        let ask_truncate = move || {
            if let Some(writes) = idle_writer.upgrade() {
                // A full queue: the writer is not idle.
                let _ = writes.try_send(writer::Op::Idle);
            }
        };
        let checkpointer = std::thread::Builder::new()
            .name("hookbin-checkpoint".into())
            .spawn(move || {
                checkpoint::run(
                    checkpoint_conn,
                    stop,
                    checkpoint_wal,
                    idle_truncate,
                    ask_truncate,
                )
            })
            .map_err(spawn_failed)?;
        let writer = std::thread::Builder::new()
            .name("hookbin-writer".into())
            .spawn({
                let events = events.clone();
                move || writer::run(conn, rx, events, wal, writer_used)
            })
            .map_err(spawn_failed)?;
        let store = SqliteStore {
            writes: tx,
            write_capacity: config.write_queue,
            reads,
            bins: RwLock::new(bins),
            path: path.to_owned(),
            used_bytes,
            events,
            wal: store_wal,
        };
        let threads = WriterThread {
            writer,
            checkpointer,
            stop_checkpoints,
        };
        Ok((store, threads))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the database in use (pages holding data; free pages left by deletes are not
    /// counted, new rows reuse them), as of the last committed batch.
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes.load(Ordering::Relaxed)
    }

    /// Writes waiting for the writer thread right now.
    pub fn queue_depth(&self) -> usize {
        self.write_capacity - self.writes.capacity()
    }

    /// The writer's commits, and the bytes written to WAL files through walbuf: only the
    /// writer's connection uses it, and a process has one store (tests aside, where several
    /// stores add up).
    pub fn write_stats(&self) -> WriteStats {
        WriteStats {
            batches: self.wal.commits(),
            wal_bytes: Some(walbuf::stats().wal_bytes),
        }
    }

    /// The writer publishes each commit as it happens, so a plain subscription misses nothing
    /// committed after it. The bin's newest id is read first: a capture committed between the
    /// read and the subscription came before the stream and is not owed to it, while reading
    /// after subscribing could take a capture the stream is owed as already sent. Without a
    /// start, a stream that fell behind before its first event caught up from id 0: the whole
    /// bin, or batches published before it subscribed, sent as new.
    pub async fn subscribe(&self, bin: &str) -> Result<Subscription, StoreError> {
        let newest = self.last_request_id(bin).await?;
        Ok(Subscription {
            events: self.events.subscribe(bin),
            start: newest,
        })
    }

    /// Where the writer publishes commits and closes deleted bins.
    pub fn events(&self) -> &EventHub {
        &self.events
    }

    /// The live bin `id`, from memory. Expired bins count as absent.
    pub fn bin_entry(&self, id: &str, now: i64) -> Option<BinEntry> {
        let bins = self.bins.read().unwrap_or_else(|e| e.into_inner());
        bins.get(id).filter(|b| b.expires_at > now).cloned()
    }

    /// Number of live bins known in memory (expired but not yet reaped ones included).
    pub fn bin_count(&self) -> usize {
        self.bins.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn remember_bin(&self, id: &str, entry: BinEntry) {
        let mut bins = self.bins.write().unwrap_or_else(|e| e.into_inner());
        bins.insert(id.to_owned(), entry);
    }

    fn forget_bins<'a>(&self, ids: impl IntoIterator<Item = &'a String>) {
        let mut bins = self.bins.write().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            bins.remove(id);
        }
    }

    /// Queues `op` (waiting for room) and awaits the writer's reply.
    async fn write<T>(
        &self,
        command: impl FnOnce(writer::Reply<T>) -> writer::Command,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.writes
            .send(writer::Op::Other(command(reply)))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    pub async fn create_bin(
        &self,
        bin: Bin,
        response: Option<Arc<ResponseSpec>>,
    ) -> Result<(), StoreError> {
        let entry = BinEntry {
            expires_at: bin.expires_at,
            response,
            view_token_hash: bin.view_token_hash,
        };
        let id = bin.id.clone();
        self.write(|reply| writer::Command::CreateBin(bin, reply))
            .await?;
        self.remember_bin(&id, entry);
        Ok(())
    }

    /// The bin with its current request count, or `None` if absent or expired.
    pub async fn get_bin(&self, id: &str, now: i64) -> Result<Option<Bin>, StoreError> {
        if self.bin_entry(id, now).is_none() {
            return Ok(None);
        }
        let id = id.to_owned();
        self.reads.run(move |c| read::bin(c, &id, now)).await
    }

    /// Deletes the bin and (cascade) its requests. `false` if there was no such bin.
    pub async fn delete_bin(&self, id: &str) -> Result<bool, StoreError> {
        // Forget first: from now on captures to this bin answer 404.
        let id = id.to_owned();
        self.forget_bins([&id]);
        self.write(|reply| writer::Command::DeleteBin(id, reply))
            .await
    }

    /// Sets (or with `None` clears) the bin's custom response; the updated bin, or `None`.
    pub async fn set_response(
        &self,
        id: &str,
        response: Option<Arc<ResponseSpec>>,
        now: i64,
    ) -> Result<Option<Bin>, StoreError> {
        let json = response.as_deref().map(ResponseSpec::to_json);
        let owned = id.to_owned();
        let bin = self
            .write(|reply| writer::Command::SetResponse {
                id: owned,
                response: json,
                now,
                reply,
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

    /// Queues a capture without waiting for room (see [`super::Store::try_capture`]).
    pub fn try_capture(&self, mut capture: Box<NewCapture>) -> Result<PendingCapture, StoreError> {
        // On the caller's task: the writer is the one every capture waits for.
        let request = &capture.request;
        capture.packed_body = body::pack(&request.body, request.body_truncated);
        let (reply, answer) = oneshot::channel();
        let op = writer::Op::Capture { capture, reply };
        self.writes.try_send(op).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => StoreError::QueueFull,
            mpsc::error::TrySendError::Closed(_) => StoreError::Closed,
        })?;
        Ok(PendingCapture(answer))
    }

    /// Summaries newest first, older than `before` when given; `limit + 1` are fetched so the
    /// caller knows whether there is a next page.
    pub async fn list_requests(
        &self,
        bin: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        let bin = bin.to_owned();
        self.reads
            .run(move |c| read::summaries_before(c, &bin, before.unwrap_or(i64::MAX), limit))
            .await
    }

    /// One page of a search: the summaries of requests older than `before` (newest first) that
    /// `keep` accepts, at most `limit`, scanning within `budget`; see [`SearchPage`]. `with_body`:
    /// whether `keep` looks at bodies (they are not read otherwise). `keep` runs on a blocking
    /// thread of the read pool.
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
        let bin = bin.to_owned();
        let before = before.unwrap_or(i64::MAX);
        self.reads
            .run(move |c| read::search_before(c, &bin, before, limit, with_body, budget, &keep))
            .await
    }

    /// Summaries with an id above `after` and up to `through`, oldest first (event-stream replay).
    pub async fn requests_after(
        &self,
        bin: &str,
        after: i64,
        through: i64,
        limit: usize,
    ) -> Result<Vec<RequestSummary>, StoreError> {
        let bin = bin.to_owned();
        self.reads
            .run(move |c| read::summaries_after(c, &bin, after, through, limit))
            .await
    }

    pub async fn get_request(
        &self,
        bin: &str,
        id: i64,
    ) -> Result<Option<StoredRequest>, StoreError> {
        let bin = bin.to_owned();
        self.reads.run(move |c| read::request(c, &bin, id)).await
    }

    /// The highest request id of the bin so far, `0` when it has none.
    pub async fn last_request_id(&self, bin: &str) -> Result<i64, StoreError> {
        let bin = bin.to_owned();
        self.reads
            .run(move |c| read::last_request_id(c, &bin))
            .await
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
        let bin = bin.to_owned();
        self.reads
            .run(move |c| read::requests_page(c, &bin, after, upto, max_rows, max_bytes))
            .await
    }

    /// `false` if the bin had no such request.
    pub async fn delete_request(&self, bin: &str, id: i64) -> Result<bool, StoreError> {
        let bin = bin.to_owned();
        self.write(|reply| writer::Command::DeleteRequest { bin, id, reply })
            .await
    }

    pub async fn clear_requests(&self, bin: &str) -> Result<(), StoreError> {
        let bin = bin.to_owned();
        self.write(|reply| writer::Command::ClearRequests { bin, reply })
            .await
    }

    /// Requests of the bins that expire at or before `upto`, from their counts.
    pub async fn expired_requests(&self, upto: i64) -> Result<u64, StoreError> {
        self.reads
            .run(move |c| read::expired_requests(c, upto))
            .await
    }

    /// Deletes up to `budget` requests of bins expired at `now`, and the bins emptied that way.
    pub async fn reap_step(&self, now: i64, budget: usize) -> Result<ReapProgress, StoreError> {
        let progress = self
            .write(|reply| writer::Command::Reap { now, budget, reply })
            .await?;
        self.forget_bins(&progress.bins_deleted);
        Ok(progress)
    }

    /// Whether the database answers a query (health check).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.reads
            .run(|c| c.query_row("SELECT 1", [], |_| Ok(())))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::storage::{CaptureOutcome, Location, Synchronous};

    fn wal_len(db: &Path) -> u64 {
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        std::fs::metadata(wal).map(|m| m.len()).unwrap_or(0)
    }

    /// Waits up to 5 s for the WAL file to be cut to nothing; fails the test if it is not.
    async fn assert_wal_emptied(db: &Path) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if wal_len(db) == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("WAL still {} bytes", wal_len(db));
    }

    /// A store on `path` with one reader and a small write queue.
    fn config(path: &Path) -> StoreConfig {
        StoreConfig {
            location: Location::Sqlite(path.to_path_buf()),
            synchronous: Synchronous::Normal,
            write_queue: 64,
            read_connections: 1,
        }
    }

    /// Stores `n` captures of `{}` in `bin`, one at a time; each must be stored.
    async fn capture_to(store: &SqliteStore, bin: &str, n: usize) {
        for _ in 0..n {
            let request = StoredRequest::sample::<&[u8]>(bin, "", "", &[], b"{}");
            let capture = NewCapture::new(request, Vec::new(), None, 1000, u64::MAX);
            let outcome = store.try_capture(capture).unwrap().outcome().await.unwrap();
            assert!(
                matches!(outcome, CaptureOutcome::Stored { .. }),
                "{outcome:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_idle_writer_truncates_the_wal_and_keeps_every_capture() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("idle.db");
        let config = config(&path);
        let idle = Duration::from_millis(200);
        let (store, threads) =
            SqliteStore::open_with(&path, &config, EventHub::new(), 0, idle).unwrap();
        store
            .create_bin(Bin::sample("idle", i64::MAX), None)
            .await
            .unwrap();
        let through_walbuf = walbuf::stats().wal_writes;
        capture_to(&store, "idle", 20).await;
        assert!(wal_len(&path) > 0);
        // The writer's connection is walbuf's (schema::open_writer): its WAL writes pass there.
        assert!(walbuf::stats().wal_writes > through_walbuf);
        assert_wal_emptied(&path).await;
        // Captures go on into a WAL that grows from nothing, and it is truncated again.
        capture_to(&store, "idle", 5).await;
        assert!(wal_len(&path) > 0);
        assert_wal_emptied(&path).await;
        assert_eq!(store.last_request_id("idle").await.unwrap(), 25);
        drop(store);
        threads.join();
        // Everything is in the database file.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM bin_requests", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 25);
    }

    #[tokio::test]
    async fn a_reap_step_goes_in_slices_and_captures_queued_meanwhile_go_between_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slices.db");
        let config = config(&path);
        let (store, threads) = SqliteStore::open(&path, &config, EventHub::new(), 0).unwrap();
        let store = Arc::new(store);
        for (id, expires_at) in [("live", i64::MAX), ("old", 500)] {
            store
                .create_bin(Bin::sample(id, expires_at), None)
                .await
                .unwrap();
        }
        // Row 1 is live; rows 2 to 101 expired, the last rows of the table.
        capture_to(&store, "live", 1).await;
        capture_to(&store, "old", 100).await;
        // Another connection holds the write lock, so that the step's first slice waits for it
        // while a capture is queued behind.
        let lock = rusqlite::Connection::open(&path).unwrap();
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();
        let step = tokio::spawn({
            let store = store.clone();
            async move { store.reap_step(500, 100).await }
        });
        // Time for the writer to take the step (a test that does not wait only proves less: the
        // capture then goes with the first slice).
        tokio::time::sleep(Duration::from_millis(50)).await;
        let capture = tokio::spawn({
            let store = store.clone();
            async move { capture_to(&store, "live", 1).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        lock.execute_batch("COMMIT").unwrap();
        capture.await.unwrap();
        // The step is answered once, with what its slices did together: 100 rows in four slices
        // of at most 32, and the bin with its last rows.
        let progress = step.await.unwrap().unwrap();
        assert_eq!(progress.requests_deleted, 100);
        assert_eq!(progress.bins_deleted, ["old"]);
        assert!(progress.step_time.is_some_and(|t| !t.is_zero()));
        // The capture was stored while the step's last rows were still there: SQLite gave it the
        // row id after row 101. Had the whole step gone first, it would have got row 2.
        let row: i64 = lock
            .query_row(
                "SELECT max(id) FROM bin_requests
                 WHERE bin_num = (SELECT num FROM bins WHERE id = 'live')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            row > 101,
            "the capture's row is {row}: it waited for the whole step"
        );
        let left: i64 = lock
            .query_row("SELECT count(*) FROM bin_requests", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 2);
        drop(store);
        threads.join();
    }
}
