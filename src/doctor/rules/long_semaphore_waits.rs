//! Long semaphore waits in INNODB STATUS wait cells.

use crate::doctor::{ev, Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(s) = f.innodb.as_ref().and_then(|i| i.semaphores.as_ref()) else {
        return vec![];
    };
    if s.wait_cells.is_empty() {
        return vec![];
    }
    let longest = s.wait_cells.iter().map(|c| c.seconds).fold(0.0, f64::max);
    let severity = if longest >= 60.0 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let lines: Vec<String> = s
        .wait_cells
        .iter()
        .take(10)
        .map(|c| {
            format!(
                "thread {} waited {:.0} s at {}:{} for {} created at {}:{}{}",
                c.thread,
                c.seconds,
                c.waited_file,
                c.waited_line,
                c.latch.as_deref().unwrap_or("a latch"),
                c.created_file.as_deref().unwrap_or("?"),
                c.created_line
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "?".into()),
                c.holder_mode
                    .as_deref()
                    .map(|m| format!(", held in mode {m}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    vec![Finding {
        id: "long-semaphore-waits".into(),
        severity,
        title: format!(
            "{} thread(s) waiting on InnoDB semaphores, the longest {longest:.0} s",
            s.wait_cells.len()
        ),
        evidence: vec![
            ev("waiting_threads", s.wait_cells.len() as f64, ""),
            ev("longest_wait", longest, "s"),
        ],
        why: format!(
            "{}. InnoDB aborts the server when a semaphore wait exceeds 600 s.",
            lines.join("; ")
        ),
        what_to_do: "Find the holder (the writer thread id) in the TRANSACTIONS section and the processlist; \
                     long waits on buf0buf/dict0dict latches usually mean I/O stalls or a DDL/statistics holder."
            .into(),
        statements: vec!["SHOW ENGINE INNODB STATUS;".into(), "SHOW FULL PROCESSLIST;".into()],
    }]
}
