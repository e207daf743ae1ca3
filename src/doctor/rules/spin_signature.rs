//! The spin signature over the window, from the server process's own CPU: user time near all
//! of its CPU while its system time and context switches per query collapse (measured on
//! MariaDB 10.11, delay 4 -> 6000 under write load: user 54% -> 95%, system 35% -> 4%, context
//! switches 63k/s -> 6k/s; docs/REFERENCE.md §8). On MariaDB 10.6+ this is the only direct
//! evidence of spinning short of a profile.
//!
//! Host-wide /proc/stat is used only to see whether other processes dominate the host: then
//! the window is inconclusive. Older snapshots without the process's CPU fall back to the host
//! counters and say so.

use crate::doctor::{ev, Evidence, Facts, Finding, Severity};
use crate::server::snapshot::HostFacts;

const ID: &str = "spin-signature";

/// Server CPU below this many cores over the window: too idle to show anything.
const IDLE_CORES: f64 = 0.1;
/// Context switches per second of the server's CPU below which its threads hardly sleep.
const SWITCHES_PER_CPU_S: f64 = 10_000.0;
/// The server's share of the host's busy CPU below which other processes dominate.
const DOMINATED_SHARE_PCT: f64 = 50.0;

fn finding(
    severity: Severity,
    title: String,
    evidence: Vec<Evidence>,
    why: &str,
    what: &str,
) -> Vec<Finding> {
    vec![Finding {
        id: ID.into(),
        severity,
        title,
        evidence,
        why: why.into(),
        what_to_do: what.into(),
        statements: vec![],
        option_file: vec![],
    }]
}

const WHY: &str = "Threads that spin instead of sleeping burn user CPU and stop context switching: \
                   user time near all of the server's CPU, little system time and few context switches \
                   per second of its CPU (docs/REFERENCE.md §8). SEMAPHORES is blank on MariaDB 10.6+ and \
                   performance_schema does not split spinning from sleeping (§4, §5).";

