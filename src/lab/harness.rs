//! The contention harness: run one point (a latch, a thread count, a pause scale) for a
//! duration and measure it. Measurement only; summaries live in `analysis::lab_stats`.
//!
//! A run's elapsed time spans from the first worker's start to the last worker's stop, the
//! same interval its CPU time is taken over, so throughput times CPU per operation (busy CPUs)
//! cannot exceed the CPUs the workers run on. Workers look at the stop flag inside their spins
//! and busy loops, so a run ends promptly after its window even with spins of minutes.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::latch::{LatchKind, SpinParams, Unprotected, WaitCtx};
use crate::analysis::lab_stats::{busy_cpus, jain_index, overrun_pct, OVERRUN_LIMIT_PCT};
use crate::cpu::measure;
use crate::cpu::timing::{self, ns_to_ticks, ticks, ticks_to_ns};

/// The workload of one point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    pub latch: LatchKind,
    pub threads: usize,
    pub pause_scale: u32,
    pub duration_ms: u64,
    /// Busy work inside the critical section, in ns.
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    pub cs_lines: usize,
    /// Busy work between operations, in ns.
    pub think_ns: u64,
    /// Pin worker i to the i-th allowed CPU (mod their count).
    pub pin: bool,
    /// Stride in bytes of the per-thread operation counters (0 = packed 8 bytes: false sharing).
    pub padding: usize,
    pub params: SpinParams,
}

/// What one run of one point measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMetrics {
    /// Operations completed before the stop (the drain after it is not counted).
    pub ops: u64,
    /// From the first worker's start to the last worker's stop.
    pub elapsed_ms: f64,
    pub ops_per_s: f64,
    pub acquire_p50_ns: f64,
    pub acquire_p99_ns: f64,
    pub acquire_p999_ns: f64,
    pub acquire_max_ns: f64,
    /// Worker CPU time (user + system, getrusage per thread) per operation.
    pub cpu_ns_per_op: f64,
    /// Workers' CPU time over the elapsed time (= ops/s x CPU per op); at most the CPUs used.
    pub busy_cpus: f64,
    /// How far the run outlasted its window, in percent (0 when it did not).
    pub overrun_pct: f64,
    /// True when `overrun_pct` exceeds 10%.
    pub overrun: bool,
    /// From the stop (end of the window, as the controlling thread got to it) to the last
    /// worker's stop, in ms: how long the workers took to notice and leave. The rest of an
    /// overrun is workers the scheduler started late, or the controlling thread woken late, on
    /// a busy machine.
    pub stop_lag_ms: f64,
    pub voluntary_cs_per_op: f64,
    pub involuntary_cs_per_op: f64,
    pub hints_per_acquire: f64,
    pub yields_per_acquire: f64,
    pub futex_waits_per_acquire: f64,
    /// Jain's index over per-thread operation counts.
    pub fairness: f64,
    pub min_thread_ops: u64,
    /// Updates of the latch-protected plain counter that were lost: must be 0.
    pub lost_updates: u64,
    pub interrupted: bool,
}

#[derive(Default, Clone, Copy)]
struct Usage {
    cpu_ns: u64,
    nvcsw: u64,
    nivcsw: u64,
}

fn thread_usage() -> Usage {
    // SAFETY: an all-zero rusage is a valid value; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    #[cfg(target_os = "linux")]
    let who = libc::RUSAGE_THREAD;
    #[cfg(not(target_os = "linux"))]
    let who = libc::RUSAGE_SELF;
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Usage {
        cpu_ns: tv(ru.ru_utime) + tv(ru.ru_stime),
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
    }
}

/// Busy-wait `n` ticks (no hint, like real work), cut short by `stop`.
#[inline]
fn busy_until(n: u64, stop: &AtomicBool) {
    if n == 0 {
        return;
    }
    let start = ticks();
    while ticks().wrapping_sub(start) < n {
        if stop.load(Ordering::Relaxed) {
            return;
        }
    }
}

