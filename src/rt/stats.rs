//! Per-interval aggregation of exchanges into HdrHistogram percentiles, by command type and by
//! statement fingerprint, and the `spinscope.rt/1` documents. Pure: timestamps come in as
//! values.

use std::collections::{BTreeMap, HashMap};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::fingerprint::fingerprint;
use super::proto::{Command, Event};

pub const SCHEMA: &str = "spinscope.rt/1";

/// Percentiles of one time, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Percentiles {
    /// No request was timed: every figure is the 0 of `Default` (a timed request is at least
    /// 1 ns, so a real p50 is above 0).
    pub fn is_empty(&self) -> bool {
        *self == Percentiles::default()
    }
}

/// An interval without requests has no percentiles, not percentiles of 0 us: written as null,
/// read back (null, or an older document's zeros) as the empty default.
pub mod empty_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Percentiles;

    pub fn serialize<S: Serializer>(p: &Percentiles, s: S) -> Result<S::Ok, S::Error> {
        if p.is_empty() {
            s.serialize_none()
        } else {
            s.serialize_some(p)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Percentiles, D::Error> {
        Ok(Option::<Percentiles>::deserialize(d)?.unwrap_or_default())
    }
}

/// Requests of one kind (a command type or a fingerprint) in an interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The command name (`COM_QUERY`, ..., `unknown`) or the statement fingerprint.
    pub key: String,
    pub requests: u64,
    pub ttfb_us: Percentiles,
    pub ttlb_us: Percentiles,
    /// Sum of time to last byte, milliseconds (ranks the statements by the time they cost).
    pub total_ttlb_ms: f64,
}

/// Packet capture counters over the interval (from the kernel, via libpcap).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureCounts {
    pub received: u64,
    pub dropped: u64,
    pub if_dropped: u64,
}

/// One interval's report (also the whole run's, with `kind: "total"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    pub schema: String,
    /// `interval` or `total`.
    pub kind: String,
    /// Start of the interval, seconds since the Unix epoch (capture clock).
    pub start_unix_s: f64,
    pub interval_s: f64,
    /// Answered requests.
    pub requests: u64,
    pub rate_per_s: f64,
    /// Answers that were ERR packets (readable connections only).
    pub errors: u64,
    /// Commands the server does not answer (COM_STMT_CLOSE, COM_QUIT), not in the percentiles.
    pub no_response: u64,
    /// Requests left unanswered by a closed or reset connection (a killed client, ...).
    pub abandoned: u64,
    /// Time to first byte of the answer (null when no request was answered).
    #[serde(with = "empty_as_null")]
    pub ttfb_us: Percentiles,
    /// Time to last byte of the answer (null when no request was answered).
    #[serde(with = "empty_as_null")]
    pub ttlb_us: Percentiles,
    pub by_command: Vec<Group>,
    /// The statements that cost the most time (unencrypted COM_QUERY), top N.
    pub top_statements: Vec<Group>,
    pub capture: CaptureCounts,
    /// False when the kernel dropped packets: percentiles over an incomplete capture.
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Answered requests by time to last byte, when the plan named bounds
    /// ([`super::RtPlan::ttlb_bounds_ns`]); not in the documents.
    #[serde(skip)]
    pub ttlb_buckets: Option<TtlbBuckets>,
    /// The server rt followed (`--pid`, connection flags): its ports, and its clients on the
    /// Unix socket, which are not on the wire. On the total only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::follow::Followed>,
}

/// Totals of the protocol tracker over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrackerTotals {
    pub segments: u64,
    pub connections_seen: u64,
    pub handshakes: u64,
    pub encrypted_connections: u64,
    pub compressed_connections: u64,
    /// Joined mid-stream and not readable as commands (compressed or cut): timed by
    /// direction, command unknown.
    #[serde(default)]
    pub unreadable_connections: u64,
    pub resyncs: u64,
}

/// The whole run: `--save` writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub schema: String,
    /// Always `run`.
    pub kind: String,
    /// The interface (or file) read.
    pub source: String,
    pub ports: Vec<u16>,
    pub filter: String,
    pub intervals: Vec<IntervalReport>,
    pub total: IntervalReport,
    pub tracker: TrackerTotals,
    /// The server rt followed (`--pid`, connection flags), as found before the capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::follow::Followed>,
    /// A file that ended early or was damaged: where, and libpcap's words. Everything before
    /// it is in the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
}

/// Where a capture file stops being readable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truncation {
    /// Packets read whole before it.
    pub after_packets: u64,
    pub why: String,
}

