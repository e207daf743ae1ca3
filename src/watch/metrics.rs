//! Prometheus metrics of `watch` (the `prometheus-client` crate's registry and text encoder)
//! and the `/metrics` endpoint: hyper's HTTP/1 server on a single-threaded tokio runtime on one
//! thread, bounded: at most [`MAX_CONNECTIONS`] open connections (more are closed as they are
//! accepted), headers within [`HEADER_TIMEOUT`], and no connection lives longer than
//! [`CONNECTION_LIFETIME`] (the idle timeout: a scrape takes milliseconds, and a scraper
//! reconnects). So ten thousand idle clients cost one thread and a few fds, and the endpoint
//! answers again as soon as connections close or time out.
//!
//! Threads_running is a histogram of every SQL read, and on a local server the threads in state
//! R from /proc a histogram of every tick, so a peak of 50 ms between two 15 s scrapes still
//! moves a bucket; the other series are per server (label `server`).
//!
//! The rt series (`spinscope_watch_rt_*`) exist only while an rt capture feeds watch (a trigger
//! reads an `rt_*` series on a local server): absent, not zero, elsewhere.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};

use crate::error::{Error, Result};
use crate::rt::stats::IntervalReport;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabel {
    pub server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CaptureLabel {
    pub server: String,
    pub trigger: String,
}

type FGauge = Gauge<f64, AtomicU64>;
type FCounter = Counter<f64, AtomicU64>;

fn running_hist() -> Histogram {
    Histogram::new([
        0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
    ])
}

fn burst_hist() -> Histogram {
    Histogram::new([0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
}

/// Upper bounds of `spinscope_watch_rt_seconds`, seconds: from 50 µs (a point select on a
/// local server) to 10 s, 2 to 2.5x apart, so a quantile read off them is within one bucket.
pub const RT_BUCKETS_S: [f64; 17] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

/// A classic Prometheus histogram filled a batch at a time from counts per bucket: the rt
/// capture counts each request into [`RT_BUCKETS_S`] as it closes and hands over an interval's
/// counts, where prometheus-client's `Histogram` takes one observation per call.
#[derive(Clone, Debug)]
pub struct BucketHistogram {
    inner: Arc<Mutex<BucketState>>,
}

#[derive(Debug)]
struct BucketState {
    bounds: Vec<f64>,
    /// One per bound and one above them all (+Inf), not cumulative.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl BucketHistogram {
    pub fn new(bounds: &[f64]) -> BucketHistogram {
        BucketHistogram {
            inner: Arc::new(Mutex::new(BucketState {
                bounds: bounds.to_vec(),
                counts: vec![0; bounds.len() + 1],
                sum: 0.0,
                count: 0,
            })),
        }
    }

    /// Add `counts` (one per bound and one above them, as the bounds) whose values sum to `sum`;
    /// counts of another length are refused (false).
    pub fn add(&self, counts: &[u64], sum: f64) -> bool {
        let Ok(mut st) = self.inner.lock() else {
            return false;
        };
        if counts.len() != st.counts.len() {
            return false;
        }
        for (a, b) in st.counts.iter_mut().zip(counts) {
            *a += b;
        }
        st.count += counts.iter().sum::<u64>();
        st.sum += sum;
        true
    }
}

impl TypedMetric for BucketHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for BucketHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> std::fmt::Result {
        let st = self.inner.lock().map_err(|_| std::fmt::Error)?;
        let buckets: Vec<(f64, u64)> = st
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(st.counts.iter().copied())
            .collect();
        encoder.encode_histogram::<NoLabelSet>(st.sum, st.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

fn rt_hist() -> BucketHistogram {
    BucketHistogram::new(&RT_BUCKETS_S)
}

/// Every metric watch exports; cheap to clone (families share their storage).
#[derive(Clone)]
pub struct Metrics {
    pub threads_running: Family<ServerLabel, Histogram, fn() -> Histogram>,
    pub running: Family<ServerLabel, Histogram, fn() -> Histogram>,
    pub sql_hz: Family<ServerLabel, FGauge>,
    pub sql_longest_gap: Family<ServerLabel, FGauge>,
    pub threads_running_max: Family<ServerLabel, FGauge>,
    pub threads_connected: Family<ServerLabel, FGauge>,
    pub bursts: Family<ServerLabel, Counter>,
    pub burst_duration: Family<ServerLabel, Histogram, fn() -> Histogram>,
    pub achieved_hz: Family<ServerLabel, FGauge>,
    pub target_hz: Family<ServerLabel, FGauge>,
    pub longest_gap: Family<ServerLabel, FGauge>,
    pub sample_rtt: Family<ServerLabel, FGauge>,
    pub sampler_cpu: Family<ServerLabel, FCounter>,
    pub up: Family<ServerLabel, Gauge>,
    pub reconnects: Family<ServerLabel, Counter>,
    pub captures: Family<CaptureLabel, Counter>,
    pub spin_budget_us: Family<ServerLabel, FGauge>,
    pub spin_design_us: Family<ServerLabel, FGauge>,
    pub process_cpu: FGauge,
    /// `spinscope_journal_open_records`: the journal's open records for each watched server.
    pub journal_open: Family<ServerLabel, Gauge>,
    /// The server's response times from packets: a histogram of every request's time to last
    /// byte, not per-tick percentile gauges, because percentiles do not add up: a p99 gauge
    /// scraped every 15 s shows one 10 ms tick in 1500 and cannot be averaged over time or
    /// servers, while bucket counts add, so `histogram_quantile` over `rate(..._bucket[5m])`
    /// gives the p99 of every request in the window, for one server or `sum by (le)` over a
    /// fleet.
    pub rt_seconds: Family<ServerLabel, BucketHistogram, fn() -> BucketHistogram>,
    /// Requests the server answered (the histogram's count, as a plain counter for rates).
    pub rt_requests: Family<ServerLabel, Counter>,
    /// Answers that were ERR packets.
    pub rt_errors: Family<ServerLabel, Counter>,
    /// Packets the kernel dropped from the capture: the rt series miss requests meanwhile.
    pub rt_dropped: Family<ServerLabel, Counter>,
}

impl Metrics {
    pub fn new() -> (Metrics, Registry) {
        let m = Metrics {
            threads_running: Family::new_with_constructor(running_hist as fn() -> Histogram),
            running: Family::new_with_constructor(running_hist as fn() -> Histogram),
            sql_hz: Family::default(),
            sql_longest_gap: Family::default(),
            threads_running_max: Family::default(),
            threads_connected: Family::default(),
            bursts: Family::default(),
            burst_duration: Family::new_with_constructor(burst_hist as fn() -> Histogram),
            achieved_hz: Family::default(),
            target_hz: Family::default(),
            longest_gap: Family::default(),
            sample_rtt: Family::default(),
            sampler_cpu: Family::default(),
            up: Family::default(),
            reconnects: Family::default(),
            captures: Family::default(),
            spin_budget_us: Family::default(),
            spin_design_us: Family::default(),
            process_cpu: FGauge::default(),
            journal_open: Family::default(),
            rt_seconds: Family::new_with_constructor(rt_hist as fn() -> BucketHistogram),
            rt_requests: Family::default(),
            rt_errors: Family::default(),
            rt_dropped: Family::default(),
        };
        let mut root = Registry::with_prefix("spinscope");
        root.register(
            "journal_open_records",
            "Changes spinscope made to the server and has not yet put back (open journal records, this host's and the server's copies); spinscope restore puts them back",
            m.journal_open.clone(),
        );
        let r = root.sub_registry_with_prefix("watch");
        m.register_samples(r);
        m.register_sampler(r);
        m.register_rt(r);
        (m, root)
    }

    /// The sampled series: threads, bursts, the spin budget.
    fn register_samples(&self, r: &mut Registry) {
        let m = self;
        r.register(
            "threads_running",
            "Threads_running at every SQL read (own session excluded)",
            m.threads_running.clone(),
        );
        r.register(
            "running_threads",
            "The server's threads in state R (on a CPU or queued) from /proc at every sample (local servers)",
            m.running.clone(),
        );
        r.register(
            "sql_sample_rate_hz",
            "SQL counter reads per second over the last 10 s (below sample_rate_hz on a local server)",
            m.sql_hz.clone(),
        );
        r.register_with_unit(
            "sql_longest_gap",
            "Longest gap between two SQL counter reads over the last 10 s",
            Unit::Seconds,
            m.sql_longest_gap.clone(),
        );
        r.register(
            "threads_running_max_10s",
            "Highest Threads_running of the last 10 s of samples",
            m.threads_running_max.clone(),
        );
        r.register(
            "threads_connected",
            "Threads_connected at the last sample",
            m.threads_connected.clone(),
        );
        r.register(
            "bursts",
            "Bursts: a trigger's condition held for its 'for' time, until none held for 0.5 s; counted also while captures cool down",
            m.bursts.clone(),
        );
        r.register_with_unit(
            "burst_duration",
            "Duration of each ended burst (first to last sample with a condition held)",
            Unit::Seconds,
            m.burst_duration.clone(),
        );
    }

    /// The sampler's own health: its rates, gaps, round trips, CPU and connection.
    fn register_sampler(&self, r: &mut Registry) {
        let m = self;
        r.register(
            "sample_rate_hz",
            "Samples per second achieved over the last 10 s",
            m.achieved_hz.clone(),
        );
        r.register(
            "target_rate_hz",
            "The rate the SQL reads aim at now (lower than --hz, or --sql-hz on a local server, while backing off)",
            m.target_hz.clone(),
        );
        r.register_with_unit(
            "longest_gap",
            "Longest gap between two samples over the last 10 s",
            Unit::Seconds,
            m.longest_gap.clone(),
        );
        r.register_with_unit(
            "sample_rtt",
            "Median round trip of the sampling query over the last round",
            Unit::Seconds,
            m.sample_rtt.clone(),
        );
        r.register_with_unit(
            "sampler_cpu",
            "CPU time watch's sampling thread used for this server",
            Unit::Seconds,
            m.sampler_cpu.clone(),
        );
        r.register(
            "up",
            "1 while the sampler is connected to the server",
            m.up.clone(),
        );
        r.register(
            "reconnects",
            "Connections re-opened after the server went away",
            m.reconnects.clone(),
        );
        r.register("captures", "Captures written", m.captures.clone());
        r.register(
            "spin_budget_microseconds",
            "Longest spin of one latch attempt with the server's settings on its CPU",
            m.spin_budget_us.clone(),
        );
        r.register(
            "spin_budget_design_microseconds",
            "The same with the version's defaults on the CPU they were designed for",
            m.spin_design_us.clone(),
        );
        r.register_with_unit(
            "process_cpu",
            "CPU time of the whole watch process (user + system)",
            Unit::Seconds,
            m.process_cpu.clone(),
        );
    }

    /// The rt series (present once an rt capture has closed an interval).
    fn register_rt(&self, r: &mut Registry) {
        let m = self;
        r.register_with_unit(
            "rt",
            "The server's response time from packets on its host: each request's time to last byte of the answer (local servers, while a trigger reads an rt_* series)",
            Unit::Seconds,
            m.rt_seconds.clone(),
        );
        r.register(
            "rt_requests",
            "Requests the server answered, from packets (rt capture)",
            m.rt_requests.clone(),
        );
        r.register(
            "rt_errors",
            "Answers that were ERR packets, from packets (rt capture; unreadable under TLS)",
            m.rt_errors.clone(),
        );
        r.register(
            "rt_capture_dropped_packets",
            "Packets the kernel dropped from the rt capture: the rt series miss requests meanwhile",
            m.rt_dropped.clone(),
        );
    }

    /// One closed rt interval of a server into its rt series, which the first creates.
    pub fn record_rt(&self, label: &ServerLabel, r: &IntervalReport) {
        if let Some(b) = &r.ttlb_buckets {
            self.rt_seconds
                .get_or_create(label)
                .add(&b.counts, b.sum_ns as f64 / 1e9);
        }
        self.rt_requests.get_or_create(label).inc_by(r.requests);
        self.rt_errors.get_or_create(label).inc_by(r.errors);
        let dropped = r.capture.dropped + r.capture.if_dropped;
        self.rt_dropped.get_or_create(label).inc_by(dropped);
    }
}

/// [`RT_BUCKETS_S`] in nanoseconds, for the rt capture's plan.
pub fn rt_bounds_ns() -> Vec<u64> {
    RT_BUCKETS_S
        .iter()
        .map(|s| (s * 1e9).round() as u64)
        .collect()
}

fn own_cpu_s() -> f64 {
    // SAFETY: getrusage writes one struct into a valid, exclusively borrowed local.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The text of `/metrics` now.
pub fn render(m: &Metrics, r: &Registry) -> String {
    m.process_cpu.set(own_cpu_s());
    let mut out = String::new();
    let _ = encode(&mut out, r);
    out
}

/// Connections served at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// A request's headers must arrive within this.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// No connection is kept longer than this, idle or not.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(10);

type Body = http_body_util::Full<hyper::body::Bytes>;

fn respond(st: &(Metrics, Registry), path: &str) -> hyper::Response<Body> {
    let (status, ct, text) = match path {
        "/metrics" => (
            200,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            render(&st.0, &st.1),
        ),
        "/" => (
            200,
            "text/plain; charset=utf-8",
            "spinscope watch: metrics at /metrics\n".to_string(),
        ),
        _ => (404, "text/plain; charset=utf-8", "not found\n".to_string()),
    };
    let mut resp = hyper::Response::new(Body::new(text.into()));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(ct),
    );
    resp
}

/// Counts an open connection for as long as it lives.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    st: Arc<(Metrics, Registry)>,
    stop: Arc<AtomicBool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let open = Arc::new(AtomicUsize::new(0));
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    while !stop.load(Ordering::Relaxed) {
        let accepted = tokio::select! {
            _ = tick.tick() => continue,
            a = listener.accept() => a,
        };
        let sock = match accepted {
            Ok((sock, _)) => sock,
            // Out of file descriptors and the like: wait for connections to close.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            drop(sock);
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let guard = Open(Arc::clone(&open));
        let st = Arc::clone(&st);
        tokio::spawn(async move {
            let _guard = guard;
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let resp = respond(&st, req.uri().path());
                    async move { Ok::<_, std::convert::Infallible>(resp) }
                });
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(16 << 10);
            let conn = b.serve_connection(hyper_util::rt::TokioIo::new(sock), svc);
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
        });
    }
}

/// Serve `/metrics` on `addr` until `stop`; returns the address bound (port 0 picks one).
pub fn serve(
    addr: &str,
    m: Metrics,
    r: Registry,
    stop: Arc<AtomicBool>,
) -> Result<(std::net::SocketAddr, std::thread::JoinHandle<()>)> {
    let cannot = |e: &dyn std::fmt::Display| {
        Error::runtime(format!(
            "--metrics-listen {addr}: cannot listen ({e}); choose a free HOST:PORT"
        ))
    };
    let listener = std::net::TcpListener::bind(addr).map_err(|e| cannot(&e))?;
    listener.set_nonblocking(true).map_err(|e| cannot(&e))?;
    let bound = listener.local_addr().map_err(|e| cannot(&e))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| Error::runtime(format!("starting the metrics server: {e}")))?;
    let st = Arc::new((m, r));
    let h = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || rt.block_on(accept_loop(listener, st, stop)))
        .map_err(|e| Error::runtime(format!("starting the metrics thread: {e}")))?;
    Ok((bound, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_has_the_histogram_and_prometheus_names() {
        let (m, r) = Metrics::new();
        let l = ServerLabel {
            server: "db1".into(),
        };
        for v in [0.0, 1.0, 40.0] {
            m.threads_running.get_or_create(&l).observe(v);
        }
        m.bursts.get_or_create(&l).inc();
        m.spin_budget_us.get_or_create(&l).set(12.5);
        let t = render(&m, &r);
        assert!(
            t.contains("spinscope_watch_threads_running_bucket{le=\"64.0\",server=\"db1\"} 3")
                || t.contains(
                    "spinscope_watch_threads_running_bucket{server=\"db1\",le=\"64.0\"} 3"
                ),
            "{t}"
        );
        assert!(
            t.contains("spinscope_watch_threads_running_count{server=\"db1\"} 3"),
            "{t}"
        );
        assert!(
            t.contains("spinscope_watch_bursts_total{server=\"db1\"} 1"),
            "{t}"
        );
        assert!(
            t.contains("spinscope_watch_spin_budget_microseconds{server=\"db1\"} 12.5"),
            "{t}"
        );
        assert!(t.contains("spinscope_watch_process_cpu_seconds "), "{t}");
        m.journal_open.get_or_create(&l).set(2);
        let t = render(&m, &r);
        assert!(
            t.contains("spinscope_journal_open_records{server=\"db1\"} 2"),
            "{t}"
        );
        assert!(t.trim_end().ends_with("# EOF"), "{t}");
        assert!(
            !t.contains("_rt"),
            "no rt series while rt does not run: {t}"
        );
    }

    #[test]
    fn rt_intervals_fill_the_histogram_and_counters() {
        use crate::rt::stats::{Breakdown, CaptureCounts, TtlbBuckets, Window};
        let (m, r) = Metrics::new();
        let l = ServerLabel {
            server: "db1".into(),
        };
        let b = Breakdown {
            by_command: false,
            top: 0,
        };
        let mut rep = Window::new(0, b).with_ttlb_bounds(&rt_bounds_ns()).report(
            1_000_000_000,
            "interval",
            CaptureCounts::default(),
        );
        let mut counts = vec![0; RT_BUCKETS_S.len() + 1];
        // 2 requests of 0.8 ms (bucket le=0.001), 1 of 30 s (above every bound).
        counts[4] = 2;
        counts[RT_BUCKETS_S.len()] = 1;
        rep.ttlb_buckets = Some(TtlbBuckets {
            counts,
            sum_ns: 30_001_600_000,
        });
        rep.requests = 3;
        rep.errors = 1;
        rep.capture.dropped = 4;
        m.record_rt(&l, &rep);
        m.record_rt(&l, &rep);
        let t = render(&m, &r);
        for want in [
            "# TYPE spinscope_watch_rt_seconds histogram",
            "# UNIT spinscope_watch_rt_seconds seconds",
            "spinscope_watch_rt_seconds_count{server=\"db1\"} 6",
            "spinscope_watch_rt_seconds_sum{server=\"db1\"} 60.0032",
            "spinscope_watch_rt_seconds_bucket{le=\"0.0005\",server=\"db1\"} 0",
            "spinscope_watch_rt_seconds_bucket{le=\"0.001\",server=\"db1\"} 4",
            "spinscope_watch_rt_seconds_bucket{le=\"10.0\",server=\"db1\"} 4",
            "spinscope_watch_rt_seconds_bucket{le=\"+Inf\",server=\"db1\"} 6",
            "# HELP spinscope_watch_rt_requests Requests the server answered",
            "spinscope_watch_rt_requests_total{server=\"db1\"} 6",
            "spinscope_watch_rt_errors_total{server=\"db1\"} 2",
            "spinscope_watch_rt_capture_dropped_packets_total{server=\"db1\"} 8",
        ] {
            assert!(t.contains(want), "{want} missing:\n{t}");
        }
        assert!(
            !BucketHistogram::new(&[1.0]).add(&[1], 1.0),
            "counts of another length"
        );
    }
}
