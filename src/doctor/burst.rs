//! Statistics of the burst sampler's record: distribution, bursts above the core count, the
//! rate really achieved and the longest gap, and what a 1 s monitor would have seen. Pure.

use serde::{Deserialize, Serialize};

use crate::server::snapshot::BurstRecord;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

fn dist(v: &[f64]) -> Dist {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| {
        if s.is_empty() {
            0.0
        } else {
            crate::analysis::stats::quantile_sorted(&s, p)
        }
    };
    Dist {
        p50: q(0.5),
        p99: q(0.99),
        max: s.last().copied().unwrap_or(0.0),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstStats {
    pub samples: usize,
    pub target_hz: f64,
    pub achieved_hz: f64,
    pub longest_gap_ms: f64,
    pub window_s: f64,
    pub threads_running: Dist,
    pub threads_connected_max: f64,
    pub questions_per_s: f64,
    pub row_lock_waits_max: f64,
    /// The threshold bursts are counted above (the core count).
    pub burst_threshold: f64,
    pub bursts: usize,
    pub longest_burst_ms: f64,
    pub time_above_threshold_pct: f64,
    /// What a monitor polling once per second would have seen (the sample nearest each
    /// whole second).
    pub monitor_1s: Dist,
    pub monitor_1s_samples: usize,
    /// Client CPU of the sampling thread, % of one core over the window.
    pub sampler_cpu_pct: f64,
    pub sampler_query_p50_us: f64,
    /// Upper bound of the sampler's cost on the server, % of one core: the query's round
    /// trip (p50) times the rate achieved.
    #[serde(default)]
    pub sampler_server_pct: f64,
    pub interrupted: bool,
}

pub fn stats(r: &BurstRecord, cores: f64) -> Option<BurstStats> {
    let p = &r.points;
    if p.is_empty() {
        return None;
    }
    let span_s = (p.last()?.t_ms / 1e3).max(r.window_s).max(1e-9);
    let running: Vec<f64> = p.iter().map(|x| x.threads_running as f64).collect();
    let longest_gap_ms = p
        .windows(2)
        .map(|w| w[1].t_ms - w[0].t_ms)
        .fold(0.0, f64::max);
    let threshold = cores.max(1.0);
    let (mut bursts, mut longest, mut above_ms) = (0usize, 0.0f64, 0.0f64);
    let mut start: Option<f64> = None;
    for (i, x) in p.iter().enumerate() {
        let next_t = p.get(i + 1).map(|n| n.t_ms).unwrap_or(x.t_ms);
        if x.threads_running as f64 > threshold {
            above_ms += next_t - x.t_ms;
            if start.is_none() {
                bursts += 1;
                start = Some(x.t_ms);
            }
            longest = longest.max(next_t - start.unwrap_or(x.t_ms));
        } else {
            start = None;
        }
    }
    let mut mon = Vec::new();
    let whole = (p.last()?.t_ms / 1e3).floor() as u64;
    for s in 0..=whole {
        let at = s as f64 * 1e3;
        if let Some(n) = p
            .iter()
            .min_by(|a, b| (a.t_ms - at).abs().total_cmp(&(b.t_ms - at).abs()))
        {
            mon.push(n.threads_running as f64);
        }
    }
    let achieved_hz = p.len() as f64 / span_s;
    Some(BurstStats {
        sampler_server_pct: r.query_p50_us * achieved_hz / 1e4,
        samples: p.len(),
        target_hz: r.target_hz,
        achieved_hz,
        longest_gap_ms,
        window_s: span_s,
        threads_running: dist(&running),
        threads_connected_max: p
            .iter()
            .map(|x| x.threads_connected as f64)
            .fold(0.0, f64::max),
        questions_per_s: p.last()?.questions as f64 / span_s,
        row_lock_waits_max: p
            .iter()
            .map(|x| x.row_lock_waits as f64)
            .fold(0.0, f64::max),
        burst_threshold: threshold,
        bursts,
        longest_burst_ms: longest,
        time_above_threshold_pct: above_ms / (span_s * 1e3) * 100.0,
        monitor_1s: dist(&mon),
        monitor_1s_samples: mon.len(),
        sampler_cpu_pct: r.sampler_cpu_ns as f64 / (span_s * 1e9) * 100.0,
        sampler_query_p50_us: r.query_p50_us,
        interrupted: r.interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::BurstPoint;

    fn rec(running: &[u64], step_ms: f64) -> BurstRecord {
        BurstRecord {
            target_hz: 100.0,
            window_s: running.len() as f64 * step_ms / 1e3,
            points: running
                .iter()
                .enumerate()
                .map(|(i, &r)| BurstPoint {
                    t_ms: i as f64 * step_ms,
                    threads_running: r,
                    threads_connected: 10,
                    questions: i as u64 * 5,
                    row_lock_waits: 0,
                })
                .collect(),
            sampler_cpu_ns: 10_000_000,
            query_p50_us: 80.0,
            interrupted: false,
        }
    }

    #[test]
    fn bursts_between_seconds_are_invisible_to_a_1s_monitor() {
        // 300 samples at 10 ms: a 50 ms burst of 40 in the middle of each second.
        let v: Vec<u64> = (0..300)
            .map(|i| if i % 100 >= 45 && i % 100 < 50 { 40 } else { 1 })
            .collect();
        let s = stats(&rec(&v, 10.0), 2.0).unwrap();
        assert_eq!(s.bursts, 3);
        assert!((s.longest_burst_ms - 50.0).abs() < 1e-9);
        assert_eq!(s.threads_running.max, 40.0);
        assert_eq!(s.monitor_1s.max, 1.0);
        assert!((s.achieved_hz - 100.0).abs() < 1.0);
        assert_eq!(s.longest_gap_ms, 10.0);
        assert!((s.sampler_cpu_pct - 1.0 / 3.0).abs() < 0.01);
    }

    #[test]
    fn empty_record_has_no_stats() {
        assert!(stats(&rec(&[], 10.0), 2.0).is_none());
    }
}
