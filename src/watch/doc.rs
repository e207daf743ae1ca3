//! The documents a watch capture writes, as plain serde types: `capture.json`
//! (`spinscope.watch-capture/1`) and the lines of `watch.log`; and the pure builders of their
//! peaks and points from the sampler's ring. Writing them, and the capture directories, is
//! `watch::capture`'s. Reachable as `crate::doc::watch`.

use serde::{Deserialize, Serialize};

use super::ring::Sample;
use super::trigger::Fired;

pub const CAPTURE_SCHEMA: &str = "spinscope.watch-capture/1";

/// Peak values of a capture's samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    pub threads_running: u32,
    pub threads_connected: u32,
    pub qps: f64,
    pub row_lock_waits: u32,
    pub rtt_ms: f64,
    /// The server's threads in state R from /proc (local servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<u32>,
    /// Highest rt p99 (time to last byte) of a tick, when rt ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_p99_ms: Option<f64>,
}

pub fn peaks(v: &[Sample]) -> Peaks {
    let mut p = Peaks::default();
    for s in v {
        if s.running != super::ring::NO_PROC {
            p.running = Some(p.running.unwrap_or(0).max(s.running));
        }
        p.threads_running = p.threads_running.max(s.threads_running);
        p.threads_connected = p.threads_connected.max(s.threads_connected);
        p.qps = p.qps.max(s.qps);
        p.row_lock_waits = p.row_lock_waits.max(s.row_lock_waits);
        p.rtt_ms = p.rtt_ms.max(s.rtt_us as f64 / 1e3);
        if !s.rt_p99_ms.is_nan() {
            p.rt_p99_ms = Some(p.rt_p99_ms.unwrap_or(0.0).max(s.rt_p99_ms as f64));
        }
    }
    p
}

/// One sample in a capture: time relative to the trigger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturePoint {
    pub t_ms: f64,
    pub threads_running: u32,
    pub threads_connected: u32,
    pub qps: f64,
    pub row_lock_waits: u32,
    pub rtt_us: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_busy_pct: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_pct: Option<f32>,
    /// The server's threads in state R from /proc at this tick (local servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<u32>,
    /// The SQL fields (threads_running to rtt_us) repeat the last read, taken at an earlier
    /// tick (local servers read them at `sql_hz`, below `hz`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// The server's response time percentiles of the tick from packets (rt triggers only;
    /// absent when nothing was answered in the tick).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_p50_ms: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_p95_ms: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_p99_ms: Option<f32>,
}

/// `capture.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureDoc {
    pub schema: String,
    pub server: String,
    pub target: String,
    pub fired_at: String,
    pub fired_at_unix_ms: f64,
    pub trigger: Fired,
    pub cores: f64,
    pub hz: f64,
    /// The SQL counters' rate when lower than `hz` (local servers: the /proc count at `hz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_hz: Option<f64>,
    /// Where each series of the samples comes from, at which rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<String>,
    pub history_s: f64,
    pub after_s: f64,
    pub peaks: Peaks,
    pub samples_before: usize,
    pub samples_after: usize,
    pub samples: Vec<CapturePoint>,
    pub files: Vec<String>,
    pub notes: Vec<String>,
    /// The bursts that began in this capture's window, each with what became of it so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bursts: Vec<super::ledger::BurstDoc>,
    /// The host's statistics once a second through the window (local servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub os_seconds: Vec<super::osstat::OsSecond>,
    /// The server's process list once a second from the trigger to the end of the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processlists: Vec<super::osstat::ProcessList>,
}

/// One line of `watch.log`: a trigger event (`trigger` with `dir` or `skipped`), a burst
/// (`burst`: every burst, with what became of it) or a server's burst counts when watch stops
/// (`bursts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub time: String,
    pub server: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trigger: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<super::ledger::BurstDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bursts: Option<super::ledger::Counts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peaks: Option<Peaks>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

pub fn points(v: &[Sample], fired_ms: f64) -> Vec<CapturePoint> {
    let opt = |x: f32| (!x.is_nan()).then_some(x);
    v.iter()
        .map(|s| CapturePoint {
            t_ms: ((s.t_ms - fired_ms) * 10.0).round() / 10.0,
            threads_running: s.threads_running,
            threads_connected: s.threads_connected,
            qps: s.qps.round(),
            row_lock_waits: s.row_lock_waits,
            rtt_us: s.rtt_us.round(),
            host_busy_pct: opt(s.host_busy_pct),
            server_cpu_pct: opt(s.server_cpu_pct),
            running: (s.running != super::ring::NO_PROC).then_some(s.running),
            held: s.held,
            rt_p50_ms: opt(s.rt_p50_ms),
            rt_p95_ms: opt(s.rt_p95_ms),
            rt_p99_ms: opt(s.rt_p99_ms),
        })
        .collect()
}
