//! `spinscope.probe/1` (`probe --json`, `--save`) and `spinscope.host-probe/1` (this host's
//! saved figure).

pub use crate::cpu::saved::{SavedHost, SCHEMA as HOST_SCHEMA};
pub use crate::cpu::{
    CpuIdentity, HintMeasurement, HostInfo, ProbeReport, ProbeSummary, TopologyInfo, SCHEMA,
};
