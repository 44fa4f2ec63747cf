//! Deletes expired bins every `--reap-interval`, in small steps through the writer.
//!
//! Expired bins already answer 404 before they are reaped (every lookup compares `expires_at`
//! with now); reaping reclaims their space. Each step is one short transaction, queued like any
//! other write, so captures wait at most one step. The step size adapts to keep each step near
//! `STEP_TARGET` (10 ms), whatever the row sizes, and after each step the reaper pauses as long as the
//! step took: it never has more than about half of the writer's time, so captures keep flowing.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::clock::now_ms;
use crate::state::AppState;

const STEP_TARGET: Duration = Duration::from_millis(10);
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
        if let Err(e) = reap_all(&state, &mut budget).await {
            tracing::warn!(cause = %e, "reaping failed; retrying at the next interval");
        }
    }
}

/// Reaps every bin expired now; returns (bins, requests) deleted.
pub async fn reap_all(
    state: &AppState,
    budget: &mut usize,
) -> Result<(u64, u64), crate::storage::StoreError> {
    let now = now_ms();
    let (mut bins, mut requests) = (0u64, 0u64);
    loop {
        if state.shutdown.is_triggered() {
            break;
        }
        let started = Instant::now();
        let step = state.store.reap_step(now, *budget).await?;
        let took = started.elapsed();
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
        // Leave the writer to captures for as long as this step held it.
        tokio::time::sleep(took.max(Duration::from_millis(1))).await;
    }
    if bins > 0 || requests > 0 {
        tracing::info!(bins, requests, "reaped expired bins");
    }
    Ok((bins, requests))
}
