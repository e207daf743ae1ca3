//! `spinscope sweep prepare|run|cleanup`: flags into a [`SweepPlan`], the engine
//! (`crate::sweep`), and the outputs. Measuring is `crate::load`; the document, its analysis
//! and rendering `report::sweep` and `report::sweep_html`.

use crate::analysis::knee::parse_sla;
use crate::cli::units;
use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::files::OutputDir;
use crate::load::spec::{parse_ladder, parse_variants};
use crate::load::workload::{parse_sql_file, Kind};
use crate::load::{schema, ClientKind};
use crate::report::sweep::{self as doc_mod, SweepDoc};
use crate::report::sweep_html;
use crate::server::conn::{self as server_conn, ConnArgs};
use crate::sweep::{self, connector, secs, Connectors, Outputs, SweepPlan};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  spinscope sweep prepare --socket /run/mysqld/mysqld.sock --tables 4 --table-size 100000\n  \
spinscope sweep run --socket /run/mysqld/mysqld.sock --workload write-only --threads 1..64:x2 \\\n    \
--variant d4:innodb_spin_wait_delay=4 --variant d200:innodb_spin_wait_delay=200 --repeat 3 \\\n    \
--sla 'p99<20ms' --save sweep.json --html sweep.html\n  spinscope sweep cleanup --socket /run/mysqld/mysqld.sock"
)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: SweepCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SweepCommand {
    /// Create the scratch schema with sysbench-compatible sbtest tables and load them.
    Prepare(PrepareArgs),
    /// Run the concurrency ladder (and the A/B variants) and analyse it.
    Run(Box<RunArgs>),
    /// Drop the scratch schema (only one spinscope created, unless --force).
    Cleanup(CleanupArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  spinscope sweep prepare --socket /run/mysqld/mysqld.sock --tables 4 --table-size 100000\n  spinscope sweep prepare mysql://bench@db1:3306/ -p --tables 8 --load-threads 4"
)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print help (-h is the host, as in the mysql client).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Scratch schema to create.
    #[arg(long, default_value = "spinscope")]
    pub schema: String,
    /// Number of sbtest tables.
    #[arg(long, default_value_t = 4)]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value_t = 100_000)]
    pub table_size: u64,
    /// Parallel loading connections.
    #[arg(long, default_value_t = 2)]
    pub load_threads: u32,
    /// Write into an existing schema spinscope did not create.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
#[command(
    disable_help_flag = true,
    after_help = "Examples:\n  spinscope sweep cleanup --socket /run/mysqld/mysqld.sock\n  spinscope sweep cleanup bench@db1:3306 -p --schema spinscope"
)]
pub struct CleanupArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print help (-h is the host, as in the mysql client).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Scratch schema to drop.
    #[arg(long, default_value = "spinscope")]
    pub schema: String,
    /// Drop it even if spinscope did not create it.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true, after_help = RUN_AFTER_HELP)]
