//! SEMAPHORES counters that cannot be trusted (hard-coded zeros or blank by design).

use crate::doctor::{ev, Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(state) = f.semaphores_state() else {
        return vec![];
    };
    let read_instead =
        "Read performance_schema wait/synch summaries (with the instruments enabled) and, on the \
                        server's host, the CPU signature (user vs system CPU, context switches).";
    let (title, why) = match state {
        "blank-by-design" => (
            "SEMAPHORES is blank by design on MariaDB 10.6+: no spin counters exist".to_string(),
            "MariaDB 10.6 replaced the sync arrays with srw_lock/futex waits and prints only the section header; \
             an empty section is not evidence of no contention."
                .to_string(),
        ),
        "hard-coded-zeros" => (
            "SEMAPHORES spin counters are hard-coded zeros on this MySQL version".to_string(),
            "MySQL 8.0.32+, 8.4 and 9.x print the RW counters as zeros for compatibility (and the INNODB_METRICS \
             rw-lock counters are 'Deprecated counter, always 0'): zeros are NOT evidence of no contention."
                .to_string(),
        ),
        "zeros" => (
            "SEMAPHORES counters are all zero".to_string(),
            "All zeros after uptime usually means the counters are not maintained by this build.".to_string(),
        ),
        "blank" | "unrecognised" => (
            format!("SEMAPHORES section is {state}: no counters could be read"),
            "The section did not contain counters in any known format (it may be cut at 1 MB or from an unknown build)."
                .to_string(),
        ),
        _ => {
            let s = f.innodb.as_ref().and_then(|i| i.semaphores.as_ref());
            let Some(s) = s else { return vec![] };
            let evidence = s
                .counters()
                .into_iter()
                .flat_map(|(n, c)| {
                    [
                        ev(&format!("{n} spins"), c.spins as f64, ""),
                        ev(&format!("{n} rounds"), c.rounds as f64, ""),
                        ev(&format!("{n} OS waits"), c.os_waits as f64, ""),
                    ]
                })
                .collect();
            return vec![Finding {
                id: "semaphores-live".into(),
                severity: Severity::Info,
                title: "SEMAPHORES counters are live on this version (cumulative since startup)".into(),
                evidence,
                why: "Spins, rounds and OS waits per latch class; rounds per OS wait near innodb_sync_spin_loops means \
                      spinning rarely succeeds."
                    .into(),
                what_to_do: "Compare two captures to get rates.".into(),
                statements: vec![],
            }];
        }
    };
    vec![Finding {
        id: "semaphores-untrusted".into(),
        severity: Severity::Info,
        title,
        evidence: vec![],
        why,
        what_to_do: read_instead.into(),
        statements: vec![],
    }]
}