/// An interval's answered requests counted into fixed time-to-last-byte buckets, for a
/// Prometheus histogram (`watch`'s `spinscope_watch_rt_seconds`). The counts are exact, taken
/// as each exchange is recorded, not read back off the HdrHistogram's rounded values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TtlbBuckets {
    /// `counts[i]`: requests above bound `i - 1` and at most bound `i`; the last, above all
    /// bounds (one more entry than bounds).
    pub counts: Vec<u64>,
    /// Sum of their times to last byte, nanoseconds.
    pub sum_ns: u128,
}

struct Hists {
    ttfb: Histogram<u64>,
    ttlb: Histogram<u64>,
    total_ttlb_ns: u128,
}

impl Hists {
    fn new() -> Hists {
        // Nanoseconds, 1 ns to 1 hour, 3 significant digits.
        let h = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        Hists {
            ttfb: h(),
            ttlb: h(),
            total_ttlb_ns: 0,
        }
    }
    fn record(&mut self, ttfb_ns: u64, ttlb_ns: u64) {
        self.ttfb.saturating_record(ttfb_ns.max(1));
        self.ttlb.saturating_record(ttlb_ns.max(1));
        self.total_ttlb_ns += ttlb_ns as u128;
    }
    /// Empty again, keeping the counts' memory (about 0.5 MB for the two): an idle window
    /// costs nothing to reuse, a busy one a memset instead of a fresh allocation.
    fn reset(&mut self) {
        if !self.ttlb.is_empty() || !self.ttfb.is_empty() {
            self.ttfb.reset();
            self.ttlb.reset();
        }
        self.total_ttlb_ns = 0;
    }
    fn add(&mut self, o: &Hists) {
        if o.ttlb.is_empty() && o.ttfb.is_empty() {
            return;
        }
        let _ = self.ttfb.add(&o.ttfb);
        let _ = self.ttlb.add(&o.ttlb);
        self.total_ttlb_ns += o.total_ttlb_ns;
    }
    fn group(&self, key: String) -> Group {
        Group {
            key,
            requests: self.ttlb.len(),
            ttfb_us: pcts(&self.ttfb),
            ttlb_us: pcts(&self.ttlb),
            total_ttlb_ms: self.total_ttlb_ns as f64 / 1e6,
        }
    }
}

fn pcts(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let us = |v: u64| v as f64 / 1000.0;
    Percentiles {
        p50_us: us(h.value_at_quantile(0.50)),
        p95_us: us(h.value_at_quantile(0.95)),
        p99_us: us(h.value_at_quantile(0.99)),
        p999_us: us(h.value_at_quantile(0.999)),
        max_us: us(h.max()),
    }
}

/// What to split the intervals by.
#[derive(Clone, Copy, Debug)]
pub struct Breakdown {
    pub by_command: bool,
    /// Top N statement fingerprints (0: none).
    pub top: usize,
}

/// Fingerprints tracked per window at most (the rest count as `other`).
const MAX_FINGERPRINTS: usize = 5000;

/// The exchanges of one time window.
pub struct Window {
    start_ns: u64,
    all: Hists,
    cmds: BTreeMap<Command, Hists>,
    fps: HashMap<String, Hists>,
    errors: u64,
    no_response: u64,
    abandoned: u64,
    breakdown: Breakdown,
    /// Rising upper bounds of [`TtlbBuckets`] (empty: none counted) and the counts.
    ttlb_bounds_ns: Vec<u64>,
    ttlb_counts: Vec<u64>,
}

impl Window {
    pub fn new(start_ns: u64, breakdown: Breakdown) -> Window {
        Window {
            start_ns,
            all: Hists::new(),
            cmds: BTreeMap::new(),
            fps: HashMap::new(),
            errors: 0,
            no_response: 0,
            abandoned: 0,
            breakdown,
            ttlb_bounds_ns: Vec::new(),
            ttlb_counts: Vec::new(),
        }
    }

    /// Also count the answered requests into buckets with these rising upper bounds (ns).
    pub fn with_ttlb_bounds(mut self, bounds_ns: &[u64]) -> Window {
        self.ttlb_bounds_ns = bounds_ns.to_vec();
        self.ttlb_counts = vec![0; bounds_ns.len() + 1];
        self
    }

    /// Start the next window at `start_ns` in this one's memory (the same as a new window:
    /// nothing counted, no command or statement groups).
    pub fn restart(&mut self, start_ns: u64) {
        self.start_ns = start_ns;
        self.all.reset();
        self.cmds.clear();
        self.fps.clear();
        self.errors = 0;
        self.no_response = 0;
        self.abandoned = 0;
        self.ttlb_counts.fill(0);
    }

    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Answered requests so far.
    pub fn requests(&self) -> u64 {
        self.all.ttlb.len()
    }

