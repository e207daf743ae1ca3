//! The profile document as text for the terminal (pure).

use std::fmt::Write;

use super::ProfileDoc;

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The terminal report: headline, totals, the class table with Amdahl bounds, spin loops
/// found without a symbol, top stacks per class, notes.
pub fn text(d: &ProfileDoc) -> String {
    let mut o = String::new();
    if d.samples > 0 && d.too_few_samples {
        let _ = writeln!(
            o,
            "too few samples ({}): the shares below are coarse; record longer or at a higher \
             frequency",
            d.samples
        );
        o.push('\n');
    }
    if let Some(h) = &d.headline {
        let _ = writeln!(o, "{h}");
        o.push('\n');
    }
    if d.samples == 0 {
        return o;
    }
    let event = d.source.event.as_deref().unwrap_or("unnamed event");
    let _ = writeln!(
        o,
        "{} samples of {event}, weight {} {}{}; {} without a symbol at the sampled IP; {} in \
         spin loops found from instruction bytes",
        d.samples,
        d.weight,
        d.weight_unit,
        if d.call_chains {
            ""
        } else {
            " (no call chains)"
        },
        d.no_symbol_samples,
        d.spin_loop_samples
    );
    if let Some(line) = spin_by_time_line(d) {
        let _ = writeln!(o, "{line}");
    }
    o.push('\n');
    let mut t = crate::units::table(&[
        "class",
        "share",
        "samples",
        "inclusive",
        "at most x faster if halved",
        "if removed",
    ]);
    for c in &d.classes {
        t.add_row(vec![
            c.label.clone(),
            pct(c.self_share),
            c.self_samples.to_string(),
            pct(c.inclusive_share),
            format!("{}x", crate::units::fmt_num(c.amdahl_at_most_if_halved)),
            c.amdahl_at_most_if_removed.map_or("unbounded".into(), |x| {
                format!("{}x", crate::units::fmt_num(x))
            }),
        ]);
    }
    let _ = writeln!(o, "{t}");
    if !d.spin_loops.is_empty() {
        o.push('\n');
        let mut t = crate::units::table(&["spin loop (no symbol)", "share", "samples"]);
        for l in d.spin_loops.iter().take(10) {
            t.add_row(vec![l.name.clone(), pct(l.share), l.samples.to_string()]);
        }
        let _ = writeln!(o, "{t}");
    }
    for c in d.classes.iter().filter(|c| c.self_samples > 0) {
        o.push('\n');
        let _ = writeln!(o, "top stacks: {} ({})", c.label, pct(c.self_share));
        for s in &c.top_stacks {
            let _ = writeln!(
                o,
                "  {:>6} {:>7}  {}",
                pct(s.share),
                s.samples,
                abbreviate(&s.stack)
            );
        }
    }
    o.push('\n');
    for n in &d.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// The spin share period by period beside the total, the peak named: "spin share by second:
/// 3% 2% 61% 4% (whole recording 9%; peak 61% in second 3, 2-3 s)". Long recordings show the
/// periods around the peak only.
pub fn spin_by_time_line(d: &ProfileDoc) -> Option<String> {
    let t = d.spin_by_time.as_ref()?;
    if t.spin_share.len() < 2 {
        return None;
    }
    let by = if (t.period_s - 1.0).abs() < 1e-9 {
        "second".to_string()
    } else {
        format!("{} s", crate::units::fmt_num(t.period_s))
    };
    const SHOWN: usize = 30;
    let n = t.spin_share.len();
    let (from, to) = if n <= SHOWN {
        (0, n)
    } else {
        let from = t.peak_period.saturating_sub(SHOWN / 2).min(n - SHOWN);
        (from, from + SHOWN)
    };
    let cells: Vec<String> = t.spin_share[from..to]
        .iter()
        .zip(&t.samples[from..to])
        .map(|(s, &k)| {
            if k == 0 {
                "-".into()
            } else {
                format!("{:.0}%", 100.0 * s)
            }
        })
        .collect();
    let start = t.peak_period as f64 * t.period_s;
    let mut line = format!(
        "spin share by {by}: {}{}{} (whole recording {:.0}%; peak {:.0}% in {} {} of {n}, {}-{} s)",
        if from > 0 { "... " } else { "" },
        cells.join(" "),
        if to < n { " ..." } else { "" },
        100.0 * d.spin_share,
        100.0 * t.peak_share,
        if by == "second" { "second" } else { "period" },
        t.peak_period + 1,
        crate::units::fmt_num(start),
        crate::units::fmt_num(start + t.period_s),
    );
    if t.peak_share >= 2.0 * d.spin_share && t.peak_share - d.spin_share >= 0.1 {
        line.push_str(": a burst the whole-recording share dilutes");
    }
    Some(line)
}

/// Keep the leaf end of long stacks readable.
fn abbreviate(stack: &str) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    if frames.len() <= 6 {
        return stack.to_string();
    }
    format!("{};...;{}", frames[0], frames[frames.len() - 5..].join(";"))
}

/// Share points with a sign: +12.3 pts.
fn pts(x: f64) -> String {
    format!("{:+.1} pts", 100.0 * x)
}

fn noise_cell(n: Option<f64>) -> String {
    n.map_or("-".into(), |n| format!("+-{:.1}", 100.0 * n))
}

fn describe(i: &super::diff::DiffInput) -> String {
    let samples = i
        .samples
        .map_or(String::new(), |n| format!("{n} samples, "));
    format!(
        "{} ({}, {samples}weight {} {}{})",
        i.name,
        i.format,
        i.weight,
        i.weight_unit,
        if i.too_few_samples {
            ", TOO FEW SAMPLES"
        } else {
            ""
        }
    )
}

/// The terminal report of a profile diff: inputs, the class table, the function table, notes.
pub fn diff_text(d: &super::diff::ProfileDiff) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "before (baseline): {}", describe(&d.before));
    let _ = writeln!(o, "after:             {}", describe(&d.after));
    o.push('\n');
    let label = |id: &str| {
        d.classes
            .iter()
            .find(|c| c.class == id)
            .map_or(id.to_string(), |c| c.label.clone())
    };
    if !d.valid {
        let _ = writeln!(
            o,
            "no verdict: an input has too few samples for its shares to compare (see notes)"
        );
    } else {
        match (&d.largest_fall, &d.largest_rise) {
            (Some(f), r) => {
                let _ = write!(o, "largest fall: {}", label(f));
                if let Some(r) = r {
                    let _ = write!(o, "; largest rise: {}", label(r));
                }
                o.push('\n');
            }
            (None, Some(r)) => {
                let _ = writeln!(o, "largest rise: {}", label(r));
            }
            (None, None) => {
                let _ = writeln!(o, "no class changed");
            }
        }
    }
    o.push('\n');
    let mut t = crate::units::table(&["class", "before", "after", "change", "noise 95%"]);
    for c in &d.classes {
        t.add_row(vec![
            c.label.clone(),
            pct(c.before_share),
            pct(c.after_share),
            pts(c.change),
            noise_cell(c.noise_95),
        ]);
    }
    let _ = writeln!(o, "{t}");
    o.push('\n');
    let _ = writeln!(
        o,
        "functions, self share (top {} of {} by absolute change):",
        d.totals.functions_shown, d.totals.functions
    );
    let mut t = crate::units::table(&["function", "class", "before", "after", "change"]);
    for f in &d.functions {
        t.add_row(vec![
            f.function.clone(),
            f.class.clone(),
            pct(f.before_share),
            pct(f.after_share),
            pts(f.change),
        ]);
    }
    let _ = writeln!(o, "{t}");
    o.push('\n');
    for n in &d.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}
