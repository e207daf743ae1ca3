//! Terminal rendering of the `spinscope.spin/1` document.

use std::fmt::Write;

use super::{fmt_count, fmt_ns, fmt_num, table};
use crate::spin::doc::SpinReport;
use crate::spin::model::Reading;

fn readings_table(rs: &[Reading]) -> String {
    let mut t = table(&[
        "reading",
        "hint",
        "hints/round min/mean/max",
        "round time min/mean/max",
        "longest spin (L rounds)",
    ]);
    for r in rs {
        let h = r.hints_per_round;
        let ns = r.round_ns;
        t.add_row(vec![
            r.label.clone(),
            r.hint.name().to_string(),
            format!(
                "{} / {} / {} ({})",
                fmt_count(h.min),
                fmt_count(h.mean),
                fmt_count(h.max),
                r.distribution
            ),
            format!(
                "{} / {} / {}",
                fmt_ns(ns.min),
                fmt_ns(ns.mean),
                fmt_ns(ns.max)
            ),
            format!(
                "{} ({} x {} hints)",
                fmt_ns(r.max_spin_ns),
                r.rounds,
                fmt_count(h.max)
            ),
        ]);
    }
    t.to_string()
}

/// The human report.
pub fn render(doc: &SpinReport) -> String {
    let mut o = String::new();
    let s = &doc.settings;
    let given = |name: &str| {
        if doc.settings_given.iter().any(|g| g == name) {
            ""
        } else {
            " (default)"
        }
    };
    let _ = writeln!(o, "Server   {} [{}]", doc.server.short(), doc.server.raw);
    let _ = writeln!(o, "Formula  {}", doc.formula);
    let mut line = format!(
        "Settings innodb_spin_wait_delay={}{}  innodb_sync_spin_loops={}{}",
        s.spin_wait_delay,
        given("innodb_spin_wait_delay"),
        s.sync_spin_loops,
        given("innodb_sync_spin_loops")
    );
    if let Some(m) = s.pause_multiplier {
        let _ = write!(
            line,
            "  innodb_spin_wait_pause_multiplier={m}{}",
            given("innodb_spin_wait_pause_multiplier")
        );
    }
    let _ = writeln!(o, "{line}");
    if !doc.settings_source.is_empty() {
        let _ = writeln!(o, "Source   {}", doc.settings_source);
    }
    let c = &doc.this.cpu;
    let _ = writeln!(
        o,
        "CPU      {}: {} per hint{}{}",
        c.label,
        fmt_ns(c.ns_per_hint),
        // Not ns x GHz: the figure MariaDB's startup rule measures (and decides M by).
        c.tsc_ticks_per_hint
            .map(|t| format!(" (MariaDB's startup rule: {} TSC ticks)", fmt_num(t)))
            .unwrap_or_default(),
        if c.approximate { " [indicative]" } else { "" }
    );
    if c.noise_pct > 0.0 {
        let _ = writeln!(
            o,
            "         measured: +-{:.0}% from run to run ({} - {})",
            c.noise_pct,
            // Symmetric on the log scale: a time never goes below zero.
            fmt_ns(c.ns_per_hint / (1.0 + c.noise_pct / 100.0)),
            fmt_ns(c.ns_per_hint * (1.0 + c.noise_pct / 100.0))
        );
    }
    let _ = writeln!(o);
    o.push_str(&readings_table(&doc.this.readings));
    let _ = writeln!(o);
    let _ = writeln!(o);
    let v = &doc.vs_design;
    let _ = writeln!(o, "Design   {}.", v.in_words);
    if let (Some(lo), Some(hi)) = (v.ratio_low, v.ratio_high) {
        if hi > lo {
            let _ = writeln!(
                o,
                "         within the CPU figure's noise: {} - {}",
                crate::spin::doc::fmt_ratio(lo),
                crate::spin::doc::fmt_ratio(hi)
            );
        }
    }
    let b = &doc.comparison.baseline;
    let first_b = b.readings.first();
    let _ = writeln!(
        o,
        "Baseline {}: {} per hint; the same settings spin up to {} there.",
        b.cpu.label,
        fmt_ns(b.cpu.ns_per_hint),
        first_b
            .map(|r| fmt_ns(r.max_spin_ns))
            .unwrap_or_else(|| "-".into())
    );
    if let Some(r) = doc.this.readings.first() {
        let _ = writeln!(
            o,
            "Here     up to {}: {}.",
            fmt_ns(r.max_spin_ns),
            doc.comparison.in_words
        );
    }
    if let Some(a) = &doc.advice {
        let r = &a.recommendation;
        let _ = writeln!(o);
        let _ = writeln!(o, "Target   {}", a.target_description);
        for n in &r.current_vs_default {
            let _ = writeln!(o, "Current  {n}");
        }
        let _ = writeln!(o, "Advice   {}", r.explanation);
        if r.set_global.is_empty() {
            let _ = writeln!(o, "         (no change needed)");
        } else {
            for st in &r.set_global {
                let _ = writeln!(o, "         {st}");
            }
            let _ = writeln!(
                o,
                "Option file ([mysqld] section, to keep it across restarts):"
            );
            for l in &r.option_file {
                let _ = writeln!(o, "         {l}");
            }
        }
        if let Some(alt) = &a.alternative {
            let _ = writeln!(
                o,
                "Or       to spin exactly the design budget instead: {} ({})",
                alt.set_global.join(" "),
                alt.explanation
            );
        }
    }
    if !doc.notes.is_empty() {
        let _ = writeln!(o);
        for n in &doc.notes {
            let _ = writeln!(o, "note: {n}");
        }
    }
    o
}
