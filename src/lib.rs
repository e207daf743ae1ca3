//! spinscope: turn InnoDB spin-wait settings into time on a CPU, and measure the rest of the
//! loop (probe, spin, lab, ...). See docs/ARCHITECTURE.md for the module map.
//!
//! Data flows one way: measuring modules (`cpu`, `lab`) touch clocks and threads; model and
//! analysis modules (`spin`, `analysis`) are pure; `report` renders.

pub mod analysis;
pub mod change;
pub mod cli;
pub mod cpu;
pub mod doc;
pub mod doctor;
pub mod error;
pub mod files;
pub mod fleet;
pub mod globals;
pub mod interrupt;
pub mod journal;
pub mod lab;
pub mod load;
pub mod meter;
pub mod profile;
/// The MySQL classic protocol: its own crate (crates/spinscope-proto), so that Cargo keeps it
/// free of the rest of spinscope.
pub use spinscope_proto as proto;
pub mod report;
pub mod rt;
pub mod secret;
pub mod server;
pub mod session;
pub mod spin;
pub mod sweep;
pub mod tune;
pub mod units;
pub mod watch;

pub use error::{Error, Result};
