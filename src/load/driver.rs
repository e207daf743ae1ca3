//! The driver: one step of a sweep. `threads` client threads, one connection each, run the
//! workload for a warm-up (not counted) and then a measured window.
//!
//! Closed loop: each client sends its next transaction when the previous one returns.
//! Open loop (`rate`): each client follows a fixed schedule of intended start times (the total
//! rate split evenly, clients offset from each other), and latency is counted from the
//! *intended* start, so time spent queued behind a slow request is charged to the requests
//! that waited (coordinated-omission correction, as wrk2 does). A client that falls behind
//! does not skip its schedule; the step reports the achieved rate and says when the server could
//! not keep up instead of silently lowering it.
//!
//! Latency goes into one HdrHistogram per client (microseconds, 3 significant digits), merged
//! at the end. The step clock starts only when every client is connected and has prepared its
//! statements (two barriers: "ready", then "go" with the start time), so preparation never eats
//! into the warm-up or the measured window. Each client also counts its measured transactions
//! per throughput window (equal windows of about 0.5 s that tile the measured period exactly, a
//! transaction belonging to the window its end falls in), so the windows add up to the step's
//! transaction count and their mean is the step's throughput. The calling thread only prints
//! progress lines.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use rand::rngs::SmallRng;
use rand::SeedableRng;

pub use super::step::{new_histogram, StepConfig, HIST_MAX_US, RETRY_CODES};
use super::step::{ClientResult, Counters, Ctx, Shared};
use super::wire::{events, WireConn};
use super::workload::Workload;
use super::{describe_error, is_connection_error, stopped, Client, Connector, WireConnector};
use crate::error::{Error, Result};

/// Nominal length of the throughput windows: the measured period is cut into
/// `round(duration / WINDOW)` (at least 1) equal windows.
pub const WINDOW: Duration = Duration::from_millis(500);

/// The equal windows tiling a measured period: (count, length).
pub fn windows_of(duration: Duration) -> (usize, Duration) {
    let k = (duration.as_secs_f64() / WINDOW.as_secs_f64())
        .round()
        .max(1.0) as usize;
    (k, duration.div_f64(k as f64))
}

/// Share of the server's `max_prepared_stmt_count` the clients of one step may use together
/// (the rest stays free for other sessions and connections still closing).
pub const STMT_BUDGET_SHARE: f64 = 0.8;

/// Per-client statement capacity: every statement the workload needs, unless that would take
/// the clients together past their share of the server-wide `max_prepared_stmt_count` (minus
/// the statements already prepared on the server). Pure, so the rule can be tested.
pub fn stmt_capacity(needed: usize, threads: u32, max_count: Option<u64>, in_use: u64) -> usize {
    match max_count {
        Some(max) => {
            let free = (max.saturating_sub(in_use) as f64 * STMT_BUDGET_SHARE) as u64;
            let per = (free / u64::from(threads.max(1))) as usize;
            needed.min(per.max(1))
        }
        None => needed,
    }
    .max(1)
}

/// What one step measured.
#[derive(Debug)]
pub struct StepOutcome {
    pub hist: Histogram<u64>,
    pub txns: u64,
    pub queries: u64,
    /// Measured window actually run (shorter when interrupted).
    pub elapsed_s: f64,
    /// Errors by MySQL error code ("io" and "driver" for connection-level failures).
    pub errors: BTreeMap<String, u64>,
    /// Transactions rolled back and run again, by error code (see [`RETRY_CODES`]).
    pub retries: BTreeMap<String, u64>,
    pub reconnects: u64,
    /// Transactions per second in consecutive equal windows (about 0.5 s, see [`windows_of`])
    /// of the measured period; their mean is `txns / elapsed_s` for a step that ran to its end.
    pub windows_tps: Vec<f64>,
    /// Length of those windows, seconds.
    pub window_s: f64,
    /// Statements each client could keep prepared, and how many the workload has in all.
    pub stmt_capacity: usize,
    pub stmts_needed: usize,
    /// Statements prepared during the step (capacity too small for every table, or a
    /// reconnect), summed over clients.
    pub late_prepares: u64,
    /// Seconds from the first connection to the step clock's start (connect + prepare).
    pub setup_s: f64,
    pub interrupted: bool,
    /// Open loop: how far behind schedule the slowest client was at the end, in seconds.
    pub schedule_lag_s: f64,
    /// First error message seen (for the report), without credentials.
    pub first_error: Option<String>,
    /// Prepared-statement executions the clients sent during the whole step (warm-up,
    /// retries and transactions cut off by the end included): what the server's
    /// `Com_stmt_execute` counts.
    pub executes: u64,
    /// Of `executes`, those whose connection ended after they were sent and before their
    /// answer (events client; e.g. a KILL): the server may or may not have run them, so its
    /// count lies between `executes - executes_unanswered` and `executes`.
    pub executes_unanswered: u64,
    /// The client that ran the step and whether it spoke TLS.
    pub client: super::ClientUsed,
}

