//! Golden SVG files of the charts (tests/golden/charts/). Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --release --test offline report_charts::` and look at the diff.

use spinscope::lab::doc::LabDoc;
use spinscope::report::chart::{render, Chart, Mark, Series, Style, Unit};

fn golden(name: &str, svg: &str) {
    crate::common::golden(&format!("golden/charts/{name}"), svg);
}

/// A sweep-like chart: a doubling ladder, two variants with repeats, USL fits, one invalid step.
fn sweep_like() -> Chart {
    let ladder = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
    let tps = |n: f64, s: f64| 1800.0 * n / (1.0 + s * (n - 1.0) + 0.0004 * n * (n - 1.0));
    let mut series = Vec::new();
    for (g, (name, s)) in [("baseline", 0.03), ("spin_wait_delay=30", 0.06)]
        .iter()
        .enumerate()
    {
        series.push(Series::line(
            *name,
            g,
            ladder.iter().map(|&n| (n, tps(n, *s))).collect(),
        ));
        series.push(Series {
            name: name.to_string(),
            points: ladder
                .iter()
                .flat_map(|&n| [(n, tps(n, *s) * 0.97), (n, tps(n, *s) * 1.02)])
                .collect(),
            style: Style::Repeats,
            group: g,
        });
        series.push(Series {
            name: format!("USL fit {name}"),
            points: (0..=48)
                .map(|i| {
                    let n = (6.0 * f64::from(i) / 48.0).exp2();
                    (n, tps(n, *s))
                })
                .collect(),
            style: Style::Fit,
            group: g,
        });
    }
    Chart {
        title: "oltp_read_write: throughput vs concurrency".into(),
        x_label: "client threads".into(),
        y_label: "transactions/s".into(),
        y_unit: Unit::Count,
        series,
        marks: vec![Mark {
            x: 16.0,
            y: 2000.0,
            label: "threads 16 baseline #2 INVALID: server restarted".into(),
        }],
    }
}

#[test]
fn sweep_like_chart_matches_golden() {
    let svg = render(&sweep_like());
    assert!(
        svg.contains(">\n64\n<") && svg.contains(">\n10k\n<"),
        "{svg}"
    );
    assert!(!svg.contains(">\n3\n<"), "a log2 axis has no tick at 3");
    golden("sweep_throughput.svg", &svg);
}

#[test]
fn lab_charts_match_golden() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/report/lab.json"
    ))
    .unwrap();
    let doc: LabDoc = serde_json::from_str(&text).unwrap();
    let charts = spinscope::report::lab::charts(&doc);
    assert_eq!(charts.len(), 3);
    for (name, svg) in &charts {
        for latch in ["mysql80", "futex", "time-budget"] {
            assert!(svg.contains(latch), "{name} lacks {latch}");
        }
        golden(name, svg);
    }
    // Latency charts label time with units, never raw nanoseconds counts.
    assert!(charts[1].1.contains(" us\n") || charts[1].1.contains(" ms\n"));
}

#[test]
fn one_x_value_gets_one_tick_and_repeats_their_own_legend_entry() {
    // lab --threads 8: every point at x = 8; the axis must not run 8..9 with the points on its
    // left edge.
    let c = Chart {
        title: "one step".into(),
        x_label: "threads".into(),
        y_label: "ops/s".into(),
        y_unit: Unit::Count,
        series: vec![
            Series::line("a (median)", 0, vec![(8.0, 100.0)]),
            Series {
                name: "a".into(),
                points: vec![(8.0, 90.0), (8.0, 110.0)],
                style: Style::Repeats,
                group: 0,
            },
        ],
        marks: vec![],
    };
    let svg = render(&c);
    assert!(svg.contains(">\n8\n<"), "{svg}");
    assert!(!svg.contains(">\n9\n<"), "no tick at 9: {svg}");
    assert!(
        svg.contains("a: single runs"),
        "the repeats' own legend entry"
    );
}
