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
        if let Some(os) = doc["os_seconds"].as_array().filter(|v| !v.is_empty()) {
            blocks.push(Block::Para(format!(
                "This host each second ({} seconds; /proc/stat, loadavg, meminfo, vmstat, diskstats):",
                os.len()
            )));
            blocks.push(os_table(os));
        }
        if let Some(pl) = doc["processlists"].as_array().filter(|v| !v.is_empty()) {
            blocks.push(Block::Para(format!(
                "The server's process list each second from the trigger ({} reads):",
                pl.len()
            )));
            blocks.push(processlist_table(pl));
        }
        if let Some(b) = doc["bursts"].as_array().filter(|v| !v.is_empty()) {
            let refs: Vec<&Value> = b.iter().collect();
            blocks.push(Block::Para(format!(
                "Bursts that began in this window: {}.",
                burst_counts(&[], &refs)
            )));
        }
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
        let all = doc["events"].as_array().ok_or("no events")?;
        let ev: Vec<&Value> = all.iter().filter(|e| e.get("trigger").is_some()).collect();
        let bursts: Vec<&Value> = all.iter().filter_map(|e| e.get("burst")).collect();
        let counts = burst_counts(all, &bursts);
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
        if !bursts.is_empty() {
            blocks.push(Block::Para(format!("Every burst: {counts}.")));
            blocks.push(Block::Table(
                [
                    "start (server clock)",
                    "duration ms",
                    "peak Threads_running",
                    "peak running",
                    "outcome",
                ]
                .map(String::from)
                .to_vec(),
                bursts
                    .iter()
                    .map(|b| {
                        let what = match b["outcome"].as_str() {
                            Some("captured") => format!("captured: {}", cell(&b["capture"])),
                            Some("in_capture") => {
                                format!("in the window of {}", cell(&b["capture"]))
                            }
                            Some("skipped") => {
                                format!("skipped ({}): {}", cell(&b["reason"]), cell(&b["why"]))
                            }
                            _ => cell(&b["outcome"]),
                        };
                        vec![
                            cell(&b["start"]),
                            cell(&b["duration_ms"]),
                            cell(&b["peak_threads_running"]),
                            cell(&b["peak_running"]),
                            what,
                        ]
                    })
                    .collect(),
            ));
        }
        if ev.iter().any(|e| e["here"].is_boolean()) {
            blocks.push(Block::Para(format!(
                "{here} of the {captured} captures are in this directory; each follows as its own section (its burst timeline and peaks)."
            )));
        }
        let summary = vec![(
            2,
            if bursts.is_empty() {
                format!(
                    "Watch log: {} trigger events, {captured} captured.",
                    ev.len()
                )
            } else {
                format!(
                    "Watch log: {counts}; {} trigger events, {captured} captured.",
                    ev.len()
                )
            },
        )];
        let mut sec = Section::new(
            "watch-log",
            format!("Watch log: {} events", ev.len()),
            summary,
            blocks,
        );
        let servers: Vec<&str> = all.iter().filter_map(|e| e["server"].as_str()).collect();
        if servers
            .first()
            .is_some_and(|f| servers.iter().all(|s| s == f))
        {
            sec.server = Some(servers[0].to_string());
        }
        Ok(sec)
    }
}

/// `N bursts: a captured, b in a capture's window, c skipped (k reason, ...)`: from the
/// servers' end-of-run counts when every server wrote them, else counted from the burst lines.
fn burst_counts(all: &[Value], bursts: &[&Value]) -> String {
    let ends: Vec<&Value> = all.iter().filter_map(|e| e.get("bursts")).collect();
    let (mut n, mut cap, mut inw, mut open) = (0u64, 0u64, 0u64, 0u64);
    let mut why: std::collections::BTreeMap<String, u64> = Default::default();
    if !ends.is_empty() {
        for c in ends {
            n += c["bursts"].as_u64().unwrap_or(0);
            cap += c["captured"].as_u64().unwrap_or(0);
            inw += c["in_capture"].as_u64().unwrap_or(0);
            if let Some(m) = c["skipped"].as_object() {
                for (k, v) in m {
                    *why.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
                }
            }
        }
    } else {
        for b in bursts {
            n += 1;
            match b["outcome"].as_str() {
                Some("captured") => cap += 1,
                Some("in_capture") => inw += 1,
                Some("open") => open += 1,
                _ => *why.entry(cell(&b["reason"])).or_default() += 1,
            }
        }
    }
    let skipped: u64 = why.values().sum();
    let mut s =
        format!("{n} burst(s): {cap} captured, {inw} in a capture's window, {skipped} skipped");
    if skipped > 0 {
        let v: Vec<String> = why.iter().map(|(k, v)| format!("{v} {k}")).collect();
        s.push_str(&format!(" ({})", v.join(", ")));
    }
    if open > 0 {
        s.push_str(&format!(", {open} not decided when written"));
    }
    s
}

