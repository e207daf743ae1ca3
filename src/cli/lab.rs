//! `spinscope lab`: arguments, validation and rendering of the contention laboratory
//! (issue 4). Measuring is in `crate::lab`; summaries and verdicts in `analysis::lab_stats`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::analysis::lab_stats::{change_pct, compare_story, judge, Movement};
use crate::analysis::stats::{summarize, Summary};
use crate::error::{Error, Result, EXIT_OK};
use crate::lab::{self, clock, RunMetrics, SpinParams, Workload, LATCH_NAMES};
use crate::report::{self, chart, fmt_ns, fmt_num};

/// JSON schema id of the lab document.
pub const SCHEMA: &str = "spinscope.lab/1";
/// Exit code after Ctrl-C (128 + SIGINT), once the partial results are printed.
pub const EXIT_INTERRUPTED: i32 = 130;
const MAX_THREADS: usize = 1024;
const MIN_DURATION_MS: u64 = 20;
const MAX_DURATION_MS: u64 = 600_000;
const MAX_PAUSE_SCALE: u32 = 1000;
/// `time-budget` "stays the same" when within this many percent (issue 4 §6).
const STABLE_PCT: f64 = 10.0;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example: spinscope lab --latch innodb57,mysql80,time-budget --threads 8 \
    --compare-pause-scale 1,14 --repeats 5"
)]
pub struct LabArgs {
    /// Latches, comma-separated, or "all": innodb57, mysql80, mariadb106, time-budget, futex,
    /// std, parking-lot, ticket, mcs, sharded.
    #[arg(long, default_value = "all")]
    pub latch: String,
    /// Thread counts, comma-separated (oversubscription allowed). Default: 1, cores, 4x cores.
    #[arg(long)]
    pub threads: Option<String>,
    /// Execute each spin hint K times, emulating a CPU whose hint is K times slower
    /// (14 = Broadwell -> Skylake-SP).
    #[arg(long, default_value_t = 1)]
    pub pause_scale: u32,
    /// Run every point at two pause scales "A,B" and print which latches move.
    #[arg(long)]
    pub compare_pause_scale: Option<String>,
    /// Duration of one measured point, in ms.
    #[arg(long, default_value_t = 200)]
    pub duration_ms: u64,
    /// Repeats of every point (interleaved), for the spread.
    #[arg(long, default_value_t = 3)]
    pub repeats: u32,
    /// Busy work inside the critical section, in ns.
    #[arg(long, default_value_t = 200)]
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    #[arg(long, default_value_t = 1)]
    pub cs_lines: usize,
    /// Busy work between operations (think time), in ns.
    #[arg(long, default_value_t = 200)]
    pub think_ns: u64,
    /// Pin worker i to CPU i mod cores.
    #[arg(long)]
    pub pin: bool,
    /// Stride of per-thread counters in bytes: 0 (packed: false sharing), 64 or 128.
    #[arg(long, default_value_t = 64)]
    pub padding: usize,
    /// innodb_spin_wait_delay (d) of innodb57, mysql80 and sharded.
    #[arg(long, default_value_t = 6)]
    pub spin_wait_delay: u32,
    /// innodb_sync_spin_loops (L) of all InnoDB-style latches.
    #[arg(long, default_value_t = 30)]
    pub sync_spin_loops: u32,
    /// innodb_spin_wait_pause_multiplier (m) of mysql80 and sharded.
    #[arg(long, default_value_t = 50)]
    pub pause_multiplier: u32,
    /// MariaDB's innodb_spin_wait_delay (d) of mariadb106.
    #[arg(long, default_value_t = 4)]
    pub mariadb_delay: u32,
    /// MariaDB's my_cpu_relax_multiplier (M): 100 or 200; default: chosen like my_cpu_init()
    /// from the measured (scaled) hint.
    #[arg(long)]
    pub relax_multiplier: Option<u32>,
    /// Spin budget of time-budget, in ns.
    #[arg(long, default_value_t = 20_000)]
    pub budget_ns: u64,
    /// Shards of the sharded latch.
    #[arg(long, default_value_t = 8)]
    pub shards: usize,
    /// Print the JSON document (spinscope.lab/1) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write SVG charts (throughput, p99, CPU per op vs threads) into this directory.
    #[arg(long)]
    pub svg_dir: Option<PathBuf>,
}

