//! Reading inputs: a JSON document, JSON lines (`rt --json`), a snapshot file, a watch capture
//! directory (`capture.json` beside `doctor-snapshot.json`, the capture about the server the
//! snapshot identifies), a `watch --out` directory (its `watch.log` and every capture directory
//! in it), or a `doctor-fleet` document (one section per server besides the fleet's).
//!
//! Every document is read into its type here, once (`crate::doc`); a snapshot is diagnosed by
//! the [`Diagnose`] the report command passes in, not by the renderer.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{kinds, Input, Section};
use crate::doc::doctor::DoctorDoc;
use crate::doc::fleet::FleetDoc;
use crate::doc::rt::{IntervalReport, RtLines};
use crate::doc::watch::{LogEvent, LogLine, WatchLog, LOG_SCHEMA};
use crate::doc::Head;

/// What turns a snapshot file into a doctor document (and the snapshot's capture time):
/// doctor's engine, which the report command's shell (`cli::report`) hands in, so that the
/// renderer runs no engine. `Err` says why the snapshot is left out.
pub type Diagnose<'a> = &'a dyn Fn(&Path, &str) -> Result<(DoctorDoc, Option<f64>), String>;

const MAX_INPUT: u64 = 256 << 20;

/// Read every input, in the order given.
pub fn load_all(paths: &[std::path::PathBuf], diagnose: Diagnose) -> Vec<Input> {
    paths
        .iter()
        .flat_map(|p| load(p, diagnose))
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
pub fn load(path: &Path, diagnose: Diagnose) -> Vec<Input> {
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
            return capture_dir(path, &source, diagnose);
        }
        if has("watch.log") {
            return watch_dir(path, &source, diagnose);
        }
        if has("doctor-snapshot.json") {
            return one(&path.join("doctor-snapshot.json"), &source, diagnose);
        }
        return skip(
            "a directory without capture.json, watch.log or doctor-snapshot.json: not spinscope's; give a document or a watch directory".into(),
        );
    }
    one(path, &source, diagnose)
}

