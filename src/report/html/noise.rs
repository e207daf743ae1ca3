//! Before/after numbers with their noise: a document's per-window values of a headline number
//! (rt's intervals, doctor --rt's seconds) summarised by the project's robust statistics
//! (`analysis::stats::summarize`: median, middle half, range, count), and two documents'
//! windows compared by the A/B test's interval (`analysis::abtest::log_ratio_interval`, Welch on
//! the logarithms, 95%). A difference whose interval holds zero is within the noise; one window
//! a side has no noise estimate, and no difference is claimed. Windows of one run share its
//! drift (the neighbour on the host, a burst), so the interval is, if anything, too narrow:
//! "within the noise" is safe, "beyond it" is a hint to measure again. Pure.

use crate::analysis::abtest::log_ratio_interval;
use crate::analysis::stats::summarize;

/// One headline number's value per window of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Windows {
    /// The number's name, as in the section's `numbers`.
    pub name: String,
    /// One value a window; non-finite values (a window without requests) are left out.
    pub values: Vec<f64>,
    /// The windows' length, seconds.
    pub window_s: f64,
    /// Microseconds (shown as durations); else plain numbers.
    pub micros: bool,
}

impl Windows {
    fn fmt(&self, v: f64) -> String {
        if self.micros {
            crate::report::fmt_ns(v * 1e3)
        } else {
            crate::report::fmt_num(v)
        }
    }

    fn finite(&self) -> Vec<f64> {
        self.values
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect()
    }

    /// "median 2.1 ms, middle half 1.2 ms-4.0 ms, range 0.9 ms-9.3 ms, 16 windows of 0.5 s".
    pub fn spread(&self) -> String {
        let Some(s) = summarize(&self.values) else {
            return "no window measured it".into();
        };
        let of = format!(
            "{} window{} of {} s",
            s.n,
            if s.n == 1 { "" } else { "s" },
            crate::report::fmt_num(self.window_s)
        );
        if s.n == 1 {
            return format!("{} ({of}: its noise is unknown)", self.fmt(s.median));
        }
        format!(
            "median {}, middle half {}-{}, range {}-{}, {of}",
            self.fmt(s.median),
            self.fmt(s.p25),
            self.fmt(s.p75),
            self.fmt(s.min),
            self.fmt(s.max)
        )
    }
}

/// How an after compares with a before.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Some(true): within the noise; Some(false): beyond it; None: the noise is unknown.
    pub within: Option<bool>,
    /// For a table cell: "within the noise", "lower, beyond the noise", "noise unknown".
    pub short: String,
    /// The interval, "(+39%, 95% CI -20% .. +140%)"; empty when there is none.
    pub ci: String,
    /// The sentence with both sides' spread.
    pub long: String,
}

/// Compare `after` with `before` (the same number of two documents).
pub fn compare(before: &Windows, after: &Windows) -> Noise {
    let (a, b) = (before.finite(), after.finite());
    let long = |verdict: &str| {
        format!(
            "{}: before {}; after {}; {verdict}.",
            before.name,
            before.spread(),
            after.spread()
        )
    };
    if a.len() < 2 || b.len() < 2 {
        return Noise {
            within: None,
            short: "noise unknown".into(),
            ci: format!("({} and {} windows)", a.len(), b.len()),
            long: long(
                "with fewer than 2 windows a side the noise is unknown, so no difference can be claimed",
            ),
        };
    }
    match log_ratio_interval(&a, &b, 0.95) {
        None => Noise {
            within: None,
            short: "noise unknown".into(),
            ci: "(no spread, or a window of 0)".into(),
            long: long("the windows have no spread or a value of 0, so the noise cannot be estimated and no difference is claimed"),
        },
        Some((d, lo, hi)) => {
            let ci = format!("{d:+.0}%, 95% CI {lo:+.0}% .. {hi:+.0}%");
            if lo > 0.0 || hi < 0.0 {
                let way = if d > 0.0 { "higher" } else { "lower" };
                Noise {
                    within: Some(false),
                    short: format!("{way}, beyond the noise"),
                    ci: format!("({ci})"),
                    long: long(&format!("after/before {ci}: {way}, beyond the window-to-window noise (windows of one run share its drift: measure again to be sure)")),
                }
            } else {
                Noise {
                    within: Some(true),
                    short: "within the noise".into(),
                    ci: format!("({ci})"),
                    long: long(&format!("after/before {ci}: the interval holds no change, so the difference is within the noise")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(values: &[f64]) -> Windows {
        Windows {
            name: "p99".into(),
            values: values.to_vec(),
            window_s: 0.5,
            micros: true,
        }
    }

    #[test]
    fn a_shift_inside_the_spread_is_within_and_a_clear_one_beyond() {
        let before = w(&[1000.0, 3000.0, 800.0, 5000.0, 1500.0, 2500.0]);
        let same = w(&[1200.0, 2800.0, 900.0, 4800.0, 2000.0, 3300.0]);
        let n = compare(&before, &same);
        assert_eq!(n.within, Some(true), "{n:?}");
        assert!(n.short.starts_with("within the noise"), "{}", n.short);
        assert!(n.long.contains("6 windows of"), "{}", n.long);
        let lower = w(&[100.0, 120.0, 90.0, 110.0, 105.0, 95.0]);
        let n = compare(&before, &lower);
        assert_eq!(n.within, Some(false), "{n:?}");
        assert!(
            n.short.starts_with("lower, beyond the noise"),
            "{}",
            n.short
        );
    }

    #[test]
    fn one_window_a_side_claims_nothing() {
        let n = compare(&w(&[2350.0]), &w(&[3270.0]));
        assert_eq!(n.within, None);
        assert!(n.long.contains("its noise is unknown"), "{}", n.long);
        assert!(
            n.long.contains("no difference can be claimed"),
            "{}",
            n.long
        );
        let n = compare(&w(&[f64::NAN, 1.0]), &w(&[]));
        assert_eq!(n.within, None);
    }
}
