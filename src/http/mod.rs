//! The JSON API under `/api`, capture (`/r/{bin}`), and the operator's endpoints (`/healthz`,
//! `/metrics`). [`crate::router`] dispatches here; the use cases these handlers run are in
//! [`crate::bins`], the shared plumbing (bodies, errors, the client's address) in [`crate::web`].

pub mod api;
pub mod capture;
pub mod replay;
pub mod signature;
pub mod stream;
pub mod views;

use std::sync::atomic::Ordering;

use hyper::{Response, StatusCode};

use crate::metrics::Gauges;
use crate::state::AppState;
use crate::web::body::{self, Body};

pub async fn healthz(state: &AppState) -> Response<Body> {
    match state.store.ping().await {
        Ok(()) => body::text(StatusCode::OK, "ok"),
        Err(e) => {
            tracing::warn!(cause = %e, "health check: the database does not answer");
            body::text(StatusCode::SERVICE_UNAVAILABLE, "database unavailable")
        }
    }
}

pub fn metrics(state: &AppState) -> Response<Body> {
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    // The SQLite file and its WAL; on PostgreSQL, pg_database_size (as `used_bytes`).
    let database_bytes = match state.store.file_path() {
        Some(db) => {
            let mut wal = db.as_os_str().to_owned();
            wal.push("-wal");
            size(db) + size(std::path::Path::new(&wal))
        }
        None => state.store.used_bytes(),
    };
    let writes = state.store.write_stats();
    let gauges = Gauges {
        write_queue_depth: state.store.queue_depth(),
        write_queue_capacity: state.config.write_queue,
        live_bins: state.store.bin_count(),
        database_bytes,
        database_used_bytes: state.store.used_bytes(),
        database_limit_bytes: state.config.max_db_bytes,
        open_connections: state.open_connections.load(Ordering::Relaxed),
        body_memory_bytes: state.body_memory.used(),
        write_batches: writes.batches,
        wal_written_bytes: writes.wal_bytes,
    };
    body::with_type(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        state.metrics.render(gauges),
    )
}
