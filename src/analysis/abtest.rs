//! A/B verdicts: is variant B's throughput different from A's, with a confidence interval
//! (docs/REFERENCE.md §9, Method).
//!
//! Method: each repeat of a step is one observation, its throughput the mean of its
//! throughput windows (the driver's windows tile the measured period, so that mean is the
//! step's `tps`, the number the table shows). Windows inside one run share that run's drift
//! (buffer pool state, purge lag, the neighbour on the host), so they are not independent and
//! are only averaged, never counted as observations. B is compared with A by Welch's t-test on
//! the logarithms of the per-repeat throughputs (throughput noise is multiplicative, and a
//! ratio cannot fall below zero): the 95% two-sided interval of `mean ln B - mean ln A` is
//! `d +- t(0.975, df) * sqrt(sA^2/nA + sB^2/nB)` with Welch-Satterthwaite degrees of freedom,
//! reported as the ratio B/A minus 1 in percent (`exp(d) - 1`, the geometric means' ratio), so
//! the interval never goes below -100%. The difference is significant when the interval
//! excludes 0. An interval that does not exclude 0 and spans more than a factor of
//! [`MAX_INCONCLUSIVE_SPAN`] (about +-20%) is "too little data", not "no difference".
//!
//! Minimum data (below it the verdict is the words "too little data for a verdict", never an
//! interval): [`MIN_REPEATS`] repeats per variant (two repeats give one degree of freedom and
//! an interval wider than any effect worth measuring; with one there is no spread at all), each
//! with at least [`MIN_WINDOWS`] windows (2 s measured at 0.5 s windows: a shorter step is
//! dominated by its start), and some spread between repeats (identical repeats give no
//! estimate of the noise).
//!
//! The false-positive rate of this rule on identical A and B, with run-to-run drift and
//! window noise simulated, is measured by the tests below at short and long steps (near 5%).

use serde::{Deserialize, Serialize};

pub const NO_SIGNIFICANT_DIFFERENCE: &str = "no significant difference";
pub const TOO_LITTLE_DATA: &str = "too little data for a verdict";

/// Repeats per variant needed for a verdict.
pub const MIN_REPEATS: usize = 3;
/// Throughput windows per repeat needed for a verdict (2 s at 0.5 s windows).
pub const MIN_WINDOWS: usize = 4;

/// The method in one sentence, for reports.
pub const METHOD: &str = "Welch's t-test on the logarithm of the per-repeat mean throughput (each repeat one observation), 95% two-sided interval of the ratio to the baseline (never below -100%); a verdict needs at least 3 repeats per variant of at least 2 s (4 windows of 0.5 s) each, and \"no significant difference\" an interval no wider than a factor of 1.5";

/// Widest interval (high ratio over low ratio) that may be called "no significant
/// difference"; a wider one that includes zero is too little data.
pub const MAX_INCONCLUSIVE_SPAN: f64 = 1.5;

/// The outcome of comparing B against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub mean_a: f64,
    pub mean_b: f64,
    /// B / A - 1 in percent, by the geometric means of the repeats (the interval's centre).
    pub diff_pct: f64,
    /// 95% confidence interval of `diff_pct`.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub significant: bool,
    /// Repeats compared per side.
    pub n_a: usize,
    pub n_b: usize,
    /// "higher by 12.3% (95% CI +5.1% .. +19.0%)" or "no significant difference (...)".
    pub text: String,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Welch's interval of `mean ln b - mean ln a` at two-sided confidence `conf`, as percentages
/// of the ratio b/a: (centre, low, high), each `100 * (exp(x) - 1)`, so never below -100.
/// None with fewer than two values a side, a value that is not positive, or no spread.
pub fn log_ratio_interval(a: &[f64], b: &[f64], conf: f64) -> Option<(f64, f64, f64)> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !(*x > 0.0 && x.is_finite())) {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|x| x.ln()).collect();
    let (na, nb) = (la.len() as f64, lb.len() as f64);
    let (qa, qb) = (var(&la) / na, var(&lb) / nb);
    let se = (qa + qb).sqrt();
    if !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let df = (qa + qb).powi(2) / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
    let t = t_quantile(1.0 - (1.0 - conf) / 2.0, df);
    let d = mean(&lb) - mean(&la);
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Some((pct(d), pct(d - t * se), pct(d + t * se)))
}

