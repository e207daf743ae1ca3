//! The `spinscope.sweep/1` document, its analysis (knee, USL, Little, A/B verdicts, computed
//! from the steps alone so a saved document can be re-analysed), the terminal table and CSV.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::analysis::abtest::{self, Verdict};
use crate::analysis::knee::{self, Knee, Little, Sla, StepPoint};
use crate::analysis::usl::{self, UslFit};
use crate::load::guard::Changed;
use crate::load::spec::{Setting, Variant};
use crate::report::{fmt_count, fmt_num};

pub const SCHEMA: &str = "spinscope.sweep/1";
pub const HIST_ENCODING: &str = "HdrHistogram V2 compressed (zlib), base64";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDoc {
    pub schema: String,
    pub tool_version: String,
    pub started_unix_s: u64,
    /// Every planned step ran.
    pub complete: bool,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
    /// Why the sweep stopped early, if it did.
    pub stopped_because: Option<String>,
    pub server: ServerInfo,
    pub config: SweepConfig,
    pub steps: Vec<StepDoc>,
    pub analysis: Analysis,
    pub settings_changed: Vec<Changed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    pub workload: String,
    pub sql_file: Option<String>,
    pub schema_name: String,
    pub tables: u32,
    pub table_size: u64,
    /// "closed" or "open".
    pub mode: String,
    pub rate_tps: Option<f64>,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub ladder: Vec<u32>,
    pub repeat: u32,
    pub variants: Vec<Variant>,
    pub sla: Option<Sla>,
    pub stop_after_knee: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramDoc {
    pub encoding: String,
    pub unit: String,
    pub significant_digits: u8,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    pub target_tps: f64,
    pub achieved_tps: f64,
    pub kept_up: bool,
    pub lag_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepDoc {
    pub threads: u32,
    pub variant: String,
    /// 1-based repeat number.
    pub repeat: u32,
    /// The variant's settings as the server reported them after SET GLOBAL.
    pub applied: Vec<Setting>,
    pub interrupted: bool,
    /// Errors or reconnects happened during the measured window.
    pub disturbed: bool,
    pub elapsed_s: f64,
    pub txns: u64,
    pub queries: u64,
    pub tps: f64,
    pub qps: f64,
    /// Transaction latency in microseconds.
    pub latency_us: Latency,
    pub errors: BTreeMap<String, u64>,
    pub reconnects: u64,
    pub first_error: Option<String>,
    pub windows_tps: Vec<f64>,
    pub little: Little,
    pub open_loop: Option<OpenLoop>,
    pub histogram: HistogramDoc,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub threads: u32,
    /// Mean over the repeats.
    pub tps: f64,
    /// Median over the repeats.
    pub p99_us: f64,
    pub tps_repeats: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantAnalysis {
    pub variant: String,
    pub points: Vec<Point>,
    pub knee: Knee,
    pub usl: Option<UslFit>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbResult {
    pub threads: u32,
    pub baseline: String,
    pub variant: String,
    /// Throughput of `variant` against `baseline`.
    pub tps: Verdict,
    /// Median p99 of `variant` / median p99 of `baseline`.
    pub p99_ratio: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Analysis {
    pub variants: Vec<VariantAnalysis>,
    pub ab: Vec<AbResult>,
    /// The method behind the A/B verdicts, in one sentence.
    pub ab_method: String,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    crate::analysis::stats::quantile_sorted(v, 0.5)
}

/// Steps usable for analysis: not interrupted, something measured.
fn usable(s: &StepDoc) -> bool {
    !s.interrupted && s.txns > 0
}

/// Points of one variant, one per concurrency, in ladder order.
pub fn points(steps: &[StepDoc], variant: &str) -> Vec<Point> {
    let mut by: BTreeMap<u32, Vec<&StepDoc>> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.variant == variant && usable(s)) {
        by.entry(s.threads).or_default().push(s);
    }
    by.into_iter()
        .map(|(threads, v)| {
            let tps_repeats: Vec<f64> = v.iter().map(|s| s.tps).collect();
            let mut p99: Vec<f64> = v.iter().map(|s| s.latency_us.p99).collect();
            Point {
                threads,
                tps: tps_repeats.iter().sum::<f64>() / tps_repeats.len() as f64,
                p99_us: median(&mut p99),
                tps_repeats,
            }
        })
        .collect()
}

/// The SLA's percentile read from a step (p50/p95/p99/p99.9 exactly; others: nearest above).
fn sla_latency(s: &StepDoc, sla: &Sla) -> f64 {
    let l = &s.latency_us;
    match sla.percentile {
        p if p <= 50.0 => l.p50,
        p if p <= 95.0 => l.p95,
        p if p <= 99.0 => l.p99,
        p if p <= 99.9 => l.p999,
        _ => l.max,
    }
}

/// Analyse the steps: per variant the knee and USL fit; per concurrency each variant against
/// the first one.
pub fn analyze(steps: &[StepDoc], variants: &[Variant], sla: Option<&Sla>) -> Analysis {
    let mut out = Analysis {
        ab_method: "two-level bootstrap (repeats, then 0.5 s windows) of the relative difference of mean throughput, 2000 replicates, 95% percentile interval".into(),
        ..Analysis::default()
    };
    for v in variants {
        let pts = points(steps, &v.name);
        let sp: Vec<StepPoint> = pts
            .iter()
            .map(|p| {
                let mut lat: Vec<f64> = steps
                    .iter()
                    .filter(|s| s.variant == v.name && s.threads == p.threads && usable(s))
                    .map(|s| sla.map(|x| sla_latency(s, x)).unwrap_or(s.latency_us.p99))
                    .collect();
                StepPoint {
                    threads: f64::from(p.threads),
                    tps: p.tps,
                    lat_us: median(&mut lat),
                    p99_us: p.p99_us,
                }
            })
            .collect();
        let xy: Vec<(f64, f64)> = pts.iter().map(|p| (f64::from(p.threads), p.tps)).collect();
        out.variants.push(VariantAnalysis {
            variant: v.name.clone(),
            knee: knee::find_knee(&sp, sla),
            usl: usl::fit(&xy),
            points: pts,
        });
    }
    if let Some(base) = variants.first() {
        let mut threads: Vec<u32> = steps.iter().map(|s| s.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        for v in variants.iter().skip(1) {
            for &n in &threads {
                let groups = |name: &str| -> Vec<Vec<f64>> {
                    steps
                        .iter()
                        .filter(|s| s.variant == name && s.threads == n && usable(s))
                        .map(|s| {
                            if s.windows_tps.is_empty() {
                                vec![s.tps]
                            } else {
                                s.windows_tps.clone()
                            }
                        })
                        .collect()
                };
                let (a, b) = (groups(&base.name), groups(&v.name));
                if let Some(verdict) = abtest::compare(&a, &b, u64::from(n)) {
                    let p99 = |name: &str| {
                        let mut v: Vec<f64> = steps
                            .iter()
                            .filter(|s| s.variant == name && s.threads == n && usable(s))
                            .map(|s| s.latency_us.p99)
                            .collect();
                        median(&mut v)
                    };
                    out.ab.push(AbResult {
                        threads: n,
                        baseline: base.name.clone(),
                        variant: v.name.clone(),
                        tps: verdict,
                        p99_ratio: p99(&v.name) / p99(&base.name),
                    });
                }
            }
        }
    }
    out
}

fn ms(us: f64) -> String {
    fmt_num(us / 1000.0)
}

/// The per-step table followed by the analysis, for a terminal.
pub fn render(doc: &SweepDoc) -> String {
    let mut s = String::new();
    let c = &doc.config;
    let _ =
        writeln!(
        s,
        "sweep: {} on {} ({} tables x {} rows), {} loop{}, warm-up {} s, {} s per step, server {}",
        c.workload,
        c.schema_name,
        c.tables,
        c.table_size,
        c.mode,
        c.rate_tps.map(|r| format!(" at {} tps", fmt_num(r))).unwrap_or_default(),
        fmt_num(c.warmup_s),
        fmt_num(c.duration_s),
        doc.server.version
    );
    let mut t = crate::report::table(&[
        "threads", "variant", "rep", "tps", "qps", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms",
        "max ms", "errors", "N=X*R", "note",
    ]);
    for st in &doc.steps {
        let errors: u64 = st.errors.values().sum();
        let mut note = Vec::new();
        if st.interrupted {
            note.push("interrupted".to_string());
        }
        if st.reconnects > 0 {
            note.push(format!("{} reconnects", st.reconnects));
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
        if !st.little.holds && st.open_loop.is_none() {
            note.push(format!("Little ratio {}", fmt_num(st.little.ratio)));
        }
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
            fmt_num(st.little.implied),
            note.join("; "),
        ]);
    }
    let _ = writeln!(s, "{t}");
    for va in &doc.analysis.variants {
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
        match (k.saturation_threads, k.saturation_tps) {
            (Some(n), Some(x)) => {
                let _ = writeln!(
                    s,
                    "  knee: {} threads ({} tps); beyond it throughput gains under 5% while p99 grows",
                    n,
                    fmt_count(x.round())
                );
            }
            _ => {
                let _ = writeln!(s, "  knee: not reached");
            }
        }
        let _ = writeln!(s, "  advice: {}", k.recommendation);
        match &va.usl {
            Some(u) => {
                let _ = writeln!(
                    s,
                    "  USL: sigma {:.4} (contention), kappa {:.5} (coherency), lambda {} tps/client; peak {} tps at N={}; {} dominates; R^2 {:.3}{}{}",
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
                );
            }
            None => {
                let _ = writeln!(s, "  USL: not fitted (needs 3 or more concurrency levels)");
            }
        }
    }
    if !doc.analysis.ab.is_empty() {
        let _ = writeln!(s, "\nA/B ({}):", doc.analysis.ab_method);
        for ab in &doc.analysis.ab {
            let _ = writeln!(
                s,
                "  {} threads: {} vs {}: throughput {}; p99 x{}",
                ab.threads,
                ab.variant,
                ab.baseline,
                ab.tps.text,
                fmt_num(ab.p99_ratio)
            );
        }
    }
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

/// One CSV row per step.
pub fn csv(doc: &SweepDoc) -> String {
    let mut s = String::from(
        "threads,variant,repeat,interrupted,elapsed_s,txns,queries,tps,qps,mean_us,p50_us,p95_us,p99_us,p999_us,max_us,errors,reconnects,little_ratio\n",
    );
    for st in &doc.steps {
        let l = &st.latency_us;
        let _ = writeln!(
            s,
            "{},{},{},{},{:.3},{},{},{:.1},{:.1},{:.1},{},{},{},{},{},{},{},{:.3}",
            st.threads,
            st.variant,
            st.repeat,
            st.interrupted,
            st.elapsed_s,
            st.txns,
            st.queries,
            st.tps,
            st.qps,
            l.mean,
            l.p50,
            l.p95,
            l.p99,
            l.p999,
            l.max,
            st.errors.values().sum::<u64>(),
            st.reconnects,
            st.little.ratio
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(threads: u32, variant: &str, repeat: u32, tps: f64, p99: f64) -> StepDoc {
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
        for rep in 1..=2 {
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
        assert!(!an.ab[0].tps.significant, "{:?}", an.ab[0].tps);
        assert!(an.ab[2].tps.significant && an.ab[2].tps.diff_pct < -30.0);
        let doc = SweepDoc {
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
                ladder: vec![1, 2, 4, 8, 16],
                repeat: 2,
                variants: vs.to_vec(),
                sla: None,
                stop_after_knee: false,
            },
            steps,
            analysis: an,
            settings_changed: vec![],
        };
        let text = render(&doc);
        assert!(text.contains("knee: 4 threads"), "{text}");
        assert!(text.contains("no significant difference"), "{text}");
        assert!(text.contains("USL: sigma"), "{text}");
        assert_eq!(csv(&doc).lines().count(), 21);
        let back: SweepDoc = serde_json::from_str(&crate::report::to_json(&doc).unwrap()).unwrap();
        // Typed read-back (floats may differ in the last digit through JSON).
        assert_eq!(
            (
                back.schema.as_str(),
                back.steps.len(),
                back.analysis.ab.len()
            ),
            (SCHEMA, 20, 5)
        );
        assert_eq!(back.config, doc.config);
        let page = crate::report::sweep_html::html(&doc);
        assert!(page.matches("<svg").count() == 2 && page.contains("USL a"));
    }
}
