//! The rt series of `watch` (`rt_p50_ms`, `rt_p95_ms`, `rt_p99_ms`): an `rt::Background`
//! capture on a local server's TCP port with one interval per sample tick, its intervals kept
//! for two seconds so each sample reads the tick that ended by its time. The watch sampler's
//! own session is left out by its client port. Each interval also goes into the server's rt
//! metrics ([`super::metrics::Metrics::record_rt`]) as it closes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::rt::capture::Source;
use crate::rt::stats::{Breakdown, IntervalReport};
use crate::rt::{Background, RtPlan, MIN_INTERVAL_NS};

use super::metrics::{rt_bounds_ns, Metrics, ServerLabel};

/// One closed interval, times in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    pub end_unix_ms: f64,
    pub requests: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

impl Tick {
    pub fn of(r: &IntervalReport) -> Tick {
        Tick {
            end_unix_ms: (r.start_unix_s + r.interval_s) * 1e3,
            requests: r.requests,
            p50_ms: r.ttlb_us.p50_us / 1e3,
            p95_ms: r.ttlb_us.p95_us / 1e3,
            p99_ms: r.ttlb_us.p99_us / 1e3,
        }
    }
}

/// The percentiles (p50, p95, p99 in ms) a sample at `t_unix_ms` reads: the last tick that
/// ended by then, unless it is older than two ticks; NaN when there is none or it answered
/// nothing. Pure.
pub fn at(ticks: &VecDeque<Tick>, t_unix_ms: f64, tick_ms: f64) -> (f32, f32, f32) {
    const NONE: (f32, f32, f32) = (f32::NAN, f32::NAN, f32::NAN);
    let Some(t) = ticks
        .iter()
        .rev()
        .find(|k| k.end_unix_ms <= t_unix_ms + 0.5)
    else {
        return NONE;
    };
    if t.end_unix_ms < t_unix_ms - 2.0 * tick_ms || t.requests == 0 {
        return NONE;
    }
    (t.p50_ms as f32, t.p95_ms as f32, t.p99_ms as f32)
}

/// A running capture and the ticks it closed.
pub struct RtFeed {
    _bg: Background,
    ticks: Arc<Mutex<VecDeque<Tick>>>,
    pub tick_ms: f64,
}

impl RtFeed {
    /// Capture the server's `port` on its host, one interval per `1/hz` (at least 10 ms),
    /// leaving out `own_port` (the sampler's TCP session); every interval also into the rt
    /// metrics of `server`.
    pub fn start(
        port: u16,
        hz: f64,
        own_port: Option<u16>,
        metrics: Metrics,
        server: ServerLabel,
    ) -> crate::Result<RtFeed> {
        let interval_ns = ((1e9 / hz.max(0.001)) as u64).max(MIN_INTERVAL_NS);
        let keep = (2e9 / interval_ns as f64).ceil() as usize + 2;
        let plan = RtPlan {
            source: Source::Live {
                interface: None,
                snaplen: 65535,
                buffer_bytes: 32 << 20,
            },
            ports: vec![port],
            interval_ns,
            duration_ns: None,
            breakdown: Breakdown {
                by_command: false,
                top: 0,
            },
            exclude_client_ports: own_port.into_iter().collect(),
            keep_intervals: false,
            ttlb_bounds_ns: rt_bounds_ns(),
        };
        let ticks: Arc<Mutex<VecDeque<Tick>>> = Arc::default();
        let sink = ticks.clone();
        let bg = Background::start(
            plan,
            Box::new(move |r: &IntervalReport| {
                metrics.record_rt(&server, r);
                if let Ok(mut v) = sink.lock() {
                    if v.len() >= keep {
                        v.pop_front();
                    }
                    v.push_back(Tick::of(r));
                }
            }),
        )?;
        Ok(RtFeed {
            _bg: bg,
            ticks,
            tick_ms: interval_ns as f64 / 1e6,
        })
    }

    /// See [`at`].
    pub fn at(&self, t_unix_ms: f64) -> (f32, f32, f32) {
        match self.ticks.lock() {
            Ok(v) => at(&v, t_unix_ms, self.tick_ms),
            Err(_) => (f32::NAN, f32::NAN, f32::NAN),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(end: f64, n: u64, p99: f64) -> Tick {
        Tick {
            end_unix_ms: end,
            requests: n,
            p50_ms: p99 / 2.0,
            p95_ms: p99,
            p99_ms: p99,
        }
    }

    #[test]
    fn a_sample_reads_the_tick_that_ended_by_its_time() {
        let v: VecDeque<Tick> = [t(1000.0, 5, 6.0), t(1010.0, 0, 0.0), t(1020.0, 3, 9.0)].into();
        assert_eq!(at(&v, 1005.0, 10.0).2, 6.0);
        assert!(
            at(&v, 1012.0, 10.0).2.is_nan(),
            "nothing answered in that tick"
        );
        assert_eq!(at(&v, 1020.2, 10.0), (4.5, 9.0, 9.0));
        assert_eq!(at(&v, 1039.0, 10.0).2, 9.0);
        assert!(at(&v, 1041.0, 10.0).2.is_nan(), "stale");
        assert!(at(&v, 990.0, 10.0).2.is_nan(), "before the first tick");
    }
}
