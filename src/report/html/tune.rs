//! `spinscope.tune/1`: the decision, the ranked candidates with their intervals, the
//! statements, and the measured curve over each knob.

use serde_json::Value;

use super::{typed, Block, Kind, Section};
use crate::doc::tune::TuneDoc;
use crate::report::chart::{render, si, Chart, Series, Unit};

pub struct Tune;

fn settings(s: &crate::spin::model::Settings) -> String {
    let mut t = format!("delay {}, loops {}", s.spin_wait_delay, s.sync_spin_loops);
    if let Some(m) = s.pause_multiplier {
        t.push_str(&format!(", multiplier {m}"));
    }
    t
}

fn pct(i: &Option<crate::tune::race::Interval>) -> String {
    i.as_ref().map_or("-".into(), |i| {
        format!("{:+.1}% [{:+.1} .. {:+.1}]", i.mean, i.low, i.high)
    })
}

impl Kind for Tune {
    fn schema(&self) -> &'static str {
        "spinscope.tune/"
    }
    fn section(&self, doc: &Value, _source: &str) -> Result<Section, String> {
        let d: TuneDoc = typed(doc)?;
        let mut blocks = vec![Block::Para(format!(
            "{} at {} threads ({}), {} of a {} s budget, {} measurements in {} rounds. Decision: {}",
            d.workload,
            d.threads,
            d.threads_source,
            crate::report::fmt_num(d.spent_s.round()),
            crate::report::fmt_num(d.budget_s),
            d.measurements,
            d.rounds,
            d.decision.sentence
        ))];
        let rows = d
            .candidates
            .iter()
            .enumerate()
            .map(|(i, r)| {
                vec![
                    (i + 1).to_string(),
                    r.name.clone(),
                    settings(&r.settings),
                    format!("{} ({} invalid)", r.repeats, r.invalid_repeats),
                    r.tps.as_ref().map_or("-".into(), |t| {
                        format!("{} [{} .. {}]", si(t.mean), si(t.low), si(t.high))
                    }),
                    pct(&r.vs_current_pct),
                    r.p99_ms.map_or("-".into(), |p| format!("{p:.2} ms")),
                    r.status.clone(),
                ]
            })
            .collect();
        blocks.push(Block::Table(
            [
                "rank",
                "candidate",
                "settings",
                "repeats",
                "tx/s mean [95%]",
                "vs current [95%]",
                "p99",
                "status",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        ));
        if let Some(m) = &d.model.settings {
            blocks.push(Block::Para(format!(
                "The spin model advised {} for {}; measured rank {}{}.",
                settings(m),
                d.model.cpu.as_deref().unwrap_or("this CPU"),
                d.model.rank.map_or("-".into(), |r| r.to_string()),
                d.model.vs_best_pct.map_or(String::new(), |p| format!(
                    ", {p:+.1}% against the measured best"
                ))
            )));
        }
        if !d.set_global.is_empty() {
            let mut l = d.set_global.clone();
            l.extend(d.my_cnf.iter().map(|x| format!("my.cnf [mysqld]: {x}")));
            blocks.push(Block::List(l));
        }
        for c in &d.curves {
            let pts: Vec<(f64, f64)> = c
                .points
                .iter()
                .filter_map(|(x, i)| Some((*x as f64, i.as_ref()?.mean)))
                .collect();
            if pts.len() < 2 {
                continue;
            }
            let chart = Chart {
                title: format!("tune: throughput over {}", c.variable),
                x_label: c.variable.clone(),
                y_label: "transactions/s (mean)".into(),
                y_unit: Unit::Count,
                series: vec![Series::line("measured", 0, pts)],
                marks: vec![],
            };
            blocks.push(Block::Svg {
                name: format!("tune_{}", c.variable),
                svg: render(&chart),
            });
        }
        let sev = if d.decision.change { 1 } else { 3 };
        let mut sec = Section::new(
            "tune",
            format!("Tune: {} on {}", d.workload, d.server),
            vec![(sev, format!("Tune ({}): {}", d.server, d.decision.sentence))],
            blocks,
        );
        sec.numbers = d
            .candidates
            .first()
            .map(|r| {
                vec![(
                    "best candidate".to_string(),
                    format!("{} ({})", r.name, settings(&r.settings)),
                )]
            })
            .unwrap_or_default();
        Ok(sec)
    }
}
