//! `spinscope.spin/1` (`spin --json`).

pub use crate::spin::doc::{Advice, Comparison, Side, SpinReport, SCHEMA};
pub use crate::spin::model::{CpuModel, Reading, Settings};
