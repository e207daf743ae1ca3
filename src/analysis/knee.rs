//! The knee of a concurrency ladder, the SLA check and Little's law (docs/REFERENCE.md §9,
//! Method): throughput rises with concurrency until it stops; past that point response time
//! grows. A knee needs at least [`MIN_POINTS`] concurrency levels.

use serde::{Deserialize, Serialize};

/// A latency SLA such as `p99<5ms`: the quantile (0..1) must stay below `limit_us`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sla {
    /// Percentile in percent, e.g. 99.0 or 99.9 (50 for the median).
    pub percentile: f64,
    pub limit_us: f64,
}

impl std::fmt::Display for Sla {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p{}<{}us", self.percentile, self.limit_us)
    }
}

/// The accepted SLA syntax, quoted in error messages.
pub const SLA_FORM: &str =
    "the form is pQ<LIMIT with Q a percentile (50, 95, 99, 99.9) and LIMIT with a unit us, ms or s, e.g. p99<5ms";

/// Parse `p99<5ms`, `p99.9<800us`, `p50<1s`.
pub fn parse_sla(s: &str) -> Result<Sla, String> {
    let bad = || format!("--sla {s:?}: {SLA_FORM}");
    let t = s.trim();
    let rest = t
        .strip_prefix('p')
        .or_else(|| t.strip_prefix('P'))
        .ok_or_else(bad)?;
    let (q, lim) = rest.split_once('<').ok_or_else(bad)?;
    let percentile: f64 = q.trim().parse().map_err(|_| bad())?;
    if !(percentile > 0.0 && percentile < 100.0) {
        return Err(bad());
    }
    let lim = lim.trim();
    let split = lim
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = lim.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(bad()),
    };
    if !(v > 0.0 && v.is_finite()) {
        return Err(bad());
    }
    Ok(Sla {
        percentile,
        limit_us: v * scale,
    })
}

/// What the knee analysis needs from one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepPoint {
    pub threads: f64,
    /// Transactions per second.
    pub tps: f64,
    /// The latency at the SLA's percentile (or p99), microseconds.
    pub lat_us: f64,
    /// p99 latency, microseconds.
    pub p99_us: f64,
}

/// Gain below which added concurrency is "not buying throughput".
pub const FLAT_GAIN: f64 = 0.05;

/// Concurrency levels needed before a knee is named (two points make a slope, not a knee).
pub const MIN_POINTS: usize = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The concurrency with the highest throughput that meets the SLA (None: no step meets it,
    /// or no SLA given).
    pub sla_best_threads: Option<f64>,
    pub sla_best_tps: Option<f64>,
    /// The first concurrency beyond which one more ladder step buys under 5% throughput while
    /// p99 grows (None: throughput was still rising at the last step).
    pub saturation_threads: Option<f64>,
    pub saturation_tps: Option<f64>,
    /// Throughput change from the knee to the last step, percent (negative: it fell), and the
    /// last step's concurrency and throughput.
    #[serde(default)]
    pub after_knee_pct: Option<f64>,
    #[serde(default)]
    pub last_threads: Option<f64>,
    #[serde(default)]
    pub last_tps: Option<f64>,
    /// A sentence: what to throttle concurrency to, and how.
    pub recommendation: String,
}

/// Whether, looking at the ladder so far (sorted by threads), throughput has stopped rising and
/// latency keeps growing: the last two steps each gained under 5% with growing p99, or
/// throughput fell while p99 grew.
pub fn past_knee(steps: &[StepPoint]) -> bool {
    let n = steps.len();
    if n < 3 {
        return false;
    }
    let flat =
        |a: &StepPoint, b: &StepPoint| b.tps < a.tps * (1.0 + FLAT_GAIN) && b.p99_us > a.p99_us;
    flat(&steps[n - 3], &steps[n - 2]) && flat(&steps[n - 2], &steps[n - 1])
}

