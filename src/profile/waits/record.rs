//! The live wait recording: one `perf record -a -g` of the on-CPU clock and of
//! `sched:sched_switch` twice (switch-outs of the server's threads with their call chains,
//! switch-ins without), both filtered in the kernel by the threads' command names, streamed
//! through `perf script` into the join. Before it, the cost check: the server's context
//! switches over a short pre-check (`/proc/PID/task/*/status`) priced with the measured cost
//! per switch (docs/PERFORMANCE.md); above the bound the recording is refused.

use std::time::Duration;

use super::{analyse_reader, Analysed, Build, CostCheck};
use crate::error::{Error, Result};
use crate::profile::collect;

/// How off-CPU time is recorded, as the document says it.
pub const METHOD: &str = "sched:sched_switch tracepoint (perf record -a -g, filtered by the \
                          server threads' names; perf's --off-cpu BPF mode is not used)";

/// Fields asked of `perf script`: the sample fields plus the tracepoint's text.
pub const SCRIPT_FIELDS: &str = "comm,pid,tid,time,period,event,trace,ip,sym,symoff,dso";

/// Default bound on the expected cost, percent of the server's throughput.
pub const DEFAULT_MAX_COST_PCT: f64 = 5.0;

/// Measured cost of one recorded switch (a switch-out with its call chain and the switch-in
/// without), in microseconds of a CPU: fitted from the throughput table in
/// docs/PERFORMANCE.md (2-vCPU guest, MariaDB 10.11 under an insert load).
pub const COST_US_PER_SWITCH: f64 = 10.0;

/// Measured cost of the on-CPU sampling at 499 Hz per CPU (profile's default mode, issue 25):
/// percent of throughput.
pub const SAMPLING_COST_PCT: f64 = 1.0;

/// The pre-check's length.
pub const PRECHECK: Duration = Duration::from_millis(500);

/// `voluntary_ctxt_switches` + `nonvoluntary_ctxt_switches` of a `/proc/.../status` text.
pub fn ctxt_switches(status: &str) -> Option<u64> {
    let mut total = None;
    for l in status.lines() {
        if let Some(v) = l
            .strip_prefix("voluntary_ctxt_switches:")
            .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        {
            let n: u64 = v.trim().parse().ok()?;
            total = Some(total.unwrap_or(0) + n);
        }
    }
    total
}

/// Context switches per second of all threads of `pid` over `window` (threads present at both
/// reads).
pub fn switch_rate(pid: u32, window: Duration) -> Result<f64> {
    let read = || -> Result<std::collections::HashMap<String, u64>> {
        let dir = format!("/proc/{pid}/task");
        let rd =
            std::fs::read_dir(&dir).map_err(|e| Error::runtime(format!("reading {dir}: {e}")))?;
        Ok(rd
            .filter_map(|e| {
                let e = e.ok()?;
                let s = std::fs::read_to_string(e.path().join("status")).ok()?;
                Some((
                    e.file_name().to_string_lossy().into_owned(),
                    ctxt_switches(&s)?,
                ))
            })
            .collect())
    };
    let a = read()?;
    let t0 = std::time::Instant::now();
    std::thread::sleep(window);
    let b = read()?;
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let n: u64 = b
        .iter()
        .filter_map(|(t, n)| Some(n.saturating_sub(*a.get(t)?)))
        .sum();
    Ok(n as f64 / secs)
}

/// Expected cost of a wait recording, percent of the server's throughput: the sampling's,
/// plus each switch's recording cost spread over the host's CPUs.
pub fn expected_cost_pct(switches_per_s: f64, cpus: usize) -> f64 {
    let cpus = cpus.max(1) as f64;
    SAMPLING_COST_PCT + 100.0 * switches_per_s * COST_US_PER_SWITCH * 1e-6 / cpus
}

/// The cost check's decision: record, or refuse with the reason and the way out.
pub fn decide(switches_per_s: f64, cpus: usize, bound_pct: f64) -> Result<CostCheck> {
    let expected = expected_cost_pct(switches_per_s, cpus);
    if expected > bound_pct {
        return Err(Error::bad_input(format!(
            "--waits: the server switches {switches_per_s:.0} times a second; recording every \
             switch would cost about {expected:.1}% of its throughput, above the {bound_pct}% \
             bound: record when it is less busy, or accept the cost with --max-cost {:.0}",
            expected.ceil()
        )));
    }
    Ok(CostCheck {
        switches_per_s,
        expected_cost_pct: expected,
        bound_pct,
        decision: if expected > DEFAULT_MAX_COST_PCT {
            "recorded above the default bound (--max-cost)".into()
        } else {
            "recorded".into()
        },
    })
}

/// The distinct command names of the server's threads (what the kernel filters on), leaving
/// out names a filter string cannot hold.
pub fn thread_comms(pid: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim_end_matches('\n').to_string())
        .filter(|s| filter_safe(s))
        .collect();
    v.sort();
    v.dedup();
    v
}

fn filter_safe(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() || c == ' ') && !s.contains(['"', '\\'])
}

