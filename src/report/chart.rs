//! Minimal, dependency-free SVG line charts (one series per line, legend on the right).
//! Output is deterministic for the same input, so it can be golden-tested.

use std::fmt::Write;

/// One named line of (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A point drawn as a red cross with its reason as a tooltip and a legend entry (a sweep
/// step left out of the analysis as invalid).
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub label: String,
}

/// Draw a line chart; y starts at 0. Non-finite points are skipped.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    line_chart_marked(title, x_label, y_label, series, &[])
}

/// [`line_chart`] plus marked points (red crosses with a `<title>` tooltip each, and one
/// legend line "x invalid step").
pub fn line_chart_marked(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    marks: &[Mark],
) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 420.0, 70.0, 170.0, 40.0, 50.0);
    let mark_pts: Vec<(f64, f64)> = marks.iter().map(|m| (m.x, m.y)).collect();
    let pts = series
        .iter()
        .flat_map(|s| s.points.iter())
        .chain(mark_pts.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    y1 *= 1.05;
    let pw = w - left - right;
    let ph = h - top - bottom;
    let sx = |x: f64| left + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| top + ph - y / y1 * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    for i in 0..=4 {
        let y = y1 * i as f64 / 4.0;
        let py = sy(y);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + pw,
            left - 6.0,
            py + 4.0,
            crate::report::fmt_num(y)
        );
    }
    let mut xs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(marks.iter().map(|m| m.x))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    for x in xs {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            sx(x),
            top + ph + 16.0,
            crate::report::fmt_num(x)
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate(16,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        h - 12.0,
        esc(x_label),
        top + ph / 2.0,
        esc(y_label)
    );
    for (i, se) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let path: Vec<String> = se
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for p in &path {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(s, r#"<circle cx="{px}" cy="{py}" r="3" fill="{c}"/>"#);
        }
        let ly = top + 14.0 + i as f64 * 18.0;
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            left + pw + 10.0,
            left + pw + 30.0,
            left + pw + 36.0,
            ly + 4.0,
            esc(&se.name)
        );
    }
    let shown: Vec<&Mark> = marks
        .iter()
        .filter(|m| m.x.is_finite() && m.y.is_finite())
        .collect();
    for m in &shown {
        let (px, py) = (sx(m.x), sy(m.y));
        let _ = writeln!(
            s,
            r##"<g stroke="#d00" stroke-width="2"><title>{}</title><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/></g>"##,
            esc(&m.label),
            px - 5.0,
            py - 5.0,
            px + 5.0,
            py + 5.0,
            px - 5.0,
            py + 5.0,
            px + 5.0,
            py - 5.0
        );
    }
    if !shown.is_empty() {
        let ly = top + 14.0 + series.len() as f64 * 18.0;
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#d00">x invalid step (left out)</text>"##,
            left + pw + 10.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_is_svg_with_every_series() {
        let s = line_chart(
            "t<1>",
            "threads",
            "ops/s",
            &[
                Series {
                    name: "a".into(),
                    points: vec![(1.0, 10.0), (2.0, 20.0)],
                },
                Series {
                    name: "b".into(),
                    points: vec![(1.0, f64::NAN), (2.0, 5.0)],
                },
            ],
        );
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("t&lt;1&gt;"));
        assert!(!s.contains("invalid step"));
        let m = line_chart_marked(
            "t",
            "threads",
            "ops/s",
            &[Series {
                name: "a".into(),
                points: vec![(1.0, 10.0)],
            }],
            &[Mark {
                x: 2.0,
                y: 3.0,
                label: "threads 2 a #1 invalid: errors <5%>".into(),
            }],
        );
        assert!(m.contains("<title>threads 2 a #1 invalid: errors &lt;5%&gt;</title>"));
        assert!(m.contains("invalid step (left out)"));
        assert_eq!(
            s,
            line_chart(
                "t<1>",
                "threads",
                "ops/s",
                &[
                    Series {
                        name: "a".into(),
                        points: vec![(1.0, 10.0), (2.0, 20.0)]
                    },
                    Series {
                        name: "b".into(),
                        points: vec![(1.0, f64::NAN), (2.0, 5.0)]
                    },
                ]
            )
        );
    }
}
