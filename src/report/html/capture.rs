//! `spinscope.watch-capture/1` (a watch capture directory's `capture.json`): the trigger, the
//! peaks, and the burst timeline of every sample before and after the trigger; and the
//! `watch.log` of a `watch --out` directory: one row per trigger event.

use serde_json::Value;

use super::{cell, name_of, typed, wide, Block, Kind, Section};
use crate::doc::watch::{
    BurstDoc, CaptureDoc, LogEvent, OsSecond, ProcessList, WatchLog as WatchLogDoc,
};
use crate::report::timeline::{render, Timeline};

pub struct Capture;
pub struct WatchLog;

fn opt32(v: Option<f32>) -> f64 {
    v.map_or(f64::NAN, wide)
}

impl Kind for Capture {
    fn schema(&self) -> &'static str {
        "spinscope.watch-capture/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: CaptureDoc = typed(doc)?;
        let samples = &d.samples;
        let target = cell(&d.target);
        let tr = &d.trigger;
        let tl = Timeline {
            title: format!(
                "burst at {}: {}",
                cell(&d.fired_at).replace('T', " "),
                cell(&tr.trigger)
            ),
            t_ms: samples.iter().map(|s| s.t_ms).collect(),
            running: samples
                .iter()
                .map(|s| s.running.map_or(f64::NAN, f64::from))
                .collect(),
            threads_running: samples
                .iter()
                .map(|s| {
                    if s.held {
                        f64::NAN
                    } else {
                        f64::from(s.threads_running)
                    }
                })
                .collect(),
            rt_p99_ms: samples.iter().map(|s| opt32(s.rt_p99_ms)).collect(),
            trigger_ms: Some(0.0),
            cores: Some(d.cores),
            step: false,
        };
        let chart = Block::Svg {
            name: "burst timeline".into(),
            svg: render(&tl),
        };
        let p = &d.peaks;
        let numbers: Vec<(String, String)> = [
            ("trigger value", cell(&tr.value)),
            ("trigger threshold", cell(&tr.threshold)),
            ("peak running threads (/proc)", cell(&p.running)),
            ("peak Threads_running", cell(&p.threads_running)),
            ("peak Threads_connected", cell(&p.threads_connected)),
            ("peak questions/s", cell(&p.qps)),
            ("peak row lock waits", cell(&p.row_lock_waits)),
            ("peak rt p99, ms", cell(&p.rt_p99_ms)),
            ("cores", cell(&d.cores)),
            (
                "samples before / after",
                format!("{} / {}", cell(&d.samples_before), cell(&d.samples_after)),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut blocks = vec![
            Block::Para(format!(
                "The trigger {} fired at {} (value {}, threshold {}); {} Hz samples from {} s before to {} s after it.",
                cell(&tr.trigger),
                cell(&d.fired_at),
                cell(&tr.value),
                cell(&tr.threshold),
                cell(&d.hz),
                cell(&d.history_s),
                cell(&d.after_s)
            )),
            chart.clone(),
            Block::Table(vec!["".into(), "value".into()], numbers.iter().map(|(k, v)| vec![k.clone(), v.clone()]).collect()),
        ];
        if !d.os_seconds.is_empty() {
            blocks.push(Block::Para(format!(
                "This host each second ({} seconds; /proc/stat, loadavg, meminfo, vmstat, diskstats):",
                d.os_seconds.len()
            )));
            blocks.push(os_table(&d.os_seconds));
        }
        if !d.processlists.is_empty() {
            blocks.push(Block::Para(format!(
                "The server's process list each second from the trigger ({} reads):",
                d.processlists.len()
            )));
            blocks.push(processlist_table(&d.processlists));
        }
        if !d.bursts.is_empty() {
            let refs: Vec<&BurstDoc> = d.bursts.iter().collect();
            blocks.push(Block::Para(format!(
                "Bursts that began in this window: {}.",
                burst_counts(&[], &refs)
            )));
        }
        for (k, v) in [
            ("series", &d.series),
            ("notes", &d.notes),
            ("files", &d.files),
        ] {
            if !v.is_empty() {
                blocks.push(Block::Para(format!("{k}:")));
                blocks.push(Block::List(v.clone()));
            }
        }
        let summary = vec![(
            2,
            format!(
                "Watch capture ({target}): {} fired at {} (value {}); peak running threads {} on {} cores.",
                cell(&tr.trigger),
                cell(&d.fired_at),
                cell(&tr.value),
                cell(&p.running),
                cell(&d.cores)
            ),
        )];
        let mut sec = Section::new(
            "capture",
            format!("Watch capture: {}", cell(&d.fired_at)),
            summary,
            blocks,
        );
        sec.server = Some(target);
        sec.time_unix_s = Some(d.fired_at_unix_ms / 1e3);
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
        let d: WatchLogDoc = typed(doc)?;
        let all = &d.events;
        let ev: Vec<&LogEvent> = all.iter().filter(|e| !e.line.trigger.is_empty()).collect();
        let bursts: Vec<&BurstDoc> = all.iter().filter_map(|e| e.line.burst.as_ref()).collect();
        let counts = burst_counts(all, &bursts);
        let rows: Vec<Vec<String>> = ev
            .iter()
            .map(|e| {
                let l = &e.line;
                let p = l.peaks.as_ref();
                vec![
                    cell(&l.time),
                    cell(&l.server),
                    cell(&l.trigger),
                    match (l.skipped.as_deref(), e.here) {
                        (Some(s), _) => format!("skipped: {s}"),
                        (None, Some(true)) => format!(
                            "{} (below: Watch capture: {})",
                            cell(&e.dir_name),
                            cell(&l.time)
                        ),
                        (None, Some(false)) => {
                            format!("{} (not in this directory)", cell(&l.dir))
                        }
                        (None, None) => cell(&l.dir),
                    },
                    cell(&p.and_then(|p| p.running)),
                    cell(&p.map(|p| p.threads_running)),
                    cell(&p.and_then(|p| p.rt_p99_ms)),
                ]
            })
            .collect();
        let captured = ev.iter().filter(|e| e.line.dir.is_some()).count();
        let here = ev.iter().filter(|e| e.here == Some(true)).count();
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
                        let what = match b.outcome.as_str() {
                            "captured" => format!("captured: {}", cell(&b.capture)),
                            "in_capture" => {
                                format!("in the window of {}", cell(&b.capture))
                            }
                            "skipped" => {
                                format!("skipped ({}): {}", reason(b), cell(&b.why))
                            }
                            _ => cell(&b.outcome),
                        };
                        vec![
                            cell(&b.start),
                            cell(&b.duration_ms),
                            cell(&b.peak_threads_running),
                            cell(&b.peak_running),
                            what,
                        ]
                    })
                    .collect(),
            ));
        }
        if ev.iter().any(|e| e.here.is_some()) {
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
        let servers: Vec<&str> = all.iter().map(|e| e.line.server.as_str()).collect();
        if servers
            .first()
            .is_some_and(|f| servers.iter().all(|s| s == f))
        {
            sec.server = Some(servers[0].to_string());
        }
        Ok(sec)
    }
}

