//! hookbin: a self-hosted webhook inspector.
//!
//! Module map, top to bottom (imports only point down; docs/ARCHITECTURE.md has the arrows and
//! the path of a captured request):
//! - [`cli`], [`config`]: flags, then validated settings; clap types stop at `config` (and the
//!   `send` subcommands, whose flags are their input; `forward` takes `forward::Options`).
//! - [`run`] (here): the server's start and graceful stop; [`server`]: the accept loop and the
//!   connections; [`shutdown`]: the stop signal; [`state`]: what every handler shares,
//!   including the task tracker every server task runs on.
//! - [`router`]: the front door (access log, per-client slot, dispatch by path) over
//!   [`http`] (the JSON API, capture of `/r/{bin}`, the event stream, exports, `/healthz`,
//!   `/metrics`) and [`pages`] (the server-rendered inspector and static assets), which never
//!   call each other: both run their use cases through [`bins`] (live-bin check, admission,
//!   create, paging, find and delete, recording a capture) and share [`web`] (bodies, the error
//!   shape, the client's address and origin).
//! - [`reaper`]: deletes expired bins; [`metrics`]; [`limits`], [`ratelimit`]: what one client
//!   may hold, the body memory budget, bin creation per address.
//! - [`storage`]: SQLite (one writer thread with group commit, a read-only pool, the in-memory
//!   index of live bins); [`events`]: live notifications of committed captures.
//! - [`forward`], [`healthcheck`], [`send`] (`hookbin send` and `hookbin probe`): the client
//!   subcommands, over [`client`] (HTTP/1.1 with requests written byte-exact, TLS).
//! - Pure: [`content`] (Content-Encoding undone, multipart parts, XML), [`search`] (the `q`
//!   language, parsed and matched), [`render`] (copy-as-curl, HAR), [`signing`] (every
//!   scheme's signing rules, once: what [`verify`] checks captured bytes with and [`send`] signs
//!   with), [`response`] (custom responses), [`rawhead`] (header order and case, which hyper's
//!   `HeaderMap` loses), [`wire`] (HTTP/1 rules and [`wire::url::HttpUrl`], the one URL type),
//!   [`model`], [`ids`], [`clock`].

pub mod bins;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod content;
pub mod events;
pub mod forward;
pub mod healthcheck;
pub mod http;
pub mod ids;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod pages;
pub mod ratelimit;
pub mod rawhead;
pub mod reaper;
pub mod render;
pub mod response;
pub mod router;
pub mod search;
pub mod send;
pub mod server;
pub mod shutdown;
pub mod signing;
pub mod state;
pub mod storage;
pub mod verify;
pub mod web;
pub mod wire;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::events::EventHub;
use crate::state::AppState;
use crate::storage::{Location, Store, StoreConfig, StoreError};

/// Why the server could not start (`main` exits 1 with this message).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    /// The listener has no local address to announce (it is not a bound TCP socket).
    #[error("cannot read the listening address: {0}")]
    Address(std::io::Error),
    #[error("cannot start the event streams' threads: {0}")]
    StreamRuntime(std::io::Error),
    /// The database: it names the path and the reason.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Read-only SQLite connections (pooled PostgreSQL connections: this plus two): enough for the
/// 2-4 cores this usually runs on.
const READ_CONNECTIONS: usize = 4;
/// How long a stop waits for the tasks: each connection gets [`server::GRACE`] to finish its
/// request, everything else stops at once.
const STOP_WAIT: Duration = Duration::from_secs(server::GRACE.as_secs() + 5);

/// Serves on `listener` until `shutdown` resolves, then stops gracefully: in-flight captures
/// finish and every acknowledged write is committed before this returns.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), RunError> {
    let addr = listener.local_addr().map_err(RunError::Address)?;
    // Dropped last, when every stream has ended (or the stop gave up waiting for them).
    let streams = server::StreamRuntime::start().map_err(RunError::StreamRuntime)?;
    let events = EventHub::new();
    let location = Location::parse(&config.db);
    let store_config = StoreConfig {
        location: location.clone(),
        synchronous: config.synchronous,
        write_queue: config.write_queue,
        read_connections: READ_CONNECTIONS,
    };
    let (store, workers) = Store::open(&store_config, events.clone(), clock::now_ms()).await?;
    let (trigger, signal) = shutdown::channel();
    let state = Arc::new(AppState::new(config, store, events, signal));
    tracing::info!(
        db = %location.redacted(),
        engine = state.store.engine(),
        bins = state.store.bin_count(),
        "listening on http://{addr}"
    );
    state.tasks.spawn(reaper::run(state.clone()));
    state.tasks.spawn(server::anchor_timers(state.clone()));
    state
        .tasks
        .spawn(server::serve(listener, state.clone(), streams.handle()));
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    trigger.trigger();
    let tasks = state.tasks.clone();
    tasks.close();
    if tokio::time::timeout(STOP_WAIT, tasks.wait()).await.is_err() {
        // Each task holds the state and with it the store: the writer would wait for them.
        tracing::warn!(
            tasks = tasks.len(),
            "tasks still running {STOP_WAIT:?} after the stop signal; exiting without them \
             (every acknowledged capture is committed already)"
        );
        return Ok(());
    }
    // The last handle on the store: the writer commits what is queued, then exits.
    drop(state);
    workers.join().await;
    tracing::info!("stopped");
    Ok(())
}
