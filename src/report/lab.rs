//! Renderers of the `spinscope.lab/2` document: the text tables and the SVG charts. Pure.

use std::fmt::Write as _;

use super::{chart, table};
use crate::analysis::lab_stats::{compare_story, OVERRUN_LIMIT_PCT};
use crate::analysis::stats::Summary;
use crate::lab::doc::{LabDoc, Point, STABLE_PCT};
use crate::lab::latch::LatchKind;
use crate::lab::plan::LabPlan;
use crate::units::{fmt_ns, fmt_num};

fn med_spread(s: &Option<Summary>, f: fn(f64) -> String) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{} ±{:.0}%", f(s.median), s.iqr_pct / 2.0),
        Some(s) => f(s.median),
        None => "-".into(),
    }
}

/// The human report: machine line, the point table, the comparison story, footnotes.
pub fn text(doc: &LabDoc) -> String {
    let m = &doc.machine;
    let p = &doc.plan;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "spinscope lab: {} CPUs, {} {:.1} ns, {} {:.3} GHz, timer cost {:.1} ns (included in acquire latencies); {} repeat(s) of {} ms; cs {} ns, think {} ns",
        m.cpus,
        m.hint.name(),
        m.hint_ns.unwrap_or(f64::NAN),
        m.counter,
        m.ticks_per_ns,
        m.timer_cost_ns,
        p.repeats,
        p.duration_ms,
        p.cs_ns,
        p.think_ns
    );
    let mut t = table(&[
        "latch",
        "threads",
        "K",
        "ops/s",
        "acq p99",
        "CPU/op",
        "CPUs",
        "vcs/op",
        "ivcs/op",
        "hints/acq",
        "futex/acq",
        "fair",
        "lost",
    ]);
    let mut overran = 0usize;
    for pt in &doc.points {
        let mut ops = med_spread(&pt.ops_per_s, fmt_num);
        if pt.overruns > 0 {
            overran += 1;
            ops.push_str(" !");
        }
        t.add_row(vec![
            pt.latch.to_string(),
            pt.threads.to_string(),
            pt.pause_scale.to_string(),
            ops,
            med_spread(&pt.acquire_p99_ns, fmt_ns),
            med_spread(&pt.cpu_ns_per_op, fmt_ns),
            pt.busy_cpus
                .map(|s| format!("{:.2}", s.median))
                .unwrap_or_else(|| "-".into()),
            fmt_num(pt.median(|r| r.voluntary_cs_per_op)),
            fmt_num(pt.median(|r| r.involuntary_cs_per_op)),
            fmt_num(pt.median(|r| r.hints_per_acquire)),
            fmt_num(pt.median(|r| r.futex_waits_per_acquire)),
            pt.fairness
                .map(|s| format!("{:.2}", s.median))
                .unwrap_or_else(|| "-".into()),
            pt.lost_updates.to_string(),
        ]);
    }
    let _ = writeln!(out, "{t}");
    let _ = writeln!(
        out,
        "(± is half the interquartile range over repeats, in % of the median; CPUs = busy CPUs, ops/s x CPU/op; lost must be 0)"
    );
    if overran > 0 {
        let worst = |f: fn(&Point) -> f64| doc.points.iter().map(f).fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "(! = {overran} point(s) had a run outlast its window by more than {OVERRUN_LIMIT_PCT}% (worst +{:.0}%; workers took up to {} to stop after the window; the rest is workers the scheduler started late or the lab woken late on a busy machine): the numbers hold for the longer interval)",
            worst(|p| p.max_overrun_pct),
            fmt_ns(worst(|p| p.max_stop_lag_ms) * 1e6),
        );
    }
    if !doc.compare.is_empty() {
        let (a, b) = (doc.compare[0].base_scale, doc.compare[0].new_scale);
        let _ = writeln!(
            out,
            "\nWhen the spin hint gets {}x slower (pause scale {a} -> {b}):",
            b / a.max(1)
        );
        let mut t = table(&[
            "latch",
            "threads",
            "ops/s change",
            "",
            "CPU/op change",
            "",
            "story",
        ]);
        for r in &doc.compare {
            let story = compare_story(
                r.latch.waiting(),
                r.ops_movement,
                r.cpu_movement,
                r.ops_change_pct,
            );
            t.add_row(vec![
                r.latch.to_string(),
                r.threads.to_string(),
                format!("{:+.1}%", r.ops_change_pct),
                format!("{:?}", r.ops_movement).to_lowercase(),
                format!("{:+.1}%", r.cpu_change_pct),
                format!("{:?}", r.cpu_movement).to_lowercase(),
                story.into(),
            ]);
        }
        let _ = writeln!(out, "{t}");
        let _ = writeln!(out, "(stable = within {STABLE_PCT}%; changed = beyond it with non-overlapping repeat ranges; unclear = beyond it, but ranges overlap or fewer than 3 repeats)");
    }
    if doc.interrupted {
        let _ = writeln!(
            out,
            "(interrupted: points above have fewer repeats than asked)"
        );
    }
    out
}

