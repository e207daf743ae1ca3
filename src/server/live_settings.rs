//! The spin settings a live server runs with, for `spin --from-server`: version, version
//! comment and the innodb spin variables, read with plain SELECTs (any user may run them).

use std::collections::BTreeMap;

use crate::session::Session;

use super::conn::{connect_checked, Target};
use crate::error::{Error, Result};

/// What `spin` needs from a server.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSettings {
    pub target: String,
    pub local: bool,
    pub version: String,
    pub version_comment: Option<String>,
    /// innodb_spin_wait_delay, innodb_sync_spin_loops, innodb_spin_wait_pause_multiplier
    /// where the server has them.
    pub variables: BTreeMap<String, String>,
}

/// The statement that reads the version and its comment.
pub const VERSION_SQL: &str = "SELECT VERSION(), @@version_comment";

/// The statement that reads the spin variables (those a server has of the three).
pub const SPIN_VARIABLES_SQL: &str = "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
     ('innodb_spin_wait_delay', 'innodb_sync_spin_loops', 'innodb_spin_wait_pause_multiplier')";

/// A server's version and spin variables, as [`read_on`] found them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpinVariables {
    /// `VERSION()`; None when the server returned no row.
    pub version: Option<String>,
    pub version_comment: Option<String>,
    /// Lower-case names.
    pub variables: BTreeMap<String, String>,
}

/// A failed statement of [`read_on`]: which one (`SELECT VERSION()`, `SHOW GLOBAL
/// VARIABLES`) and the client's error.
#[derive(Debug)]
pub struct ReadFailed {
    pub statement: &'static str,
    pub error: mysql::Error,
}

/// The one reader of a server's version and spin settings (`spin --from-server`, tune, sweep),
/// with plain SELECTs any user may run.
pub fn read_on(c: &mut dyn Session) -> std::result::Result<SpinVariables, ReadFailed> {
    let row = version_on(c).map_err(|error| ReadFailed {
        statement: "SELECT VERSION()",
        error,
    })?;
    let rows: Vec<(String, String)> = c.query(SPIN_VARIABLES_SQL).map_err(|error| ReadFailed {
        statement: "SHOW GLOBAL VARIABLES",
        error,
    })?;
    let (version, version_comment) = match row {
        Some((v, c)) => (Some(v), c),
        None => (None, None),
    };
    Ok(SpinVariables {
        version,
        version_comment,
        variables: rows
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
    })
}

/// `VERSION()` and `@@version_comment` (doctor's collection reads the variables itself).
pub fn version_on(c: &mut dyn Session) -> mysql::Result<Option<(String, Option<String>)>> {
    c.query_first(VERSION_SQL)
}

pub fn read(t: &Target) -> Result<LiveSettings> {
    let (mut c, _) = connect_checked(t)?;
    let read = read_on(&mut c).map_err(|f| {
        Error::runtime(format!(
            "reading the spin settings of {}: {}",
            t.describe(),
            f.error
        ))
    })?;
    let version = read.version.ok_or_else(|| {
        Error::runtime(format!(
            "{}: SELECT VERSION() returned nothing",
            t.describe()
        ))
    })?;
    Ok(LiveSettings {
        target: t.describe(),
        local: t.is_local(),
        version,
        version_comment: read.version_comment,
        variables: read.variables,
    })
}

/// Where `spin` reads a version and spin settings from: a doctor snapshot or a live server.
#[derive(Debug, Clone)]
pub struct SettingsSource {
    pub version: String,
    pub comment: Option<String>,
    pub vars: BTreeMap<String, String>,
    /// `snapshot FILE (target)` or `live server TARGET`.
    pub label: String,
    /// The CPU recorded with the settings (a snapshot's host facts), when known.
    pub cpu: Option<crate::spin::model::CpuModel>,
    /// A live server not on this machine: this CPU is not its CPU.
    pub remote: bool,
    /// The snapshot file read, for messages naming it (`None`: a live server).
    pub file: Option<std::path::PathBuf>,
    /// Why a snapshot gives no CPU (the field missing), when it gives none.
    pub cpu_gap: Option<String>,
}

impl SettingsSource {
    /// From a snapshot saved by `doctor --save-snapshot`, with its host's CPU when it has one.
    pub fn snapshot(p: &std::path::Path) -> Result<SettingsSource> {
        let snap = super::snapshot::Snapshot::load(p)?;
        let cpu = snap.host.as_ref().and_then(super::host::cpu_model);
        let cpu_gap =
            match (&snap.host, &cpu) {
                (_, Some(_)) => None,
                (None, None) => Some("has no field \"host\" (host facts)".to_string()),
                (Some(h), None) => Some(format!(
                "field \"host\" has no \"ns_per_hint\" and its CPU ({} {}) is not a reference CPU",
                if h.arch.is_empty() { "unknown arch" } else { h.arch.as_str() },
                h.cpu_vendor.as_deref().unwrap_or("unknown vendor")
            )),
            };
        Ok(SettingsSource {
            cpu,
            cpu_gap,
            label: format!("snapshot {} ({})", p.display(), snap.target),
            version: snap.version,
            comment: snap.version_comment,
            vars: snap.variables,
            remote: false,
            file: Some(p.to_path_buf()),
        })
    }

    /// From a live server.
    pub fn live(t: &Target) -> Result<SettingsSource> {
        let live = read(t)?;
        Ok(SettingsSource {
            label: format!("live server {}", live.target),
            version: live.version,
            comment: live.version_comment,
            vars: live.variables,
            cpu: None,
            remote: !live.local,
            file: None,
            cpu_gap: None,
        })
    }
}
