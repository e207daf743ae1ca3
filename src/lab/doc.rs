//! The `spinscope.lab/2` document and its pure builders: per-point summaries over repeats and
//! the rows of a `--compare-pause-scale` comparison.

use serde::{Deserialize, Serialize};

use super::harness::RunMetrics;
use super::latch::LatchKind;
use super::plan::LabPlan;
use crate::analysis::lab_stats::{change_pct, judge, Movement};
use crate::analysis::stats::{summarize, Summary};
use crate::spin::cpus::Hint;

/// JSON schema id of the lab document.
pub const SCHEMA: &str = "spinscope.lab/2";
/// A metric "stays the same" between two scales when within this many percent.
pub const STABLE_PCT: f64 = 10.0;

/// Facts about the machine and the timer, reported with every run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// CPUs the workers may run on (the affinity mask): the bound of `busy_cpus`.
    pub cpus: usize,
    /// `TSC`, `CNTVCT_EL0`, or `monotonic clock` where neither exists.
    pub counter: String,
    pub ticks_per_ns: f64,
    /// Cost of one timer read (included in every acquire latency).
    pub timer_cost_ns: f64,
    /// The architecture's usual hint and the latency of one, unscaled (None where untimed).
    pub hint: Hint,
    pub hint_ns: Option<f64>,
}

/// One point (latch, threads, pause scale) over its repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub latch: LatchKind,
    pub threads: usize,
    pub pause_scale: u32,
    /// The instruction one of this latch's hints executes here (None: it executes none).
    pub hint: Option<Hint>,
    /// MariaDB's M used for this point (mariadb106 only; else null).
    pub relax_multiplier: Option<u32>,
    pub runs: Vec<RunMetrics>,
    pub ops_per_s: Option<Summary>,
    pub cpu_ns_per_op: Option<Summary>,
    pub busy_cpus: Option<Summary>,
    pub acquire_p99_ns: Option<Summary>,
    pub hints_per_acquire: Option<Summary>,
    pub fairness: Option<Summary>,
    pub lost_updates: u64,
    /// Runs that outlasted their window by more than 10%, and the largest overrun in percent.
    pub overruns: usize,
    pub max_overrun_pct: f64,
    /// The longest wait for the workers to stop after the window, in ms.
    pub max_stop_lag_ms: f64,
}

impl Point {
    pub fn new(
        latch: LatchKind,
        threads: usize,
        pause_scale: u32,
        hint: Option<Hint>,
        relax_multiplier: Option<u32>,
    ) -> Point {
        Point {
            latch,
            threads,
            pause_scale,
            hint,
            relax_multiplier,
            runs: Vec::new(),
            ops_per_s: None,
            cpu_ns_per_op: None,
            busy_cpus: None,
            acquire_p99_ns: None,
            hints_per_acquire: None,
            fairness: None,
            lost_updates: 0,
            overruns: 0,
            max_overrun_pct: 0.0,
            max_stop_lag_ms: 0.0,
        }
    }

    /// Fill the summaries from the runs.
    pub fn summarize(&mut self) {
        let col =
            |f: fn(&RunMetrics) -> f64| summarize(&self.runs.iter().map(f).collect::<Vec<_>>());
        self.ops_per_s = col(|r| r.ops_per_s);
        self.cpu_ns_per_op = col(|r| r.cpu_ns_per_op);
        self.busy_cpus = col(|r| r.busy_cpus);
        self.acquire_p99_ns = col(|r| r.acquire_p99_ns);
        self.hints_per_acquire = col(|r| r.hints_per_acquire);
        self.fairness = col(|r| r.fairness);
        self.lost_updates = self.runs.iter().map(|r| r.lost_updates).sum();
        self.overruns = self.runs.iter().filter(|r| r.overrun).count();
        self.max_overrun_pct = self.runs.iter().map(|r| r.overrun_pct).fold(0.0, f64::max);
        self.max_stop_lag_ms = self.runs.iter().map(|r| r.stop_lag_ms).fold(0.0, f64::max);
    }

    /// Median of one run metric over the repeats (NaN without runs).
    pub fn median(&self, f: fn(&RunMetrics) -> f64) -> f64 {
        summarize(&self.runs.iter().map(f).collect::<Vec<_>>()).map_or(f64::NAN, |s| s.median)
    }
}

/// One row of the `--compare-pause-scale A,B` story.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareRow {
    pub latch: LatchKind,
    pub threads: usize,
    pub base_scale: u32,
    pub new_scale: u32,
    pub ops_change_pct: f64,
    pub ops_movement: Movement,
    pub cpu_change_pct: f64,
    pub cpu_movement: Movement,
}

/// The `spinscope.lab/2` document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabDoc {
    pub schema: String,
    pub machine: Machine,
    pub plan: LabPlan,
    pub points: Vec<Point>,
    pub compare: Vec<CompareRow>,
    pub interrupted: bool,
}

/// Pair every point at the first scale with the same point at the second.
pub fn compare_rows(points: &[Point], scales: &[u32]) -> Vec<CompareRow> {
    let [a, b] = scales else { return Vec::new() };
    let mut rows = Vec::new();
    for base in points.iter().filter(|p| p.pause_scale == *a) {
        let Some(new) = points
            .iter()
            .find(|p| p.pause_scale == *b && p.latch == base.latch && p.threads == base.threads)
        else {
            continue;
        };
        let (Some(bo), Some(no), Some(bc), Some(nc)) = (
            base.ops_per_s,
            new.ops_per_s,
            base.cpu_ns_per_op,
            new.cpu_ns_per_op,
        ) else {
            continue;
        };
        rows.push(CompareRow {
            latch: base.latch,
            threads: base.threads,
            base_scale: *a,
            new_scale: *b,
            ops_change_pct: change_pct(bo.median, no.median),
            ops_movement: judge(&bo, &no, STABLE_PCT),
            cpu_change_pct: change_pct(bc.median, nc.median),
            cpu_movement: judge(&bc, &nc, STABLE_PCT),
        });
    }
    rows
}
