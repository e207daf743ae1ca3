//! `spinscope.probe/1`: the CPU, its topology and the measured spin-hint latency per CPU.

use serde_json::Value;

use super::{cell, fields, name_of, typed, Block, Kind, Section};
use crate::doc::probe::ProbeReport;

pub struct Probe;

impl Kind for Probe {
    fn schema(&self) -> &'static str {
        "spinscope.probe/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: ProbeReport = typed(doc)?;
        let name = cell(&d.cpu.model_name);
        let rows: Vec<Vec<String>> = d
            .measurements
            .iter()
            .map(|m| {
                vec![
                    cell(&m.cpu),
                    name_of(&m.hint),
                    cell(&m.ns_per_hint.median),
                    cell(&m.ns_per_hint.min),
                    format!("{}%", cell(&m.ns_per_hint.iqr_pct)),
                    cell(&m.core_cycles_per_hint),
                ]
            })
            .collect();
        let mut summary = Vec::new();
        if let Some(m) = d.measurements.first() {
            summary.push((
                3,
                format!(
                    "Probe: one {} takes {} on {name}.",
                    name_of(&m.hint),
                    crate::report::fmt_ns(m.ns_per_hint.median)
                ),
            ));
        }
        let (h, c, t) = (&d.host, &d.cpu, &d.topology);
        let blocks = vec![
            fields(vec![
                ("hostname", Some(cell(&h.hostname))),
                ("kernel_release", Some(cell(&h.kernel_release))),
                ("arch", Some(cell(&h.arch))),
            ]),
            fields(vec![
                ("vendor", Some(cell(&c.vendor))),
                ("model_name", Some(cell(&c.model_name))),
                ("microarch", Some(cell(&c.microarch))),
                ("reference_key", Some(cell(&c.reference_key))),
            ]),
            fields(vec![
                ("sockets", Some(cell(&t.sockets))),
                ("cores", Some(cell(&t.cores))),
                ("threads", Some(cell(&t.threads))),
                ("smt", Some(cell(&t.smt))),
                ("numa_nodes", Some(cell(&t.numa_nodes))),
            ]),
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
            Block::List(d.notes.clone()),
        ];
        Ok(Section::new(
            "probe",
            format!("Probe: {name}"),
            summary,
            blocks,
        ))
    }
}
