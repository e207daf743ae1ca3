//! `spinscope rt`: the server's own response times from packets on its host. [`capture`]
//! reads TCP segments of the server's ports (libpcap, kernel-side filter), [`proto`] turns them
//! into request/response exchanges (pure state machine), [`stats`] aggregates each interval
//! into percentiles (pure), [`render`] prints them (pure). [`run`] is the engine the CLI,
//! `doctor --rt` and `watch` call.

pub mod capture;
pub mod compressed;
pub mod fingerprint;
pub mod follow;
pub mod proto;
pub mod render;
pub mod stats;
pub mod sync;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use capture::{Next, Packets, Source};
use proto::Tracker;
use stats::{Breakdown, CaptureCounts, IntervalReport, Window, SCHEMA};

/// An answer whose end only a direction change shows (TLS, compressed) is closed after this
/// much silence.
pub const IDLE_NS: u64 = 200_000_000;
/// Shortest interval.
pub const MIN_INTERVAL_NS: u64 = 10_000_000;

/// What to capture and how to report it.
#[derive(Clone, Debug)]
pub struct RtPlan {
    pub source: Source,
    pub ports: Vec<u16>,
    pub interval_ns: u64,
    /// Stop after this long (capture clock); `None`: until stopped or the file ends.
    pub duration_ns: Option<u64>,
    pub breakdown: Breakdown,
    /// Client ports left out in the kernel filter (the caller's own session: doctor's and
    /// watch's samplers would otherwise be timed with the server's clients).
    pub exclude_client_ports: Vec<u16>,
    /// Keep every interval in the `RunReport` (false for a capture that runs for days:
    /// `watch` reads them as they close).
    pub keep_intervals: bool,
    /// Rising upper bounds (ns) to count each interval's answered requests into
    /// ([`stats::TtlbBuckets`], for watch's Prometheus histogram); empty: none.
    pub ttlb_bounds_ns: Vec<u64>,
}

// The run's document (`rt --save`) is plain types beside the interval's, in `stats`.
pub use stats::{RunReport, TrackerTotals, Truncation};

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Capture and report until the duration passes, `stop` is set, or the file ends; each
/// finished interval goes to `on_interval` as it closes.
pub fn run(
    plan: &RtPlan,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<RunReport> {
    let pk = open(plan)?;
    run_open(pk, plan, stop, on_interval)
}

fn open(plan: &RtPlan) -> Result<Packets> {
    let timeout_ms = (plan.interval_ns / 4_000_000).clamp(1, 100) as i32;
    Packets::open(
        &plan.source,
        &plan.ports,
        &plan.exclude_client_ports,
        timeout_ms,
    )
}

/// A capture running on its own thread (`doctor --rt`, `watch`): the capture is open when
/// [`Background::start`] returns, so a missing permission is an error at once.
pub struct Background {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<RunReport>>>,
}

impl Background {
    /// Open the capture and run it on a new thread; each finished interval goes to
    /// `on_interval` on that thread.
    pub fn start(
        plan: RtPlan,
        mut on_interval: Box<dyn FnMut(&IntervalReport) + Send>,
    ) -> Result<Background> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("rt-capture".into())
            .spawn(move || {
                let pk = match open(&plan) {
                    Ok(p) => {
                        let _ = tx.send(None);
                        p
                    }
                    Err(e) => {
                        let _ = tx.send(Some(e));
                        return Err(Error::runtime("the capture did not open"));
                    }
                };
                run_open(pk, &plan, &flag, &mut *on_interval)
            })
            .map_err(|e| Error::runtime(format!("starting the capture thread: {e}")))?;
        match rx.recv() {
            Ok(None) => Ok(Background {
                stop,
                handle: Some(handle),
            }),
            Ok(Some(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => Err(Error::runtime("the capture thread ended before it opened")),
        }
    }

    /// Stop the capture and return the run (the last, partial interval included in the total).
    pub fn finish(mut self) -> Result<RunReport> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            _ => Err(Error::runtime("the capture thread failed")),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// [`run`] over a capture already open.
fn run_open(
    mut pk: Packets,
    plan: &RtPlan,
    stop: &AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalReport),
) -> Result<RunReport> {
    let live = matches!(plan.source, Source::Live { .. });
    let mut tracker = Tracker::new();
    let mut events = Vec::new();
    let mut start: Option<u64> = live.then(wall_ns);
    let mut win =
        Window::new(start.unwrap_or(0), plan.breakdown).with_ttlb_bounds(&plan.ttlb_bounds_ns);
    let mut total =
        Window::new(start.unwrap_or(0), plan.breakdown).with_ttlb_bounds(&plan.ttlb_bounds_ns);
    let mut intervals = Vec::new();
    let mut last_counts = CaptureCounts::default();
    let mut now = start.unwrap_or(0);
    let mut truncated = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let ended = match pk.next_packet()? {
            Next::Segment(s) => {
                now = now.max(s.ts_ns);
                if start.is_none() {
                    start = Some(s.ts_ns);
                    win.restart(s.ts_ns);
                    total.restart(s.ts_ns);
                }
                tracker.segment(&s, &mut events);
                false
            }
            Next::Other => false,
            Next::Timeout => {
                now = now.max(wall_ns());
                false
            }
            Next::End => true,
            Next::Truncated(why) => {
                truncated = Some(Truncation {
                    after_packets: pk.packets,
                    why,
                });
                true
            }
        };
        for e in events.drain(..) {
            win.event(&e);
        }
        let Some(t0) = start else {
            if ended {
                break;
            }
            continue;
        };
        let over = plan.duration_ns.is_some_and(|d| now >= t0 + d);
        let end_of_win = win.start_ns() + plan.interval_ns;
        if now >= end_of_win || over || ended {
            let cut = if now >= end_of_win { end_of_win } else { now };
            tracker.flush(cut, IDLE_NS, &mut events);
            for e in events.drain(..) {
                win.event(&e);
            }
            let counts = pk.counts();
            let delta = CaptureCounts {
                received: counts.received.saturating_sub(last_counts.received),
                dropped: counts.dropped.saturating_sub(last_counts.dropped),
                if_dropped: counts.if_dropped.saturating_sub(last_counts.if_dropped),
            };
            last_counts = counts;
            if cut > win.start_ns() {
                let r = win.report(cut, "interval", delta);
                on_interval(&r);
                if plan.keep_intervals {
                    intervals.push(r);
                }
                total.absorb(&win);
            }
            // The next window starts at the boundary; after a long gap (a file), at `now`.
            let next = if now >= end_of_win + plan.interval_ns {
                now
            } else {
                cut
            };
            win.restart(next);
            if over || ended {
                break;
            }
        }
    }
    tracker.finish(&mut events);
    for e in events.drain(..) {
        win.event(&e);
    }
    total.absorb(&win);
    let end = now.max(total.start_ns());
    let counts = pk.counts();
    let c = &tracker.counters;
    Ok(RunReport {
        schema: SCHEMA.to_string(),
        kind: "run".to_string(),
        source: pk.name.clone(),
        ports: plan.ports.clone(),
        filter: capture::filter_for(&plan.ports, &plan.exclude_client_ports),
        intervals,
        total: total.report(end, "total", counts),
        tracker: TrackerTotals {
            segments: c.segments,
            connections_seen: c.connections_seen,
            handshakes: c.handshakes,
            encrypted_connections: c.encrypted_connections,
            compressed_connections: c.compressed_connections,
            unreadable_connections: c.unreadable_connections,
            resyncs: c.resyncs,
        },
        server: None,
        truncated,
    })
}