/// The kernel filters: switch-outs of these names, switch-ins of them.
pub fn filters(comms: &[String]) -> (String, String) {
    let f = |side: &str| {
        comms
            .iter()
            .filter(|c| filter_safe(c))
            .map(|c| format!("{side}_comm == \"{c}\""))
            .collect::<Vec<_>>()
            .join(" || ")
    };
    (f("prev"), f("next"))
}

/// `perf record` arguments: the clock at `hz` (a period in ns, so that the tracepoints keep
/// period 1), switch-outs with chains, switch-ins without, every CPU.
pub fn record_args(hz: u32, comms: &[String]) -> Vec<String> {
    let (out, into) = filters(comms);
    let period = 1_000_000_000 / u64::from(hz.max(1));
    vec![
        "-e".into(),
        format!("cpu-clock/period={period}/"),
        "-e".into(),
        "sched:sched_switch".into(),
        "--filter".into(),
        out,
        "-e".into(),
        "sched:sched_switch/call-graph=no/".into(),
        "--filter".into(),
        into,
        "-a".into(),
        "-g".into(),
    ]
}

/// A live wait recording of one process.
#[derive(Debug, Clone)]
pub struct Live {
    pub pid: u32,
    pub comm: String,
    pub seconds: f64,
    pub frequency_hz: u32,
    pub max_cost_pct: f64,
    pub max_input_bytes: u64,
    /// Also build the pprof profile (`--pprof`).
    pub pprof: bool,
}

/// The cost check before a recording: the switch rate over [`PRECHECK`] and the decision.
pub fn check(live: &Live) -> Result<CostCheck> {
    let rate = switch_rate(live.pid, PRECHECK)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    decide(rate, cpus, live.max_cost_pct)
}

/// Record `live` (after its cost check `cost`) and build the document (and its pprof
/// profile when asked). The process's identity is read before the recording, while it runs.
pub fn record(live: &Live, cost: CostCheck) -> Result<Analysed> {
    let comms = thread_comms(live.pid);
    if comms.is_empty() {
        return Err(Error::bad_input(format!(
            "--pid {}: no thread of it could be read (exited, or /proc hidden)",
            live.pid
        )));
    }
    let mut server = super::identity::of_process(live.pid);
    let rec = record_args(live.frequency_hz, &comms);
    let script: Vec<String> = vec!["-F".into(), SCRIPT_FIELDS.into()];
    let b = Build {
        pid: live.pid,
        kind: "perf-record".into(),
        file: None,
        comm: Some(live.comm.clone()),
        seconds: Some(live.seconds),
        frequency_hz: Some(live.frequency_hz),
        off_cpu_method: METHOD.into(),
        cost: Some(cost),
        server: None,
        pprof: live.pprof,
    };
    let mut a = collect::record_args(live.pid, live.seconds, &rec, &script, |r| {
        analyse_reader(r, "perf script output", live.max_input_bytes, b)
    })?;
    server.recorded_at_unix_s = super::identity::now_unix_s();
    a.doc.server = Some(server);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_switch_counts() {
        // From /proc/PID/task/TID/status of a mariadbd thread (Linux 6.x).
        let s = "Name:\tmariadbd\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t193\n\
                 nonvoluntary_ctxt_switches:\t28\n";
        assert_eq!(ctxt_switches(s), Some(221));
        assert_eq!(ctxt_switches("Name:\tx\n"), None);
        assert_eq!(ctxt_switches("voluntary_ctxt_switches:\tlots\n"), None);
    }

    #[test]
    fn the_bound_refuses_a_busy_server() {
        let ok = decide(500.0, 2, 5.0).unwrap();
        assert!(
            ok.expected_cost_pct < 5.0 && ok.decision == "recorded",
            "{ok:?}"
        );
        let busy = 50_000.0;
        let err = decide(busy, 2, 5.0).unwrap_err().to_string();
        assert!(
            err.contains("50000 times a second") && err.contains("--max-cost"),
            "{err}"
        );
        let accepted = decide(busy, 2, 1000.0).unwrap();
        assert!(accepted.decision.contains("above the default bound"));
        assert_eq!(decide(500.0, 2, 100.0).unwrap().decision, "recorded");
        // More CPUs share the same switches' cost.
        assert!(expected_cost_pct(busy, 16) < expected_cost_pct(busy, 2));
    }

    #[test]
    fn filters_and_arguments() {
        let c = vec!["mariadbd".to_string(), "ib_io_wr-1".to_string()];
        let (out, into) = filters(&c);
        assert_eq!(
            out,
            "prev_comm == \"mariadbd\" || prev_comm == \"ib_io_wr-1\""
        );
        assert!(into.starts_with("next_comm == \"mariadbd\""));
        let a = record_args(499, &c);
        assert!(a.contains(&"cpu-clock/period=2004008/".to_string()));
        assert!(a.contains(&"sched:sched_switch/call-graph=no/".to_string()));
        assert!(!filter_safe("a\"b") && !filter_safe(""));
    }
}
