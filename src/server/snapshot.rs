//! The evidence of one doctor run as plain data: what `--save-snapshot` writes and
//! `--snapshot` replays. Raw values only (the analysis is redone on replay); no password.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const SNAPSHOT_SCHEMA: &str = "spinscope.doctor-snapshot/1";

/// One sample of the burst sampler (own session already removed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BurstPoint {
    /// Milliseconds since the window started.
    pub t_ms: f64,
    pub threads_running: u64,
    pub threads_connected: u64,
    /// Questions since the window started, the sampler's own statements removed.
    pub questions: u64,
    pub row_lock_waits: u64,
}

/// The burst sampler's raw record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstRecord {
    pub target_hz: f64,
    pub window_s: f64,
    pub points: Vec<BurstPoint>,
    /// CPU time the sampling thread used, in ns (client-side overhead).
    pub sampler_cpu_ns: u64,
    /// Median round trip of one sampling query, in us (server-side cost per sample).
    pub query_p50_us: f64,
    /// Whether the window was cut short (Ctrl-C or the server went away).
    pub interrupted: bool,
    /// The rate the SQL counters (`points`) were read at, when lower than `target_hz` because
    /// the /proc series ran at `target_hz` (absent in older snapshots: SQL at `target_hz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_hz: Option<f64>,
    /// Running threads counted from /proc on a local server (absent when not local, or in
    /// older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_running: Option<ProcSeries>,
    /// CPU the server thread serving the sampler's session spent during the window, in ns
    /// (local server, one thread per connection: `/proc/PID/task/TID/schedstat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_session_cpu_ns: Option<u64>,
}

/// The server's threads in state R (on a CPU or in the run queue) from
/// `/proc/PID/task/*/stat`: every server thread, background ones included, not the
/// `Threads_running` status counter (sessions inside a statement, sleeping on a lock or not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcSeries {
    /// What was counted, in words.
    pub source: String,
    pub pid: u32,
    pub target_hz: f64,
    pub points: Vec<ProcPoint>,
}

/// One count of the /proc series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcPoint {
    /// Milliseconds since the window started (the same clock as `BurstPoint::t_ms`).
    pub t_ms: f64,
    /// Threads in state R.
    pub running: u32,
    /// Threads in all.
    pub threads: u32,
}

/// `doctor --rt`: the server's response times captured from packets over the window
/// (`crate::rt`), or why they were not.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RtRecord {
    /// Why nothing was measured (a remote server, no permission to capture, no TCP port);
    /// None when the capture ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// doctor's own session, left out by the capture filter (a TCP connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_client_port: Option<u16>,
    /// Clients on the server's Unix socket when the capture started (the process list):
    /// not on the wire, so not in the times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket_clients: Option<u64>,
    /// Unix time the burst sampler's window started (the intervals are on the capture clock).
    pub window_start_unix_s: f64,
    /// `spinscope.rt/1` intervals over the window, and their total.
    pub intervals: Vec<crate::rt::stats::IntervalReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<crate::rt::stats::IntervalReport>,
}

/// One performance_schema event's cumulative counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitRow {
    pub event: String,
    pub count: u64,
    /// SUM_TIMER_WAIT in picoseconds.
    pub wait_ps: u64,
}

/// performance_schema evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PfsRecord {
    /// The `performance_schema` variable.
    pub enabled: bool,
    /// wait/synch instruments enabled AND timed before we touched anything.
    pub synch_instruments_enabled: u64,
    pub synch_instruments_total: u64,
    /// True when --enable-instruments turned instruments/consumers on for the window.
    pub enabled_by_us: bool,
    /// True when what we changed was put back (or nothing was changed).
    pub restored: bool,
    pub before: Vec<WaitRow>,
    pub after: Vec<WaitRow>,
    pub window_s: f64,
    pub note: Option<String>,
}

/// A query the server refused for lack of a privilege.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub what: String,
    pub privilege: String,
    pub message: String,
}

/// Counters of /proc/stat's `cpu` line (USER_HZ ticks).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

/// CPU time of the server process (all its threads), from /proc/PID/stat, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcCpu {
    pub utime: u64,
    pub stime: u64,
}

/// Host facts: static ones, plus counters around the window when the server is local.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostFacts {
    /// Where these came from: "local", or the file given with --host-facts.
    pub source: String,
    pub arch: String,
    pub kernel_release: Option<String>,
    pub cpu_model_name: Option<String>,
    pub cpu_vendor: Option<String>,
    pub cpu_family: Option<u32>,
    pub cpu_model: Option<u32>,
    pub cpu_stepping: Option<u32>,
    pub arm_implementer: Option<u32>,
    pub arm_part: Option<u32>,
    pub online_cpus: Option<u32>,
    pub cache_line_bytes: Option<u32>,
    /// Measured ns per spin hint (from a probe), when known.
    pub ns_per_hint: Option<f64>,
    /// TSC ticks per PAUSE as MariaDB's startup rule sees it (x86): the figure that decides its
    /// multiplier, taken from the probe by `cpu::cpu_model`.
    pub tsc_ticks_per_hint: Option<f64>,
    /// Core clock in GHz from the probe (`cpu::cpu_model`), when it had one; absent in older
    /// snapshots (the reference table's clock is used then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ghz: Option<f64>,
    /// Half-width of the measured figure's noise interval, percent (see
    /// `spin::model::probe_noise_pct`); absent in older snapshots.
    #[serde(default)]
    pub ns_per_hint_noise_pct: Option<f64>,
    pub server_pid: Option<u32>,
    pub server_comm: Option<String>,
    pub cpu_before: Option<CpuTicks>,
    pub cpu_after: Option<CpuTicks>,
    /// (voluntary, nonvoluntary) context switches of the server process.
    pub server_ctxt_before: Option<(u64, u64)>,
    pub server_ctxt_after: Option<(u64, u64)>,
    /// The server process's own user/system CPU at the start and end of the window.
    #[serde(default)]
    pub server_cpu_before: Option<ProcCpu>,
    #[serde(default)]
    pub server_cpu_after: Option<ProcCpu>,
    /// Clock ticks per second of the /proc counters (USER_HZ), when read.
    #[serde(default)]
    pub clock_ticks_per_s: Option<u64>,
}