/// The paired interval of `mean(ln b_i - ln a_i)` (a one-sample t interval of the differences;
/// pairs measured side by side share their drift, which cancels), as percentages of the ratio
/// b/a: (centre, low, high), never below -100. None with fewer than two pairs, a value that is
/// not positive, or no spread.
pub fn paired_log_ratio_interval(pairs: &[(f64, f64)], conf: f64) -> Option<(f64, f64, f64)> {
    if pairs.len() < 2
        || pairs
            .iter()
            .any(|(a, b)| !(*a > 0.0 && *b > 0.0 && a.is_finite() && b.is_finite()))
    {
        return None;
    }
    let d: Vec<f64> = pairs.iter().map(|(a, b)| b.ln() - a.ln()).collect();
    let se = (var(&d) / d.len() as f64).sqrt();
    if !(se > 0.0 && se.is_finite()) {
        return None;
    }
    let t = t_quantile(1.0 - (1.0 - conf) / 2.0, d.len() as f64 - 1.0);
    let m = mean(&d);
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    Some((pct(m), pct(m - t * se), pct(m + t * se)))
}

fn var(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - 1.0)
}

/// ln Gamma (Lanczos, g = 7, n = 9), accurate to ~1e-13 for x > 0.
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the regularized incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    let tiny = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// Regularized incomplete beta I_x(a, b).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

/// CDF of Student's t with `df` degrees of freedom (df may be fractional).
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t (0.5 < p < 1), by bisection on the CDF.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Per-repeat throughputs of one side, checked against the minimums. `groups` holds one
/// vector of window throughputs per repeat.
fn repeat_means(groups: &[Vec<f64>], side: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for g in groups {
        let w: Vec<f64> = g.iter().copied().filter(|x| x.is_finite()).collect();
        if w.len() < MIN_WINDOWS {
            return Err(format!(
                "{TOO_LITTLE_DATA}: a repeat of {side} has {} throughput window(s), at least {MIN_WINDOWS} are needed (--duration 2 or more)",
                w.len()
            ));
        }
        out.push(mean(&w));
    }
    if out.len() < MIN_REPEATS {
        return Err(format!(
            "{TOO_LITTLE_DATA}: {side} has {} valid repeat(s), at least {MIN_REPEATS} are needed (--repeat {MIN_REPEATS} or more)",
            out.len()
        ));
    }
    Ok(out)
}

