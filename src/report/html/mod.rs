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

pub use load::{load, load_all};
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
    /// The section of a document (`source` names the input). Err says why it is left out.
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

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// Escape text for Markdown (a table cell, list item or paragraph): the characters CommonMark
/// would read as markup get a backslash, so the text renders as itself with no HTML entity and
/// no raw HTML; line breaks become spaces.
pub fn md(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut o = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' => {
                o.push('\\');
                o.push(c);
            }
            // `_` inside a word (innodb_spin_wait_delay) is no emphasis in GFM: left as is.
            '_' if !(word(i.checked_sub(1)) && word(Some(i + 1))) => o.push_str("\\_"),
            '&' => o.push_str("\\&"),
            '\n' | '\r' => o.push(' '),
            _ => o.push(c),
        }
    }
    o
}

/// Text of a JSON value for a table cell.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_f64()
            .map(|f| {
                if n.is_f64() {
                    crate::report::fmt_num(f)
                } else {
                    n.to_string()
                }
            })
            .unwrap_or_else(|| n.to_string()),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// A two-column table of the named fields of an object (those present).
pub fn fields(doc: &Value, names: &[&str]) -> Block {
    let rows = names
        .iter()
        .filter_map(|n| doc.get(*n).map(|v| vec![n.to_string(), cell(v)]))
        .collect();
    Block::Table(vec!["field".into(), "value".into()], rows)
}

/// The command line a document records, when it does.
pub fn command(doc: &Value) -> Option<Block> {
    let c = doc.get("command").or_else(|| doc.get("argv"))?;
    let s = match c {
        Value::Array(a) => a.iter().map(cell).collect::<Vec<_>>().join(" "),
        v => cell(v),
    };
    Some(Block::Para(format!("Command: {s}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_text_is_escaped_and_sections_are_ordered_by_severity() {
        let doc = serde_json::json!({
            "schema": "spinscope.doctor/1",
            "target": "db1 <b>",
            "findings": [
                {"id": "x", "severity": "info", "title": "fine", "evidence": []},
                {"id": "y", "severity": "critical", "title": "<img src=x onerror=alert(1)>", "evidence": [], "why": "a|b"}
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