    pub fn event(&mut self, e: &Event) {
        match e {
            Event::Exchange(x) => {
                self.all.record(x.ttfb_ns, x.ttlb_ns);
                if !self.ttlb_bounds_ns.is_empty() {
                    let i = self.ttlb_bounds_ns.partition_point(|&b| b < x.ttlb_ns);
                    self.ttlb_counts[i] += 1;
                }
                self.errors += x.error as u64;
                if self.breakdown.by_command {
                    self.cmds
                        .entry(x.command)
                        .or_insert_with(Hists::new)
                        .record(x.ttfb_ns, x.ttlb_ns);
                }
                if self.breakdown.top > 0 {
                    if let Some(q) = &x.query {
                        let mut fp = fingerprint(q);
                        if !self.fps.contains_key(&fp) && self.fps.len() >= MAX_FINGERPRINTS {
                            fp = "other".to_string();
                        }
                        self.fps
                            .entry(fp)
                            .or_insert_with(Hists::new)
                            .record(x.ttfb_ns, x.ttlb_ns);
                    }
                }
            }
            Event::NoResponse(_) => self.no_response += 1,
            Event::Abandoned(_) => self.abandoned += 1,
        }
    }

    /// Fold another window into this one (the run's total).
    pub fn absorb(&mut self, o: &Window) {
        self.all.add(&o.all);
        for (k, h) in &o.cmds {
            self.cmds.entry(*k).or_insert_with(Hists::new).add(h);
        }
        for (k, h) in &o.fps {
            if self.fps.contains_key(k) || self.fps.len() < MAX_FINGERPRINTS {
                self.fps.entry(k.clone()).or_insert_with(Hists::new).add(h);
            }
        }
        self.errors += o.errors;
        self.no_response += o.no_response;
        self.abandoned += o.abandoned;
        if self.ttlb_counts.len() == o.ttlb_counts.len() {
            for (a, b) in self.ttlb_counts.iter_mut().zip(&o.ttlb_counts) {
                *a += b;
            }
        }
    }

