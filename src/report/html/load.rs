//! Reading inputs: a JSON document, JSON lines (`rt --json`), a snapshot file, a watch capture
//! directory (`capture.json` beside `doctor-snapshot.json`), a `watch --out` directory (its
//! `watch.log`), or a `doctor-fleet` document (one section per server besides the fleet's).

use std::path::Path;

use serde_json::Value;

use super::{kinds, Input};

const MAX_INPUT: u64 = 256 << 20;

/// Read every input, in the order given.
pub fn load_all(paths: &[std::path::PathBuf]) -> Vec<Input> {
    paths
        .iter()
        .flat_map(|p| load(p))
        .map(|i| match i {
            // A reason can quote the input (a parser's words): the one secret filter.
            Input::Skipped { source, why } => Input::Skipped {
                source,
                why: crate::secret::scrub(&why),
            },
            i => i,
        })
        .collect()
}

fn read(file: &Path) -> Result<String, String> {
    match std::fs::metadata(file) {
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
        Ok(m) if m.len() > MAX_INPUT => Err(format!("larger than {MAX_INPUT} bytes")),
        // files.rs's reader: never a FIFO or device, capped.
        Ok(_) => {
            crate::files::read_capped(file, MAX_INPUT, "report input").map_err(|e| e.to_string())
        }
    }
}

fn mtime(file: &Path) -> Option<f64> {
    let t = std::fs::metadata(file).ok()?.modified().ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs_f64())
}

/// Read one input into its sections (several for a capture directory or a fleet).
pub fn load(path: &Path) -> Vec<Input> {
    let source = path.display().to_string();
    let skip = |why: String| {
        vec![Input::Skipped {
            source: source.clone(),
            why,
        }]
    };
    if path.is_dir() {
        let has = |n: &str| path.join(n).is_file();
        if has("capture.json") {
            let mut out = one(&path.join("capture.json"), &source);
            if has("doctor-snapshot.json") {
                out.extend(one(&path.join("doctor-snapshot.json"), &source));
            }
            return out;
        }
        if has("watch.log") {
            return one(&path.join("watch.log"), &source);
        }
        if has("doctor-snapshot.json") {
            return one(&path.join("doctor-snapshot.json"), &source);
        }
        return skip(
            "a directory without capture.json, watch.log or doctor-snapshot.json: not spinscope's; give a document or a watch directory".into(),
        );
    }
    one(path, &source)
}

/// One file, named `source` on the page.
fn one(file: &Path, source: &str) -> Vec<Input> {
    let skip = |why: String| {
        vec![Input::Skipped {
            source: source.to_string(),
            why,
        }]
    };
    let text = match read(file) {
        Ok(t) => t,
        Err(e) => return skip(e),
    };
    let mut doc = if file.file_name().is_some_and(|n| n == "watch.log") {
        match watch_log(&text) {
            Ok(d) => d,
            Err(e) => return skip(format!("watch.log: {e}")),
        }
    } else {
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => match json_lines(&text) {
                Some(v) => v,
                None => return skip(format!("not a JSON document: {e}")),
            },
        }
    };
    // The one secret filter: no password in an input reaches the page.
    crate::secret::scrub_json(&mut doc);
    let schema = doc
        .get("schema")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    // A snapshot is diagnosed as `doctor --snapshot` would; its time is the capture's.
    let mut time = None;
    let doc = if schema.starts_with("spinscope.doctor-snapshot/") {
        match crate::server::snapshot::Snapshot::load(file) {
            Ok(snap) => {
                time = Some(snap.captured_at_unix_s as f64).filter(|t| *t > 0.0);
                let d =
                    crate::doctor::build_doc(source, &crate::doctor::Facts::from_snapshot(snap));
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
    let mut out = Vec::new();
    if schema.starts_with("spinscope.doctor-fleet/") {
        // Each server's own document, as if given alone, after the fleet's table.
        for row in doc["servers"].as_array().into_iter().flatten() {
            if let Some(d) = row.get("doc").filter(|d| d.is_object()) {
                out.extend(section(
                    d,
                    &format!("{source} ({})", super::cell(&row["name"])),
                    file,
                    None,
                ));
            }
        }
    }
    let mut first = section(&doc, source, file, time);
    first.append(&mut out);
    first
}

fn section(doc: &Value, source: &str, file: &Path, time: Option<f64>) -> Vec<Input> {
    let schema = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    let skip = |why: String| {
        vec![Input::Skipped {
            source: source.to_string(),
            why,
        }]
    };
    match kinds().into_iter().find(|k| schema.starts_with(k.schema())) {
        None if schema.is_empty() => skip("no \"schema\" field: not a spinscope document".into()),
        None => skip(format!(
            "unknown schema {schema:?}: not a document this spinscope writes"
        )),
        Some(k) => match k.section(doc, source) {
            Ok(mut section) => {
                section.time_unix_s = section.time_unix_s.or(time).or_else(|| mtime(file));
                vec![Input::Section {
                    source: source.to_string(),
                    section,
                }]
            }
            Err(why) => skip(format!("{schema}: {why}")),
        },
    }
}

/// `rt --json` output: one `spinscope.rt/1` interval per line, the run's total last. Made into
/// the shape `rt --save` writes (intervals and total); None when it is not that.
fn json_lines(text: &str) -> Option<Value> {
    let mut intervals = Vec::new();
    let mut total = None;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(l).ok()?;
        if !v["schema"].as_str()?.starts_with("spinscope.rt/") {
            return None;
        }
        if v["kind"] == "total" {
            total = Some(v);
        } else {
            intervals.push(v);
        }
    }
    let total = total.or_else(|| intervals.last().cloned())?;
    Some(serde_json::json!({
        "schema": total["schema"],
        "kind": "lines",
        "intervals": intervals,
        "total": total,
    }))
}

/// `watch.log`: one JSON object per line: a trigger event (time, server, trigger, capture dir,
/// peaks or why it was skipped), a burst (`burst`: what became of it) or a server's burst counts
/// at the end of a run (`bursts`). Made into one document of schema `spinscope.watch-log/1` (the report's name for
/// it: the file itself has no schema field).
fn watch_log(text: &str) -> Result<Value, String> {
    let mut events = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value =
            serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let kind = ["trigger", "burst", "bursts"]
            .iter()
            .any(|k| v.get(k).is_some());
        if v.get("time").is_none() || !kind {
            return Err(format!(
                "line {}: no \"time\" with \"trigger\", \"burst\" or \"bursts\": not a watch log line",
                i + 1
            ));
        }
        events.push(v);
    }
    if events.is_empty() {
        return Err("empty: no trigger fired".into());
    }
    Ok(serde_json::json!({"schema": "spinscope.watch-log/1", "events": events}))
}
