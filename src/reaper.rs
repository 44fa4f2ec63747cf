//! Deletes expired bins every `--reap-interval`, in steps through the writer.
//!
//! Expired bins already answer 404 before they are reaped (every lookup compares `expires_at` with
//! now); reaping reclaims their space. Each step is queued like any other write (on PostgreSQL one
//! transaction, on SQLite several; below). The step size adapts to keep each step near its engine's
//! target, whatever the row sizes, and the reaper pauses between steps (see `Pacing`).
//!
//! On SQLite a step goes through the only writer, which deletes it in slices of a few dozen rows,
//! one slice in each transaction it runs (with the captures of a batch, or alone when none are
//! queued): a capture waits for a slice at most, not for the step (`storage::sqlite::writer`,
//! `ReapStep`). The step's time is what its slices held the writer. The steps are short (about
//! 1 ms) and spaced out: 50x the step, at least 40 ms (about 20 a second, 2% of the writer's time)
//! while that deletes the rows in time, and closer together when it does not (see `FINISH_WITHIN`).
//! Measured, before the slices, when a step was one transaction, with `bench/run.sh`'s reap of 100k
//! requests under load (bench/RESULTS.md, 2026-12-01): steps of 1 ms with pauses of 3x the step
//! (about 100 steps a second, the reap done in 2-4 s) put the capture p99 at 2.1-3.0x that of the
//! same load without a reap, and with pauses of 50x 1.3-1.8x. Longer steps spaced further apart
//! were worse (8-16 ms every 300+ ms: 4.7x; 3 ms every 100+ ms: 1.3-2.1x). Those steps were timed
//! without their COMMIT, so a "1 ms" step held the writer longer; the catch-up pace of 3x then kept
//! the writer busy most of the time and stalled captures for up to a second in the soak
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
/// the reaper 2% of the writer's time: the gentle pace, and the slowest.
const WRITER: Pacing = Pacing {
    target: Duration::from_millis(1),
    pause_factor: 50.0,
    min_pause: Duration::from_millis(40),
};

/// How long the reaper gives itself to delete what has expired. The gentle pace reaps a fixed
/// share of the writer's time, and so a number of rows a second that depends on the machine and
/// its load: 2,800-5,400 a second on one machine in one evening, 1,100 on a slower one, which
/// reaped only 45,789 of the 100k requests that `bench/run.sh` times within its 40 s window
/// (bench/RESULTS.md, 2026-12-01). So each step's pause also follows from what is left and the
/// time left: the pause after a step that deleted `n` rows is what spreads the rows left over the
/// time left, `n` at a time, never longer than the gentle pause and never shorter than
/// [`CATCH_UP_FACTOR`] times the step. With `--bin-ttl 1m` and the default 1 min reap interval,
/// each pass has a minute of expired bins to delete (`bench/soak.sh`), so this is also what keeps
/// the reaper from falling behind.
///
/// The time runs from the start of the pass that found them, and passes that start before it is
/// over (a pass runs longer than the reap interval) keep it: their bins counted already. A pass
/// that finds nothing expired ends it. A pass that will be followed by another before the time is
/// over also counts the requests of the bins that expire by then, which that next pass will find.
/// Without that, bins that expire a moment after a pass started (100 bins made one after
/// another) would wait for the next pass and have the whole time again.
///
/// Measured with `bench/run.sh`'s reap on a machine whose gentle pace did 2,800-5,400 rows a
/// second (bench/RESULTS.md, 2026-12-01 19:08-20:40): 100k requests were gone 18-27 s after they
/// expired (the gentle pace alone: 21-36 s, of the 40 s the script waits), 300k in 20 s with 20 s
/// here (15,000 rows a second, 6.5% of the writer's time; p99 1.96x) and in 30 s with 30 s
/// (10,000 a second, 5.5%), where the gentle pace alone had not finished. 30 s spreads the reap
/// thinner and still leaves the script's window 8 s.
const FINISH_WITHIN: Duration = Duration::from_secs(30);

/// The shortest pause, as a multiple of the step: a quarter of the writer's time, for a reaper
/// past [`FINISH_WITHIN`].
const CATCH_UP_FACTOR: f64 = 3.0;

/// PostgreSQL: the step is a round trip (no `step_time`) and captures do not queue behind it;
/// short steps with a pause of three times the step, as before.
const ROUND_TRIP: Pacing = Pacing {
    target: Duration::from_millis(1),
    pause_factor: 3.0,
    min_pause: Duration::from_millis(1),
};

