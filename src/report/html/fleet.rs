//! `spinscope.doctor-fleet/1`: one row per server (its worst finding and headline numbers);
//! each server's own doctor document becomes a doctor section of its own (see `load`).

use serde_json::Value;

use super::{cell, Block, Kind, Section};

pub struct Fleet;

impl Kind for Fleet {
    fn schema(&self) -> &'static str {
        "spinscope.doctor-fleet/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let servers = doc["servers"].as_array().ok_or("no \"servers\" list")?;
        let rows = servers
            .iter()
            .map(|r| {
                let s = &r["summary"];
                vec![
                    cell(&r["name"]),
                    cell(&r["target"]),
                    cell(&s["worst_severity"]),
                    r["error"].as_str().map_or_else(
                        || cell(&s["worst_finding"]),
                        |e| format!("not diagnosed: {e}"),
                    ),
                    cell(&s["design_ratio"]),
                    cell(&s["threads_running_p99"]),
                ]
            })
            .collect();
        let blocks = vec![Block::Table(
            [
                "server",
                "target",
                "worst",
                "worst finding",
                "spin vs design",
                "Threads_running p99",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        )];
        let title = format!(
            "Fleet: {} servers diagnosed, {} failed",
            cell(&doc["diagnosed"]),
            cell(&doc["failed"])
        );
        Ok(Section::new("fleet", title, Vec::new(), blocks))
    }
}