/// Where a variable's current global value came from, in the server's own classification
/// (MariaDB `information_schema.SYSTEM_VARIABLES.GLOBAL_VALUE_ORIGIN`, MySQL 8
/// `performance_schema.variables_info.VARIABLE_SOURCE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginKind {
    /// The compiled-in default (MariaDB COMPILE-TIME, MySQL COMPILED).
    Compiled,
    /// An option on the server's command line.
    CommandLine,
    /// An option file (the path says which, when the server reports it).
    Config,
    /// Set at runtime with SET GLOBAL (MariaDB SQL, MySQL DYNAMIC).
    Sql,
    /// Sized by the server itself at startup (MariaDB AUTO).
    Auto,
    /// An environment variable (MariaDB ENVIRONMENT).
    Environment,
    /// SET PERSIST, kept in mysqld-auto.cnf in the data directory (MySQL PERSISTED).
    Persisted,
    /// A word this version of spinscope does not know (kept in `reported`).
    #[serde(other)]
    Other,
}

/// One variable's origin as the server reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarOrigin {
    pub kind: OriginKind,
    /// The server's own word, e.g. "COMMAND-LINE", "CONFIG", "EXPLICIT".
    pub reported: String,
    /// The option file, for an origin in one (empty values dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Everything doctor collected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema: String,
    pub captured_at_unix_s: u64,
    /// `user@host:port` or `user@socket`; never a password.
    pub target: String,
    pub local: bool,
    pub version: String,
    pub version_comment: Option<String>,
    pub variables: BTreeMap<String, String>,
    pub status_before: BTreeMap<String, String>,
    pub status_after: BTreeMap<String, String>,
    pub window_s: f64,
    pub innodb_status: Option<String>,
    pub pfs: Option<PfsRecord>,
    pub burst: Option<BurstRecord>,
    pub host: Option<HostFacts>,
    pub refused: Vec<Refusal>,
    /// Collection problems that are not privileges (server gone, timeouts).
    pub notes: Vec<String>,
    /// The server went away during collection: the evidence is partial.
    #[serde(default)]
    pub lost_connection: bool,
    /// `doctor --rt`: response times from packets over the window (absent without `--rt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt: Option<RtRecord>,
    /// What the change journal said about this server when the snapshot was taken, as data
    /// (doctor's rule reads these; `notes` carries the same as text for people). Absent in
    /// snapshots of older versions, whose notes alone carry it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<crate::journal::Entry>,
    /// Where the spin variables' values came from (lower-case variable name -> origin); empty
    /// when the server does not say (MySQL 5.7, older snapshots, no privilege).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub var_origins: BTreeMap<String, VarOrigin>,
}

impl Snapshot {
    /// A snapshot of a server of `version` with no evidence yet (window 1 s): the start of a
    /// hand-built snapshot (rule tests fill in what they need with `..`).
    pub fn of_version(version: &str) -> Snapshot {
        Snapshot {
            schema: SNAPSHOT_SCHEMA.into(),
            captured_at_unix_s: 0,
            target: "t".into(),
            local: false,
            version: version.into(),
            version_comment: None,
            variables: BTreeMap::new(),
            status_before: BTreeMap::new(),
            status_after: BTreeMap::new(),
            window_s: 1.0,
            innodb_status: None,
            pfs: None,
            burst: None,
            host: None,
            refused: vec![],
            notes: vec![],
            lost_connection: false,
            journal: vec![],
            rt: None,
            var_origins: BTreeMap::new(),
        }
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        crate::files::save_json(self, path)
    }

    /// Read a snapshot; anything unreadable or of another schema is bad input (exit 2).
    pub fn load(path: &Path) -> Result<Snapshot> {
        let text = crate::files::read_capped(path, crate::files::JSON_INPUT_CAP, "--snapshot")?;
        let mut v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::bad_input(format!(
                "--snapshot {}: not JSON ({e}); give a file written by doctor --save-snapshot",
                path.display()
            ))
        })?;
        // No password read from a file reaches a report (a target typed as a URL, a statement
        // in INNODB STATUS): the one secret filter, before anything else reads it.
        crate::secret::scrub_json(&mut v);
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(SNAPSHOT_SCHEMA) => {}
            other => {
                return Err(Error::bad_input(format!(
                    "--snapshot {}: schema {:?} is not {SNAPSHOT_SCHEMA}; give a file written by doctor --save-snapshot",
                    path.display(),
                    other.unwrap_or("missing")
                )))
            }
        }
        let mut snap: Snapshot = serde_json::from_value(v).map_err(|e| {
            Error::bad_input(format!(
                "--snapshot {}: damaged snapshot ({e})",
                path.display()
            ))
        })?;
        snap.target = crate::secret::target_without_password(&snap.target);
        Ok(snap)
    }
}
