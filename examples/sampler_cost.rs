//! Benchmark: the server CPU that one burst-sampler statement costs at a fixed rate.
//!
//! For each candidate statement, one persistent connection runs it at `HZ` for `SECONDS`;
//! the server's CPU over that time is the sum of the first field of
//! `/proc/PID/task/*/schedstat` (ns on CPU, every thread) before and after, and the client's
//! own CPU is its thread CPU clock. Candidates are run in rounds (interleaved), `ROUNDS`
//! times, after an idle baseline of the same length. Run it on the server's host, as root
//! or the server's user (schedstat of another user's process needs that).
//!
//! Usage: cargo run --release --example sampler_cost -- SOCKET PID [SECONDS] [HZ] [ROUNDS]
//! Output: one line per measurement, then medians per candidate (tab-separated).

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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 3 {
        eprintln!("usage: sampler_cost SOCKET PID [SECONDS] [HZ] [ROUNDS]");
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
    let mut conn = mysql::Conn::new(opts).expect("connect");
    let cands = candidates();
    let mut res: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); cands.len() + 1];
    println!("round\tcandidate\tqueries\tserver_pct_core\tclient_pct_core\trtt_p50_us");
    for round in 0..rounds {
        let s0 = server_cpu_ns(pid);
        std::thread::sleep(Duration::from_secs_f64(secs));
        let idle = (server_cpu_ns(pid) - s0) as f64 / (secs * 1e9) * 100.0;
        println!("{round}\tidle\t0\t{idle:.3}\t0\t0");
        res[cands.len()].push((idle, 0.0, 0.0));
        for (i, (name, sql)) in cands.iter().enumerate() {
            let s0 = server_cpu_ns(pid);
            let t0 = Instant::now();
            let (n, ccpu, rtt) = run(&mut conn, sql, hz, secs);
            let el = t0.elapsed().as_secs_f64();
            let spct = (server_cpu_ns(pid) - s0) as f64 / (el * 1e9) * 100.0;
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
