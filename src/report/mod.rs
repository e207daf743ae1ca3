//! Renderers shared by every command: JSON documents and terminal tables.

pub mod spin;

pub mod chart;
pub mod html;
pub mod sweep;
pub mod sweep_html;
pub mod timeline;

use serde::Serialize;

use crate::error::{Error, Result};

/// Print a JSON document to stdout (pretty, newline-terminated).
pub fn print_json<T: Serialize>(doc: &T) -> Result<()> {
    let s = to_json(doc)?;
    println!("{s}");
    Ok(())
}

/// Serialize a document as pretty JSON.
pub fn to_json<T: Serialize>(doc: &T) -> Result<String> {
    serde_json::to_string_pretty(doc).map_err(|e| Error::runtime(format!("serializing JSON: {e}")))
}

/// Write a JSON document to a file atomically and privately (0600: documents can hold
/// server data), saying which file failed and why.
pub fn save_json<T: Serialize>(doc: &T, path: &std::path::Path) -> Result<()> {
    let s = to_json(doc)? + "\n";
    crate::files::write_atomic(path, s.as_bytes(), "--save", true)
}

/// A plain, borderless table for terminals and pipes alike.
pub fn table(header: &[&str]) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(header.iter().map(comfy_table::Cell::new));
    t
}

// The number formatters live in the pure `units` module (the model layers use them too);
// re-exported here for the renderers and older callers.
pub use crate::units::{fmt_count, fmt_ns, fmt_num};
