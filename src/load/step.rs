//! What the clients of one step share, whichever load client runs them (the thread client in
//! [`super::driver`], the event client in [`super::wire::events`]): the step's configuration,
//! the context every client reads ([`Ctx`]), the per-client progress counters and the result
//! each client hands back ([`ClientResult`]), and the retry rule.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;

use super::workload::Workload;
use super::{stopped, Client, Connector};

/// Highest latency the histogram tracks: one hour in microseconds (larger values saturate).
pub const HIST_MAX_US: u64 = 3_600_000_000;
/// Errors after which a transaction is rolled back and run again instead of counted: 1213
/// deadlock, 1205 lock wait timeout, 1020 record changed (sysbench 1.0's default
/// `--mysql-ignore-errors`).
pub const RETRY_CODES: [u16; 3] = [1213, 1205, 1020];

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
    /// The load client (threads unless a caller asks for the event client).
    pub client: Client,
}

/// Progress counters of one client, on its own cache line: each client writes only its own,
/// so counting costs no cache-line bouncing between clients; the watcher sums them.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) measured_txns: AtomicU64,
    pub(crate) all_txns: AtomicU64,
    pub(crate) errors: AtomicU64,
}

pub(crate) struct Shared {
    pub(crate) clients: Vec<CachePadded<Counters>>,
    pub(crate) done: AtomicBool,
}

impl Shared {
    pub(crate) fn sum(&self, f: impl Fn(&Counters) -> &AtomicU64) -> u64 {
        self.clients
            .iter()
            .map(|c| f(c).load(Ordering::Relaxed))
            .sum()
    }
}

pub(crate) struct ClientResult {
    pub(crate) retries: BTreeMap<String, u64>,
    pub(crate) windows: Vec<u64>,
    pub(crate) late_prepares: u64,
    pub(crate) hist: Histogram<u64>,
    pub(crate) txns: u64,
    pub(crate) queries: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) reconnects: u64,
    pub(crate) lag_s: f64,
    pub(crate) first_error: Option<String>,
    pub(crate) executes: u64,
    pub(crate) executes_unanswered: u64,
}

impl ClientResult {
    pub(crate) fn new(n_windows: usize) -> ClientResult {
        ClientResult {
            retries: BTreeMap::new(),
            windows: vec![0; n_windows],
            late_prepares: 0,
            hist: new_histogram(),
            txns: 0,
            queries: 0,
            errors: BTreeMap::new(),
            reconnects: 0,
            lag_s: 0.0,
            first_error: None,
            executes: 0,
            executes_unanswered: 0,
        }
    }

    /// A transaction that began (or was due) at `start` returned at `fin` after `nq` queries:
    /// counted when it lies inside the measured window.
    pub(crate) fn finished(
        &mut self,
        ctx: &Ctx<'_>,
        mine: &Counters,
        start: Instant,
        fin: Instant,
        nq: u64,
    ) {
        mine.all_txns.fetch_add(1, Ordering::Relaxed);
        let measure_from = ctx.measure_from();
        if start >= measure_from && fin <= measure_from + ctx.cfg.duration {
            let us = fin.duration_since(start).as_micros().max(1) as u64;
            self.hist.saturating_record(us);
            self.txns += 1;
            self.queries += nq;
            let w = (fin.duration_since(measure_from).as_secs_f64() / ctx.window.as_secs_f64())
                as usize;
            self.windows[w.min(ctx.n_windows - 1)] += 1;
            mine.measured_txns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A transaction failed with an error of class `key` (counted from the measured window's
    /// start on, like every error).
    pub(crate) fn failed(
        &mut self,
        ctx: &Ctx<'_>,
        mine: &Counters,
        key: String,
        text: impl FnOnce() -> String,
    ) {
        mine.errors.fetch_add(1, Ordering::Relaxed);
        if Instant::now() >= ctx.measure_from() {
            *self.errors.entry(key).or_default() += 1;
        }
        if self.first_error.is_none() {
            self.first_error = Some(text());
        }
    }

    /// A retryable error rolled back a transaction that runs again.
    pub(crate) fn retried(&mut self, ctx: &Ctx<'_>, code: Option<u16>) {
        if Instant::now() >= ctx.measure_from() {
            *self
                .retries
                .entry(code.map(|c| c.to_string()).unwrap_or_default())
                .or_default() += 1;
        }
    }

    /// Late prepares since the last look, counted from the measured window's start on.
    pub(crate) fn late(&mut self, ctx: &Ctx<'_>, now_total: u64, seen: &mut u64) {
        if Instant::now() >= ctx.measure_from() {
            self.late_prepares += now_total - *seen;
        }
        *seen = now_total;
    }
}

/// What every client shares for one step.
pub(crate) struct Ctx<'a> {
    pub(crate) cfg: &'a StepConfig,
    pub(crate) wl: &'a Workload,
    pub(crate) connect: &'a Connector,
    pub(crate) ready: &'a Barrier,
    pub(crate) go: &'a Barrier,
    pub(crate) start_cell: &'a OnceLock<Instant>,
    pub(crate) shared: &'a Shared,
    pub(crate) stop: &'a AtomicBool,
    pub(crate) cap: usize,
    pub(crate) n_windows: usize,
    pub(crate) window: Duration,
}

impl Ctx<'_> {
    /// Wait at both start barriers; returns the step clock's start.
    pub(crate) fn start_together(&self) -> Instant {
        self.ready.wait();
        self.go.wait();
        self.start_cell.get().copied().unwrap_or_else(Instant::now)
    }
    /// Start of the measured window (valid after [`Ctx::start_together`]).
    pub(crate) fn measure_from(&self) -> Instant {
        self.start_cell.get().copied().unwrap_or_else(Instant::now) + self.cfg.warmup
    }
    /// Open loop: time between one client's intended starts.
    pub(crate) fn period(&self) -> Option<Duration> {
        self.cfg
            .rate
            .map(|rate| Duration::from_secs_f64(f64::from(self.cfg.threads) / rate.max(1e-9)))
    }
    pub(crate) fn over(&self) -> bool {
        stopped(self.stop) || self.shared.done.load(Ordering::Relaxed)
    }
}