impl Pacing {
    /// The pace of an engine: whether its reap steps hold the only writer.
    fn of(store: &crate::storage::Store) -> Pacing {
        if store.reap_holds_the_writer() {
            WRITER
        } else {
            ROUND_TRIP
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

/// The pause after a step of the writer that deleted `rows` in `took`, with `left` rows to go in
/// `time_left` (see [`FINISH_WITHIN`]): one step of `rows` every `time_left * rows / left`, within
/// [`WRITER`]'s pause and [`CATCH_UP_FACTOR`] times the step.
fn writer_pause(took: Duration, rows: u64, left: u64, time_left: Duration) -> Duration {
    let gentle = WRITER.pause(took);
    if left == 0 {
        return gentle;
    }
    // A step that deleted nothing (it deleted empty bins) says nothing about the rate; it was
    // short.
    let cycle = time_left.as_nanos() as f64 * rows.max(1) as f64 / left as f64;
    let pause = Duration::from_nanos((cycle - took.as_nanos() as f64).max(0.0).round() as u64);
    pause.clamp(scale(took, CATCH_UP_FACTOR), gentle)
}

/// `d * factor`, to the nanosecond.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::from_nanos((d.as_nanos() as f64 * factor).round() as u64)
}

/// What the reaper carries from one pass to the next.
#[derive(Debug)]
pub struct Reaping {
    /// The step size in rows, adapted as it goes.
    budget: usize,
    /// When what the last passes found should be deleted by (see [`FINISH_WITHIN`]).
    deadline: Option<Instant>,
}

impl Reaping {
    pub fn new(budget: usize) -> Reaping {
        Reaping {
            budget,
            deadline: None,
        }
    }

    /// The deadline of a pass that starts at `pass` and finds expired rows, and how far ahead of
    /// its `now` it counts the rows of bins that expire (see [`FINISH_WITHIN`]).
    fn deadline(&self, pass: Instant, reap_interval: Duration) -> (Instant, Duration) {
        let by = self
            .deadline
            .filter(|d| *d > pass)
            .unwrap_or(pass + FINISH_WITHIN);
        let until = by - pass;
        // The next pass starts before the deadline when this one ends in time.
        let ahead = if reap_interval < until {
            until
        } else {
            Duration::ZERO
        };
        (by, ahead)
    }
}

/// Runs until shutdown.
pub async fn run(state: Arc<AppState>) {
    let mut interval = tokio::time::interval(state.config.reap_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reaping = Reaping::new(256);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = state.shutdown.triggered() => return,
        }
        if let Err(e) = reap_all(&state, now_ms(), &mut reaping).await {
            tracing::warn!(cause = %e, "reaping failed; retrying at the next interval");
        }
    }
}

/// The requests a pass that starts at `pass` (`now` in unix ms) has to delete, and by when (see
/// [`FINISH_WITHIN`]); `(0, None)` when nothing has expired, which ends the period.
async fn rows_to_reap(
    state: &AppState,
    now: i64,
    pass: Instant,
    reaping: &Reaping,
) -> Result<(u64, Option<Instant>), crate::storage::StoreError> {
    let left = state.store.expired_requests(now).await?;
    if left == 0 {
        return Ok((0, None));
    }
    let (by, ahead) = reaping.deadline(pass, state.config.reap_interval);
    if ahead.is_zero() {
        return Ok((left, Some(by)));
    }
    // The bins that expire by then include those expired now: this count holds both.
    let upto = now.saturating_add(ahead.as_millis() as i64);
    Ok((state.store.expired_requests(upto).await?, Some(by)))
}

/// Reaps every bin expired at `now` (unix ms); returns (bins, requests) deleted.
pub async fn reap_all(
    state: &AppState,
    now: i64,
    reaping: &mut Reaping,
) -> Result<(u64, u64), crate::storage::StoreError> {
    let (mut bins, mut requests) = (0u64, 0u64);
    let pass = Instant::now();
    let pacing = Pacing::of(&state.store);
    // Only the writer's pauses follow from the rows left and the time left; PostgreSQL's
    // round trips need neither, so nothing is counted there.
    let (mut left, deadline) = if pacing == WRITER {
        rows_to_reap(state, now, pass, reaping).await?
    } else {
        (0, None)
    };
    reaping.deadline = deadline;
    let budget = &mut reaping.budget;
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
        left = left.saturating_sub(step.requests_deleted);
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
            *budget = pacing.adapt(*budget, took);
        }
        let pause = if pacing == WRITER {
            let time_left = deadline.map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(Instant::now())
            });
            writer_pause(took, step.requests_deleted, left, time_left)
        } else {
            pacing.pause(took)
        };
        tracing::debug!(
            requests = step.requests_deleted,
            bins = step.bins_deleted.len(),
            took_us = took.as_micros() as u64,
            budget = *budget,
            left,
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
        // A step of the writer: 50x the step, at least 40 ms.
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
        // A round trip (PostgreSQL): three times the step.
        assert_eq!(ROUND_TRIP.pause(ms(5)), ms(15));
    }

    #[test]
    fn a_pass_spreads_the_rows_left_over_the_time_left_between_gentle_and_catch_up() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let secs = Duration::from_secs;
        // Little left, or much time: the gentle pause, 50x the step, at least 40 ms.
        assert_eq!(writer_pause(ms(1), 256, 1_000, secs(20)), ms(50));
        assert_eq!(writer_pause(us(300), 256, 1_000, secs(20)), ms(40));
        // 100k rows in 20 s, 256 rows a step of 1 ms: a step every 51.2 ms, so the gentle pace
        // is just in time.
        assert_eq!(writer_pause(ms(1), 256, 100_000, secs(20)), ms(50));
        // A slower machine, 150 rows in 2.5 ms: a step every 30 ms, a pause of 27.5 ms instead
        // of the gentle 125 ms. Half the time left: half the pause.
        assert_eq!(writer_pause(us(2500), 150, 100_000, secs(20)), us(27_500));
        assert_eq!(writer_pause(us(2500), 150, 100_000, secs(10)), us(12_500));
        // Behind, or past the deadline: never below 3x the step (a quarter of the writer).
        assert_eq!(writer_pause(ms(2), 150, 100_000, secs(1)), ms(6));
        assert_eq!(writer_pause(ms(2), 150, 100_000, Duration::ZERO), ms(6));
        // Nothing left by the count (the step deleted empty bins, or the counts were off): no
        // hurry.
        assert_eq!(writer_pause(ms(1), 0, 0, Duration::ZERO), ms(50));
        // A step that deleted no row counts as one.
        assert_eq!(writer_pause(ms(1), 0, 100, secs(1)), ms(9));
    }

    #[test]
    fn passes_that_follow_one_another_share_its_deadline_and_count_what_expires_before_it() {
        let secs = Duration::from_secs;
        let t0 = Instant::now();
        let mut r = Reaping::new(256);
        // The first pass that finds rows: FINISH_WITHIN from now, and with a reap interval of
        // 1 s the next passes come before that, so it counts the bins that expire until then.
        assert_eq!(r.deadline(t0, secs(1)), (t0 + FINISH_WITHIN, FINISH_WITHIN));
        // With the default minute, the next pass comes after the deadline: nothing ahead.
        assert_eq!(
            r.deadline(t0, secs(60)),
            (t0 + FINISH_WITHIN, Duration::ZERO)
        );
        // A pass that starts before the deadline keeps it, and counts up to it.
        r.deadline = Some(t0 + FINISH_WITHIN);
        let later = t0 + secs(8);
        assert_eq!(
            r.deadline(later, secs(1)),
            (t0 + FINISH_WITHIN, FINISH_WITHIN - secs(8))
        );
        // Once it is past, a new one.
        let after = t0 + FINISH_WITHIN + secs(1);
        assert_eq!(r.deadline(after, secs(1)).0, after + FINISH_WITHIN);
    }

    use crate::model::{Bin, StoredRequest};

    #[tokio::test]
    async fn reaps_exactly_the_bins_expired_at_the_given_instant_in_small_steps() {
        let dir = tempfile::tempdir().unwrap();
        let (state, writer, _trigger) = AppState::for_tests(dir.path().join("reap.db")).await;
        // SQLite's steps hold the writer: they are spaced out.
        assert_eq!(Pacing::of(&state.store), WRITER);
        // (bin, expires_at, requests)
        let bins = [
            ("early", 1_000, 5),
            ("on-time", 2_000, 3),
            ("later", 3_000, 2),
        ];
        for (id, expires_at, requests) in bins {
            state
                .store
                .create_bin(Bin::sample(id, expires_at), None)
                .await
                .unwrap();
            for _ in 0..requests {
                let request = StoredRequest {
                    received_at: 1,
                    ..StoredRequest::sample::<&[u8]>(id, "", "", &[], b"x")
                };
                state.store_for_tests(request).await;
            }
        }

        // Two rows a step: a run takes several steps.
        let mut reaping = Reaping::new(2);
        assert_eq!(reap_all(&state, 999, &mut reaping).await.unwrap(), (0, 0));
        assert_eq!(reaping.deadline, None);
        // Expired means expires_at <= now: "on-time" goes at 2000 exactly, "later" stays.
        assert_eq!(state.store.expired_requests(2_000).await.unwrap(), 8);
        assert_eq!(reap_all(&state, 2_000, &mut reaping).await.unwrap(), (2, 8));
        assert!(reaping.deadline.is_some());
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
        assert_eq!(state.store.expired_requests(2_000).await.unwrap(), 0);
        assert_eq!(state.store.expired_requests(3_000).await.unwrap(), 2);
        // A pass that finds nothing ends the period.
        assert_eq!(reap_all(&state, 2_000, &mut reaping).await.unwrap(), (0, 0));
        assert_eq!(reaping.deadline, None);

        drop(state);
        writer.join().await;
    }
}