/// Facts about the machine and the timer, reported with every run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cpus: usize,
    pub has_tsc: bool,
    pub tsc_ticks_per_ns: f64,
    /// Cost of one timer read (included in every acquire latency).
    pub timer_cost_ns: f64,
    /// Latency of one unscaled spin hint.
    pub hint_ns: f64,
}

/// One point (latch, threads, pause scale) over its repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub latch: String,
    pub threads: usize,
    pub pause_scale: u32,
    /// MariaDB's M used for this point (mariadb106 only; else null).
    pub relax_multiplier: Option<u32>,
    pub runs: Vec<RunMetrics>,
    pub ops_per_s: Option<Summary>,
    pub cpu_ns_per_op: Option<Summary>,
    pub acquire_p99_ns: Option<Summary>,
    pub hints_per_acquire: Option<Summary>,
    pub fairness: Option<Summary>,
    pub lost_updates: u64,
}

/// One row of the `--compare-pause-scale A,B` story.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareRow {
    pub latch: String,
    pub threads: usize,
    pub base_scale: u32,
    pub new_scale: u32,
    pub ops_change_pct: f64,
    pub ops_movement: Movement,
    pub cpu_change_pct: f64,
    pub cpu_movement: Movement,
}

/// The `spinscope.lab/1` document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabDoc {
    pub schema: String,
    pub machine: Machine,
    pub workload: Workload,
    pub repeats: u32,
    pub points: Vec<Point>,
    pub compare: Vec<CompareRow>,
    pub interrupted: bool,
}

struct Plan {
    latches: Vec<String>,
    threads: Vec<usize>,
    scales: Vec<u32>,
    base: Workload,
    repeats: u32,
    /// Pick MariaDB's M per pause scale like `my_cpu_init()` (no --relax-multiplier given).
    relax_auto: bool,
}

fn parse_list<T: std::str::FromStr>(flag: &str, s: &str, what: &str) -> Result<Vec<T>> {
    s.split(',')
        .map(|x| x.trim())
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<T>()
                .map_err(|_| Error::bad_input(format!("--{flag} {s}: '{x}' is not {what}")))
        })
        .collect()
}

fn check_range<T: PartialOrd + std::fmt::Display>(
    flag: &str,
    v: T,
    lo: T,
    hi: T,
    why: &str,
) -> Result<()> {
    if v < lo || v > hi {
        return Err(Error::bad_input(format!(
            "--{flag} {v} is out of range: use {lo}..={hi}{why}"
        )));
    }
    Ok(())
}

