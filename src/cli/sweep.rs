//! `spinscope sweep prepare|run|cleanup` (issue 3): load at rising concurrency, the knee, the
//! USL fit, and A/B of settings with a verdict. Measuring is in `crate::load`; statistics in
//! `crate::analysis`; rendering in `report::sweep` and `report::sweep_html`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use mysql::prelude::Queryable;

use crate::analysis::knee::{self, little_check, parse_sla, StepPoint};
use crate::analysis::validity::{invalid_reason, StepHealth};
use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::load::driver::{run_step, ServerProbe, StepConfig, StepOutcome};
use crate::load::guard::SettingsGuard;
use crate::load::spec::{parse_ladder, parse_variants};
use crate::load::workload::{check_custom, parse_sql_file, Kind, Mix, Workload};
use crate::load::{self, schema, Connector};
use crate::report::sweep::{
    self as doc_mod, HistogramDoc, Latency, OpenLoop, ServerInfo, StepDoc, StmtStats, SweepConfig,
    SweepDoc, HIST_ENCODING,
};
use crate::report::sweep_html;
use crate::server::conn::{self as server_conn, ConnArgs, Target};

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
    #[arg(long, default_value = "point-select")]
    pub workload: String,
    /// Run the statements of FILE instead of a built-in workload (one per line; placeholders
    /// {table} {id} {k} {c} {pad}). Every statement is prepared against the server before any
    /// load or SET GLOBAL; DDL and writes outside the scratch schema are refused.
    #[arg(long, value_name = "FILE")]
    pub sql: Option<PathBuf>,
    /// Allow --sql statements other than SELECT/INSERT/UPDATE/DELETE/REPLACE/transactions
    /// (DDL, SET, CALL ...) and writes to schemas other than --schema.
    #[arg(long)]
    pub allow_writes_outside: bool,
    /// Thread ladder: 1,2,4,8 or 1..64:x2 or 4..32:+4.
    #[arg(long, default_value = "1,2,4,8,16,32,64")]
    pub threads: String,
    /// Warm-up per step, seconds (not counted).
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// Measured window per step, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Open loop: intended transactions per second in total; latency is counted from each
    /// request's intended start (coordinated omission corrected).
    #[arg(long)]
    pub rate: Option<f64>,
    /// A/B variant NAME:var=value[,var=value] (repeatable; NAME:default = unchanged). The first
    /// is the baseline.
    #[arg(long = "variant")]
    pub variants: Vec<String>,
    /// Repeats of every step, interleaved A B A B (an A/B verdict needs at least 3, each with
    /// --duration 2 or more).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Latency SLA, e.g. p99<5ms.
    #[arg(long)]
    pub sla: Option<String>,
    /// End the ladder once throughput stopped rising and latency keeps growing.
    #[arg(long)]
    pub stop_after_knee: bool,
    /// Progress line period on stderr in seconds (0: none).
    #[arg(long, default_value_t = 1.0)]
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
}

/// `sweep run --help` epilogue: what the table's columns and ratios mean.
const RUN_AFTER_HELP: &str = "Columns of the table: threads = client connections (closed loop: each runs transactions back to back; --rate: on a schedule); rep = repeat; tps = transactions/s in the measured window (warm-up excluded); qps = statements/s, BEGIN and COMMIT included; p50..p99.9, max ms = transaction latency (open loop: from the intended start); errors = failed transactions; N=X*R = concurrency implied by Little's law, throughput X times mean latency R, equal to threads in a healthy closed loop; Little ratio = (N=X*R) / threads, noted when off by more than 10% (below 1: clients spent time outside transactions; above 1: latency counted from intended starts, or a clock problem).\n\nA step is INVALID when its errors exceed 1% of its transactions, the server restarted during it (Uptime), or a variant's setting read differently at its end; it is shown with the reason and left out of the knee, USL, Little and A/B. A first step where every transaction fails stops the sweep (exit 3).\n\nA/B: Welch's t-test on per-repeat throughput, 95% interval; below 3 repeats per variant or 2 s per step the verdict is \"too little data for a verdict\". A variant significantly slower than the baseline is called harmful. The knee needs 3 or more concurrency levels; when throughput falls past it, the report says by how much.\n\nExample:\n  spinscope sweep run --socket /run/mysqld/mysqld.sock --workload read-write --threads 1..64:x2 \\\n    --variant base:default --variant d4:innodb_spin_wait_delay=4 --repeat 3 --duration 5";

