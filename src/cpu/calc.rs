//! Pure arithmetic of the probe: from raw tick counts of timed batches to ticks and ns per
//! hint, the counter rate from two clock readings, batch sizing, and MariaDB's startup rule.
//! Nothing here reads a clock; the measuring code in `measure` feeds it numbers.

use serde::{Deserialize, Serialize};

use crate::analysis::stats::{summarize, Summary};

/// Ticks per hint of each batch: `(batch_ticks - overhead) / hints`, dropping batches that
/// came out at or below the timer's own cost (an interrupted read pair or a counter jump).
pub fn per_hint(batch_ticks: &[u64], overhead_ticks: f64, hints_per_batch: u64) -> Vec<f64> {
    if hints_per_batch == 0 {
        return Vec::new();
    }
    batch_ticks
        .iter()
        .map(|&t| (t as f64 - overhead_ticks) / hints_per_batch as f64)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect()
}

/// The cost of the two serialized counter reads: the median of empty batches, so one
/// interrupted read does not move it. 0 when there are none.
pub fn overhead(empty_batches: &[u64]) -> f64 {
    let v: Vec<f64> = empty_batches.iter().map(|&t| t as f64).collect();
    summarize(&v).map_or(0.0, |s| s.median)
}

/// Counter rate in GHz (ticks per ns) from two (ns, ticks) readings.
pub fn ghz(ns0: u64, ticks0: u64, ns1: u64, ticks1: u64) -> Option<f64> {
    let dns = ns1.checked_sub(ns0)?;
    let dt = ticks1.checked_sub(ticks0)?;
    (dns > 0 && dt > 0).then(|| dt as f64 / dns as f64)
}

/// Loop iterations (of `unroll` hints each) so that one batch lasts about `target_ticks`,
/// given a first estimate of ticks per hint; clamped to [1, 4096].
pub fn iters_for(target_ticks: f64, ticks_per_hint_estimate: f64, unroll: u32) -> u32 {
    if !(ticks_per_hint_estimate.is_finite() && ticks_per_hint_estimate > 0.0) || unroll == 0 {
        return 64;
    }
    let it = target_ticks / (ticks_per_hint_estimate * unroll as f64);
    if !it.is_finite() {
        return 64;
    }
    it.round().clamp(1.0, 4096.0) as u32
}

/// Summaries of a batch series in ticks and in ns, given the counter rate.
pub fn summarize_hint(per_hint_ticks: &[f64], ghz: f64) -> Option<(Summary, Summary)> {
    let ticks = summarize(per_hint_ticks)?;
    if !(ghz.is_finite() && ghz > 0.0) {
        return None;
    }
    let ns: Vec<f64> = per_hint_ticks.iter().map(|t| t / ghz).collect();
    Some((ticks, summarize(&ns)?))
}

/// PAUSEs in each of MariaDB's two timed runs.
pub const MARIADB_PAUSES: u64 = 16;

/// MariaDB's startup choice of `my_cpu_relax_multiplier` for one measurement: both timed runs
/// of 16 PAUSEs must be slow (above 30 ticks per PAUSE) for 100, anything else gives 200.
pub fn mariadb_multiplier(run1_ticks: u64, run2_ticks: u64) -> u32 {
    let slower_of_fast = run1_ticks.min(run2_ticks) as f64 / MARIADB_PAUSES as f64;
    crate::spin::model::mariadb_multiplier_for(slower_of_fast)
}

/// What MariaDB's startup rule concludes on this CPU, over repeated trials of its own
/// measurement (it runs once per server start, so a CPU near the threshold can go either way).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MariadbRule {
    /// False off x86: MariaDB does not measure there and uses M = 200.
    pub applies: bool,
    pub trials: usize,
    /// Trials that chose M = 100 (slow PAUSE).
    pub chose_100: usize,
    /// Trials that chose M = 200.
    pub chose_200: usize,
    /// The majority choice: what a server started now would most likely use.
    pub multiplier: u32,
    /// Median ticks per PAUSE as MariaDB's own (unserialized, 16-PAUSE) measurement sees it.
    pub median_ticks_per_pause: Option<f64>,
    /// Hints per spin round that follow for `innodb_spin_wait_delay = d`: M/4 * d.
    pub hints_per_round_per_unit_delay: f64,
    pub explanation: String,
}