fn plan(a: &LabArgs, cpus: usize) -> Result<Plan> {
    let latches: Vec<String> = if a.latch.trim() == "all" {
        LATCH_NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        a.latch
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    if latches.is_empty() {
        return Err(Error::bad_input(format!(
            "--latch is empty; known latches: {}, or all",
            LATCH_NAMES.join(", ")
        )));
    }
    for l in &latches {
        if !LATCH_NAMES.contains(&l.as_str()) {
            return Err(Error::bad_input(format!(
                "--latch: unknown latch '{l}'; known latches: {}, or all",
                LATCH_NAMES.join(", ")
            )));
        }
    }
    let threads: Vec<usize> = match &a.threads {
        Some(s) => parse_list("threads", s, "a thread count")?,
        None => {
            let mut v = vec![1, cpus, 4 * cpus];
            v.dedup();
            v
        }
    };
    if threads.is_empty() {
        return Err(Error::bad_input(
            "--threads is empty: give counts like 1,2,8",
        ));
    }
    for &t in &threads {
        check_range("threads", t, 1, MAX_THREADS, "")?;
    }
    let scales: Vec<u32> = match &a.compare_pause_scale {
        Some(s) => {
            let v: Vec<u32> = parse_list("compare-pause-scale", s, "a pause scale")?;
            if v.len() != 2 {
                return Err(Error::bad_input(format!(
                    "--compare-pause-scale {s}: give exactly two scales, like 1,14"
                )));
            }
            v
        }
        None => vec![a.pause_scale],
    };
    for &k in &scales {
        check_range(
            "pause-scale",
            k,
            1,
            MAX_PAUSE_SCALE,
            " (1 = the hint as is, 14 = Skylake-SP vs Broadwell)",
        )?;
    }
    check_range(
        "duration-ms",
        a.duration_ms,
        MIN_DURATION_MS,
        MAX_DURATION_MS,
        " (shorter is too short to measure)",
    )?;
    check_range("repeats", a.repeats, 1, 100, "")?;
    check_range("cs-ns", a.cs_ns, 0, 10_000_000, "")?;
    check_range("think-ns", a.think_ns, 0, 10_000_000, "")?;
    check_range("cs-lines", a.cs_lines, 0, 65_536, "")?;
    if ![0, 64, 128].contains(&a.padding) {
        return Err(Error::bad_input(format!(
            "--padding {}: use 0, 64 or 128",
            a.padding
        )));
    }
    check_range("spin-wait-delay", a.spin_wait_delay, 0, 6000, "")?;
    check_range("mariadb-delay", a.mariadb_delay, 0, 6000, "")?;
    check_range("sync-spin-loops", a.sync_spin_loops, 0, 1_000_000, "")?;
    check_range("pause-multiplier", a.pause_multiplier, 0, 100, "")?;
    if let Some(m) = a.relax_multiplier {
        check_range("relax-multiplier", m, 4, 1000, " (MariaDB uses 100 or 200)")?;
    }
    check_range("budget-ns", a.budget_ns, 0, 100_000_000, "")?;
    check_range("shards", a.shards, 1, 4096, "")?;
    let base = Workload {
        latch: String::new(),
        threads: 0,
        pause_scale: 1,
        duration_ms: a.duration_ms,
        cs_ns: a.cs_ns,
        cs_lines: a.cs_lines,
        think_ns: a.think_ns,
        pin: a.pin,
        padding: a.padding,
        params: SpinParams {
            delay: a.spin_wait_delay,
            loops: a.sync_spin_loops,
            multiplier: a.pause_multiplier,
            relax_multiplier: a.relax_multiplier.unwrap_or(200),
            mariadb_delay: a.mariadb_delay,
            budget_ns: a.budget_ns,
            shards: a.shards,
        },
    };
    Ok(Plan {
        latches,
        threads,
        scales,
        base,
        repeats: a.repeats,
        relax_auto: a.relax_multiplier.is_none(),
    })
}

extern "C" fn on_sigint(_: libc::c_int) {
    lab::INTERRUPTED.store(true, Ordering::Relaxed);
}

fn install_sigint() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

/// Run the lab; returns 0, or 130 after Ctrl-C with the partial results printed.
pub fn run(a: LabArgs) -> Result<i32> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let p = plan(&a, cpus)?;
    if let Some(dir) = &a.svg_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::bad_input(format!(
                "--svg-dir {}: cannot create it ({e}); choose a writable directory",
                dir.display()
            ))
        })?;
    }
    install_sigint();
    let machine = Machine {
        cpus,
        has_tsc: clock::HAS_TSC,
        tsc_ticks_per_ns: clock::ticks_per_ns(),
        timer_cost_ns: clock::timer_cost_ns(),
        hint_ns: clock::hint_ns(),
    };
    let doc = measure(&p, machine)?;
    if let Some(dir) = &a.svg_dir {
        write_charts(&doc, dir)?;
    }
    if a.json {
        report::print_json(&doc)?;
    } else {
        print_tables(&doc);
    }
    Ok(if doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

fn measure(p: &Plan, machine: Machine) -> Result<LabDoc> {
    // M per scale, as MariaDB would pick it on a CPU with that hint (unless given).
    let relax: Vec<u32> = p
        .scales
        .iter()
        .map(|&k| {
            if !p.relax_auto || !clock::HAS_TSC {
                p.base.params.relax_multiplier
            } else {
                crate::lab::latch::mariadb_relax_multiplier(clock::hint_ticks_like_mariadb(k))
            }
        })
        .collect();
    let mut points: Vec<Point> = Vec::new();
    for (si, &k) in p.scales.iter().enumerate() {
        for l in &p.latches {
            for &t in &p.threads {
                points.push(Point {
                    latch: l.clone(),
                    threads: t,
                    pause_scale: k,
                    relax_multiplier: (l == "mariadb106").then_some(relax[si]),
                    runs: Vec::new(),
                    ops_per_s: None,
                    cpu_ns_per_op: None,
                    acquire_p99_ns: None,
                    hints_per_acquire: None,
                    fairness: None,
                    lost_updates: 0,
                });
            }
        }
    }
    let total = points.len() * p.repeats as usize;
    let est_s = total as f64 * p.base.duration_ms as f64 / 1e3;
    let tty = std::io::stderr().is_terminal();
    let show = est_s >= 2.0;
    if show {
        eprintln!(
            "spinscope lab: {total} runs of {} ms, about {:.0} s (Ctrl-C prints what was measured)",
            p.base.duration_ms, est_s
        );
    }
    let mut done = 0usize;
    let mut interrupted = false;
    // Repeats are interleaved (all points once, then again) so drift spreads over every point.
    'outer: for rep in 0..p.repeats {
        for (i, pt) in points.iter_mut().enumerate() {
            if lab::INTERRUPTED.load(Ordering::Relaxed) {
                interrupted = true;
                break 'outer;
            }
            let mut w = p.base.clone();
            w.latch = pt.latch.clone();
            w.threads = pt.threads;
            w.pause_scale = pt.pause_scale;
            if let Some(m) = pt.relax_multiplier {
                w.params.relax_multiplier = m;
            }
            let m = lab::run_point(&w, (rep as u64) << 32 | i as u64)?;
            if m.interrupted {
                interrupted = true;
                break 'outer;
            }
            pt.runs.push(m);
            done += 1;
            if show && (tty || done % (total / 10).max(1) == 0) {
                let end = if tty { "\r" } else { "\n" };
                eprint!(
                    "  [{done}/{total}] {} threads={} K={} repeat {}        {end}",
                    pt.latch,
                    pt.threads,
                    pt.pause_scale,
                    rep + 1
                );
            }
        }
    }
    if show && tty {
        eprintln!();
    }
    if interrupted {
        eprintln!(
            "spinscope lab: interrupted after {done} of {total} runs; printing what was measured"
        );
    }
    for pt in &mut points {
        let col = |f: fn(&RunMetrics) -> f64| summarize(&pt.runs.iter().map(f).collect::<Vec<_>>());
        pt.ops_per_s = col(|r| r.ops_per_s);
        pt.cpu_ns_per_op = col(|r| r.cpu_ns_per_op);
        pt.acquire_p99_ns = col(|r| r.acquire_p99_ns);
        pt.hints_per_acquire = col(|r| r.hints_per_acquire);
        pt.fairness = col(|r| r.fairness);
        pt.lost_updates = pt.runs.iter().map(|r| r.lost_updates).sum();
    }
    let compare = compare_rows(&points, &p.scales);
    let mut workload = p.base.clone();
    workload.latch = p.latches.join(",");
    workload.pause_scale = p.scales[0];
    Ok(LabDoc {
        schema: SCHEMA.into(),
        machine,
        workload,
        repeats: p.repeats,
        points,
        compare,
        interrupted,
    })
}

