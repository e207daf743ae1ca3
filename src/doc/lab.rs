//! `spinscope.lab/2` (`lab --json`).

pub use crate::lab::doc::{LabDoc, SCHEMA};
