//! The per-server ring buffer of samples and what is derived from it (the series a trigger
//! reads, the capture's record, the rate achieved and the longest gap). Pure.
//!
//! Memory bound: a ring holds at most `(history + after + 1) * hz` samples of
//! `size_of::<Sample>()` (72) bytes: 30 s + 5 s + 1 s at 100 Hz is 3,600 samples, 259.2 KB per
//! server; a capture copies that once while it is written.
//!
//! On a local server a sample is taken at every tick of `--hz`: the /proc count (`running`)
//! is new in each, the SQL counters only at every n-th (`--sql-hz`); in between they hold the
//! last read (`held`), and the SQL series (triggers, histograms, the burst record) take only the
//! samples that read them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::trigger::{Point, Series};
use crate::server::snapshot::{BurstPoint, BurstRecord, ProcPoint, ProcSeries};

/// One sample of one server (the sampler's own session and statements already removed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Milliseconds on the watch clock (since watch started).
    pub t_ms: f64,
    pub threads_running: u32,
    pub threads_connected: u32,
    /// Questions per second since the previous sample.
    pub qps: f64,
    pub row_lock_waits: u32,
    /// Round trip of the sampling query, microseconds.
    pub rtt_us: f32,
    /// Questions since the server's sampler connected (own statements removed).
    pub questions: u64,
    /// Host CPU busy and the server process's CPU (percent of one core), when local; NaN else.
    pub host_busy_pct: f32,
    pub server_cpu_pct: f32,
    /// The server's threads in state R from /proc ([`NO_PROC`] when not counted).
    pub running: u32,
    /// The server's threads in all at that /proc count (0 when not counted).
    pub threads: u16,
    /// The SQL fields repeat the last read (taken at an earlier tick).
    pub held: bool,
    /// The server's response times (time to last byte, ms) from packets over the requests
    /// answered in this sample's tick; NaN when nothing was answered or rt is not running.
    pub rt_p50_ms: f32,
    pub rt_p95_ms: f32,
    pub rt_p99_ms: f32,
}

/// `Sample::running` when the /proc series does not run (remote server).
pub const NO_PROC: u32 = u32::MAX;

impl Sample {
    pub fn get(&self, s: Series) -> f64 {
        match s {
            Series::ThreadsRunning => self.threads_running as f64,
            Series::ThreadsConnected => self.threads_connected as f64,
            Series::Qps => self.qps,
            Series::RowLockWaits => self.row_lock_waits as f64,
            Series::RttMs => self.rtt_us as f64 / 1e3,
            Series::Running => self.running as f64,
            Series::RtP50Ms => self.rt_p50_ms as f64,
            Series::RtP95Ms => self.rt_p95_ms as f64,
            Series::RtP99Ms => self.rt_p99_ms as f64,
        }
    }

