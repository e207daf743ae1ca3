//! Line charts as SVG, drawn with `plotters` (SVG backend, no font files: text is emitted as
//! `<text>` and sized by plotters' fixed estimate, so the same input gives the same bytes).
//!
//! What this module decides (and plotters does not): a log2 x axis for doubling ladders with
//! integer ticks, rounded y ticks with SI prefixes or time units, one colour and marker per
//! group, fits as dashed lines without markers, repeats as hollow points, invalid points as
//! crosses with their reason as a tooltip, and the legend in its own column so it never covers
//! data. Pure.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::esc;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Line through the points with a marker on each (a median, a measured value).
    Line,
    /// Dashed line without markers (a model fit such as USL); legend "fit: NAME".
    Fit,
    /// Hollow markers only (the single repeats behind a median line); no legend line of its own.
    Repeats,
}

/// One named series. `group` picks the colour and marker, so a variant's median line, its
/// repeats and its fit share them.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    pub group: usize,
}

impl Series {
    /// A measured line in colour `group`.
    pub fn line(name: impl Into<String>, group: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: Style::Line,
            group,
        }
    }
}

/// A point drawn as a black cross with its reason as a tooltip and a legend entry (a sweep
/// step left out of the analysis as invalid).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub label: String,
}

/// What the y values are, for the tick labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count or rate: 0, 500, 1k, 1.5k, 2M.
    Count,
    /// Nanoseconds: 500 ns, 2 us, 1.5 ms, 2 s.
    Nanos,
}

/// A chart: title, axis names, y unit, series and marks.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y_unit: Unit,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
}

/// Okabe-Ito colours (distinguishable with common colour-vision deficiencies), no yellow.
const COLORS: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x55, 0x55, 0x55),
];
const MARKERS: usize = 4;

const W: u32 = 820;
const H: u32 = 440;
const LEGEND_W: u32 = 210;
const FONT: &str = "sans-serif";

fn color(group: usize) -> RGBColor {
    COLORS[group % COLORS.len()]
}

/// Cut a label to `max` characters (legend and title must not run off the picture).
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

/// A rounded tick step (1, 2 or 5 times a power of ten) giving about `n` intervals over `span`.
pub fn nice_step(span: f64, n: f64) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / n;
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let f = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * p
}

/// Trim a number printed with up to 2 decimals: 1.50 -> 1.5, 2.00 -> 2.
fn short(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A tick label with an SI prefix: 0, 950, 1k, 1.5k, 2M, 3G.
pub fn si(x: f64) -> String {
    let a = x.abs();
    for (f, p) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if a >= f {
            return format!("{}{p}", short(x / f));
        }
    }
    short(x)
}

/// A tick label for nanoseconds: 500 ns, 2 us, 1.5 ms, 2 s.
pub fn si_ns(ns: f64) -> String {
    let a = ns.abs();
    if a == 0.0 {
        return "0".into();
    }
    for (f, u) in [(1e9, "s"), (1e6, "ms"), (1e3, "us")] {
        if a >= f {
            return format!("{} {u}", short(ns / f));
        }
    }
    format!("{} ns", short(ns))
}

fn finite(p: &(f64, f64)) -> bool {
    p.0.is_finite() && p.1.is_finite()
}