/// Pair every point at the first scale with the same point at the second.
fn compare_rows(points: &[Point], scales: &[u32]) -> Vec<CompareRow> {
    let [a, b] = scales else { return Vec::new() };
    let mut rows = Vec::new();
    for base in points.iter().filter(|p| p.pause_scale == *a) {
        let Some(new) = points
            .iter()
            .find(|p| p.pause_scale == *b && p.latch == base.latch && p.threads == base.threads)
        else {
            continue;
        };
        let (Some(bo), Some(no), Some(bc), Some(nc)) = (
            base.ops_per_s,
            new.ops_per_s,
            base.cpu_ns_per_op,
            new.cpu_ns_per_op,
        ) else {
            continue;
        };
        rows.push(CompareRow {
            latch: base.latch.clone(),
            threads: base.threads,
            base_scale: *a,
            new_scale: *b,
            ops_change_pct: change_pct(bo.median, no.median),
            ops_movement: judge(&bo, &no, STABLE_PCT),
            cpu_change_pct: change_pct(bc.median, nc.median),
            cpu_movement: judge(&bc, &nc, STABLE_PCT),
        });
    }
    rows
}

fn med_spread(s: &Option<Summary>, f: fn(f64) -> String) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ±{:.0}%", f(s.median), s.iqr_pct / 2.0),
        Some(s) => f(s.median),
        None => "-".into(),
    }
}

