//! `spinscope.doctor/1` (`doctor --json`), with doctor --rt's part.

pub use crate::doctor::rt::{RtRow, RtSide};
pub use crate::doctor::{DoctorDoc, Evidence, Finding, Severity, DOCTOR_SCHEMA as SCHEMA};
pub use crate::journal::DocIdentity;