/// Compare B against A. `a` and `b` hold, per repeat, the throughput of each window of that
/// repeat. Returns the reason when there is too little data for a verdict.
pub fn compare(a: &[Vec<f64>], b: &[Vec<f64>]) -> Result<Verdict, String> {
    let xa = repeat_means(a, "the baseline")?;
    let xb = repeat_means(b, "the variant")?;
    let (ma, mb) = (mean(&xa), mean(&xb));
    if xa.iter().chain(&xb).any(|x| !(*x > 0.0 && x.is_finite())) {
        return Err(format!(
            "{TOO_LITTLE_DATA}: a repeat measured no throughput"
        ));
    }
    let Some(iv) = log_ratio_interval(&xa, &xb, 0.95) else {
        return Err(format!(
            "{TOO_LITTLE_DATA}: the repeats are identical, so the noise cannot be estimated"
        ));
    };
    let (diff_pct, lo, hi) = (iv.0, iv.1, iv.2);
    let significant = lo > 0.0 || hi < 0.0;
    let ci = format!("95% CI {lo:+.1}% .. {hi:+.1}%");
    if !significant && (100.0 + hi) > MAX_INCONCLUSIVE_SPAN * (100.0 + lo) {
        return Ok(Verdict {
            mean_a: ma,
            mean_b: mb,
            diff_pct,
            ci_low_pct: lo,
            ci_high_pct: hi,
            significant,
            n_a: xa.len(),
            n_b: xb.len(),
            text: format!(
                "{TOO_LITTLE_DATA}: {diff_pct:+.1}%, {ci} spans more than a factor of {MAX_INCONCLUSIVE_SPAN} (more repeats, or a quieter host)"
            ),
        });
    }
    let text = if significant {
        format!(
            "{} by {:.1}% ({ci})",
            if diff_pct > 0.0 { "higher" } else { "lower" },
            diff_pct.abs()
        )
    } else {
        format!("{NO_SIGNIFICANT_DIFFERENCE} ({diff_pct:+.1}%, {ci})")
    };
    Ok(Verdict {
        mean_a: ma,
        mean_b: mb,
        diff_pct,
        ci_low_pct: lo,
        ci_high_pct: hi,
        significant,
        n_a: xa.len(),
        n_b: xb.len(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// Tiny Box-Muller so the tests need no extra crate.
    fn normal(rng: &mut impl Rng, mean: f64, sd: f64) -> f64 {
        let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
        let u2: f64 = rng.gen();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// One variant's steps: each repeat drifts by `drift` (relative sd, run to run), windows
    /// vary by 10% inside a run and are autocorrelated (AR(1), 0.5), as on a busy 2-core VM.
    fn groups(
        rng: &mut SmallRng,
        mean: f64,
        repeats: usize,
        windows: usize,
        drift: f64,
    ) -> Vec<Vec<f64>> {
        (0..repeats)
            .map(|_| {
                let run_mean = normal(rng, mean, mean * drift);
                let mut e = 0.0;
                (0..windows)
                    .map(|_| {
                        e = 0.5 * e + normal(rng, 0.0, mean * 0.10);
                        run_mean + e
                    })
                    .collect()
            })
            .collect()
    }

    fn fp_rate(repeats: usize, windows: usize, drift: f64, trials: usize, seed: u64) -> f64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut fp = 0;
        for _ in 0..trials {
            let a = groups(&mut rng, 4000.0, repeats, windows, drift);
            let b = groups(&mut rng, 4000.0, repeats, windows, drift);
            let v = compare(&a, &b).unwrap();
            if v.significant {
                fp += 1;
            } else {
                assert!(
                    v.text.starts_with(NO_SIGNIFICANT_DIFFERENCE)
                        || v.text.starts_with(TOO_LITTLE_DATA),
                    "{}",
                    v.text
                );
            }
        }
        fp as f64 / trials as f64
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Student's t, two-sided 95%: df 1 12.706, 2 4.303, 4 2.776, 10 2.228, 30 2.042.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (10.0, 2.228),
            (30.0, 2.042),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 2e-3, "df {df}: {got}");
        }
        assert!((t_cdf(0.0, 3.0) - 0.5).abs() < 1e-12);
    }

    /// A/A at short (2 s = 4 windows) and long (60 s = 120 windows) steps, with and without
    /// run-to-run drift, 3 and 5 repeats: the share of "significant" verdicts stays near the
    /// nominal 5%. Measured (4000 trials each): printed with --nocapture.
    #[test]
    fn a_a_false_positive_rate_stays_near_5_percent() {
        for (repeats, windows, drift) in [
            (3, 4, 0.05),
            (3, 120, 0.05),
            (5, 4, 0.05),
            (5, 120, 0.05),
            (3, 4, 0.0),
            (3, 120, 0.0),
        ] {
            let r = fp_rate(repeats, windows, drift, 4000, 42 + windows as u64);
            eprintln!(
                "A/A false positives: {repeats} repeats x {windows} windows, drift {drift}: {:.1}%",
                r * 100.0
            );
            assert!(
                (0.025..=0.075).contains(&r),
                "{repeats} x {windows}, drift {drift}: false-positive rate {r}"
            );
        }
    }

    #[test]
    fn too_little_data_is_said_not_guessed() {
        let mut rng = SmallRng::seed_from_u64(3);
        // One window per step (--duration 1 at 0.5 s windows keeps 2): no verdict.
        let a = groups(&mut rng, 4000.0, 3, 2, 0.05);
        let b = groups(&mut rng, 4000.0, 3, 2, 0.05);
        let e = compare(&a, &b).unwrap_err();
        assert!(
            e.starts_with(TOO_LITTLE_DATA) && e.contains("--duration"),
            "{e}"
        );
        // Two repeats: no verdict.
        let a = groups(&mut rng, 4000.0, 2, 8, 0.05);
        let b = groups(&mut rng, 4000.0, 3, 8, 0.05);
        let e = compare(&a, &b).unwrap_err();
        assert!(e.contains("--repeat 3"), "{e}");
        // Identical repeats: no spread, no zero-width interval.
        let a = vec![vec![10.0; 4]; 3];
        let e = compare(&a, &a).unwrap_err();
        assert!(e.contains("identical"), "{e}");
        assert!(compare(&[], &[vec![1.0; 4]]).is_err());
    }

    /// The case: throughput so noisy that a linear interval went below -100%
    /// ("+6.1%, 95% CI -290.8% .. +302.9%"). On the log scale it cannot, and it is too little
    /// data rather than "no difference".
    #[test]
    fn intervals_never_go_below_minus_100_percent_and_wide_ones_are_too_little_data() {
        let a = vec![vec![100.0; 4], vec![900.0; 4], vec![20.0; 4]];
        let b = vec![vec![80.0; 4], vec![1200.0; 4], vec![30.0; 4]];
        let v = compare(&a, &b).unwrap();
        assert!(v.ci_low_pct > -100.0, "{v:?}");
        assert!(
            !v.significant && v.text.starts_with(TOO_LITTLE_DATA),
            "{}",
            v.text
        );
        // A tight A/A is "no significant difference".
        let a = vec![vec![100.0; 4], vec![101.0; 4], vec![99.0; 4]];
        let b = vec![vec![100.5; 4], vec![99.5; 4], vec![100.0; 4]];
        let v = compare(&a, &b).unwrap();
        assert!(v.text.starts_with(NO_SIGNIFICANT_DIFFERENCE), "{}", v.text);
        // A non-positive repeat is not a throughput.
        let z = vec![vec![0.0; 4], vec![1.0; 4], vec![2.0; 4]];
        assert!(compare(&z, &z).unwrap_err().starts_with(TOO_LITTLE_DATA));
    }

    #[test]
    fn paired_differences_cancel_a_shared_drift() {
        // A drifts over a factor of 3; B is 10% above A in every pair, +-1%.
        let pairs: Vec<(f64, f64)> = [1.0, 1.5, 2.0, 2.5, 3.0]
            .iter()
            .zip([1.01, 0.99, 1.0, 1.005, 0.995])
            .map(|(f, e)| (1000.0 * f, 1100.0 * f * e))
            .collect();
        let (c, lo, hi) = paired_log_ratio_interval(&pairs, 0.95).unwrap();
        assert!(
            (c - 10.0).abs() < 0.5 && lo > 8.0 && hi < 12.0,
            "{c} {lo} {hi}"
        );
        // Unpaired, the same data cannot tell.
        let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let (_, lo, _) = log_ratio_interval(&a, &b, 0.95).unwrap();
        assert!(lo < 0.0 && lo > -100.0, "{lo}");
        assert!(paired_log_ratio_interval(&pairs[..1], 0.95).is_none());
        assert!(paired_log_ratio_interval(&[(1.0, 2.0), (0.0, 1.0)], 0.95).is_none());
    }

    #[test]
    fn clearly_shifted_distributions_are_significant() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut sig = 0;
        for _ in 0..200 {
            let a = groups(&mut rng, 4000.0, 3, 8, 0.05);
            let b = groups(&mut rng, 2000.0, 3, 8, 0.05);
            let v = compare(&a, &b).unwrap();
            if v.significant && v.diff_pct < 0.0 {
                assert!(v.text.starts_with("lower by"), "{}", v.text);
                sig += 1;
            }
        }
        assert!(sig >= 195, "only {sig}/200 significant");
    }

    /// The verdict compares exactly the numbers the table shows: with windows that tile each
    /// step, the per-repeat mean is the step's tps, and a known injected difference comes out.
    #[test]
    fn injected_difference_is_the_reported_difference() {
        let mut rng = SmallRng::seed_from_u64(5);
        let a = groups(&mut rng, 4000.0, 4, 20, 0.02);
        // B: every window of A lowered by exactly 10%.
        let b: Vec<Vec<f64>> = a
            .iter()
            .map(|g| g.iter().map(|x| x * 0.9).collect())
            .collect();
        let v = compare(&a, &b).unwrap();
        assert!((v.diff_pct + 10.0).abs() < 1e-9, "{v:?}");
        assert!(v.ci_low_pct > -100.0);
        let table_a: f64 = a.iter().map(|g| mean(g)).sum::<f64>() / a.len() as f64;
        assert!((v.mean_a - table_a).abs() < 1e-9);
        assert!(v.significant && v.ci_low_pct < -10.0 && v.ci_high_pct > -10.0);
        assert!(v.ci_high_pct < 0.0);
    }
}
