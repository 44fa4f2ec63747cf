//! Deletes expired bins every `--reap-interval`, in steps through the writer.
//!
//! Expired bins already answer 404 before they are reaped (every lookup compares `expires_at`
//! with now); reaping reclaims their space. Each step is one transaction, queued like any other
//! write. The step size adapts to keep each step near its engine's target, whatever the row
//! sizes, and the reaper pauses between steps (see `Pacing`).
//!
//! On SQLite a step holds the only writer: every capture that arrives during it waits for all of
//! it, COMMIT included (the writer times the whole transaction). So the steps are short (about
//! 1 ms) and spaced out (50x the step, at least 40 ms: about 20 a second, 2% of the writer's
//! time), for the first 30 s of a pass; a pass still running then is behind, and its pauses
//! shrink until it is done (see `GENTLE_FOR`). Measured with `bench/run.sh`'s reap of 100k
//! requests under load (bench/RESULTS.md, 2026-12-01): steps of 1 ms with pauses of 3x the step
//! (about 100 steps a second, the reap done in 2-4 s) put the capture p99 at 2.1-3.0x that of the
//! same load without a reap, and with these 1.3-1.8x. Longer steps spaced further apart were
//! worse (8-16 ms every 300+ ms: 4.7x; 3 ms every 100+ ms: 1.3-2.1x). Those steps were timed
//! without their COMMIT, so a "1 ms" step held the writer longer; the catch-up pace of 3x then
//! kept the writer busy most of the time and stalled captures for up to a second in the soak
//! (`bench/soak.sh`).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use crate::clock::now_ms;
use crate::state::AppState;

const MIN_BUDGET: usize = 16;
const MAX_BUDGET: usize = 4096;

/// How the reaper spaces its steps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pacing {
    /// The step length the budget adapts to (a full step between half and twice this keeps it).
    target: Duration,
    /// The pause after a step, as a multiple of the step's length ...
    pause_factor: f64,
    /// ... and at least this.
    min_pause: Duration,
}

/// SQLite: the writer measures the step, COMMIT included (`step_time`), and a step stops every
/// capture while it runs. Steps of about 1 ms with pauses of 50x the step (at least 40 ms) give
/// the reaper 2% of the writer's time.
const WRITER: Pacing = Pacing {
    target: Duration::from_millis(1),
    pause_factor: 50.0,
    min_pause: Duration::from_millis(40),
};

/// How long a pass may go on at [`WRITER`]'s pace. A pass still running after this is behind the
/// rate at which rows expire (with `--bin-ttl 1m` and the default 1 min reap interval, each pass
/// has a minute of expired bins to delete before the next one starts), or it has a large backlog.
/// From then on the pauses shrink by half every [`RAMP`], down to [`CATCH_UP_FACTOR`] times the
/// step: the reaper takes a larger share of the writer only while it stays behind, and only
/// as much larger as it takes to finish.
const GENTLE_FOR: Duration = Duration::from_secs(30);
/// See [`GENTLE_FOR`].
const RAMP: Duration = Duration::from_secs(10);
/// The shortest pause of a pass that is behind, as a multiple of the step: a quarter of the
/// writer's time.
const CATCH_UP_FACTOR: f64 = 3.0;

/// PostgreSQL: the step is a round trip (no `step_time`) and captures do not queue behind it;
/// short steps with a pause of three times the step, as before.
const ROUND_TRIP: Pacing = Pacing {
    target: Duration::from_millis(1),
    pause_factor: 3.0,
    min_pause: Duration::from_millis(1),
};

impl Pacing {
    /// The pace for the next step, `running` into the pass.
    fn of(step_time: Option<Duration>, running: Duration) -> Pacing {
        if step_time.is_none() {
            return ROUND_TRIP;
        }
        let Some(over) = running.checked_sub(GENTLE_FOR) else {
            return WRITER;
        };
        // Halved every RAMP past GENTLE_FOR, the minimum pause with them.
        let shrink = 0.5f64.powf(over.as_secs_f64() / RAMP.as_secs_f64());
        let factor = (WRITER.pause_factor * shrink).max(CATCH_UP_FACTOR);
        Pacing {
            pause_factor: factor,
            min_pause: scale(WRITER.min_pause, factor / WRITER.pause_factor),
            ..WRITER
        }
    }

