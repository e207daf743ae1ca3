//! `spinscope.rt/1`: one interval or the run's total (`rt --json`, a line each), the whole run
//! (`rt --save`), and the run `report` makes of `rt --json` lines.

use serde::{Deserialize, Serialize};

pub use crate::rt::stats::{Group, IntervalReport, Percentiles, SCHEMA};
pub use crate::rt::stats::{RunReport, TrackerTotals, Truncation};

/// `rt --json` lines read back as one run (`kind: "lines"`): every interval line, and the total
/// line (or the last interval when the run was cut before its total).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtLines {
    pub schema: String,
    /// Always `lines`.
    pub kind: String,
    pub intervals: Vec<IntervalReport>,
    pub total: IntervalReport,
}

/// Any rt document `report` reads, told apart by its `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum RtDoc {
    /// `rt --save`.
    Run(Box<RunReport>),
    /// `rt --json` lines gathered.
    Lines(Box<RtLines>),
    /// One interval or total line alone: its own total.
    Interval(Box<IntervalReport>),
}

#[derive(Deserialize)]
struct Kind {
    #[serde(default)]
    kind: String,
}

impl RtDoc {
    /// Read an rt document of any of the three shapes.
    pub fn from_value(v: &serde_json::Value) -> Result<RtDoc, serde_json::Error> {
        Ok(match Kind::deserialize(v)?.kind.as_str() {
            "run" => RtDoc::Run(Box::new(RunReport::deserialize(v)?)),
            "lines" => RtDoc::Lines(Box::new(RtLines::deserialize(v)?)),
            _ => RtDoc::Interval(Box::new(IntervalReport::deserialize(v)?)),
        })
    }
}
