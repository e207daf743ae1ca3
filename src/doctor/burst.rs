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
    /// The SQL series' target rate when it ran below `target_hz` beside the /proc series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_target_hz: Option<f64>,
    /// Server CPU the sampler's session cost, % of one core, measured (`/proc` CPU time of the
    /// server thread serving it) on a local server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_server_measured_pct: Option<f64>,
    /// The server's running threads from /proc (local server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_running: Option<ProcStats>,
}

/// Statistics of the /proc series: threads of the server in state R (all of its threads,
/// background ones included), not the `Threads_running` counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcStats {
    pub source: String,
    pub samples: usize,
    pub target_hz: f64,
    pub achieved_hz: f64,
    pub longest_gap_ms: f64,
    pub running: Dist,
    pub threads_max: f64,
    pub bursts: usize,
    pub longest_burst_ms: f64,
    pub time_above_threshold_pct: f64,
    pub monitor_1s: Dist,
}

/// Runs above `threshold` of a series of (t_ms, value): count, longest (ms), time above (ms).
fn runs_above(p: &[(f64, f64)], threshold: f64) -> (usize, f64, f64) {
    let (mut bursts, mut longest, mut above_ms) = (0usize, 0.0f64, 0.0f64);
    let mut start: Option<f64> = None;
    for (i, &(t, v)) in p.iter().enumerate() {
        let next_t = p.get(i + 1).map(|n| n.0).unwrap_or(t);
        if v > threshold {
            above_ms += next_t - t;
            if start.is_none() {
                bursts += 1;
                start = Some(t);
            }
            longest = longest.max(next_t - start.unwrap_or(t));
        } else {
            start = None;
        }
    }
    (bursts, longest, above_ms)
}

/// The sample nearest each whole second: what a 1 s monitor would have seen.
fn monitor_1s(p: &[(f64, f64)]) -> Vec<f64> {
    let mut mon = Vec::new();
    let Some(last) = p.last() else { return mon };
    let whole = (last.0 / 1e3).floor() as u64;
    for s in 0..=whole {
        let at = s as f64 * 1e3;
        if let Some(n) = p
            .iter()
            .min_by(|a, b| (a.0 - at).abs().total_cmp(&(b.0 - at).abs()))
        {
            mon.push(n.1);
        }
    }
    mon
}

fn longest_gap(t: impl Iterator<Item = f64>) -> f64 {
    let mut prev: Option<f64> = None;
    let mut gap = 0.0f64;
    for x in t {
        if let Some(p) = prev {
            gap = gap.max(x - p);
        }
        prev = Some(x);
    }
    gap
}

fn proc_stats(r: &BurstRecord, threshold: f64, span_s: f64) -> Option<ProcStats> {
    let s = r.proc_running.as_ref()?;
    if s.points.is_empty() {
        return None;
    }
    let series: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.t_ms, p.running as f64))
        .collect();
    let vals: Vec<f64> = series.iter().map(|x| x.1).collect();
    let (bursts, longest, above_ms) = runs_above(&series, threshold);
    let mon = monitor_1s(&series);
    Some(ProcStats {
        source: s.source.clone(),
        samples: s.points.len(),
        target_hz: s.target_hz,
        achieved_hz: s.points.len() as f64 / span_s,
        longest_gap_ms: longest_gap(s.points.iter().map(|p| p.t_ms)),
        running: dist(&vals),
        threads_max: s
            .points
            .iter()
            .map(|p| p.threads as f64)
            .fold(0.0, f64::max),
        bursts,
        longest_burst_ms: longest,
        time_above_threshold_pct: above_ms / (span_s * 1e3) * 100.0,
        monitor_1s: dist(&mon),
    })
}