    /// The report of this window, ending at `end_ns`.
    pub fn report(&self, end_ns: u64, kind: &str, capture: CaptureCounts) -> IntervalReport {
        let interval_s = end_ns.saturating_sub(self.start_ns) as f64 / 1e9;
        let requests = self.requests();
        let by_command = self
            .cmds
            .iter()
            .map(|(c, h)| h.group(c.name().to_string()))
            .collect();
        let mut top: Vec<Group> = self.fps.iter().map(|(k, h)| h.group(k.clone())).collect();
        top.sort_by(|a, b| {
            b.total_ttlb_ms
                .total_cmp(&a.total_ttlb_ms)
                .then(a.key.cmp(&b.key))
        });
        top.truncate(self.breakdown.top);
        let dropped = capture.dropped + capture.if_dropped;
        IntervalReport {
            schema: SCHEMA.to_string(),
            kind: kind.to_string(),
            start_unix_s: self.start_ns as f64 / 1e9,
            interval_s,
            requests,
            rate_per_s: if interval_s > 0.0 {
                requests as f64 / interval_s
            } else {
                0.0
            },
            errors: self.errors,
            no_response: self.no_response,
            abandoned: self.abandoned,
            ttfb_us: pcts(&self.all.ttfb),
            ttlb_us: pcts(&self.all.ttlb),
            by_command,
            top_statements: top,
            valid: dropped == 0,
            invalid_reason: (dropped > 0).then(|| {
                format!("the capture lost {dropped} packets (kernel drops): percentiles are over an incomplete sample")
            }),
            capture,
            server: None,
            ttlb_buckets: (!self.ttlb_bounds_ns.is_empty()).then(|| TtlbBuckets {
                counts: self.ttlb_counts.clone(),
                sum_ns: self.all.total_ttlb_ns,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::proto::{ConnKey, Exchange};

    fn x(cmd: u8, ttfb: u64, ttlb: u64, q: Option<&str>) -> Event {
        let a = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        Event::Exchange(Exchange {
            key: ConnKey {
                client: a,
                server: a,
            },
            command: Command::Known(cmd),
            request_end_ns: 0,
            ttfb_ns: ttfb,
            ttlb_ns: ttlb,
            response_bytes: 10,
            error: false,
            query: q.map(|s| s.as_bytes().to_vec()),
        })
    }

    #[test]
    fn percentiles_commands_and_top_statements() {
        let b = Breakdown {
            by_command: true,
            top: 1,
        };
        let mut w = Window::new(1_000_000_000, b);
        for i in 1..=100u64 {
            w.event(&x(
                3,
                i * 1000,
                i * 2000,
                Some("SELECT 1 FROM t WHERE id = 5"),
            ));
        }
        w.event(&x(0x17, 500_000, 900_000, None));
        w.event(&x(3, 10, 20, Some("SELECT 2")));
        w.event(&Event::NoResponse(Command::Known(0x19)));
        let r = w.report(2_000_000_000, "interval", CaptureCounts::default());
        assert_eq!(r.requests, 102);
        assert_eq!(r.no_response, 1);
        assert!((r.rate_per_s - 102.0).abs() < 1e-9);
        assert!(r.valid);
        assert_eq!(r.by_command.len(), 2);
        assert_eq!(r.by_command[0].key, "COM_QUERY");
        assert_eq!(r.by_command[0].requests, 101);
        assert!((r.by_command[0].ttfb_us.p50_us - 50.0).abs() < 0.1);
        assert!((r.ttlb_us.max_us - 900.0).abs() < 1.0);
        assert_eq!(r.top_statements.len(), 1);
        assert_eq!(r.top_statements[0].key, "select ? from t where id = ?");
        let dropped = w.report(
            2_000_000_000,
            "interval",
            CaptureCounts {
                received: 10,
                dropped: 2,
                if_dropped: 0,
            },
        );
        assert!(!dropped.valid && dropped.invalid_reason.is_some());
        assert_eq!(r.ttlb_buckets, None, "no bounds asked");
    }

    #[test]
    fn ttlb_buckets_count_each_request_at_most_its_bound() {
        let b = Breakdown {
            by_command: false,
            top: 0,
        };
        let mut w = Window::new(0, b).with_ttlb_bounds(&[1_000, 10_000]);
        for ttlb in [1, 1_000, 1_001, 10_000, 10_001, 5_000_000] {
            w.event(&x(3, 1, ttlb, None));
        }
        w.event(&Event::NoResponse(Command::Known(0x19)));
        let r = w.report(1_000_000_000, "interval", CaptureCounts::default());
        let want = TtlbBuckets {
            counts: vec![2, 2, 2],
            sum_ns: 1 + 1_000 + 1_001 + 10_000 + 10_001 + 5_000_000,
        };
        assert_eq!(r.ttlb_buckets.as_ref(), Some(&want));
        let mut total = Window::new(0, b).with_ttlb_bounds(&[1_000, 10_000]);
        total.absorb(&w);
        total.absorb(&w);
        let t = total.report(1_000_000_000, "total", CaptureCounts::default());
        assert_eq!(t.ttlb_buckets.unwrap().counts, vec![4, 4, 4]);
        w.restart(1_000_000_000);
        let e = w.report(2_000_000_000, "interval", CaptureCounts::default());
        assert_eq!(e.ttlb_buckets.unwrap().counts, vec![0, 0, 0]);
    }

    #[test]
    fn a_restarted_window_reports_as_a_new_one() {
        let b = Breakdown {
            by_command: true,
            top: 3,
        };
        let feed = |w: &mut Window, k: u64| {
            for i in 1..=k {
                w.event(&x(
                    3,
                    i * 700,
                    i * 1500,
                    Some("SELECT c FROM t WHERE id = 9"),
                ));
            }
            w.event(&x(0x17, 40_000, 90_000, None));
            w.event(&Event::Abandoned(Command::Known(3)));
        };
        let end = 3_000_000_000;
        let mut reused = Window::new(1_000_000_000, b);
        feed(&mut reused, 50);
        let mut total = Window::new(1_000_000_000, b);
        total.absorb(&reused);
        reused.restart(2_000_000_000);
        let empty = reused.report(end, "interval", CaptureCounts::default());
        let fresh_empty =
            Window::new(2_000_000_000, b).report(end, "interval", CaptureCounts::default());
        assert_eq!(empty, fresh_empty);
        assert_eq!((empty.requests, empty.abandoned), (0, 0));
        feed(&mut reused, 7);
        let mut fresh = Window::new(2_000_000_000, b);
        feed(&mut fresh, 7);
        let r = reused.report(end, "interval", CaptureCounts::default());
        assert_eq!(r, fresh.report(end, "interval", CaptureCounts::default()));
        assert_eq!((r.requests, r.by_command.len(), r.abandoned), (8, 2, 1));
        // An empty window adds nothing to the total; a busy one adds its counts.
        total.absorb(&Window::new(0, b));
        total.absorb(&reused);
        let t = total.report(end, "total", CaptureCounts::default());
        assert_eq!((t.requests, t.abandoned), (59, 2));
        assert_eq!(t.by_command.iter().map(|g| g.requests).sum::<u64>(), 59);
    }
}
