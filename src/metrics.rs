//! Counters for `/metrics`, in the Prometheus text format.
//!
//! Plain atomics: the hot path (a capture) adds to a few counters and one histogram bucket.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the capture latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Debug, Default)]
pub struct Metrics {
    pub requests_captured: AtomicU64,
    pub requests_truncated: AtomicU64,
    pub requests_evicted: AtomicU64,
    pub captures_rejected_queue_full: AtomicU64,
    pub capture_failures: AtomicU64,
    pub captures_rejected_storage_full: AtomicU64,
    pub captures_unknown_bin: AtomicU64,
    pub bins_created: AtomicU64,
    pub bins_deleted: AtomicU64,
    pub bins_reaped: AtomicU64,
    pub requests_reaped: AtomicU64,
    pub bins_rate_limited: AtomicU64,
    pub client_limit_rejections: AtomicU64,
    pub body_memory_rejections: AtomicU64,
    pub stream_resyncs: AtomicU64,
    pub stream_catchups: AtomicU64,
    capture_latency: Histogram,
}

#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    sum_micros: AtomicU64,
    count: AtomicU64,
}

/// Gauges read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub write_queue_depth: usize,
    /// `--write-queue`: the depth at which captures get 503.
    pub write_queue_capacity: usize,
    pub live_bins: usize,
    pub database_bytes: u64,
    /// Pages in use (free pages excluded): what `--max-db-bytes` is compared with.
    pub database_used_bytes: u64,
    /// `--max-db-bytes`, when set.
    pub database_limit_bytes: Option<u64>,
    pub open_connections: usize,
    pub body_memory_bytes: u64,
    /// Counters kept by storage, read like the gauges: the writer's commits...
    pub write_batches: u64,
    /// ...and the bytes SQLite wrote to its WAL (`None` on PostgreSQL).
    pub wal_written_bytes: Option<u64>,
}

impl Metrics {
    /// Time from the request head to the committed row (excluding any custom delay).
    pub fn observe_capture(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let i = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        let h = &self.capture_latency;
        h.buckets[i].fetch_add(1, Relaxed);
        h.sum_micros.fetch_add(elapsed.as_micros() as u64, Relaxed);
        h.count.fetch_add(1, Relaxed);
    }

