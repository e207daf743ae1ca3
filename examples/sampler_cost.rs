//! Benchmark: the server CPU that one burst-sampler statement costs at a fixed rate.
//!
//! For each candidate statement, one persistent connection runs it at `HZ` for `SECONDS`;
//! the server's CPU over that time is the sum of the first field of
//! `/proc/PID/task/*/schedstat` (ns on CPU, every thread) before and after, and the client's
//! own CPU is its thread CPU clock. Candidates are run in rounds (interleaved), `ROUNDS`
//! times, after an idle baseline of the same length. Run it on the server's host, as root
//! or the server's user (schedstat of another user's process needs that).
//!
//! Usage: cargo run --release --example sampler_cost -- SOCKET PID [SECONDS] [HZ] [ROUNDS] [plans|fidelity]
//! Output: one line per measurement, then medians per candidate (tab-separated).
//!
//! With `plans` as the sixth argument the candidates are instead the library's own burst
//! sampler (`burst_sample_plan`) in its ways of sampling: SQL counters only at HZ (as before),
//! the /proc series at HZ with the SQL counters at 10, 5 or ~0 Hz. Each line then also gives the
//! CPU of the server thread serving the sampler's session (`/proc/PID/task/TID/schedstat`, its
//! TID from `information_schema.PROCESSLIST`): the sampler's own server cost, which stays
//! measurable under a load that drowns the whole-process figure; and the achieved rate and
//! longest gap of each series. The /proc plans run in several ways: reading every thread's stat
//! at every sample (`_every`, as before any gate), through the schedstat gate (`_sched`, the
//! default before the taskstats group gate), through the library's default gate (the group
//! gate, no suffix), and through the group gate without full reads (`_nofull`).
//!
//! With `fidelity` (no connection used) each 100 Hz /proc sample is taken twice back to back,
//! by the sampler under test and then by an every-stat reader; the control pair is two
//! every-stat readers: what each gate changes in the count, against the noise of two reads.

use mysql::prelude::Queryable;
use std::time::{Duration, Instant};

fn server_cpu_ns(pid: u32) -> u64 {
    let dir = format!("/proc/{pid}/task");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return 0;
    };
    rd.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The host's stolen time so far (ticks of 1/100 s, all CPUs; `/proc/stat`'s eighth field):
/// time the hypervisor ran something else while a vCPU wanted to run, which a thread's CPU
/// clock counts as its own.
fn steal_ticks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().next()?.split_whitespace().nth(8)?.parse().ok())
        .unwrap_or(0)
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a valid local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

const NAMES: &str =
    "'Threads_running', 'Threads_connected', 'Questions', 'Innodb_row_lock_current_waits'";

fn candidates() -> Vec<(&'static str, String)> {
    let is = |n: &str| {
        format!("(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '{n}')")
    };
    vec![
        ("select1", "SELECT 1".to_string()),
        (
            "show_where_in",
            format!("SHOW GLOBAL STATUS WHERE Variable_name IN ({NAMES})"),
        ),
        (
            "is_where_in",
            format!(
                "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
                 WHERE VARIABLE_NAME IN ({NAMES})"
            ),
        ),
        (
            "is_eq_subqueries",
            format!(
                "SELECT {}, {}, {}, {}",
                is("THREADS_RUNNING"),
                is("THREADS_CONNECTED"),
                is("QUESTIONS"),
                is("INNODB_ROW_LOCK_CURRENT_WAITS")
            ),
        ),
        (
            "is_eq_3_no_innodb",
            format!(
                "SELECT {}, {}, {}",
                is("THREADS_RUNNING"),
                is("THREADS_CONNECTED"),
                is("QUESTIONS")
            ),
        ),
        (
            "show_like_threads_running",
            "SHOW GLOBAL STATUS LIKE 'Threads_running'".to_string(),
        ),
        (
            "show_like_4_multi",
            "SHOW GLOBAL STATUS LIKE 'Threads_running'; SHOW GLOBAL STATUS LIKE 'Threads_connected'; \
             SHOW GLOBAL STATUS LIKE 'Questions'; SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_current_waits'"
                .to_string(),
        ),
    ]
}

