//! Robust summaries of repeated measurements (batches of a probe, repeats of a lab point).

use serde::{Deserialize, Serialize};

/// Order statistics of a sample, with the spread as the interquartile range relative to the
/// median (robust against the occasional interrupted batch).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
    pub mean: f64,
    /// (p75 - p25) / median * 100; 0 when the median is 0.
    pub iqr_pct: f64,
}

/// Linear-interpolated quantile of an already sorted slice; `q` in [0, 1].
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let q = q.clamp(0.0, 1.0);
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Summarise a sample; non-finite values are dropped. Returns None for an empty sample.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let median = quantile_sorted(&v, 0.5);
    let p25 = quantile_sorted(&v, 0.25);
    let p75 = quantile_sorted(&v, 0.75);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let iqr_pct = if median != 0.0 {
        (p75 - p25) / median.abs() * 100.0
    } else {
        0.0
    };
    Some(Summary {
        n: v.len(),
        min: v[0],
        p25,
        median,
        p75,
        max: v[v.len() - 1],
        mean,
        iqr_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        assert!((quantile_sorted(&s, 0.5) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn summary_ignores_non_finite_and_reports_spread() {
        let s = summarize(&[10.0, f64::NAN, 12.0, 11.0, 13.0, 9.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.min, 9.0);
        assert_eq!(s.max, 13.0);
        assert_eq!(s.median, 11.0);
        assert!((s.iqr_pct - 2.0 / 11.0 * 100.0).abs() < 1e-9);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::INFINITY]).is_none());
    }
}
