//! Text output of `spinscope rt`: one plain line per interval, or a block (overall, per
//! command, top statements) redrawn in place on a terminal. Pure.

use super::follow::Followed;
use super::stats::{Group, IntervalReport, Percentiles};

/// A time in microseconds, short: `87us`, `1.25ms`, `2.1s`.
pub fn dur(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else {
        format!("{:.1}s", us / 1e6)
    }
}

/// `HH:MM:SS.mmm` UTC of a Unix time.
pub fn clock(unix_s: f64) -> String {
    let ms = (unix_s * 1000.0).round() as u64;
    let s = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}

fn pct5(p: &Percentiles) -> String {
    format!(
        "{}/{}/{}/{}/{}",
        dur(p.p50_us),
        dur(p.p95_us),
        dur(p.p99_us),
        dur(p.p999_us),
        dur(p.max_us)
    )
}

/// What an interval without answered requests prints where its percentiles would be.
pub const NO_REQUESTS: &str = "no requests";

/// One plain line per interval (pipes, files).
pub fn line(r: &IntervalReport) -> String {
    let mut s = if r.requests == 0 {
        format!("{} requests=0 {NO_REQUESTS}", clock(r.start_unix_s))
    } else {
        format!(
            "{} requests={} rate={:.0}/s ttfb p50/p95/p99/p99.9/max={} ttlb={}",
            clock(r.start_unix_s),
            r.requests,
            r.rate_per_s,
            pct5(&r.ttfb_us),
            pct5(&r.ttlb_us)
        )
    };
    if r.errors > 0 {
        s.push_str(&format!(" errors={}", r.errors));
    }
    if r.abandoned > 0 {
        s.push_str(&format!(" unanswered={}", r.abandoned));
    }
    for g in &r.by_command {
        s.push_str(&format!(
            " | {} n={} ttlb p50={} p99={}",
            g.key,
            g.requests,
            dur(g.ttlb_us.p50_us),
            dur(g.ttlb_us.p99_us)
        ));
    }
    if !r.valid {
        s.push_str(&format!(
            " INVALID: {}",
            r.invalid_reason.as_deref().unwrap_or("")
        ));
    }
    s
}

fn row(name: &str, g_req: u64, rate: f64, f: &Percentiles, l: &Percentiles) -> String {
    format!(
        "{name:<24} {g_req:>8} {rate:>9.0} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        dur(f.p50_us),
        dur(f.p99_us),
        dur(f.p999_us),
        dur(f.max_us),
        dur(l.p50_us),
        dur(l.p95_us),
        dur(l.p99_us),
        dur(l.max_us)
    )
}

fn group_row(g: &Group, secs: f64) -> String {
    let name: String = g.key.chars().take(24).collect();
    let rate = if secs > 0.0 {
        g.requests as f64 / secs
    } else {
        0.0
    };
    row(&name, g.requests, rate, &g.ttfb_us, &g.ttlb_us)
}

/// The block drawn on a terminal: header, the interval's row, one row per command, the top
/// statements.
pub fn block(r: &IntervalReport) -> Vec<String> {
    let mut v = vec![
        format!(
            "{} ({:.3}s){}",
            clock(r.start_unix_s),
            r.interval_s,
            if r.valid {
                String::new()
            } else {
                format!("  INVALID: {}", r.invalid_reason.as_deref().unwrap_or(""))
            }
        ),
        format!(
            "{:<24} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "",
            "requests",
            "rate/s",
            "ttfb50",
            "ttfb99",
            "ttfb99.9",
            "ttfbmax",
            "ttlb50",
            "ttlb95",
            "ttlb99",
            "ttlbmax"
        ),
        if r.requests == 0 {
            format!("{:<24} {:>8} {:>9.0} {NO_REQUESTS}", "all", 0, 0.0)
        } else {
            row("all", r.requests, r.rate_per_s, &r.ttfb_us, &r.ttlb_us)
        },
    ];
    v.extend(r.by_command.iter().map(|g| group_row(g, r.interval_s)));
    if !r.top_statements.is_empty() {
        v.push("top statements by total time:".to_string());
        v.extend(r.top_statements.iter().map(|g| {
            format!(
                "  {:>8} {:>9.1}ms p99={:>8}  {}",
                g.requests,
                g.total_ttlb_ms,
                dur(g.ttlb_us.p99_us),
                g.key
            )
        }));
    }
    v.push(format!(
        "errors {}  no-answer commands {}  unanswered (closed) {}  packets {} dropped {}",
        r.errors,
        r.no_response,
        r.abandoned,
        r.capture.received,
        r.capture.dropped + r.capture.if_dropped
    ));
    v
}

