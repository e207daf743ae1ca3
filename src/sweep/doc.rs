//! The `spinscope.sweep/1` document (the engine writes it, the renderers read it) and its
//! analysis: knee, USL, Little, A/B verdicts, computed from the steps alone so a saved
//! document can be re-analysed. The terminal table is `report::sweep`, the CSV `sweep::csv`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::analysis::abtest::{self, Verdict};
use crate::analysis::knee::{self, Knee, Little, Sla, StepPoint};
use crate::analysis::usl::{self, UslFit};
use crate::globals::{Changed, Setting, Variant};

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
    /// Why the step is invalid and left out of the analysis (None: valid). See
    /// `analysis::validity`.
    #[serde(default)]
    pub invalid: Option<String>,
    /// Length of each `windows_tps` window, seconds.
    #[serde(default)]
    pub window_s: f64,
    /// Seconds each client took to connect and prepare before the step clock started.
    #[serde(default)]
    pub setup_s: f64,
    /// The load client that ran the step (`events`, or `threads` where the events client
    /// could not connect) and whether its connections spoke TLS.
    #[serde(default)]
    pub client: crate::load::ClientUsed,
    #[serde(default)]
    pub statements: StmtStats,
    /// The server's Uptime before and after the step, seconds.
    #[serde(default)]
    pub uptime_s: Option<(u64, u64)>,
    /// The variant's variables as read again at the end of the step.
    #[serde(default)]
    pub settings_after: Vec<Setting>,
    /// Transactions rolled back and run again after a deadlock (1213), lock wait timeout
    /// (1205) or 1020, by error code; not errors (sysbench retries them too).
    #[serde(default)]
    pub retries: BTreeMap<String, u64>,
}