/// Find the knee of a ladder (points in any order; one point per concurrency).
pub fn find_knee(points: &[StepPoint], sla: Option<&Sla>) -> Knee {
    let mut p: Vec<StepPoint> = points
        .iter()
        .copied()
        .filter(|s| s.tps.is_finite() && s.tps > 0.0)
        .collect();
    p.sort_by(|a, b| a.threads.total_cmp(&b.threads));
    let (sla_best_threads, sla_best_tps) = match sla {
        Some(sla) => p
            .iter()
            .filter(|s| s.lat_us < sla.limit_us)
            .max_by(|a, b| a.tps.total_cmp(&b.tps))
            .map(|s| (Some(s.threads), Some(s.tps)))
            .unwrap_or((None, None)),
        None => (None, None),
    };
    let mut sat = None;
    let few = p.len() < MIN_POINTS;
    for w in p.windows(2).filter(|_| !few) {
        if w[1].tps < w[0].tps * (1.0 + FLAT_GAIN) && w[1].p99_us > w[0].p99_us {
            sat = Some(w[0]);
            break;
        }
    }
    let limit = match (sla_best_threads, sat) {
        (Some(a), Some(s)) => Some(a.min(s.threads)),
        (Some(a), None) => Some(a),
        (None, Some(s)) => Some(s.threads),
        (None, None) => None,
    };
    let last = p.last().map(|s| s.threads);
    let recommendation = match (limit, sla, sla_best_threads) {
        _ if p.is_empty() => "no valid step measured any throughput".into(),
        _ if few && sla_best_threads.is_none() => format!(
            "too few concurrency levels for a knee ({} valid, at least {MIN_POINTS} needed): extend the ladder",
            p.len()
        ),
        (_, Some(sla), None) => format!(
            "no step met the SLA p{}<{}: reduce the load or raise the SLA; concurrency limiting alone cannot meet it",
            sla.percentile,
            crate::units::fmt_ns(sla.limit_us * 1e3)
        ),
        (Some(n), _, _) if sat.is_some() || Some(n) != last => format!(
            "throttle concurrency near {n}: thread_pool_size (MariaDB) or innodb_thread_concurrency (MySQL) or the application's pool size; more active clients than that add latency without throughput"
        ),
        _ => format!(
            "throughput was still rising at the last step ({} threads){}: extend the ladder to find the knee",
            last.unwrap_or(0.0),
            if sla.is_some() { " and every step met the SLA" } else { "" }
        ),
    };
    let last_pt = p.last().copied();
    Knee {
        sla_best_threads,
        sla_best_tps,
        saturation_threads: sat.map(|s| s.threads),
        saturation_tps: sat.map(|s| s.tps),
        after_knee_pct: sat
            .zip(last_pt)
            .map(|(k, l)| (l.tps - k.tps) / k.tps * 100.0),
        last_threads: sat.and(last_pt).map(|l| l.threads),
        last_tps: sat.and(last_pt).map(|l| l.tps),
        recommendation,
    }
}

/// Little's law check for a closed loop: the concurrency implied by throughput and mean
/// response time, `N = X * R`, against the number of clients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Little {
    pub clients: f64,
    /// X * R with X in transactions/s and R the mean latency in seconds.
    pub implied: f64,
    /// implied / clients.
    pub ratio: f64,
    /// Whether the ratio is within 10% of 1.
    pub holds: bool,
}

