//! `doctor --rt`: the server's response times from packets over the window, interval by
//! interval beside Threads_running (SQL) and the running threads (/proc) of the same time.
//! The two side by side separate a server that is slow to answer from a client or network
//! that is slow to ask (docs/REFERENCE.md §13). Pure: the snapshot's records in, rows out.

use serde::{Deserialize, Serialize};

use crate::rt::stats::Percentiles;
use crate::server::snapshot::{BurstRecord, RtRecord};

/// The RT part of the `spinscope.doctor/1` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtSide {
    /// Why nothing was measured; None when the capture ran.
    pub unavailable: Option<String>,
    pub interface: Option<String>,
    pub port: Option<u16>,
    pub excluded_client_port: Option<u16>,
    /// Clients on the Unix socket when the window started: not on the wire, not timed.
    #[serde(default)]
    pub unix_socket_clients: Option<u64>,
    /// Answered requests over the window.
    pub requests: u64,
    pub rate_per_s: f64,
    pub errors: u64,
    /// Requests left unanswered by a closed connection.
    pub abandoned: u64,
    /// null when no request was answered.
    #[serde(with = "crate::rt::stats::empty_as_null")]
    pub ttfb_us: Percentiles,
    #[serde(with = "crate::rt::stats::empty_as_null")]
    pub ttlb_us: Percentiles,
    /// False when the kernel dropped packets.
    pub valid: bool,
    pub rows: Vec<RtRow>,
}

/// One interval: response times and the running threads over the same time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtRow {
    /// Start, seconds since the window started.
    pub t_s: f64,
    pub interval_s: f64,
    pub requests: u64,
    /// The interval's percentiles; None (null) when it answered no request, not 0 us.
    pub ttfb_p99_us: Option<f64>,
    pub ttlb_p50_us: Option<f64>,
    pub ttlb_p99_us: Option<f64>,
    pub ttlb_max_us: Option<f64>,
    /// Highest Threads_running (SQL, own session removed) sampled in the interval.
    pub threads_running_max: Option<u64>,
    /// Highest count of server threads in state R (/proc) sampled in the interval.
    pub proc_running_max: Option<u32>,
}

/// The side of a record, with the burst sampler's points of the same window.
pub fn side(rt: &RtRecord, burst: Option<&BurstRecord>) -> RtSide {
    let total = rt.total.as_ref();
    let rows = rt
        .intervals
        .iter()
        .map(|r| {
            let from_ms = (r.start_unix_s - rt.window_start_unix_s) * 1e3;
            let to_ms = from_ms + r.interval_s * 1e3;
            let inside = |t: f64| t >= from_ms && t < to_ms;
            let answered = r.requests > 0;
            RtRow {
                t_s: from_ms / 1e3,
                interval_s: r.interval_s,
                requests: r.requests,
                ttfb_p99_us: answered.then_some(r.ttfb_us.p99_us),
                ttlb_p50_us: answered.then_some(r.ttlb_us.p50_us),
                ttlb_p99_us: answered.then_some(r.ttlb_us.p99_us),
                ttlb_max_us: answered.then_some(r.ttlb_us.max_us),
                threads_running_max: burst.and_then(|b| {
                    b.points
                        .iter()
                        .filter(|p| inside(p.t_ms))
                        .map(|p| p.threads_running)
                        .max()
                }),
                proc_running_max: burst.and_then(|b| b.proc_running.as_ref()).and_then(|s| {
                    s.points
                        .iter()
                        .filter(|p| inside(p.t_ms))
                        .map(|p| p.running)
                        .max()
                }),
            }
        })
        .collect();
    RtSide {
        unavailable: rt.unavailable.clone(),
        interface: rt.interface.clone(),
        port: rt.port,
        excluded_client_port: rt.excluded_client_port,
        unix_socket_clients: rt.unix_socket_clients,
        requests: total.map_or(0, |t| t.requests),
        rate_per_s: total.map_or(0.0, |t| t.rate_per_s),
        errors: total.map_or(0, |t| t.errors),
        abandoned: total.map_or(0, |t| t.abandoned),
        ttfb_us: total.map(|t| t.ttfb_us.clone()).unwrap_or_default(),
        ttlb_us: total.map(|t| t.ttlb_us.clone()).unwrap_or_default(),
        valid: total.is_none_or(|t| t.valid),
        rows,
    }
}