/// Evaluate the rule over trials of (run1, run2) tick deltas.
pub fn mariadb_rule(trials: &[(u64, u64)]) -> MariadbRule {
    if trials.is_empty() {
        return MariadbRule {
            applies: false,
            trials: 0,
            chose_100: 0,
            chose_200: 0,
            multiplier: 200,
            median_ticks_per_pause: None,
            hints_per_round_per_unit_delay: 50.0,
            explanation: "MariaDB measures PAUSE only on x86; elsewhere it uses M = 200 \
                          (50 relax steps per unit of innodb_spin_wait_delay)"
                .into(),
        };
    }
    let chose_100 = trials
        .iter()
        .filter(|(a, b)| mariadb_multiplier(*a, *b) == 100)
        .count();
    let chose_200 = trials.len() - chose_100;
    let multiplier = if chose_100 * 2 > trials.len() {
        100
    } else {
        200
    };
    let per_pause: Vec<f64> = trials
        .iter()
        .flat_map(|(a, b)| [*a, *b])
        .map(|t| t as f64 / MARIADB_PAUSES as f64)
        .collect();
    let median = summarize(&per_pause).map(|s| s.median);
    let verdict = if multiplier == 100 {
        "slow PAUSE: M = 100, a spin round is 25*d PAUSEs"
    } else {
        "fast PAUSE: M = 200, a spin round is 50*d PAUSEs"
    };
    let unanimous = if chose_100 == 0 || chose_200 == 0 {
        format!("all {} trials agree", trials.len())
    } else {
        format!(
            "trials split {chose_100} for M=100 / {chose_200} for M=200: this CPU sits near the \
             30-tick threshold, so each server start may pick differently"
        )
    };
    MariadbRule {
        applies: true,
        trials: trials.len(),
        chose_100,
        chose_200,
        multiplier,
        median_ticks_per_pause: median,
        hints_per_round_per_unit_delay: multiplier as f64 / 4.0,
        explanation: format!(
            "{verdict} (median {} ticks per PAUSE vs the 30-tick threshold; {unanimous})",
            median.map_or("-".into(), crate::units::fmt_num)
        ),
    }
}

/// Spread between CPUs' medians as a percentage of the smallest (hybrid CPUs differ by core
/// type); None for fewer than two.
pub fn spread_pct(medians: &[f64]) -> Option<f64> {
    let v: Vec<f64> = medians.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo > 0.0).then(|| (hi - lo) / lo * 100.0)
}

/// Relative difference of two medians in percent of the first (repeatability checks).
pub fn rel_diff_pct(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        return f64::INFINITY;
    }
    (b - a).abs() / a.abs() * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_hint_subtracts_overhead_and_drops_nonsense() {
        // 1024 hints, 40 ticks overhead: 65576 ticks -> 64 per hint.
        let v = per_hint(&[65_576, 65_576 + 1024, 10, 40], 40.0, 1024);
        assert_eq!(v, vec![64.0, 65.0]);
        assert!(per_hint(&[100], 0.0, 0).is_empty());
    }

    #[test]
    fn overhead_is_the_median_of_empty_batches() {
        assert_eq!(overhead(&[30, 32, 31, 5000, 29]), 31.0);
        assert_eq!(overhead(&[]), 0.0);
    }

    #[test]
    fn ghz_from_two_readings() {
        let g = ghz(1_000, 10_000, 1_001_000, 2_610_000).unwrap();
        assert!((g - 2.6).abs() < 1e-12);
        assert_eq!(ghz(10, 5, 10, 9), None);
        assert_eq!(ghz(10, 5, 5, 9), None);
        assert_eq!(ghz(10, 9, 20, 5), None);
    }

    #[test]
    fn batch_sizing() {
        // 64 ticks per hint, 32 per iteration, 65536 target -> 32 iterations.
        assert_eq!(iters_for(65_536.0, 64.0, 32), 32);
        assert_eq!(iters_for(65_536.0, 0.0, 32), 64);
        assert_eq!(iters_for(1e12, 1.0, 32), 4096);
        assert_eq!(iters_for(1.0, 140.0, 32), 1);
    }

    #[test]
    fn summaries_in_ticks_and_ns() {
        let (t, n) = summarize_hint(&[60.0, 64.0, 64.0, 68.0, 200.0], 2.0).unwrap();
        assert_eq!((t.n, t.min, t.median, t.max), (5, 60.0, 64.0, 200.0));
        assert_eq!((n.min, n.median), (30.0, 32.0));
        assert!(summarize_hint(&[1.0], 0.0).is_none());
        assert!(summarize_hint(&[], 2.0).is_none());
    }

    #[test]
    fn mariadb_rule_threshold_is_strictly_above_30_ticks_in_both_runs() {
        assert_eq!(mariadb_multiplier(481, 481), 100);
        assert_eq!(mariadb_multiplier(480, 481), 200);
        assert_eq!(mariadb_multiplier(481, 480), 200);
        assert_eq!(mariadb_multiplier(160, 160), 200);
        // Zen (64 ticks) and Skylake-SP (140) are slow; Broadwell (10) is fast.
        assert_eq!(mariadb_multiplier(64 * 16, 64 * 16), 100);
        assert_eq!(mariadb_multiplier(10 * 16, 10 * 16), 200);
    }

    #[test]
    fn mariadb_rule_over_trials() {
        let r = mariadb_rule(&[(1024, 1024), (1024, 1030), (100, 1024)]);
        assert!(r.applies);
        assert_eq!((r.chose_100, r.chose_200, r.multiplier), (2, 1, 100));
        assert_eq!(r.hints_per_round_per_unit_delay, 25.0);
        assert!(r.explanation.contains("split"), "{}", r.explanation);
        let fast = mariadb_rule(&[(160, 160); 5]);
        assert_eq!(fast.multiplier, 200);
        assert_eq!(fast.median_ticks_per_pause, Some(10.0));
        assert!(fast.explanation.contains("all 5 trials agree"));
        let none = mariadb_rule(&[]);
        assert!(!none.applies);
        assert_eq!(none.multiplier, 200);
    }

    #[test]
    fn spreads() {
        assert_eq!(spread_pct(&[10.0]), None);
        assert_eq!(spread_pct(&[10.0, 15.0, 12.0]), Some(50.0));
        assert_eq!(rel_diff_pct(100.0, 97.0), 3.0);
    }
}
