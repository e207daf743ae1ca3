//! `spinscope tune` (issue 16): search the spin settings on the user's workload under noise and
//! recommend only what is proven. The search is in `crate::tune`.

use std::path::PathBuf;

use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::load::schema;
use crate::load::workload::{parse_sql_file, Kind};
use crate::server::conn::{self as server_conn, ConnArgs};
use crate::tune::args::parse_pct;
use crate::tune::doc::render;
use crate::tune::engine::{self, TunePlan};

const AFTER_HELP: &str = "Candidates: the current settings (always), the spin model's advice for the CPU (--probe FILE, or a quick probe when the server is local), the version's defaults, and a coarse log-spaced grid over each legal knob (MariaDB: innodb_spin_wait_delay, innodb_sync_spin_loops; MySQL/Percona 8.0.16+ also innodb_spin_wait_pause_multiplier). With --waits FILE (a saved `profile --waits --json` of this server), only the candidates that move the spin in its measured direction (spin less: shorter spins; spin more: longer) race beside the current settings, so tune never changes the settings against it.\n\nPlan: before the race, tune says what the budget allows: the candidates that get 8 rounds each race (the current settings, the model's advice and the defaults first; the others are named as not raced), and when not even those three fit, each measurement is shortened to 0.5 s warm-up + 2 s measured (unless --warmup/--duration fix it) and only those three race. After the first round the plan is checked against the measured time of a measurement.\n\nMethod: racing. Every remaining candidate is measured once per round, in rotated order; a candidate significantly slower than the leader leaves the race; the budget goes to the rest. Measurements of one round are pairs (they share the host's drift): the decision changes the settings only when the leader beats the current settings by the paired interval of the throughput ratio (log scale, never below -100%) at 1-0.05/m (m candidates) and its mean p99 over at least 3 repeats stays within --max-p99-increase, or earlier when the evidence is overwhelming: at one of the L early looks the plan allows, by the same interval at 1-0.05/(2 m L), so a wrong change stays within 0.05 over all looks; it keeps the current settings only when they lead. When the budget ends before a proof, it says so, with the budget a proof would take at the noise measured and the spin model's advice labelled unproven; nothing is changed then. Every change is journaled before it is made and put back at the end, on error and on a signal; --apply leaves the winner set and logs it as an intended change.\n\nExample:\n  spinscope sweep prepare --socket /run/mysqld/mysqld.sock --tables 4 --table-size 100000\n  spinscope tune --socket /run/mysqld/mysqld.sock --workload write-only --threads 16 --budget 10m";

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true, after_help = AFTER_HELP)]
pub struct TuneArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Print help (-h is the host, as in the mysql client).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Scratch schema made by `sweep prepare`.
    #[arg(long, default_value = "spinscope")]
    pub schema: String,
    /// A built-in workload (sysbench's oltp mixes).
    #[arg(long, default_value = "write-only", value_parser = super::units::WORKLOADS)]
    pub workload: String,
    /// Run the statements of FILE instead of a built-in workload (as `sweep run --sql`).
    #[arg(long, value_name = "FILE")]
    pub sql: Option<PathBuf>,
    /// Client connections (default: the knee of a quick ladder 1..32 at the current settings).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Time for the whole search, e.g. 90s, 10m, 1h (bare number: seconds).
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = super::units::seconds)]
    pub budget: f64,
    /// A winner's mean p99 may exceed the current settings' by at most this much.
    #[arg(long, default_value = "10%")]
    pub max_p99_increase: String,
    /// Leave the winner set (only when it is significantly better); logged in the journal as
    /// an intended change.
    #[arg(long)]
    pub apply: bool,
    /// Warm-up of each measurement, not counted (bare number: seconds) [default: 1s; 0.5s when
    /// the budget is short].
    #[arg(long, value_name = "DURATION", value_parser = super::units::seconds)]
    pub warmup: Option<f64>,
    /// Measured period of each measurement, 2s or more (bare number: seconds) [default: 3s; 2s
    /// when the budget is short].
    #[arg(long, value_name = "DURATION", value_parser = super::units::seconds)]
    pub duration: Option<f64>,
    /// Most candidates raced (the current settings included).
    #[arg(long, default_value_t = 8)]
    pub max_candidates: usize,
    /// CPU figure for the spin model: a file from `spinscope probe --save`.
    #[arg(long, value_name = "FILE")]
    pub probe: Option<PathBuf>,
    /// Print the spinscope.tune/1 JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Save the JSON document to FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Seed of the clients' random numbers.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A saved wait document of this server (`spinscope profile --waits --json` on its host):
    /// only candidates that move the spin in its measured direction (spin less / spin more)
    /// race, beside the current settings. Refused when it was recorded from another server or
    /// before the server's last restart.
    #[arg(long, value_name = "FILE")]
    pub waits: Option<PathBuf>,
}