/// Questions per second of the clients, the sampler's own statements removed when known.
fn questions_per_s(f: &Facts) -> Option<f64> {
    match &f.burst {
        Some(b) => Some(b.questions_per_s),
        None => f.status_delta("questions").map(|q| q / f.snap.window_s),
    }
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(h) = &f.snap.host else { return vec![] };
    let window = f.snap.window_s;
    let (Some(a), Some(b)) = (h.cpu_before, h.cpu_after) else {
        return vec![];
    };
    if window <= 0.0 {
        return vec![];
    }
    let host_user = (b.user + b.nice).saturating_sub(a.user + a.nice) as f64;
    let host_sys =
        (b.system + b.irq + b.softirq).saturating_sub(a.system + a.irq + a.softirq) as f64;
    let host_idle = (b.idle + b.iowait).saturating_sub(a.idle + a.iowait) as f64;
    let host_total = host_user + host_sys + host_idle + b.steal.saturating_sub(a.steal) as f64;
    if host_total <= 0.0 {
        return vec![];
    }
    let host_busy_pct = (host_user + host_sys) / host_total * 100.0;
    let cs_per_s = match (h.server_ctxt_before, h.server_ctxt_after) {
        (Some(x), Some(y)) => Some((y.0 + y.1).saturating_sub(x.0 + x.1) as f64 / window),
        _ => None,
    };
    let q_per_s = questions_per_s(f);
    let cs_per_q = match (cs_per_s, q_per_s) {
        (Some(c), Some(q)) if q > 0.0 => Some(c / q),
        _ => None,
    };
    let mut tail = Vec::new();
    if let Some(c) = cs_per_s {
        tail.push(ev("server_context_switches", c, "/s"));
    }
    if let Some(q) = q_per_s {
        tail.push(ev(
            if f.burst.is_some() {
                "questions_excluding_sampler"
            } else {
                "questions"
            },
            q,
            "/s",
        ));
    }
    if let Some(c) = cs_per_q {
        tail.push(ev("context_switches_per_query", c, ""));
    }
    // Per query is no yardstick when spinning collapses throughput (d=6000: 6k switches/s at
    // 400 queries/s); per second of the server's CPU is: 63k/s over ~1.8 cores at d=4, 6k/s
    // over ~1.9 cores at d=6000.
    let few_switches_per = |cores: f64| match cs_per_s {
        Some(c) if cores > 0.0 => c / cores < SWITCHES_PER_CPU_S,
        _ => true,
    };

    let Some((cores, user_pct, share_pct)) = server_split(h, host_user + host_sys, window) else {
        let host_cores = (host_user + host_sys) / host_total * f.cores.unwrap_or(1.0);
        return host_wide(
            host_busy_pct,
            host_user,
            host_sys,
            host_total,
            tail,
            few_switches_per(host_cores),
        );
    };
    let mut evidence = vec![
        ev("server_cpu", cores * 100.0, "% of one core"),
        ev("server_user_share", user_pct, "%"),
        ev("host_cpu_busy", host_busy_pct, "%"),
        ev("server_share_of_host_busy", share_pct, "%"),
    ];
    evidence.extend(tail);
    let cores_n = f.cores.unwrap_or(1.0);
    if cores < IDLE_CORES {
        return finding(
            Severity::Info,
            format!(
                "spin signature: none; the server used {:.0}% of one core over the {window:.0} s window (nearly idle)",
                cores * 100.0
            ),
            evidence,
            WHY,
            "No evidence either way from this window: run doctor while the workload that worries you is running.",
        );
    }
    if host_busy_pct >= 50.0 && share_pct < DOMINATED_SHARE_PCT {
        return finding(
            Severity::Info,
            format!(
                "spin signature inconclusive: other processes used {:.0}% of the host's busy CPU ({host_busy_pct:.0}% busy)",
                100.0 - share_pct
            ),
            evidence,
            WHY,
            "The host is shared and busy: other processes take the CPU the server's threads would spin or sleep on. \
             Judge spinning with `spinscope profile` on the server's pid, or rerun when the host is quieter.",
        );
    }
    if let Some(c) = cs_per_s.filter(|_| cores > 0.0) {
        evidence.push(ev("context_switches_per_cpu_second", c / cores, ""));
    }
    if user_pct >= 85.0 && few_switches_per(cores) && cores >= 0.5 {
        return finding(
            Severity::Warning,
            format!(
                "spin signature: the server used {:.1} of {cores_n:.0} cores, {user_pct:.0}% of it in user space, with few context switches",
                cores
            ),
            evidence,
            WHY,
            "Confirm with `spinscope profile` (spin loops in the flame graph) and read the spin-budget finding: \
             if its design ratio is high, its fix applies.",
        );
    }
    finding(
        Severity::Info,
        format!(
            "spin signature: none; the server used {:.1} of {cores_n:.0} cores, {user_pct:.0}% of it in user space",
            cores
        ),
        evidence,
        WHY,
        "No action from this evidence: the server's threads sleep and switch as latch waiters do when they do not spin long.",
    )
}

/// (cores used, user % of its CPU, its % of the host's busy CPU) from the process counters.
fn server_split(h: &HostFacts, host_busy_ticks: f64, window: f64) -> Option<(f64, f64, f64)> {
    let (a, b) = (h.server_cpu_before?, h.server_cpu_after?);
    let hz = h.clock_ticks_per_s.unwrap_or(100) as f64;
    let user = b.utime.saturating_sub(a.utime) as f64;
    let sys = b.stime.saturating_sub(a.stime) as f64;
    let total = user + sys;
    let cores = total / hz / window;
    let user_pct = if total > 0.0 {
        user / total * 100.0
    } else {
        0.0
    };
    // /proc/stat and /proc/PID/stat tick at the same USER_HZ; sampling edges can put the
    // process a tick above the host.
    let share = if host_busy_ticks > 0.0 {
        (total / host_busy_ticks * 100.0).min(100.0)
    } else {
        0.0
    };
    Some((cores, user_pct, share))
}

