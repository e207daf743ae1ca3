//! Pure statistics of the contention lab: fairness, relative change between two settings, and
//! the verdict of a `--compare-pause-scale` row. No clocks, no threads.

use serde::{Deserialize, Serialize};

use super::stats::Summary;

/// Jain's fairness index over per-thread counts: (sum x)^2 / (n * sum x^2), in (0, 1];
/// 1 = perfectly even, 1/n = one thread did everything. Empty or all-zero input gives 1.
pub fn jain_index(counts: &[f64]) -> f64 {
    let n = counts.len() as f64;
    let sum: f64 = counts.iter().sum();
    let sq: f64 = counts.iter().map(|x| x * x).sum();
    if counts.is_empty() || sq == 0.0 {
        1.0
    } else {
        sum * sum / (n * sq)
    }
}

/// Relative change from `base` to `new` in percent; NaN when `base` is 0 or not finite.
pub fn change_pct(base: f64, new: f64) -> f64 {
    if base == 0.0 || !base.is_finite() || !new.is_finite() {
        f64::NAN
    } else {
        (new - base) / base * 100.0
    }
}

/// How a metric moved between two settings, judged against the spread of the repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Movement {
    /// Within `tolerance_pct` of itself.
    Stable,
    /// Beyond the tolerance and the repeat ranges [min, max] do not overlap.
    Changed,
    /// Beyond the tolerance but the repeat ranges overlap, or fewer than
    /// [`MIN_REPEATS_FOR_CHANGE`] repeats on a side: noise cannot be ruled out.
    Unclear,
}

/// Repeats each side needs before a move can be called `Changed`: with one or two repeats the
/// "ranges" are points and would not overlap by chance alone.
pub const MIN_REPEATS_FOR_CHANGE: usize = 3;

/// Judge a change between two repeat summaries: stable if the medians are within
/// `tolerance_pct`; changed if beyond it, both sides have enough repeats and the ranges of the
/// repeats do not overlap; unclear otherwise.
pub fn judge(base: &Summary, new: &Summary, tolerance_pct: f64) -> Movement {
    let c = change_pct(base.median, new.median);
    let enough = base.n >= MIN_REPEATS_FOR_CHANGE && new.n >= MIN_REPEATS_FOR_CHANGE;
    if c.is_nan() || c.abs() <= tolerance_pct {
        Movement::Stable
    } else if enough && (new.min > base.max || new.max < base.min) {
        Movement::Changed
    } else {
        Movement::Unclear
    }
}

/// How a latch waits, as far as the story of a slower hint is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Waiting {
    /// Spins a count of hints (InnoDB's rounds, MariaDB's, the queue locks).
    HintCount,
    /// Spins until a time budget, one hint between tests.
    TimeBudget,
    /// Executes no hints of ours (futex, std, parking_lot).
    NoHints,
}

/// The one-line explanation of a `--compare-pause-scale` row. Only latches that spin a *count*
/// of hints are told "a count of hints now lasts longer"; a time-bounded spinner that moves
/// notices the release only between hints, which got coarser; a latch that executes no hints
/// can only move by noise or scheduling.
pub fn compare_story(
    waiting: Waiting,
    ops: Movement,
    cpu: Movement,
    ops_change_pct: f64,
) -> &'static str {
    let moved = ops == Movement::Changed || cpu == Movement::Changed;
    match waiting {
        _ if ops == Movement::Stable && cpu == Movement::Stable => {
            "unaffected by the hint's latency"
        }
        _ if !moved => "moves, but not beyond the spread of repeats (or too few repeats to tell)",
        Waiting::NoHints => "moves although it executes no hints: noise or scheduling",
        Waiting::TimeBudget if ops_change_pct < 0.0 => {
            "loses throughput: it sees the release only between hints, now coarser"
        }
        _ if ops_change_pct < 0.0 => "loses throughput: a count of hints now lasts longer",
        _ => "changes with the hint's latency",
    }
}

/// A run that outlasts its window by more than this many percent is marked as an overrun.
pub const OVERRUN_LIMIT_PCT: f64 = 10.0;

