//! The terminal table of a `spinscope.sweep/1` document. The document and its analysis are
//! `sweep::doc`, its CSV `sweep::csv`, re-exported here for the renderers and older paths.

use std::fmt::Write;

use crate::analysis::knee;
use crate::analysis::usl::UslFit;
use crate::units::{fmt_count, fmt_num};

pub use crate::sweep::csv::csv;
pub use crate::sweep::doc::*;

/// What every column of the table and every ratio means (also in `sweep run --help`).
pub const COLUMNS: &str = "Columns: threads = client connections, each running transactions back to back (closed loop) or on a schedule (--rate); rep = repeat number; tps = transactions per second in the measured window (warm-up excluded); qps = statements per second, BEGIN and COMMIT included; p50..p99.9, max ms = transaction latency percentiles (from the intended start in open loop); errors = failed transactions in the window; N=X*R = the concurrency implied by Little's law, throughput X times mean latency R: in a closed loop it should equal threads; Little ratio (in the note when off by more than 10%) = (N=X*R) / threads: below 1 the clients spent time outside a transaction (reconnecting, preparing, starved of CPU), above 1 latency was counted from intended starts or the clock is off; INVALID (in the note) = the step's errors exceeded 1% of its transactions, the server restarted, or a variant's setting changed under it: such steps are shown but left out of the knee, USL, Little and A/B; p99 xR in the A/B lines = variant p99 / baseline p99.";

const FLAT_GAIN_PCT: f64 = knee::FLAT_GAIN * 100.0;

/// Greedy word wrap at `width` columns.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0usize;
    for w in text.split_whitespace() {
        if line > 0 && line + 1 + w.len() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(w);
        line += w.len();
    }
    out
}

fn ms(us: f64) -> String {
    fmt_num(us / 1000.0)
}

/// The per-step table followed by the analysis, for a terminal.
pub fn render(doc: &SweepDoc) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", heading(doc));
    let _ = writeln!(s, "{}", steps_table(&doc.steps));
    let _ = writeln!(s, "{}", wrap(COLUMNS, 100));
    if !doc.analysis.left_out.is_empty() {
        let _ = writeln!(s, "\nleft out of the knee, USL, Little and A/B as invalid:");
        for l in &doc.analysis.left_out {
            let _ = writeln!(s, "  {l}");
        }
    }
    for va in &doc.analysis.variants {
        variant_lines(&mut s, va);
    }
    ab_lines(&mut s, &doc.analysis);
    if !doc.settings_changed.is_empty() {
        let _ = writeln!(s, "\nsettings:");
        for c in &doc.settings_changed {
            let _ = writeln!(s, "  {}", c.note);
        }
    }
    if let Some(why) = &doc.stopped_because {
        let _ = writeln!(s, "\nstopped early: {why}");
    }
    s
}

/// The first line: workload, schema, loop, timings and server.
fn heading(doc: &SweepDoc) -> String {
    let c = &doc.config;
    format!(
        "sweep: {} on {} ({} tables x {} rows), {} loop{}, warm-up {} s, {} s per step, server {}",
        c.workload,
        c.schema_name,
        c.tables,
        c.table_size,
        c.mode,
        c.rate_tps
            .map(|r| format!(" at {} tps", fmt_num(r)))
            .unwrap_or_default(),
        fmt_num(c.warmup_s),
        fmt_num(c.duration_s),
        doc.server.version
    )
}

/// One row per step.
fn steps_table(steps: &[StepDoc]) -> comfy_table::Table {
    let mut t = crate::report::table(&[
        "threads", "variant", "rep", "tps", "qps", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms",
        "max ms", "errors", "N=X*R", "note",
    ]);
    for st in steps {
        let errors: u64 = st.errors.values().sum();
        t.add_row(vec![
            st.threads.to_string(),
            st.variant.clone(),
            st.repeat.to_string(),
            fmt_count(st.tps.round()),
            fmt_count(st.qps.round()),
            ms(st.latency_us.p50),
            ms(st.latency_us.p95),
            ms(st.latency_us.p99),
            ms(st.latency_us.p999),
            ms(st.latency_us.max),
            errors.to_string(),
            if st.invalid.is_some() {
                "-".to_string()
            } else {
                fmt_num(st.little.implied)
            },
            step_note(st),
        ]);
    }
    t
}

