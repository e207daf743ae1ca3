//! Universal Scalability Law fit (Gunther): `X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1))`.
//!
//! Solver (documented, deterministic, no crate): for fixed `(sigma, kappa)` the model is linear in
//! `lambda`, so the least-squares `lambda` is closed-form (`sum(X f) / sum(f^2)`, `f` the model
//! with `lambda = 1`). That leaves a 2-D problem, solved by a coarse log-spaced grid over
//! `sigma, kappa` in `[0, 1]` followed by Nelder-Mead refinement in `(ln sigma, ln kappa)` space
//! (parameters stay positive). The objective is the sum of squared *relative* residuals, so that
//! one high-concurrency point does not dominate.
//!
//! Points the model cannot explain are left out and named: after a first fit, the worst point is
//! dropped while its relative residual exceeds `OUTLIER_REL` and at least 4 points remain (a
//! single client on an idle VM, for example, is slowed by wake-up latency the model has no term
//! for; docs/REFERENCE.md §8).

use serde::{Deserialize, Serialize};

/// Relative residual above which a point is treated as unexplained by the model.
pub const OUTLIER_REL: f64 = 0.25;

/// The fitted model and what it says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention (serial fraction).
    pub sigma: f64,
    /// Coherency (crosstalk) penalty.
    pub kappa: f64,
    /// Throughput of one client in the model (per second).
    pub lambda: f64,
    /// Concurrency at peak throughput, `sqrt((1 - sigma) / kappa)`; None when kappa is 0.
    pub n_peak: Option<f64>,
    /// Model throughput at `n_peak` (or at the largest N measured when kappa is 0).
    pub x_peak: f64,
    /// "contention" or "coherency": which term costs more at the largest N fitted.
    pub dominant: String,
    /// Coefficient of determination on the points fitted.
    pub r_squared: f64,
    /// Concurrency values fitted.
    pub fitted_n: Vec<f64>,
    /// Concurrency values left out because the model could not explain them.
    pub excluded_n: Vec<f64>,
}

