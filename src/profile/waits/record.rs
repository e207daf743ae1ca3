//! The live wait recording: one `perf record -a -g` of the on-CPU clock and of
//! `sched:sched_switch` twice (switch-outs of the server's threads with their call chains,
//! switch-ins without), both filtered in the kernel by the threads' command names, written
//! to a file that `perf script` reads into the join after the window. Before it, the cost
//! check: the server's context switches over a pre-check (`/proc/PID/task/*/status`) priced with the measured cost
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

/// Measured CPU cost of one recorded switch (a switch-out with its call chain and the
/// switch-in without, in the kernel and in perf record), in microseconds of a CPU: fitted
/// from the interleaved runs in docs/PERFORMANCE.md (2-vCPU guest, MariaDB 10.11 under a
/// 4-client insert load that kept both CPUs busy: about 7.6k switches/s, throughput -15% and
/// busy CPU per row +20% at the medians of 8 pairs, so 0.15 x 2 CPUs / 7.6k/s = about 40 us).
pub const COST_US_PER_SWITCH: f64 = 40.0;

/// Measured cost of the on-CPU sampling at 499 Hz per CPU (profile's default mode, issue 25):
/// percent of throughput.
pub const SAMPLING_COST_PCT: f64 = 1.0;

/// The pre-check's length, read in [`PRECHECK_PARTS`] parts. A server's switch rate moves
/// fast: under a 4-client insert load on 2 vCPUs, successive 0.5 s windows read 1.9k to 21k
/// switches a second around a 6 s mean of about 8k, so a single 0.5 s pre-check let
/// recordings through at a quarter of the real rate; 2 s averages that out.
pub const PRECHECK: Duration = Duration::from_secs(2);
/// Parts of the pre-check: the idle CPU the recording may use is the least of any part.
pub const PRECHECK_PARTS: u32 = 4;

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

/// The host's CPU time from the aggregate `cpu` line of `/proc/stat`: (idle + iowait, all
/// fields) in ticks, and the number of `cpuN` lines.
pub fn stat_idle(stat: &str) -> Option<(u64, u64, usize)> {
    let mut out = None;
    let mut cpus = 0;
    for l in stat.lines() {
        let mut f = l.split_ascii_whitespace();
        match f.next() {
            Some("cpu") => {
                let v: Vec<u64> = f.map(|x| x.parse().ok()).collect::<Option<_>>()?;
                if v.len() < 5 {
                    return None;
                }
                out = Some((v[3] + v[4], v.iter().sum()));
            }
            Some(c) if c.starts_with("cpu") => cpus += 1,
            _ => {}
        }
    }
    let (idle, all) = out?;
    Some((idle, all, cpus.max(1)))
}

/// What the pre-check saw: the server's switches per second over the whole pre-check, and the
/// host's idle CPUs in its least idle part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub switches_per_s: f64,
    pub idle_cpus: f64,
}

/// Context switches per second of all threads of `pid` (threads present at both ends) and the
/// host's least idle CPUs, over `window` in `parts`.
pub fn precheck(pid: u32, window: Duration, parts: u32) -> Result<Seen> {
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
    let stat = || {
        std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| stat_idle(&s))
    };
    let a = read()?;
    let t0 = std::time::Instant::now();
    let mut idle_cpus = f64::INFINITY;
    let mut last = stat();
    for _ in 0..parts.max(1) {
        std::thread::sleep(window / parts.max(1));
        let now = stat();
        if let (Some((i0, a0, n)), Some((i1, a1, _))) = (last, now) {
            if a1 > a0 {
                idle_cpus = idle_cpus.min(n as f64 * (i1 - i0.min(i1)) as f64 / (a1 - a0) as f64);
            }
        }
        last = now;
    }
    let b = read()?;
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let n: u64 = b
        .iter()
        .filter_map(|(t, n)| Some(n.saturating_sub(*a.get(t)?)))
        .sum();
    Ok(Seen {
        switches_per_s: n as f64 / secs,
        // Unreadable /proc/stat: no idle CPU assumed, the dearer estimate.
        idle_cpus: if idle_cpus.is_finite() {
            idle_cpus
        } else {
            0.0
        },
    })
}