/// The note column: why a step is invalid or what disturbed it.
fn step_note(st: &StepDoc) -> String {
    let mut note = Vec::new();
    if let Some(why) = &st.invalid {
        note.push(format!("INVALID: {why}"));
    }
    if st.interrupted {
        note.push("interrupted".to_string());
    }
    if st.reconnects > 0 {
        note.push(format!("{} reconnects", st.reconnects));
    }
    let retried: u64 = st.retries.values().sum();
    if retried > 0 {
        note.push(format!("{retried} deadlock retries"));
    }
    if let Some(o) = &st.open_loop {
        if !o.kept_up {
            note.push(format!(
                "rate not kept ({} of {} tps)",
                fmt_num(o.achieved_tps),
                fmt_num(o.target_tps)
            ));
        }
    }
    if !st.little.holds && st.open_loop.is_none() && st.invalid.is_none() {
        note.push(format!("Little ratio {}", fmt_num(st.little.ratio)));
    }
    note.join("; ")
}

/// A variant's analysis: best within the SLA, knee, advice and USL fit.
fn variant_lines(s: &mut String, va: &VariantAnalysis) {
    let _ = writeln!(s, "\n[{}]", va.variant);
    let k = &va.knee;
    if let (Some(n), Some(x)) = (k.sla_best_threads, k.sla_best_tps) {
        let _ = writeln!(
            s,
            "  best within SLA: {} threads, {} tps",
            n,
            fmt_count(x.round())
        );
    }
    let _ = writeln!(s, "  knee: {}", knee_text(va));
    match &va.harmful {
        Some(h) => {
            let _ = writeln!(s, "  advice: {h}");
        }
        None => {
            let _ = writeln!(s, "  advice: {}", k.recommendation);
        }
    }
    match &va.usl {
        Some(u) => {
            let _ = writeln!(s, "  USL: {}", usl_text(u));
        }
        None => {
            let _ = writeln!(s, "  USL: not fitted (needs 3 or more concurrency levels)");
        }
    }
}

/// Where the knee is and what throughput did beyond it, or why none is named.
fn knee_text(va: &VariantAnalysis) -> String {
    let k = &va.knee;
    match (k.saturation_threads, k.saturation_tps) {
        (Some(n), Some(x)) => {
            let beyond = match (k.after_knee_pct, k.last_threads, k.last_tps) {
                (Some(pct), Some(ln), Some(lx)) if pct <= -FLAT_GAIN_PCT => format!(
                    "beyond it throughput fell {:.0}% ({} tps at {} threads -> {} tps at {} threads) while p99 grew",
                    -pct,
                    fmt_count(x.round()),
                    n,
                    fmt_count(lx.round()),
                    ln
                ),
                (Some(pct), Some(ln), _) => format!(
                    "beyond it throughput changed {pct:+.0}% up to {ln} threads while p99 grew"
                ),
                _ => "beyond it throughput gains under 5% while p99 grows".to_string(),
            };
            format!("{} threads ({} tps); {beyond}", n, fmt_count(x.round()))
        }
        _ if va.points.len() < knee::MIN_POINTS => format!(
            "none named ({} valid concurrency levels; at least {} needed)",
            va.points.len(),
            knee::MIN_POINTS
        ),
        _ => "not reached".to_string(),
    }
}