fn run(conn: &mut mysql::Conn, sql: &str, hz: f64, secs: f64) -> (usize, u64, f64) {
    let period = Duration::from_secs_f64(1.0 / hz);
    let start = Instant::now();
    let mut next = start;
    let mut n = 0;
    let cpu0 = thread_cpu_ns();
    let mut rtt = Vec::new();
    while start.elapsed().as_secs_f64() < secs {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        let q = Instant::now();
        let mut r = conn.query_iter(sql).expect("query");
        while let Some(set) = r.iter() {
            for row in set {
                let _ = row.expect("row");
            }
        }
        rtt.push(q.elapsed().as_secs_f64() * 1e6);
        n += 1;
        next += period;
    }
    rtt.sort_by(f64::total_cmp);
    (n, thread_cpu_ns() - cpu0, rtt[rtt.len() / 2])
}

fn session_tid(conn: &mut mysql::Conn) -> u32 {
    conn.query_first::<u32, _>(
        "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
    )
    .expect("TID")
    .expect("a TID")
}

fn thread_ns(pid: u32, tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The library's sampler in each of its plans, interleaved per round.
fn plans(conn: &mut mysql::Conn, pid: u32, secs: f64, hz: f64, rounds: usize) {
    use spinscope::server::collect::{burst_sample_plan, BurstPlan};
    use spinscope::server::proc_threads::{Gate, DEFAULT_GATE};
    let stop = std::sync::atomic::AtomicBool::new(false);
    let every = Gate::Every;
    let sched = Gate::Schedstat { full_every: 10 };
    let group = DEFAULT_GATE;
    let group_nofull = Gate::Group { full_every: 0 };
    let proc = |sql_hz: f64, proc_gate: Gate| BurstPlan {
        hz,
        sql_hz,
        proc_pid: Some(pid),
        proc_gate,
    };
    // "_every": each thread's stat at each sample (as before any gate); "_sched": the
    // schedstat gate (the default before the taskstats group gate); no suffix: the library's
    // default gate (the group gate with a full read every 10th sample); "_nofull": the group
    // gate without full reads.
    let only = 1.0 / (secs * 10.0);
    let cands: Vec<(&str, BurstPlan)> = vec![
        ("sql_only", BurstPlan::sql_only(hz)),
        ("proc_sql10_sched", proc(10.0, sched)),
        ("proc_sql10", proc(10.0, group)),
        ("proc_only_every", proc(only, every)),
        ("proc_only_sched", proc(only, sched)),
        ("proc_only", proc(only, group)),
        ("proc_only_nofull", proc(only, group_nofull)),
    ];
    // SAMPLER_PLANS=a,b,... runs only those plans.
    let only_plans = std::env::var("SAMPLER_PLANS").ok();
    let cands: Vec<(&str, BurstPlan)> = cands
        .into_iter()
        .filter(|(n, _)| {
            only_plans
                .as_deref()
                .is_none_or(|o| o.split(',').any(|x| x == *n))
        })
        .collect();
    let tid = session_tid(conn);
    let mut res: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); cands.len() + 1];
    println!("round\tplan\tsql_samples\tsql_hz\tsql_gap_ms\tproc_samples\tproc_hz\tproc_gap_ms\tserver_pct_core\tsession_pct_core\tclient_pct_core\trtt_p50_us\tproc_running_max\tproc_threads_max\thost_steal_pct_cpu\tclient_us_per_sample");
    for round in 0..rounds {
        let s0 = server_cpu_ns(pid);
        std::thread::sleep(Duration::from_secs_f64(secs));
        let idle = (server_cpu_ns(pid) as f64 - s0 as f64).max(0.0) / (secs * 1e9) * 100.0;
        println!("{round}\tnone\t0\t0\t0\t0\t0\t0\t{idle:.3}\t0\t0\t0\t0\t0\t0\t0");
        res[cands.len()].push((idle, 0.0, 0.0));
        for (i, (name, plan)) in cands.iter().enumerate() {
            let s0 = server_cpu_ns(pid);
            let t0 = thread_ns(pid, tid);
            let st0 = steal_ticks();
            let start = Instant::now();
            let mut notes = Vec::new();
            let r = burst_sample_plan(conn, plan, secs, &stop, &mut notes);
            let el = start.elapsed().as_secs_f64();
            let spct = (server_cpu_ns(pid) as f64 - s0 as f64).max(0.0) / (el * 1e9) * 100.0;
            let sess = (thread_ns(pid, tid) - t0) as f64 / (el * 1e9) * 100.0;
            let cpct = r.sampler_cpu_ns as f64 / (el * 1e9) * 100.0;
            let steal = steal_ticks().saturating_sub(st0) as f64 / el; // ticks/s = % of a CPU
            let st = spinscope::doctor::burst::stats(&r, 2.0).expect("samples");
            let (pn, phz, pgap, pmax) = st.proc_running.as_ref().map_or((0, 0.0, 0.0, 0.0), |p| {
                (p.samples, p.achieved_hz, p.longest_gap_ms, p.running.max)
            });
            let tmax = r
                .proc_running
                .as_ref()
                .and_then(|p| p.points.iter().map(|x| x.threads).max())
                .unwrap_or(0);
            // Per sample of the faster series: comparable when a disturbed round lost rate.
            let per_sample_us = r.sampler_cpu_ns as f64 / 1e3 / (pn.max(st.samples).max(1) as f64);
            println!(
                "{round}\t{name}\t{}\t{:.1}\t{:.1}\t{pn}\t{phz:.1}\t{pgap:.1}\t{spct:.3}\t{sess:.3}\t{cpct:.3}\t{:.0}\t{pmax}\t{tmax}\t{steal:.2}\t{per_sample_us:.1}",
                st.samples, st.achieved_hz, st.longest_gap_ms, r.query_p50_us
            );
            for n in notes {
                println!("# note: {n}");
            }
            res[i].push((spct, sess, cpct));
        }
    }
    println!("# medians over {rounds} rounds of {secs} s at {hz} Hz (server % = whole mariadbd, includes idle; session % = the sampler's server thread)");
    for (i, name) in cands
        .iter()
        .map(|c| c.0)
        .chain(std::iter::once("none"))
        .enumerate()
    {
        let col = |k: usize| -> (f64, f64, f64) {
            let mut v: Vec<f64> = res[i].iter().map(|x| [x.0, x.1, x.2][k]).collect();
            let lo = v.iter().cloned().fold(f64::MAX, f64::min);
            let hi = v.iter().cloned().fold(0.0, f64::max);
            (median(&mut v), lo, hi)
        };
        let (s, slo, shi) = col(0);
        let (m, mlo, mhi) = col(1);
        let (c, clo, chi) = col(2);
        println!(
            "median\t{name}\tserver {s:.3}% [{slo:.3}..{shi:.3}]\tsession {m:.3}% [{mlo:.3}..{mhi:.3}]\tclient {c:.3}% [{clo:.3}..{chi:.3}]"
        );
    }
}

