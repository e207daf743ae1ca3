//! Every `spinscope.*` document, reachable from one module: one file per kind, each naming the
//! serde types a command writes with `--json`, `--save` or `--out` (and `report` reads back).
//! Serde only: nothing here opens a file, a socket or a clock.
//!
//! Today most types are still defined beside the engine that builds them and re-exported here
//! (the arrow runs from `doc` to the engines, so `doc` ranks above them and below `report`);
//! the shapes only `report` makes (the `rt --json` lines gathered into one run, a `watch.log`
//! read whole) are defined here. The next step (issue 35 §7) moves the definitions down into
//! this module and then into a crate of their own, so that Cargo keeps renderers off the
//! engines. A new document kind: a file here with its types (or the re-export of them), its
//! schema constant, and a line in the table of docs/ARCHITECTURE.md.

pub mod doctor;
pub mod fleet;
pub mod lab;
pub mod probe;
pub mod profile;
pub mod rt;
pub mod snapshot;
pub mod spin;
pub mod sweep;
pub mod tune;
pub mod watch;

pub use doctor::Severity;

use serde::Deserialize;

/// The part every document shares: its schema, by which `report` picks its kind.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Head {
    #[serde(default)]
    pub schema: String,
}
