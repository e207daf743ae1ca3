//! `doctor --rt`: the rt capture (`crate::rt::Background`) run over the burst sampler's
//! window on the server's host, so the server's response times from packets sit beside its
//! Threads_running. When the capture cannot run (a remote server, no permission, no TCP port)
//! the record says why in one line and the rest of the diagnosis goes on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::session::Session;

use super::conn::Target;
use super::snapshot::RtRecord;
use crate::rt::capture::Source;
use crate::rt::stats::{Breakdown, IntervalReport};
use crate::rt::{Background, RtPlan};

/// A capture running over the window (or the reason there is none).
pub struct RtWindow {
    bg: Option<Background>,
    rec: RtRecord,
    intervals: Arc<Mutex<Vec<IntervalReport>>>,
}

/// The interval of a window: a tenth of it, 100 ms to 1 min, in whole 100 ms.
pub fn interval_ns(window_s: f64) -> u64 {
    let tenth_ms = (window_s * 100.0).clamp(100.0, 60_000.0);
    ((tenth_ms / 100.0).round() as u64).max(1) * 100_000_000
}

/// The TCP port of a session's client side, from `information_schema.PROCESSLIST.HOST`
/// (`127.0.0.1:43210`; `localhost` for a Unix socket: None).
pub fn own_client_port(conn: &mut dyn Session) -> Option<u16> {
    let host: String = conn
        .query_first("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        .ok()
        .flatten()?;
    host.rsplit_once(':')?.1.parse().ok()
}

/// The server's TCP port from its variables, or why rt cannot see its clients.
pub fn server_port(variables: &BTreeMap<String, String>) -> Result<u16, String> {
    if variables
        .get("skip_networking")
        .is_some_and(|v| v.eq_ignore_ascii_case("ON") || v == "1")
    {
        return Err(
            "the server listens on no TCP port (skip_networking): rt times TCP clients only".into(),
        );
    }
    match variables.get("port").and_then(|p| p.parse::<u16>().ok()) {
        Some(p) if p > 0 => Ok(p),
        _ => Err("the server's TCP port is unknown (no `port` variable): rt needs it".into()),
    }
}

fn unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn unavailable(why: String) -> RtWindow {
    RtWindow {
        bg: None,
        rec: RtRecord {
            unavailable: Some(why),
            ..RtRecord::default()
        },
        intervals: Arc::default(),
    }
}

/// Start capturing before the window; `conn` is doctor's sampling session (left out of the
/// capture when it is a TCP connection).
pub fn start(
    t: &Target,
    variables: &BTreeMap<String, String>,
    conn: &mut dyn Session,
    window_s: f64,
) -> RtWindow {
    if !t.is_local() {
        return unavailable(format!(
            "rt needs the server's host: {} is not local; run doctor --rt on the host that serves it (rt captures its packets there)",
            t.describe()
        ));
    }
    let unix = super::rt_follow::socket_clients(conn);
    let port = match server_port(variables) {
        Ok(p) => p,
        Err(why) => {
            let mut w = unavailable(match unix.filter(|&n| n > 0) {
                Some(n) => format!("{why}; {}", crate::rt::render::unix_clients_line(n, None)),
                None => why,
            });
            w.rec.unix_socket_clients = unix;
            return w;
        }
    };
    let interface = match crate::rt::capture::default_interface(port) {
        Ok(i) => i,
        Err(e) => return unavailable(format!("rt: {e}")),
    };
    let own = if t.socket.is_none() {
        own_client_port(conn)
    } else {
        None
    };
    let plan = RtPlan {
        source: Source::Live {
            interface: Some(interface.clone()),
            snaplen: 65535,
            buffer_bytes: 32 << 20,
        },
        ports: vec![port],
        interval_ns: interval_ns(window_s),
        duration_ns: None,
        breakdown: Breakdown {
            by_command: false,
            top: 0,
        },
        exclude_client_ports: own.into_iter().collect(),
        keep_intervals: true,
        ttlb_bounds_ns: Vec::new(),
    };
    let intervals: Arc<Mutex<Vec<IntervalReport>>> = Arc::default();
    let sink = intervals.clone();
    let on = Box::new(move |r: &IntervalReport| {
        if let Ok(mut v) = sink.lock() {
            v.push(r.clone());
        }
    });
    match Background::start(plan, on) {
        Ok(bg) => RtWindow {
            bg: Some(bg),
            rec: RtRecord {
                interface: Some(interface),
                port: Some(port),
                excluded_client_port: own,
                unix_socket_clients: unix,
                ..RtRecord::default()
            },
            intervals,
        },
        Err(e) => unavailable(format!("rt not measured: {e}")),
    }
}

impl RtWindow {
    /// Mark the window's start (call just before the sampler starts).
    pub fn window_starts(&mut self) {
        self.rec.window_start_unix_s = unix_s();
    }

    /// Stop the capture; the record of the window.
    pub fn finish(mut self) -> RtRecord {
        let mut rec = std::mem::take(&mut self.rec);
        if let Some(bg) = self.bg.take() {
            match bg.finish() {
                Ok(run) => {
                    rec.intervals = run.intervals;
                    rec.total = Some(run.total);
                }
                Err(e) => {
                    rec.intervals = self.intervals.lock().map(|v| v.clone()).unwrap_or_default();
                    rec.unavailable = Some(format!("rt capture failed: {e}"));
                }
            }
        }
        rec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_a_tenth_of_the_window_in_whole_100ms() {
        assert_eq!(interval_ns(10.0), 1_000_000_000);
        assert_eq!(interval_ns(0.5), 100_000_000);
        assert_eq!(interval_ns(3.0), 300_000_000);
        assert_eq!(interval_ns(3600.0), 60_000_000_000);
    }

    #[test]
    fn port_from_variables_or_why_not() {
        let v = |k: &str, x: &str| BTreeMap::from([(k.to_string(), x.to_string())]);
        assert_eq!(server_port(&v("port", "3307")), Ok(3307));
        assert!(server_port(&v("port", "0")).is_err());
        assert!(server_port(&v("skip_networking", "ON"))
            .unwrap_err()
            .contains("skip_networking"));
        assert!(server_port(&BTreeMap::new()).is_err());
    }
}