/// What the schedstat gate changes in the /proc count: at 100 Hz, each sample is taken twice
/// back to back, first by the sampler under test, then by a reader of every thread's stat;
/// the control pair is two every-stat readers. Per pair: mean running by each, the share of
/// samples where they differ, and the mean of (first - second).
fn fidelity(pid: u32, secs: f64, hz: f64, rounds: usize) {
    use spinscope::server::proc_threads::{Gate, ProcThreads, DEFAULT_GATE};
    println!("round\tfirst\tsamples\tfirst_mean\tfull_mean\tdiffer_pct\tmean_first_minus_full\tfirst_lower_pct\thost_idle_pct\tgroup_quiet_pct\tthreads_mean\tschedstat_reads_per_sample\tstat_reads_per_sample");
    for round in 0..rounds {
        for (name, gate) in [
            ("every", Gate::Every),
            ("sched", Gate::Schedstat { full_every: 10 }),
            ("group", DEFAULT_GATE),
            ("group_nofull", Gate::Group { full_every: 0 }),
        ] {
            let mut a = ProcThreads::open(pid).expect("server /proc");
            a.set_gate(gate);
            if let Some(why) = a.gate_note() {
                println!("# {name}: {why}; gate in use {:?}", a.gate());
            }
            let mut b = ProcThreads::open(pid).expect("server /proc");
            let period = Duration::from_secs_f64(1.0 / hz);
            let start = Instant::now();
            let mut next = start;
            let (mut n, mut sa, mut sb, mut differ, mut lower, mut diff, mut threads) =
                (0u64, 0u64, 0u64, 0u64, 0u64, 0i64, 0u64);
            while start.elapsed().as_secs_f64() < secs {
                next += period;
                if let Some(d) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
                let (Some(x), Some(y)) = (a.count(), b.count()) else {
                    break;
                };
                n += 1;
                threads += u64::from(x.threads);
                sa += u64::from(x.running);
                sb += u64::from(y.running);
                differ += u64::from(x.running != y.running);
                lower += u64::from(x.running < y.running);
                diff += i64::from(x.running) - i64::from(y.running);
            }
            let nf = n.max(1) as f64;
            let (taken, idle) = a.samples();
            println!(
                "{round}\t{name}\t{n}\t{:.3}\t{:.3}\t{:.2}\t{:.4}\t{:.2}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}",
                sa as f64 / nf,
                sb as f64 / nf,
                differ as f64 / nf * 100.0,
                diff as f64 / nf,
                lower as f64 / nf * 100.0,
                idle as f64 / taken.max(1) as f64 * 100.0,
                a.group_quiet_samples() as f64 / taken.max(1) as f64 * 100.0,
                threads as f64 / nf,
                a.reads().0 as f64 / taken.max(1) as f64,
                a.reads().1 as f64 / taken.max(1) as f64
            );
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: sampler_cost SOCKET PID [SECONDS] [HZ] [ROUNDS] [plans]");
        std::process::exit(2);
    }
    let pid: u32 = a[2].parse().expect("PID");
    let secs: f64 = a.get(3).map_or(10.0, |s| s.parse().expect("SECONDS"));
    let hz: f64 = a.get(4).map_or(100.0, |s| s.parse().expect("HZ"));
    let rounds: usize = a.get(5).map_or(3, |s| s.parse().expect("ROUNDS"));
    let opts = mysql::OptsBuilder::new()
        .socket(Some(a[1].clone()))
        .user(Some("root"))
        .prefer_socket(true);
    if a.get(6).map(String::as_str) == Some("fidelity") {
        fidelity(pid, secs, hz, rounds);
        return;
    }
    let mut conn = mysql::Conn::new(opts).expect("connect");
    if a.get(6).map(String::as_str) == Some("plans") {
        plans(&mut conn, pid, secs, hz, rounds);
        return;
    }
    let cands = candidates();
    let mut res: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); cands.len() + 1];
    println!("round\tcandidate\tqueries\tserver_pct_core\tclient_pct_core\trtt_p50_us");
    for round in 0..rounds {
        let s0 = server_cpu_ns(pid);
        std::thread::sleep(Duration::from_secs_f64(secs));
        let idle = (server_cpu_ns(pid) as f64 - s0 as f64).max(0.0) / (secs * 1e9) * 100.0;
        println!("{round}\tidle\t0\t{idle:.3}\t0\t0");
        res[cands.len()].push((idle, 0.0, 0.0));
        for (i, (name, sql)) in cands.iter().enumerate() {
            let s0 = server_cpu_ns(pid);
            let t0 = Instant::now();
            let (n, ccpu, rtt) = run(&mut conn, sql, hz, secs);
            let el = t0.elapsed().as_secs_f64();
            let spct = (server_cpu_ns(pid) as f64 - s0 as f64).max(0.0) / (el * 1e9) * 100.0;
            let cpct = ccpu as f64 / (el * 1e9) * 100.0;
            println!("{round}\t{name}\t{n}\t{spct:.3}\t{cpct:.3}\t{rtt:.0}");
            res[i].push((spct, cpct, rtt));
        }
    }
    println!("# medians over {rounds} rounds of {secs} s at {hz} Hz (server % includes idle)");
    for (i, name) in cands
        .iter()
        .map(|c| c.0)
        .chain(std::iter::once("idle"))
        .enumerate()
    {
        let mut s: Vec<f64> = res[i].iter().map(|x| x.0).collect();
        let mut c: Vec<f64> = res[i].iter().map(|x| x.1).collect();
        let mut r: Vec<f64> = res[i].iter().map(|x| x.2).collect();
        let (lo, hi) = (
            s.iter().cloned().fold(f64::MAX, f64::min),
            s.iter().cloned().fold(0.0, f64::max),
        );
        println!(
            "median\t{name}\tserver {:.3}% [{lo:.3}..{hi:.3}]\tclient {:.3}%\trtt {:.0} us",
            median(&mut s),
            median(&mut c),
            median(&mut r)
        );
    }
}
