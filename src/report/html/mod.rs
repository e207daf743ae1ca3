//! `spinscope report`: one self-contained page (HTML, or Markdown with its charts as files)
//! from any mix of saved documents. Each input is read ([`load`]), its kind found by the
//! document's `schema` field, and the kind's module turns it into a [`Section`] of plain
//! [`Block`]s, with the server it is about, its time, its worst finding as a [`Verdict`] and its
//! headline numbers. [`page`] orders them: the verdict first (one screen), then before/after
//! comparisons, then the details per server in time order. Everything from a document is
//! escaped (documents are untrusted). Inputs that are not spinscope's are listed under
//! "Not included", one line each, never a panic.
//!
//! Adding a kind: a module with a unit struct implementing [`Kind`] (its schema prefix and
//! `section`), and one line in [`kinds`].

mod capture;
mod diff;
mod doctor;
mod fleet;
mod lab;
mod load;
pub mod noise;
pub mod page;
mod probe;
mod profile;
mod rt;
mod spin;
mod sweep;
mod tune;

pub use load::{load, load_all, Diagnose};
pub use page::{html, markdown, Markdown};

use serde_json::Value;

/// One piece of a section, rendered by both HTML and Markdown.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Para(String),
    List(Vec<String>),
    /// Header and rows of cells.
    Table(Vec<String>, Vec<Vec<String>>),
    /// Lines to copy as they are (SQL, option-file lines).
    Code(Vec<String>),
    /// An SVG produced by spinscope itself (charts, flame graph): embedded as is in HTML,
    /// written beside the Markdown as a file.
    Svg {
        name: String,
        svg: String,
    },
    /// Figures shown side by side (before and after), each with its caption; one column on a
    /// narrow page.
    Pair(Vec<(String, Block)>),
}

/// The worst finding about one server, for the verdict screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// 0 critical, 1 warning.
    pub rank: u8,
    pub finding_id: String,
    /// The finding in words.
    pub what: String,
    /// The numbers behind it.
    pub evidence: Vec<String>,
    pub why: String,
    /// SQL to run now, and lines for the option file's `[mysqld]` section.
    pub sql: Vec<String>,
    pub option_file: Vec<String>,
}

/// What a kind makes of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The kind ("doctor", "capture", ...): before/after pairs are of one kind.
    pub kind: &'static str,
    pub title: String,
    /// One sentence each, for the verdict screen's "also found"; the most severe first.
    pub summary: Vec<(u8, String)>,
    pub blocks: Vec<Block>,
    /// The server the document is about (its target as the tool named it), when it says.
    pub server: Option<String>,
    /// When it was measured, seconds since the epoch (the document's own time, else the
    /// file's modification time).
    pub time_unix_s: Option<f64>,
    pub verdict: Option<Verdict>,
    /// The finding ids the document reports at warning or above (a later run without the
    /// verdict's finding shows the fix worked).
    pub finding_ids: Vec<String>,
    /// Headline numbers (name, value) compared between two documents of one kind.
    pub numbers: Vec<(String, String)>,
    /// The chart that stands for the document in a before/after pair.
    pub picture: Option<Block>,
    /// Which server, as the server itself reported it (the journal's key and facts): one
    /// server reached by TCP and by the socket is one section of the page.
    pub identity: Option<crate::journal::DocIdentity>,
    /// Headline numbers' values per window (named as in `numbers`): their noise.
    pub windows: Vec<noise::Windows>,
}

impl Section {
    pub fn new(
        kind: &'static str,
        title: String,
        summary: Vec<(u8, String)>,
        blocks: Vec<Block>,
    ) -> Section {
        Section {
            kind,
            title,
            summary,
            blocks,
            server: None,
            time_unix_s: None,
            verdict: None,
            finding_ids: Vec::new(),
            numbers: Vec::new(),
            picture: None,
            identity: None,
            windows: Vec::new(),
        }
    }
}

/// A document kind: which schemas it reads and how it turns one into a section.
pub trait Kind: Sync {
    /// The schema prefix without the version, e.g. `spinscope.probe/`.
    fn schema(&self) -> &'static str;
    /// The section of a document (`source` names the input): the kind reads it into its type
    /// (`crate::doc`, through [`typed`]) and renders from that. Err says why it is left out.
    fn section(&self, doc: &Value, source: &str) -> Result<Section, String>;
}

/// Every kind the report knows.
pub fn kinds() -> Vec<&'static dyn Kind> {
    vec![
        &probe::Probe,
        &spin::Spin,
        &fleet::Fleet,
        &doctor::Doctor,
        &sweep::Sweep,
        &diff::ProfileDiff,
        &profile::Profile,
        &lab::Lab,
        &tune::Tune,
        &rt::Rt,
        &capture::Capture,
        &capture::WatchLog,
    ]
}

