//! `sweep`'s SVG charts (throughput and p99 against concurrency, variants overlaid, the USL
//! curve through the points) and the self-contained HTML report that embeds them.

use std::fmt::Write;

use crate::analysis::usl::usl_x;
use crate::report::chart::{render, Chart, Mark, Series, Style, Unit};
use crate::report::esc;
use crate::report::sweep::{step_label, StepDoc, SweepDoc};

/// A USL fit explaining less of the measured throughput than this is not drawn (nor used).
pub const USL_MIN_R2: f64 = 0.9;

/// Why a variant's USL fit is not drawn, when it is not.
pub fn usl_not_drawn(u: &crate::analysis::usl::UslFit) -> Option<String> {
    // A NaN R^2 is no fit either.
    (u.r_squared.is_nan() || u.r_squared < USL_MIN_R2).then(|| {
        format!(
            "USL fit not drawn: R^2 {:.3} is below {USL_MIN_R2} (the model does not describe these points)",
            u.r_squared
        )
    })
}

/// Invalid steps as crosses, their reason in the tooltip.
fn invalid_marks(doc: &SweepDoc, y: impl Fn(&StepDoc) -> f64) -> Vec<Mark> {
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

fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The valid, finished steps of one variant (the repeats behind its points).
fn repeats<'a>(doc: &'a SweepDoc, variant: &'a str) -> impl Iterator<Item = &'a StepDoc> + 'a {
    doc.steps
        .iter()
        .filter(move |s| s.variant == variant && !s.interrupted && s.invalid.is_none())
}

/// The chart files of `sweep run --charts`.
const THROUGHPUT_SVG: &str = "throughput.svg";
const P99_SVG: &str = "p99.svg";

/// The names of the files [`charts`] returns, for checking the paths before a run.
pub fn chart_files() -> Vec<String> {
    vec![THROUGHPUT_SVG.into(), P99_SVG.into()]
}

/// Every chart as (file name, SVG): throughput and p99 against threads.
pub fn charts(doc: &SweepDoc) -> Vec<(String, String)> {
    vec![
        (THROUGHPUT_SVG.to_string(), throughput_chart(doc)),
        (P99_SVG.to_string(), p99_chart(doc)),
    ]
}

/// Throughput against concurrency: per variant the median of the repeats as a line, the single
/// repeats as hollow points (when there are several), the USL fit dashed; invalid steps crossed.
pub fn throughput_chart(doc: &SweepDoc) -> String {
    let several = doc.config.repeat > 1;
    let mut series = Vec::new();
    for (g, va) in doc.analysis.variants.iter().enumerate() {
        let name = if several {
            format!("{} (median)", va.variant)
        } else {
            va.variant.clone()
        };
        series.push(Series::line(
            name,
            g,
            va.points
                .iter()
                .map(|p| {
                    let y = median(&p.tps_repeats).unwrap_or(p.tps);
                    (f64::from(p.threads), y)
                })
                .collect(),
        ));
        if several {
            series.push(Series {
                name: va.variant.clone(),
                points: repeats(doc, &va.variant)
                    .map(|s| (f64::from(s.threads), s.tps))
                    .collect(),
                style: Style::Repeats,
                group: g,
            });
        }
        let fit = va.usl.as_ref().filter(|u| usl_not_drawn(u).is_none());
        if let (Some(u), Some(first), Some(last)) = (fit, va.points.first(), va.points.last()) {
            // Samples evenly spaced in log2 of the thread count: smooth on either axis.
            let (a, b) = (
                f64::from(first.threads).max(1.0).log2(),
                f64::from(last.threads).max(1.0).log2(),
            );
            let points = (0..=48)
                .map(|i| {
                    let n = (a + (b - a) * f64::from(i) / 48.0).exp2();
                    (n, usl_x(n, u.sigma, u.kappa, u.lambda))
                })
                .collect();
            series.push(Series {
                name: format!("USL fit {}", va.variant),
                points,
                style: Style::Fit,
                group: g,
            });
        }
    }
    render(&Chart {
        title: format!("{}: throughput vs concurrency", doc.config.workload),
        x_label: "client threads".into(),
        y_label: "transactions/s".into(),
        y_unit: Unit::Count,
        series,
        marks: invalid_marks(doc, |s| s.tps),
    })
}

/// p99 latency against concurrency: per variant the median p99 of the repeats as a line, the
/// single repeats as hollow points.
pub fn p99_chart(doc: &SweepDoc) -> String {
    let several = doc.config.repeat > 1;
    let mut series = Vec::new();
    for (g, va) in doc.analysis.variants.iter().enumerate() {
        series.push(Series::line(
            if several {
                format!("{} (median)", va.variant)
            } else {
                va.variant.clone()
            },
            g,
            va.points
                .iter()
                .map(|p| (f64::from(p.threads), p.p99_us * 1000.0))
                .collect(),
        ));
        if several {
            series.push(Series {
                name: va.variant.clone(),
                points: repeats(doc, &va.variant)
                    .map(|s| (f64::from(s.threads), s.latency_us.p99 * 1000.0))
                    .collect(),
                style: Style::Repeats,
                group: g,
            });
        }
    }
    render(&Chart {
        title: format!("{}: p99 latency vs concurrency", doc.config.workload),
        x_label: "client threads".into(),
        y_label: "p99 latency".into(),
        y_unit: Unit::Nanos,
        series,
        marks: invalid_marks(doc, |s| s.latency_us.p99 * 1000.0),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_names_are_the_written_ones() {
        let doc: SweepDoc =
            serde_json::from_str(include_str!("../../tests/fixtures/report/sweep.json")).unwrap();
        let written: Vec<String> = charts(&doc).into_iter().map(|(n, _)| n).collect();
        assert_eq!(written, chart_files());
        assert_eq!(chart_files(), ["throughput.svg", "p99.svg"]);
    }
}
