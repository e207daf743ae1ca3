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
            // Older servers name the latch ('&kernel_mutex') instead of its creation site.
            let origin = match (&c.created_file, &c.latch_name) {
                (Some(f), _) => format!(
                    "created at {f}:{}",
                    c.created_line
                        .map(|l| l.to_string())
                        .unwrap_or_else(|| "?".into())
                ),
                (None, Some(n)) => format!("'{n}'"),
                (None, None) => "created at ?".into(),
            };
            format!(
                "thread {} waited {:.0} s at {}:{} for {} {origin}{}",
                c.thread,
                c.seconds,
                c.waited_file,
                c.waited_line,
                c.latch.as_deref().unwrap_or("a latch"),
                c.holder_mode
                    .as_deref()
                    .map(|m| format!(", held in mode {m}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    vec![Finding {
        option_file: vec![],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::Snapshot;

    #[test]
    fn named_latch_of_old_servers_is_shown() {
        // The cell form of percona-toolkit's innodb-status.001 sample (MySQL 5.0/5.1), 75 s.
        let text = "----------\nSEMAPHORES\n----------\n\
            OS WAIT ARRAY INFO: reservation count 12433146, signal count 56397470\n\
            --Thread 139960404199760 has waited at lock/lock0lock.c line 3224 for 75.0000 seconds the semaphore:\n\
            Mutex at 0xf89ab0 '&kernel_mutex', lock var 1\nwaiters flag 1\n";
        let f = Facts::from_snapshot(Snapshot {
            innodb_status: Some(text.into()),
            ..Snapshot::of_version("5.1.49-log")
        });
        let v = check(&f);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].severity, Severity::Critical);
        assert!(
            v[0].why
                .contains("at lock/lock0lock.c:3224 for Mutex '&kernel_mutex'"),
            "{}",
            v[0].why
        );
    }
}