/// None without samples, and for a window stopped before its second sample: rates over a
/// window shorter than one sampling period are not measurements (seen: "2416 Hz achieved of
/// 100" for a doctor window cut short after 0.4 ms).
pub fn stats(r: &BurstRecord, cores: f64) -> Option<BurstStats> {
    let p = &r.points;
    if p.is_empty() || (r.interrupted && p.len() < 2) {
        return None;
    }
    let span_s = (p.last()?.t_ms / 1e3).max(r.window_s).max(1e-9);
    let running: Vec<f64> = p.iter().map(|x| x.threads_running as f64).collect();
    let series: Vec<(f64, f64)> = p
        .iter()
        .map(|x| (x.t_ms, x.threads_running as f64))
        .collect();
    let threshold = cores.max(1.0);
    let (bursts, longest, above_ms) = runs_above(&series, threshold);
    let mon = monitor_1s(&series);
    let achieved_hz = p.len() as f64 / span_s;
    Some(BurstStats {
        sampler_server_pct: r.query_p50_us * achieved_hz / 1e4,
        samples: p.len(),
        target_hz: r.target_hz,
        achieved_hz,
        longest_gap_ms: longest_gap(p.iter().map(|x| x.t_ms)),
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
        sql_target_hz: r.sql_hz,
        sampler_server_measured_pct: r
            .server_session_cpu_ns
            .map(|ns| ns as f64 / (span_s * 1e9) * 100.0),
        proc_running: proc_stats(r, threshold, span_s),
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
            sql_hz: None,
            proc_running: None,
            server_session_cpu_ns: None,
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
    fn the_proc_series_has_its_own_rate_gap_and_bursts() {
        use crate::server::snapshot::{ProcPoint, ProcSeries};
        // SQL at 10 Hz (30 samples over 3 s); /proc at 100 Hz with one 30 ms burst of 9 and a
        // 50 ms hole in the middle.
        let mut r = rec(&[1; 30], 100.0);
        r.sql_hz = Some(10.0);
        r.server_session_cpu_ns = Some(15_000_000);
        let points: Vec<ProcPoint> = (0..300)
            .filter(|i| !(150..155).contains(i))
            .map(|i| ProcPoint {
                t_ms: i as f64 * 10.0,
                running: if (120..123).contains(&i) { 9 } else { 1 },
                threads: 30,
            })
            .collect();
        r.proc_running = Some(ProcSeries {
            source: "test".into(),
            pid: 1,
            target_hz: 100.0,
            points,
        });
        let s = stats(&r, 2.0).unwrap();
        assert_eq!(s.samples, 30);
        assert!((s.achieved_hz - 10.0).abs() < 0.5, "{}", s.achieved_hz);
        assert_eq!(s.longest_gap_ms, 100.0);
        assert_eq!(s.sql_target_hz, Some(10.0));
        assert!((s.sampler_server_measured_pct.unwrap() - 0.5).abs() < 0.01);
        let p = s.proc_running.unwrap();
        assert_eq!(p.samples, 295);
        assert!((p.achieved_hz - 98.3).abs() < 0.5, "{}", p.achieved_hz);
        assert_eq!(p.longest_gap_ms, 60.0);
        assert_eq!((p.bursts, p.longest_burst_ms), (1, 30.0));
        assert_eq!(p.running.max, 9.0);
        assert_eq!(p.threads_max, 30.0);
        // A 1 s monitor misses the burst.
        assert_eq!(p.monitor_1s.max, 1.0);
    }

    #[test]
    fn an_old_snapshot_without_the_new_fields_still_reads() {
        let old = r#"{"target_hz":100.0,"window_s":0.02,"points":[{"t_ms":0.0,"threads_running":1,
            "threads_connected":2,"questions":0,"row_lock_waits":0}],"sampler_cpu_ns":5,
            "query_p50_us":600.0,"interrupted":false}"#;
        let r: BurstRecord = serde_json::from_str(old).unwrap();
        assert!(r.proc_running.is_none() && r.sql_hz.is_none());
        let s = stats(&r, 2.0).unwrap();
        assert!(s.proc_running.is_none() && s.sampler_server_measured_pct.is_none());
    }

    #[test]
    fn empty_record_has_no_stats() {
        assert!(stats(&rec(&[], 10.0), 2.0).is_none());
    }

    #[test]
    fn a_window_stopped_before_its_second_sample_has_no_rates() {
        let mut r = rec(&[3], 10.0);
        r.window_s = 0.0004;
        r.interrupted = true;
        assert!(stats(&r, 2.0).is_none());
        // Not stopped (a window of one sample by design), or two samples: figures.
        r.interrupted = false;
        assert!(stats(&r, 2.0).is_some());
        let mut r = rec(&[3, 4], 10.0);
        r.interrupted = true;
        assert_eq!(stats(&r, 2.0).unwrap().samples, 2);
    }
}
