//! `spinscope.doctor-fleet/1`: one row per server (its worst finding and headline numbers);
//! each server's own doctor document becomes a doctor section of its own (see `load`).

use serde_json::Value;

use super::{cell, typed, Block, Kind, Section};
use crate::doc::fleet::FleetDoc;

pub struct Fleet;

impl Kind for Fleet {
    fn schema(&self) -> &'static str {
        "spinscope.doctor-fleet/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: FleetDoc = typed(doc)?;
        let rows = d
            .servers
            .iter()
            .map(|r| {
                let s = r.summary.as_ref();
                vec![
                    cell(&r.name),
                    cell(&r.target),
                    cell(&s.and_then(|s| s.worst_severity)),
                    r.error.as_ref().map_or_else(
                        || cell(&s.and_then(|s| s.worst_finding.clone())),
                        |e| format!("not diagnosed: {e}"),
                    ),
                    cell(&s.and_then(|s| s.design_ratio)),
                    cell(&s.and_then(|s| s.threads_running_p99)),
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
            cell(&d.diagnosed),
            cell(&d.failed)
        );
        Ok(Section::new("fleet", title, Vec::new(), blocks))
    }
}
