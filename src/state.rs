//! What every request handler shares.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

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
}