pub struct RunArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print help (-h is the host, as in the mysql client).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Scratch schema made by `sweep prepare`.
    #[arg(long, default_value = "spinscope")]
    pub schema: String,
    /// point-select, read-only, write-only or read-write (sysbench's oltp mixes).
    #[arg(long, default_value = "point-select", value_parser = units::WORKLOADS)]
    pub workload: String,
    /// Run the statements of FILE instead of a built-in workload (one per line; placeholders
    /// {table} {id} {k} {c} {pad}). Every statement is prepared against the server before any
    /// load or SET GLOBAL; DDL and writes outside the scratch schema are refused.
    #[arg(long, value_name = "FILE")]
    pub sql: Option<PathBuf>,
    /// Allow --sql statements other than SELECT/INSERT/UPDATE/DELETE/REPLACE/transactions
    /// (DDL, SET, CALL ...) and writes to user schemas other than --schema. System schemas
    /// (mysql, sys, performance_schema, information_schema) are never written, with any flag.
    #[arg(long)]
    pub allow_writes_outside: bool,
    /// Thread ladder: 1,2,4,8 or 1..64:x2 or 4..32:+4.
    #[arg(long, default_value = "1,2,4,8,16,32,64")]
    pub threads: String,
    /// Warm-up per step, not counted (bare number: seconds).
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = units::seconds)]
    pub warmup: f64,
    /// Measured window per step: 10s, 500ms (bare number: seconds).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = units::seconds)]
    pub duration: f64,
    /// Open loop: intended transactions per second in total; latency is counted from each
    /// request's intended start (coordinated omission corrected).
    #[arg(long)]
    pub rate: Option<f64>,
    /// A/B variant NAME:var=value[,var=value] (repeatable; NAME:default = unchanged). The first
    /// is the baseline.
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Repeats of every step, interleaved A B A B (a verdict needs 3 or more of 2s or more).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Latency SLA, e.g. p99<5ms.
    #[arg(long)]
    pub sla: Option<String>,
    /// End the ladder once throughput stopped rising and latency keeps growing.
    #[arg(long)]
    pub stop_after_knee: bool,
    /// A throughput line on stderr this often during each step (0: none; progress per step).
    #[arg(long, default_value = "0", value_name = "DURATION", value_parser = units::seconds)]
    pub report_interval: f64,
    /// Print the spinscope.sweep/1 JSON document on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Save the JSON document to FILE after every step.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Save one CSV row per step to FILE after every step.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the SVG charts (throughput.svg, p99.svg) into DIR.
    #[arg(long, value_name = "DIR")]
    pub charts: Option<PathBuf>,
    /// Write a self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Point selects per transaction (read-only, read-write).
    #[arg(long, default_value_t = 10)]
    pub point_selects: u32,
    /// Rows per range query.
    #[arg(long, default_value_t = 100)]
    pub range_size: u64,
    /// Seed of the clients' random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Load client: events (a few threads, each multiplexing its connections) or threads.
    #[arg(long, value_enum, default_value_t)]
    pub client: ClientKind,
    /// Worker threads of the events client (0: one per CPU).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub client_workers: u32,
}

/// `sweep run --help` epilogue: what the table's columns and ratios mean.
const RUN_AFTER_HELP: &str = "Columns of the table: threads = client connections (closed loop: each runs transactions back to back; --rate: on a schedule); rep = repeat; tps = transactions/s in the measured window (warm-up excluded); qps = statements/s, BEGIN and COMMIT included; p50..p99.9, max ms = transaction latency (open loop: from the intended start); errors = failed transactions; N=X*R = concurrency implied by Little's law, throughput X times mean latency R, equal to threads in a healthy closed loop; Little ratio = (N=X*R) / threads, noted when off by more than 10% (below 1: clients spent time outside transactions; above 1: latency counted from intended starts, or a clock problem).\n\nA step is INVALID when its errors exceed 1% of its transactions, the server restarted during it (Uptime), or a variant's setting read differently at its end; it is shown with the reason and left out of the knee, USL, Little and A/B. A first step where every transaction fails stops the sweep (exit 3).\n\nA/B: Welch's t-test on per-repeat throughput, 95% interval; below 3 repeats per variant or 2 s per step the verdict is \"too little data for a verdict\". A variant significantly slower than the baseline is called harmful. The knee needs 3 or more concurrency levels; when throughput falls past it, the report says by how much.\n\nExample:\n  spinscope sweep run --socket /run/mysqld/mysqld.sock --workload read-write --threads 1..64:x2 \\\n    --variant base:default --variant d4:innodb_spin_wait_delay=4 --repeat 3 --duration 5";

pub fn run(args: SweepArgs) -> Result<i32> {
    match args.command {
        SweepCommand::Prepare(a) => {
            schema::check_schema_name(&a.schema)?;
            schema::check_prepare_sizes(a.tables, a.table_size, a.load_threads)?;
            let c = connector(&server_conn::resolve(&a.conn)?, None);
            let mut shown = crate::cli::progress::Prepare::new(&a.schema);
            let (t, n, lt, f) = (a.tables, a.table_size, a.load_threads, a.force);
            schema::prepare(&c, &a.schema, t, n, lt, f, &mut |e| shown.event(e))?;
            Ok(EXIT_OK)
        }
        SweepCommand::Cleanup(a) => {
            schema::check_schema_name(&a.schema)?;
            let c = connector(&server_conn::resolve(&a.conn)?, None);
            let mut shown = crate::cli::progress::Stderr::default();
            schema::cleanup(&c, &a.schema, a.force, &mut shown)?;
            Ok(EXIT_OK)
        }
        SweepCommand::Run(a) => run_sweep(*a),
    }
}

