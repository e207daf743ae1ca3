//! `spinscope.tune/1` (`tune --json`, `--save`).

pub use crate::tune::doc::{TuneDoc, SCHEMA};
