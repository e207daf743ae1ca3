//! `spinscope.lab/2`: the latch table, the comparison verdicts and the lab charts.

use serde_json::Value;

use super::{typed, Block, Kind, Section};
use crate::doc::lab::LabDoc;

pub struct Lab;

impl Kind for Lab {
    fn schema(&self) -> &'static str {
        "spinscope.lab/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: LabDoc = typed(doc)?;
        let fmt = |s: &Option<crate::analysis::stats::Summary>, f: fn(f64) -> String| {
            s.as_ref().map_or("-".into(), |s| f(s.median))
        };
        let rows = d
            .points
            .iter()
            .map(|p| {
                vec![
                    p.latch.to_string(),
                    p.threads.to_string(),
                    p.pause_scale.to_string(),
                    fmt(&p.ops_per_s, crate::report::chart::si),
                    fmt(&p.acquire_p99_ns, crate::report::fmt_ns),
                    fmt(&p.cpu_ns_per_op, crate::report::fmt_ns),
                ]
            })
            .collect();
        let mut blocks = vec![Block::Table(
            [
                "latch",
                "threads",
                "pause scale",
                "ops/s (median)",
                "acquire p99",
                "CPU per op",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        )];
        for (name, svg) in crate::report::lab::charts(&d) {
            blocks.push(Block::Svg { name, svg });
        }
        let latches = d.plan.latches.len();
        Ok(Section::new(
            "lab",
            format!("Lab: {latches} latches on {} CPUs", d.machine.cpus),
            vec![(
                3,
                format!(
                    "Lab: {} points of {latches} latches{}.",
                    d.points.len(),
                    if d.interrupted { ", interrupted" } else { "" }
                ),
            )],
            blocks,
        ))
    }
}