fn dur(us: f64) -> String {
    crate::rt::render::dur(us)
}

fn pct5(p: &Percentiles) -> String {
    format!(
        "p50 {}, p95 {}, p99 {}, p99.9 {}, max {}",
        dur(p.p50_us),
        dur(p.p95_us),
        dur(p.p99_us),
        dur(p.p999_us),
        dur(p.max_us)
    )
}

/// The headline lines (text report, Markdown facts list).
pub fn headline(s: &RtSide) -> Vec<String> {
    if let Some(why) = &s.unavailable {
        return vec![format!("response time (rt): not measured: {why}")];
    }
    let own = s.excluded_client_port.map_or(String::new(), |p| {
        format!("\n  doctor's own session (client port {p}) left out")
    });
    // Lines: where it was measured, then the counts (each fits 80 columns).
    let both = format!(
        "response time from packets (rt on {} port {}, TCP clients only):\n  {} requests, {:.0}/s, {} errors, {} unanswered{}{own}",
        s.interface.as_deref().unwrap_or("?"),
        s.port.map_or("?".to_string(), |p| p.to_string()),
        s.requests,
        s.rate_per_s,
        s.errors,
        s.abandoned,
        if s.valid { "" } else { " (the kernel dropped packets: incomplete)" }
    );
    let mut v: Vec<String> = both.lines().map(str::to_string).collect();
    if s.requests > 0 {
        v.push(format!("  time to first byte: {}", pct5(&s.ttfb_us)));
        v.push(format!("  time to last byte:  {}", pct5(&s.ttlb_us)));
    }
    if let Some(n) = s.unix_socket_clients.filter(|&n| n > 0) {
        v.push(format!(
            "  {}",
            crate::rt::render::unix_clients_line(n, Some("processlist"))
        ));
    }
    v
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |x| x.to_string())
}

/// The interval table: header and rows of cells.
pub fn table(s: &RtSide) -> (Vec<String>, Vec<Vec<String>>) {
    let head = [
        "t",
        "requests",
        "ttfb p99",
        "ttlb p50",
        "ttlb p99",
        "ttlb max",
        "Threads_running max",
        "running (/proc) max",
    ]
    .map(String::from)
    .to_vec();
    let rows = s
        .rows
        .iter()
        .map(|r| {
            let t = |us: Option<f64>| us.map_or("-".into(), dur);
            vec![
                format!("{:.1}s", r.t_s.max(0.0)),
                r.requests.to_string(),
                t(r.ttfb_p99_us),
                t(r.ttlb_p50_us),
                t(r.ttlb_p99_us),
                t(r.ttlb_max_us),
                opt(r.threads_running_max),
                opt(r.proc_running_max),
            ]
        })
        .collect();
    (head, rows)
}

