//! `spinscope.spin/1`: a server's spin settings as time on a CPU, against the design budget.

use serde_json::Value;

use super::{cell, command, fields, Block, Kind, Section};

pub struct Spin;

impl Kind for Spin {
    fn schema(&self) -> &'static str {
        "spinscope.spin/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let server = cell(&doc["server"]["raw"]);
        let words = doc["vs_design"]["in_words"].as_str().map(str::to_string);
        let settings: Vec<Vec<String>> = doc
            .get("settings")
            .and_then(Value::as_object)
            .map(|o| o.iter().map(|(k, v)| vec![k.clone(), cell(v)]).collect())
            .unwrap_or_default();
        let readings: Vec<Vec<String>> = doc["this"]["readings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|r| {
                        vec![
                            cell(&r["label"]),
                            cell(&r["rounds"]),
                            crate::report::fmt_ns(r["max_spin_ns"].as_f64().unwrap_or(f64::NAN)),
                            crate::report::fmt_ns(r["mean_spin_ns"].as_f64().unwrap_or(f64::NAN)),
                        ]
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ratio = doc["vs_design"]["ratio"].as_f64().unwrap_or(1.0);
        let mut blocks = vec![
            fields(doc, &["family", "formula", "settings_source"]),
            Block::Table(vec!["setting".into(), "value".into()], settings),
            fields(&doc["this"]["cpu"], &["label", "ns_per_hint", "noise_pct"]),
            Block::Table(
                ["reading", "rounds", "longest spin", "mean spin"]
                    .map(String::from)
                    .to_vec(),
                readings,
            ),
        ];
        if let Some(w) = &words {
            blocks.push(Block::Para(w.clone()));
        }
        if let Some(n) = doc.get("notes").and_then(Value::as_array) {
            blocks.push(Block::List(n.iter().map(cell).collect()));
        }
        blocks.extend(command(doc));
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
            words
                .map(|w| vec![(sev, format!("Spin budget ({server}): {w}."))])
                .unwrap_or_default(),
            blocks,
        ))
    }
}