/// Check `N ~ X * R`. A ratio well below 1 means clients spend time outside the measured
/// request (client overhead, think time, reconnects); above 1 means latency was counted from an
/// intended start (open loop) or the clock is off.
pub fn little_check(clients: f64, tps: f64, mean_latency_us: f64) -> Little {
    let implied = tps * mean_latency_us / 1e6;
    let ratio = if clients > 0.0 {
        implied / clients
    } else {
        f64::NAN
    };
    Little {
        clients,
        implied,
        ratio,
        holds: (ratio - 1.0).abs() <= 0.10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(threads: f64, tps: f64, p99_us: f64) -> StepPoint {
        StepPoint {
            threads,
            tps,
            lat_us: p99_us,
            p99_us,
        }
    }

    #[test]
    fn sla_parses_and_rejects() {
        assert_eq!(
            parse_sla("p99<5ms").unwrap(),
            Sla {
                percentile: 99.0,
                limit_us: 5000.0
            }
        );
        assert_eq!(parse_sla("p99.9<800us").unwrap().limit_us, 800.0);
        assert_eq!(parse_sla("p50<1s").unwrap().limit_us, 1e6);
        for bad in [
            "99<5ms",
            "p99<5",
            "p99>5ms",
            "p100<5ms",
            "p99<0ms",
            "p99<5 parsecs",
            "",
            "px<1ms",
        ] {
            let e = parse_sla(bad).unwrap_err();
            assert!(e.contains("p99<5ms") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn knee_on_a_saturating_ladder() {
        let pts = [
            pt(1.0, 1000.0, 1000.0),
            pt(2.0, 1900.0, 1100.0),
            pt(4.0, 3500.0, 1300.0),
            pt(8.0, 4000.0, 2500.0),
            pt(16.0, 4100.0, 5000.0),
            pt(32.0, 3900.0, 11000.0),
        ];
        let sla = parse_sla("p99<3ms").unwrap();
        let k = find_knee(&pts, Some(&sla));
        assert_eq!(k.sla_best_threads, Some(8.0));
        assert_eq!(k.saturation_threads, Some(8.0));
        assert!(k.recommendation.contains("near 8"), "{}", k.recommendation);
        assert!(past_knee(&pts));
        assert!(!past_knee(&pts[..4]));
        // From the knee (8 threads, 4000 tps) to the last step (32, 3900): -2.5%.
        assert!((k.after_knee_pct.unwrap() + 2.5).abs() < 1e-9);
        assert_eq!(k.last_threads, Some(32.0));
    }

    #[test]
    fn no_knee_from_two_points_and_a_fall_is_measured() {
        let two = [pt(1.0, 261.0, 1000.0), pt(2.0, 104.0, 5000.0)];
        let k = find_knee(&two, None);
        assert_eq!(k.saturation_threads, None);
        assert!(k.recommendation.contains("too few"), "{}", k.recommendation);
        let three = [
            pt(1.0, 200.0, 1000.0),
            pt(2.0, 261.0, 1100.0),
            pt(4.0, 104.0, 5000.0),
        ];
        let k = find_knee(&three, None);
        assert_eq!(k.saturation_threads, Some(2.0));
        assert!((k.after_knee_pct.unwrap() + 60.15).abs() < 0.01);
    }

    #[test]
    fn rising_ladder_has_no_knee_and_unmet_sla_says_so() {
        let pts = [
            pt(1.0, 100.0, 900.0),
            pt(2.0, 200.0, 900.0),
            pt(4.0, 400.0, 950.0),
        ];
        let k = find_knee(&pts, None);
        assert_eq!(k.saturation_threads, None);
        assert!(k.recommendation.contains("still rising"));
        let k = find_knee(&pts, Some(&parse_sla("p99<5ms").unwrap()));
        assert_eq!(k.sla_best_threads, Some(4.0));
        assert!(
            k.recommendation.contains("every step met the SLA"),
            "{}",
            k.recommendation
        );
        let k = find_knee(&pts, Some(&parse_sla("p99<100us").unwrap()));
        assert_eq!(k.sla_best_threads, None);
        assert!(k.recommendation.contains("no step met the SLA"));
    }

    #[test]
    fn little_law() {
        // 8 clients, 4000 tps, 2 ms each: 8 busy clients.
        let l = little_check(8.0, 4000.0, 2000.0);
        assert!((l.implied - 8.0).abs() < 1e-9 && l.holds);
        let l = little_check(8.0, 2000.0, 2000.0);
        assert!(!l.holds && (l.ratio - 0.5).abs() < 1e-9);
    }
}
