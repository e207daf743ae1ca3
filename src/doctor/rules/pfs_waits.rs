//! Latch (wait/synch) waits dominating performance_schema waits over the window.

use crate::doctor::{ev, Facts, Finding, Severity};

/// Mutex, rwlock and sxlock instruments: the latches that spin.
pub fn is_latch(event: &str) -> bool {
    [
        "wait/synch/mutex/",
        "wait/synch/rwlock/",
        "wait/synch/sxlock/",
    ]
    .iter()
    .any(|p| event.starts_with(p))
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(p) = &f.snap.pfs else { return vec![] };
    if !p.enabled || p.window_s <= 0.0 {
        return vec![];
    }
    let mut out = Vec::new();
    if p.synch_instruments_enabled == 0 && !p.enabled_by_us {
        out.push(Finding {
            option_file: vec![],
            id: "pfs-latch-instruments-off".into(),
            severity: Severity::Info,
            title: format!(
                "performance_schema is on but none of its {} wait/synch instruments is enabled and timed",
                p.synch_instruments_total
            ),
            evidence: vec![ev("synch_instruments_total", p.synch_instruments_total as f64, "")],
            why: "Latch waits are invisible until the instruments are enabled (they are off by default).".into(),
            what_to_do: "Rerun with --enable-instruments (enables them for the window and restores them), or enable them yourself.".into(),
            statements: vec![
                "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME LIKE 'wait/synch/%';".into(),
            ],
        });
        return out;
    }
    // Condition-variable waits are threads idling by design (timers, queues), not contention.
    let waits: Vec<_> = f
        .pfs_waits
        .iter()
        .filter(|w| !w.event.starts_with("wait/synch/cond/"))
        .collect();
    let total_ms: f64 = waits.iter().map(|w| w.wait_ms).sum();
    let synch: Vec<_> = waits
        .iter()
        .copied()
        .filter(|w| is_latch(&w.event))
        .collect();
    let synch_ms: f64 = synch.iter().map(|w| w.wait_ms).sum();
    if synch.is_empty() || total_ms <= 0.0 {
        return out;
    }
    let share = synch_ms / total_ms * 100.0;
    let per_s = synch_ms / p.window_s;
    let severity = if share >= 50.0 && per_s >= 100.0 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let top: Vec<String> = synch
        .iter()
        .take(5)
        .map(|w| format!("{} ({:.1} ms, {} waits)", w.event, w.wait_ms, w.count))
        .collect();
    let mut evidence = vec![
        ev("synch_share_of_waits", share, "%"),
        ev("synch_wait_ms_per_s", per_s, "ms/s"),
        ev("window", p.window_s, "s"),
    ];
    evidence.extend(synch.iter().take(5).map(|w| ev(&w.event, w.wait_ms, "ms")));
    out.push(Finding {
        option_file: vec![],
        id: "pfs-latch-waits".into(),
        severity,
        title: format!(
            "latch waits are {share:.0}% of performance_schema wait time ({per_s:.1} ms per second); top: {}",
            synch.first().map(|w| w.event.as_str()).unwrap_or("-")
        ),
        evidence,
        why: format!(
            "Threads waiting on InnoDB latches spin and then sleep; P_S counts both (it cannot split them). Top latches: {}.",
            top.join("; ")
        ),
        what_to_do: "If a tree or page latch leads (index_tree_rw_lock, hash_table_locks), reduce concurrency on the hot \
                     index or table; check the spin budget finding before touching spin settings."
            .into(),
        statements: vec![
            "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT/1e9 AS wait_ms FROM performance_schema.events_waits_summary_global_by_event_name WHERE EVENT_NAME LIKE 'wait/synch/%' ORDER BY SUM_TIMER_WAIT DESC LIMIT 10;".into(),
        ],
    });
    out
}