/// A watch capture directory: its capture and the snapshot taken with it; the capture is
/// about the server the snapshot identifies.
fn capture_dir(path: &Path, source: &str, diagnose: Diagnose) -> Vec<Input> {
    let mut out = one(&path.join("capture.json"), source, diagnose);
    if path.join("doctor-snapshot.json").is_file() {
        out.extend(one(&path.join("doctor-snapshot.json"), source, diagnose));
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
fn watch_dir(path: &Path, source: &str, diagnose: Diagnose) -> Vec<Input> {
    let caps = capture_dirs(path);
    let names: Vec<String> = caps
        .iter()
        .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    let mut captures: Vec<Input> = caps
        .iter()
        .flat_map(|c| capture_dir(c, &c.display().to_string(), diagnose))
        .collect();
    let id = identity_of(&captures);
    let mut out = one_with(&path.join("watch.log"), source, &names, diagnose);
    for i in &mut out {
        if let Input::Section { section, .. } = i {
            section.identity = section.identity.take().or_else(|| id.clone());
        }
    }
    out.append(&mut captures);
    out
}

/// One file, named `source` on the page.
fn one(file: &Path, source: &str, diagnose: Diagnose) -> Vec<Input> {
    one_with(file, source, &[], diagnose)
}

/// One file; `here` names the capture directories beside a watch.log.
fn one_with(file: &Path, source: &str, here: &[String], diagnose: Diagnose) -> Vec<Input> {
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
    let schema = Head::deserialize(&doc).unwrap_or_default().schema;
    // A snapshot is diagnosed as `doctor --snapshot` would (by the engine the report command
    // hands in); its time is the capture's.
    if schema.starts_with("spinscope.doctor-snapshot/") {
        return match diagnose(file, source) {
            Ok((d, time)) => finish(super::doctor::section(&d), &d.schema, source, file, time),
            Err(e) => skip(e),
        };
    }
    let mut out = Vec::new();
    if schema.starts_with("spinscope.doctor-fleet/") {
        // Each server's own document, as if given alone, after the fleet's table.
        if let Ok(fleet) = FleetDoc::deserialize(&doc) {
            for row in &fleet.servers {
                if let Some(d) = &row.doc {
                    let source = format!("{source} ({})", row.name);
                    out.extend(finish(
                        super::doctor::section(d),
                        &d.schema,
                        &source,
                        file,
                        None,
                    ));
                }
            }
        }
    }
    let mut first = section(&doc, &schema, source, file);
    first.append(&mut out);
    first
}

fn section(doc: &Value, schema: &str, source: &str, file: &Path) -> Vec<Input> {
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
        Some(k) => finish(k.section(doc, source), schema, source, file, None),
    }
}

/// A kind's section as an input: its time (the document's own, else `time`, else the file's
/// modification time), or why it is left out.
fn finish(
    section: Result<Section, String>,
    schema: &str,
    source: &str,
    file: &Path,
    time: Option<f64>,
) -> Vec<Input> {
    vec![match section {
        Ok(mut section) => {
            section.time_unix_s = section.time_unix_s.or(time).or_else(|| mtime(file));
            Input::Section {
                source: source.to_string(),
                section,
            }
        }
        Err(why) => Input::Skipped {
            source: source.to_string(),
            why: format!("{schema}: {why}"),
        },
    }]
}

/// `rt --json` output: one `spinscope.rt/1` interval per line, the run's total last. Made into
/// the shape `rt --save` writes (intervals and total); None when it is not that.
fn json_lines(text: &str) -> Option<Value> {
    let mut intervals = Vec::new();
    let mut total = None;
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: IntervalReport = serde_json::from_str(l).ok()?;
        if !v.schema.starts_with("spinscope.rt/") {
            return None;
        }
        if v.kind == "total" {
            total = Some(v);
        } else {
            intervals.push(v);
        }
    }
    let total = total.or_else(|| intervals.last().cloned())?;
    serde_json::to_value(RtLines {
        schema: total.schema.clone(),
        kind: "lines".into(),
        intervals,
        total,
    })
    .ok()
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
        let not_watch = || {
            format!(
                "line {}: no \"time\" with \"trigger\", \"burst\" or \"bursts\": not a watch log line",
                i + 1
            )
        };
        let v: Value =
            serde_json::from_str(l).map_err(|e| format!("line {}: not JSON: {e}", i + 1))?;
        let line = LogLine::deserialize(&v).map_err(|e| format!("{} ({e})", not_watch()))?;
        if line.trigger.is_empty() && line.burst.is_none() && line.bursts.is_none() {
            return Err(not_watch());
        }
        // The capture's directory as watch named it then; the same name beside the log is it.
        let dir_name = line
            .dir
            .as_deref()
            .and_then(|d| Path::new(d).file_name())
            .map(|n| n.to_string_lossy().into_owned());
        events.push(LogEvent {
            here: dir_name.as_ref().map(|b| here.contains(b)),
            dir_name,
            line,
        });
    }
    if events.is_empty() {
        return Err("empty: no trigger fired".into());
    }
    serde_json::to_value(WatchLog {
        schema: LOG_SCHEMA.into(),
        events,
    })
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never(_: &Path, _: &str) -> Result<(DoctorDoc, Option<f64>), String> {
        panic!("only snapshots are diagnosed")
    }

    #[test]
    fn a_malformed_document_is_left_out_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("doctor.json");
        std::fs::write(&f, r#"{"schema": "spinscope.doctor/1", "target": "db1"}"#).unwrap();
        let got = load(&f, &never);
        let [Input::Skipped { source, why }] = &got[..] else {
            panic!("not skipped");
        };
        assert_eq!(source, &f.display().to_string());
        assert!(
            why.starts_with("spinscope.doctor/1: not a valid document: missing field"),
            "{why}"
        );
    }

    #[test]
    fn a_snapshot_is_diagnosed_by_the_engine_the_caller_hands_in() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("snap.json");
        std::fs::write(&f, r#"{"schema": "spinscope.doctor-snapshot/1"}"#).unwrap();
        let refuse = |p: &Path, _: &str| -> Result<(DoctorDoc, Option<f64>), String> {
            Err(format!("not diagnosed here: {}", p.display()))
        };
        let got = load(&f, &refuse);
        let [Input::Skipped { why, .. }] = &got[..] else {
            panic!("not skipped");
        };
        assert!(why.starts_with("not diagnosed here: "), "{why}");
    }

    #[test]
    fn watch_log_lines_are_read_typed_and_told_whether_their_capture_is_here() {
        let text = concat!(
            r#"{"time":"t1","server":"db1","trigger":"threads_running > 4","dir":"/x/cap-1","peaks":{"threads_running":9,"threads_connected":9,"qps":1.0,"row_lock_waits":0,"rtt_ms":0.1}}"#,
            "\n",
            r#"{"time":"t2","server":"db1","trigger":"threads_running > 4","dir":"/x/cap-2","peaks":{"threads_running":8,"threads_connected":8,"qps":1.0,"row_lock_waits":0,"rtt_ms":0.1}}"#,
            "\n"
        );
        let v = watch_log(text, &["cap-1".to_string()]).unwrap();
        let log = WatchLog::deserialize(&v).unwrap();
        assert_eq!(log.events.len(), 2);
        assert_eq!(log.events[0].here, Some(true));
        assert_eq!(log.events[1].here, Some(false));
        assert_eq!(log.events[1].dir_name.as_deref(), Some("cap-2"));
        let e = watch_log(r#"{"time":"t1","server":"db1"}"#, &[]).unwrap_err();
        assert!(e.contains("not a watch log line"), "{e}");
    }
}