/// Expected cost of a wait recording, percent of the server's throughput: the sampling's, plus
/// the CPU the recorded switches need beyond what the host has idle, spread over its CPUs.
/// Measured: with a CPU idle (one inserting client on 2 vCPUs, 5k switches/s) the recording
/// cost nothing visible; with both CPUs busy (four clients, 7.6k/s) about 15%.
pub fn expected_cost_pct(switches_per_s: f64, idle_cpus: f64, cpus: usize) -> f64 {
    let cpus = cpus.max(1) as f64;
    let need = switches_per_s * COST_US_PER_SWITCH * 1e-6;
    // A share of the throughput: the linear price stops at all of it.
    (SAMPLING_COST_PCT + 100.0 * (need - idle_cpus.max(0.0)).max(0.0) / cpus).min(100.0)
}

/// The cost check's decision: record, or refuse with the reason and the way out.
pub fn decide(seen: Seen, cpus: usize, bound_pct: f64) -> Result<CostCheck> {
    let Seen {
        switches_per_s,
        idle_cpus,
    } = seen;
    let expected = expected_cost_pct(switches_per_s, idle_cpus, cpus);
    if expected > bound_pct {
        return Err(Error::bad_input(format!(
            "--waits: the server switches {switches_per_s:.0} times a second with {idle_cpus:.1} \
             of {cpus} CPUs idle; recording every switch would cost about {expected:.1}% of its \
             throughput, above the {bound_pct}% bound: record when it is less busy, or accept \
             the cost with --max-cost {:.0}",
            expected.ceil()
        )));
    }
    Ok(CostCheck {
        switches_per_s,
        idle_cpus,
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

/// The cost check before a recording: the switch rate and idle CPUs over [`PRECHECK`] and
/// the decision.
pub fn check(live: &Live) -> Result<CostCheck> {
    let seen = precheck(live.pid, PRECHECK, PRECHECK_PARTS)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    decide(seen, cpus, live.max_cost_pct)
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
    let mut a = collect::record_to_file_args(
        live.pid,
        live.seconds,
        &rec,
        &script,
        live.max_input_bytes,
        |r| analyse_reader(r, "perf script output", live.max_input_bytes, b),
    )?;
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
    fn proc_stat_idle() {
        // The head of /proc/stat on a 2-vCPU Linux 6.x guest.
        let s =
            "cpu  8342 12 2915 150230 301 0 88 40 0 0\ncpu0 4100 6 1500 75000 150 0 44 20 0 0\n\
                 cpu1 4242 6 1415 75230 151 0 44 20 0 0\nintr 1 2 3\n";
        let (idle, all, n) = stat_idle(s).unwrap();
        assert_eq!((idle, n), (150230 + 301, 2));
        assert_eq!(all, 8342 + 12 + 2915 + 150230 + 301 + 88 + 40);
        assert_eq!(stat_idle("cpu 1 2 x\n"), None);
        assert_eq!(stat_idle("intr 1\n"), None);
    }

    #[test]
    fn the_bound_refuses_a_busy_server() {
        let seen = |s: f64, idle: f64| Seen {
            switches_per_s: s,
            idle_cpus: idle,
        };
        let ok = decide(seen(500.0, 0.0), 2, 5.0).unwrap();
        assert!(
            ok.expected_cost_pct < 5.0 && ok.decision == "recorded",
            "{ok:?}"
        );
        // The measured pair of docs/PERFORMANCE.md: both CPUs busy at 7.6k/s is refused,
        // 5k/s beside an idle CPU is recorded at about the sampling's cost.
        let busy = decide(seen(7600.0, 0.0), 2, 5.0).unwrap_err().to_string();
        assert!(
            busy.contains("7600 times a second")
                && busy.contains("0.0 of 2 CPUs idle")
                && busy.contains("--max-cost 17"),
            "{busy}"
        );
        let idle = decide(seen(5000.0, 0.8), 2, 5.0).unwrap();
        assert!(
            (idle.expected_cost_pct - SAMPLING_COST_PCT).abs() < 1e-9,
            "{idle:?}"
        );
        let accepted = decide(seen(50_000.0, 0.0), 2, 1000.0).unwrap();
        assert!(accepted.decision.contains("above the default bound"));
        // --max-cost 100 accepts any rate: the price is a share of the throughput.
        assert_eq!(expected_cost_pct(1e7, 0.0, 2), 100.0);
        assert!(decide(seen(1e7, 0.0), 2, 100.0).is_ok());
        // More CPUs share the same switches' cost; idle CPUs absorb it.
        assert!(expected_cost_pct(50_000.0, 0.0, 16) < expected_cost_pct(50_000.0, 0.0, 2));
        assert!(expected_cost_pct(50_000.0, 1.0, 2) < expected_cost_pct(50_000.0, 0.0, 2));
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
