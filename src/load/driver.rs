//! The driver: one step of a sweep. `threads` client threads, one connection each, run the
//! workload for a warm-up (not counted) and then a measured window.
//!
//! Closed loop: each client sends its next transaction when the previous one returns.
//! Open loop (`rate`): each client follows a fixed schedule of intended start times (the total
//! rate split evenly, clients offset from each other), and latency is counted from the
//! *intended* start, so time spent queued behind a slow request is charged to the requests
//! that waited (coordinated-omission correction, as wrk2 does). A client that falls behind
//! does not skip its schedule; the step reports the achieved rate and says when the server could
//! not keep up instead of silently lowering it.
//!
//! Latency goes into one HdrHistogram per client (microseconds, 3 significant digits), merged
//! at the end. The calling thread watches shared counters for progress lines and short
//! throughput windows (used by the A/B bootstrap).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::workload::Workload;
use super::{describe_error, is_connection_error, stopped, Connector};
use crate::error::{Error, Result};

/// Highest latency the histogram tracks: one hour in microseconds (larger values saturate).
pub const HIST_MAX_US: u64 = 3_600_000_000;
/// Length of the throughput windows used for A/B statistics.
pub const WINDOW: Duration = Duration::from_millis(500);

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid histogram bounds")
}

#[derive(Debug, Clone)]
pub struct StepConfig {
    pub threads: u32,
    pub warmup: Duration,
    pub duration: Duration,
    /// Open loop: total intended transactions per second.
    pub rate: Option<f64>,
    /// Progress line period on stderr (None: quiet).
    pub report_interval: Option<Duration>,
    /// Prefix of progress lines, e.g. "threads 8 d4 #1".
    pub label: String,
    pub seed: u64,
}

/// What one step measured.
#[derive(Debug)]
pub struct StepOutcome {
    pub hist: Histogram<u64>,
    pub txns: u64,
    pub queries: u64,
    /// Measured window actually run (shorter when interrupted).
    pub elapsed_s: f64,
    /// Errors by MySQL error code ("io" and "driver" for connection-level failures).
    pub errors: BTreeMap<String, u64>,
    pub reconnects: u64,
    /// Transactions per second in consecutive 0.5 s windows of the measured period.
    pub windows_tps: Vec<f64>,
    pub interrupted: bool,
    /// Open loop: how far behind schedule the slowest client was at the end, in seconds.
    pub schedule_lag_s: f64,
    /// First error message seen (for the report), without credentials.
    pub first_error: Option<String>,
}

/// Progress counters of one client, on its own cache line: each client writes only its own,
/// so counting costs no cache-line bouncing between clients; the watcher sums them.
#[derive(Default)]
struct Counters {
    measured_txns: AtomicU64,
    all_txns: AtomicU64,
    errors: AtomicU64,
}

struct Shared {
    clients: Vec<CachePadded<Counters>>,
    done: AtomicBool,
}

impl Shared {
    fn sum(&self, f: impl Fn(&Counters) -> &AtomicU64) -> u64 {
        self.clients
            .iter()
            .map(|c| f(c).load(Ordering::Relaxed))
            .sum()
    }
}

struct ClientResult {
    hist: Histogram<u64>,
    txns: u64,
    queries: u64,
    errors: BTreeMap<String, u64>,
    reconnects: u64,
    lag_s: f64,
    first_error: Option<String>,
}

fn error_key(e: &mysql::Error) -> String {
    match describe_error(e) {
        (Some(code), _) => code.to_string(),
        (None, _) => match e {
            mysql::Error::IoError(_) => "io".into(),
            _ => "driver".into(),
        },
    }
}

