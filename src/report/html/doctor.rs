//! `spinscope.doctor/1` (and snapshots, diagnosed offline): the findings with their evidence.

use serde_json::Value;

use super::{cell, command, fields, Block, Kind, Section};

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
                    .map(|v| format!("{label}: {}", cell(v)))
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
        Ok(Section {
            title: format!("Doctor: {target}"),
            summary,
            blocks,
        })
    }
}
