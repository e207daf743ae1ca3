//! `spinscope.spin/1`: a server's spin settings as time on a CPU, against the design budget.

use serde_json::Value;

use super::{cell, fields, name_of, typed, Block, Kind, Section};
use crate::doc::spin::SpinReport;

pub struct Spin;

impl Kind for Spin {
    fn schema(&self) -> &'static str {
        "spinscope.spin/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: SpinReport = typed(doc)?;
        let server = cell(&d.server.raw);
        let words = d.vs_design.in_words.clone();
        // In the document's key order (alphabetical), as the settings object reads.
        let st = &d.settings;
        let settings: Vec<Vec<String>> = [
            ("pause_multiplier", cell(&st.pause_multiplier)),
            ("spin_wait_delay", cell(&st.spin_wait_delay)),
            ("sync_spin_loops", cell(&st.sync_spin_loops)),
        ]
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), v])
        .collect();
        let readings: Vec<Vec<String>> = d
            .this
            .readings
            .iter()
            .map(|r| {
                vec![
                    cell(&r.label),
                    cell(&r.rounds),
                    crate::report::fmt_ns(r.max_spin_ns),
                    crate::report::fmt_ns(r.mean_spin_ns),
                ]
            })
            .collect();
        let ratio = d.vs_design.ratio.unwrap_or(1.0);
        let cpu = &d.this.cpu;
        let blocks = vec![
            fields(vec![
                ("family", Some(name_of(&d.family))),
                ("formula", Some(cell(&d.formula))),
                ("settings_source", Some(cell(&d.settings_source))),
            ]),
            Block::Table(vec!["setting".into(), "value".into()], settings),
            fields(vec![
                ("label", Some(cell(&cpu.label))),
                ("ns_per_hint", Some(cell(&cpu.ns_per_hint))),
                ("noise_pct", Some(cell(&cpu.noise_pct))),
            ]),
            Block::Table(
                ["reading", "rounds", "longest spin", "mean spin"]
                    .map(String::from)
                    .to_vec(),
                readings,
            ),
            Block::Para(words.clone()),
            Block::List(d.notes.clone()),
        ];
        let sev = if ratio >= 10.0 {
            0
        } else if ratio >= 2.0 {
            1
        } else {
            3
        };
        Ok(Section::new(
            "spin",
            format!("Spin budget: {server}"),
            vec![(sev, format!("Spin budget ({server}): {words}."))],
            blocks,
        ))
    }
}