#[allow(clippy::too_many_arguments)]
fn client(
    idx: u32,
    cfg: &StepConfig,
    wl: &Workload,
    connect: &Connector,
    mut conn: mysql::Conn,
    barrier: &Barrier,
    start_cell: &Mutex<Option<Instant>>,
    shared: &Shared,
    stop: &AtomicBool,
) -> ClientResult {
    let mut r = ClientResult {
        hist: new_histogram(),
        txns: 0,
        queries: 0,
        errors: BTreeMap::new(),
        reconnects: 0,
        lag_s: 0.0,
        first_error: None,
    };
    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (u64::from(idx) << 32));
    let mine: &Counters = &shared.clients[idx as usize];
    let mut prepared = match wl.prepare(&mut conn) {
        Ok(p) => Some(p),
        Err(e) => {
            r.first_error = Some(format!("preparing statements: {}", describe_error(&e).1));
            *r.errors.entry(error_key(&e)).or_default() += 1;
            None
        }
    };
    barrier.wait();
    let t0 = start_cell
        .lock()
        .map(|g| g.unwrap_or_else(Instant::now))
        .unwrap_or_else(|_| Instant::now());
    let measure_from = t0 + cfg.warmup;
    let end = measure_from + cfg.duration;
    let period = cfg
        .rate
        .map(|rate| Duration::from_secs_f64(f64::from(cfg.threads) / rate.max(1e-9)));
    let mut next_intended = period.map(|p| t0 + p.mul_f64(f64::from(idx) / f64::from(cfg.threads)));
    let mut conn = Some(conn);
    loop {
        if stopped(stop) || shared.done.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        let start = match next_intended {
            Some(t) => {
                if t >= end {
                    break;
                }
                if t > now {
                    std::thread::sleep(t - now);
                }
                t
            }
            None => now,
        };
        if let (Some(c), Some(p)) = (conn.as_mut(), prepared.as_ref()) {
            match wl.run_txn(c, p, &mut rng) {
                Ok(nq) => {
                    let fin = Instant::now();
                    mine.all_txns.fetch_add(1, Ordering::Relaxed);
                    if start >= measure_from && fin <= end {
                        let us = fin.duration_since(start).as_micros().max(1) as u64;
                        r.hist.saturating_record(us);
                        r.txns += 1;
                        r.queries += nq;
                        mine.measured_txns.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) => {
                    mine.errors.fetch_add(1, Ordering::Relaxed);
                    if Instant::now() >= measure_from {
                        *r.errors.entry(error_key(&e)).or_default() += 1;
                    }
                    if r.first_error.is_none() {
                        r.first_error = Some(describe_error(&e).1);
                    }
                    if is_connection_error(&e) || c.query_drop("ROLLBACK").is_err() {
                        conn = None;
                        prepared = None;
                    }
                }
            }
        }
        if conn.is_none() || prepared.is_none() {
            // Re-open: the server dropped us (restart, KILL). Retry until the step ends.
            conn = None;
            while !stopped(stop) && Instant::now() < end {
                if let Ok(mut c) = connect() {
                    if let Ok(p) = wl.prepare(&mut c) {
                        conn = Some(c);
                        prepared = Some(p);
                        r.reconnects += 1;
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        if let (Some(t), Some(p)) = (next_intended.as_mut(), period) {
            *t += p;
        }
    }
    if let Some(t) = next_intended {
        let now = Instant::now().min(end);
        if t < now {
            r.lag_s = (now - t).as_secs_f64();
        }
    }
    r
}

/// Run one step. Connection failures before the step starts are runtime errors; failures
/// during it are counted, the client reconnects, and the step is marked by its error counts.
pub fn run_step(
    cfg: &StepConfig,
    wl: &Workload,
    connect: &Connector,
    stop: &AtomicBool,
) -> Result<StepOutcome> {
    if cfg.threads == 0 {
        return Err(Error::bad_input("a step needs at least 1 thread"));
    }
    // Open every connection first so connect time is not part of the warm-up.
    let mut conns = Vec::with_capacity(cfg.threads as usize);
    for _ in 0..cfg.threads {
        conns.push(connect()?);
    }
    let shared = Shared {
        clients: (0..cfg.threads)
            .map(|_| CachePadded::new(Counters::default()))
            .collect(),
        done: AtomicBool::new(false),
    };
    let barrier = Barrier::new(cfg.threads as usize + 1);
    let start_cell: Mutex<Option<Instant>> = Mutex::new(None);
    let mut windows_tps = Vec::new();
    let mut interrupted = false;
    let mut measured_s = 0.0;
    let results: Vec<ClientResult> = std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(i, conn)| {
                let (shared, barrier, start_cell) = (&shared, &barrier, &start_cell);
                s.spawn(move || {
                    client(
                        i as u32, cfg, wl, connect, conn, barrier, start_cell, shared, stop,
                    )
                })
            })
            .collect();
        // Clients prepare their statements, then all start together.
        let t0 = Instant::now() + Duration::from_millis(5);
        if let Ok(mut g) = start_cell.lock() {
            *g = Some(t0);
        }
        barrier.wait();
        let measure_from = t0 + cfg.warmup;
        let end = measure_from + cfg.duration;
        let mut next_window = measure_from + WINDOW;
        let mut last_window = (measure_from, 0u64);
        let mut next_report: Option<Instant> = cfg.report_interval.map(|d| Instant::now() + d);
        let mut last_report = (Instant::now(), 0u64);
        loop {
            let now = Instant::now();
            if stopped(stop) {
                interrupted = true;
                break;
            }
            if now >= end {
                break;
            }
            if now >= next_window && next_window <= end {
                let m = shared.sum(|c| &c.measured_txns);
                // Divide by the real span: the watcher may wake a little late.
                let dt = now.duration_since(last_window.0).as_secs_f64().max(1e-6);
                windows_tps.push((m - last_window.1) as f64 / dt);
                last_window = (now, m);
                next_window += WINDOW;
            }
            if next_report.is_some_and(|t| now >= t) {
                let all = shared.sum(|c| &c.all_txns);
                let dt = now.duration_since(last_report.0).as_secs_f64();
                let phase = if now < measure_from {
                    "warm-up"
                } else {
                    "measure"
                };
                eprintln!(
                    "spinscope: [{:>5.1}s] {} {phase}: {:.0} tps, errors {}",
                    now.duration_since(t0).as_secs_f64(),
                    cfg.label,
                    (all - last_report.1) as f64 / dt.max(1e-9),
                    shared.sum(|c| &c.errors)
                );
                last_report = (now, all);
                next_report = cfg.report_interval.map(|d| now + d);
            }
            let wake = [Some(end), Some(next_window), next_report]
                .into_iter()
                .flatten()
                .filter(|t| *t > now)
                .min()
                .unwrap_or(end);
            std::thread::sleep((wake - now).min(Duration::from_millis(50)));
        }
        let stop_at = Instant::now().min(end);
        measured_s = stop_at
            .saturating_duration_since(measure_from)
            .as_secs_f64();
        shared.done.store(true, Ordering::Relaxed);
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut out = StepOutcome {
        hist: new_histogram(),
        txns: 0,
        queries: 0,
        elapsed_s: measured_s,
        errors: BTreeMap::new(),
        reconnects: 0,
        windows_tps,
        interrupted,
        schedule_lag_s: 0.0,
        first_error: None,
    };
    for r in results {
        let _ = out.hist.add(&r.hist);
        out.txns += r.txns;
        out.queries += r.queries;
        out.reconnects += r.reconnects;
        out.schedule_lag_s = out.schedule_lag_s.max(r.lag_s);
        for (k, v) in r.errors {
            *out.errors.entry(k).or_default() += v;
        }
        if out.first_error.is_none() {
            out.first_error = r.first_error;
        }
    }
    Ok(out)
}
