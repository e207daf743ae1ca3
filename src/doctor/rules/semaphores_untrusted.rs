//! What the SEMAPHORES counters can and cannot say (docs/REFERENCE.md §4): constant zeros
//! (MySQL 8.0.32+, 8.1+, 8.4, 9.x), blank by design (MariaDB 10.6+), live counters (all-zero
//! live counters are judged against `Uptime`), or a section no known layout matches.

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::server::parse::innodb::Semaphores;
use crate::spin::version::Flavor;

/// Below this uptime an all-zero set of live counters is what a fresh start looks like.
const FRESH_START_S: u64 = 600;

const READ_INSTEAD: &str =
    "Read performance_schema wait/synch summaries (with the instruments enabled) and, on the \
     server's host, the CPU signature (user vs system CPU, context switches).";

fn uptime_s(f: &Facts) -> Option<u64> {
    f.status_after
        .u64("Uptime")
        .or_else(|| f.status_before.u64("Uptime"))
}

fn array_evidence(s: &Semaphores) -> Vec<crate::doctor::Evidence> {
    let mut e = Vec::new();
    if !s.reservation_counts.is_empty() {
        let r: u64 = s.reservation_counts.iter().sum();
        e.push(ev("sync array reservations", r as f64, ""));
    }
    e
}

fn counter_evidence(s: &Semaphores) -> Vec<crate::doctor::Evidence> {
    s.counters()
        .into_iter()
        .flat_map(|(n, c)| {
            let mut v = vec![ev(&format!("{n} spins"), c.spins as f64, "")];
            if let Some(r) = c.rounds {
                v.push(ev(&format!("{n} rounds"), r as f64, ""));
            }
            v.push(ev(&format!("{n} OS waits"), c.os_waits as f64, ""));
            v
        })
        .collect()
}

/// MySQL / Percona 8.0.20-8.0.31: live in 8.0.19, constants from 8.0.32 at the latest; the
/// release in between where they became constants is not established.
fn in_unsettled_80_range(f: &Facts) -> bool {
    f.version.as_ref().is_some_and(|v| {
        matches!(v.flavor, Flavor::Mysql | Flavor::Percona)
            && v.at_least(8, 0, 20)
            && !v.at_least(8, 0, 32)
    })
}

