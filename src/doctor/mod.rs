//! Facts -> findings. Each rule (one per file under `rules/`) is a pure function from the
//! collected [`Facts`] to zero or more [`Finding`]s; nothing here touches a server or a clock.

pub mod burst;
pub mod facts;
pub mod origin;
pub mod render;
pub mod rt;
pub mod rules;

use serde::{Deserialize, Serialize};

pub use facts::Facts;

pub const DOCTOR_SCHEMA: &str = "spinscope.doctor/1";

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// One number behind a finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

pub fn ev(name: &str, value: f64, unit: &str) -> Evidence {
    Evidence {
        name: name.to_string(),
        value,
        unit: unit.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub id: String,
    pub severity: Severity,
    pub title: String,
    pub evidence: Vec<Evidence>,
    pub why: String,
    pub what_to_do: String,
    /// SQL statements only, each runnable as is.
    pub statements: Vec<String>,
    /// Lines for the `[mysqld]` section of the server's option file (settings that need a
    /// restart, or to keep a change across restarts); not SQL.
    #[serde(default)]
    pub option_file: Vec<String>,
}

/// Run every rule; findings sorted by severity (critical first), then id.
pub fn diagnose(f: &Facts) -> Vec<Finding> {
    let mut out: Vec<Finding> = rules::ALL.iter().flat_map(|r| r(f)).collect();
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.id.cmp(&b.id)));
    out
}

/// The `--json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorDoc {
    pub schema: String,
    /// "live" or the snapshot file read.
    pub source: String,
    pub target: String,
    pub server: String,
    pub version: String,
    pub semaphores: Option<String>,
    pub burst: Option<burst::BurstStats>,
    pub host: Option<crate::server::snapshot::HostFacts>,
    /// The CPU the spin model priced, e.g. "zen3 (reference: ...)" or "measured on ...".
    pub cpu_model: Option<String>,
    pub pfs_top_waits: Vec<facts::WaitDelta>,
    pub pfs_instruments_restored: Option<bool>,
    pub refused: Vec<crate::server::snapshot::Refusal>,
    pub notes: Vec<String>,
    pub findings: Vec<Finding>,
    pub max_severity: Option<Severity>,
    /// `doctor --rt`: the server's response times from packets over the window, per interval
    /// beside Threads_running (absent without `--rt`; added to doctor/1 as an optional field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt: Option<rt::RtSide>,
    /// Which server this is, from its own variables (`@@server_uuid`, else hostname, port,
    /// socket, datadir, server_id): the same for TCP and the socket, so `report` shows one
    /// server once (absent in older documents, or when the variables were not readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::journal::DocIdentity>,
}

pub fn build_doc(source: &str, f: &Facts) -> DoctorDoc {
    let findings = diagnose(f);
    DoctorDoc {
        schema: DOCTOR_SCHEMA.to_string(),
        source: source.to_string(),
        target: f.snap.target.clone(),
        server: f
            .version
            .as_ref()
            .map(|v| v.short())
            .unwrap_or_else(|| "unknown".to_string()),
        version: f.snap.version.clone(),
        semaphores: f.semaphores_state().map(str::to_string),
        burst: f.burst.clone(),
        host: f.snap.host.clone(),
        cpu_model: f.cpu.as_ref().map(|c| c.label.clone()),
        pfs_top_waits: f.pfs_waits.iter().take(10).cloned().collect(),
        pfs_instruments_restored: f.snap.pfs.as_ref().map(|p| p.restored),
        refused: f.snap.refused.clone(),
        notes: f.snap.notes.clone(),
        max_severity: findings.iter().map(|x| x.severity).max(),
        findings,
        rt: f
            .snap
            .rt
            .as_ref()
            .map(|r| rt::side(r, f.snap.burst.as_ref())),
        identity: crate::journal::Facts::from_variables(&f.snap.variables)
            .map(|x| x.doc_identity()),
    }
}
