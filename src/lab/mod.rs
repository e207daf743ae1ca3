//! Contention laboratory (`spinscope lab`): latches built after the servers' spin designs
//! (docs/REFERENCE.md §1), a harness that runs them under controlled load with an emulated
//! slower spin hint (`--pause-scale K`), and the measurements it takes. Timing (counter reads,
//! calibration, hints) is `cpu::timing`, shared with the probe.
//!
//! - [`latch`]: [`LatchKind`] (every latch and its properties) and the latches themselves.
//! - [`futex`]: the futex lock word every spinning latch sleeps on.
//! - [`harness`]: one measured run of one point.
//! - [`plan`]: the typed plan and its validation; [`engine`]: runs a plan into a [`LabDoc`].
//! - [`doc`]: the `spinscope.lab/2` document; its tables and charts are `report::lab`.
//!
//! Summaries and verdicts are pure, in `analysis::lab_stats`.

pub mod doc;
pub mod engine;
pub mod futex;
pub mod harness;
pub mod latch;
pub mod plan;

pub use doc::{LabDoc, Machine, Point};
pub use engine::{run, Progress};
pub use harness::{run_point, RunMetrics, Workload};
pub use latch::{LatchKind, SpinParams};
pub use plan::LabPlan;