pub fn run(args: SweepArgs) -> Result<i32> {
    match args.command {
        SweepCommand::Prepare(a) => {
            schema::check_schema_name(&a.schema)?;
            if a.tables == 0 || a.tables > 1000 {
                return Err(Error::bad_input(format!(
                    "--tables {}: use 1..=1000",
                    a.tables
                )));
            }
            if a.table_size == 0 || a.table_size > 2_000_000_000 {
                return Err(Error::bad_input(format!(
                    "--table-size {}: use 1..=2000000000",
                    a.table_size
                )));
            }
            if a.load_threads == 0 || a.load_threads > 64 {
                return Err(Error::bad_input(format!(
                    "--load-threads {}: use 1..=64",
                    a.load_threads
                )));
            }
            let c = connector(&server_conn::resolve(&a.conn)?, None);
            schema::prepare(
                &c,
                &a.schema,
                a.tables,
                a.table_size,
                a.load_threads,
                a.force,
            )?;
            Ok(EXIT_OK)
        }
        SweepCommand::Cleanup(a) => {
            schema::check_schema_name(&a.schema)?;
            schema::cleanup(
                &connector(&server_conn::resolve(&a.conn)?, None),
                &a.schema,
                a.force,
            )?;
            Ok(EXIT_OK)
        }
        SweepCommand::Run(a) => run_sweep(*a),
    }
}

/// Connections for the sweep: the options are resolved once (an option file is read, `-p`
/// prompts once), then every client thread and every reconnect opens its own connection with
/// the shared connection code, in `db` when given.
fn connector(target: &Target, db: Option<&str>) -> Connector {
    let target = target.clone();
    let db = db.map(str::to_string);
    // Client connections (those with a db) own their prepared statements: the mysql crate's
    // own cache (32 by default) would close statements the workload still holds.
    let own_statements = db.is_some();
    Arc::new(move || {
        let mut c = if own_statements {
            server_conn::connect_target_with(&target, |b| b.stmt_cache_size(0))?
        } else {
            server_conn::connect_target(&target)?
        };
        if let Some(db) = &db {
            c.select_db(db)
                .map_err(|e| Error::runtime(format!("USE {db}: {}", load::describe_error(&e).1)))?;
        }
        Ok(c)
    })
}

/// Every input checked before connecting.
struct Plan {
    ladder: Vec<u32>,
    variants: Vec<load::spec::Variant>,
    sla: Option<knee::Sla>,
    kind: Kind,
    custom: Vec<load::workload::CustomStmt>,
    warmup: Duration,
    duration: Duration,
    report_interval: Option<Duration>,
}

/// A flag in seconds within [min, max], as a Duration (bad input otherwise).
pub(crate) fn secs(flag: &str, v: f64, min: f64, max: f64) -> Result<Duration> {
    if !(v.is_finite() && v >= min && v <= max) {
        return Err(Error::bad_input(format!(
            "{flag} {v}: use seconds from {min} to {max}"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

fn plan(a: &RunArgs) -> Result<Plan> {
    let ladder = parse_ladder(&a.threads).map_err(Error::bad_input)?;
    let variants = parse_variants(&a.variants).map_err(Error::bad_input)?;
    let sla = a
        .sla
        .as_deref()
        .map(parse_sla)
        .transpose()
        .map_err(Error::bad_input)?;
    let (kind, custom) = match &a.sql {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::bad_input(format!(
                    "--sql {}: cannot read it ({e}); give a readable file",
                    path.display()
                ))
            })?;
            (
                Kind::Custom,
                parse_sql_file(&text).map_err(Error::bad_input)?,
            )
        }
        None => (
            Kind::parse(&a.workload).map_err(Error::bad_input)?,
            Vec::new(),
        ),
    };
    if a.repeat == 0 || a.repeat > 100 {
        return Err(Error::bad_input(format!(
            "--repeat {}: use 1..=100",
            a.repeat
        )));
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0 && r <= 10_000_000.0) {
            return Err(Error::bad_input(format!(
                "--rate {r}: use transactions per second from 0 to 10000000"
            )));
        }
    }
    if a.point_selects > 1000 || a.range_size == 0 || a.range_size > 1_000_000 {
        return Err(Error::bad_input(
            "--point-selects must be 0..=1000 and --range-size 1..=1000000",
        ));
    }
    schema::check_schema_name(&a.schema)?;
    let report_interval = if a.report_interval == 0.0 {
        None
    } else {
        Some(secs("--report-interval", a.report_interval, 0.1, 3600.0)?)
    };
    Ok(Plan {
        ladder,
        variants,
        sla,
        kind,
        custom,
        warmup: secs("--warmup", a.warmup, 0.0, 3600.0)?,
        duration: secs("--duration", a.duration, 0.2, 86_400.0)?,
        report_interval,
    })
}

fn encode_hist(h: &hdrhistogram::Histogram<u64>) -> String {
    let mut buf = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut buf) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
        Err(_) => String::new(),
    }
}