use crate::sweep::secs;

fn plan(a: &TuneArgs) -> Result<TunePlan> {
    let (kind, custom) = match &a.sql {
        Some(path) => {
            let text = crate::files::read_capped(path, 16 << 20, "--sql")?;
            (
                Kind::Custom,
                parse_sql_file(&text)
                    .map_err(|e| Error::bad_input(format!("--sql {}: {e}", path.display())))?,
            )
        }
        None => (
            Kind::parse(&a.workload).map_err(Error::bad_input)?,
            Vec::new(),
        ),
    };
    if let Some(t) = a.threads {
        if t == 0 || t > 1024 {
            return Err(Error::bad_input(format!("--threads {t}: use 1..=1024")));
        }
    }
    if !(2..=50).contains(&a.max_candidates) {
        return Err(Error::bad_input(format!(
            "--max-candidates {}: use 2..=50",
            a.max_candidates
        )));
    }
    schema::check_schema_name(&a.schema)?;
    Ok(TunePlan {
        schema: a.schema.clone(),
        kind,
        custom,
        threads: a.threads,
        budget: secs("--budget", a.budget, 10.0, 86_400.0)?,
        warmup: a
            .warmup
            .map(|w| secs("--warmup", w, 0.0, 600.0))
            .transpose()?,
        duration: a
            .duration
            .map(|d| secs("--duration", d, 2.0, 3600.0))
            .transpose()?,
        max_p99_increase_pct: parse_pct(&a.max_p99_increase).map_err(Error::bad_input)?,
        max_candidates: a.max_candidates,
        apply: a.apply,
        probe: a.probe.clone(),
        seed: a.seed,
        waits: a
            .waits
            .as_deref()
            .map(|p| {
                Ok::<_, Error>(engine::WaitsInput {
                    file: p.display().to_string(),
                    doc: crate::profile::waits::load(p, "--waits")?,
                })
            })
            .transpose()?,
    })
}

pub fn run(a: TuneArgs) -> Result<i32> {
    if let (Some(sql), Some(save)) = (&a.sql, &a.save) {
        crate::files::refuse_same(&[("--sql", sql)], &[("--save", save)])?;
    }
    if let (Some(w), Some(save)) = (&a.waits, &a.save) {
        crate::files::refuse_same(&[("--waits", w)], &[("--save", save)])?;
    }
    let plan = plan(&a)?;
    if let Some(p) = &a.save {
        crate::files::check_output(p, "--save")?;
    }
    let target = server_conn::resolve(&a.conn)?;
    let doc = engine::run(&plan, &target, &mut crate::cli::progress::Stderr::default())?;
    if let Some(p) = &a.save {
        crate::files::write_atomic(
            p,
            (crate::report::to_json(&doc)? + "\n").as_bytes(),
            "--save",
            true,
        )?;
    }
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!("{}", render(&doc));
    }
    if let Some(why) = &doc.stopped_because {
        eprintln!(
            "spinscope: error: {why}; the results above are what was measured until then{}",
            if a.save.is_some() { " (saved)" } else { "" }
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(if doc.interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}
