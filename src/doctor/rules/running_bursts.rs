//! Threads_running above the core count: short bursts a 1 s monitor misses, told apart from
//! sustained overload that any monitor sees (docs/REFERENCE.md §10).

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::spin::version::Flavor;

/// Above the cores for at least this share of the window: sustained overload, not bursts.
pub const SUSTAINED_PCT: f64 = 50.0;

/// What the findings call the sampled pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Nothing far above the cores.
    Calm,
    /// Short excursions above the cores, most of the time below.
    Bursts,
    /// Above the cores most of the window.
    Sustained,
}

pub fn pattern(f: &Facts) -> Option<Pattern> {
    let b = f.burst.as_ref()?;
    let cores = f.cores.unwrap_or(b.burst_threshold);
    Some(if b.time_above_threshold_pct >= SUSTAINED_PCT {
        Pattern::Sustained
    } else if b.threads_running.p99 > 2.0 * cores && b.bursts > 0 {
        Pattern::Bursts
    } else {
        Pattern::Calm
    })
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(b) = &f.burst else { return vec![] };
    let Some(p) = pattern(f) else { return vec![] };
    let cores = f.cores.unwrap_or(b.burst_threshold);
    let mut evidence = vec![
        ev("threads_running_p50", b.threads_running.p50, ""),
        ev("threads_running_p99", b.threads_running.p99, ""),
        ev("threads_running_max", b.threads_running.max, ""),
        ev("cores", cores, ""),
        ev("time_above_cores", b.time_above_threshold_pct, "%"),
        ev("bursts_above_cores", b.bursts as f64, ""),
        ev("longest_burst", b.longest_burst_ms, "ms"),
        ev("monitor_1s_p50", b.monitor_1s.p50, ""),
        ev("monitor_1s_max", b.monitor_1s.max, ""),
        ev("achieved_rate", b.achieved_hz, "Hz"),
        ev("longest_gap", b.longest_gap_ms, "ms"),
        ev("sampler_cpu", b.sampler_cpu_pct, "% of one core"),
    ];
    if p == Pattern::Calm {
        evidence.truncate(5);
        return vec![Finding {
            option_file: vec![],
            id: "threads-running".into(),
            severity: Severity::Info,
            title: format!(
                "Threads_running p50 {:.0}, p99 {:.0}, max {:.0} on {cores:.0} cores at {:.0} Hz: no burst far above the cores",
                b.threads_running.p50, b.threads_running.p99, b.threads_running.max, b.achieved_hz
            ),
            evidence,
            why: "Sampled on one connection, own session excluded.".into(),
            what_to_do: "No change.".into(),
            statements: vec![],
        }];
    }
    let mariadb_pool = f.is_mariadb_106_plus()
        || (f
            .version
            .as_ref()
            .is_some_and(|v| v.flavor == Flavor::Mariadb)
            && !f.vars.contains("innodb_thread_concurrency"));
    let (throttle, statements, option_file) = if mariadb_pool {
        (
            format!(
                "MariaDB 10.6+ has no innodb_thread_concurrency; throttle with the thread pool \
                 (thread_handling=pool-of-threads, thread_pool_size = {cores:.0}; thread_handling needs a restart), \
                 currently thread_handling = {}.",
                f.vars.str("thread_handling").unwrap_or("unknown")
            ),
            vec![],
            vec![
                "thread_handling = pool-of-threads".to_string(),
                format!("thread_pool_size = {cores:.0}"),
            ],
        )
    } else {
        let n = (cores * 2.0).max(4.0);
        (
            format!(
                "Cap concurrency inside InnoDB (start at 2x cores = {n:.0}; innodb_thread_concurrency is dynamic, \
                 `spinscope sweep` finds the knee), or use a thread pool / proxy."
            ),
            vec![format!("SET GLOBAL innodb_thread_concurrency = {n:.0};")],
            vec![format!("innodb_thread_concurrency = {n:.0}")],
        )
    };
    let caveat = "Threads_running also rises for row locks, fsync and group commit: it is a concurrency signal, \
                  not proof of spinning.";
    let (id, title, why) = match p {
        Pattern::Sustained => (
            "threads-running-sustained",
            format!(
                "Threads_running above {cores:.0} cores {:.0}% of the window (p50 {:.0}, max {:.0}): sustained overload, \
                 which a 1 s monitor sees too (p50 {:.0}, max {:.0})",
                b.time_above_threshold_pct,
                b.threads_running.p50,
                b.threads_running.max,
                b.monitor_1s.p50,
                b.monitor_1s.max
            ),
            format!(
                "More runnable statements than cores for most of the window means the server is saturated: latch \
                 holders get descheduled while waiters spin or queue. {caveat}"
            ),
        ),
        _ => (
            "threads-running-bursts",
            format!(
                "Threads_running burst {} time(s) above {cores:.0} cores (p99 {:.0}, max {:.0}, longest {:.0} ms), above \
                 the cores only {:.0}% of the window; a 1 s monitor saw max {:.0}",
                b.bursts,
                b.threads_running.p99,
                b.threads_running.max,
                b.longest_burst_ms,
                b.time_above_threshold_pct,
                b.monitor_1s.max
            ),
            format!(
                "Short bursts of more runnable statements than cores deschedule latch holders while others spin; \
                 {} {caveat}",
                if b.monitor_1s.max <= cores {
                    "a monitor polling once per second did not see them."
                } else {
                    "a 1 s monitor caught only part of them."
                }
            ),
        ),
    };
    vec![Finding {
        id: id.into(),
        severity: Severity::Warning,
        title,
        evidence,
        why,
        what_to_do: throttle,
        statements,
        option_file,
    }]
}
