//! The collected evidence in the shape the rules read: parsed version, typed variables,
//! INNODB STATUS parse, performance_schema deltas, burst statistics, host deltas. Built from a
//! [`Snapshot`] (live or replayed), so every rule is testable without a server.

use serde::{Deserialize, Serialize};

use super::burst::{stats, BurstStats};
use crate::server::parse::innodb::{self, InnodbStatus, SemaphoreLayout};
use crate::server::parse::vars::Vars;
use crate::server::snapshot::Snapshot;
use crate::spin::model::CpuModel;
use crate::spin::version::{parse_version, Flavor, ServerVersion};

/// One performance_schema event over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitDelta {
    pub event: String,
    pub count: u64,
    pub wait_ms: f64,
}

pub struct Facts {
    pub snap: Snapshot,
    pub version: Option<ServerVersion>,
    pub vars: Vars,
    pub status_before: Vars,
    pub status_after: Vars,
    pub innodb: Option<InnodbStatus>,
    /// Window deltas, largest wait time first.
    pub pfs_waits: Vec<WaitDelta>,
    pub burst: Option<BurstStats>,
    /// Cores of the server's host, when known.
    pub cores: Option<f64>,
    /// The host CPU as the spin model sees it, when known.
    pub cpu: Option<CpuModel>,
    /// A saved wait document of this server (`doctor --waits FILE`), checked against the
    /// server's identity before it is set here.
    pub waits: Option<WaitsGiven>,
}

/// A wait document doctor was given, and what its identity check said.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitsGiven {
    /// The file, as given.
    pub file: String,
    pub doc: crate::profile::waits::WaitDoc,
    /// Said when the document could not be matched to the server (no identity in it).
    pub note: Option<String>,
}

fn deltas(s: &Snapshot) -> Vec<WaitDelta> {
    let Some(p) = &s.pfs else { return Vec::new() };
    let mut out: Vec<WaitDelta> = p
        .after
        .iter()
        .filter_map(|a| {
            let b = p.before.iter().find(|b| b.event == a.event);
            let (bc, bw) = b.map(|b| (b.count, b.wait_ps)).unwrap_or((0, 0));
            let count = a.count.saturating_sub(bc);
            (count > 0).then(|| WaitDelta {
                event: a.event.clone(),
                count,
                wait_ms: a.wait_ps.saturating_sub(bw) as f64 / 1e9,
            })
        })
        .collect();
    out.sort_by(|a, b| b.wait_ms.total_cmp(&a.wait_ms));
    out
}

/// "measured here (quick probe)" for a local source, "measured: FILE" for a file.
/// The CPU the spin model prices for a snapshot's host facts, when known
/// (`server::host::cpu_model`).
pub fn host_cpu(s: &Snapshot) -> Option<CpuModel> {
    s.host.as_ref().and_then(crate::server::host::cpu_model)
}

impl Facts {
    pub fn from_snapshot(snap: Snapshot) -> Facts {
        let version = parse_version(&snap.version, None).ok().map(|mut v| {
            // A "Percona Server" comment is the reliable tell for Percona builds.
            if v.flavor == Flavor::Mysql
                && snap
                    .version_comment
                    .as_deref()
                    .is_some_and(|c| c.contains("Percona"))
            {
                v.flavor = Flavor::Percona;
            }
            v
        });
        let vars = Vars::from_pairs(snap.variables.clone());
        let status_before = Vars::from_pairs(snap.status_before.clone());
        let status_after = Vars::from_pairs(snap.status_after.clone());
        let innodb = snap.innodb_status.as_deref().map(innodb::parse);
        let cores = snap
            .host
            .as_ref()
            .and_then(|h| h.online_cpus)
            .map(f64::from);
        let burst = snap
            .burst
            .as_ref()
            .and_then(|b| stats(b, cores.unwrap_or(1.0)));
        Facts {
            pfs_waits: deltas(&snap),
            cpu: host_cpu(&snap),
            version,
            vars,
            status_before,
            status_after,
            innodb,
            burst,
            cores,
            snap,
            waits: None,
        }
    }

    /// What the snapshot says about which server it is, for a wait document's identity check:
    /// its variables, and its start (the capture time less `Uptime`) when both are known.
    pub fn identity_for_waits(&self) -> crate::profile::waits::identity::Against {
        let var = |k: &str| self.vars.str(k).map(str::to_string);
        let uptime = self
            .status_after
            .u64("Uptime")
            .or_else(|| self.status_before.u64("Uptime"));
        let started = match (self.snap.captured_at_unix_s, uptime) {
            (at, Some(up)) if at > 0 => Some(at as i64 - up as i64),
            _ => None,
        };
        crate::profile::waits::identity::Against {
            what: "the server doctor read".into(),
            hostname: var("hostname"),
            port: var("port").and_then(|p| p.trim().parse().ok()),
            socket: var("socket"),
            datadir: var("datadir"),
            started_unix_s: started,
        }
    }

    pub fn is_mariadb_106_plus(&self) -> bool {
        self.version
            .as_ref()
            .is_some_and(|v| v.flavor == Flavor::Mariadb && v.at_least(10, 6, 0))
    }

    /// How far the SEMAPHORES counters can be trusted, in one word.
    pub fn semaphores_state(&self) -> Option<&'static str> {
        let s = self.innodb.as_ref()?.semaphores.as_ref()?;
        Some(match s.layout {
            SemaphoreLayout::Blank if self.is_mariadb_106_plus() => "blank-by-design",
            SemaphoreLayout::Blank => "blank",
            SemaphoreLayout::Unrecognised => "unrecognised",
            _ if s.all_counters_zero()
                && self.version.as_ref().is_some_and(|v| {
                    matches!(v.flavor, Flavor::Mysql | Flavor::Percona) && v.at_least(8, 0, 32)
                }) =>
            {
                "hard-coded-zeros"
            }
            _ if s.all_counters_zero() => "zeros",
            _ => "live",
        })
    }

    /// Status counter delta over the window.
    pub fn status_delta(&self, name: &str) -> Option<f64> {
        Some(self.status_after.u64(name)? as f64 - self.status_before.u64(name)? as f64)
    }
}
