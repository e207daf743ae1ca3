//! `watch`: a long-running 100 Hz watcher of one server or a fleet. Per server a thread runs
//! the doctor burst sampler in short rounds into a ring buffer ([`ring`]), evaluates the
//! triggers ([`trigger`]) on every sample, and on a firing writes a capture ([`capture`]) with
//! the seconds before it; [`metrics`] exports everything to Prometheus.
//!
//! Memory is bounded per server by the ring (see [`ring`]): `(history + after) * hz` samples
//! of 64 bytes, plus one capture's copy while it is written; nothing grows with the run time.

pub mod capture;
pub mod doc;
pub mod ledger;
pub mod metrics;
pub mod osstat;
pub mod rate;
pub mod ring;
pub mod rt_feed;
pub mod server;
#[cfg(test)]
mod server_tests;
pub mod trigger;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::server::conn::Target;

/// One watched server.
#[derive(Debug, Clone)]
pub struct Watched {
    /// The name used in logs, metrics and capture directories.
    pub name: String,
    pub target: Target,
}

/// Everything `watch` needs, validated by the caller.
#[derive(Debug, Clone)]
pub struct WatchPlan {
    pub servers: Vec<Watched>,
    pub hz: f64,
    /// The SQL counters' rate on a local server, where the /proc series runs at `hz`.
    pub sql_hz: f64,
    pub history_s: f64,
    pub after_s: f64,
    pub triggers: Vec<trigger::Trigger>,
    /// The triggers are the defaults (no `--trigger` given).
    pub default_triggers: bool,
    pub cooldown_s: f64,
    pub max_captures: u64,
    pub min_free_bytes: u64,
    pub keep: usize,
    pub max_age_s: f64,
    pub out_dir: PathBuf,
    pub profile_seconds: f64,
    /// Core count for `cores` in triggers when the host's is unknown (remote servers).
    pub cores: Option<f64>,
    pub metrics_listen: Option<String>,
    /// Stop after this many seconds (None: until a signal).
    pub duration_s: Option<f64>,
}

/// What a run did, for the final line.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub captures: u64,
    pub skipped: u64,
    /// Captures whose files could not be written (removed, not counted).
    pub failed: u64,
    pub seconds: f64,
    /// Every burst of every server by what became of it.
    pub bursts: ledger::Counts,
}

/// State the server threads share.
pub struct Shared {
    pub plan: WatchPlan,
    pub metrics: metrics::Metrics,
    pub stop: Arc<AtomicBool>,
    pub captures: AtomicU64,
    pub skipped: AtomicU64,
    pub failed: AtomicU64,
    /// Each server's burst counts, added when its thread ends.
    pub bursts: Mutex<ledger::Counts>,
    /// This host's statistics once a second (when a server is local).
    pub os: Option<osstat::OsStats>,
    /// Servers that have connected at least once (the start-up's "k of N servers up").
    pub up_once: AtomicU64,
    /// Capture writers still running; joined before `run` returns.
    pub writers: Mutex<Vec<std::thread::JoinHandle<()>>>,
    pub t0: Instant,
    pub t0_unix_ms: f64,
    /// Opens a session on a watched server (the real connection; a scripted server in tests).
    pub connect: crate::server::conn::Connect,
}

impl Shared {
    /// Unix milliseconds of a time on the watch clock.
    pub fn unix_ms(&self, t_ms: f64) -> f64 {
        self.t0_unix_ms + t_ms
    }
    pub fn now_ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1e3
    }
}