    pub fn render(&self, g: Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let counters: [(&str, &str, &AtomicU64); 16] = [
            (
                "hookbin_requests_captured_total",
                "Requests captured and committed.",
                &self.requests_captured,
            ),
            (
                "hookbin_requests_truncated_total",
                "Captured requests whose body exceeded --max-body-bytes (answered 413).",
                &self.requests_truncated,
            ),
            (
                "hookbin_requests_evicted_total",
                "Requests dropped because their bin reached --max-requests-per-bin or --max-bin-bytes.",
                &self.requests_evicted,
            ),
            (
                "hookbin_captures_rejected_queue_full_total",
                "Captures answered 503 because the write queue was full.",
                &self.captures_rejected_queue_full,
            ),
            (
                "hookbin_capture_failures_total",
                "Captures the database failed to commit (answered 5xx, not recorded).",
                &self.capture_failures,
            ),
            (
                "hookbin_captures_rejected_storage_full_total",
                "Captures answered 507 because the disk was full or --max-db-bytes was reached.",
                &self.captures_rejected_storage_full,
            ),
            (
                "hookbin_captures_unknown_bin_total",
                "Requests to an unknown or expired bin (404).",
                &self.captures_unknown_bin,
            ),
            (
                "hookbin_bins_created_total",
                "Bins created.",
                &self.bins_created,
            ),
            (
                "hookbin_bins_deleted_total",
                "Bins deleted through the API.",
                &self.bins_deleted,
            ),
            (
                "hookbin_bins_reaped_total",
                "Expired bins deleted by the reaper.",
                &self.bins_reaped,
            ),
            (
                "hookbin_requests_reaped_total",
                "Requests deleted by the reaper with their expired bins.",
                &self.requests_reaped,
            ),
            (
                "hookbin_bins_rate_limited_total",
                "Bin creations refused by --max-bins-per-minute (429).",
                &self.bins_rate_limited,
            ),
            (
                "hookbin_client_limit_rejections_total",
                "Connections, streams and requests refused (429) by a per-client limit.",
                &self.client_limit_rejections,
            ),
            (
                "hookbin_body_memory_rejections_total",
                "Requests answered 503 because --max-body-memory was spent.",
                &self.body_memory_rejections,
            ),
            (
                "hookbin_event_stream_resyncs_total",
                "Times an event stream that fell behind the live events read from the database what the recent events in memory no longer held.",
                &self.stream_resyncs,
            ),
            (
                "hookbin_event_stream_catchups_total",
                "Times an event stream fell behind the live events and caught up from the recent events kept in memory.",
                &self.stream_catchups,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Relaxed)
            );
        }
        let gauges: [(&str, &str, u64); 7] = [
            (
                "hookbin_write_queue_depth",
                "Writes waiting for the database writer.",
                g.write_queue_depth as u64,
            ),
            (
                "hookbin_write_queue_capacity",
                "Writes the queue holds (--write-queue); captures beyond it get 503.",
                g.write_queue_capacity as u64,
            ),
            (
                "hookbin_bins_live",
                "Bins known to the server (expired ones until reaped).",
                g.live_bins as u64,
            ),
            (
                "hookbin_database_bytes",
                "Size of the SQLite database file plus its WAL.",
                g.database_bytes,
            ),
            (
                "hookbin_database_used_bytes",
                "Bytes of database pages holding data (free pages excluded); compared with --max-db-bytes.",
                g.database_used_bytes,
            ),
            (
                "hookbin_open_connections",
                "Client connections being served.",
                g.open_connections as u64,
            ),
            (
                "hookbin_body_memory_bytes",
                "Bytes of request bodies held in memory under --max-body-memory.",
                g.body_memory_bytes,
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let mut written = vec![(
            "hookbin_write_batches_total",
            "Write transactions the database writer committed, each a batch of captures under load (group commit; SQLite: also its other writes).",
            g.write_batches,
        )];
        if let Some(bytes) = g.wal_written_bytes {
            written.push((
                "hookbin_database_wal_written_bytes_total",
                "Bytes SQLite wrote to its WAL: pages and their frame headers.",
                bytes,
            ));
        }
        for (name, help, value) in written {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        if let Some(limit) = g.database_limit_bytes {
            let name = "hookbin_database_limit_bytes";
            let _ = writeln!(
                out,
                "# HELP {name} --max-db-bytes: captures answer 507 beyond it.\n# TYPE {name} gauge\n{name} {limit}"
            );
        }
        self.render_histogram(&mut out);
        out
    }

    fn render_histogram(&self, out: &mut String) {
        let name = "hookbin_capture_duration_seconds";
        let h = &self.capture_latency;
        let _ = writeln!(
            out,
            "# HELP {name} Time from request head to committed row.\n# TYPE {name} histogram"
        );
        let mut cumulative = 0;
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            cumulative += h.buckets[i].load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += h.buckets[LATENCY_BUCKETS.len()].load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let sum = h.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "{name}_sum {sum}\n{name}_count {}",
            h.count.load(Relaxed)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let m = Metrics::default();
        m.observe_capture(Duration::from_micros(300));
        m.observe_capture(Duration::from_millis(3));
        m.observe_capture(Duration::from_secs(60));
        let text = m.render(Gauges::default());
        assert!(text.contains("hookbin_capture_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
        assert!(text.contains("hookbin_capture_duration_seconds_bucket{le=\"0.005\"} 2\n"));
        assert!(text.contains("hookbin_capture_duration_seconds_bucket{le=\"10\"} 2\n"));
        assert!(text.contains("hookbin_capture_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert!(text.contains("hookbin_capture_duration_seconds_count 3\n"));
    }
}