/// What was read around a step for its validity.
#[derive(Default)]
struct Around {
    uptime: Option<(u64, u64, f64)>,
    conn_ids: Option<(u64, u64)>,
    unreadable: Option<String>,
    settings_after: Vec<load::spec::Setting>,
}

fn step_doc(
    threads: u32,
    variant: &str,
    repeat: u32,
    applied: Vec<load::spec::Setting>,
    o: &StepOutcome,
    rate: Option<f64>,
    around: Around,
) -> StepDoc {
    let health = StepHealth {
        txns: o.txns,
        errors: o.errors.values().sum(),
        first_error: o.first_error.clone(),
        uptime: around.uptime,
        conn_ids: around.conn_ids,
        unreadable: around.unreadable.clone(),
        settings: applied
            .iter()
            .zip(&around.settings_after)
            .map(|(a, b)| (a.variable.clone(), a.value.clone(), b.value.clone()))
            .collect(),
    };
    let el = o.elapsed_s.max(1e-9);
    let h = &o.hist;
    let q = |p: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(p) as f64
        }
    };
    let latency_us = Latency {
        mean: if h.is_empty() { 0.0 } else { h.mean() },
        p50: q(0.50),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: if h.is_empty() { 0.0 } else { h.max() as f64 },
    };
    let tps = o.txns as f64 / el;
    let open_loop = rate.map(|r| OpenLoop {
        target_tps: r,
        achieved_tps: tps,
        // Behind schedule by more than 5% of the window, or 5% short of the rate: not kept.
        kept_up: tps >= 0.95 * r && o.schedule_lag_s <= 0.05 * el.max(1.0),
        lag_s: o.schedule_lag_s,
    });
    StepDoc {
        threads,
        variant: variant.into(),
        repeat,
        applied,
        interrupted: o.interrupted,
        disturbed: !o.errors.is_empty() || o.reconnects > 0,
        elapsed_s: o.elapsed_s,
        txns: o.txns,
        queries: o.queries,
        tps,
        qps: o.queries as f64 / el,
        latency_us,
        errors: o.errors.clone(),
        reconnects: o.reconnects,
        first_error: o.first_error.clone(),
        windows_tps: o.windows_tps.clone(),
        little: little_check(f64::from(threads), tps, latency_us.mean),
        open_loop,
        histogram: HistogramDoc {
            encoding: HIST_ENCODING.into(),
            unit: "us".into(),
            significant_digits: 3,
            data: encode_hist(h),
        },
        invalid: invalid_reason(&health),
        window_s: o.window_s,
        setup_s: o.setup_s,
        statements: StmtStats {
            needed: o.stmts_needed,
            per_client: o.stmt_capacity,
            prepared_during_step: o.late_prepares,
        },
        uptime_s: around.uptime.map(|(a, b, _)| (a, b)),
        retries: o.retries.clone(),
        settings_after: around.settings_after,
    }
}

/// Write via a new exclusive temp file and rename, so a crash never leaves half a document;
/// results hold server data, so the files are private (0600).
fn write_atomic(path: &Path, text: &str, flag: &str) -> Result<()> {
    crate::files::write_atomic(path, text.as_bytes(), flag, true)
}