fn print_tables(doc: &LabDoc) {
    let m = &doc.machine;
    println!(
        "spinscope lab: {} CPUs, hint {:.1} ns, TSC {:.3} GHz{}, timer cost {:.1} ns (included in acquire latencies); {} repeat(s) of {} ms; cs {} ns, think {} ns",
        m.cpus,
        m.hint_ns,
        m.tsc_ticks_per_ns,
        if m.has_tsc { "" } else { " (no TSC: monotonic clock)" },
        m.timer_cost_ns,
        doc.repeats,
        doc.workload.duration_ms,
        doc.workload.cs_ns,
        doc.workload.think_ns
    );
    let mut t = report::table(&[
        "latch",
        "threads",
        "K",
        "ops/s",
        "acq p99",
        "CPU/op",
        "vcs/op",
        "ivcs/op",
        "hints/acq",
        "futex/acq",
        "fair",
        "lost",
    ]);
    for p in &doc.points {
        let med = |f: fn(&RunMetrics) -> f64| {
            summarize(&p.runs.iter().map(f).collect::<Vec<_>>())
                .map(|s| s.median)
                .unwrap_or(f64::NAN)
        };
        t.add_row(vec![
            p.latch.clone(),
            p.threads.to_string(),
            p.pause_scale.to_string(),
            med_spread(&p.ops_per_s, fmt_num),
            med_spread(&p.acquire_p99_ns, fmt_ns),
            med_spread(&p.cpu_ns_per_op, fmt_ns),
            fmt_num(med(|r| r.voluntary_cs_per_op)),
            fmt_num(med(|r| r.involuntary_cs_per_op)),
            fmt_num(med(|r| r.hints_per_acquire)),
            fmt_num(med(|r| r.futex_waits_per_acquire)),
            p.fairness
                .map(|s| format!("{:.2}", s.median))
                .unwrap_or_else(|| "-".into()),
            p.lost_updates.to_string(),
        ]);
    }
    println!("{t}");
    println!(
        "(± is half the interquartile range over repeats, in % of the median; lost must be 0)"
    );
    if !doc.compare.is_empty() {
        let (a, b) = (doc.compare[0].base_scale, doc.compare[0].new_scale);
        println!(
            "\nWhen the spin hint gets {}x slower (pause scale {a} -> {b}):",
            b / a.max(1)
        );
        let mut t = report::table(&[
            "latch",
            "threads",
            "ops/s change",
            "",
            "CPU/op change",
            "",
            "story",
        ]);
        for r in &doc.compare {
            let story = compare_story(&r.latch, r.ops_movement, r.cpu_movement, r.ops_change_pct);
            t.add_row(vec![
                r.latch.clone(),
                r.threads.to_string(),
                format!("{:+.1}%", r.ops_change_pct),
                format!("{:?}", r.ops_movement).to_lowercase(),
                format!("{:+.1}%", r.cpu_change_pct),
                format!("{:?}", r.cpu_movement).to_lowercase(),
                story.into(),
            ]);
        }
        println!("{t}");
        println!("(stable = within {STABLE_PCT}%; changed = beyond it with non-overlapping repeat ranges; unclear = beyond it, ranges overlap)");
    }
    if doc.interrupted {
        println!("(interrupted: points above have fewer repeats than asked)");
    }
}

fn write_charts(doc: &LabDoc, dir: &std::path::Path) -> Result<()> {
    let mut scales: Vec<u32> = doc.points.iter().map(|p| p.pause_scale).collect();
    scales.dedup();
    type Metric = fn(&Point) -> Option<f64>;
    let charts: [(&str, &str, Metric); 3] = [
        ("throughput", "operations/s", |p| {
            p.ops_per_s.map(|s| s.median)
        }),
        ("p99", "acquire p99 (ns)", |p| {
            p.acquire_p99_ns.map(|s| s.median)
        }),
        ("cpu_per_op", "CPU ns per operation", |p| {
            p.cpu_ns_per_op.map(|s| s.median)
        }),
    ];
    for &k in &scales {
        for (file, ylabel, f) in charts {
            let mut names: Vec<&str> = doc.points.iter().map(|p| p.latch.as_str()).collect();
            names.dedup();
            let series: Vec<chart::Series> = names
                .iter()
                .map(|n| chart::Series {
                    name: n.to_string(),
                    points: doc
                        .points
                        .iter()
                        .filter(|p| p.latch == *n && p.pause_scale == k)
                        .map(|p| (p.threads as f64, f(p).unwrap_or(f64::NAN)))
                        .collect(),
                })
                .collect();
            let svg = chart::line_chart(
                &format!("{ylabel} vs threads, pause scale {k}"),
                "threads",
                ylabel,
                &series,
            );
            let path = dir.join(format!("lab_{file}_k{k}.svg"));
            std::fs::write(&path, svg).map_err(|e| {
                Error::runtime(format!(
                    "writing {}: {e}; check the --svg-dir",
                    path.display()
                ))
            })?;
        }
    }
    eprintln!("spinscope lab: charts written to {}", dir.display());
    Ok(())
}
