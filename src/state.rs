//! What every request handler shares.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::events::EventHub;
use crate::limits::{BodyBudget, ClientLimits};
use crate::metrics::Metrics;
use crate::ratelimit::BinCreationLimit;
use crate::shutdown::ShutdownSignal;
use crate::storage::Store;

#[derive(Debug)]
pub struct AppState {
    pub config: Config,
    pub store: Store,
    pub events: Arc<EventHub>,
    pub metrics: Metrics,
    pub bin_limit: BinCreationLimit,
    /// Per-client connections, streams and requests in flight.
    pub clients: Arc<ClientLimits>,
    /// Request body bytes held in memory (`--max-body-memory`).
    pub body_memory: BodyBudget,
    pub shutdown: ShutdownSignal,
    /// Client connections being served right now (for /metrics).
    pub open_connections: AtomicUsize,
    /// Every task the server spawns (accept loop, connections, reaper, event streams, exports):
    /// a graceful stop waits for all of them before the last writes are committed.
    pub tasks: TaskTracker,
}

impl AppState {
    /// The state for `config`, over an opened store and its event hub; limits come from the
    /// config (behind a trusted proxy, nginx's `limit_conn` caps connections per client).
    pub fn new(
        config: Config,
        store: Store,
        events: Arc<EventHub>,
        shutdown: ShutdownSignal,
    ) -> Self {
        let per_client_connections = if config.trust_proxy {
            0
        } else {
            config.max_connections_per_client
        };
        AppState {
            bin_limit: BinCreationLimit::new(config.max_bins_per_minute),
            clients: ClientLimits::new(
                per_client_connections,
                config.max_streams_per_client,
                config.max_in_flight_per_client,
            ),
            body_memory: BodyBudget::new(config.max_body_memory),
            config,
            store,
            events,
            metrics: Metrics::default(),
            shutdown,
            open_connections: AtomicUsize::default(),
            tasks: TaskTracker::new(),
        }
    }
}

#[cfg(test)]
impl AppState {
    /// A state with `Config::for_db(path)` over a new SQLite database at `path`, for unit tests
    /// that need the real store. Keep the trigger (a dropped one signals a stop) and join the
    /// workers when the test wants every write committed.
    pub async fn for_tests(
        path: std::path::PathBuf,
    ) -> (
        AppState,
        crate::storage::Workers,
        crate::shutdown::ShutdownTrigger,
    ) {
        Self::for_tests_with_events(path, EventHub::new()).await
    }

    /// [`AppState::for_tests`] with its own event hub (e.g. one that sends every commit as an
    /// event of its own: `EventHub::with_period(Duration::ZERO)`).
    pub async fn for_tests_with_events(
        path: std::path::PathBuf,
        events: Arc<EventHub>,
    ) -> (
        AppState,
        crate::storage::Workers,
        crate::shutdown::ShutdownTrigger,
    ) {
        use crate::storage::{Location, StoreConfig, Synchronous};
        let config = Config::for_db(path);
        let store_config = StoreConfig {
            location: Location::Sqlite(config.db.clone()),
            synchronous: Synchronous::Normal,
            write_queue: 64,
            read_connections: 1,
        };
        let (store, workers) = Store::open(&store_config, events.clone(), 0).await.unwrap();
        let (trigger, shutdown) = crate::shutdown::channel();
        (
            AppState::new(config, store, events, shutdown),
            workers,
            trigger,
        )
    }

    /// Stores `request` as a capture under a cap of 1000 and waits for its commit; panics unless
    /// it was stored.
    pub async fn store_for_tests(&self, request: crate::model::StoredRequest) {
        let pending = self
            .store
            .try_capture(request, None, 1000, u64::MAX)
            .unwrap();
        let outcome = pending.outcome().await.unwrap();
        assert!(
            matches!(outcome, crate::storage::CaptureOutcome::Stored { .. }),
            "{outcome:?}"
        );
    }
}