/// The USL fit's parameters, peak, quality and the levels it left out.
fn usl_text(u: &UslFit) -> String {
    format!(
        "sigma {:.4} (contention), kappa {:.5} (coherency), lambda {} tps/client; peak {} tps at N={}; {} dominates; R^2 {:.3}{}{}",
        u.sigma,
        u.kappa,
        fmt_num(u.lambda),
        fmt_count(u.x_peak.round()),
        u.n_peak.map(fmt_num).unwrap_or_else(|| "unbounded".into()),
        u.dominant,
        u.r_squared,
        if u.r_squared < 0.9 {
            " (a poor fit: read the parameters with care)"
        } else {
            ""
        },
        if u.excluded_n.is_empty() {
            String::new()
        } else {
            format!(
                "; left out N={} (the model cannot explain them{})",
                u.excluded_n.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(","),
                if u.excluded_n.contains(&1.0) {
                    "; one client on an otherwise idle machine mostly waits for wake-ups, not for the server"
                } else {
                    ""
                }
            )
        }
    )
}

/// The A/B verdicts, one line per variant and concurrency.
fn ab_lines(s: &mut String, an: &Analysis) {
    if an.ab.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nA/B ({}):", an.ab_method);
    for ab in &an.ab {
        let _ = writeln!(
            s,
            "  {} threads: {} vs {}: {} vs {} tps: throughput {}; p99 x{}",
            ab.threads,
            ab.variant,
            ab.baseline,
            fmt_count(ab.variant_tps.round()),
            fmt_count(ab.baseline_tps.round()),
            ab.text,
            fmt_num(ab.p99_ratio)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::globals::Variant;
    use std::collections::BTreeMap;

    fn step(threads: u32, variant: &str, repeat: u32, tps: f64, p99: f64) -> StepDoc {
        // Repeats differ a little (run-to-run noise), windows average to the step's tps.
        let tps = tps * (1.0 + 0.01 * (f64::from(repeat % 3) - 1.0));
        StepDoc {
            threads,
            variant: variant.into(),
            repeat,
            applied: vec![],
            interrupted: false,
            disturbed: false,
            elapsed_s: 2.0,
            txns: (tps * 2.0) as u64,
            queries: (tps * 12.0) as u64,
            tps,
            qps: tps * 6.0,
            latency_us: Latency {
                mean: p99 / 3.0,
                p50: p99 / 3.0,
                p95: p99 / 1.5,
                p99,
                p999: p99 * 2.0,
                max: p99 * 3.0,
            },
            errors: BTreeMap::new(),
            reconnects: 0,
            first_error: None,
            windows_tps: vec![tps * 0.98, tps * 1.02, tps, tps * 0.99],
            little: knee::little_check(f64::from(threads), tps, p99 / 3.0),
            open_loop: None,
            histogram: HistogramDoc {
                encoding: HIST_ENCODING.into(),
                unit: "us".into(),
                significant_digits: 3,
                data: String::new(),
            },
            invalid: None,
            window_s: 0.5,
            setup_s: 0.1,
            client: Default::default(),
            statements: StmtStats::default(),
            uptime_s: None,
            settings_after: vec![],
            retries: BTreeMap::new(),
        }
    }

    fn variant(name: &str) -> Variant {
        Variant {
            name: name.into(),
            settings: vec![],
        }
    }

    #[test]
    fn analysis_finds_knee_fits_usl_and_compares_variants() {
        let mut steps = Vec::new();
        for rep in 1..=3 {
            for (n, a, b) in [
                (1, 1000.0, 1000.0),
                (2, 1900.0, 1500.0),
                (4, 3400.0, 2000.0),
                (8, 3500.0, 2050.0),
                (16, 3450.0, 1900.0),
            ] {
                let p99 = 1000.0 * f64::from(n);
                steps.push(step(n, "a", rep, a, p99));
                steps.push(step(n, "b", rep, b, p99 * 2.0));
            }
        }
        let vs = [variant("a"), variant("b")];
        let an = analyze(&steps, &vs, None);
        assert_eq!(an.variants.len(), 2);
        assert_eq!(an.variants[0].knee.saturation_threads, Some(4.0));
        assert!(an.variants[0].usl.is_some());
        assert_eq!(an.ab.len(), 5);
        let v0 = an.ab[0].tps.as_ref().unwrap();
        assert!(!v0.significant, "{v0:?}");
        let v2 = an.ab[2].tps.as_ref().unwrap();
        assert!(v2.significant && v2.diff_pct < -30.0);
        // b is lower wherever it differs: called harmful there.
        let h = an.variants[1].harmful.as_deref().unwrap();
        assert!(h.starts_with("b is harmful at"), "{h}");
        assert!(an.left_out.is_empty());
        let mut doc = super::tests_support::doc_of(steps, an);
        doc.config.ladder = vec![1, 2, 4, 8, 16];
        doc.config.variants = vs.to_vec();
        let text = render(&doc);
        assert!(text.contains("knee: 4 threads"), "{text}");
        assert!(text.contains("N=X*R = the concurrency implied"), "{text}");
        assert!(text.contains("advice: b is harmful"), "{text}");
        assert!(text.contains("no significant difference"), "{text}");
        assert!(text.contains("USL: sigma"), "{text}");
        assert_eq!(csv(&doc).lines().count(), 31);
        let back: SweepDoc = serde_json::from_str(&crate::report::to_json(&doc).unwrap()).unwrap();
        // Typed read-back (floats may differ in the last digit through JSON).
        assert_eq!(
            (
                back.schema.as_str(),
                back.steps.len(),
                back.analysis.ab.len()
            ),
            (SCHEMA, 30, 5)
        );
        assert_eq!(back.config, doc.config);
        let page = crate::report::sweep_html::html(&doc);
        assert!(page.matches("<svg").count() == 2 && page.contains("USL fit a"));
    }
}

#[cfg(test)]
mod validity_tests {
    use super::tests_support::*;
    use super::*;
    use crate::analysis::abtest;

    #[test]
    fn invalid_steps_are_left_out_and_get_no_verdict() {
        let mut steps = Vec::new();
        for rep in 1..=3 {
            for (n, a, b) in [(1, 1000.0, 990.0), (2, 1900.0, 1000.0), (4, 3000.0, 900.0)] {
                steps.push(mk(n, "a", rep, a));
                steps.push(mk(n, "b", rep, b));
            }
        }
        // One repeat of b at 2 threads failed badly: no verdict at 2 threads, knee without it.
        let bad = steps
            .iter_mut()
            .find(|s| s.threads == 2 && s.variant == "b" && s.repeat == 2)
            .unwrap();
        bad.invalid = Some("errors 500 are 25.0% of 2000 transactions (over 1%)".into());
        bad.tps = 1.0;
        let an = analyze(&steps, &[var("a"), var("b")], None);
        assert_eq!(an.left_out.len(), 1);
        assert!(an.left_out[0].starts_with("threads 2 b #2: errors 500"));
        let at2 = an.ab.iter().find(|r| r.threads == 2).unwrap();
        assert!(at2.tps.is_none());
        assert!(
            at2.text
                .starts_with("no verdict: threads 2 b #2 is invalid"),
            "{}",
            at2.text
        );
        // The invalid step's tps does not enter b's point at 2 threads.
        let p2 = an.variants[1]
            .points
            .iter()
            .find(|p| p.threads == 2)
            .unwrap();
        assert_eq!(p2.tps_repeats.len(), 2);
        assert!(p2.tps > 900.0);
        // Table, CSV and charts name it.
        let doc = doc_of(steps, an);
        let text = render(&doc);
        assert!(text.contains("INVALID: errors 500"), "{text}");
        assert!(
            text.contains("left out of the knee, USL, Little and A/B"),
            "{text}"
        );
        let c = csv(&doc);
        assert!(
            c.lines()
                .any(|l| l.starts_with("2,b,2,") && l.contains(",false,errors 500")),
            "{c}"
        );
        let chart = crate::report::sweep_html::throughput_chart(&doc);
        assert!(chart.contains("threads 2 b #2 INVALID"), "{chart}");
    }

    #[test]
    fn a_b_agrees_with_the_table_and_short_steps_get_no_verdict() {
        let mut steps = Vec::new();
        for rep in 1..=3 {
            steps.push(mk(4, "a", rep, 2000.0));
            steps.push(mk(4, "b", rep, 1800.0));
        }
        let an = analyze(&steps, &[var("a"), var("b")], None);
        let r = &an.ab[0];
        let v = r.tps.as_ref().unwrap();
        // The table's tps, averaged over repeats, is what the verdict compares.
        let table = |name: &str| {
            let t: Vec<f64> = steps
                .iter()
                .filter(|s| s.variant == name)
                .map(|s| s.tps)
                .collect();
            t.iter().sum::<f64>() / t.len() as f64
        };
        assert!((v.mean_a - table("a")).abs() < 1e-6 && (r.baseline_tps - table("a")).abs() < 1e-6);
        assert!((v.diff_pct - (table("b") / table("a") - 1.0) * 100.0).abs() < 1e-9);
        assert!((v.diff_pct + 10.0).abs() < 1e-9, "{v:?}");
        // 1 s steps (2 windows): too little data, and no interval is printed.
        for s in &mut steps {
            s.windows_tps.truncate(2);
        }
        let an = analyze(&steps, &[var("a"), var("b")], None);
        assert!(an.ab[0].tps.is_none());
        assert!(
            an.ab[0].text.starts_with(abtest::TOO_LITTLE_DATA),
            "{}",
            an.ab[0].text
        );
        assert!(!render(&doc_of(steps, an)).contains("95% CI"));
    }
}

#[cfg(test)]
mod tests_support {
    use super::*;
    use crate::globals::Variant;
    use std::collections::BTreeMap;

    pub fn var(name: &str) -> Variant {
        Variant {
            name: name.into(),
            settings: vec![],
        }
    }

    /// A step whose windows average exactly to its tps, repeats slightly apart.
    pub fn mk(threads: u32, variant: &str, repeat: u32, tps: f64) -> StepDoc {
        let tps = tps * (1.0 + 0.01 * (f64::from(repeat % 3) - 1.0));
        let p99 = 1000.0 * f64::from(threads);
        StepDoc {
            threads,
            variant: variant.into(),
            repeat,
            applied: vec![],
            interrupted: false,
            disturbed: false,
            elapsed_s: 2.0,
            txns: (tps * 2.0) as u64,
            queries: (tps * 2.0) as u64,
            tps,
            qps: tps,
            latency_us: Latency {
                mean: p99 / 3.0,
                p50: p99 / 3.0,
                p95: p99 / 1.5,
                p99,
                p999: p99 * 2.0,
                max: p99 * 3.0,
            },
            errors: BTreeMap::new(),
            reconnects: 0,
            first_error: None,
            windows_tps: vec![tps * 0.97, tps * 1.03, tps * 1.01, tps * 0.99],
            little: knee::little_check(f64::from(threads), tps, p99 / 3.0),
            open_loop: None,
            histogram: HistogramDoc {
                encoding: HIST_ENCODING.into(),
                unit: "us".into(),
                significant_digits: 3,
                data: String::new(),
            },
            invalid: None,
            window_s: 0.5,
            setup_s: 0.0,
            client: Default::default(),
            statements: StmtStats::default(),
            uptime_s: None,
            settings_after: vec![],
            retries: BTreeMap::new(),
        }
    }

    pub fn doc_of(steps: Vec<StepDoc>, analysis: Analysis) -> SweepDoc {
        SweepDoc {
            schema: SCHEMA.into(),
            tool_version: "0".into(),
            started_unix_s: 0,
            complete: true,
            interrupted: false,
            stopped_because: None,
            server: ServerInfo {
                version: "10.11".into(),
            },
            config: SweepConfig {
                workload: "write-only".into(),
                sql_file: None,
                schema_name: "spinscope".into(),
                tables: 2,
                table_size: 100,
                mode: "closed".into(),
                rate_tps: None,
                warmup_s: 1.0,
                duration_s: 2.0,
                ladder: vec![1, 2, 4],
                repeat: 3,
                variants: vec![var("a"), var("b")],
                sla: None,
                stop_after_knee: false,
            },
            steps,
            analysis,
            settings_changed: vec![],
        }
    }
}