/// How far a run outlasted its window, in percent of the window (0 when it did not).
pub fn overrun_pct(elapsed_ms: f64, window_ms: f64) -> f64 {
    if window_ms <= 0.0 || !elapsed_ms.is_finite() {
        return 0.0;
    }
    ((elapsed_ms - window_ms) / window_ms * 100.0).max(0.0)
}

/// Busy CPUs a run implies: its workers' CPU time over its elapsed time. Throughput times CPU
/// per operation is the same number, so it can never exceed the CPUs the workers may use when
/// both are taken over the same interval.
pub fn busy_cpus(worker_cpu_ns: f64, elapsed_ns: f64) -> f64 {
    if elapsed_ns > 0.0 {
        worker_cpu_ns / elapsed_ns
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summarize;

    #[test]
    fn jain_bounds() {
        assert!((jain_index(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[10.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert_eq!(jain_index(&[]), 1.0);
        assert_eq!(jain_index(&[0.0, 0.0]), 1.0);
        let j = jain_index(&[1.0, 2.0, 3.0]);
        assert!((j - 36.0 / 42.0).abs() < 1e-12);
    }

    #[test]
    fn change_and_judgement() {
        assert!((change_pct(100.0, 50.0) + 50.0).abs() < 1e-12);
        assert!(change_pct(0.0, 1.0).is_nan());
        let a = summarize(&[100.0, 102.0, 98.0]).unwrap();
        let b = summarize(&[105.0, 103.0, 104.0]).unwrap();
        let c = summarize(&[50.0, 52.0, 49.0]).unwrap();
        let d = summarize(&[60.0, 99.0, 70.0]).unwrap();
        assert_eq!(judge(&a, &b, 10.0), Movement::Stable);
        assert_eq!(judge(&a, &c, 10.0), Movement::Changed);
        assert_eq!(judge(&a, &d, 10.0), Movement::Unclear);
        // One repeat a side: a 50% drop is not a verdict.
        let one_a = summarize(&[100.0]).unwrap();
        let one_c = summarize(&[50.0]).unwrap();
        assert_eq!(judge(&one_a, &one_c, 10.0), Movement::Unclear);
        assert_eq!(
            judge(&one_a, &summarize(&[101.0]).unwrap(), 10.0),
            Movement::Stable
        );
    }

    #[test]
    fn stories_blame_the_hint_count_only_where_there_is_one() {
        use Movement::*;
        use Waiting::*;
        let count = "loses throughput: a count of hints now lasts longer";
        assert_eq!(compare_story(HintCount, Changed, Changed, -30.0), count);
        assert_ne!(compare_story(TimeBudget, Changed, Stable, -10.2), count);
        assert_ne!(compare_story(NoHints, Changed, Stable, -12.0), count);
        assert_eq!(
            compare_story(TimeBudget, Stable, Stable, -7.0),
            "unaffected by the hint's latency"
        );
        assert_eq!(
            compare_story(HintCount, Unclear, Stable, -12.0),
            "moves, but not beyond the spread of repeats (or too few repeats to tell)"
        );
        assert_eq!(
            compare_story(HintCount, Changed, Stable, 15.0),
            "changes with the hint's latency"
        );
    }

    #[test]
    fn overrun_and_busy_cpus() {
        assert_eq!(overrun_pct(50.0, 50.0), 0.0);
        assert_eq!(overrun_pct(40.0, 50.0), 0.0);
        assert!((overrun_pct(66_000.0, 50.0) - 131_900.0).abs() < 1e-6);
        assert!((overrun_pct(55.5, 50.0) - 11.0).abs() < 1e-9);
        // The run: 523 us CPU per op at 233,544 ops/s is 122 busy CPUs.
        let ops = 233_544.0 * 0.050;
        assert!((busy_cpus(ops * 523_000.0, 50e6) - 122.1).abs() < 0.1);
        assert!(busy_cpus(1.0, 0.0).is_nan());
    }

    proptest::proptest! {
        #[test]
        fn jain_is_between_1_over_n_and_1(v in proptest::collection::vec(0.0f64..1e6, 1..64)) {
            let j = jain_index(&v);
            let n = v.len() as f64;
            proptest::prop_assert!(j <= 1.0 + 1e-9 && j >= 1.0 / n - 1e-9);
        }
    }
}
