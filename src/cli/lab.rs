//! `spinscope lab`: flags into a [`LabPlan`], the engine (`crate::lab`), then the tables or
//! JSON and the charts. Measuring, the document and its rendering live in `crate::lab`.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::lab::plan::latch_list;
use crate::lab::{self, render, LabPlan, LatchKind, Progress, SpinParams};
use crate::report;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  spinscope lab --latch innodb57,mysql80,time-budget --threads 8 \\\n    \
    --compare-pause-scale 1,14 --repeats 5\n  spinscope lab --latch futex,ticket --threads 2,4 --json"
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
    /// Print the JSON document (spinscope.lab/2) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write SVG charts (throughput, p99, CPU per op vs threads) into this directory.
    #[arg(long)]
    pub svg_dir: Option<PathBuf>,
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

/// The flags as a validated plan.
pub fn plan(a: &LabArgs, cpus: usize) -> Result<LabPlan> {
    let latches: Vec<LatchKind> = if a.latch.trim() == "all" {
        LatchKind::ALL.to_vec()
    } else {
        a.latch
            .split(',')
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| {
                LatchKind::from_name(s).ok_or_else(|| {
                    Error::bad_input(format!(
                        "--latch: unknown latch '{s}'; known latches: {}, or all",
                        latch_list()
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    let threads: Vec<usize> = match &a.threads {
        Some(s) => parse_list("threads", s, "a thread count")?,
        None => {
            let mut v = vec![1, cpus, 4 * cpus];
            v.dedup();
            v
        }
    };
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
    let p = LabPlan {
        latches,
        threads,
        scales,
        repeats: a.repeats,
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
        relax_auto: a.relax_multiplier.is_none(),
    };
    p.validate()?;
    Ok(p)
}

/// Progress on stderr: a start line when the run takes 2 s or more, then a counter (in place
/// on a terminal, every tenth run otherwise).
fn progress() -> impl FnMut(Progress) {
    let tty = std::io::stderr().is_terminal();
    let mut show = false;
    move |p| match p {
        Progress::Start { runs, est_s } => {
            show = est_s >= 2.0;
            if show {
                eprintln!(
                    "spinscope lab: {runs} runs of {} ms, about {est_s:.0} s (Ctrl-C prints what was measured)",
                    (est_s * 1e3 / runs.max(1) as f64).round()
                );
            }
        }
        Progress::Run {
            done,
            runs,
            point,
            repeat,
        } => {
            if show && (tty || done % (runs / 10).max(1) == 0) {
                let end = if tty { "\r" } else { "\n" };
                eprint!(
                    "  [{done}/{runs}] {} threads={} K={} repeat {repeat}        {end}",
                    point.latch, point.threads, point.pause_scale
                );
                if tty && done == runs {
                    eprintln!();
                }
            }
        }
        Progress::Interrupted { done, runs } => {
            if show && tty {
                eprintln!();
            }
            eprintln!(
                "spinscope lab: interrupted after {done} of {runs} runs; printing what was measured"
            );
        }
    }
}

/// Run the lab; returns 0, or 130 after Ctrl-C with the partial results printed.
pub fn run(a: LabArgs) -> Result<i32> {
    let cpus = lab::harness::allowed_cpus().len();
    let p = plan(&a, cpus)?;
    // Created and test-written before the run: a bad directory never costs a finished run.
    if let Some(dir) = &a.svg_dir {
        crate::files::check_output_dir(dir, "--svg-dir")?;
    }
    // The shared handler (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the engine polls its flag.
    crate::interrupt::install()?;
    let doc = lab::run(&p, &mut progress())?;
    if let Some(dir) = &a.svg_dir {
        for (file, svg) in render::charts(&doc) {
            let path = dir.join(file);
            std::fs::write(&path, svg).map_err(|e| {
                Error::runtime(format!(
                    "writing {}: {e}; check the --svg-dir",
                    path.display()
                ))
            })?;
        }
        eprintln!("spinscope lab: charts written to {}", dir.display());
    }
    if a.json {
        report::print_json(&doc)?;
    } else {
        print!("{}", render::text(&doc));
    }
    Ok(if doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}
