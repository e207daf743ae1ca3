//! `spinscope.watch-capture/1` (a capture directory's `capture.json`) and the lines of
//! `watch.log`, which `report` reads whole as `spinscope.watch-log/1`.

use serde::{Deserialize, Serialize};

pub use crate::watch::doc::{CaptureDoc, CapturePoint, LogLine, Peaks, CAPTURE_SCHEMA};
pub use crate::watch::ledger::{BurstDoc, Counts, Reason};
pub use crate::watch::osstat::{OsSecond, ProcessList, Session};
pub use crate::watch::trigger::Fired;

/// The name `report` gives a whole `watch.log` (the file itself has no schema field).
pub const LOG_SCHEMA: &str = "spinscope.watch-log/1";

/// A `watch.log` read whole: its lines in order, each told whether its capture directory is
/// beside the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchLog {
    pub schema: String,
    pub events: Vec<LogEvent>,
}

/// One line of `watch.log` and what the reader found beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEvent {
    #[serde(flatten)]
    pub line: LogLine,
    /// Whether the capture directory the line names is in the directory read (None: the line
    /// names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub here: Option<bool>,
    /// The capture directory's name (the last part of `dir`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_name: Option<String>,
}