/// `2026-11-23T22:15:30.125Z` for Unix milliseconds.
pub fn utc(unix_ms: f64) -> String {
    let ms = unix_ms.max(0.0) as i64;
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

pub fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// A timestamped line on stderr.
pub fn log(msg: &str) {
    eprintln!("{} spinscope watch: {msg}", utc(unix_ms_now()));
}

/// Run until `stop` (a signal) or `--duration`. Each server has its own thread; one that goes
/// away is reconnected with back-off and does not disturb the others. A capture in progress is
/// finished (with the after window cut short) before returning.
pub fn run(plan: WatchPlan, stop: Arc<AtomicBool>) -> Result<Summary> {
    std::fs::create_dir_all(&plan.out_dir).map_err(|e| {
        Error::bad_input(format!(
            "--out {}: cannot create it ({e}); choose a writable directory",
            plan.out_dir.display()
        ))
    })?;
    crate::files::check_output_dir(&plan.out_dir, "--out")?;
    if let Some(why) = capture::disk_refusal(&plan.out_dir, plan.min_free_bytes) {
        log(&format!("warning: {why}"));
    }
    // Debris of an earlier run (kill -9 during a capture) and captures past the limits.
    for d in capture::retain(&plan.out_dir, plan.keep, plan.max_age_s) {
        log(&format!("retention: removed {}", d.display()));
    }
    let (m, registry) = metrics::Metrics::new();
    let mut http = None;
    if let Some(addr) = &plan.metrics_listen {
        let (bound, h) = metrics::serve(addr, m.clone(), registry, Arc::clone(&stop))?;
        log(&format!("metrics at http://{bound}/metrics"));
        http = Some(h);
    }
    let t0 = Instant::now();
    let t0_unix_ms = unix_ms_now();
    // This host's statistics for the captures of local servers, on their own thread at 1 Hz.
    let mut os_thread = None;
    let os = if plan.servers.iter().any(|w| w.target.is_local()) {
        let os_stop = Arc::clone(&stop);
        match osstat::OsStats::start(plan.history_s + plan.after_s + 1.0, os_stop, move || {
            t0.elapsed().as_secs_f64() * 1e3
        }) {
            Ok((o, h)) => {
                os_thread = Some(h);
                Some(o)
            }
            Err(e) => {
                log(&format!("warning: no OS statistics in captures ({e})"));
                None
            }
        }
    } else {
        None
    };
    let shared = Arc::new(Shared {
        bursts: Mutex::new(ledger::Counts::default()),
        os,
        metrics: m,
        stop: Arc::clone(&stop),
        captures: AtomicU64::new(0),
        skipped: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        up_once: AtomicU64::new(0),
        writers: Mutex::new(Vec::new()),
        t0,
        t0_unix_ms,
        plan,
        connect: crate::server::conn::real_sessions(),
    });
    log(&format!(
        "watching {} server(s) at {} Hz, {} s of history, captures into {}; triggers: {}",
        shared.plan.servers.len(),
        shared.plan.hz,
        shared.plan.history_s,
        shared.plan.out_dir.display(),
        shared
            .plan
            .triggers
            .iter()
            .map(|t| format!("'{}'", t.text))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut threads = Vec::new();
    for w in shared.plan.servers.clone() {
        let sh = Arc::clone(&shared);
        let h = std::thread::Builder::new()
            .name(format!("watch-{}", w.name))
            .spawn(move || server::watch_one(&sh, &w))
            .map_err(|e| Error::runtime(format!("starting a sampler thread: {e}")))?;
        threads.push(h);
    }
    if let Some(d) = shared.plan.duration_s {
        if crate::interrupt::sleep(std::time::Duration::from_secs_f64(d), &stop) {
            stop.store(true, Ordering::SeqCst);
        }
    }
    for h in threads {
        let _ = h.join();
    }
    loop {
        let next = shared.writers.lock().ok().and_then(|mut w| w.pop());
        match next {
            Some(h) => {
                let _ = h.join();
            }
            None => break,
        }
    }
    stop.store(true, Ordering::SeqCst);
    if let Some(h) = http {
        let _ = h.join();
    }
    if let Some(h) = os_thread {
        let _ = h.join();
    }
    if let Some(o) = &shared.os {
        let (n, us) = o.cost();
        log(&format!(
            "OS statistics: {n} reading(s), {us:.0} us of CPU each"
        ));
    }
    Ok(Summary {
        bursts: shared.bursts.lock().map(|b| b.clone()).unwrap_or_default(),
        captures: shared.captures.load(Ordering::SeqCst),
        skipped: shared.skipped.load(Ordering::SeqCst),
        failed: shared.failed.load(Ordering::SeqCst),
        seconds: shared.t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_123.0), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_795_472_130_500.0), "2026-11-23T22:15:30.500Z");
    }
}