/// This host's seconds through a capture's window: one row each (vmstat, mpstat, the busiest
/// device of iostat -x).
fn os_table(os: &[Value]) -> Block {
    let f = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "-".to_string(), |x| format!("{x:.1}"))
    };
    let rows = os
        .iter()
        .map(|s| {
            let c = &s["cpu_pct"];
            let d = &s["disks"][0];
            vec![
                cell(&s["t_ms"]),
                f(&c["user"]),
                f(&c["nice"]),
                f(&c["system"]),
                f(&c["iowait"]),
                f(&c["steal"]),
                f(&c["idle"]),
                f(&s["ctxt_per_s"]),
                cell(&s["procs_running"]),
                cell(&s["procs_blocked"]),
                f(&s["load1"]),
                s["mem_kb"]["available"]
                    .as_f64()
                    .map_or("-".into(), |k| format!("{:.0}", k / 1024.0)),
                f(&s["pgmajfault_per_s"]),
                f(&s["pswpout_per_s"]),
                if d.is_object() {
                    format!(
                        "{} {:.0}% r{:.0} w{:.0}/s",
                        cell(&d["name"]),
                        d["util_pct"].as_f64().unwrap_or(0.0),
                        d["reads_per_s"].as_f64().unwrap_or(0.0),
                        d["writes_per_s"].as_f64().unwrap_or(0.0)
                    )
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    Block::Table(
        [
            "ms from trigger",
            "user %",
            "nice %",
            "sys %",
            "iowait %",
            "steal %",
            "idle %",
            "ctxt/s",
            "procs R",
            "procs D",
            "load1",
            "mem avail MiB",
            "majflt/s",
            "swap out/s",
            "busiest disk",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    )
}

/// The process list each second of the after window: sessions not sleeping, their commonest
/// states, the longest-running statement.
fn processlist_table(lists: &[Value]) -> Block {
    let rows = lists
        .iter()
        .map(|p| {
            let ss = p["sessions"].as_array().map_or(&[][..], |v| &v[..]);
            let busy: Vec<&Value> = ss.iter().filter(|s| s["command"] != "Sleep").collect();
            let mut states: std::collections::BTreeMap<String, usize> = Default::default();
            for s in &busy {
                *states.entry(cell(&s["state"])).or_default() += 1;
            }
            let mut st: Vec<(String, usize)> = states.into_iter().collect();
            st.sort_by_key(|s| std::cmp::Reverse(s.1));
            let longest = busy
                .iter()
                .filter(|s| s["info"].is_string())
                .max_by(|a, b| {
                    a["time_s"]
                        .as_f64()
                        .unwrap_or(0.0)
                        .total_cmp(&b["time_s"].as_f64().unwrap_or(0.0))
                })
                .map_or("-".to_string(), |s| {
                    let q: String = cell(&s["info"]).chars().take(120).collect();
                    format!("{} s: {q}", cell(&s["time_s"]))
                });
            vec![
                cell(&p["t_ms"]),
                format!("{} / {}", busy.len(), cell(&p["sessions_total"])),
                st.iter()
                    .take(3)
                    .map(|(k, v)| format!("{k} x{v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                longest,
            ]
        })
        .collect();
    Block::Table(
        [
            "ms from trigger",
            "busy / sessions",
            "states",
            "longest statement",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tables(s: &Section) -> Vec<(Vec<String>, Vec<Vec<String>>)> {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(h, r) => Some((h.clone(), r.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_watch_log_counts_every_burst_by_outcome() {
        // Lines as watch writes them: a capture, three bursts, the end-of-run counts.
        let doc = json!({"schema": "spinscope.watch-log/1", "events": [
            {"time": "2026-11-28T11:00:00.000Z", "server": "db1", "trigger": "threads_running > 4", "dir": "caps/a", "peaks": {"threads_running": 9}},
            {"time": "2026-11-28T11:00:00.000Z", "server": "db1", "burst": {"start": "2026-11-28T11:00:00.000Z", "start_unix_ms": 1.0, "duration_ms": 300.0, "peak_threads_running": 9, "outcome": "captured", "capture": "caps/a"}},
            {"time": "2026-11-28T11:00:02.000Z", "server": "db1", "burst": {"start": "2026-11-28T11:00:02.000Z", "start_unix_ms": 2.0, "duration_ms": 300.0, "peak_threads_running": 8, "outcome": "in_capture", "capture": "caps/a"}},
            {"time": "2026-11-28T11:00:09.000Z", "server": "db1", "burst": {"start": "2026-11-28T11:00:09.000Z", "start_unix_ms": 3.0, "duration_ms": 200.0, "peak_threads_running": 7, "outcome": "skipped", "reason": "cooldown", "why": "in the cooldown"}},
            {"time": "2026-11-28T11:01:00.000Z", "server": "db1", "bursts": {"bursts": 3, "captured": 1, "in_capture": 1, "skipped": {"cooldown": 1}}}
        ]});
        let s = WatchLog.section(&doc, "watch.log").unwrap();
        let want = "3 burst(s): 1 captured, 1 in a capture's window, 1 skipped (1 cooldown)";
        assert!(s.summary[0].1.contains(want), "{:?}", s.summary);
        assert!(
            s.summary[0].1.contains("1 trigger events"),
            "{:?}",
            s.summary
        );
        let t = tables(&s);
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].1.len(), 3);
        assert!(
            t[1].1[2][4].starts_with("skipped (cooldown)"),
            "{:?}",
            t[1].1
        );
        assert_eq!(s.server.as_deref(), Some("db1"));
    }

    #[test]
    fn a_capture_shows_its_os_seconds_and_process_lists() {
        let doc = json!({
            "schema": "spinscope.watch-capture/1", "target": "db1", "fired_at": "2026-11-28T11:00:00.000Z",
            "trigger": {"trigger": "threads_running > 4", "value": 9, "threshold": 4},
            "peaks": {}, "samples": [{"t_ms": 0.0, "threads_running": 9}],
            "os_seconds": [{"t_ms": -1000.0, "cpu_pct": {"user": 40.0, "system": 10.0, "iowait": 0.0, "steal": 0.0, "idle": 50.0},
                "ctxt_per_s": 12000.0, "procs_running": 5, "procs_blocked": 0, "load1": 1.5,
                "mem_kb": {"available": 2097152}, "pgmajfault_per_s": 0.0, "pswpout_per_s": 0.0,
                "disks": [{"name": "vda", "util_pct": 12.0, "reads_per_s": 1.0, "writes_per_s": 30.0}]}],
            "processlists": [{"t_ms": 10.0, "sessions_total": 3, "sessions": [
                {"id": 5, "user": "app", "host": "h", "command": "Query", "time_s": 2.0, "state": "Updating", "info": "UPDATE hot SET c = c + 1"},
                {"id": 6, "user": "app", "host": "h", "command": "Query", "time_s": 0.0, "state": "Updating", "info": "UPDATE hot SET c = c + 1"},
                {"id": 7, "user": "app", "host": "h", "command": "Sleep", "time_s": 9.0}]}]
        });
        let s = Capture.section(&doc, "capture.json").unwrap();
        let t = tables(&s);
        let os = t
            .iter()
            .find(|(h, _)| h.contains(&"busiest disk".to_string()))
            .unwrap();
        assert_eq!(os.1[0][1], "40.0");
        assert_eq!(os.1[0][2], "-", "no nice field: a dash");
        assert_eq!(os.1[0][11], "2048");
        assert_eq!(os.1[0][14], "vda 12% r1 w30/s");
        let pl = t
            .iter()
            .find(|(h, _)| h.contains(&"longest statement".to_string()))
            .unwrap();
        assert_eq!(pl.1[0][1], "2 / 3");
        assert_eq!(pl.1[0][2], "Updating x2");
        assert!(
            pl.1[0][3].starts_with('2') && pl.1[0][3].contains(" s: UPDATE hot"),
            "{:?}",
            pl.1[0]
        );
    }
}
