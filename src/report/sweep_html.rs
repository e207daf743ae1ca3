//! `sweep`'s SVG charts (throughput and p99 against concurrency, variants overlaid, the USL
//! curve through the points) and the self-contained HTML report that embeds them.

use std::fmt::Write;

use crate::analysis::usl::usl_x;
use crate::report::chart::{line_chart_marked, Mark, Series};
use crate::report::sweep::{step_label, SweepDoc};

/// Invalid steps as red crosses, their reason in the tooltip.
fn invalid_marks(doc: &SweepDoc, y: impl Fn(&crate::report::sweep::StepDoc) -> f64) -> Vec<Mark> {
    doc.steps
        .iter()
        .filter(|s| !s.interrupted)
        .filter_map(|s| {
            s.invalid.as_ref().map(|why| Mark {
                x: f64::from(s.threads),
                y: y(s),
                label: format!("{} INVALID: {why}", step_label(s)),
            })
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Throughput against concurrency, one line per variant, plus each variant's USL curve.
pub fn throughput_chart(doc: &SweepDoc) -> String {
    let mut series = Vec::new();
    for va in &doc.analysis.variants {
        series.push(Series {
            name: va.variant.clone(),
            points: va
                .points
                .iter()
                .map(|p| (f64::from(p.threads), p.tps))
                .collect(),
        });
    }
    for va in &doc.analysis.variants {
        if let (Some(u), Some(last)) = (&va.usl, va.points.last()) {
            let n_max = f64::from(last.threads);
            let points = (0..=24)
                .map(|i| {
                    let n = 1.0 + (n_max - 1.0) * f64::from(i) / 24.0;
                    (n, usl_x(n, u.sigma, u.kappa, u.lambda))
                })
                .collect();
            series.push(Series {
                name: format!("USL {}", va.variant),
                points,
            });
        }
    }
    line_chart_marked(
        &format!("{}: throughput vs concurrency", doc.config.workload),
        "client threads",
        "transactions/s",
        &series,
        &invalid_marks(doc, |s| s.tps),
    )
}

/// p99 latency against concurrency, one line per variant.
pub fn p99_chart(doc: &SweepDoc) -> String {
    let series: Vec<Series> = doc
        .analysis
        .variants
        .iter()
        .map(|va| Series {
            name: va.variant.clone(),
            points: va
                .points
                .iter()
                .map(|p| (f64::from(p.threads), p.p99_us / 1000.0))
                .collect(),
        })
        .collect();
    line_chart_marked(
        &format!("{}: p99 latency vs concurrency", doc.config.workload),
        "client threads",
        "p99 ms",
        &series,
        &invalid_marks(doc, |s| s.latency_us.p99 / 1000.0),
    )
}

/// A self-contained HTML page: the table, the charts inline, the knee, USL and verdicts.
pub fn html(doc: &SweepDoc) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>spinscope sweep</title>\n<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}} pre{{background:#f6f6f6;padding:1em;overflow-x:auto}} .sig{{font-weight:bold}}</style></head><body>"
    );
    let _ = writeln!(s, "<h1>spinscope sweep: {}</h1>", esc(&doc.config.workload));
    if doc.interrupted || !doc.complete {
        let _ = writeln!(
            s,
            "<p><b>Partial results</b>: {}</p>",
            esc(doc
                .stopped_because
                .as_deref()
                .unwrap_or("the sweep did not finish"))
        );
    }
    let _ = writeln!(
        s,
        "<h2>Charts</h2>\n{}\n{}",
        throughput_chart(doc),
        p99_chart(doc)
    );
    let _ = writeln!(s, "<h2>A/B verdicts</h2>");
    if doc.analysis.ab.is_empty() {
        let _ = writeln!(s, "<p>One variant only: nothing to compare.</p>");
    } else {
        let _ = writeln!(s, "<p>{}</p><ul>", esc(&doc.analysis.ab_method));
        for ab in &doc.analysis.ab {
            let _ = writeln!(
                s,
                "<li class=\"{}\">{} threads: {} vs {}: throughput {}; p99 x{:.2}</li>",
                if ab.tps.as_ref().is_some_and(|t| t.significant) {
                    "sig"
                } else {
                    ""
                },
                ab.threads,
                esc(&ab.variant),
                esc(&ab.baseline),
                esc(&ab.text),
                ab.p99_ratio
            );
        }
        let _ = writeln!(s, "</ul>");
    }
    let _ = writeln!(
        s,
        "<h2>Steps, knee and USL</h2>\n<pre>{}</pre>",
        esc(&crate::report::sweep::render(doc))
    );
    let _ = writeln!(s, "</body></html>");
    s
}
