//! `spinscope.doctor/1` (and snapshots, diagnosed offline): the findings with their evidence.

use serde_json::Value;

use super::{cell, command, fields, Block, Kind, Section, Verdict};

pub struct Doctor;

fn sev_rank(s: &str) -> u8 {
    match s {
        "critical" => 0,
        "warning" => 1,
        "info" => 2,
        _ => 3,
    }
}

impl Kind for Doctor {
    fn schema(&self) -> &'static str {
        "spinscope.doctor/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let findings = doc
            .get("findings")
            .and_then(Value::as_array)
            .ok_or("no \"findings\" list")?;
        let target = cell(&doc["target"]);
        let mut blocks = vec![fields(
            doc,
            &[
                "source",
                "target",
                "server",
                "version",
                "semaphores",
                "cpu_model",
                "max_severity",
            ],
        )];
        let mut summary = Vec::new();
        let rows = findings
            .iter()
            .map(|f| {
                let sev = cell(&f["severity"]);
                if sev_rank(&sev) <= 1 {
                    summary.push((
                        sev_rank(&sev),
                        format!("Doctor ({target}), {sev}: {}.", cell(&f["title"])),
                    ));
                }
                let ev: Vec<String> = f["evidence"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|e| {
                                format!(
                                    "{} = {} {}",
                                    cell(&e["name"]),
                                    cell(&e["value"]),
                                    cell(&e["unit"])
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                vec![sev, cell(&f["id"]), cell(&f["title"]), ev.join("; ")]
            })
            .collect();
        if findings.is_empty() {
            summary.push((3, format!("Doctor ({target}): no findings.")));
        }
        blocks.push(Block::Table(
            ["severity", "rule", "finding", "evidence"]
                .map(String::from)
                .to_vec(),
            rows,
        ));
        // Per finding: a heading line, then why, do, and what to run as separate items.
        for f in findings {
            let items: Vec<String> = [
                ("why", "why"),
                ("what_to_do", "do"),
                ("statements", "run"),
                ("option_file", "option file [mysqld]"),
            ]
            .iter()
            .filter_map(|(k, label)| {
                f.get(*k)
                    .filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                    .map(|v| {
                        let text = v.as_array().map_or_else(
                            || cell(v),
                            |a| a.iter().map(cell).collect::<Vec<_>>().join("  "),
                        );
                        format!("{label}: {text}")
                    })
            })
            .collect();
            if !items.is_empty() {
                blocks.push(Block::Para(format!(
                    "{} ({}): {}",
                    cell(&f["id"]),
                    cell(&f["severity"]),
                    cell(&f["title"])
                )));
                blocks.push(Block::List(items));
            }
        }
        if let Some(rt) = doc.get("rt").filter(|v| !v.is_null()) {
            let side: crate::doctor::rt::RtSide = serde_json::from_value(rt.clone())
                .map_err(|e| format!("its \"rt\" part is not doctor --rt's ({e})"))?;
            if side.unavailable.is_none() && side.requests > 0 {
                summary.push((
                    2,
                    format!(
                        "Doctor ({target}): the server answered {} requests in the window, time to last byte p50 {}, p99 {} (from packets).",
                        side.requests,
                        crate::rt::render::dur(side.ttlb_us.p50_us),
                        crate::rt::render::dur(side.ttlb_us.p99_us)
                    ),
                ));
            }
            blocks.push(Block::Para(
                "Response time (rt), beside the running threads".into(),
            ));
            blocks.push(Block::List(crate::doctor::rt::headline(&side)));
            if side.unavailable.is_none() && !side.rows.is_empty() {
                let (head, rows) = crate::doctor::rt::table(&side);
                blocks.push(Block::Table(head, rows));
            }
        }
        if let Some(n) = doc.get("notes").and_then(Value::as_array) {
            if !n.is_empty() {
                blocks.push(Block::List(n.iter().map(cell).collect()));
            }
        }
        blocks.extend(command(doc));
        let mut sec = Section::new("doctor", format!("Doctor: {target}"), summary, blocks);
        sec.server = Some(target);
        sec.verdict = verdict(findings);
        sec.finding_ids = findings
            .iter()
            .filter(|f| sev_rank(f["severity"].as_str().unwrap_or("")) <= 1)
            .map(|f| cell(&f["id"]))
            .collect();
        sec.identity = doc
            .get("identity")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        sec.numbers = numbers(doc);
        sec.windows = windows(doc);
        sec.picture = window_chart(doc);
        if let Some(p) = &sec.picture {
            sec.blocks.insert(1, p.clone());
        }
        Ok(sec)
    }
}

/// The worst finding at warning or above, as the verdict screen shows it.
fn verdict(findings: &[Value]) -> Option<Verdict> {
    let f = findings
        .iter()
        .min_by_key(|f| sev_rank(f["severity"].as_str().unwrap_or("")))?;
    let rank = sev_rank(f["severity"].as_str().unwrap_or(""));
    if rank > 1 {
        return None;
    }
    let strings = |k: &str| -> Vec<String> {
        f[k].as_array()
            .map(|a| a.iter().map(cell).collect())
            .unwrap_or_default()
    };
    let evidence = f["evidence"]
        .as_array()
        .map(|a| a.iter().map(evidence_words).collect())
        .unwrap_or_default();
    Some(Verdict {
        rank,
        finding_id: cell(&f["id"]),
        what: cell(&f["title"]),
        evidence,
        why: f["why"].as_str().unwrap_or("").to_string(),
        sql: strings("statements"),
        option_file: strings("option_file"),
    })
}

/// `max_spin_here = 412.3 us` as `max spin here: 412.3 us`.
fn evidence_words(e: &Value) -> String {
    let unit = cell(&e["unit"]);
    let unit = match unit.trim() {
        "" | "-" => String::new(),
        u => format!(" {u}"),
    };
    format!(
        "{}: {}{unit}",
        cell(&e["name"]).replace('_', " "),
        cell(&e["value"])
    )
}

/// The headline numbers compared between two doctor runs.
fn numbers(doc: &Value) -> Vec<(String, String)> {
    let mut out = vec![
        ("worst finding".to_string(), cell(&doc["max_severity"])),
        (
            "findings (warning or above)".to_string(),
            doc["findings"]
                .as_array()
                .map_or(0, |a| {
                    a.iter()
                        .filter(|f| sev_rank(f["severity"].as_str().unwrap_or("")) <= 1)
                        .count()
                })
                .to_string(),
        ),
    ];
    let b = &doc["burst"];
    if b.is_object() {
        for (k, v) in [
            ("Threads_running p50", &b["threads_running"]["p50"]),
            ("Threads_running p99", &b["threads_running"]["p99"]),
            ("Threads_running max", &b["threads_running"]["max"]),
            ("bursts above the core count", &b["bursts"]),
            ("longest burst, ms", &b["longest_burst_ms"]),
            (
                "time above the core count, %",
                &b["time_above_threshold_pct"],
            ),
            ("questions/s", &b["questions_per_s"]),
        ] {
            out.push((k.to_string(), cell(v)));
        }
    }
    let rt = &doc["rt"];
    if rt["requests"].as_u64().is_some_and(|n| n > 0) {
        out.push(("rt requests".into(), cell(&rt["requests"])));
        out.push((RT_RATE.into(), cell(&rt["rate_per_s"])));
        out.push((RT_P99.into(), cell(&rt["ttlb_us"]["p99_us"])));
    }
    out
}

const RT_P99: &str = "rt p99 (time to last byte), us";
const RT_RATE: &str = "rt requests/s";

/// doctor --rt's intervals as windows of the rt numbers (an interval without requests has no
/// p99).
fn windows(doc: &Value) -> Vec<super::noise::Windows> {
    let Some(rows) = doc["rt"]["rows"].as_array().filter(|r| !r.is_empty()) else {
        return Vec::new();
    };
    let window_s = rows[0]["interval_s"].as_f64().unwrap_or(1.0);
    let served = |r: &Value| r["requests"].as_f64().filter(|n| *n > 0.0);
    let p99 = rows
        .iter()
        .map(|r| served(r).and(r["ttlb_p99_us"].as_f64()).unwrap_or(f64::NAN))
        .collect();
    let rate = rows
        .iter()
        .map(|r| {
            let n = r["requests"].as_f64().unwrap_or(f64::NAN);
            n / r["interval_s"]
                .as_f64()
                .filter(|s| *s > 0.0)
                .unwrap_or(f64::NAN)
        })
        .collect();
    vec![
        super::noise::Windows {
            name: RT_P99.into(),
            values: p99,
            window_s,
            micros: true,
        },
        super::noise::Windows {
            name: RT_RATE.into(),
            values: rate,
            window_s,
            micros: false,
        },
    ]
}

/// The window's timeline from `doctor --rt`'s interval rows: running threads, Threads_running
/// and the rt p99 per interval on one time axis.
fn window_chart(doc: &Value) -> Option<Block> {
    let rows = doc["rt"]["rows"].as_array().filter(|r| r.len() >= 2)?;
    let t: Vec<f64> = rows
        .iter()
        .map(|r| r["t_s"].as_f64().unwrap_or(f64::NAN) * 1e3)
        .collect();
    let col = |k: &str| -> Vec<f64> {
        rows.iter()
            .map(|r| r[k].as_f64().unwrap_or(f64::NAN))
            .collect()
    };
    let tl = crate::report::timeline::Timeline {
        title: format!("doctor window: {}", cell(&doc["target"])),
        t_ms: t,
        running: col("proc_running_max"),
        threads_running: col("threads_running_max"),
        rt_p99_ms: col("ttlb_p99_us").iter().map(|u| u / 1e3).collect(),
        trigger_ms: None,
        cores: doc["burst"]["burst_threshold"].as_f64(),
        step: true,
    };
    Some(Block::Svg {
        name: "doctor window timeline".into(),
        svg: crate::report::timeline::render(&tl),
    })
}
