//! `spinscope.probe/1`: the CPU, its topology and the measured spin-hint latency per CPU.

use serde_json::Value;

use super::{cell, command, fields, Block, Kind, Section};

pub struct Probe;

impl Kind for Probe {
    fn schema(&self) -> &'static str {
        "spinscope.probe/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let cpu = doc.get("cpu").ok_or("no \"cpu\" object")?;
        let host = doc.get("host").cloned().unwrap_or(Value::Null);
        let name = cell(cpu.get("model_name").unwrap_or(&Value::Null));
        let rows: Vec<Vec<String>> = doc
            .get("measurements")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|m| {
                        let ns = |k: &str| cell(&m["ns_per_hint"][k]);
                        vec![
                            cell(&m["cpu"]),
                            cell(&m["hint"]),
                            ns("median"),
                            ns("min"),
                            format!("{}%", cell(&m["ns_per_hint"]["iqr_pct"])),
                            cell(&m["core_cycles_per_hint"]),
                        ]
                    })
                    .collect()
            })
            .unwrap_or_default();
        let median = doc["measurements"][0]["ns_per_hint"]["median"].as_f64();
        let mut summary = Vec::new();
        if let Some(ns) = median {
            summary.push((
                3,
                format!(
                    "Probe: one {} takes {} on {name}.",
                    cell(&doc["measurements"][0]["hint"]),
                    crate::report::fmt_ns(ns)
                ),
            ));
        }
        let mut blocks = vec![
            fields(&host, &["hostname", "kernel_release", "arch"]),
            fields(cpu, &["vendor", "model_name", "microarch", "reference_key"]),
            fields(
                &doc["topology"],
                &["sockets", "cores", "threads", "smt", "numa_nodes"],
            ),
            Block::Table(
                [
                    "cpu",
                    "hint",
                    "ns per hint (median)",
                    "min",
                    "IQR",
                    "core cycles",
                ]
                .map(String::from)
                .to_vec(),
                rows,
            ),
        ];
        if let Some(n) = doc.get("notes").and_then(Value::as_array) {
            blocks.push(Block::List(n.iter().map(cell).collect()));
        }
        blocks.extend(command(doc));
        Ok(Section::new(
            "probe",
            format!("Probe: {name}"),
            summary,
            blocks,
        ))
    }
}