type Metric = fn(&Point) -> Option<f64>;
type RunMetric = fn(&crate::lab::harness::RunMetrics) -> f64;

/// The charts: (file stem, title, y label, y unit, median metric, per-run metric).
const CHARTS: [(&str, &str, &str, chart::Unit, Metric, RunMetric); 3] = [
    (
        "throughput",
        "throughput",
        "operations/s",
        chart::Unit::Count,
        |p| p.ops_per_s.map(|s| s.median),
        |r| r.ops_per_s,
    ),
    (
        "p99",
        "acquire p99",
        "acquire p99",
        chart::Unit::Nanos,
        |p| p.acquire_p99_ns.map(|s| s.median),
        |r| r.acquire_p99_ns,
    ),
    (
        "cpu_per_op",
        "CPU per operation",
        "CPU time per operation",
        chart::Unit::Nanos,
        |p| p.cpu_ns_per_op.map(|s| s.median),
        |r| r.cpu_ns_per_op,
    ),
];

/// Values in order of first appearance, each once.
fn unique<T: PartialEq + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut v = Vec::new();
    for x in it {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// Per latch (each once, one colour and marker each) the median of `metric` against threads
/// at pause scale `k` as a line, and with several repeats the single runs as hollow points.
pub fn chart_series(doc: &LabDoc, k: u32, metric: Metric, run: RunMetric) -> Vec<chart::Series> {
    let latches: Vec<LatchKind> = unique(doc.points.iter().map(|p| p.latch));
    let mut out = Vec::new();
    for (g, l) in latches.iter().enumerate() {
        let pts = || {
            doc.points
                .iter()
                .filter(move |p| p.latch == *l && p.pause_scale == k)
        };
        out.push(chart::Series::line(
            l.to_string(),
            g,
            pts()
                .map(|p| (p.threads as f64, metric(p).unwrap_or(f64::NAN)))
                .collect(),
        ));
        if doc.plan.repeats > 1 {
            out.push(chart::Series {
                name: l.to_string(),
                points: pts()
                    .flat_map(|p| p.runs.iter().map(move |r| (p.threads as f64, run(r))))
                    .collect(),
                style: chart::Style::Repeats,
                group: g,
            });
        }
    }
    out
}

fn chart_file(chart: &str, k: u32) -> String {
    format!("lab_{chart}_k{k}.svg")
}

/// The chart files a run of `plan` draws, known before the run so `--charts` is checked
/// first (an interrupted run draws those of the scales it reached, a subset).
pub fn chart_files(plan: &LabPlan) -> Vec<String> {
    unique(plan.scales.iter().copied())
        .into_iter()
        .flat_map(|k| CHARTS.iter().map(move |c| chart_file(c.0, k)))
        .collect()
}

/// Every chart as (file name, SVG): throughput, p99 and CPU per op against threads, one file
/// per pause scale.
pub fn charts(doc: &LabDoc) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for k in unique(doc.points.iter().map(|p| p.pause_scale)) {
        for (file, title, ylabel, unit, f, r) in CHARTS {
            let svg = chart::render(&chart::Chart {
                title: format!("lab: {title} vs threads, pause scale {k}"),
                x_label: "threads".into(),
                y_label: ylabel.into(),
                y_unit: unit,
                series: chart_series(doc, k, f, r),
                marks: Vec::new(),
            });
            out.push((chart_file(file, k), svg));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::doc::{Machine, Point, SCHEMA};
    use crate::lab::latch::SpinParams;
    use crate::lab::plan::LabPlan;
    use crate::spin::cpus::Hint;

    fn doc_with(points: Vec<Point>) -> LabDoc {
        LabDoc {
            schema: SCHEMA.into(),
            machine: Machine {
                cpus: 2,
                counter: "TSC".into(),
                ticks_per_ns: 2.6,
                timer_cost_ns: 8.0,
                hint: Hint::Pause,
                hint_ns: Some(28.0),
            },
            plan: LabPlan {
                latches: vec![LatchKind::Mysql80, LatchKind::TimeBudget],
                threads: vec![1, 4],
                scales: vec![1, 14],
                repeats: 1,
                duration_ms: 50,
                cs_ns: 200,
                cs_lines: 1,
                think_ns: 200,
                pin: false,
                padding: 64,
                params: SpinParams::default(),
                relax_auto: true,
            },
            points,
            compare: Vec::new(),
            interrupted: false,
        }
    }

    /// Points of a comparison come scale by scale (latch a, b at K=1, then a, b at K=14): each
    /// chart has each latch once, with one value per thread count.
    #[test]
    fn compare_charts_draw_every_latch_once() {
        let mut pts = Vec::new();
        for k in [1, 14] {
            for l in [LatchKind::Mysql80, LatchKind::TimeBudget] {
                for t in [1, 4] {
                    let mut p = Point::new(l, t, k, Some(Hint::Pause), None);
                    // Values for every chart, so each draws its lines (not "no data").
                    let v = crate::analysis::stats::summarize(&[1e6 / t as f64 / k as f64]);
                    p.ops_per_s = v;
                    p.acquire_p99_ns = v;
                    p.cpu_ns_per_op = v;
                    pts.push(p);
                }
            }
        }
        let doc = doc_with(pts);
        for k in [1, 14] {
            let s = chart_series(&doc, k, CHARTS[0].4, CHARTS[0].5);
            let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["mysql80", "time-budget"], "K={k}");
            assert!(s.iter().all(|s| s.points.len() == 2));
        }
        let all = charts(&doc);
        let files: Vec<String> = all.iter().map(|(f, _)| f.clone()).collect();
        assert_eq!(files.len(), 6, "{files:?}");
        // The names checked before a run are the names the run writes.
        assert_eq!(chart_files(&doc.plan), files);
        // The drawn SVG, not only the series handed to it: the legend column (left-anchored
        // text) names each latch once, and each latch's colour draws its line.
        for (file, svg) in &all {
            let legend: Vec<&str> = svg
                .split("<text")
                .skip(1)
                .filter(|t| t.contains("text-anchor=\"start\""))
                .filter_map(|t| t.split_once('>').map(|(_, rest)| rest))
                .filter_map(|rest| rest.split_once("</text>").map(|(txt, _)| txt.trim()))
                .collect();
            assert_eq!(legend, ["mysql80", "time-budget"], "{file}");
            for colour in ["#0072B2", "#D55E00"] {
                let lines = svg
                    .split("<polyline")
                    .skip(1)
                    .filter(|p| p.contains(&format!("stroke=\"{colour}\"")))
                    .count();
                assert!(
                    lines >= 2,
                    "{file}: {colour} draws {lines} lines (legend + data)"
                );
            }
        }
    }

    #[test]
    fn overruns_are_marked_in_the_table() {
        let mut p = Point::new(LatchKind::Innodb57, 4, 1000, Some(Hint::Pause), None);
        p.overruns = 1;
        p.max_overrun_pct = 37.0;
        p.max_stop_lag_ms = 2.5;
        let t = text(&doc_with(vec![p]));
        assert!(t.contains(" !"), "{t}");
        assert!(t.contains("worst +37%"), "{t}");
        assert!(t.contains("up to 2.500 ms to stop"), "{t}");
        let clean = text(&doc_with(vec![Point::new(
            LatchKind::Innodb57,
            4,
            1,
            Some(Hint::Pause),
            None,
        )]));
        assert!(!clean.contains("outlast"), "{clean}");
    }
}
