//! `spinscope report`: one self-contained page (HTML, or Markdown) from any mix of saved
//! documents. Each input is read, its kind found by the document's `schema` field, and the
//! kind's module turns it into a [`Section`] of plain [`Block`]s; this module renders blocks as
//! HTML (everything from a document escaped: documents are untrusted) or Markdown. Inputs that
//! cannot be read or have an unknown schema are listed under "Not included", never a panic.
//!
//! Adding a kind: a module with a unit struct implementing [`Kind`] (its schema prefix and
//! `section`), and one line in [`kinds`].

mod doctor;
mod lab;
mod probe;
mod profile;
mod spin;
mod sweep;
mod tune;

use std::fmt::Write;
use std::path::Path;

use serde_json::Value;

/// One piece of a section, rendered by both HTML and Markdown.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Para(String),
    List(Vec<String>),
    /// Header and rows of cells.
    Table(Vec<String>, Vec<Vec<String>>),
    /// An SVG produced by spinscope itself (charts, flame graph): embedded as is in HTML,
    /// named in Markdown.
    Svg {
        name: String,
        svg: String,
    },
}

/// What a kind makes of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: String,
    /// One sentence each, for the summary on top; the most severe first.
    pub summary: Vec<(u8, String)>,
    pub blocks: Vec<Block>,
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
        &doctor::Doctor,
        &sweep::Sweep,
        &profile::Profile,
        &lab::Lab,
        &tune::Tune,
    ]
}

/// The result of reading one input.
pub enum Input {
    Section { source: String, section: Section },
    Skipped { source: String, why: String },
}

const MAX_INPUT: u64 = 256 << 20;

/// Read one input: a JSON document, or a snapshot directory (DIR/doctor-snapshot.json) or
/// snapshot file, which is diagnosed offline as `doctor --snapshot` would.
pub fn load(path: &Path) -> Input {
    let source = path.display().to_string();
    let file = if path.is_dir() {
        path.join("doctor-snapshot.json")
    } else {
        path.to_path_buf()
    };
    let skip = |why: String| Input::Skipped {
        source: source.clone(),
        why,
    };
    let text = match std::fs::metadata(&file) {
        Err(e) => return skip(format!("cannot read {}: {e}", file.display())),
        Ok(m) if m.len() > MAX_INPUT => return skip(format!("larger than {MAX_INPUT} bytes")),
        Ok(_) => match crate::files::read_capped(&file, MAX_INPUT, "report input") {
            Ok(t) => t,
            Err(e) => return skip(e.to_string()),
        },
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return skip(format!("not a JSON document: {e}")),
    };
    let schema = doc
        .get("schema")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let doc = if schema.starts_with("spinscope.doctor-snapshot/") {
        match crate::server::snapshot::Snapshot::load(&file) {
            Ok(snap) => {
                let d =
                    crate::doctor::build_doc(&source, &crate::doctor::Facts::from_snapshot(snap));
                match serde_json::to_value(d) {
                    Ok(v) => v,
                    Err(e) => return skip(format!("snapshot not diagnosed: {e}")),
                }
            }
            Err(e) => return skip(format!("snapshot not read: {e}")),
        }
    } else {
        doc
    };
    let schema = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    match kinds().into_iter().find(|k| schema.starts_with(k.schema())) {
        None if schema.is_empty() => skip("no \"schema\" field: not a spinscope document".into()),
        None => skip(format!("unknown schema {schema:?}")),
        Some(k) => match k.section(&doc, &source) {
            Ok(section) => Input::Section { source, section },
            Err(why) => skip(format!("{schema}: {why}")),
        },
    }
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

/// Escape a Markdown table cell or list item (pipes, line breaks, HTML).
fn md(s: &str) -> String {
    esc(s).replace('|', "\\|").replace('\n', " ")
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

const CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:1.5em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}section{border-top:2px solid #ddd;margin-top:1.5em}svg{max-width:100%;height:auto}
.sev0{color:#b00;font-weight:bold}.sev1{color:#a60}.skipped{color:#666}
@media print{section{break-inside:avoid-page}a{color:inherit}}";

/// Records a script error in the page itself (`data-js-error` on `<html>`), so a headless
/// browser's DOM dump shows it; the page loads nothing from outside.
const ERRORS_JS: &str = "window.addEventListener('error',function(e){var d=document.documentElement;d.setAttribute('data-js-error',(d.getAttribute('data-js-error')||'')+String(e.message)+';');});";

/// The HTML page: summary, one section per document, then what was not included.
pub fn html(inputs: &[Input]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>spinscope report</title>\n<style>{CSS}</style>\n<script>{ERRORS_JS}</script></head><body>\n<h1>spinscope report</h1>\n"
    );
    let mut summary: Vec<(u8, String, String)> = Vec::new();
    for (i, inp) in inputs.iter().enumerate() {
        if let Input::Section { section, .. } = inp {
            for (sev, line) in &section.summary {
                summary.push((*sev, line.clone(), format!("s{i}")));
            }
        }
    }
    summary.sort_by_key(|x| x.0);
    let _ = writeln!(s, "<section id=\"summary\"><h2>Summary</h2><ul>");
    if summary.is_empty() {
        let _ = writeln!(s, "<li>No document was included.</li>");
    }
    for (sev, line, id) in &summary {
        let _ = writeln!(
            s,
            "<li class=\"sev{sev}\"><a href=\"#{id}\">{}</a></li>",
            esc(line)
        );
    }
    let _ = writeln!(s, "</ul></section>");
    for (i, inp) in inputs.iter().enumerate() {
        if let Input::Section { source, section } = inp {
            let _ = writeln!(
                s,
                "<section id=\"s{i}\" class=\"doc\"><h2>{}</h2><p class=\"source\">From {}</p>",
                esc(&section.title),
                esc(source)
            );
            for b in &section.blocks {
                block_html(&mut s, b);
            }
            let _ = writeln!(s, "</section>");
        }
    }
    let skipped: Vec<(&String, &String)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Skipped { source, why } => Some((source, why)),
            _ => None,
        })
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(s, "<section id=\"not-included\"><h2>Not included</h2><ul>");
        for (src, why) in skipped {
            let _ = writeln!(s, "<li class=\"skipped\">{}: {}</li>", esc(src), esc(why));
        }
        let _ = writeln!(s, "</ul></section>");
    }
    s.push_str("</body></html>\n");
    s
}

