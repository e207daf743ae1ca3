//! Renderers shared by every command: JSON documents and terminal tables.

pub mod spin;

pub mod chart;
pub mod html;
pub mod lab;
pub mod probe;
pub mod sweep;
pub mod sweep_html;
pub mod timeline;

// JSON saving, the table builder and the number formatters are plain helpers below every
// layer (`files`, `units`: the engines use them too); re-exported here for the renderers and
// older callers.
pub use crate::files::{save_json, to_json};
pub use crate::units::{fmt_count, fmt_ns, fmt_num, table};
