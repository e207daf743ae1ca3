//! The typed plan of a sweep: what to run, checked before any connection.

use std::path::PathBuf;
use std::time::Duration;

use crate::analysis::knee::Sla;
use crate::error::{Error, Result};
use crate::load::schema;
use crate::load::spec::Variant;
use crate::load::workload::{CustomStmt, Kind};
use crate::load::ClientKind;

/// Files the engine rewrites after every step (atomically, mode 0600), so an interrupted or
/// failed sweep leaves what it measured.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The `spinscope.sweep/1` JSON document.
    pub save: Option<PathBuf>,
    /// One CSV row per step.
    pub csv: Option<PathBuf>,
}

/// One sweep: the ladder, the variants (the first is the baseline), repeats, the workload.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    /// Scratch schema made by `sweep prepare`.
    pub schema: String,
    pub kind: Kind,
    /// The statements of a `--sql` file (kind [`Kind::Custom`]).
    pub custom: Vec<CustomStmt>,
    /// Where `custom` came from, for messages and the document.
    pub sql_file: Option<String>,
    /// Allow custom statements beyond DML and writes outside `schema`.
    pub allow_writes_outside: bool,
    /// Client threads per level, in order.
    pub ladder: Vec<u32>,
    pub variants: Vec<Variant>,
    /// Repeats of every step, interleaved A B A B.
    pub repeat: u32,
    pub warmup: Duration,
    pub duration: Duration,
    /// Open loop: intended transactions per second in total.
    pub rate: Option<f64>,
    pub sla: Option<Sla>,
    /// End the ladder once throughput stopped rising and p99 keeps growing.
    pub stop_after_knee: bool,
    /// The driver's in-step progress line period on stderr (None: none).
    pub report_interval: Option<Duration>,
    pub point_selects: u32,
    pub range_size: u64,
    /// Seed of the clients' random numbers.
    pub seed: u64,
    /// The load client, and the event client's worker threads (0: one per CPU).
    pub client: ClientKind,
    pub client_workers: u32,
    pub outputs: Outputs,
}

impl SweepPlan {
    /// A plan with the command's defaults for everything but the ladder and variants.
    pub fn new(schema: &str, kind: Kind, ladder: Vec<u32>, variants: Vec<Variant>) -> SweepPlan {
        SweepPlan {
            schema: schema.to_string(),
            kind,
            custom: Vec::new(),
            sql_file: None,
            allow_writes_outside: false,
            ladder,
            variants,
            repeat: 1,
            warmup: Duration::from_secs(2),
            duration: Duration::from_secs(10),
            rate: None,
            sla: None,
            stop_after_knee: false,
            report_interval: None,
            point_selects: 10,
            range_size: 100,
            seed: 1,
            client: ClientKind::default(),
            client_workers: 0,
            outputs: Outputs::default(),
        }
    }

    /// Steps the plan runs when nothing stops it.
    pub fn steps(&self) -> usize {
        self.ladder.len() * self.repeat as usize * self.variants.len()
    }

    /// Every value within its range (bad input otherwise); output paths writable.
    pub fn validate(&self) -> Result<()> {
        schema::check_schema_name(&self.schema)?;
        if self.ladder.is_empty() || self.ladder.contains(&0) {
            return Err(Error::bad_input(
                "--threads: give one or more levels of 1 or more threads",
            ));
        }
        if self.variants.is_empty() {
            return Err(Error::bad_input("--variant: give at least one variant"));
        }
        if self.repeat == 0 || self.repeat > 100 {
            return Err(Error::bad_input(format!(
                "--repeat {}: use 1..=100",
                self.repeat
            )));
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0 && r <= 10_000_000.0) {
                return Err(Error::bad_input(format!(
                    "--rate {r}: use transactions per second from 0 to 10000000"
                )));
            }
        }
        if self.point_selects > 1000 || self.range_size == 0 || self.range_size > 1_000_000 {
            return Err(Error::bad_input(
                "--point-selects must be 0..=1000 and --range-size 1..=1000000",
            ));
        }
        if self.kind == Kind::Custom && self.custom.is_empty() {
            return Err(Error::bad_input("--sql: the file holds no statement"));
        }
        // System schemas are never written, whatever the flags: refused before connecting.
        if let Some((line, text, why)) = crate::load::workload::first_system_write(&self.custom) {
            return Err(Error::bad_input(format!(
                "--sql {} line {line} `{text}`: {why}",
                self.sql_file.as_deref().unwrap_or_default()
            )));
        }
        secs("--warmup", self.warmup.as_secs_f64(), 0.0, 3600.0)?;
        secs("--duration", self.duration.as_secs_f64(), 0.2, 86_400.0)?;
        for (p, flag) in [(&self.outputs.save, "--save"), (&self.outputs.csv, "--csv")] {
            if let Some(p) = p {
                crate::files::check_output(p, flag)?;
            }
        }
        Ok(())
    }
}

/// A flag in seconds within [min, max], as a Duration (bad input otherwise).
pub fn secs(flag: &str, v: f64, min: f64, max: f64) -> Result<Duration> {
    if !(v.is_finite() && v >= min && v <= max) {
        return Err(Error::bad_input(format!(
            "{flag} {v}: use seconds from {min} to {max}"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}
