//! The host spin signature over the window: user CPU share high while system CPU and
//! context switches per query are low (spin-facts.md §7). On MariaDB 10.6+ this is the only
//! direct evidence of spinning that exists.

use crate::doctor::{ev, Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(h) = &f.snap.host else { return vec![] };
    let (Some(a), Some(b)) = (h.cpu_before, h.cpu_after) else {
        return vec![];
    };
    let user = (b.user + b.nice).saturating_sub(a.user + a.nice) as f64;
    let sys = (b.system + b.irq + b.softirq).saturating_sub(a.system + a.irq + a.softirq) as f64;
    let idle = (b.idle + b.iowait).saturating_sub(a.idle + a.iowait) as f64;
    let total = user + sys + idle + b.steal.saturating_sub(a.steal) as f64;
    if total <= 0.0 || f.snap.window_s <= 0.0 {
        return vec![];
    }
    let busy_pct = (user + sys) / total * 100.0;
    let user_share = if user + sys > 0.0 {
        user / (user + sys) * 100.0
    } else {
        0.0
    };
    let sys_pct = sys / total * 100.0;
    let cs_per_s = match (h.server_ctxt_before, h.server_ctxt_after) {
        (Some(x), Some(y)) => {
            Some(((y.0 + y.1).saturating_sub(x.0 + x.1)) as f64 / f.snap.window_s)
        }
        _ => None,
    };
    let q_per_s = f.status_delta("questions").map(|q| q / f.snap.window_s);
    let cs_per_q = match (cs_per_s, q_per_s) {
        (Some(c), Some(q)) if q > 0.0 => Some(c / q),
        _ => None,
    };
    let mut evidence = vec![
        ev("cpu_busy", busy_pct, "%"),
        ev("user_share_of_busy", user_share, "%"),
        ev("system_cpu", sys_pct, "%"),
    ];
    if let Some(c) = cs_per_s {
        evidence.push(ev("server_context_switches", c, "/s"));
    }
    if let Some(c) = cs_per_q {
        evidence.push(ev("context_switches_per_query", c, ""));
    }
    if let Some(q) = q_per_s {
        evidence.push(ev("questions", q, "/s"));
    }
    // §7: spinning hard showed user 95% / system 4% / 6k cs/s against 54% / 35% / 63k cs/s.
    let signature = busy_pct >= 50.0
        && user_share >= 85.0
        && sys_pct <= 10.0
        && cs_per_q.is_none_or(|c| c < 1.0);
    if !signature {
        return vec![Finding {
            option_file: vec![],
            id: "host-spin-signature".into(),
            severity: Severity::Info,
            title: format!(
                "host CPU {busy_pct:.0}% busy, {user_share:.0}% of it user: no spin signature over the window"
            ),
            evidence,
            why: "Harmful spinning shows as user CPU near 95% of busy with system CPU and context switches collapsing (spin-facts.md §7).".into(),
            what_to_do: "Nothing.".into(),
            statements: vec![],
        }];
    }
    vec![Finding {
        option_file: vec![],
        id: "host-spin-signature".into(),
        severity: Severity::Warning,
        title: format!(
            "host spin signature: CPU {busy_pct:.0}% busy, {user_share:.0}% user, system {sys_pct:.0}%, few context switches per query"
        ),
        evidence,
        why: "Threads that spin instead of sleeping burn user CPU and stop context switching; on MariaDB 10.6+ this is the only \
              direct evidence of spinning (SEMAPHORES is blank, P_S does not split spin from sleep)."
            .into(),
        what_to_do: "Confirm with `spinscope profile` (PAUSE loops in the flame graph) and compare with the spin-budget finding; \
                     lower innodb_spin_wait_delay if the budget is above design."
            .into(),
        statements: vec![],
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::{CpuTicks, HostFacts, Snapshot, SNAPSHOT_SCHEMA};

    fn facts(user: u64, sys: u64, idle: u64, cs: u64) -> Facts {
        let q = |n: u64| {
            [("questions".to_string(), n.to_string())]
                .into_iter()
                .collect()
        };
        Facts::from_snapshot(Snapshot {
            schema: SNAPSHOT_SCHEMA.into(),
            captured_at_unix_s: 0,
            target: "t".into(),
            local: true,
            version: "10.11.19-MariaDB".into(),
            version_comment: None,
            variables: Default::default(),
            status_before: q(0),
            status_after: q(100_000),
            window_s: 10.0,
            innodb_status: None,
            pfs: None,
            burst: None,
            host: Some(HostFacts {
                arch: "x86_64".into(),
                cpu_before: Some(CpuTicks::default()),
                cpu_after: Some(CpuTicks {
                    user,
                    system: sys,
                    idle,
                    ..Default::default()
                }),
                server_ctxt_before: Some((0, 0)),
                server_ctxt_after: Some((cs, 0)),
                ..Default::default()
            }),
            refused: vec![],
            notes: vec![],
            lost_connection: false,
        })
    }

    #[test]
    fn spin_signature_from_section_7_numbers() {
        // d=6000: user 95%, system 4%, 6k cs/s at 10k q/s.
        let f = check(&facts(1900, 80, 20, 60_000));
        assert_eq!(f[0].severity, Severity::Warning, "{}", f[0].title);
        // d=4: user 54%, system 35%, 63k cs/s.
        let f = check(&facts(1080, 700, 220, 630_000));
        assert_eq!(f[0].severity, Severity::Info, "{}", f[0].title);
    }
}