fn error_key(e: &mysql::Error) -> String {
    match describe_error(e) {
        (Some(code), _) => code.to_string(),
        (None, _) => match e {
            mysql::Error::IoError(_) => "io".into(),
            _ => "driver".into(),
        },
    }
}

fn client(idx: u32, ctx: &Ctx<'_>, conn: mysql::Conn) -> ClientResult {
    let (cfg, wl) = (ctx.cfg, ctx.wl);
    let mut r = ClientResult::new(ctx.n_windows);
    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (u64::from(idx) << 32));
    let mine: &Counters = &ctx.shared.clients[idx as usize];
    let mut conn = conn;
    let mut prepared = match wl.prepare(&mut conn, ctx.cap) {
        Ok(p) => Some(p),
        Err(e) => {
            r.first_error = Some(format!("preparing statements: {}", describe_error(&e).1));
            *r.errors.entry(error_key(&e)).or_default() += 1;
            None
        }
    };
    // Everyone prepared: the watcher fixes the start time, then all go together.
    let t0 = ctx.start_together();
    let measure_from = t0 + cfg.warmup;
    let end = measure_from + cfg.duration;
    let period = ctx.period();
    let mut next_intended = period.map(|p| t0 + p.mul_f64(f64::from(idx) / f64::from(cfg.threads)));
    let mut conn = Some(conn);
    let mut seen_late = 0u64;
    let mut plan = Vec::new();
    loop {
        if ctx.over() {
            break;
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        let start = match next_intended {
            Some(t) => {
                if t >= end {
                    break;
                }
                if t > now {
                    std::thread::sleep(t - now);
                }
                t
            }
            None => now,
        };
        if let (Some(c), Some(p)) = (conn.as_mut(), prepared.as_mut()) {
            // A deadlock or lock wait timeout rolls the transaction back and runs it again, as
            // sysbench does (its default --mysql-ignore-errors); the retry is counted and its
            // time stays in the transaction's latency.
            // A retryable error that arrives once the step is over (or stopped) only means the
            // transaction was cut off by the end, like one that finishes after it: not counted.
            wl.plan_txn(&mut rng, &mut plan);
            let mut outcome = wl.run_plan(c, p, &plan);
            let mut cut_off = false;
            while let Err(e) = &outcome {
                let code = describe_error(e).0;
                if !code.is_some_and(|c| RETRY_CODES.contains(&c)) {
                    break;
                }
                if Instant::now() >= end || stopped(ctx.stop) {
                    cut_off = true;
                    break;
                }
                if c.query_drop("ROLLBACK").is_err() {
                    break;
                }
                r.retried(ctx, code);
                wl.plan_txn(&mut rng, &mut plan);
                outcome = wl.run_plan(c, p, &plan);
            }
            match outcome {
                Ok(nq) => r.finished(ctx, mine, start, Instant::now(), nq),
                Err(_) if cut_off => {
                    let _ = c.query_drop("ROLLBACK");
                }
                Err(e) => {
                    r.failed(ctx, mine, error_key(&e), || describe_error(&e).1);
                    if is_connection_error(&e) || c.query_drop("ROLLBACK").is_err() {
                        conn = None;
                    }
                }
            }
            if let Some(p) = prepared.as_ref() {
                r.late(ctx, p.late_prepares, &mut seen_late);
            }
        }
        if conn.is_none() || prepared.is_none() {
            // Re-open: the server dropped us (restart, KILL). Retry until the step ends.
            conn = None;
            r.executes += prepared.take().map_or(0, |p| p.executes);
            while !stopped(ctx.stop) && Instant::now() < end {
                if let Ok(mut c) = (ctx.connect)() {
                    if let Ok(p) = wl.prepare(&mut c, ctx.cap) {
                        seen_late = p.late_prepares;
                        r.late_prepares += p.len() as u64;
                        conn = Some(c);
                        prepared = Some(p);
                        r.reconnects += 1;
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        if let (Some(t), Some(p)) = (next_intended.as_mut(), period) {
            *t += p;
        }
    }
    if let Some(t) = next_intended {
        let now = Instant::now().min(end);
        if t < now {
            r.lag_s = (now - t).as_secs_f64();
        }
    }
    r.executes += prepared.map_or(0, |p| p.executes);
    r
}

/// The server's prepared-statement limit and how many statements are prepared now (None when
/// they cannot be read: the capacity is then not limited).
fn stmt_limits(conn: &mut mysql::Conn) -> (Option<u64>, u64) {
    let max: Option<u64> = conn
        .query_first("SELECT @@GLOBAL.max_prepared_stmt_count")
        .ok()
        .flatten();
    let in_use: u64 = conn
        .query_first::<(String, u64), _>("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")
        .ok()
        .flatten()
        .map(|(_, v)| v)
        .unwrap_or(0);
    (max, in_use)
}

/// The step's connections, opened before its clock starts.
enum Opened {
    Threads(Vec<mysql::Conn>),
    /// Connections, their connector (reconnects), worker threads.
    Events(Vec<WireConn>, WireConnector, usize),
}

/// The client a whole run uses: `client` unchanged, except an events client whose own
/// protocol code cannot open a connection to this server (TLS, an auth plugin it does not
/// speak) while the mysql crate can: then the thread client, said once on stderr rather than
/// at every step. When neither can connect, `client` is kept and the first step reports the
/// error as before.
pub fn settle_client(client: Client, connect: &Connector) -> Client {
    let Client::Events {
        connect: wire_connect,
        ..
    } = &client
    else {
        return client;
    };
    match wire_connect() {
        Ok(_) => client,
        Err(e) if connect().is_ok() => {
            eprintln!(
                "spinscope: note: the events client cannot use this connection ({e}); every step uses the thread client"
            );
            Client::Threads
        }
        Err(_) => client,
    }
}

/// Open the step's connections with the client `cfg` names. The event client falls back to
/// the thread client (with a note on stderr) when its own protocol code cannot open a
/// connection the mysql crate can (e.g. TLS, an auth plugin it does not speak); when neither
/// can, the error is the mysql crate's (one line, exit 3).
fn open_clients(cfg: &StepConfig, connect: &Connector) -> Result<Opened> {
    let threads = || -> Result<Opened> {
        let mut conns = Vec::with_capacity(cfg.threads as usize);
        for _ in 0..cfg.threads {
            conns.push(connect()?);
        }
        Ok(Opened::Threads(conns))
    };
    let Client::Events {
        connect: wire_connect,
        workers,
    } = &cfg.client
    else {
        return threads();
    };
    let workers = match *workers {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n as usize,
    }
    .clamp(1, cfg.threads as usize);
    let mut conns = Vec::with_capacity(cfg.threads as usize);
    for _ in 0..cfg.threads {
        match wire_connect() {
            Ok(c) => conns.push(c),
            Err(e) => {
                // Whether the server is reachable at all decides between an error and a note.
                drop(conns);
                let _ = connect()?;
                eprintln!(
                    "spinscope: note: the events client cannot use this connection ({e}); {} uses the thread client",
                    cfg.label
                );
                return threads();
            }
        }
    }
    Ok(Opened::Events(conns, Arc::clone(wire_connect), workers))
}

/// Run one step. Connection failures before the step starts are runtime errors; failures
/// during it are counted, the client reconnects, and the step is marked by its error counts.
pub fn run_step(
    cfg: &StepConfig,
    wl: &Workload,
    connect: &Connector,
    stop: &AtomicBool,
) -> Result<StepOutcome> {
    if cfg.threads == 0 {
        return Err(Error::bad_input("a step needs at least 1 thread"));
    }
    // Open every connection first; connecting and preparing happen before the step clock.
    let setup_start = Instant::now();
    let mut opened = open_clients(cfg, connect)?;
    let needed = wl.statements_needed();
    let (max_count, in_use) = match &mut opened {
        Opened::Threads(conns) => stmt_limits(&mut conns[0]),
        Opened::Events(..) => stmt_limits(&mut connect()?),
    };
    let client_used = opened.client_used();
    let cap = stmt_capacity(needed, cfg.threads, max_count, in_use);
    let (n_windows, window) = windows_of(cfg.duration);
    let shared = Shared {
        clients: (0..cfg.threads)
            .map(|_| CachePadded::new(Counters::default()))
            .collect(),
        done: AtomicBool::new(false),
    };
    let runners = opened.runners();
    let ready = Barrier::new(runners + 1);
    let go = Barrier::new(runners + 1);
    let start_cell: OnceLock<Instant> = OnceLock::new();
    let ctx = Ctx {
        cfg,
        wl,
        connect,
        ready: &ready,
        go: &go,
        start_cell: &start_cell,
        shared: &shared,
        stop,
        cap,
        n_windows,
        window,
    };
    let (held, results) = std::thread::scope(|s| {
        let handles = spawn_runners(s, opened, &ctx);
        let held = hold_step(&ctx, setup_start);
        let results: Vec<ClientResult> = handles
            .into_iter()
            .filter_map(|h| h.join().ok())
            .flatten()
            .collect();
        (held, results)
    });
    let mut out = StepOutcome {
        hist: new_histogram(),
        txns: 0,
        queries: 0,
        elapsed_s: held.measured_s,
        errors: BTreeMap::new(),
        retries: BTreeMap::new(),
        reconnects: 0,
        windows_tps: full_windows_tps(&results, &held, n_windows, window),
        window_s: window.as_secs_f64(),
        stmt_capacity: cap,
        stmts_needed: needed,
        late_prepares: 0,
        setup_s: held.setup_s,
        interrupted: held.interrupted,
        schedule_lag_s: 0.0,
        first_error: None,
        executes: 0,
        executes_unanswered: 0,
        client: client_used,
    };
    for r in results {
        out.add(r);
    }
    Ok(out)
}

impl Opened {
    /// Threads that run the clients.
    fn runners(&self) -> usize {
        match self {
            Opened::Threads(c) => c.len(),
            Opened::Events(_, _, workers) => *workers,
        }
    }

    /// The client kind, and whether its first connection speaks TLS.
    fn client_used(&mut self) -> super::ClientUsed {
        match self {
            Opened::Threads(conns) => super::ClientUsed {
                kind: super::ClientKind::Threads,
                tls: super::session_tls(&mut conns[0]),
            },
            Opened::Events(conns, ..) => super::ClientUsed {
                kind: super::ClientKind::Events,
                tls: conns[0].tls(),
            },
        }
    }
}

/// Start the runners in `s`: a thread per connection, or the event workers with client i on
/// worker i % workers. Each hands back the results of its clients.
fn spawn_runners<'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    opened: Opened,
    ctx: &'scope Ctx<'_>,
) -> Vec<std::thread::ScopedJoinHandle<'scope, Vec<ClientResult>>> {
    match opened {
        Opened::Threads(conns) => conns
            .into_iter()
            .enumerate()
            .map(|(i, conn)| s.spawn(move || vec![client(i as u32, ctx, conn)]))
            .collect(),
        Opened::Events(conns, wire_connect, workers) => {
            // Client i goes to worker i % workers.
            let mut shares: Vec<Vec<(u32, WireConn)>> = (0..workers).map(|_| Vec::new()).collect();
            for (i, c) in conns.into_iter().enumerate() {
                shares[i % workers].push((i as u32, c));
            }
            shares
                .into_iter()
                .map(|share| {
                    let wire_connect = wire_connect.clone();
                    s.spawn(move || events::worker(ctx, &wire_connect, share))
                })
                .collect()
        }
    }
}

/// What the step clock saw.
struct Held {
    /// Seconds from the first connection to the step clock's start.
    setup_s: f64,
    /// Seconds of the measured window that ran.
    measured_s: f64,
    interrupted: bool,
}

/// The calling thread's part of a step: start the clock once every client is connected and
/// prepared, print progress lines until the end (or a stop), then tell the clients it is over.
fn hold_step(ctx: &Ctx<'_>, setup_start: Instant) -> Held {
    let cfg = ctx.cfg;
    // Every client connected and prepared: now the clock starts.
    ctx.ready.wait();
    let t0 = Instant::now();
    let setup_s = t0.duration_since(setup_start).as_secs_f64();
    let _ = ctx.start_cell.set(t0);
    ctx.go.wait();
    let measure_from = t0 + cfg.warmup;
    let end = measure_from + cfg.duration;
    let interrupted = watch_clock(ctx, t0, end);
    let stop_at = Instant::now().min(end);
    let measured_s = stop_at
        .saturating_duration_since(measure_from)
        .as_secs_f64();
    ctx.shared.done.store(true, Ordering::Relaxed);
    Held {
        setup_s,
        measured_s,
        interrupted,
    }
}

/// Wait for `end` from the clock's start `t0`, printing a progress line every
/// `report_interval`; true when stopped before the end.
fn watch_clock(ctx: &Ctx<'_>, t0: Instant, end: Instant) -> bool {
    let cfg = ctx.cfg;
    let measure_from = t0 + cfg.warmup;
    let mut next_report: Option<Instant> = cfg.report_interval.map(|d| t0 + d);
    let mut last_report = (t0, 0u64);
    loop {
        let now = Instant::now();
        if stopped(ctx.stop) {
            return true;
        }
        if now >= end {
            return false;
        }
        if next_report.is_some_and(|t| now >= t) {
            let all = ctx.shared.sum(|c| &c.all_txns);
            let dt = now.duration_since(last_report.0).as_secs_f64();
            let phase = if now < measure_from {
                "warm-up"
            } else {
                "measure"
            };
            eprintln!(
                "spinscope: [{:>5.1}s] {} {phase}: {:.0} tps, errors {}",
                now.duration_since(t0).as_secs_f64(),
                cfg.label,
                (all - last_report.1) as f64 / dt.max(1e-9),
                ctx.shared.sum(|c| &c.errors)
            );
            last_report = (now, all);
            next_report = cfg.report_interval.map(|d| now + d);
        }
        let wake = [Some(end), next_report]
            .into_iter()
            .flatten()
            .filter(|t| *t > now)
            .min()
            .unwrap_or(end);
        std::thread::sleep((wake - now).min(Duration::from_millis(50)));
    }
}

/// Throughput of each window the step covered completely (all of them unless interrupted),
/// summed over the clients.
fn full_windows_tps(
    results: &[ClientResult],
    held: &Held,
    n_windows: usize,
    window: Duration,
) -> Vec<f64> {
    let full = if held.interrupted {
        ((held.measured_s / window.as_secs_f64()) + 1e-9).floor() as usize
    } else {
        n_windows
    }
    .min(n_windows);
    let mut counts = vec![0u64; n_windows];
    for r in results {
        for (c, v) in counts.iter_mut().zip(&r.windows) {
            *c += v;
        }
    }
    counts[..full]
        .iter()
        .map(|&c| c as f64 / window.as_secs_f64())
        .collect()
}

impl StepOutcome {
    /// Add one client's result.
    fn add(&mut self, r: ClientResult) {
        self.late_prepares += r.late_prepares;
        self.executes += r.executes;
        self.executes_unanswered += r.executes_unanswered;
        let _ = self.hist.add(&r.hist);
        self.txns += r.txns;
        self.queries += r.queries;
        self.reconnects += r.reconnects;
        self.schedule_lag_s = self.schedule_lag_s.max(r.lag_s);
        for (k, v) in r.errors {
            *self.errors.entry(k).or_default() += v;
        }
        for (k, v) in r.retries {
            *self.retries.entry(k).or_default() += v;
        }
        if self.first_error.is_none() {
            self.first_error = r.first_error;
        }
    }
}

/// The sweep's watch on the server around each step: its `Uptime` (to notice a restart) and
/// the variables a variant set (to notice a change under the load), over its own connection,
/// reconnecting once when the server dropped it.
pub struct ServerProbe {
    connect: Connector,
    conn: Option<mysql::Conn>,
}

/// A server value as text, the way the server prints it.
fn value_text(v: &mysql::Value) -> String {
    match v {
        mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        mysql::Value::NULL => "NULL".into(),
        mysql::Value::Int(i) => i.to_string(),
        mysql::Value::UInt(u) => u.to_string(),
        mysql::Value::Float(f) => f.to_string(),
        mysql::Value::Double(f) => f.to_string(),
        other => other.as_sql(false).trim_matches('\'').to_string(),
    }
}

impl ServerProbe {
    pub fn new(connect: Connector) -> ServerProbe {
        ServerProbe {
            connect,
            conn: None,
        }
    }

    fn with<T>(
        &mut self,
        f: impl Fn(&mut mysql::Conn) -> mysql::Result<Option<T>>,
    ) -> std::result::Result<T, String> {
        for attempt in 0..2 {
            if self.conn.is_none() {
                match (self.connect)() {
                    Ok(c) => self.conn = Some(c),
                    Err(e) if attempt == 1 => return Err(e.to_string()),
                    Err(_) => continue,
                }
            }
            let c = self.conn.as_mut().expect("set above");
            match f(c) {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => return Err("no row".into()),
                Err(e) => {
                    self.conn = None;
                    if attempt == 1 {
                        return Err(describe_error(&e).1);
                    }
                }
            }
        }
        Err("no connection".into())
    }

    /// The server's `Uptime` in seconds.
    pub fn uptime(&mut self) -> std::result::Result<u64, String> {
        self.with(|c| {
            c.query_first::<(String, u64), _>("SHOW GLOBAL STATUS LIKE 'Uptime'")
                .map(|r| r.map(|(_, v)| v))
        })
    }

    /// The server's `Uptime` and the id of a connection opened for this read. Connection ids
    /// only grow while a server runs and start again near 1 after a restart, so a later mark
    /// with a smaller id proves a restart even when `Uptime` (whole seconds) cannot, e.g. a
    /// young server that restarted within a second.
    pub fn mark(&mut self) -> std::result::Result<(u64, u64), String> {
        self.conn = None;
        let up = self.uptime()?;
        let id = self.with(|c| c.query_first::<u64, _>("SELECT CONNECTION_ID()"))?;
        Ok((up, id))
    }

    /// `@@GLOBAL.var` as text (the name was validated as an identifier by the variant parser).
    pub fn global(&mut self, var: &str) -> std::result::Result<String, String> {
        let sql = format!("SELECT @@GLOBAL.{var}");
        self.with(|c| {
            c.query_first::<mysql::Value, _>(&sql)
                .map(|r| r.map(|v| value_text(&v)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_tile_the_measured_period() {
        let (k, w) = windows_of(Duration::from_secs(10));
        assert_eq!((k, w), (20, Duration::from_millis(500)));
        let (k, w) = windows_of(Duration::from_millis(1200));
        assert_eq!(k, 2);
        assert!((w.as_secs_f64() - 0.6).abs() < 1e-9);
        assert_eq!(windows_of(Duration::from_millis(200)).0, 1);
    }

    #[test]
    fn statement_capacity_respects_the_server_limit() {
        // read-write at 4 tables, 64 clients, default limit 16382: everything fits.
        assert_eq!(stmt_capacity(36, 64, Some(16382), 0), 36);
        // 64 tables x 9 statements x 64 clients = 36,864 > 16,382: each gets its share.
        let c = stmt_capacity(576, 64, Some(16382), 100);
        assert_eq!(c, ((16382 - 100) as f64 * STMT_BUDGET_SHARE) as usize / 64);
        assert!(c * 64 < 16382);
        // A server that allows none still gets 1 (the error then names the limit).
        assert_eq!(stmt_capacity(10, 8, Some(0), 0), 1);
        assert_eq!(stmt_capacity(10, 8, None, 0), 10);
    }
}