/// Older snapshots: only host-wide counters, labelled as such.
fn host_wide(
    busy_pct: f64,
    user: f64,
    sys: f64,
    total: f64,
    tail: Vec<Evidence>,
    few_switches: bool,
) -> Vec<Finding> {
    let user_share = if user + sys > 0.0 {
        user / (user + sys) * 100.0
    } else {
        0.0
    };
    let sys_pct = sys / total * 100.0;
    let mut evidence = vec![
        ev("host_cpu_busy", busy_pct, "%"),
        ev("host_user_share_of_busy", user_share, "%"),
        ev("host_system_cpu", sys_pct, "%"),
    ];
    evidence.extend(tail);
    let note = "The server process's own CPU was not recorded (a snapshot from an older spinscope, or no \
                readable /proc/PID): these are host-wide counters, which other processes on the host also move.";
    if busy_pct >= 50.0 && user_share >= 85.0 && sys_pct <= 10.0 && few_switches {
        return finding(
            Severity::Warning,
            format!(
                "spin signature (host-wide): CPU {busy_pct:.0}% busy, {user_share:.0}% user, system {sys_pct:.0}%, few context switches"
            ),
            evidence,
            &format!("{WHY} {note}"),
            "Check that the server is what keeps the host busy (top, `spinscope profile`), then read the spin-budget finding.",
        );
    }
    finding(
        Severity::Info,
        format!("spin signature (host-wide): none; host CPU {busy_pct:.0}% busy, {user_share:.0}% of it user"),
        evidence,
        &format!("{WHY} {note}"),
        "No action from this evidence; rerun doctor on the server's host for the process's own split.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::{CpuTicks, HostFacts, ProcCpu, Snapshot};

    /// A 10 s window on 2 cores (2000 host ticks at 100 Hz), 10k questions/s.
    fn facts(host: (u64, u64, u64), server: Option<(u64, u64)>, cs: u64) -> Facts {
        let q = |n: u64| {
            [("questions".to_string(), n.to_string())]
                .into_iter()
                .collect()
        };
        Facts::from_snapshot(Snapshot {
            local: true,
            status_before: q(0),
            status_after: q(100_000),
            window_s: 10.0,
            host: Some(HostFacts {
                arch: "x86_64".into(),
                online_cpus: Some(2),
                cpu_before: Some(CpuTicks::default()),
                cpu_after: Some(CpuTicks {
                    user: host.0,
                    system: host.1,
                    idle: host.2,
                    ..Default::default()
                }),
                server_ctxt_before: Some((0, 0)),
                server_ctxt_after: Some((cs, 0)),
                server_cpu_before: server.map(|_| ProcCpu::default()),
                server_cpu_after: server.map(|(u, s)| ProcCpu { utime: u, stime: s }),
                clock_ticks_per_s: Some(100),
                ..Default::default()
            }),
            ..Snapshot::of_version("10.11.19-MariaDB")
        })
    }

    #[test]
    fn process_split_from_the_measured_numbers() {
        // delay 6000: the server itself 95% user, 6k cs/s at 10k q/s.
        let f = check(&facts((1900, 80, 20), Some((1800, 80)), 60_000));
        assert_eq!(f[0].severity, Severity::Warning, "{}", f[0].title);
        // delay 4: 54% user / 35% system, 63k cs/s.
        let f = check(&facts((1080, 700, 220), Some((1000, 650)), 630_000));
        assert_eq!(f[0].severity, Severity::Info, "{}", f[0].title);
        assert!(f[0].title.contains("none"), "{}", f[0].title);
    }

    #[test]
    fn a_busy_shared_host_is_inconclusive_not_a_signature() {
        // The host is 95% user, but the server used 0.3 of a core: someone else spins.
        let f = check(&facts((1900, 60, 40), Some((250, 50)), 20_000));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.contains("inconclusive"), "{}", f[0].title);
        // The same host counters without the process's split: the host-wide fallback says so.
        let f = check(&facts((1900, 60, 40), None, 20_000));
        assert!(f[0].title.contains("host-wide"), "{}", f[0].title);
        assert!(f[0].why.contains("not recorded"));
    }

    #[test]
    fn an_idle_server_gives_no_evidence_either_way() {
        let f = check(&facts((20, 10, 1970), Some((3, 2)), 100));
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].title.contains("nearly idle"), "{}", f[0].title);
    }
}
