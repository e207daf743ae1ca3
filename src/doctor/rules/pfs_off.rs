//! performance_schema off: say what cannot be seen and how to see it.

use crate::doctor::{Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    if f.vars.on("performance_schema") != Some(false) {
        return vec![];
    }
    vec![Finding {
        option_file: vec!["performance_schema = ON".into()],
        id: "pfs-off".into(),
        severity: Severity::Info,
        title: "performance_schema is OFF: no per-latch wait evidence".into(),
        evidence: vec![],
        why: "Without performance_schema no SQL-visible source names the latches threads wait on \
              (on MariaDB 10.6+ SEMAPHORES is blank too: docs/REFERENCE.md §4, §5)."
            .into(),
        what_to_do: "Set performance_schema=ON in the server's option file and restart (it is not dynamic), \
                     then run doctor with --enable-instruments."
            .into(),
        statements: vec![],
    }]
}