/// Prepared statements of one step's clients.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StmtStats {
    /// Statements the workload has over all tables.
    pub needed: usize,
    /// Statements each client kept prepared (its share of max_prepared_stmt_count).
    pub per_client: usize,
    /// Statements prepared during the step because they did not fit (summed over clients).
    pub prepared_during_step: u64,
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
    /// Set when the variant's throughput is significantly below the baseline's: where, and by
    /// how much.
    #[serde(default)]
    pub harmful: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbResult {
    pub threads: u32,
    pub baseline: String,
    pub variant: String,
    /// Mean throughput over the valid repeats (the table's tps averaged), both sides.
    pub baseline_tps: f64,
    pub variant_tps: f64,
    /// Throughput of `variant` against `baseline` (None: no verdict, see `text`).
    pub tps: Option<Verdict>,
    /// The verdict in words, or why there is none ("too little data for a verdict: ...",
    /// "no verdict: ... is invalid").
    pub text: String,
    /// Median p99 of `variant` / median p99 of `baseline`.
    pub p99_ratio: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Analysis {
    pub variants: Vec<VariantAnalysis>,
    pub ab: Vec<AbResult>,
    /// The method behind the A/B verdicts, in one sentence.
    pub ab_method: String,
    /// Steps left out of the knee, USL, Little and A/B as invalid, with the reason.
    #[serde(default)]
    pub left_out: Vec<String>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    crate::analysis::stats::quantile_sorted(v, 0.5)
}

/// Steps usable for analysis: not interrupted, something measured, valid.
fn usable(s: &StepDoc) -> bool {
    !s.interrupted && s.txns > 0 && s.invalid.is_none()
}

/// "threads 4 d200 #2", how a step is named in notes.
pub fn step_label(s: &StepDoc) -> String {
    format!("threads {} {} #{}", s.threads, s.variant, s.repeat)
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
/// the first one. Invalid steps are left out and listed; no verdict is given at a concurrency
/// where a step of either side is invalid.
pub fn analyze(steps: &[StepDoc], variants: &[Variant], sla: Option<&Sla>) -> Analysis {
    let mut out = Analysis {
        ab_method: abtest::METHOD.into(),
        ..Analysis::default()
    };
    out.left_out = steps
        .iter()
        .filter(|s| !s.interrupted)
        .filter_map(|s| {
            s.invalid
                .as_ref()
                .map(|why| format!("{}: {why}", step_label(s)))
        })
        .collect();
    for v in variants {
        out.variants.push(variant_analysis(steps, &v.name, sla));
    }
    if let Some(base) = variants.first() {
        let mut threads: Vec<u32> = steps.iter().map(|s| s.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        for v in variants.iter().skip(1) {
            for &n in &threads {
                out.ab.extend(ab_at(steps, &base.name, &v.name, n));
            }
            if let Some(text) = harmful(&out.ab, &base.name, &v.name) {
                if let Some(va) = out.variants.iter_mut().find(|x| x.variant == v.name) {
                    va.harmful = Some(text);
                }
            }
        }
    }
    out
}

/// One variant's points, knee (at the SLA's percentile when one is given, else p99) and USL
/// fit.
fn variant_analysis(steps: &[StepDoc], variant: &str, sla: Option<&Sla>) -> VariantAnalysis {
    let pts = points(steps, variant);
    let sp: Vec<StepPoint> = pts
        .iter()
        .map(|p| {
            let mut lat: Vec<f64> = steps
                .iter()
                .filter(|s| s.variant == variant && s.threads == p.threads && usable(s))
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
    VariantAnalysis {
        variant: variant.to_string(),
        knee: knee::find_knee(&sp, sla),
        usl: usl::fit(&xy),
        points: pts,
        harmful: None,
    }
}

/// `variant` against `base` at `n` threads; None when either has no step there that ran to
/// its end.
fn ab_at(steps: &[StepDoc], base: &str, variant: &str, n: u32) -> Option<AbResult> {
    let of = |name: &str| -> Vec<&StepDoc> {
        steps
            .iter()
            .filter(|s| s.variant == name && s.threads == n && !s.interrupted)
            .collect()
    };
    let (sa, sb) = (of(base), of(variant));
    if sa.is_empty() || sb.is_empty() {
        return None;
    }
    let bad: Vec<String> = sa
        .iter()
        .chain(sb.iter())
        .filter(|s| s.invalid.is_some() || s.txns == 0)
        .map(|s| step_label(s))
        .collect();
    let (tps, text) = if !bad.is_empty() {
        (
            None,
            format!(
                "no verdict: {} {} invalid (see the steps left out)",
                bad.join(", "),
                if bad.len() == 1 { "is" } else { "are" }
            ),
        )
    } else {
        match abtest::compare(&tps_groups(&sa), &tps_groups(&sb)) {
            Ok(verdict) => {
                let t = verdict.text.clone();
                (Some(verdict), t)
            }
            Err(why) => (None, why),
        }
    };
    Some(AbResult {
        threads: n,
        baseline: base.to_string(),
        variant: variant.to_string(),
        baseline_tps: mean_tps(&sa),
        variant_tps: mean_tps(&sb),
        tps,
        text,
        p99_ratio: median_p99(&sb) / median_p99(&sa),
    })
}

/// Mean throughput of the usable steps (NaN when none is).
fn mean_tps(v: &[&StepDoc]) -> f64 {
    let ok: Vec<f64> = v.iter().filter(|s| usable(s)).map(|s| s.tps).collect();
    if ok.is_empty() {
        f64::NAN
    } else {
        ok.iter().sum::<f64>() / ok.len() as f64
    }
}

/// Median p99 of the usable steps.
fn median_p99(v: &[&StepDoc]) -> f64 {
    let mut x: Vec<f64> = v
        .iter()
        .filter(|s| usable(s))
        .map(|s| s.latency_us.p99)
        .collect();
    median(&mut x)
}

/// Each step's throughput windows (its mean when it has none), the groups A/B compares.
fn tps_groups(v: &[&StepDoc]) -> Vec<Vec<f64>> {
    v.iter()
        .map(|s| {
            if s.windows_tps.is_empty() {
                vec![s.tps]
            } else {
                s.windows_tps.clone()
            }
        })
        .collect()
}

/// A variant significantly slower than the baseline is called harmful: the sentence saying
/// where and by how much, or None.
fn harmful(ab: &[AbResult], base: &str, variant: &str) -> Option<String> {
    let mine: Vec<&AbResult> = ab.iter().filter(|r| r.variant == variant).collect();
    let verdicts: Vec<(u32, &Verdict)> = mine
        .iter()
        .filter_map(|r| r.tps.as_ref().map(|t| (r.threads, t)))
        .collect();
    let lower: Vec<(u32, f64)> = verdicts
        .iter()
        .filter(|(_, t)| t.significant && t.diff_pct < 0.0)
        .map(|(n, t)| (*n, t.diff_pct))
        .collect();
    if lower.is_empty() {
        return None;
    }
    let (lo, hi) = lower.iter().fold((f64::MAX, f64::MIN), |(a, b), (_, d)| {
        (a.min(-d), b.max(-d))
    });
    let by = if (hi - lo).abs() < 0.05 {
        format!("{lo:.1}%")
    } else {
        format!("{lo:.1}% to {hi:.1}%")
    };
    let at = lower
        .iter()
        .map(|(n, _)| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Some(if lower.len() == verdicts.len() {
        format!(
            "{variant} is harmful: its throughput is lower than {base}'s by {by} at every concurrency with a verdict ({at} threads); keep {base}'s settings rather than limiting concurrency"
        )
    } else {
        format!("{variant} is harmful at {at} threads: throughput lower than {base}'s by {by}")
    })
}