/// Why a burst was skipped, as its document names it ("-" when it does not say).
fn reason(b: &BurstDoc) -> String {
    b.reason.as_ref().map_or_else(|| "-".into(), name_of)
}

/// `N bursts: a captured, b in a capture's window, c skipped (k reason, ...)`: from the
/// servers' end-of-run counts when every server wrote them, else counted from the burst lines.
fn burst_counts(all: &[LogEvent], bursts: &[&BurstDoc]) -> String {
    let ends: Vec<_> = all.iter().filter_map(|e| e.line.bursts.as_ref()).collect();
    let (mut n, mut cap, mut inw, mut open) = (0u64, 0u64, 0u64, 0u64);
    let mut why: std::collections::BTreeMap<String, u64> = Default::default();
    if !ends.is_empty() {
        for c in ends {
            n += c.bursts;
            cap += c.captured;
            inw += c.in_capture;
            for (k, v) in &c.skipped {
                *why.entry(k.clone()).or_default() += v;
            }
        }
    } else {
        for b in bursts {
            n += 1;
            match b.outcome.as_str() {
                "captured" => cap += 1,
                "in_capture" => inw += 1,
                "open" => open += 1,
                _ => *why.entry(reason(b)).or_default() += 1,
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
fn os_table(os: &[OsSecond]) -> Block {
    let f = |x: f32| format!("{:.1}", wide(x));
    let rows = os
        .iter()
        .map(|s| {
            let c = &s.cpu_pct;
            vec![
                cell(&s.t_ms),
                f(c.user),
                f(c.nice),
                f(c.system),
                f(c.iowait),
                f(c.steal),
                f(c.idle),
                f(s.ctxt_per_s),
                cell(&s.procs_running),
                cell(&s.procs_blocked),
                f(s.load1),
                format!("{:.0}", s.mem_kb.available as f64 / 1024.0),
                f(s.pgmajfault_per_s),
                f(s.pswpout_per_s),
                s.disks.first().map_or_else(
                    || "-".into(),
                    |d| {
                        format!(
                            "{} {:.0}% r{:.0} w{:.0}/s",
                            cell(&d.name),
                            wide(d.util_pct),
                            wide(d.reads_per_s),
                            wide(d.writes_per_s)
                        )
                    },
                ),
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
fn processlist_table(lists: &[ProcessList]) -> Block {
    let rows = lists
        .iter()
        .map(|p| {
            let busy: Vec<_> = p.sessions.iter().filter(|s| s.command != "Sleep").collect();
            let mut states: std::collections::BTreeMap<String, usize> = Default::default();
            for s in &busy {
                *states.entry(cell(&s.state)).or_default() += 1;
            }
            let mut st: Vec<(String, usize)> = states.into_iter().collect();
            st.sort_by_key(|s| std::cmp::Reverse(s.1));
            let longest = busy
                .iter()
                .filter(|s| s.info.is_some())
                .max_by(|a, b| a.time_s.total_cmp(&b.time_s))
                .map_or("-".to_string(), |s| {
                    let q: String = cell(&s.info).chars().take(120).collect();
                    format!("{} s: {q}", cell(&s.time_s))
                });
            vec![
                cell(&p.t_ms),
                format!("{} / {}", busy.len(), cell(&p.sessions_total)),
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
            {"time": "2026-11-28T11:00:00.000Z", "server": "db1", "trigger": "threads_running > 4", "dir": "caps/a", "peaks": {"threads_running": 9, "threads_connected": 12, "qps": 900.0, "row_lock_waits": 0, "rtt_ms": 0.4}},
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
        // Text, not json!: the document is deeper than the macro's recursion allows.
        let doc: Value = serde_json::from_str(
            r#"{
            "schema": "spinscope.watch-capture/1", "server": "MariaDB 10.11", "target": "db1",
            "fired_at": "2026-11-28T11:00:00.000Z", "fired_at_unix_ms": 1795863600000.0,
            "trigger": {"trigger": "threads_running > 4", "since_ms": 0.0, "t_ms": 0.0, "value": 9.0, "threshold": 4.0},
            "cores": 2.0, "hz": 100.0, "history_s": 10.0, "after_s": 5.0,
            "peaks": {"threads_running": 9, "threads_connected": 12, "qps": 900.0, "row_lock_waits": 0, "rtt_ms": 0.4},
            "samples_before": 0, "samples_after": 1,
            "samples": [{"t_ms": 0.0, "threads_running": 9, "threads_connected": 12, "qps": 900.0, "row_lock_waits": 0, "rtt_us": 400.0}],
            "files": [], "notes": [],
            "os_seconds": [{"t_ms": -1000.0, "seconds": 1.0,
                "cpu_pct": {"user": 40.0, "nice": 0.15, "system": 10.0, "idle": 50.0, "iowait": 0.0, "irq": 0.0, "softirq": 0.0, "steal": 0.0},
                "ctxt_per_s": 12000.0, "intr_per_s": 3000.0, "procs_running": 5, "procs_blocked": 0,
                "load1": 1.5, "load5": 1.0, "load15": 0.5,
                "mem_kb": {"total": 8388608, "free": 1048576, "available": 2097152, "buffers": 0, "cached": 0, "dirty": 0, "swap_total": 0, "swap_free": 0},
                "pgpgin_per_s": 0.0, "pgpgout_per_s": 0.0, "pswpin_per_s": 0.0, "pswpout_per_s": 0.0, "pgfault_per_s": 0.0, "pgmajfault_per_s": 0.0,
                "disks": [{"name": "vda", "reads_per_s": 1.0, "writes_per_s": 30.0, "read_kb_per_s": 4.0, "write_kb_per_s": 120.0, "r_await_ms": 0.5, "w_await_ms": 1.0, "util_pct": 12.0}]}],
            "processlists": [{"t_ms": 10.0, "sessions_total": 3, "sessions": [
                {"id": 5, "user": "app", "host": "h", "command": "Query", "time_s": 2.0, "state": "Updating", "info": "UPDATE hot SET c = c + 1"},
                {"id": 6, "user": "app", "host": "h", "command": "Query", "time_s": 0.0, "state": "Updating", "info": "UPDATE hot SET c = c + 1"},
                {"id": 7, "user": "app", "host": "h", "command": "Sleep", "time_s": 9.0}]}]
        }"#,
        )
        .unwrap();
        let s = Capture.section(&doc, "capture.json").unwrap();
        let t = tables(&s);
        let os = t
            .iter()
            .find(|(h, _)| h.contains(&"busiest disk".to_string()))
            .unwrap();
        assert_eq!(os.1[0][1], "40.0");
        // Stored as f32, shown as its text reads: 0.15 is "0.1" whichever float holds it.
        assert_eq!(os.1[0][2], "0.1");
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
