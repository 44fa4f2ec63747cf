//! Deletes expired bins every `--reap-interval`, in small steps through the writer.
//!
//! Expired bins already answer 404 before they are reaped (every lookup compares `expires_at`
//! with now); reaping reclaims their space. Each step is one short transaction, queued like any
//! other write, so captures wait at most one step. The step size adapts to keep each step near
//! `STEP_TARGET`, whatever the row sizes, and after each step the reaper pauses three times as
//! long as the step took: it never has more than about a quarter of the writer's time. The
//! target is short because a capture that arrives during a step waits for all of it: with steps
//! of 10 ms the capture p99 during a reap of 100k requests was 63-93 ms (bench/RESULTS.md).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::clock::now_ms;
use crate::state::AppState;

const STEP_TARGET: Duration = Duration::from_millis(1);
const MIN_BUDGET: usize = 16;
const MAX_BUDGET: usize = 4096;

/// Runs until shutdown.
pub async fn run(state: Arc<AppState>) {
    let mut interval = tokio::time::interval(state.config.reap_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut budget = 256;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = state.shutdown.triggered() => return,
        }
        if let Err(e) = reap_all(&state, now_ms(), &mut budget).await {
            tracing::warn!(cause = %e, "reaping failed; retrying at the next interval");
        }
    }
}

/// Reaps every bin expired at `now` (unix ms); returns (bins, requests) deleted. `budget` is the
/// step size in rows, adapted as it goes and kept for the next run.
pub async fn reap_all(
    state: &AppState,
    now: i64,
    budget: &mut usize,
) -> Result<(u64, u64), crate::storage::StoreError> {
    let (mut bins, mut requests) = (0u64, 0u64);
    loop {
        if state.shutdown.is_triggered() {
            break;
        }
        let started = Instant::now();
        let step = state.store.reap_step(now, *budget).await?;
        // The step's own time when the engine knows it: the round trip also counts the captures
        // queued ahead of it, which would shrink the steps for nothing under load.
        let took = step.step_time.unwrap_or_else(|| started.elapsed());
        bins += step.bins_deleted.len() as u64;
        requests += step.requests_deleted;
        // Counted per step, so a long reap shows progress on /metrics.
        state
            .metrics
            .bins_reaped
            .fetch_add(step.bins_deleted.len() as u64, Relaxed);
        state
            .metrics
            .requests_reaped
            .fetch_add(step.requests_deleted, Relaxed);
        if step.done {
            break;
        }
        // Only full steps say something about speed.
        if step.requests_deleted as usize >= *budget {
            if took > STEP_TARGET * 2 {
                *budget = (*budget / 2).max(MIN_BUDGET);
            } else if took < STEP_TARGET / 2 {
                *budget = (*budget * 2).min(MAX_BUDGET);
            }
        }
        // Leave the writer to captures for three times as long as this step held it. Measured on
        // 100 bins x 1000 requests reaped under load (bench/run.sh reap, steps of 1-2 ms): the
        // capture p99 while reaping was 2.0-2.6x that of the same load without a reap whether
        // the pause was 2x, 3x or 7x the step: what is left is the WAL pages the deletes write,
        // not the pacing.
        tokio::time::sleep((took * 3).max(Duration::from_millis(1))).await;
    }
    if bins > 0 || requests > 0 {
        tracing::info!(bins, requests, "reaped expired bins");
    }
    Ok((bins, requests))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    use super::*;
    use crate::config::Config;
    use crate::events::EventHub;
    use crate::model::{Bin, StoredRequest};
    use crate::storage::{CaptureOutcome, Location, Store, StoreConfig, Synchronous};

    #[tokio::test]
    async fn reaps_exactly_the_bins_expired_at_the_given_instant_in_small_steps() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::for_db(dir.path().join("reap.db"));
        let store_config = StoreConfig {
            location: Location::Sqlite(config.db.clone()),
            synchronous: Synchronous::Normal,
            write_queue: 64,
            read_connections: 1,
        };
        let events = EventHub::new();
        let (store, writer) = Store::open(&store_config, events.clone(), 0).await.unwrap();
        let (_trigger, shutdown) = crate::shutdown::channel();
        let state = AppState::new(config, store, events, shutdown);
        // (bin, expires_at, requests)
        let bins = [
            ("early", 1_000, 5),
            ("on-time", 2_000, 3),
            ("later", 3_000, 2),
        ];
        for (id, expires_at, requests) in bins {
            let bin = Bin {
                id: id.into(),
                created_at: 0,
                expires_at,
                response: None,
                request_count: 0,
                view_token_hash: None,
            };
            state.store.create_bin(bin, None).await.unwrap();
            for _ in 0..requests {
                let request = StoredRequest {
                    received_at: 1,
                    ..StoredRequest::sample::<&[u8]>(id, "", "", &[], b"x")
                };
                let pending = state.store.try_capture(request, 1000, u64::MAX).unwrap();
                let outcome = pending.outcome().await.unwrap();
                assert!(
                    matches!(outcome, CaptureOutcome::Stored { .. }),
                    "{outcome:?}"
                );
            }
        }

        // Two rows a step: a run takes several steps.
        let mut budget = 2;
        assert_eq!(reap_all(&state, 999, &mut budget).await.unwrap(), (0, 0));
        // Expired means expires_at <= now: "on-time" goes at 2000 exactly, "later" stays.
        assert_eq!(reap_all(&state, 2_000, &mut budget).await.unwrap(), (2, 8));
        assert_eq!(state.metrics.bins_reaped.load(Relaxed), 2);
        assert_eq!(state.metrics.requests_reaped.load(Relaxed), 8);
        // Gone from memory too (they have not expired at 0), and from the database.
        for gone in ["early", "on-time"] {
            assert!(state.store.bin_entry(gone, 0).is_none(), "{gone}");
            assert_eq!(
                state.store.last_request_id(gone).await.unwrap(),
                0,
                "{gone}"
            );
        }
        let later = state.store.get_bin("later", 2_000).await.unwrap().unwrap();
        assert_eq!(later.request_count, 2);
        assert_eq!(reap_all(&state, 2_000, &mut budget).await.unwrap(), (0, 0));

        drop(state);
        writer.join().await;
    }
}