fn save(doc: &mut SweepDoc, a: &RunArgs) -> Result<()> {
    doc.analysis = doc_mod::analyze(&doc.steps, &doc.config.variants, doc.config.sla.as_ref());
    if let Some(p) = &a.save {
        write_atomic(p, &(crate::report::to_json(doc)? + "\n"), "--save")?;
    }
    if let Some(p) = &a.csv {
        write_atomic(p, &doc_mod::csv(doc), "--csv")?;
    }
    Ok(())
}

/// Every output path checked before any load starts.
fn check_outputs(a: &RunArgs) -> Result<()> {
    for (p, flag) in [(&a.save, "--save"), (&a.csv, "--csv"), (&a.html, "--html")] {
        if let Some(p) = p {
            crate::files::check_output(p, flag)?;
        }
    }
    if let Some(d) = &a.charts {
        crate::files::check_output_dir(d, "--charts")?;
    }
    Ok(())
}

fn run_sweep(a: RunArgs) -> Result<i32> {
    let plan = plan(&a)?;
    check_outputs(&a)?;
    let target = server_conn::resolve(&a.conn)?;
    let connect = connector(&target, None);
    let mut admin = connect()?;
    let version: String = admin
        .query_first("SELECT VERSION()")
        .ok()
        .flatten()
        .unwrap_or_else(|| "unknown".into());
    // Marker, finished prepare, promised rows: refused before any change.
    let st = schema::verify_for_run(&mut admin, &a.schema)?;
    drop(admin);
    // Statements name tables without a schema: every client connects into the scratch schema.
    let client_connect = connector(&target, Some(&a.schema));
    if plan.kind == Kind::Custom {
        // Before any load or SET GLOBAL: every statement allowed, and prepared (not run).
        let mut c = client_connect()?;
        if let Err((line, text, why)) =
            check_custom(&mut c, &plan.custom, &a.schema, a.allow_writes_outside)
        {
            let file = a
                .sql
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            return Err(Error::bad_input(format!(
                "--sql {file} line {line} `{text}`: {why}"
            )));
        }
    }
    let wl = Workload {
        kind: plan.kind,
        tables: st.tables,
        table_size: st.table_size,
        mix: Mix {
            point_selects: a.point_selects,
            range_size: a.range_size,
            ..Mix::default()
        },
        custom: plan.custom.clone(),
    };
    let mut guard = SettingsGuard::new(Arc::clone(&connect));
    // A copy of the change journal in the scratch schema, for spinscope on other hosts.
    guard.mirror_to_schema(&a.schema);
    guard.validate(&plan.variants)?;
    let stop = load::install_stop_flag()?;
    let mut doc = SweepDoc {
        schema: doc_mod::SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        complete: false,
        interrupted: false,
        stopped_because: None,
        server: ServerInfo { version },
        config: SweepConfig {
            workload: plan.kind.name().into(),
            sql_file: a.sql.as_ref().map(|p| p.display().to_string()),
            schema_name: a.schema.clone(),
            tables: st.tables,
            table_size: st.table_size,
            mode: if a.rate.is_some() { "open" } else { "closed" }.into(),
            rate_tps: a.rate,
            warmup_s: plan.warmup.as_secs_f64(),
            duration_s: plan.duration.as_secs_f64(),
            ladder: plan.ladder.clone(),
            repeat: a.repeat,
            variants: plan.variants.clone(),
            sla: plan.sla,
            stop_after_knee: a.stop_after_knee,
        },
        steps: Vec::new(),
        analysis: Default::default(),
        settings_changed: Vec::new(),
    };
    let mut probe = ServerProbe::new(Arc::clone(&connect));
    let outcome = ladder_loop(
        &a,
        &plan,
        &wl,
        &client_connect,
        &mut guard,
        &mut probe,
        &stop,
        &mut doc,
    );
    // Restore before anything else can fail.
    doc.settings_changed = guard.restore();
    let mut fatal = None;
    match outcome {
        Ok(()) => {}
        Err(e) => {
            doc.stopped_because = Some(e.to_string());
            fatal = Some(e);
        }
    }
    doc.interrupted = load::stopped(&stop);
    if doc.interrupted && doc.stopped_because.is_none() {
        doc.stopped_because = Some("interrupted by a signal".into());
    }
    save(&mut doc, &a)?;
    write_outputs(&doc, &a)?;
    if let Some(e) = fatal {
        return Err(e);
    }
    Ok(if doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

fn write_outputs(doc: &SweepDoc, a: &RunArgs) -> Result<()> {
    if let Some(dir) = &a.charts {
        std::fs::create_dir_all(dir)
            .and_then(|_| {
                crate::files::write_atomic_mode(
                    &dir.join("throughput.svg"),
                    sweep_html::throughput_chart(doc).as_bytes(),
                    0o600,
                )
            })
            .and_then(|_| {
                crate::files::write_atomic_mode(
                    &dir.join("p99.svg"),
                    sweep_html::p99_chart(doc).as_bytes(),
                    0o600,
                )
            })
            .map_err(|e| {
                Error::bad_input(format!(
                    "--charts {}: cannot write ({e}); choose a writable directory",
                    dir.display()
                ))
            })?;
    }
    if let Some(p) = &a.html {
        write_atomic(p, &sweep_html::html(doc), "--html")?;
    }
    if a.json {
        crate::report::print_json(doc)?;
    } else {
        print!("{}", doc_mod::render(doc));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn ladder_loop(
    a: &RunArgs,
    plan: &Plan,
    wl: &Workload,
    connect: &Connector,
    guard: &mut SettingsGuard,
    probe: &mut ServerProbe,
    stop: &std::sync::atomic::AtomicBool,
    doc: &mut SweepDoc,
) -> Result<()> {
    for &threads in &plan.ladder {
        for rep in 1..=a.repeat {
            for v in &plan.variants {
                if load::stopped(stop) {
                    return Ok(());
                }
                let applied = guard.apply(v)?;
                for (s, want) in applied.iter().zip(&v.settings) {
                    let same = s.value.eq_ignore_ascii_case(&want.value)
                        || matches!((s.value.parse::<f64>(), want.value.parse::<f64>()), (Ok(a), Ok(b)) if a == b);
                    eprintln!(
                        "spinscope: variant {}: {} = {}{}",
                        v.name,
                        s.variable,
                        s.value,
                        if same {
                            String::new()
                        } else {
                            format!(" (asked for {}: the server adjusted it)", want.value)
                        }
                    );
                }
                let cfg = StepConfig {
                    threads,
                    warmup: plan.warmup,
                    duration: plan.duration,
                    rate: a.rate,
                    report_interval: plan.report_interval,
                    label: format!("threads {threads} {} #{rep}", v.name),
                    seed: a.seed ^ u64::from(threads) << 8 ^ u64::from(rep),
                };
                let before = probe.uptime().ok();
                let t_before = std::time::Instant::now();
                let o = run_step(&cfg, wl, connect, stop)?;
                let mut around = Around::default();
                match probe.uptime() {
                    Ok(after) => {
                        around.uptime = before.map(|b| (b, after, t_before.elapsed().as_secs_f64()))
                    }
                    Err(e) => around.unreadable = Some(format!("Uptime: {e}")),
                }
                for s in &applied {
                    let value = match probe.global(&s.variable) {
                        Ok(v) => v,
                        Err(e) => {
                            around.unreadable = Some(format!("@@GLOBAL.{}: {e}", s.variable));
                            "unreadable".into()
                        }
                    };
                    around.settings_after.push(load::spec::Setting {
                        variable: s.variable.clone(),
                        value,
                    });
                }
                let sd = step_doc(threads, &v.name, rep, applied, &o, a.rate, around);
                eprintln!(
                    "spinscope: threads {threads} {} #{rep}: {:.0} tps, {:.0} qps, p99 {} ms{}",
                    v.name,
                    sd.tps,
                    sd.qps,
                    crate::report::fmt_num(sd.latency_us.p99 / 1000.0),
                    match &o.first_error {
                        Some(e) =>
                            format!(", errors {} (first: {e})", o.errors.values().sum::<u64>()),
                        None => String::new(),
                    }
                );
                if let Some(ol) = &sd.open_loop {
                    if !ol.kept_up {
                        eprintln!(
                            "spinscope: the server did not keep up with --rate {}: {:.0} tps achieved, {:.2} s behind schedule",
                            ol.target_tps, ol.achieved_tps, ol.lag_s
                        );
                    }
                }
                if let Some(why) = &sd.invalid {
                    eprintln!(
                        "spinscope: threads {threads} {} #{rep} is INVALID and left out of the analysis: {why}",
                        v.name
                    );
                }
                if o.late_prepares > 0 {
                    eprintln!(
                        "spinscope: threads {threads} {} #{rep}: {} statements prepared during the step ({} of {} fit per client within max_prepared_stmt_count)",
                        v.name, o.late_prepares, o.stmt_capacity, o.stmts_needed
                    );
                }
                let all_failed =
                    doc.steps.is_empty() && o.txns == 0 && !o.errors.is_empty() && !o.interrupted;
                doc.steps.push(sd);
                save(doc, a)?;
                if all_failed {
                    return Err(Error::runtime(format!(
                        "the first step failed: every transaction failed ({} errors); first error: {}; the sweep stopped",
                        o.errors.values().sum::<u64>(),
                        o.first_error.as_deref().unwrap_or("unknown")
                    )));
                }
            }
        }
        if a.stop_after_knee {
            let base = &plan.variants[0].name;
            let pts: Vec<StepPoint> = doc_mod::points(&doc.steps, base)
                .iter()
                .map(|p| StepPoint {
                    threads: f64::from(p.threads),
                    tps: p.tps,
                    lat_us: p.p99_us,
                    p99_us: p.p99_us,
                })
                .collect();
            if knee::past_knee(&pts) {
                eprintln!("spinscope: throughput stopped rising and p99 keeps growing: ending the ladder (--stop-after-knee)");
                doc.complete = true;
                return Ok(());
            }
        }
    }
    doc.complete = !load::stopped(stop);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    fn outcome(values_us: &[u64]) -> StepOutcome {
        let mut hist = crate::load::driver::new_histogram();
        for &v in values_us {
            hist.record(v).unwrap();
        }
        StepOutcome {
            hist,
            txns: values_us.len() as u64,
            queries: 6 * values_us.len() as u64,
            elapsed_s: 2.0,
            errors: Default::default(),
            retries: Default::default(),
            reconnects: 0,
            windows_tps: vec![],
            window_s: 0.5,
            stmt_capacity: 1,
            stmts_needed: 1,
            late_prepares: 0,
            setup_s: 0.0,
            interrupted: false,
            schedule_lag_s: 0.0,
            first_error: None,
        }
    }

    #[test]
    fn step_percentiles_rates_and_histogram_round_trip() {
        // 1..=1000 us once each: p50 ~ 500, p99 ~ 990, max 1000 (3 significant digits).
        let values: Vec<u64> = (1..=1000).collect();
        let d = step_doc(
            4,
            "a",
            1,
            vec![],
            &outcome(&values),
            None,
            Around::default(),
        );
        assert_eq!((d.tps, d.qps), (500.0, 3000.0));
        assert!(
            (d.latency_us.p50 - 500.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!(
            (d.latency_us.p99 - 990.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!(
            (d.latency_us.p999 - 999.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!((d.latency_us.max - 1000.0).abs() <= 1.0);
        assert!((d.latency_us.mean - 500.5).abs() < 1.0);
        // Little: 500 tps x 500.5 us = 0.25 busy clients of 4.
        assert!((d.little.implied - 0.25).abs() < 0.01 && !d.little.holds);
        // The histogram decodes with the standard V2 deserializer to the same counts.
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&d.histogram.data)
            .unwrap();
        let h: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(h.len(), 1000);
        assert_eq!(h.value_at_quantile(0.99), d.latency_us.p99 as u64);
    }

    #[test]
    fn open_loop_that_falls_behind_is_reported() {
        let mut o = outcome(&[1000; 100]);
        o.schedule_lag_s = 0.8;
        let d = step_doc(2, "a", 1, vec![], &o, Some(1000.0), Around::default());
        let ol = d.open_loop.unwrap();
        assert_eq!(ol.achieved_tps, 50.0);
        assert!(!ol.kept_up);
        let d = step_doc(
            2,
            "a",
            1,
            vec![],
            &outcome(&[1000; 2000]),
            Some(1000.0),
            Around::default(),
        );
        assert!(d.open_loop.unwrap().kept_up);
    }

    #[test]
    fn empty_step_has_zero_latencies_not_a_panic() {
        let d = step_doc(1, "a", 1, vec![], &outcome(&[]), None, Around::default());
        assert_eq!(d.tps, 0.0);
        assert_eq!(d.latency_us.p99, 0.0);
    }
}
