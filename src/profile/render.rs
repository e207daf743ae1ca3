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
    o.push('\n');
    let mut t = crate::report::table(&[
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
        let mut t = crate::report::table(&["spin loop (no symbol)", "share", "samples"]);
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

/// Keep the leaf end of long stacks readable.
fn abbreviate(stack: &str) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    if frames.len() <= 6 {
        return stack.to_string();
    }
    format!("{};...;{}", frames[0], frames[frames.len() - 5..].join(";"))
}
