//! The burst timeline: a watch capture's 100 Hz samples (or a doctor window's intervals) as
//! stacked panels on one shared time axis: the server's running threads (/proc), the SQL
//! Threads_running, and the server's response time p99 per tick, with the core count and the
//! trigger instant marked, before the trigger shaded. Drawn with plotters (SVG backend). Pure.

use plotters::prelude::*;

/// What to draw. The series are aligned with `t_ms`; NaN is "not measured at this tick".
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub title: String,
    /// Time of each sample, ms (relative to the trigger when there is one).
    pub t_ms: Vec<f64>,
    pub running: Vec<f64>,
    pub threads_running: Vec<f64>,
    pub rt_p99_ms: Vec<f64>,
    pub trigger_ms: Option<f64>,
    /// Drawn as a dashed line on the thread panels (bursts are counted above it).
    pub cores: Option<f64>,
    /// Values hold over the interval that starts at `t_ms` (doctor's rows), drawn as steps.
    pub step: bool,
}

const W: u32 = 760;
const FONT: &str = "sans-serif";
const PANEL_H: u32 = 170;

struct Panel<'a> {
    name: &'a str,
    ys: &'a [f64],
    color: RGBColor,
    threads: bool,
}

/// The SVG; panels with no value are left out (and said so under the title).
pub fn render(t: &Timeline) -> String {
    let panels: Vec<Panel> = [
        Panel {
            name: "running threads (/proc)",
            ys: &t.running,
            color: RGBColor(0xD5, 0x5E, 0x00),
            threads: true,
        },
        Panel {
            name: "Threads_running (SQL)",
            ys: &t.threads_running,
            color: RGBColor(0x00, 0x72, 0xB2),
            threads: true,
        },
        Panel {
            name: "response time p99, ms",
            ys: &t.rt_p99_ms,
            color: RGBColor(0x00, 0x9E, 0x73),
            threads: false,
        },
    ]
    .into_iter()
    .filter(|p| p.ys.iter().any(|y| y.is_finite()))
    .collect();
    let mut svg = String::new();
    let h = 60 + PANEL_H * panels.len().max(1) as u32 + 40;
    if let Err(e) = draw(t, &panels, &mut svg, h) {
        return format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"60\"><text x=\"10\" y=\"30\" font-family=\"{FONT}\">timeline not drawn: {}</text></svg>\n",
            crate::report::esc(&e)
        );
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    svg
}

fn x_range(t: &Timeline) -> (f64, f64) {
    let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in t.t_ms.iter().filter(|x| x.is_finite()) {
        a = a.min(*x / 1e3);
        b = b.max(*x / 1e3);
    }
    if t.step && t.t_ms.len() >= 2 {
        b += (t.t_ms[1] - t.t_ms[0]) / 1e3;
    }
    if !(a.is_finite() && b > a) {
        return (0.0, 1.0);
    }
    (a, b)
}

fn draw(t: &Timeline, panels: &[Panel], out: &mut String, h: u32) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::with_string(out, (W, h)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root
        .titled(&t.title.chars().take(70).collect::<String>(), (FONT, 20))
        .map_err(|x| e(&x))?;
    let (x0, x1) = x_range(t);
    let n = panels.len().max(1);
    let (body, _) = root.split_vertically(PANEL_H * n as u32 + 40);
    let areas = body.split_evenly((n, 1));
    if panels.is_empty() {
        body.draw(&Text::new(
            "no samples",
            (W as i32 / 2 - 40, 80),
            (FONT, 16),
        ))
        .map_err(|x| e(&x))?;
        return root.present().map_err(|x| e(&x));
    }
    for (i, (p, area)) in panels.iter().zip(areas.iter()).enumerate() {
        let last = i + 1 == panels.len();
        panel(t, p, area, (x0, x1), last, i == 0)?;
    }
    root.present().map_err(|x| e(&x))
}