    /// The next budget after a full step that took `took`: the one that would have taken the
    /// target, but at most halved or doubled at a time. (Halving past twice the target and
    /// doubling below half of it left the budget halved after one slow step: steps of half the
    /// target, and with the minimum pause half the rows a second, for the rest of the pass.)
    fn adapt(&self, budget: usize, took: Duration) -> usize {
        let ideal = budget as f64 * self.target.as_secs_f64() / took.as_secs_f64().max(1e-9);
        let next = ideal
            .clamp(budget as f64 / 2.0, budget as f64 * 2.0)
            .round() as usize;
        next.clamp(MIN_BUDGET, MAX_BUDGET)
    }

    fn pause(&self, took: Duration) -> Duration {
        scale(took, self.pause_factor).max(self.min_pause)
    }
}

/// `d * factor`, to the nanosecond.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::from_nanos((d.as_nanos() as f64 * factor).round() as u64)
}

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
    let pass = Instant::now();
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
        let pacing = Pacing::of(step.step_time, pass.elapsed());
        // Only full steps say something about speed.
        if step.requests_deleted as usize >= *budget {
            *budget = pacing.adapt(*budget, took);
        }
        let pause = pacing.pause(took);
        tracing::debug!(
            requests = step.requests_deleted,
            bins = step.bins_deleted.len(),
            took_us = took.as_micros() as u64,
            budget = *budget,
            pause_ms = pause.as_millis() as u64,
            "reap step"
        );
        tokio::time::sleep(pause).await;
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

    #[test]
    fn sqlite_steps_are_spaced_out_and_postgres_keeps_short_pauses() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        // A step timed inside the writer: 50x the step, at least 40 ms.
        assert_eq!(Pacing::of(Some(ms(1)), Duration::ZERO), WRITER);
        assert_eq!(WRITER.pause(us(300)), ms(40));
        assert_eq!(WRITER.pause(ms(2)), ms(100));
        // The budget grows while steps are short and shrinks when they are long.
        assert_eq!(WRITER.adapt(256, us(400)), 512);
        assert_eq!(WRITER.adapt(512, ms(1)), 512);
        assert_eq!(WRITER.adapt(1024, ms(3)), 512);
        assert_eq!(WRITER.adapt(MAX_BUDGET, ms(1)), MAX_BUDGET);
        assert_eq!(WRITER.adapt(MIN_BUDGET, ms(50)), MIN_BUDGET);
        // In between, towards the target: a step of 128 rows that took 0.64 ms would have
        // taken 1 ms with 200.
        assert_eq!(WRITER.adapt(128, us(640)), 200);
        assert_eq!(WRITER.adapt(200, us(1250)), 160);
        // A round trip (PostgreSQL): three times the step, however long the pass runs.
        assert_eq!(Pacing::of(None, Duration::ZERO), ROUND_TRIP);
        assert_eq!(ROUND_TRIP.pause(ms(5)), ms(15));
        assert_eq!(Pacing::of(None, GENTLE_FOR * 4), ROUND_TRIP);
    }

    #[test]
    fn a_pass_still_running_after_gentle_for_halves_its_pauses_every_ramp() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let at = |running| Pacing::of(Some(ms(1)), running);
        assert_eq!(at(GENTLE_FOR - ms(1)), WRITER);
        assert_eq!(at(GENTLE_FOR), WRITER);
        // One RAMP past: 25x the step, at least 20 ms; two: 12.5x, at least 10 ms.
        assert_eq!(at(GENTLE_FOR + RAMP).pause(ms(1)), ms(25));
        assert_eq!(at(GENTLE_FOR + RAMP).pause(us(100)), ms(20));
        assert_eq!(at(GENTLE_FOR + RAMP * 2).pause(ms(2)), ms(25));
        assert_eq!(at(GENTLE_FOR + RAMP * 2).pause(us(100)), ms(10));
        // In between, in between.
        let half = at(GENTLE_FOR + RAMP / 2).pause(ms(1));
        assert!(ms(25) < half && half < ms(50), "{half:?}");
        // Never below CATCH_UP_FACTOR times the step (a quarter of the writer's time).
        let late = at(GENTLE_FOR + RAMP * 20);
        assert_eq!(late.pause(ms(1)), ms(3));
        assert_eq!(late.pause(us(10)), us(2400));
        // The step length the budget adapts to stays the same.
        assert_eq!(late.adapt(512, ms(1)), 512);
    }

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
                let pending = state
                    .store
                    .try_capture(request, None, 1000, u64::MAX)
                    .unwrap();
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
