//! The typed plan of a lab run (what `spinscope lab` flags turn into) and its validation.

use serde::{Deserialize, Serialize};

use super::harness::Workload;
use super::latch::{LatchKind, SpinParams};
use crate::error::{Error, Result};

pub const MAX_THREADS: usize = 1024;
pub const MIN_DURATION_MS: u64 = 20;
pub const MAX_DURATION_MS: u64 = 600_000;
pub const MAX_PAUSE_SCALE: u32 = 1000;

/// Every point is a latch x a thread count x a pause scale, measured `repeats` times
/// (interleaved), each run `duration_ms` long.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabPlan {
    pub latches: Vec<LatchKind>,
    pub threads: Vec<usize>,
    /// One scale, or two with a comparison of the second against the first.
    pub scales: Vec<u32>,
    pub repeats: u32,
    pub duration_ms: u64,
    /// Busy work inside the critical section, in ns.
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    pub cs_lines: usize,
    /// Busy work between operations, in ns.
    pub think_ns: u64,
    pub pin: bool,
    /// Stride of the per-thread counters in bytes: 0, 64 or 128.
    pub padding: usize,
    /// Server variables of the latches. `params.relax_multiplier` is used as given only when
    /// `relax_auto` is false.
    pub params: SpinParams,
    /// Pick MariaDB's M per pause scale as `my_cpu_init()` would on a CPU with that hint.
    pub relax_auto: bool,
}

fn check_range<T: PartialOrd + std::fmt::Display>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    why: &str,
) -> Result<()> {
    if v < lo || v > hi {
        return Err(Error::bad_input(format!(
            "--{flag} {v} is out of range: use {lo}..={hi}{why}"
        )));
    }
    Ok(())
}

impl LabPlan {
    /// Reject a plan the lab cannot measure; messages name the `lab` flag and its range.
    pub fn validate(&self) -> Result<()> {
        if self.latches.is_empty() {
            return Err(Error::bad_input(format!(
                "--latch is empty; known latches: {}, or all",
                latch_list()
            )));
        }
        if self.threads.is_empty() {
            return Err(Error::bad_input(
                "--threads is empty: give counts like 1,2,8",
            ));
        }
        for &t in &self.threads {
            check_range("threads", t, 1, MAX_THREADS, "")?;
        }
        if self.scales.is_empty() || self.scales.len() > 2 {
            return Err(Error::bad_input(
                "--compare-pause-scale: give exactly two scales, like 1,14",
            ));
        }
        for &k in &self.scales {
            check_range(
                "pause-scale",
                k,
                1,
                MAX_PAUSE_SCALE,
                " (1 = the hint as is, 14 = Skylake-SP vs Broadwell)",
            )?;
        }
        if !(MIN_DURATION_MS..=MAX_DURATION_MS).contains(&self.duration_ms) {
            return Err(Error::bad_input(format!(
                "--duration {}ms is out of range: use {MIN_DURATION_MS}ms..={MAX_DURATION_MS}ms (shorter is too short to measure)",
                self.duration_ms
            )));
        }
        check_range("repeat", self.repeats, 1, 100, "")?;
        check_range("cs-ns", self.cs_ns, 0, 10_000_000, "")?;
        check_range("think-ns", self.think_ns, 0, 10_000_000, "")?;
        check_range("cs-lines", self.cs_lines, 0, 65_536, "")?;
        if ![0, 64, 128].contains(&self.padding) {
            return Err(Error::bad_input(format!(
                "--padding {}: use 0, 64 or 128",
                self.padding
            )));
        }
        let p = &self.params;
        check_range("spin-wait-delay", p.delay, 0, 6000, "")?;
        check_range("mariadb-delay", p.mariadb_delay, 0, 6000, "")?;
        check_range("sync-spin-loops", p.loops, 0, 1_000_000, "")?;
        check_range("pause-multiplier", p.multiplier, 0, 100, "")?;
        if !self.relax_auto {
            check_range(
                "relax-multiplier",
                p.relax_multiplier,
                4,
                1000,
                " (MariaDB uses 100 or 200)",
            )?;
        }
        check_range("budget-ns", p.budget_ns, 0, 100_000_000, "")?;
        check_range("shards", p.shards, 1, 4096, "")?;
        Ok(())
    }

    /// The workload of one point; `relax_multiplier` is MariaDB's M chosen for its scale.
    pub fn workload(
        &self,
        latch: LatchKind,
        threads: usize,
        pause_scale: u32,
        relax_multiplier: Option<u32>,
    ) -> Workload {
        let mut params = self.params;
        if let Some(m) = relax_multiplier {
            params.relax_multiplier = m;
        }
        Workload {
            latch,
            threads,
            pause_scale,
            duration_ms: self.duration_ms,
            cs_ns: self.cs_ns,
            cs_lines: self.cs_lines,
            think_ns: self.think_ns,
            pin: self.pin,
            padding: self.padding,
            params,
        }
    }
}

/// "innodb57, mysql80, ...": every latch name, for messages.
pub fn latch_list() -> String {
    LatchKind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}
