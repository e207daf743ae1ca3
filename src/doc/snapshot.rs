//! `spinscope.doctor-snapshot/1` (`doctor --save-snapshot`; a watch capture's
//! `doctor-snapshot.json`).

pub use crate::server::snapshot::{HostFacts, Snapshot, SNAPSHOT_SCHEMA as SCHEMA};
