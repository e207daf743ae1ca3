//! Flame graph via inferno: frames of the spin/latch classes get their class colour (through
//! inferno's palette map), everything else inferno's deterministic "hot" hash colours; a legend
//! is added in the top-right corner. Same folded input, same SVG bytes.

use inferno::flamegraph::color::{Color, PaletteMap};

use super::rules::{self, Class};
use super::Tally;
use crate::error::{Error, Result};

const WIDTH: usize = 1200;

/// Render folded stacks to an SVG document.
pub fn flame_graph(folded: &[(String, Tally)], title: &str, unit: &str) -> Result<String> {
    let mut map = PaletteMap::default();
    for (stack, _) in folded {
        for f in stack.split(';').skip(1) {
            if let Some(c) = rules::frame_class(f).filter(|c| c.is_latch()) {
                let (r, g, b) = c.rgb();
                map.insert(f, Color { r, g, b });
            }
        }
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.hash = true;
    opts.deterministic = true;
    opts.image_width = Some(WIDTH);
    opts.count_name = unit.to_string();
    opts.palette_map = Some(&mut map);
    let lines: Vec<String> = folded
        .iter()
        .map(|(s, t)| format!("{s} {}", t.weight))
        .collect();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(|s| s.as_str()), &mut out)
        .map_err(|e| Error::runtime(format!("drawing the flame graph failed: {e}")))?;
    let svg = String::from_utf8(out).map_err(|e| Error::runtime(format!("flame graph: {e}")))?;
    Ok(add_legend(&svg))
}

fn add_legend(svg: &str) -> String {
    let latch: Vec<Class> = Class::ALL
        .iter()
        .copied()
        .filter(|c| c.is_latch())
        .collect();
    let x = WIDTH - 300;
    let mut g = String::from("<g id=\"spinscope-legend\">");
    for (i, c) in latch.iter().enumerate() {
        let y = 30 + 16 * i;
        let (r, gg, b) = c.rgb();
        g.push_str(&format!(
            "<rect x=\"{x}\" y=\"{y}\" width=\"12\" height=\"12\" fill=\"rgb({r},{gg},{b})\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" font-family=\"Verdana\">{}</text>",
            x + 16,
            y + 10,
            c.label()
        ));
    }
    g.push_str("</g>");
    match svg.rfind("</svg>") {
        Some(i) => format!("{}{}\n{}", &svg[..i], g, &svg[i..]),
        None => svg.to_string(),
    }
}

/// Parts per million of a profile: the integer counts a differential flame graph is drawn from.
const PPM: f64 = 1e6;

/// A differential flame graph (inferno's differential mode, as Brendan Gregg's): frame widths
/// are the AFTER profile's shares, colours the change from BEFORE: red grew, blue shrank, the
/// deeper the colour the larger the change. Both sides are shares of their own totals, so
/// recordings of different lengths compare. Stacks seen only BEFORE have no width here.
pub fn differential(stacks: &[super::diff::StackDiff], title: &str) -> Result<String> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.subtitle = Some("widths: after; red: grew, blue: shrank (share of each profile)".into());
    opts.deterministic = true;
    opts.image_width = Some(WIDTH);
    opts.count_name = "ppm".to_string();
    let lines: Vec<String> = stacks
        .iter()
        .map(|s| {
            format!(
                "{} {} {}",
                s.stack,
                (s.before_share * PPM).round() as u64,
                (s.after_share * PPM).round() as u64
            )
        })
        .collect();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(|s| s.as_str()), &mut out)
        .map_err(|e| Error::runtime(format!("drawing the differential flame graph failed: {e}")))?;
    String::from_utf8(out).map_err(|e| Error::runtime(format!("flame graph: {e}")))
}