/// Model throughput at `n`.
pub fn usl_x(n: f64, sigma: f64, kappa: f64, lambda: f64) -> f64 {
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

fn best_lambda(pts: &[(f64, f64)], sigma: f64, kappa: f64) -> f64 {
    // Weighted by 1/X^2 to match the relative-residual objective.
    let (mut num, mut den) = (0.0, 0.0);
    for &(n, x) in pts {
        let f = usl_x(n, sigma, kappa, 1.0);
        let w = 1.0 / (x * x);
        num += w * x * f;
        den += w * f * f;
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

fn cost(pts: &[(f64, f64)], sigma: f64, kappa: f64) -> f64 {
    let l = best_lambda(pts, sigma, kappa);
    pts.iter()
        .map(|&(n, x)| {
            let r = (usl_x(n, sigma, kappa, l) - x) / x;
            r * r
        })
        .sum()
}

const LN_MIN: f64 = -18.0; // exp(-18) ~ 1.5e-8: "zero" for practical purposes

fn from_ln(v: f64) -> f64 {
    if v <= LN_MIN {
        0.0
    } else {
        v.min(0.0).exp()
    }
}

fn nelder_mead(f: &dyn Fn(f64, f64) -> f64, start: (f64, f64)) -> (f64, f64) {
    let mut s = [start, (start.0 + 0.5, start.1), (start.0, start.1 + 0.5)];
    let mut v = s.map(|p| f(p.0, p.1));
    for _ in 0..400 {
        let mut idx = [0usize, 1, 2];
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let (b, m, w) = (idx[0], idx[1], idx[2]);
        if (v[w] - v[b]).abs() <= 1e-14 * (1.0 + v[b].abs()) {
            break;
        }
        let c = ((s[b].0 + s[m].0) / 2.0, (s[b].1 + s[m].1) / 2.0);
        let at = |t: f64| (c.0 + t * (s[w].0 - c.0), c.1 + t * (s[w].1 - c.1));
        let r = at(-1.0);
        let fr = f(r.0, r.1);
        if fr < v[b] {
            let e = at(-2.0);
            let fe = f(e.0, e.1);
            if fe < fr {
                s[w] = e;
                v[w] = fe;
            } else {
                s[w] = r;
                v[w] = fr;
            }
        } else if fr < v[m] {
            s[w] = r;
            v[w] = fr;
        } else {
            let k = at(0.5);
            let fk = f(k.0, k.1);
            if fk < v[w] {
                s[w] = k;
                v[w] = fk;
            } else {
                for i in [m, w] {
                    s[i] = ((s[i].0 + s[b].0) / 2.0, (s[i].1 + s[b].1) / 2.0);
                    v[i] = f(s[i].0, s[i].1);
                }
            }
        }
    }
    let b = (0..3).min_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap_or(0);
    s[b]
}

fn fit_once(pts: &[(f64, f64)]) -> (f64, f64, f64) {
    let obj = |a: f64, b: f64| cost(pts, from_ln(a), from_ln(b));
    let grid: Vec<f64> = (0..=19)
        .map(|i| LN_MIN + i as f64 * (-LN_MIN / 19.0))
        .collect();
    let mut best = (f64::INFINITY, LN_MIN, LN_MIN);
    for &a in &grid {
        for &b in &grid {
            let c = obj(a, b);
            if c < best.0 {
                best = (c, a, b);
            }
        }
    }
    let (a, b) = nelder_mead(&obj, (best.1, best.2));
    let (sigma, kappa) = (from_ln(a), from_ln(b));
    (sigma, kappa, best_lambda(pts, sigma, kappa))
}

/// Fit the USL to `(concurrency, throughput)` points. Needs at least 3 points with positive
/// throughput and at least 2 distinct concurrency values; returns None otherwise.
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(n, x)| n.is_finite() && x.is_finite() && n >= 1.0 && x > 0.0)
        .collect();
    let mut ns: Vec<f64> = pts.iter().map(|p| p.0).collect();
    ns.sort_by(|a, b| a.total_cmp(b));
    ns.dedup();
    if pts.len() < 3 || ns.len() < 2 {
        return None;
    }
    let mut excluded = Vec::new();
    let (mut sigma, mut kappa, mut lambda) = fit_once(&pts);
    while pts.len() > 4 {
        let (i, worst) = pts
            .iter()
            .enumerate()
            .map(|(i, &(n, x))| (i, ((usl_x(n, sigma, kappa, lambda) - x) / x).abs()))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        if worst <= OUTLIER_REL {
            break;
        }
        excluded.push(pts.remove(i).0);
        (sigma, kappa, lambda) = fit_once(&pts);
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = pts
        .iter()
        .map(|&(n, x)| (x - usl_x(n, sigma, kappa, lambda)).powi(2))
        .sum();
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let n_max = pts.iter().map(|p| p.0).fold(1.0, f64::max);
    let n_peak = (kappa > 0.0).then(|| ((1.0 - sigma).max(0.0) / kappa).sqrt());
    let x_peak = usl_x(n_peak.unwrap_or(n_max), sigma, kappa, lambda);
    let dominant = if sigma * (n_max - 1.0) >= kappa * n_max * (n_max - 1.0) {
        "contention"
    } else {
        "coherency"
    };
    excluded.sort_by(|a, b| a.total_cmp(b));
    Some(UslFit {
        sigma,
        kappa,
        lambda,
        n_peak,
        x_peak,
        dominant: dominant.into(),
        r_squared,
        fitted_n: pts.iter().map(|p| p.0).collect(),
        excluded_n: excluded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_parameters() {
        let (s, k, l) = (0.05, 0.002, 1000.0);
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .map(|&n| (n, usl_x(n, s, k, l)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.sigma - s).abs() < 1e-3, "{f:?}");
        assert!((f.kappa - k).abs() < 1e-4, "{f:?}");
        assert!((f.lambda - l).abs() / l < 1e-3, "{f:?}");
        assert!(f.excluded_n.is_empty());
        let n_peak = ((1.0 - s) / k).sqrt();
        assert!((f.n_peak.unwrap() - n_peak).abs() < 0.5);
        assert!(f.r_squared > 0.999);
    }

    #[test]
    fn recovers_parameters_from_noisy_points_and_drops_an_outlier() {
        let (s, k, l) = (0.1, 0.01, 500.0);
        // Deterministic +-3% "noise"; N=1 is made 60% slow (wake-up latency) and must be dropped.
        let noise = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.0];
        let mut pts: Vec<(f64, f64)> = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0]
            .iter()
            .zip(noise)
            .map(|(&n, e)| (n, usl_x(n, s, k, l) * e))
            .collect();
        pts[0].1 *= 0.4;
        let f = fit(&pts).unwrap();
        assert_eq!(f.excluded_n, vec![1.0]);
        assert!((f.sigma - s).abs() < 0.04, "{f:?}");
        assert!((f.kappa - k).abs() < 0.004, "{f:?}");
    }

    #[test]
    fn linear_scaling_gives_zero_coefficients_and_contention_label() {
        let pts: Vec<(f64, f64)> = (1..=6).map(|n| (n as f64, 100.0 * n as f64)).collect();
        let f = fit(&pts).unwrap();
        assert!(f.sigma < 1e-4 && f.kappa < 1e-5, "{f:?}");
        assert!(f.n_peak.is_none() || f.n_peak.unwrap() > 100.0);
    }

    #[test]
    fn too_few_points_is_none() {
        assert!(fit(&[(1.0, 10.0), (2.0, 19.0)]).is_none());
        assert!(fit(&[(2.0, 10.0), (2.0, 11.0), (2.0, 9.0)]).is_none());
    }
}
