//! A/B verdicts: is variant B's throughput different from A's, with a confidence interval.
//!
//! Method (documented): a two-level (cluster) percentile bootstrap of the relative difference of
//! means, `(mean B - mean A) / mean A`. Each variant's data are groups (one per repeat of the
//! step, run interleaved A B A B ...) of values (throughput of each short window inside that
//! repeat). One bootstrap replicate resamples the groups with replacement, then the windows
//! inside each chosen group with replacement, so run-to-run drift between repeats widens the
//! interval as it should instead of being hidden by many correlated windows. 2,000 replicates,
//! a fixed seed (repeatable verdicts), 95% two-sided interval. The difference is called
//! significant only when the interval excludes 0; otherwise the verdict is the words
//! "no significant difference".

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub const NO_SIGNIFICANT_DIFFERENCE: &str = "no significant difference";

/// The outcome of comparing B against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub mean_a: f64,
    pub mean_b: f64,
    /// (B - A) / A in percent.
    pub diff_pct: f64,
    /// 95% bootstrap confidence interval of `diff_pct`.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub significant: bool,
    /// "B is 12.3% higher (95% CI 5.1% .. 19.0%)" or "no significant difference (...)".
    pub text: String,
}

pub const REPLICATES: usize = 2000;

fn group_mean(groups: &[Vec<f64>]) -> f64 {
    let (s, n) = groups
        .iter()
        .flatten()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

fn resample(groups: &[Vec<f64>], rng: &mut SmallRng) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for _ in 0..groups.len() {
        let g = &groups[rng.gen_range(0..groups.len())];
        for _ in 0..g.len() {
            s += g[rng.gen_range(0..g.len())];
            n += 1;
        }
    }
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// Compare throughput groups of B against A. Returns None when either side has no value.
pub fn compare(a: &[Vec<f64>], b: &[Vec<f64>], seed: u64) -> Option<Verdict> {
    let clean = |g: &[Vec<f64>]| -> Vec<Vec<f64>> {
        g.iter()
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|x| x.is_finite())
                    .collect::<Vec<f64>>()
            })
            .filter(|v| !v.is_empty())
            .collect()
    };
    let (a, b) = (clean(a), clean(b));
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (mean_a, mean_b) = (group_mean(&a), group_mean(&b));
    if mean_a <= 0.0 {
        return None;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut diffs: Vec<f64> = (0..REPLICATES)
        .map(|_| {
            let (ma, mb) = (resample(&a, &mut rng), resample(&b, &mut rng));
            (mb - ma) / ma * 100.0
        })
        .filter(|d| d.is_finite())
        .collect();
    diffs.sort_by(|x, y| x.total_cmp(y));
    let lo = crate::analysis::stats::quantile_sorted(&diffs, 0.025);
    let hi = crate::analysis::stats::quantile_sorted(&diffs, 0.975);
    let diff_pct = (mean_b - mean_a) / mean_a * 100.0;
    let significant = lo > 0.0 || hi < 0.0;
    let ci = format!("95% CI {lo:+.1}% .. {hi:+.1}%");
    let text = if significant {
        format!(
            "{} by {:.1}% ({ci})",
            if diff_pct > 0.0 { "higher" } else { "lower" },
            diff_pct.abs()
        )
    } else {
        format!("{NO_SIGNIFICANT_DIFFERENCE} ({diff_pct:+.1}%, {ci})")
    };
    Some(Verdict {
        mean_a,
        mean_b,
        diff_pct,
        ci_low_pct: lo,
        ci_high_pct: hi,
        significant,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr_free::normal;

    /// Tiny Box-Muller so the tests need no extra crate.
    mod rand_distr_free {
        use rand::Rng;
        pub fn normal(rng: &mut impl Rng, mean: f64, sd: f64) -> f64 {
            let u1: f64 = rng.gen_range(f64::EPSILON..1.0);
            let u2: f64 = rng.gen();
            mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    fn groups(rng: &mut SmallRng, mean: f64, repeats: usize, windows: usize) -> Vec<Vec<f64>> {
        (0..repeats)
            .map(|_| {
                // Each repeat drifts by +-5% (run-to-run noise), windows vary by 10% inside.
                let run_mean = normal(rng, mean, mean * 0.05);
                (0..windows)
                    .map(|_| normal(rng, run_mean, mean * 0.10))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn identical_distributions_say_no_significant_difference_most_of_the_time() {
        let mut rng = SmallRng::seed_from_u64(7);
        let trials = 100;
        let mut no_diff = 0;
        for t in 0..trials {
            let a = groups(&mut rng, 4000.0, 3, 8);
            let b = groups(&mut rng, 4000.0, 3, 8);
            let v = compare(&a, &b, t).unwrap();
            if !v.significant {
                assert!(v.text.starts_with(NO_SIGNIFICANT_DIFFERENCE), "{}", v.text);
                no_diff += 1;
            }
        }
        assert!(
            no_diff >= 85,
            "only {no_diff}/{trials} said no significant difference"
        );
    }

    #[test]
    fn clearly_shifted_distributions_are_significant() {
        let mut rng = SmallRng::seed_from_u64(11);
        let mut sig = 0;
        for t in 0..50 {
            let a = groups(&mut rng, 4000.0, 3, 8);
            let b = groups(&mut rng, 2000.0, 3, 8);
            let v = compare(&a, &b, t).unwrap();
            if v.significant && v.diff_pct < 0.0 {
                assert!(v.text.starts_with("lower by"), "{}", v.text);
                sig += 1;
            }
        }
        assert!(sig >= 48, "only {sig}/50 significant");
    }

    #[test]
    fn empty_side_is_none_and_verdict_is_repeatable() {
        assert!(compare(&[], &[vec![1.0]], 1).is_none());
        let a = vec![vec![10.0, 11.0], vec![9.0, 10.5]];
        let b = vec![vec![10.2, 10.8], vec![9.5, 10.1]];
        assert_eq!(compare(&a, &b, 3), compare(&a, &b, 3));
    }
}
