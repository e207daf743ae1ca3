//! `spinscope.watch-capture/1` (a watch capture directory's `capture.json`): the trigger, the
//! peaks, and the burst timeline of every sample before and after the trigger; and the
//! `watch.log` of a `watch --out` directory: one row per trigger event.

use serde_json::Value;

use super::{cell, Block, Kind, Section};
use crate::report::timeline::{render, Timeline};

pub struct Capture;
pub struct WatchLog;

fn opt(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

impl Kind for Capture {
    fn schema(&self) -> &'static str {
        "spinscope.watch-capture/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let samples = doc["samples"].as_array().ok_or("no \"samples\" list")?;
        let target = cell(&doc["target"]);
        let tr = &doc["trigger"];
        let col = |k: &str| -> Vec<f64> {
            samples
                .iter()
                .map(|s| {
                    if k == "threads_running" && s["held"] == true {
                        f64::NAN
                    } else {
                        opt(&s[k])
                    }
                })
                .collect()
        };
        let tl = Timeline {
            title: format!(
                "burst at {}: {}",
                cell(&doc["fired_at"]).replace('T', " "),
                cell(&tr["trigger"])
            ),
            t_ms: col("t_ms"),
            running: col("running"),
            threads_running: col("threads_running"),
            rt_p99_ms: col("rt_p99_ms"),
            trigger_ms: Some(0.0),
            cores: doc["cores"].as_f64(),
            step: false,
        };
        let chart = Block::Svg {
            name: "burst timeline".into(),
            svg: render(&tl),
        };
        let p = &doc["peaks"];
        let numbers: Vec<(String, String)> = [
            ("trigger value", &tr["value"]),
            ("trigger threshold", &tr["threshold"]),
            ("peak running threads (/proc)", &p["running"]),
            ("peak Threads_running", &p["threads_running"]),
            ("peak Threads_connected", &p["threads_connected"]),
            ("peak questions/s", &p["qps"]),
            ("peak row lock waits", &p["row_lock_waits"]),
            ("peak rt p99, ms", &p["rt_p99_ms"]),
            ("cores", &doc["cores"]),
            (
                "samples before / after",
                &Value::String(format!(
                    "{} / {}",
                    cell(&doc["samples_before"]),
                    cell(&doc["samples_after"])
                )),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), cell(v)))
        .collect();
        let mut blocks = vec![
            Block::Para(format!(
                "The trigger {} fired at {} (value {}, threshold {}); {} Hz samples from {} s before to {} s after it.",
                cell(&tr["trigger"]),
                cell(&doc["fired_at"]),
                cell(&tr["value"]),
                cell(&tr["threshold"]),
                cell(&doc["hz"]),
                cell(&doc["history_s"]),
                cell(&doc["after_s"])
            )),
            chart.clone(),
            Block::Table(vec!["".into(), "value".into()], numbers.iter().map(|(k, v)| vec![k.clone(), v.clone()]).collect()),
        ];
        for k in ["series", "notes", "files"] {
            if let Some(v) = doc[k].as_array().filter(|v| !v.is_empty()) {
                blocks.push(Block::Para(format!("{k}:")));
                blocks.push(Block::List(v.iter().map(cell).collect()));
            }
        }
        let summary = vec![(
            2,
            format!(
                "Watch capture ({target}): {} fired at {} (value {}); peak running threads {} on {} cores.",
                cell(&tr["trigger"]),
                cell(&doc["fired_at"]),
                cell(&tr["value"]),
                cell(&p["running"]),
                cell(&doc["cores"])
            ),
        )];
        let mut sec = Section::new(
            "capture",
            format!("Watch capture: {}", cell(&doc["fired_at"])),
            summary,
            blocks,
        );
        sec.server = Some(target);
        sec.time_unix_s = doc["fired_at_unix_ms"].as_f64().map(|m| m / 1e3);
        sec.numbers = numbers;
        sec.picture = Some(chart);
        Ok(sec)
    }
}

impl Kind for WatchLog {
    fn schema(&self) -> &'static str {
        "spinscope.watch-log/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let ev = doc["events"].as_array().ok_or("no events")?;
        let rows: Vec<Vec<String>> = ev
            .iter()
            .map(|e| {
                let p = &e["peaks"];
                vec![
                    cell(&e["time"]),
                    cell(&e["server"]),
                    cell(&e["trigger"]),
                    match (e["skipped"].as_str(), e["here"].as_bool()) {
                        (Some(s), _) => format!("skipped: {s}"),
                        (None, Some(true)) => format!(
                            "{} (below: Watch capture: {})",
                            cell(&e["dir_name"]),
                            cell(&e["time"])
                        ),
                        (None, Some(false)) => {
                            format!("{} (not in this directory)", cell(&e["dir"]))
                        }
                        (None, None) => cell(&e["dir"]),
                    },
                    cell(&p["running"]),
                    cell(&p["threads_running"]),
                    cell(&p["rt_p99_ms"]),
                ]
            })
            .collect();
        let captured = ev.iter().filter(|e| e["dir"].is_string()).count();
        let here = ev.iter().filter(|e| e["here"] == true).count();
        let mut blocks = vec![Block::Table(
            [
                "time",
                "server",
                "trigger",
                "capture",
                "peak running",
                "peak Threads_running",
                "peak rt p99 ms",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        )];
        if ev.iter().any(|e| e["here"].is_boolean()) {
            blocks.push(Block::Para(format!(
                "{here} of the {captured} captures are in this directory; each follows as its own section (its burst timeline and peaks)."
            )));
        }
        let summary = vec![(
            2,
            format!(
                "Watch log: {} trigger events, {captured} captured.",
                ev.len()
            ),
        )];
        let mut sec = Section::new(
            "watch-log",
            format!("Watch log: {} events", ev.len()),
            summary,
            blocks,
        );
        let servers: Vec<&str> = ev.iter().filter_map(|e| e["server"].as_str()).collect();
        if servers
            .first()
            .is_some_and(|f| servers.iter().all(|s| s == f))
        {
            sec.server = Some(servers[0].to_string());
        }
        Ok(sec)
    }
}
