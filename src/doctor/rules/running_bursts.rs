//! Threads_running bursts far above the core count, and what a 1 s monitor would have seen.

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::spin::version::Flavor;

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(b) = &f.burst else { return vec![] };
    let cores = f.cores.unwrap_or(b.burst_threshold);
    let mut evidence = vec![
        ev("threads_running_p50", b.threads_running.p50, ""),
        ev("threads_running_p99", b.threads_running.p99, ""),
        ev("threads_running_max", b.threads_running.max, ""),
        ev("cores", cores, ""),
        ev("bursts_above_cores", b.bursts as f64, ""),
        ev("longest_burst", b.longest_burst_ms, "ms"),
        ev("time_above_cores", b.time_above_threshold_pct, "%"),
        ev("monitor_1s_max", b.monitor_1s.max, ""),
        ev("achieved_rate", b.achieved_hz, "Hz"),
        ev("longest_gap", b.longest_gap_ms, "ms"),
        ev("sampler_cpu", b.sampler_cpu_pct, "% of one core"),
    ];
    let far = b.threads_running.p99 > 2.0 * cores && b.bursts > 0;
    if !far {
        evidence.truncate(4);
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
            what_to_do: "Nothing.".into(),
            statements: vec![],
        }];
    }
    let mariadb_pool = f.is_mariadb_106_plus()
        || (f
            .version
            .as_ref()
            .is_some_and(|v| v.flavor == Flavor::Mariadb)
            && !f.vars.contains("innodb_thread_concurrency"));
    let (what, statements) = if mariadb_pool {
        (
            format!(
                "MariaDB 10.6+ has no innodb_thread_concurrency; throttle with the thread pool \
                 (thread_handling=pool-of-threads, thread_pool_size = {cores:.0}; needs a restart), currently {}.",
                f.vars.str("thread_handling").unwrap_or("unknown")
            ),
            vec![format!("[mysqld]\nthread_handling=pool-of-threads\nthread_pool_size={cores:.0}")],
        )
    } else {
        let n = (cores * 2.0).max(4.0);
        (
            format!("Cap concurrency inside InnoDB near the knee (start at 2x cores = {n:.0}; innodb_thread_concurrency is dynamic), or use a thread pool / proxy."),
            vec![format!("SET GLOBAL innodb_thread_concurrency = {n:.0};")],
        )
    };
    vec![Finding {
        option_file: vec![],
        id: "threads-running-bursts".into(),
        severity: Severity::Warning,
        title: format!(
            "Threads_running burst {} time(s) above {cores:.0} cores (p99 {:.0}, max {:.0}, longest {:.0} ms); a 1 s monitor saw max {:.0}",
            b.bursts, b.threads_running.p99, b.threads_running.max, b.longest_burst_ms, b.monitor_1s.max
        ),
        evidence,
        why: "More runnable statements than cores means latch holders get descheduled while others spin; \
              micro-bursts are invisible at 1 s (seed 001). Threads_running also rises for row locks, fsync and group commit: \
              it is a concurrency signal, not proof of spinning."
            .into(),
        what_to_do: what,
        statements,
    }]
}
