//! What every request handler shares.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::events::EventHub;
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
    pub shutdown: ShutdownSignal,
    /// Client connections being served right now (for /metrics).
    pub open_connections: AtomicUsize,
    /// Every task the server spawns (accept loop, connections, reaper, event streams, exports):
    /// a graceful stop waits for all of them before the last writes are committed.
    pub tasks: TaskTracker,
}