    /// Whether this sample measured `s` (not a held SQL value, not a missing /proc count; the
    /// rt series are fresh every tick, NaN when nothing was answered: the evaluator reads that).
    pub fn has(&self, s: Series) -> bool {
        match s {
            Series::Running => self.running != NO_PROC,
            Series::RtP50Ms | Series::RtP95Ms | Series::RtP99Ms => true,
            _ => !self.held,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Ring {
    cap: usize,
    buf: VecDeque<Sample>,
}

impl Ring {
    /// A ring for `seconds` at `hz` (at least 16 samples).
    pub fn new(seconds: f64, hz: f64) -> Ring {
        let cap = ((seconds * hz).ceil() as usize).max(16);
        Ring {
            cap,
            buf: VecDeque::with_capacity(cap),
        }
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn push(&mut self, s: Sample) {
        if self.buf.len() == self.cap {
            self.buf.pop_front();
        }
        self.buf.push_back(s);
    }
    pub fn last(&self) -> Option<&Sample> {
        self.buf.back()
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Sample> + '_ {
        self.buf.iter()
    }
    /// One series as trigger points, oldest first (the samples that measured it).
    pub fn series(&self, s: Series) -> impl Iterator<Item = Point> + '_ {
        self.buf
            .iter()
            .filter(move |x| x.has(s))
            .map(move |x| Point {
                t_ms: x.t_ms,
                value: x.get(s),
            })
    }
    /// Samples with `from_ms <= t_ms <= to_ms`, copied.
    pub fn between(&self, from_ms: f64, to_ms: f64) -> Vec<Sample> {
        self.buf
            .iter()
            .filter(|x| x.t_ms >= from_ms && x.t_ms <= to_ms)
            .copied()
            .collect()
    }
    /// (samples per second, longest gap in ms) over the last `window_ms`, of every sample
    /// (`sql_only` false) or of the samples that read the SQL counters.
    pub fn rate_and_gap(&self, now_ms: f64, window_ms: f64, sql_only: bool) -> (f64, f64) {
        let from = now_ms - window_ms;
        let mut n = 0usize;
        let mut gap = 0.0f64;
        let mut prev: Option<f64> = None;
        let mut first = None;
        for x in self
            .buf
            .iter()
            .filter(|x| x.t_ms >= from && !(sql_only && x.held))
        {
            n += 1;
            first.get_or_insert(x.t_ms);
            if let Some(p) = prev {
                gap = gap.max(x.t_ms - p);
            }
            prev = Some(x.t_ms);
        }
        let span = first.map_or(0.0, |f| now_ms - f).max(1.0);
        (n as f64 / (span / 1e3), gap)
    }
}

/// Samples as the burst sampler's record (times from the first sample, Questions counted from
/// it), so `doctor --snapshot` analyses a capture's history like its own window: the SQL
/// points from the samples that read them, the /proc series from every sample that has one;
/// `proc` is (server pid, how it was counted, the SQL counters' rate beside it).
pub fn to_burst_record(
    samples: &[Sample],
    target_hz: f64,
    sampler_cpu_ns: u64,
    proc: Option<(u32, &str, f64)>,
) -> BurstRecord {
    let t0 = samples.first().map_or(0.0, |s| s.t_ms);
    let sql: Vec<&Sample> = samples.iter().filter(|s| !s.held).collect();
    let q0 = sql.first().map_or(0, |s| s.questions);
    let mut rtts: Vec<f64> = sql.iter().map(|s| s.rtt_us as f64).collect();
    rtts.sort_by(f64::total_cmp);
    let proc_points: Vec<ProcPoint> = samples
        .iter()
        .filter(|s| s.running != NO_PROC)
        .map(|s| ProcPoint {
            t_ms: s.t_ms - t0,
            running: s.running,
            threads: u32::from(s.threads),
        })
        .collect();
    let window_s = samples.last().map_or(0.0, |s| (s.t_ms - t0) / 1e3);
    let proc_running = match proc {
        Some((pid, source, _)) if !proc_points.is_empty() => Some(ProcSeries {
            source: source.to_string(),
            pid,
            target_hz,
            points: proc_points,
        }),
        _ => None,
    };
    BurstRecord {
        target_hz,
        window_s,
        sql_hz: proc
            .filter(|_| proc_running.is_some())
            .map(|(_, _, hz)| hz)
            .filter(|hz| *hz < target_hz),
        points: sql
            .iter()
            .map(|s| BurstPoint {
                t_ms: s.t_ms - t0,
                threads_running: s.threads_running as u64,
                threads_connected: s.threads_connected as u64,
                questions: s.questions.saturating_sub(q0),
                row_lock_waits: s.row_lock_waits as u64,
            })
            .collect(),
        sampler_cpu_ns,
        query_p50_us: rtts.get(rtts.len() / 2).copied().unwrap_or(0.0),
        interrupted: false,
        proc_running,
        server_session_cpu_ns: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: f64, r: u32) -> Sample {
        Sample {
            t_ms: t,
            threads_running: r,
            threads_connected: 3,
            qps: 0.0,
            row_lock_waits: 0,
            rtt_us: 100.0,
            questions: t as u64,
            host_busy_pct: f32::NAN,
            server_cpu_pct: f32::NAN,
            running: NO_PROC,
            threads: 0,
            held: false,
            rt_p50_ms: f32::NAN,
            rt_p95_ms: f32::NAN,
            rt_p99_ms: f32::NAN,
        }
    }

    #[test]
    fn ring_keeps_the_newest_and_is_bounded() {
        let mut r = Ring::new(1.0, 100.0);
        assert_eq!(r.capacity(), 100);
        for i in 0..250 {
            r.push(s(i as f64 * 10.0, i));
        }
        assert_eq!(r.len(), 100);
        assert_eq!(r.iter().next().unwrap().threads_running, 150);
        assert_eq!(r.between(2000.0, 2100.0).len(), 11);
        let (hz, gap) = r.rate_and_gap(2490.0, 1000.0, false);
        assert!((hz - 100.0).abs() < 2.0, "{hz}");
        assert_eq!(gap, 10.0);
    }

    #[test]
    fn a_sample_is_72_bytes_as_the_memory_bound_says() {
        assert_eq!(std::mem::size_of::<Sample>(), 72);
    }

    #[test]
    fn burst_record_starts_at_zero() {
        let v: Vec<Sample> = (5..10).map(|i| s(i as f64 * 10.0, i)).collect();
        let b = to_burst_record(&v, 100.0, 7, None);
        assert_eq!(b.points[0].t_ms, 0.0);
        assert_eq!(b.points[0].questions, 0);
        assert_eq!(b.points[4].questions, 40);
        assert_eq!(b.points[4].threads_running, 9);
        assert_eq!(b.window_s, 0.04);
        let st = crate::doctor::burst::stats(&b, 2.0).unwrap();
        assert_eq!(st.samples, 5);
    }

    #[test]
    fn a_local_record_keeps_the_sql_reads_apart_from_the_proc_counts() {
        // 100 Hz ticks, SQL read at every 10th; the others hold its values.
        let v: Vec<Sample> = (0..30)
            .map(|i| Sample {
                running: i % 3,
                threads: 12,
                held: i % 10 != 0,
                ..s(i as f64 * 10.0, 7)
            })
            .collect();
        let mut r = Ring::new(1.0, 100.0);
        v.iter().for_each(|x| r.push(*x));
        assert_eq!(r.series(Series::ThreadsRunning).count(), 3);
        assert_eq!(r.series(Series::Running).count(), 30);
        let (sql_hz, sql_gap) = r.rate_and_gap(300.0, 1000.0, true);
        assert!((sql_hz - 10.0).abs() < 1.0, "{sql_hz}");
        assert_eq!(sql_gap, 100.0);
        let b = to_burst_record(&v, 100.0, 0, Some((42, "from /proc", 10.0)));
        assert_eq!(b.points.len(), 3);
        assert_eq!(b.points[1].t_ms, 100.0);
        let p = b.proc_running.as_ref().expect("the /proc series");
        assert_eq!((p.pid, p.points.len(), p.points[2].running), (42, 30, 2));
        assert_eq!(p.points[2].threads, 12);
        assert_eq!(b.sql_hz, Some(10.0));
        let st = crate::doctor::burst::stats(&b, 2.0).unwrap();
        assert_eq!(st.samples, 3);
        assert_eq!(st.proc_running.expect("proc stats").samples, 30);
    }
}
