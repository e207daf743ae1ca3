//! The `spinscope.doctor-fleet/1` document as plain serde types, and the summary row of a
//! diagnosed server (pure). Diagnosing the fleet is `fleet`'s. Reachable as `crate::doc::fleet`.

use serde::{Deserialize, Serialize};

use crate::doctor::{DoctorDoc, Severity};

pub const FLEET_SCHEMA: &str = "spinscope.doctor-fleet/1";

/// The headline numbers of one diagnosed server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Longest spin of one latch attempt with the current settings on this CPU, us.
    pub max_spin_us: Option<f64>,
    /// That, divided by what the version's defaults were designed for.
    pub design_ratio: Option<f64>,
    pub threads_running_p99: Option<f64>,
    pub threads_running_max: Option<f64>,
    pub worst_severity: Option<Severity>,
    pub worst_finding: Option<String>,
}

impl Summary {
    pub fn of(d: &DoctorDoc) -> Summary {
        let budget = d.findings.iter().find(|f| f.id == "spin-budget");
        let evidence =
            |n: &str| budget.and_then(|f| f.evidence.iter().find(|e| e.name == n).map(|e| e.value));
        // Findings are sorted critical first; the worst is the first, if any above info.
        let worst = d.findings.first();
        Summary {
            max_spin_us: evidence("max_spin_here"),
            design_ratio: evidence("design_ratio"),
            threads_running_p99: d.burst.as_ref().map(|b| b.threads_running.p99),
            threads_running_max: d.burst.as_ref().map(|b| b.threads_running.max),
            worst_severity: worst.map(|f| f.severity),
            worst_finding: worst.map(|f| f.title.clone()),
        }
    }
}

/// One server's outcome: its document, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    /// Where it was reached (no password).
    pub target: String,
    pub summary: Option<Summary>,
    pub error: Option<String>,
    pub doc: Option<DoctorDoc>,
}

/// The `--json` document of a fleet run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetDoc {
    pub schema: String,
    pub servers: Vec<Row>,
    /// Servers with a document.
    pub diagnosed: usize,
    /// Servers that could not be diagnosed.
    pub failed: usize,
    pub max_severity: Option<Severity>,
    pub interrupted: bool,
}