/// The x axis: either log2 (ticks at powers of two) or linear with integer ticks.
struct XAxis {
    log2: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl XAxis {
    fn new(xs: &[f64]) -> XAxis {
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        for &x in xs {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
        if !x0.is_finite() {
            (x0, x1) = (1.0, 2.0);
        }
        // One x value (lab --threads 8, a sweep of one step): a categorical axis with that one
        // tick in the middle, not a numeric span from it to it + 1.
        if x1 == x0 {
            return XAxis {
                log2: false,
                lo: x0 - 1.0,
                hi: x0 + 1.0,
                ticks: vec![x0],
            };
        }
        // A ladder spanning a factor of 8 or more reads on a log2 axis (1, 2, 4 ... 64 evenly
        // spaced); a short or linear one reads on a linear axis.
        if x0 >= 1.0 && x1 / x0 >= 8.0 {
            let (a, b) = (x0.log2().floor(), x1.log2().ceil());
            let every = ((b - a) / 10.0).ceil().max(1.0);
            let mut ticks = Vec::new();
            let mut k = a;
            while k <= b + 1e-9 {
                ticks.push(k);
                k += every;
            }
            XAxis {
                log2: true,
                lo: x0.log2() - 0.3,
                hi: x1.log2() + 0.3,
                ticks,
            }
        } else {
            if x1 <= x0 {
                x1 = x0 + 1.0;
            }
            let step = nice_step(x1 - x0, 8.0).max(1.0).round();
            let first = (x0 / step).floor() * step;
            let mut ticks = Vec::new();
            let mut t = first;
            while t <= x1 + 1e-9 {
                if t >= x0 - 1e-9 {
                    ticks.push(t);
                }
                t += step;
            }
            let pad = (x1 - x0) * 0.04;
            XAxis {
                log2: false,
                lo: x0 - pad,
                hi: x1 + pad,
                ticks,
            }
        }
    }

    fn map(&self, x: f64) -> f64 {
        if self.log2 {
            x.log2()
        } else {
            x
        }
    }

    fn label(&self, v: f64) -> String {
        let x = if self.log2 { v.exp2() } else { v };
        si(x.round())
    }
}

/// The y axis: 0 to a rounded top, about 5 rounded ticks.
fn y_axis(ys: &[f64]) -> (f64, Vec<f64>) {
    let top = ys
        .iter()
        .copied()
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.05 } else { 1.0 };
    let step = nice_step(top, 5.0);
    let top = (top / step).ceil() * step;
    let n = (top / step).round() as usize;
    (top, (0..=n).map(|i| i as f64 * step).collect())
}

/// A linear f64 axis whose ticks are exactly the given values (plotters' own f64 axis picks
/// its ticks itself).
#[derive(Clone)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        (f64::from(limit.0) + f * f64::from(limit.1 - limit.0)).round() as i32
    }
    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn marker<'a>(area: &Area<'a>, group: usize, at: (i32, i32), filled: bool) -> Result<(), String> {
    let c = color(group);
    let st = if filled {
        c.filled()
    } else {
        c.stroke_width(1)
    };
    let r = 4;
    let res = match group % MARKERS {
        0 => area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), r, st))),
        1 => area.draw(&(EmptyElement::at(at) + TriangleMarker::new((0, 0), r + 1, st))),
        2 => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-r, -r), (r, r)], st))),
        _ => {
            let pts = vec![(0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0)];
            if filled {
                area.draw(&(EmptyElement::at(at) + Polygon::new(pts, st)))
            } else {
                let mut p = pts.clone();
                p.push(pts[0]);
                area.draw(&(EmptyElement::at(at) + PathElement::new(p, st)))
            }
        }
    };
    res.map_err(|e| e.to_string())
}

/// A single repeat: a small hollow circle in the group's colour, whatever the group's marker
/// shape, so it never looks like a median marker.
fn repeat_marker<'a>(area: &Area<'a>, group: usize, at: (i32, i32)) -> Result<(), String> {
    area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), 3, color(group).stroke_width(1))))
        .map_err(|e| e.to_string())
}

fn cross<'a>(area: &Area<'a>, at: (i32, i32)) -> Result<(), String> {
    let st = BLACK.stroke_width(2);
    let r = 6;
    area.draw(
        &(EmptyElement::at(at)
            + PathElement::new(vec![(-r, -r), (r, r)], st)
            + PathElement::new(vec![(-r, r), (r, -r)], st)),
    )
    .map_err(|e| e.to_string())
}

/// Draw a chart as an SVG document. Non-finite points are skipped; an empty chart still
/// draws its axes and says "no data".
pub fn render(c: &Chart) -> String {
    let mut svg = String::new();
    let mut tips: Vec<(i32, i32, String)> = Vec::new();
    if let Err(e) = draw(c, &mut svg, &mut tips) {
        // Plotters' SVG backend only fails on coordinate misuse; say so inside the picture.
        return format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"60\"><text x=\"10\" y=\"30\" font-family=\"{FONT}\">chart not drawn: {}</text></svg>\n",
            esc(&e)
        );
    }
    // Tooltips (plotters has no <title>): an invisible hit circle per marked point.
    if !tips.is_empty() {
        let mut extra = String::new();
        for (x, y, t) in &tips {
            extra.push_str(&format!(
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"8\" fill=\"transparent\" class=\"mark\"><title>{}</title></circle>\n",
                esc(t)
            ));
        }
        if let Some(pos) = svg.rfind("</svg>") {
            svg.insert_str(pos, &extra);
        }
    }
    if !svg.ends_with('\n') {
        svg.push('\n');
    }
    svg
}

