//! `c2c`: how long one CPU of this machine takes to see a cache line another CPU wrote, the
//! one-way core-to-core latency, in nanoseconds.
//!
//! Two threads, pinned to CPUs 0 and 1 (`--cpus A,B`), pass a flag in one cache line back and
//! forth `--iters` times; the time of a round trip, halved, is the latency. It prints the median
//! of `--reps` such runs, then each run: `c2c_ns=195 (191 198 200)`.
//!
//! Why bench/run.sh asks it between rounds: on a virtual machine the hypervisor may place the
//! two virtual CPUs close together (same core complex, ~50 ns here) or far apart (~200 ns), and
//! keeps a placement for seconds to minutes. Every server here hands each request from thread
//! to thread (socket, tokio workers, the writer) and from process to process (wrk), so a far
//! placement halves all their rates at once, while the CPU time of code that stays on one CPU
//! does not change (bench/RESULTS.md, 2026-12-05 19:41). Measured between rounds with the
//! machine otherwise idle; a run whose partner is preempted takes longer than a second and is
//! dropped (printed as `-`).
use std::hint::spin_loop;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use hookbin_bench_baselines::arg_value;

#[repr(align(128))]
struct Line(AtomicU32);

/// Pins the calling thread to `cpu`; false if the machine refuses (no such CPU).
fn pin(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET and sched_setaffinity only read
    // and write that set, and pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Waits until `line` holds `want`; false once `deadline` has passed or `stop` is set.
fn wait_for(line: &Line, want: u32, deadline: Instant, stop: &AtomicBool) -> bool {
    let mut spins = 0u32;
    while line.0.load(Ordering::Acquire) != want {
        spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && (stop.load(Ordering::Relaxed) || Instant::now() > deadline)
        {
            return false;
        }
    }
    true
}

/// One run: the one-way latency in ns, or None when it did not finish within a second.
fn run(cpus: (usize, usize), iters: u32) -> Option<f64> {
    let line = Arc::new(Line(AtomicU32::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(1);
    let pong = {
        let (line, stop) = (line.clone(), stop.clone());
        std::thread::spawn(move || {
            if !pin(cpus.1) {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            for _ in 0..iters {
                if !wait_for(&line, 1, deadline, &stop) {
                    return;
                }
                line.0.store(0, Ordering::Release);
            }
        })
    };
    if !pin(cpus.0) {
        stop.store(true, Ordering::Relaxed);
        let _ = pong.join();
        return None;
    }
    let start = Instant::now();
    let mut done = true;
    for _ in 0..iters {
        line.0.store(1, Ordering::Release);
        if !wait_for(&line, 0, deadline, &stop) {
            done = false;
            break;
        }
    }
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = pong.join();
    done.then(|| elapsed.as_nanos() as f64 / (2.0 * f64::from(iters)))
}

fn main() {
    let opt = |name: &str, default: &str| arg_value(name).unwrap_or_else(|| default.to_string());
    let reps: usize = opt("--reps", "3").parse().expect("--reps N");
    let iters: u32 = opt("--iters", "50000").parse().expect("--iters N");
    let cpus = opt("--cpus", "0,1");
    let (a, b) = cpus.split_once(',').expect("--cpus A,B");
    let cpus = (
        a.parse().expect("--cpus A,B"),
        b.parse().expect("--cpus A,B"),
    );
    let runs: Vec<Option<f64>> = (0..reps.max(1)).map(|_| run(cpus, iters.max(1))).collect();
    let mut ok: Vec<f64> = runs.iter().flatten().copied().collect();
    ok.sort_by(f64::total_cmp);
    let median = ok
        .get(ok.len() / 2)
        .map_or("-".to_string(), |v| format!("{v:.0}"));
    let each: Vec<String> = runs
        .iter()
        .map(|r| r.map_or("-".to_string(), |v| format!("{v:.0}")))
        .collect();
    println!("c2c_ns={median} ({})", each.join(" "));
}