fn panel(
    t: &Timeline,
    p: &Panel,
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    (x0, x1): (f64, f64),
    last: bool,
    first: bool,
) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let mut top =
        p.ys.iter()
            .copied()
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
    if p.threads {
        top = top.max(t.cores.unwrap_or(0.0));
    }
    let top = if top > 0.0 { top * 1.12 } else { 1.0 };
    let mut ch = ChartBuilder::on(area)
        .margin_left(8)
        .margin_right(18)
        .margin_top(8)
        .x_label_area_size(if last { 40 } else { 0 })
        .y_label_area_size(58)
        .build_cartesian_2d(x0..x1, 0.0..top)
        .map_err(|x| e(&x))?;
    ch.configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
        .x_labels(9)
        .y_labels(4)
        .x_label_formatter(&|v| format!("{}", (v * 100.0).round() / 100.0))
        .y_label_formatter(&|v| crate::report::chart::si(*v))
        .x_desc(if t.trigger_ms.is_some() {
            "seconds from the trigger"
        } else {
            "seconds into the window"
        })
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(|x| e(&x))?;
    if let Some(tr) = t.trigger_ms.map(|x| x / 1e3) {
        // Before the trigger shaded; the instant as a red line.
        ch.draw_series(std::iter::once(Rectangle::new(
            [(x0, 0.0), (tr.max(x0), top)],
            RGBColor(0xF2, 0xF2, 0xF2).filled(),
        )))
        .map_err(|x| e(&x))?;
        ch.draw_series(std::iter::once(PathElement::new(
            vec![(tr, 0.0), (tr, top)],
            RGBColor(0xCC, 0x00, 0x00).stroke_width(2),
        )))
        .map_err(|x| e(&x))?;
        if first {
            let style = (FONT, 14).into_font().color(&RGBColor(0xCC, 0x00, 0x00));
            ch.draw_series(std::iter::once(Text::new(
                "trigger",
                (tr, top * 0.98),
                style,
            )))
            .map_err(|x| e(&x))?;
            ch.draw_series(std::iter::once(Text::new(
                "before",
                (x0 + (tr - x0) * 0.05, top * 0.98),
                (FONT, 14),
            )))
            .map_err(|x| e(&x))?;
        }
    }
    if let (true, Some(c)) = (p.threads, t.cores) {
        ch.draw_series(DashedLineSeries::new(
            vec![(x0, c), (x1, c)],
            6,
            4,
            BLACK.stroke_width(1),
        ))
        .map_err(|x| e(&x))?;
        ch.draw_series(std::iter::once(Text::new(
            format!("{} cores", crate::report::chart::si(c)),
            (x0 + (x1 - x0) * 0.86, c + top * 0.02),
            (FONT, 13),
        )))
        .map_err(|x| e(&x))?;
    }
    // A line per run of samples without a gap (a held or missing value, a rate lowered on a
    // saturated server): a straight line over a gap would draw values never measured.
    let pts = points(t, p.ys);
    for run in runs(&pts, t.step) {
        ch.draw_series(LineSeries::new(
            run.iter().copied(),
            p.color.stroke_width(2),
        ))
        .map_err(|x| e(&x))?;
        if run.len() <= 2 || !t.step && sparse(run) {
            ch.draw_series(run.iter().map(|&p0| Circle::new(p0, 3, p.color.filled())))
                .map_err(|x| e(&x))?;
        }
    }
    ch.draw_series(std::iter::once(Text::new(
        p.name.to_string(),
        (x0 + (x1 - x0) * 0.01, top * 0.9),
        (FONT, 15).into_font().color(&p.color),
    )))
    .map_err(|x| e(&x))?;
    Ok(())
}

/// Split points where the time step exceeds 3 times the usual (median) step.
fn runs(pts: &[(f64, f64)], step: bool) -> Vec<&[(f64, f64)]> {
    if step || pts.len() < 3 {
        return vec![pts];
    }
    let mut d: Vec<f64> = pts.windows(2).map(|w| w[1].0 - w[0].0).collect();
    d.sort_by(f64::total_cmp);
    let usual = d[d.len() / 2].max(1e-6);
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..pts.len() {
        if pts[i].0 - pts[i - 1].0 > 3.0 * usual {
            out.push(&pts[start..i]);
            start = i;
        }
    }
    out.push(&pts[start..]);
    out
}

/// Fewer than 4 points a second: each point is drawn, so what was measured shows.
fn sparse(run: &[(f64, f64)]) -> bool {
    let span = run.last().map_or(0.0, |l| l.0) - run.first().map_or(0.0, |f| f.0);
    span > 0.0 && (run.len() as f64) / span < 4.0
}

/// The line's points in seconds; a step per interval when the values hold over intervals.
fn points(t: &Timeline, ys: &[f64]) -> Vec<(f64, f64)> {
    let dt = if t.t_ms.len() >= 2 {
        (t.t_ms[1] - t.t_ms[0]) / 1e3
    } else {
        0.0
    };
    let mut v = Vec::new();
    for (x, y) in t.t_ms.iter().zip(ys) {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        v.push((x / 1e3, *y));
        if t.step {
            v.push((x / 1e3 + dt, *y));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_share_one_axis_and_mark_the_trigger() {
        let t_ms: Vec<f64> = (-100..100).map(|i| f64::from(i) * 10.0).collect();
        let tl = Timeline {
            title: "capture <x>".into(),
            running: t_ms
                .iter()
                .map(|t| if *t > 0.0 { 30.0 } else { 2.0 })
                .collect(),
            threads_running: t_ms.iter().map(|_| f64::NAN).collect(),
            rt_p99_ms: t_ms.iter().map(|t| t.abs() / 100.0).collect(),
            t_ms,
            trigger_ms: Some(0.0),
            cores: Some(2.0),
            step: false,
        };
        let s = render(&tl);
        assert!(
            s.starts_with("<svg") && s.contains("capture &lt;x&gt;"),
            "{s}"
        );
        assert!(s.contains("running threads (/proc)") && s.contains("response time p99"));
        assert!(
            !s.contains("Threads_running (SQL)"),
            "a panel without values is left out"
        );
        // plotters writes a text element's content on a line of its own
        let texts: Vec<&str> = s.lines().map(str::trim).collect();
        assert!(
            texts.contains(&"trigger") && texts.contains(&"2 cores"),
            "{s}"
        );
        assert_eq!(
            s.matches("seconds from the trigger").count(),
            1,
            "one time axis, at the bottom"
        );
        assert_eq!(s, render(&tl));
    }
}