fn zeros(f: &Facts, s: &Semaphores) -> Finding {
    let mut evidence = array_evidence(s);
    let up = uptime_s(f);
    if let Some(u) = up {
        evidence.push(ev("uptime", u as f64, "s"));
    }
    if in_unsettled_80_range(f) {
        return Finding {
            option_file: vec![],
            id: "semaphores-untrusted".into(),
            severity: Severity::Info,
            title: "SEMAPHORES counters are all zero, and this 8.0 release may print them as constants"
                .into(),
            evidence,
            why: "MySQL 8.0.19 still counted spins (MySQL bug #99171 analyses those counters at the \
                  mysql-8.0.19 tag); 8.0.32 and later print constant zeros (storage/innobase/sync/sync0sync.cc, \
                  sync_print_wait_info). The first release with constants lies in between and is not \
                  established (docs/REFERENCE.md §4), so these zeros prove nothing either way."
                .into(),
            what_to_do: READ_INSTEAD.into(),
            statements: vec![],
        };
    }
    let (title, why) = match up {
        Some(u) if u < FRESH_START_S => (
            format!("SEMAPHORES counters are all zero: the server started {u} s ago"),
            "These counters are live on this version and count from startup; right after a start no \
             latch has had to spin yet, so zeros are expected (docs/REFERENCE.md §4)."
                .to_string(),
        ),
        Some(u) => (
            format!(
                "SEMAPHORES counters are all zero after {:.1} h of uptime",
                u as f64 / 3600.0
            ),
            "These counters are live on this version and count from startup: no latch has spun since \
             then, so the server has been idle or nearly so. If it carried real load, that is odd: \
             check that this text comes from the server you meant (docs/REFERENCE.md §4)."
                .to_string(),
        ),
        None => (
            "SEMAPHORES counters are all zero".to_string(),
            "These counters are live on this version and count from startup: no latch has spun since \
             then. Uptime is unknown, so whether that is odd (a busy server) or expected (a fresh or \
             idle one) cannot be said (docs/REFERENCE.md §4)."
                .to_string(),
        ),
    };
    Finding {
        option_file: vec![],
        id: "semaphores-live".into(),
        severity: Severity::Info,
        title,
        evidence,
        why,
        what_to_do: "Compare two captures under load to get rates.".into(),
        statements: vec![],
    }
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(state) = f.semaphores_state() else {
        return vec![];
    };
    let Some(s) = f.innodb.as_ref().and_then(|i| i.semaphores.as_ref()) else {
        return vec![];
    };
    let (title, why, evidence) = match state {
        "blank-by-design" => (
            "SEMAPHORES is blank by design on MariaDB 10.6+: no spin counters exist".to_string(),
            "MariaDB 10.6 replaced InnoDB's sync arrays and their counters with srw_lock/futex waits \
             (MDEV-21452, MariaDB 10.6.0) and prints only the section header; an empty section is not \
             evidence of no contention (docs/REFERENCE.md §4)."
                .to_string(),
            vec![],
        ),
        "hard-coded-zeros" => (
            "SEMAPHORES spin counters are constant zeros on this MySQL version".to_string(),
            "MySQL 8.0.32 and later print the RW lines as fixed zeros (storage/innobase/sync/sync0sync.cc, \
             sync_print_wait_info: the counters are deprecated) and the INNODB_METRICS rw-lock counters \
             say 'Deprecated counter, always 0': zeros are NOT evidence of no contention, while the sync \
             array reservation count still moves (docs/REFERENCE.md §4)."
                .to_string(),
            array_evidence(s),
        ),
        "zeros" => return vec![zeros(f, s)],
        "blank" | "unrecognised" => (
            format!("SEMAPHORES section is {state}: no counters could be read"),
            format!(
                "{}. The section matched no known layout (it may be cut at 1 MB or come from an \
                 unknown build); nothing in it is reported as a number (docs/REFERENCE.md §4).",
                s.describe()
            ),
            vec![],
        ),
        _ => {
            let mut why = "Spins, rounds and OS waits per latch class, cumulative since startup; rounds \
                           per OS wait near innodb_sync_spin_loops means spinning rarely succeeds \
                           (docs/REFERENCE.md §4)."
                .to_string();
            if s.unrecognised_count > 0 {
                why.push_str(&format!(" Also: {}.", s.describe()));
            }
            return vec![Finding {
                option_file: vec![],
                id: "semaphores-live".into(),
                severity: Severity::Info,
                title: "SEMAPHORES counters are live on this version (cumulative since startup)"
                    .into(),
                evidence: counter_evidence(s),
                why,
                what_to_do: "Compare two captures to get rates.".into(),
                statements: vec![],
            }];
        }
    };
    vec![Finding {
        option_file: vec![],
        id: "semaphores-untrusted".into(),
        severity: Severity::Info,
        title,
        evidence,
        why,
        what_to_do: READ_INSTEAD.into(),
        statements: vec![],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::Snapshot;

    const ZEROS_57: &str = "----------\nSEMAPHORES\n----------\n\
        OS WAIT ARRAY INFO: reservation count 0\nOS WAIT ARRAY INFO: signal count 0\n\
        RW-shared spins 0, rounds 0, OS waits 0\nRW-excl spins 0, rounds 0, OS waits 0\n\
        RW-sx spins 0, rounds 0, OS waits 0\n\
        Spin rounds per wait: 0.00 RW-shared, 0.00 RW-excl, 0.00 RW-sx\n";

    fn facts(version: &str, uptime: Option<&str>, text: &str) -> Facts {
        let status: std::collections::BTreeMap<String, String> = uptime
            .map(|u| [("Uptime".to_string(), u.to_string())].into())
            .unwrap_or_default();
        Facts::from_snapshot(Snapshot {
            status_before: status.clone(),
            status_after: status,
            innodb_status: Some(text.into()),
            ..Snapshot::of_version(version)
        })
    }

    fn one(f: &Facts) -> Finding {
        let v = check(f);
        assert_eq!(v.len(), 1, "{v:?}");
        v.into_iter().next().unwrap()
    }

    #[test]
    fn live_zeros_on_57_are_judged_by_uptime() {
        let f = one(&facts("5.7.44-log", Some("42"), ZEROS_57));
        assert_eq!(f.id, "semaphores-live");
        assert!(f.title.contains("started 42 s ago"), "{}", f.title);
        let f = one(&facts("5.7.44-log", Some("86400"), ZEROS_57));
        assert_eq!(f.id, "semaphores-live");
        assert!(f.title.contains("24.0 h"), "{}", f.title);
        assert!(f.why.contains("idle"), "{}", f.why);
        let f = one(&facts("5.7.44-log", None, ZEROS_57));
        assert!(f.why.contains("Uptime is unknown"), "{}", f.why);
        // MariaDB 10.2-10.5 print the same layout and count for real.
        let f = one(&facts("10.5.27-MariaDB", Some("30"), ZEROS_57));
        assert_eq!(f.id, "semaphores-live");
    }

    #[test]
    fn zeros_by_version() {
        let f = one(&facts("8.0.32", Some("100000"), ZEROS_57));
        assert_eq!(f.id, "semaphores-untrusted");
        assert!(f.title.contains("constant zeros"), "{}", f.title);
        let f = one(&facts("9.2.0", Some("100000"), ZEROS_57));
        assert_eq!(f.id, "semaphores-untrusted");
        // Between the last release seen counting (8.0.19) and 8.0.32: say it is unsettled.
        let f = one(&facts("8.0.25", Some("100000"), ZEROS_57));
        assert_eq!(f.id, "semaphores-untrusted");
        assert!(f.why.contains("not established"), "{}", f.why);
        let f = one(&facts("8.0.19", Some("100000"), ZEROS_57));
        assert_eq!(f.id, "semaphores-live");
        let f = one(&facts("8.0.20", Some("100000"), ZEROS_57));
        assert_eq!(f.id, "semaphores-untrusted");
    }

    #[test]
    fn unrecognised_section_names_what_was_and_was_not_read() {
        let text = "----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count 3\n\
                    Latch storms 12, naps 4\n";
        let f = one(&facts("8.0.12", Some("100"), text));
        assert_eq!(f.id, "semaphores-untrusted");
        assert!(f.why.contains("recognised OS WAIT ARRAY"), "{}", f.why);
        assert!(f.why.contains("Latch storms 12"), "{}", f.why);
        assert!(f.evidence.is_empty(), "no guess presented as a number");
    }
}