fn draw(c: &Chart, out: &mut String, tips: &mut Vec<(i32, i32, String)>) -> Result<(), String> {
    let xs: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter(|p| finite(p)).map(|p| p.0))
        .chain(
            c.marks
                .iter()
                .filter(|m| m.x.is_finite() && m.y.is_finite())
                .map(|m| m.x),
        )
        .collect();
    let ys: Vec<f64> = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().filter(|p| finite(p)).map(|p| p.1))
        .chain(c.marks.iter().filter(|m| m.x.is_finite()).map(|m| m.y))
        .collect();
    let xa = XAxis::new(&xs);
    let (top, yt) = y_axis(&ys);
    let y_fmt = |v: f64| match c.y_unit {
        Unit::Count => si(v),
        Unit::Nanos => si_ns(v),
    };
    {
        let root = SVGBackend::with_string(out, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (left, legend) = root.split_horizontally(W - LEGEND_W);
        let mut ch = ChartBuilder::on(&left)
            .caption(clip(&c.title, 64), (FONT, 20.0))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(
                Ticked {
                    lo: xa.lo,
                    hi: xa.hi,
                    ticks: xa.ticks.clone(),
                },
                Ticked {
                    lo: 0.0,
                    hi: top,
                    ticks: yt.clone(),
                },
            )
            .map_err(|e| e.to_string())?;
        ch.configure_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(0xE4, 0xE4, 0xE4))
            .x_labels(xa.ticks.len())
            .y_labels(yt.len())
            .x_label_formatter(&|v| xa.label(*v))
            .y_label_formatter(&|v| y_fmt(*v))
            .x_desc(clip(&c.x_label, 50))
            .y_desc(clip(&c.y_label, 40))
            .label_style((FONT, 16.0))
            .axis_desc_style((FONT, 17.0))
            .draw()
            .map_err(|e| e.to_string())?;
        let area = ch.plotting_area().clone();
        if xs.is_empty() {
            let mid = ((xa.lo + xa.hi) / 2.0, top / 2.0);
            area.draw(&Text::new("no data", mid, (FONT, 16)))
                .map_err(|e| e.to_string())?;
        }
        let pt = |p: &(f64, f64)| (xa.map(p.0), p.1);
        for s in &c.series {
            let pts: Vec<(f64, f64)> = s.points.iter().filter(|p| finite(p)).map(pt).collect();
            let col = color(s.group);
            match s.style {
                Style::Line => {
                    ch.draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))
                        .map_err(|e| e.to_string())?;
                    for p in &pts {
                        marker(&root, s.group, area.map_coordinate(p), true)?;
                    }
                }
                Style::Fit => {
                    ch.draw_series(DashedLineSeries::new(
                        pts.clone(),
                        7,
                        5,
                        col.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?;
                }
                Style::Repeats => {
                    for p in &pts {
                        repeat_marker(&root, s.group, area.map_coordinate(p))?;
                    }
                }
            }
        }
        for m in c
            .marks
            .iter()
            .filter(|m| m.x.is_finite() && m.y.is_finite())
        {
            let at = area.map_coordinate(&(xa.map(m.x), m.y));
            cross(&root, at)?;
            tips.push((at.0, at.1, m.label.clone()));
        }
        draw_legend(&legend, c)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The legend column: one entry per line and per fit, then "repeats" and "invalid" when drawn.
fn draw_legend(area: &Area<'_>, c: &Chart) -> Result<(), String> {
    let text = |s: &str, at: (i32, i32)| {
        area.draw(&Text::new(
            s.to_string(),
            at,
            TextStyle::from((FONT, 16.0).into_font()).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            )),
        ))
        .map_err(|e| e.to_string())
    };
    let mut y = 56;
    let step = 22;
    let (x0, x1, tx) = (8, 36, 44);
    for s in &c.series {
        let col = color(s.group);
        match s.style {
            Style::Line => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x1, y)],
                    col.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
                marker(area, s.group, ((x0 + x1) / 2, y), true)?;
                text(&clip(&s.name, 21), (tx, y))?;
            }
            Style::Fit => {
                for k in 0..3 {
                    let a = x0 + k * 10;
                    area.draw(&PathElement::new(
                        vec![(a, y), ((a + 6).min(x1), y)],
                        col.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?;
                }
                text(&clip(&s.name, 21), (tx, y))?;
            }
            Style::Repeats => {
                repeat_marker(area, s.group, ((x0 + x1) / 2, y))?;
                text(&clip(&format!("{}: single runs", s.name), 21), (tx, y))?;
            }
        }
        y += step;
    }
    if c.marks.iter().any(|m| m.x.is_finite() && m.y.is_finite()) {
        cross(area, ((x0 + x1) / 2, y))?;
        text("invalid (left out)", (tx, y))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>, marks: Vec<Mark>) -> Chart {
        Chart {
            title: "t<1>".into(),
            x_label: "client threads".into(),
            y_label: "transactions/s".into(),
            y_unit: Unit::Count,
            series,
            marks,
        }
    }

    #[test]
    fn ticks_are_rounded_with_units() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(1000.0), "1k");
        assert_eq!(si(1500.0), "1.5k");
        assert_eq!(si(2_000_000.0), "2M");
        assert_eq!(si_ns(500.0), "500 ns");
        assert_eq!(si_ns(2000.0), "2 us");
        assert_eq!(si_ns(1_500_000.0), "1.5 ms");
        assert_eq!(nice_step(3_236_183.0, 5.0), 1_000_000.0);
        assert_eq!(nice_step(34.64 * 4.0, 5.0), 50.0);
        let (top, t) = y_axis(&[3_236_183.0]);
        assert_eq!(top, 4_000_000.0);
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn doubling_ladders_get_a_log2_axis_with_integer_ticks() {
        let a = XAxis::new(&[1.0, 4.0, 16.0, 64.0]);
        assert!(a.log2);
        let labels: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "64"]);
        let b = XAxis::new(&[1.0, 2.0, 3.0, 4.0]);
        assert!(!b.log2);
        assert!(b.ticks.iter().all(|t| t.fract() == 0.0), "{:?}", b.ticks);
        let one = XAxis::new(&[8.0, 8.0]);
        assert_eq!(one.ticks, [8.0], "one x value: one tick");
        assert!(one.lo < 8.0 && one.hi > 8.0, "the value in the middle");
        let c = XAxis::new(&[
            1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 4096.0,
        ]);
        assert!(c.ticks.len() <= 11, "{:?}", c.ticks);
    }

    #[test]
    fn chart_draws_lines_fits_repeats_and_marks_deterministically() {
        let series = vec![
            Series::line(
                "a",
                0,
                vec![(1.0, 10.0), (2.0, 20.0), (4.0, 30.0), (8.0, 32.0)],
            ),
            Series {
                name: "a".into(),
                points: vec![(1.0, 9.0), (1.0, 11.0)],
                style: Style::Repeats,
                group: 0,
            },
            Series {
                name: "USL fit a".into(),
                points: vec![(1.0, 10.0), (8.0, 31.0)],
                style: Style::Fit,
                group: 0,
            },
            Series::line("b", 1, vec![(1.0, f64::NAN), (2.0, 5.0)]),
        ];
        let marks = vec![Mark {
            x: 2.0,
            y: 3.0,
            label: "threads 2 a #1 invalid: errors <5%>".into(),
        }];
        let s = render(&chart(series.clone(), marks.clone()));
        assert!(
            s.starts_with("<svg") && s.trim_end().ends_with("</svg>"),
            "{s}"
        );
        assert!(s.contains("t&lt;1&gt;"));
        assert!(s.contains("<title>threads 2 a #1 invalid: errors &lt;5%&gt;</title>"));
        assert!(s.contains("invalid (left out)") && s.contains("a: single runs"));
        assert!(s.contains("USL fit a"), "{s}");
        assert!(!s.contains("2.000"));
        assert_eq!(s, render(&chart(series, marks)));
        let empty = render(&chart(vec![], vec![]));
        assert!(empty.contains("no data") && !empty.contains("invalid"));
    }
}