/// The flags as a plan; every input checked before connecting.
fn plan(a: &RunArgs) -> Result<SweepPlan> {
    // No output is the --sql input or another output, before anything is read.
    let outs: Vec<(&str, &std::path::Path)> =
        [("--save", &a.save), ("--csv", &a.csv), ("--html", &a.html)]
            .into_iter()
            .filter_map(|(f, p)| Some((f, p.as_deref()?)))
            .collect();
    let ins: Vec<(&str, &std::path::Path)> = a.sql.iter().map(|p| ("--sql", p.as_path())).collect();
    crate::files::refuse_same(&ins, &outs)?;
    let ladder = parse_ladder(&a.threads).map_err(Error::bad_input)?;
    let variants = parse_variants(&a.variants).map_err(Error::bad_input)?;
    let (kind, custom) = match &a.sql {
        Some(path) => {
            let text = crate::files::read_capped(path, 16 << 20, "--sql")?;
            let stmts = parse_sql_file(&text).map_err(Error::bad_input)?;
            (Kind::Custom, stmts)
        }
        None => (
            Kind::parse(&a.workload).map_err(Error::bad_input)?,
            Vec::new(),
        ),
    };
    let mut p = SweepPlan::new(&a.schema, kind, ladder, variants);
    p.custom = custom;
    p.sql_file = a.sql.as_ref().map(|p| p.display().to_string());
    p.allow_writes_outside = a.allow_writes_outside;
    p.sla = a
        .sla
        .as_deref()
        .map(parse_sla)
        .transpose()
        .map_err(Error::bad_input)?;
    p.repeat = a.repeat;
    p.rate = a.rate;
    p.stop_after_knee = a.stop_after_knee;
    p.point_selects = a.point_selects;
    p.range_size = a.range_size;
    p.seed = a.seed;
    (p.client, p.client_workers) = (a.client, a.client_workers);
    p.warmup = secs("--warmup", a.warmup, 0.0, 3600.0)?;
    p.duration = secs("--duration", a.duration, 0.2, 86_400.0)?;
    p.report_interval = match a.report_interval {
        0.0 => None,
        v => Some(secs("--report-interval", v, 0.1, 3600.0)?),
    };
    p.outputs = Outputs {
        save: a.save.clone(),
        csv: a.csv.clone(),
    };
    p.validate()?;
    Ok(p)
}

fn run_sweep(a: RunArgs) -> Result<i32> {
    let plan = plan(&a)?;
    // Every output checked before any load starts.
    if let Some(p) = &a.html {
        crate::files::check_output(p, "--html")?;
    }
    let charts = a.charts.as_ref();
    let charts = charts
        .map(|d| OutputDir::open(d, sweep_html::chart_files(), "--charts", true))
        .transpose()?;
    let target = server_conn::resolve(&a.conn)?;
    crate::interrupt::set_query_timeout(target.query_timeout);
    let conns = Connectors::for_target(&target, &plan.schema);
    let done = sweep::run(&plan, &conns, &mut crate::cli::progress::Sweep::default())?;
    // The error that stopped the sweep (a refusal, a failed step) is printed once, on stderr,
    // by main; the text report shows what `shown` keeps. The saved document and --json keep
    // the reason.
    let shown = done.shown();
    write_outputs(shown.as_ref(), &done.doc, &a, charts.as_ref())?;
    if let Some(e) = done.error {
        return Err(e);
    }
    Ok(if done.doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

/// `shown` is what stdout's text report shows (None: nothing), `doc` the whole document for
/// the files and --json.
fn write_outputs(
    shown: Option<&SweepDoc>,
    doc: &SweepDoc,
    a: &RunArgs,
    charts: Option<&OutputDir>,
) -> Result<()> {
    if let Some(out) = charts {
        out.write(&sweep_html::charts(doc))?;
    }
    if let Some(p) = &a.html {
        crate::files::write_atomic(p, sweep_html::html(doc).as_bytes(), "--html", true)?;
    }
    if a.json {
        crate::cli::print_json(doc)?;
    } else if let Some(shown) = shown {
        print!("{}", doc_mod::render(shown));
    }
    Ok(())
}
