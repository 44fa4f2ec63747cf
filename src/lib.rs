//! hookbin: a self-hosted webhook inspector.
//!
//! Module map:
//! - [`cli`], [`config`]: flags, then validated settings.
//! - [`server`]: accept loop and connection handling; [`shutdown`]: the stop signal.
//! - [`http`]: routing, the JSON API, the event stream; [`capture`]: recording `/r/{bin}`.
//! - [`pages`]: the server-rendered inspector pages and static assets.
//! - [`rawhead`]: keeps header order and case, which hyper's `HeaderMap` loses.
//! - [`storage`]: SQLite (one writer thread with group commit, a read-only pool).
//! - [`signing`]: every scheme's signing rules (headers, signed bytes, formats, keys), once.
//! - [`verify`]: webhook signatures checked against captured bytes, by those rules.
//! - [`reaper`]: deletes expired bins; [`events`]: live notifications; [`metrics`].
//! - [`forward`]: the `hookbin forward` client (follows a bin, replays to a local server).
//! - [`send`]: the `hookbin send` and `hookbin probe` clients (signed test requests, receiver
//!   checks), signing with [`signing`].
//! - [`render`]: pure renderers of captured requests: copy-as-curl and HAR export.
//! - [`model`], [`response`], [`ids`], [`clock`]: shared types and small pure helpers.
//! - [`healthcheck`]: the `hookbin healthcheck` client for container health checks.

pub mod capture;
pub mod cli;
pub mod clock;
pub mod config;
pub mod events;
pub mod forward;
pub mod healthcheck;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod model;
pub mod pages;
pub mod ratelimit;
pub mod rawhead;
pub mod reaper;
pub mod render;
pub mod response;
pub mod send;
pub mod server;
pub mod shutdown;
pub mod signing;
pub mod state;
pub mod storage;
pub mod verify;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::config::Config;
use crate::events::EventHub;
use crate::ratelimit::BinCreationLimit;
use crate::state::AppState;
use crate::storage::{Store, StoreConfig, StoreError};

/// Read-only SQLite connections: enough for the 2-4 cores this usually runs on.
const READ_CONNECTIONS: usize = 4;

/// Serves on `listener` until `shutdown` resolves, then stops gracefully: in-flight captures
/// finish and every acknowledged write is committed before this returns.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), StoreError> {
    let events = EventHub::new();
    let store_config = StoreConfig {
        path: config.db.clone(),
        synchronous: config.synchronous,
        write_queue: config.write_queue,
        read_connections: READ_CONNECTIONS,
    };
    let (store, writer) = Store::open(&store_config, events.clone(), clock::now_ms())?;
    let (trigger, signal) = shutdown::channel();
    let state = Arc::new(AppState {
        bin_limit: BinCreationLimit::new(config.max_bins_per_minute),
        config,
        store,
        events,
        metrics: Default::default(),
        shutdown: signal,
        open_connections: Default::default(),
    });
    let addr = listener.local_addr().map_err(|e| StoreError::Open {
        path: "socket".into(),
        reason: e.to_string(),
    })?;
    tracing::info!(
        db = %state.config.db.display(),
        bins = state.store.bin_count(),
        "listening on http://{addr}"
    );
    let reaper = tokio::spawn(reaper::run(state.clone()));
    let server = tokio::spawn(server::serve(listener, state.clone()));
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    trigger.trigger();
    let _ = server.await;
    let _ = reaper.await;
    release(state).await;
    // The writer commits what is queued, then exits once the last Store handle is gone.
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    tracing::info!("stopped");
    Ok(())
}

/// Drops the last handle on the state once stream tasks (which end on shutdown) let go of it.
async fn release(state: Arc<AppState>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&state) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    if Arc::strong_count(&state) > 1 {
        tracing::warn!("some tasks did not stop in time; queued writes are still committed");
    }
}