struct WorkerOut {
    ops: u64,
    /// Every operation, also those completed after the stop (for the lost-update check).
    bumps: u64,
    hist: Histogram<u64>,
    usage: Usage,
    hints: u64,
    yields: u64,
    futex_waits: u64,
    started: Instant,
    ended: Instant,
}

/// The mutual-exclusion check: every operation incremented the latch-protected plain counter
/// once, so a shortfall is the number of updates two overlapping holders lost. Call after all
/// workers joined.
fn lost_updates(ops: u64, data: &Unprotected) -> u64 {
    ops.saturating_sub(data.total())
}

/// The CPUs workers may run on (the affinity mask), for pinning and the busy-CPU bound.
pub fn allowed_cpus() -> Vec<usize> {
    measure::get_affinity()
        .map(|s| measure::cpus_in(&s))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

/// What the workers of one run share: the latch and the data it guards, the stop flag, the
/// start line, and the workload's costs in ticks.
#[derive(Clone)]
struct Rig {
    latch: Arc<dyn super::latch::Latch>,
    data: Arc<Unprotected>,
    lines: Arc<Vec<AtomicU64>>,
    per_thread: Arc<Vec<AtomicU64>>,
    stride: usize,
    stop: Arc<AtomicBool>,
    barrier: Arc<Barrier>,
    /// Workers that have taken their start time: the window opens when all have, so a worker
    /// the scheduler starts late does not shorten it.
    running: Arc<AtomicUsize>,
    pin_error: Arc<Mutex<Option<String>>>,
    allowed: Arc<Vec<usize>>,
    hint: crate::spin::cpus::Hint,
    cs_ticks: u64,
    think_ticks: u64,
    pin: bool,
    scale: u32,
    seed: u64,
}

impl Rig {
    fn new(w: &Workload, seed: u64) -> Rig {
        let latch: Arc<dyn super::latch::Latch> = Arc::from(w.latch.build(&w.params));
        let hint = w
            .latch
            .hint(timing::host_arch())
            .unwrap_or_else(crate::cpu::arch::primary_hint);
        let data = Arc::new(Unprotected::new(latch.shards()));
        let lines: Arc<Vec<AtomicU64>> =
            Arc::new((0..w.cs_lines * 8).map(|_| AtomicU64::new(0)).collect());
        let stride = (w.padding / 8).max(1);
        let per_thread: Arc<Vec<AtomicU64>> =
            Arc::new((0..w.threads * stride).map(|_| AtomicU64::new(0)).collect());
        let (cs_ticks, think_ticks) = (ns_to_ticks(w.cs_ns), ns_to_ticks(w.think_ns));
        Rig {
            latch,
            data,
            lines,
            per_thread,
            stride,
            stop: Arc::new(AtomicBool::new(false)),
            barrier: Arc::new(Barrier::new(w.threads + 1)),
            running: Arc::new(AtomicUsize::new(0)),
            pin_error: Arc::new(Mutex::new(None)),
            allowed: Arc::new(allowed_cpus()),
            hint,
            cs_ticks,
            think_ticks,
            pin: w.pin,
            scale: w.pause_scale,
            seed,
        }
    }

    /// Worker `i`: pinned when asked, at the start line, then operating until the stop.
    fn worker(self, i: usize) -> WorkerOut {
        if self.pin {
            let cpu = self.allowed[i % self.allowed.len()];
            if let Err(e) = measure::pin_to(cpu) {
                let mut g = self.pin_error.lock().unwrap_or_else(|e| e.into_inner());
                g.get_or_insert(e);
            }
        }
        let mut ctx = WaitCtx::new(
            SmallRng::seed_from_u64(self.seed ^ (i as u64).wrapping_mul(0x9E37_79B9)),
            self.scale,
        )
        .with_hint(self.hint)
        .with_stop(self.stop.clone());
        let mut hist =
            Histogram::<u64>::new_with_max(100_000_000_000, 3).expect("static histogram bounds");
        self.barrier.wait();
        let started = Instant::now();
        let u0 = thread_usage();
        self.running.fetch_add(1, Ordering::Release);
        let (ops, bumps) = self.operate(i, &mut ctx, &mut hist);
        let u1 = thread_usage();
        let ended = Instant::now();
        let usage = Usage {
            cpu_ns: u1.cpu_ns.saturating_sub(u0.cpu_ns),
            nvcsw: u1.nvcsw.saturating_sub(u0.nvcsw),
            nivcsw: u1.nivcsw.saturating_sub(u0.nivcsw),
        };
        WorkerOut {
            ops,
            bumps,
            hist,
            usage,
            hints: ctx.hints,
            yields: ctx.yields,
            futex_waits: ctx.futex_waits,
            started,
            ended,
        }
    }

    /// Worker `i`'s operations until the stop: (those counted, all of them).
    fn operate(&self, i: usize, ctx: &mut WaitCtx, hist: &mut Histogram<u64>) -> (u64, u64) {
        let Rig {
            latch,
            data,
            lines,
            per_thread,
            stop,
            ..
        } = self;
        let (stride, cs_ticks, think_ticks) = (self.stride, self.cs_ticks, self.think_ticks);
        let (mut ops, mut bumps) = (0u64, 0u64);
        while !stop.load(Ordering::Relaxed) {
            let t0 = ticks();
            let mut acquired_at = 0;
            latch.with_lock(ctx, &mut |s| {
                acquired_at = ticks();
                // SAFETY: we are inside the latch that guards shard `s`.
                unsafe { data.bump(s) };
                for l in 0..lines.len() / 8 {
                    let c = &lines[l * 8];
                    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                }
                busy_until(cs_ticks, stop);
            });
            bumps += 1;
            // An operation that ends after the stop was cut short (spin skipped, work
            // cut): not counted.
            if stop.load(Ordering::Relaxed) {
                break;
            }
            hist.saturating_record(ticks_to_ns(acquired_at.wrapping_sub(t0)) as u64);
            ops += 1;
            per_thread[i * stride].fetch_add(1, Ordering::Relaxed);
            busy_until(think_ticks, stop);
        }
        (ops, bumps)
    }
}

/// Start the workers (parked at the start line).
fn spawn_workers(
    rig: &Rig,
    threads: usize,
) -> crate::Result<Vec<std::thread::JoinHandle<WorkerOut>>> {
    let mut handles = Vec::with_capacity(threads);
    for i in 0..threads {
        let rig = rig.clone();
        let h = std::thread::Builder::new()
            .name(format!("lab-{i}"))
            .spawn(move || rig.worker(i));
        match h {
            Ok(h) => handles.push(h),
            Err(e) => {
                // The workers already started stay parked on the barrier; the command exits
                // with this error right after, which ends them.
                return Err(crate::Error::runtime(format!(
                    "cannot start worker thread {i} ({e}); use fewer --threads"
                )));
            }
        }
    }
    Ok(handles)
}

/// The controlling thread's view of the window.
struct Window {
    /// When every worker had started.
    start: Instant,
    /// When the stop flag was set.
    stopped_at: Instant,
    interrupted: bool,
    pin_failed: Option<String>,
}

/// Release the workers, wait until all have started, hold the window (cut short by Ctrl-C or
/// a failed pin), then stop them.
fn hold_window(rig: &Rig, w: &Workload) -> Window {
    rig.barrier.wait();
    while rig.running.load(Ordering::Acquire) < w.threads && !crate::interrupt::stopped() {
        std::thread::sleep(Duration::from_micros(50));
    }
    let start = Instant::now();
    let deadline = start + Duration::from_millis(w.duration_ms);
    let mut interrupted = false;
    let pin_failed = rig
        .pin_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    while pin_failed.is_none() && Instant::now() < deadline {
        if crate::interrupt::stopped() {
            interrupted = true;
            break;
        }
        std::thread::sleep((deadline - Instant::now()).min(Duration::from_millis(10)));
    }
    rig.stop.store(true, Ordering::Relaxed);
    let stopped_at = Instant::now();
    Window {
        start,
        stopped_at,
        interrupted,
        pin_failed,
    }
}

/// Run one point once. Errors: a thread that could not be spawned or pinned (runtime).
pub fn run_point(w: &Workload, seed: u64) -> crate::Result<RunMetrics> {
    let rig = Rig::new(w, seed);
    let handles = spawn_workers(&rig, w.threads)?;
    let win = hold_window(&rig, w);
    let mut outs = Vec::with_capacity(handles.len());
    for h in handles {
        outs.push(
            h.join()
                .map_err(|_| crate::Error::runtime("a lab worker thread panicked"))?,
        );
    }
    if let Some(e) = win.pin_failed {
        return Err(crate::Error::runtime(format!("lab --pin: {e}")));
    }
    Ok(metrics(&outs, &rig.data, w, &win))
}

/// The workers' results added up.
struct Totals {
    hist: Histogram<u64>,
    ops: u64,
    bumps: u64,
    usage: Usage,
    hints: u64,
    yields: u64,
    waits: u64,
    /// Operations per worker.
    counts: Vec<f64>,
}

fn totals(outs: &[WorkerOut]) -> Totals {
    let mut t = Totals {
        hist: Histogram::<u64>::new_with_max(100_000_000_000, 3).expect("static histogram bounds"),
        ops: 0,
        bumps: 0,
        usage: Usage::default(),
        hints: 0,
        yields: 0,
        waits: 0,
        counts: Vec::with_capacity(outs.len()),
    };
    for o in outs {
        t.hist.add(&o.hist).ok();
        t.ops += o.ops;
        t.bumps += o.bumps;
        t.usage.cpu_ns += o.usage.cpu_ns;
        t.usage.nvcsw += o.usage.nvcsw;
        t.usage.nivcsw += o.usage.nivcsw;
        t.hints += o.hints;
        t.yields += o.yields;
        t.waits += o.futex_waits;
        t.counts.push(o.ops as f64);
    }
    t
}

/// What the run measured, from the workers' results.
fn metrics(outs: &[WorkerOut], data: &Unprotected, w: &Workload, win: &Window) -> RunMetrics {
    let Totals {
        hist,
        ops,
        bumps,
        usage,
        hints,
        yields,
        waits,
        counts,
    } = totals(outs);
    let start = win.start;
    let first = outs.iter().map(|o| o.started).min().unwrap_or(start);
    let last = outs.iter().map(|o| o.ended).max().unwrap_or(start);
    let elapsed_s = last.duration_since(first).as_secs_f64().max(1e-9);
    let per = |x: u64| {
        if ops == 0 {
            f64::NAN
        } else {
            x as f64 / ops as f64
        }
    };
    let over = if win.interrupted {
        0.0
    } else {
        overrun_pct(elapsed_s * 1e3, w.duration_ms as f64)
    };
    RunMetrics {
        ops,
        elapsed_ms: elapsed_s * 1e3,
        ops_per_s: ops as f64 / elapsed_s,
        acquire_p50_ns: hist.value_at_quantile(0.5) as f64,
        acquire_p99_ns: hist.value_at_quantile(0.99) as f64,
        acquire_p999_ns: hist.value_at_quantile(0.999) as f64,
        acquire_max_ns: hist.max() as f64,
        cpu_ns_per_op: per(usage.cpu_ns),
        busy_cpus: busy_cpus(usage.cpu_ns as f64, elapsed_s * 1e9),
        overrun_pct: over,
        overrun: over > OVERRUN_LIMIT_PCT,
        stop_lag_ms: last.saturating_duration_since(win.stopped_at).as_secs_f64() * 1e3,
        voluntary_cs_per_op: per(usage.nvcsw),
        involuntary_cs_per_op: per(usage.nivcsw),
        hints_per_acquire: per(hints),
        yields_per_acquire: per(yields),
        futex_waits_per_acquire: per(waits),
        fairness: jain_index(&counts),
        min_thread_ops: outs.iter().map(|o| o.ops).min().unwrap_or(0),
        lost_updates: lost_updates(bumps, data),
        interrupted: win.interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::latch::Latch;

    /// Harness tests start many threads each; running them one at a time keeps them fast.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wl(latch: LatchKind, threads: usize, ms: u64) -> Workload {
        Workload {
            latch,
            threads,
            pause_scale: 1,
            duration_ms: ms,
            cs_ns: 50,
            cs_lines: 2,
            think_ns: 0,
            pin: false,
            padding: 64,
            params: SpinParams::default(),
        }
    }

    /// Mutual exclusion: every latch, oversubscribed, repeated: zero lost updates.
    #[test]
    fn lab_every_latch_loses_no_update() {
        let _g = serial();
        for name in LatchKind::ALL {
            for rep in 0..3 {
                let m = run_point(&wl(name, 6, 60), rep).unwrap();
                assert!(m.ops > 0, "{name}: no progress");
                assert_eq!(m.lost_updates, 0, "{name} rep {rep}: lost updates");
            }
        }
    }

    /// A "latch" that does not exclude: what the check must catch.
    struct NoLatch;

    impl Latch for NoLatch {
        fn with_lock(&self, _ctx: &mut WaitCtx, cs: &mut dyn FnMut(usize)) {
            cs(0);
        }
    }

    /// The check above can fail: through a latch that does not exclude, two holders overlap
    /// and the check reports the update one of them lost. The overlap is forced, not left to
    /// the scheduler (a race that "usually" happens made this test flaky on a loaded machine):
    /// holder A reads the counter, then waits inside its read-to-write gap until holder B has
    /// made a whole increment through the same latch; A's write then overwrites B's. Each
    /// round loses exactly one update, whatever the load, so the count is asserted exactly.
    #[test]
    fn lab_lost_update_check_can_fail() {
        use std::sync::mpsc::channel;
        let rounds = 5u64;
        let (latch, data) = (&NoLatch, &Unprotected::new(1));
        let ctx = || WaitCtx::new(SmallRng::seed_from_u64(0), 1);
        // Only a broken handshake (the gap never runs) could leave a side waiting; fail then
        // instead of hanging. Never reached when the code under test is right.
        let patience = Duration::from_secs(60);
        let mut ops = 0u64;
        for round in 0..rounds {
            let (a_read_tx, a_read_rx) = channel::<()>();
            let (b_done_tx, b_done_rx) = channel::<()>();
            std::thread::scope(|s| {
                s.spawn(move || {
                    latch.with_lock(&mut ctx(), &mut |sh| {
                        // SAFETY: deliberately violated contract (NoLatch excludes nobody) to
                        // prove the check detects it; only a u64 in our own allocation is raced,
                        // and the handshake orders the accesses, so there is no data race.
                        unsafe {
                            data.bump_with_gap(sh, || {
                                a_read_tx.send(()).unwrap();
                                b_done_rx
                                    .recv_timeout(patience)
                                    .expect("B never finished its increment");
                            })
                        };
                    });
                });
                s.spawn(move || {
                    a_read_rx
                        .recv_timeout(patience)
                        .expect("A never reached the gap between its read and write");
                    latch.with_lock(&mut ctx(), &mut |sh| {
                        // SAFETY: as above; A is parked in its gap, between its read and write.
                        unsafe { data.bump(sh) };
                    });
                    b_done_tx.send(()).unwrap();
                });
            });
            ops += 2;
            assert_eq!(
                lost_updates(ops, data),
                round + 1,
                "round {round}: the overwritten increment was not reported as lost"
            );
        }
        assert_eq!(
            data.total(),
            rounds,
            "each round keeps exactly one of its two increments"
        );
    }

    /// Progress under the fair latches: every thread completes operations.
    #[test]
    fn lab_fair_latches_starve_no_thread() {
        let _g = serial();
        use LatchKind::*;
        for name in [Ticket, Mcs, Futex, ParkingLot] {
            // On a busy host (two busy loops per CPU beside the suite) a thread may not be
            // given a CPU in a short point: wait for the condition with longer points, bounded.
            let mut m = run_point(&wl(name, 4, 150), 7).unwrap();
            for ms in [600, 2400] {
                if m.min_thread_ops > 0 {
                    break;
                }
                m = run_point(&wl(name, 4, ms), 7).unwrap();
            }
            assert!(
                m.min_thread_ops > 0,
                "{name}: a thread starved (2.4 s point)"
            );
            // FIFO order does not make per-thread counts equal on an oversubscribed box (the
            // scheduler decides who runs), so progress is the check, not Jain's index.
            assert!(
                m.fairness > 0.0 && m.fairness <= 1.0 + 1e-9,
                "{name}: Jain {}",
                m.fairness
            );
        }
    }

    #[test]
    fn lab_metrics_are_consistent() {
        let _g = serial();
        let m = run_point(&wl(LatchKind::Mysql80, 2, 80), 1).unwrap();
        assert!(
            m.ops_per_s > 0.0
                && m.acquire_p50_ns <= m.acquire_p99_ns
                && m.acquire_p99_ns <= m.acquire_max_ns
        );
        assert!(m.cpu_ns_per_op > 0.0 && m.fairness <= 1.0 + 1e-9);
    }

    /// The run (spins of about a minute per round: d = 6000, L = 10^6, K = 1000) ends
    /// near its 50 ms window, and its throughput never implies more busy CPUs than exist. Before
    /// the stop reached into the spins it took 66 s and implied 122 busy CPUs on 2.
    #[test]
    fn lab_huge_spins_stop_in_time_and_never_exceed_the_cpus() {
        let _g = serial();
        let cpus = allowed_cpus().len() as f64;
        for latch in [LatchKind::Innodb57, LatchKind::Mysql80] {
            let mut w = wl(latch, 4, 50);
            w.pause_scale = 1000;
            w.params.delay = 6000;
            w.params.loops = 1_000_000;
            let t0 = Instant::now();
            let m = run_point(&w, 9).unwrap();
            let took = t0.elapsed();
            assert!(took < Duration::from_secs(3), "{latch}: took {took:?}");
            assert!(
                m.elapsed_ms <= took.as_secs_f64() * 1e3,
                "{latch}: elapsed {} ms beyond the wall time {took:?}",
                m.elapsed_ms
            );
            assert!(
                m.busy_cpus <= cpus * 1.02 + 0.05,
                "{latch}: {} busy CPUs on {cpus}",
                m.busy_cpus
            );
            if m.ops > 0 {
                let implied = m.ops_per_s * m.cpu_ns_per_op / 1e9;
                assert!(
                    implied <= cpus * 1.02 + 0.05,
                    "{latch}: implies {implied} CPUs"
                );
            }
            assert_eq!(m.lost_updates, 0);
            assert_eq!(m.overrun, m.overrun_pct > 10.0);
        }
    }

    /// Long critical sections (5 ms, cut short by the stop): the elapsed time still spans the
    /// whole window and the busy CPUs stay within the machine.
    #[test]
    fn lab_elapsed_covers_the_slowest_worker() {
        let _g = serial();
        let mut w = wl(LatchKind::Futex, 2, 20);
        w.cs_ns = 5_000_000;
        let m = run_point(&w, 3).unwrap();
        assert!(m.elapsed_ms >= 20.0, "elapsed {} ms", m.elapsed_ms);
        assert!(m.busy_cpus <= allowed_cpus().len() as f64 * 1.02 + 0.05);
    }
}
