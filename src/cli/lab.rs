//! `spinscope lab`: flags into a [`LabPlan`], the engine (`crate::lab`), then the tables or
//! JSON and the charts. Measuring and the document live in `crate::lab`, its rendering in
//! `report::lab`.

use std::path::PathBuf;

use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::files::OutputDir;
use crate::lab::plan::latch_list;
use crate::lab::{self, LabPlan, LatchKind, SpinParams};
use crate::report;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  spinscope lab --latch innodb57,mysql80,time-budget --threads 8 \\\n    \
    --compare-pause-scale 1,14 --repeat 5\n  spinscope lab --latch futex,ticket --threads 1..8:x2 --duration 100ms --json\n  \
    spinscope lab --latch mcs --cs-ns 2us --think-ns 1us --charts lab-charts"
)]
pub struct LabArgs {
    /// Latches, comma-separated, or all.
    #[arg(long, default_value = "all", value_delimiter = ',', value_name = "LATCH,...", value_parser = latch_values())]
    pub latch: Vec<String>,
    /// Thread counts: a list 1,4,16 or a ladder 1..64:x2 (oversubscription allowed).
    /// Default: 1, cores, 4x cores.
    #[arg(long, value_name = "LADDER")]
    pub threads: Option<String>,
    /// Execute each spin hint K times, emulating a CPU whose hint is K times slower
    /// (14 = Broadwell -> Skylake-SP).
    #[arg(long, default_value_t = 1)]
    pub pause_scale: u32,
    /// Run every point at two pause scales "A,B" and print which latches move.
    #[arg(long)]
    pub compare_pause_scale: Option<String>,
    /// Duration of one measured run: 200ms, 1s (bare number: seconds).
    #[arg(long, default_value = "200ms", value_name = "DURATION", value_parser = super::units::seconds)]
    pub duration: f64,
    /// Old form of --duration, in milliseconds (kept for one release).
    #[arg(long, hide = true, conflicts_with = "duration", value_name = "MS")]
    pub duration_ms: Option<u64>,
    /// Repeats of every point (interleaved), for the spread.
    #[arg(long, alias = "repeats", default_value_t = 3, value_name = "N")]
    pub repeat: u32,
    /// Busy work inside the critical section: 200ns, 2us (bare number: nanoseconds).
    #[arg(long, default_value = "200ns", value_name = "DURATION", value_parser = super::units::nanos)]
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    #[arg(long, default_value_t = 1)]
    pub cs_lines: usize,
    /// Busy work between operations (think time) (bare number: nanoseconds).
    #[arg(long, default_value = "200ns", value_name = "DURATION", value_parser = super::units::nanos)]
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
    /// Spin budget of time-budget: 20us (bare number: nanoseconds).
    #[arg(long, default_value = "20us", value_name = "DURATION", value_parser = super::units::nanos)]
    pub budget_ns: u64,
    /// Shards of the sharded latch.
    #[arg(long, default_value_t = 8)]
    pub shards: usize,
    /// Print the JSON document (spinscope.lab/2) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Write SVG charts (throughput, p99, CPU per op vs threads) into this directory.
    #[arg(long, alias = "svg-dir", value_name = "DIR")]
    pub charts: Option<PathBuf>,
}

/// The latch names with their descriptions, and `all`, for --latch's possible values.
fn latch_values() -> clap::builder::PossibleValuesParser {
    let mut v: Vec<clap::builder::PossibleValue> = LatchKind::ALL
        .iter()
        .map(|k| clap::builder::PossibleValue::new(k.name()).help(k.description()))
        .collect();
    v.push(clap::builder::PossibleValue::new("all").help("every latch above"));
    clap::builder::PossibleValuesParser::new(v)
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
    let latches: Vec<LatchKind> = if a.latch.iter().any(|l| l == "all") {
        LatchKind::ALL.to_vec()
    } else {
        a.latch
            .iter()
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
        Some(s) => super::units::ladder(s)
            .map_err(|e| Error::bad_input(format!("--threads {s}: {e}")))?
            .into_iter()
            .map(|t| t as usize)
            .collect(),
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
        repeats: a.repeat,
        duration_ms: a
            .duration_ms
            .unwrap_or_else(|| (a.duration * 1e3).round().clamp(0.0, 1e12) as u64),
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

/// Run the lab; returns 0, or 130 after Ctrl-C with the partial results printed.
pub fn run(a: LabArgs) -> Result<i32> {
    let cpus = lab::harness::allowed_cpus().len();
    let p = plan(&a, cpus)?;
    // Every chart file checked before the run: a bad directory never costs a finished run.
    let charts = match &a.charts {
        Some(dir) => Some(OutputDir::open(
            dir,
            report::lab::chart_files(&p),
            "--charts",
            false,
        )?),
        None => None,
    };
    // The shared handler (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the engine polls its flag.
    crate::interrupt::install()?;
    let doc = lab::run(&p, &mut crate::cli::progress::lab())?;
    if let Some(out) = &charts {
        out.write(&report::lab::charts(&doc))?;
        eprintln!("spinscope lab: charts written to {}", out.dir().display());
    }
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!("{}", report::lab::text(&doc));
    }
    Ok(if doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}