/// The text block: headline, then the table aligned in columns, its two widest labels
/// shortened (a legend line says what they are) so that it fits 80 columns.
pub fn text(s: &RtSide) -> String {
    let mut out = String::new();
    for l in headline(s) {
        out.push_str(&l);
        out.push('\n');
    }
    if s.rows.is_empty() || s.unavailable.is_some() {
        return out;
    }
    let (mut head, rows) = table(s);
    let n = head.len();
    head[n - 2] = "TR max".into();
    head[n - 1] = "R max".into();
    out.push_str(
        "  TR = Threads_running max (SQL), R = running threads max (/proc), per interval\n",
    );
    let width: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let c: Vec<String> = cells
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!("  {}\n", c.join("  "))
    };
    out.push_str(&line(&head));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::stats::{CaptureCounts, IntervalReport};
    use crate::server::snapshot::{BurstPoint, ProcPoint, ProcSeries};

    fn iv(start: f64, requests: u64, p99: f64) -> IntervalReport {
        IntervalReport {
            schema: "spinscope.rt/1".into(),
            kind: "interval".into(),
            start_unix_s: start,
            interval_s: 1.0,
            requests,
            rate_per_s: requests as f64,
            errors: 0,
            no_response: 0,
            abandoned: 0,
            ttfb_us: Percentiles::default(),
            ttlb_us: Percentiles {
                p50_us: p99 / 2.0,
                p99_us: p99,
                max_us: p99 * 2.0,
                ..Percentiles::default()
            },
            by_command: vec![],
            top_statements: vec![],
            capture: CaptureCounts::default(),
            valid: true,
            invalid_reason: None,
            ttlb_buckets: None,
            server: None,
        }
    }

    #[test]
    fn rows_line_up_with_the_sampler_points_of_the_same_time() {
        let rt = RtRecord {
            interface: Some("lo".into()),
            port: Some(3306),
            window_start_unix_s: 1000.0,
            intervals: vec![iv(999.99, 10, 500.0), iv(1000.99, 0, 0.0)],
            total: Some(iv(999.99, 10, 500.0)),
            ..RtRecord::default()
        };
        let bp = |t_ms: f64, r: u64| BurstPoint {
            t_ms,
            threads_running: r,
            threads_connected: 1,
            questions: 0,
            row_lock_waits: 0,
        };
        let burst = BurstRecord {
            target_hz: 10.0,
            window_s: 2.0,
            points: vec![bp(0.0, 3), bp(500.0, 7), bp(1500.0, 1)],
            sampler_cpu_ns: 0,
            query_p50_us: 0.0,
            interrupted: false,
            sql_hz: None,
            proc_running: Some(ProcSeries {
                source: String::new(),
                pid: 1,
                target_hz: 100.0,
                points: vec![ProcPoint {
                    t_ms: 1200.0,
                    running: 4,
                    threads: 30,
                }],
            }),
            server_session_cpu_ns: None,
        };
        let s = side(&rt, Some(&burst));
        assert_eq!(s.requests, 10);
        assert_eq!(s.rows.len(), 2);
        assert_eq!(s.rows[0].threads_running_max, Some(7));
        assert_eq!(s.rows[0].proc_running_max, None);
        assert_eq!(s.rows[1].threads_running_max, Some(1));
        assert_eq!(s.rows[1].proc_running_max, Some(4));
        // The interval without requests has no percentiles (null in JSON), not 0 us.
        assert_eq!(s.rows[0].ttlb_p99_us, Some(500.0));
        assert_eq!(s.rows[1].ttlb_p99_us, None);
        let j = serde_json::to_value(&s).unwrap();
        assert!(j["rows"][1]["ttlb_p99_us"].is_null(), "{j}");
        assert_eq!(j["rows"][1]["requests"], 0);
        let t = text(&s);
        assert!(
            t.contains("10 requests") && t.contains("TR = Threads_running max"),
            "{t}"
        );
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        assert!(t.contains("500us"), "{t}");
    }

    #[test]
    fn no_requests_with_socket_clients_says_why() {
        let s = side(
            &RtRecord {
                interface: Some("lo".into()),
                port: Some(3306),
                unix_socket_clients: Some(8),
                total: Some(iv(1.0, 0, 0.0)),
                ..RtRecord::default()
            },
            None,
        );
        let t = text(&s);
        assert!(t.contains(":\n  0 requests, 0/s"), "{t}");
        assert!(
            t.contains("8 clients on the Unix socket (processlist): not on the wire"),
            "{t}"
        );
        let one = side(
            &RtRecord {
                unix_socket_clients: Some(0),
                ..RtRecord::default()
            },
            None,
        );
        assert!(!text(&one).contains("Unix socket"));
    }

    #[test]
    fn unavailable_is_one_line() {
        let s = side(
            &RtRecord {
                unavailable: Some("rt needs the server's host".into()),
                ..RtRecord::default()
            },
            None,
        );
        assert_eq!(text(&s).lines().count(), 1);
        assert!(text(&s).contains("not measured: rt needs the server's host"));
    }
}
