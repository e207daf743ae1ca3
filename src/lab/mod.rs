//! Contention laboratory (`spinscope lab`, issue 4): latches built after the servers' spin
//! designs (spin-facts.md §2), a harness that runs them under controlled load with an emulated
//! slower spin hint (`--pause-scale K`), and the measurements it takes.
//!
//! - [`clock`]: TSC, its calibration, the timer cost, the scaled hint.
//! - [`futex`]: the futex lock word every spinning latch sleeps on.
//! - [`latch`]: the latches and their random ranges.
//! - [`harness`]: one measured point. Summaries and verdicts are pure, in
//!   `analysis::lab_stats`; rendering is in `cli::lab` and `report::chart`.

pub mod clock;
pub mod futex;
pub mod harness;
pub mod latch;

pub use harness::{run_point, RunMetrics, Workload, INTERRUPTED};
pub use latch::{make_latch, SpinParams, LATCH_NAMES};
