//! `spinscope.sweep/*`: knee, USL and A/B verdicts per variant, and the two charts.

use serde_json::Value;

use super::{typed, Block, Kind, Section};
use crate::doc::sweep::SweepDoc;
use crate::report::fmt_num;

pub struct Sweep;

impl Kind for Sweep {
    fn schema(&self) -> &'static str {
        "spinscope.sweep/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: SweepDoc = typed(doc)?;
        Ok(section(&d))
    }
}

/// The section of a typed sweep document.
pub fn section(d: &SweepDoc) -> Section {
    let mut summary = Vec::new();
    let mut rows = Vec::new();
    for va in &d.analysis.variants {
        let knee = match (va.knee.saturation_threads, va.knee.saturation_tps) {
            (Some(n), Some(t)) => format!("{} threads at {} tps", fmt_num(n), fmt_num(t)),
            _ => "none: throughput still rising at the last step".into(),
        };
        summary.push((
            2,
            format!("Sweep {} ({}): knee {knee}.", d.config.workload, va.variant),
        ));
        let usl = va.usl.as_ref().map_or("-".into(), |u| {
            crate::report::sweep_html::usl_not_drawn(u).unwrap_or_else(|| {
                format!(
                    "sigma {} kappa {} (R^2 {:.3})",
                    fmt_num(u.sigma),
                    fmt_num(u.kappa),
                    u.r_squared
                )
            })
        });
        rows.push(vec![
            va.variant.clone(),
            knee,
            usl,
            va.harmful.clone().unwrap_or_default(),
        ]);
    }
    let steps = d
        .steps
        .iter()
        .map(|s| {
            vec![
                s.threads.to_string(),
                s.variant.clone(),
                s.repeat.to_string(),
                fmt_num(s.tps),
                crate::report::fmt_ns(s.latency_us.p99 * 1000.0),
                s.invalid.clone().unwrap_or_else(|| "valid".into()),
            ]
        })
        .collect();
    let ab: Vec<String> = d
        .analysis
        .ab
        .iter()
        .map(|a| {
            format!(
                "{} threads, {} vs {}: {}",
                a.threads, a.variant, a.baseline, a.text
            )
        })
        .collect();
    for a in d
        .analysis
        .ab
        .iter()
        .filter(|a| a.tps.as_ref().is_some_and(|t| t.significant))
    {
        summary.push((
            1,
            format!(
                "Sweep verdict at {} threads: {} vs {}: {}.",
                a.threads, a.variant, a.baseline, a.text
            ),
        ));
    }
    let mut blocks = Vec::new();
    if d.interrupted || !d.complete {
        blocks.push(Block::Para(format!(
            "Partial results: {}",
            d.stopped_because
                .as_deref()
                .unwrap_or("the sweep did not finish")
        )));
    }
    blocks.push(Block::Table(
        ["variant", "knee", "USL", "harmful"]
            .map(String::from)
            .to_vec(),
        rows,
    ));
    blocks.push(Block::Svg {
        name: "sweep throughput".into(),
        svg: crate::report::sweep_html::throughput_chart(d),
    });
    blocks.push(Block::Svg {
        name: "sweep p99".into(),
        svg: crate::report::sweep_html::p99_chart(d),
    });
    if !ab.is_empty() {
        blocks.push(Block::Para(d.analysis.ab_method.clone()));
        blocks.push(Block::List(ab));
    }
    blocks.push(Block::Table(
        ["threads", "variant", "repeat", "tps", "p99", "valid"]
            .map(String::from)
            .to_vec(),
        steps,
    ));
    Section::new(
        "sweep",
        format!("Sweep: {} on {}", d.config.workload, d.server.version),
        summary,
        blocks,
    )
}