/// What rt found of the server it follows: its process and where it listens, the ports
/// captured when `--port` names others, and its clients on the Unix socket (not on the wire).
pub fn server_lines(f: &Followed) -> Vec<String> {
    let who = match (&f.process, f.pid) {
        (Some(n), Some(p)) => format!("{n} (pid {p})"),
        (None, Some(p)) => format!("pid {p}"),
        _ => "the server".to_string(),
    };
    let ports: Vec<String> = f.tcp_ports.iter().map(|p| p.to_string()).collect();
    let mut v = vec![format!(
        "server {who}, found by {}: TCP port {}{}",
        f.found_by,
        if ports.is_empty() {
            "none".to_string()
        } else {
            ports.join(", ")
        },
        if f.unix_sockets.is_empty() {
            String::new()
        } else {
            format!("; Unix socket {}", f.unix_sockets.join(", "))
        }
    )];
    if !f.ports_given_differ.is_empty() {
        let given: Vec<String> = f.ports_given_differ.iter().map(|p| p.to_string()).collect();
        v.push(format!(
            "--port {} is not where it listens ({}): capturing the ports given",
            given.join(", "),
            ports.join(", ")
        ));
    }
    if let Some(n) = f.unix_socket_clients.filter(|&n| n > 0) {
        v.push(unix_clients_line(n, f.unix_clients_from.as_deref()));
    }
    v
}

/// `N clients use the Unix socket ...`: why they are not in the times.
pub fn unix_clients_line(n: u64, from: Option<&str>) -> String {
    format!(
        "{n} client{} on the Unix socket{}: not on the wire, so not timed here (rt times TCP clients)",
        if n == 1 { "" } else { "s" },
        from.map_or(String::new(), |f| format!(" ({f})"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty(kind: &str) -> IntervalReport {
        IntervalReport {
            schema: crate::rt::stats::SCHEMA.into(),
            kind: kind.into(),
            start_unix_s: 3661.25,
            interval_s: 1.0,
            requests: 0,
            rate_per_s: 0.0,
            errors: 0,
            no_response: 0,
            abandoned: 0,
            ttfb_us: Percentiles::default(),
            ttlb_us: Percentiles::default(),
            by_command: vec![],
            top_statements: vec![],
            capture: Default::default(),
            valid: true,
            invalid_reason: None,
            ttlb_buckets: None,
            server: None,
        }
    }

    #[test]
    fn followed_server_says_its_ports_and_socket_clients() {
        let f = Followed {
            found_by: "--pid 7".into(),
            pid: Some(7),
            process: Some("mariadbd".into()),
            tcp_ports: vec![3307],
            unix_sockets: vec!["/run/mysqld/mysqld.sock".into()],
            unix_socket_clients: Some(3),
            unix_clients_from: Some("/proc".into()),
            ports_given_differ: vec![3306],
        };
        let l = server_lines(&f);
        assert_eq!(
            l[0],
            "server mariadbd (pid 7), found by --pid 7: TCP port 3307; Unix socket /run/mysqld/mysqld.sock"
        );
        assert!(
            l[1].starts_with("--port 3306 is not where it listens (3307)"),
            "{l:?}"
        );
        assert!(
            l[2].starts_with("3 clients on the Unix socket (/proc): not on the wire"),
            "{l:?}"
        );
        let quiet = Followed {
            unix_socket_clients: Some(0),
            ports_given_differ: vec![],
            ..f
        };
        assert_eq!(server_lines(&quiet).len(), 1);
    }

    #[test]
    fn an_interval_without_requests_says_so() {
        let r = empty("interval");
        assert_eq!(line(&r), "01:01:01.250 requests=0 no requests");
        let b = block(&r).join("\n");
        assert!(
            b.contains("all                             0         0 no requests"),
            "{b}"
        );
        assert!(!b.contains("0us"), "{b}");
        // JSON: the counts stay numbers, the percentiles are null (no 0 us p99), and read back.
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["requests"], 0);
        assert!(j["ttlb_us"].is_null() && j["ttfb_us"].is_null(), "{j}");
        let back: IntervalReport = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
        // One with requests keeps its numbers.
        let mut busy = empty("interval");
        busy.requests = 1;
        busy.ttlb_us.p99_us = 87.0;
        busy.ttlb_us.p50_us = 87.0;
        let j = serde_json::to_value(&busy).unwrap();
        assert_eq!(j["ttlb_us"]["p99_us"], 87.0);
        assert!(line(&busy).contains("/87us/"), "{}", line(&busy));
    }

    #[test]
    fn durations_and_clock() {
        assert_eq!(dur(87.4), "87us");
        assert_eq!(dur(1250.0), "1.25ms");
        assert_eq!(dur(2_100_000.0), "2.1s");
        assert_eq!(clock(3661.25), "01:01:01.250");
    }
}
