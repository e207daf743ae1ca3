//! `spinscope.sweep/1` (`sweep run --json`, `--save`).

pub use crate::sweep::doc::{StepDoc, SweepDoc, SCHEMA};
