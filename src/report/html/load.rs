//! Reading inputs: a JSON document, JSON lines (`rt --json`), a snapshot file, a watch capture
//! directory (`capture.json` beside `doctor-snapshot.json`, the capture about the server the
//! snapshot identifies), a `watch --out` directory (its `watch.log` and every capture directory
//! in it), or a `doctor-fleet` document (one section per server besides the fleet's).

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
            return capture_dir(path, &source);
        }
        if has("watch.log") {
            return watch_dir(path, &source);
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

/// A watch capture directory: its capture and the snapshot taken with it; the capture is
/// about the server the snapshot identifies.
fn capture_dir(path: &Path, source: &str) -> Vec<Input> {
    let mut out = one(&path.join("capture.json"), source);
    if path.join("doctor-snapshot.json").is_file() {
        out.extend(one(&path.join("doctor-snapshot.json"), source));
    }
    let id = identity_of(&out);
    for i in &mut out {
        if let Input::Section { section, .. } = i {
            section.identity = section.identity.take().or_else(|| id.clone());
        }
    }
    out
}

/// The one identity the sections carry (None when none does, or they disagree).
fn identity_of(inputs: &[Input]) -> Option<crate::journal::DocIdentity> {
    let mut ids = inputs.iter().filter_map(|i| match i {
        Input::Section { section, .. } => section.identity.as_ref(),
        Input::Skipped { .. } => None,
    });
    let first = ids.next()?;
    ids.all(|x| x.key == first.key).then(|| first.clone())
}

/// The capture directories directly inside `dir`, by name (watch names them by the time).
fn capture_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            // A link is not followed: a capture is a directory watch made here.
            std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
                && p.join("capture.json").is_file()
        })
        .collect();
    v.sort();
    v
}

/// A `watch --out` directory: its log (each event told whether its capture is here) and every
/// capture in it, each as a capture directory given alone.
fn watch_dir(path: &Path, source: &str) -> Vec<Input> {
    let caps = capture_dirs(path);
    let names: Vec<String> = caps
        .iter()
        .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut captures: Vec<Input> = caps
        .iter()
        .flat_map(|c| capture_dir(c, &c.display().to_string()))
        .collect();
    let id = identity_of(&captures);
    let mut out = one_with(&path.join("watch.log"), source, &names);
    for i in &mut out {
        if let Input::Section { section, .. } = i {
            section.identity = section.identity.take().or_else(|| id.clone());
        }
    }
    out.append(&mut captures);
    out
}

/// One file, named `source` on the page.
fn one(file: &Path, source: &str) -> Vec<Input> {
    one_with(file, source, &[])
}

/// One file; `here` names the capture directories beside a watch.log.
fn one_with(file: &Path, source: &str, here: &[String]) -> Vec<Input> {
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
        match watch_log(&text, here) {
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
fn watch_log(text: &str, here: &[String]) -> Result<Value, String> {
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
        let mut v = v;
        // The capture's directory as watch named it then; the same name beside the log is it.
        let base = v["dir"]
            .as_str()
            .and_then(|d| Path::new(d).file_name())
            .map(|n| n.to_string_lossy().into_owned());
        if let Some(b) = base {
            if let Some(o) = v.as_object_mut() {
                o.insert("here".into(), Value::Bool(here.contains(&b)));
                o.insert("dir_name".into(), Value::String(b));
            }
        }
        events.push(v);
    }
    if events.is_empty() {
        return Err("empty: no trigger fired".into());
    }
    Ok(serde_json::json!({"schema": "spinscope.watch-log/1", "events": events}))
}
