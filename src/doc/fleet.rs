//! `spinscope.doctor-fleet/1` (`doctor A B --json`, `doctor --inventory FILE --json`).

pub use crate::fleet::{FleetDoc, Row, Summary, FLEET_SCHEMA as SCHEMA};