fn block_html(s: &mut String, b: &Block) {
    match b {
        Block::Para(t) => {
            let _ = writeln!(s, "<p>{}</p>", esc(t));
        }
        Block::List(items) => {
            s.push_str("<ul>");
            for it in items {
                let _ = write!(s, "<li>{}</li>", esc(it));
            }
            s.push_str("</ul>\n");
        }
        Block::Table(head, rows) => {
            s.push_str("<table><thead><tr>");
            for h in head {
                let _ = write!(s, "<th>{}</th>", esc(h));
            }
            s.push_str("</tr></thead><tbody>\n");
            for r in rows {
                s.push_str("<tr>");
                for c in r {
                    let _ = write!(s, "<td>{}</td>", esc(c));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</tbody></table>\n");
        }
        Block::Svg { name, svg } => {
            // Spinscope's own SVG (every document string in it is escaped by its renderer);
            // the XML prolog and doctype are dropped for inline use.
            let body = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
            let _ = writeln!(
                s,
                "<figure class=\"chart\" data-name=\"{}\">{body}</figure>",
                esc(name)
            );
        }
    }
}

/// The Markdown page: headings, lists and tables.
pub fn markdown(inputs: &[Input]) -> String {
    let mut s = String::from("# spinscope report\n\n## Summary\n\n");
    let mut summary: Vec<(u8, String)> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Section { section, .. } => Some(section.summary.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    summary.sort_by_key(|x| x.0);
    if summary.is_empty() {
        s.push_str("- No document was included.\n");
    }
    for (_, line) in summary {
        let _ = writeln!(s, "- {}", md(&line));
    }
    for inp in inputs {
        if let Input::Section { source, section } = inp {
            let _ = write!(
                s,
                "\n## {}\n\nFrom `{}`\n\n",
                md(&section.title),
                source.replace('`', "'")
            );
            for b in &section.blocks {
                block_md(&mut s, b);
            }
        }
    }
    let skipped: Vec<String> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Skipped { source, why } => Some(format!("- {}: {}", md(source), md(why))),
            _ => None,
        })
        .collect();
    if !skipped.is_empty() {
        let _ = write!(s, "\n## Not included\n\n{}\n", skipped.join("\n"));
    }
    s
}

fn block_md(s: &mut String, b: &Block) {
    match b {
        Block::Para(t) => {
            let _ = write!(s, "{}\n\n", md(t));
        }
        Block::List(items) => {
            for it in items {
                let _ = writeln!(s, "- {}", md(it));
            }
            s.push('\n');
        }
        Block::Table(head, rows) => {
            let _ = writeln!(
                s,
                "| {} |",
                head.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
            );
            let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
            for r in rows {
                let _ = writeln!(
                    s,
                    "| {} |",
                    r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
                );
            }
            s.push('\n');
        }
        Block::Svg { name, .. } => {
            let _ = write!(s, "_Chart: {} (in the HTML report)._\n\n", md(name));
        }
    }
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
        let md = markdown(&inputs);
        assert!(md.contains("## Doctor: db1 &lt;b&gt;"), "{md}");
        assert!(md.contains("- why: a\\|b"), "{md}");
        assert!(md.contains("## Not included"));
    }
}