/// The result of reading one input (a page holds a handful: the size difference is no cost).
#[allow(clippy::large_enum_variant)]
pub enum Input {
    Section { source: String, section: Section },
    Skipped { source: String, why: String },
}

/// The one HTML escaper (text and attribute values).
pub use crate::report::esc;

/// The one Markdown escaper (`report::markdown`, the one Markdown writer).
pub use crate::report::markdown::escape as md;

/// Text of a document's value for a table cell: a fraction through `fmt_num`, a whole number
/// as it is, text as it is, a missing value (`None`) as "-".
pub trait Cell {
    fn cell(&self) -> String;
}

impl Cell for f64 {
    fn cell(&self) -> String {
        crate::report::fmt_num(*self)
    }
}

impl Cell for f32 {
    fn cell(&self) -> String {
        crate::report::fmt_num(wide(*self))
    }
}

/// A value a document stores as f32, as the f64 its JSON text reads as (what a reader of the
/// document sees: 0.15, not 0.15000000596), so a cell or a rounding shows the written digits.
pub fn wide(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::NAN)
}

macro_rules! whole_cell {
    ($($t:ty),*) => {$(
        impl Cell for $t {
            fn cell(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
whole_cell!(u64, u32, u16, usize, i64, i32, bool);

impl Cell for str {
    fn cell(&self) -> String {
        self.to_string()
    }
}

impl Cell for String {
    fn cell(&self) -> String {
        self.clone()
    }
}

impl Cell for crate::doc::Severity {
    fn cell(&self) -> String {
        self.name().to_string()
    }
}

impl<T: Cell> Cell for Option<T> {
    fn cell(&self) -> String {
        self.as_ref().map_or_else(|| "-".into(), Cell::cell)
    }
}

/// Text of a document's value for a table cell (see [`Cell`]).
pub fn cell<T: Cell + ?Sized>(v: &T) -> String {
    v.cell()
}

/// The name a unit-like enum has in its document (`"pause"`, `"innodb-spin"`), for a cell.
pub fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "-".into(),
    }
}

/// A two-column table of named fields (a field a document leaves out is given as `None`, and
/// has no row).
pub fn fields(rows: Vec<(&str, Option<String>)>) -> Block {
    let rows = rows
        .into_iter()
        .filter_map(|(n, v)| v.map(|v| vec![n.to_string(), v]))
        .collect();
    Block::Table(vec!["field".into(), "value".into()], rows)
}

/// Deserialize a document into its type, once, at load: `Err` names what is wrong (serde says
/// which field is missing or of the wrong type); the input is then listed as not included.
pub fn typed<T: serde::de::DeserializeOwned>(doc: &Value) -> Result<T, String> {
    <T as serde::Deserialize>::deserialize(doc).map_err(|e| format!("not a valid document: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_text_is_escaped_and_sections_are_ordered_by_severity() {
        let doc = serde_json::json!({
            "schema": "spinscope.doctor/1", "source": "live", "target": "db1 <b>",
            "server": "MariaDB 10.11", "version": "10.11.6-MariaDB",
            "pfs_top_waits": [], "refused": [], "notes": [],
            "findings": [
                {"id": "x", "severity": "info", "title": "fine", "evidence": [], "why": "", "what_to_do": "", "statements": []},
                {"id": "y", "severity": "critical", "title": "<img src=x onerror=alert(1)>", "evidence": [], "why": "a|b", "what_to_do": "", "statements": []}
            ]
        });
        let sec = doctor::Doctor.section(&doc, "d.json").unwrap();
        let inputs = vec![
            Input::Section {
                source: "d.json".into(),
                section: sec,
            },
            Input::Skipped {
                source: "<bad>".into(),
                why: "unknown".into(),
            },
        ];
        let page = html(&inputs);
        assert!(!page.contains("<img src=x"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("&lt;bad&gt;: unknown"));
        let md = markdown(&inputs, None).text;
        assert!(md.contains("### Doctor: db1 \\<b\\>"), "{md}");
        assert!(!md.contains("&lt;") && !md.contains("&#39;"), "{md}");
        assert!(
            md.contains("Critical: \\<img src=x onerror=alert(1)\\>."),
            "{md}"
        );
        assert!(md.contains("- why: a\\|b"), "{md}");
        assert!(md.contains("## Not included"));
        assert!(md.find("## Verdict") < md.find("## Details"), "{md}");
    }
}
