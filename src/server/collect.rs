//! Live collection: versions, variables, status, INNODB STATUS, performance_schema waits
//! (optionally enabling the instruments for the window and restoring them), the burst
//! sampler and host counters. Everything lands in a [`Snapshot`]; analysis happens elsewhere.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::conn::{connect_target, Target};
use super::snapshot::*;
use crate::error::Result;
use crate::meter::{Meter, Silent};
use crate::session::{self, Session};

/// What to collect.
#[derive(Debug, Clone)]
pub struct CollectOpts {
    /// Observation window in seconds (0: no sampling, no deltas).
    pub window_s: f64,
    /// Burst sampler rate in Hz.
    pub hz: f64,
    /// Rate of the SQL counters when the /proc series runs at `hz` (local server); None:
    /// [`SQL_HZ_BESIDE_PROC`] (capped at `hz`).
    pub sql_hz: Option<f64>,
    /// Turn the wait/synch instruments on for the window (and restore them).
    pub enable_instruments: bool,
    /// Host facts from a file, used when the server is not local.
    pub host_facts: Option<HostFacts>,
    /// `doctor --rt`: capture the server's response times over the window (local server).
    pub rt: bool,
    /// Read the change journal without warning on stderr (watch's captures: the watcher said
    /// it when it connected); the findings go in the snapshot either way.
    pub quiet_journal: bool,
}

pub(super) use super::refusal::refusal;

/// What went wrong so far: refused queries and other collection problems.
#[derive(Default)]
struct Ctx {
    refused: Vec<Refusal>,
    notes: Vec<String>,
}

impl Ctx {
    fn query<T: mysql::prelude::FromRow>(
        &mut self,
        conn: &mut dyn Session,
        sql: &str,
        what: &str,
        privilege: &str,
    ) -> Option<Vec<T>> {
        match conn.query::<T, _>(sql) {
            Ok(v) => Some(v),
            Err(e) => {
                match refusal(&e, what, privilege) {
                    Some(r) => self.refused.push(r),
                    None => self.notes.push(format!("{what}: {e}")),
                }
                None
            }
        }
    }
}

fn pairs(rows: Vec<(String, Option<String>)>) -> BTreeMap<String, String> {
    rows.into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.unwrap_or_default()))
        .collect()
}

const STATUS_SQL: &str = "SHOW GLOBAL STATUS";
const PFS_WAITS_SQL: &str = "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT \
     FROM performance_schema.events_waits_summary_global_by_event_name \
     WHERE EVENT_NAME LIKE 'wait/%' AND COUNT_STAR > 0";

fn read_waits(ctx: &mut Ctx, conn: &mut dyn Session) -> Vec<WaitRow> {
    ctx.query::<(String, u64, u64)>(
        conn,
        PFS_WAITS_SQL,
        "performance_schema.events_waits_summary_global_by_event_name",
        "SELECT on performance_schema.*",
    )
    .unwrap_or_default()
    .into_iter()
    .map(|(event, count, wait_ps)| WaitRow {
        event,
        count,
        wait_ps,
    })
    .collect()
}

/// Instruments and consumers changed for the window; put back exactly on `restore` or drop.
/// The change is journaled (fsynced) before it is made, and the record closes only after the
/// state reads back equal (see `crate::journal`); the admin connection is reopened when the
/// server dropped it (a KILL).
pub struct InstrumentGuard<'a> {
    conn: Option<Box<dyn Session>>,
    /// Opens a new session on the server (after a KILL of ours).
    open: &'a Opener<'a>,
    target: Target,
    instruments: Vec<(String, String, String)>,
    consumers: Vec<(String, String)>,
    record: Option<crate::journal::Record>,
    /// Number of wait/synch instruments.
    total: u64,
    attempted: bool,
    pub restored: bool,
}

/// What the journal names this change by.
pub const INSTRUMENTS_WHAT: &str = "performance_schema wait/synch instruments";

/// The state the guard changes, readable: "42 of 330 on and timed, global_instrumentation
/// YES". Compared as text before and after.
const STATE_SQL: &str = "SELECT CONCAT((SELECT COUNT(*) FROM performance_schema.setup_instruments \
     WHERE NAME LIKE 'wait/synch/%' AND ENABLED = 'YES' AND TIMED = 'YES'), ' of ', \
     (SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'), \
     ' on and timed, global_instrumentation ', \
     (SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME = 'global_instrumentation'))";

use crate::globals::sql_string as sq;

/// The statements that put the recorded state back: one UPDATE per distinct (ENABLED, TIMED).
/// When every wait/synch instrument had the same state (MariaDB's default: all off), one
/// short statement does.
fn restore_statements(
    instruments: &[(String, String, String)],
    consumers: &[(String, String)],
    total: u64,
) -> Vec<String> {
    let mut groups: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (name, en, timed) in instruments {
        groups
            .entry((en.clone(), timed.clone()))
            .or_default()
            .push(sq(name));
    }
    let all = groups.len() == 1 && instruments.len() as u64 == total;
    let mut out: Vec<String> = groups
        .into_iter()
        .map(|((en, timed), names)| {
            let which = if all {
                "NAME LIKE 'wait/synch/%'".to_string()
            } else {
                format!("NAME IN ({})", names.join(", "))
            };
            format!(
                "UPDATE performance_schema.setup_instruments SET ENABLED = {}, TIMED = {} WHERE {which}",
                sq(&en),
                sq(&timed),
            )
        })
        .collect();
    for (name, en) in consumers {
        out.push(format!(
            "UPDATE performance_schema.setup_consumers SET ENABLED = {} WHERE NAME = {}",
            sq(en),
            sq(name)
        ));
    }
    out
}

/// The named lock a live holder of the instruments holds.
const INSTRUMENTS_LOCK: &str = "spinscope:pfs_wait_synch";

/// The instruments change as the guard protocol (`crate::change`) sees it: the wait/synch
/// instruments and the global consumer that were not on, put back one UPDATE per state.
struct Instruments<'a> {
    instruments: &'a [(String, String, String)],
    consumers: &'a [(String, String)],
    total: u64,
}

impl crate::change::Change for Instruments<'_> {
    fn what(&self) -> String {
        INSTRUMENTS_WHAT.into()
    }
    fn lock(&self) -> String {
        INSTRUMENTS_LOCK.into()
    }
    fn check_sql(&self) -> String {
        STATE_SQL.into()
    }
    fn restore_sql(&self, _original: &str) -> Vec<String> {
        restore_statements(self.instruments, self.consumers, self.total)
    }
}

fn scalar(c: &mut dyn Session, sql: &str) -> mysql::Result<String> {
    let v: Option<Option<String>> = c.query_first(sql)?;
    Ok(v.flatten().unwrap_or_default())
}

/// How a collection opens a session on its server: `connect_target` boxed, or a scripted
/// server in tests.
pub type Opener<'a> = dyn Fn() -> Result<Box<dyn Session>> + 'a;

impl<'a> InstrumentGuard<'a> {
    /// Record the current state of wait/synch instruments and the global consumer, journal it,
    /// then enable them, on `conn` (a session of its own, opened by `open`, which reopens it).
    /// Refuses (bad input) while another spinscope holds or left the instruments changed on
    /// this server.
    pub fn enable(
        conn: Box<dyn Session>,
        open: &'a Opener<'a>,
        target: &Target,
        shown: &mut dyn Meter,
    ) -> Result<InstrumentGuard<'a>> {
        use crate::change::{self, Conflict};
        use crate::journal;
        let mut g = InstrumentGuard {
            conn: Some(conn),
            open,
            target: target.clone(),
            instruments: Vec::new(),
            consumers: Vec::new(),
            record: None,
            total: 0,
            attempted: false,
            restored: false,
        };
        let err = |e: mysql::Error| match refusal(
            &e,
            "enabling performance_schema instruments",
            "UPDATE on performance_schema.setup_instruments and setup_consumers",
        ) {
            Some(r) => {
                crate::Error::runtime(format!("{} needs {}: {}", r.what, r.privilege, r.message))
            }
            None => crate::Error::runtime(format!("enabling instruments: {e}")),
        };
        let c = g.conn.as_deref_mut().expect("guard connection");
        let server = journal::identify(c, &target.endpoint(), &target.flags_hint()).map_err(err)?;
        let nothing = Instruments {
            instruments: &[],
            consumers: &[],
            total: 0,
        };
        match change::conflict(c, &server, &nothing) {
            None => {}
            Some(Conflict::Live(r)) => {
                return Err(crate::Error::bad_input(format!(
                    "--enable-instruments: another spinscope holds them: {}; wait until it ends, or run without --enable-instruments",
                    journal::describe(&r)
                )))
            }
            Some(Conflict::LeftChanged(r)) => {
                return Err(crate::Error::bad_input(format!(
                    "--enable-instruments: {} and it was never set back; run `spinscope restore {}` first",
                    journal::describe(&r),
                    server.connect_hint
                )))
            }
        }
        if !change::take_lock(c, INSTRUMENTS_LOCK).map_err(err)? {
            return Err(crate::Error::bad_input(
                "--enable-instruments: another spinscope holds the lock spinscope:pfs_wait_synch on this server; wait until it ends",
            ));
        }
        g.instruments = c
            .query(
                "SELECT NAME, ENABLED, TIMED FROM performance_schema.setup_instruments \
                 WHERE NAME LIKE 'wait/synch/%' AND (ENABLED <> 'YES' OR TIMED <> 'YES')",
            )
            .map_err(err)?;
        g.consumers = c
            .query(
                "SELECT NAME, ENABLED FROM performance_schema.setup_consumers \
                 WHERE NAME = 'global_instrumentation' AND ENABLED <> 'YES'",
            )
            .map_err(err)?;
        if g.instruments.is_empty() && g.consumers.is_empty() {
            let _ = c.query_drop("DO RELEASE_LOCK('spinscope:pfs_wait_synch')");
            g.attempted = true;
            g.restored = true;
            return Ok(g);
        }
        let original = scalar(c, STATE_SQL).map_err(err)?;
        let total: Option<u64> = c
            .query_first(
                "SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'",
            )
            .map_err(err)?;
        g.total = total.unwrap_or(0);
        let t = total.unwrap_or(0);
        let consumer_was = g.consumers.first().map_or("YES", |c| c.1.as_str());
        // The states between the statements of the change and of its restore are spinscope's
        // too: instruments on with the consumer as it was; the consumer on with the
        // instruments as they were.
        let also_ours = vec![
            format!("{t} of {t} on and timed, global_instrumentation {consumer_was}"),
            original
                .rsplit_once(' ')
                .map(|(head, _)| format!("{head} YES"))
                .unwrap_or_default(),
        ];
        let rec = journal::Record {
            also_ours,
            ..change::record(
                &g.change(),
                &server,
                original,
                format!("{t} of {t} on and timed, global_instrumentation YES"),
                "",
            )
        };
        // Durable record first, then the change.
        journal::open(&rec)?;
        g.record = Some(rec);
        let c = g.conn.as_deref_mut().expect("guard connection");
        let r = change::send_journaled(
            c,
            &[
                "UPDATE performance_schema.setup_instruments SET ENABLED = 'YES', TIMED = 'YES' \
                 WHERE NAME LIKE 'wait/synch/%'",
                "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' \
                 WHERE NAME = 'global_instrumentation'",
            ],
        );
        match r {
            Ok(()) => Ok(g),
            Err(e) => {
                g.restore(shown);
                Err(err(e))
            }
        }
    }

    fn change(&self) -> Instruments<'_> {
        Instruments {
            instruments: &self.instruments,
            consumers: &self.consumers,
            total: self.total,
        }
    }

    /// How many instruments were changed.
    pub fn changed(&self) -> usize {
        self.instruments.len() + self.consumers.len()
    }

    fn run_restore(&mut self, stmts: &[String], expect: &str) -> std::result::Result<(), String> {
        let mut last = String::new();
        for attempt in 0..2 {
            if self.conn.is_none() || attempt > 0 {
                // The server may have dropped (KILLed) our connection: open a new one.
                self.conn = (self.open)().ok();
            }
            let Some(c) = self.conn.as_deref_mut() else {
                last = "cannot reconnect".into();
                continue;
            };
            let r = stmts
                .iter()
                .try_for_each(|s| c.query_drop(s))
                .and_then(|_| scalar(c, STATE_SQL));
            match r {
                Ok(v) if crate::journal::same_value(&v, expect) => {
                    let _ = c.query_drop("DO RELEASE_LOCK('spinscope:pfs_wait_synch')");
                    return Ok(());
                }
                Ok(v) => {
                    return Err(format!(
                        "the state reads {v} after the restore, not {expect}"
                    ))
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    /// Put the recorded state back (once), saying how it went as a note to `shown` (with the
    /// statements to run by hand when it failed).
    pub fn restore(&mut self, shown: &mut dyn Meter) -> bool {
        if self.attempted {
            return self.restored;
        }
        self.attempted = true;
        let stmts = crate::change::Change::restore_sql(&self.change(), "");
        let expect = self
            .record
            .as_ref()
            .map(|r| r.original.clone())
            .unwrap_or_default();
        match self.run_restore(&stmts, &expect) {
            Ok(()) => {
                if let Some(r) = self.record.take() {
                    crate::journal::close(&r.id);
                }
                shown.note(&format!(
                    "restored {} performance_schema setting(s) (read back)",
                    self.changed()
                ));
                self.restored = true;
            }
            Err(why) => {
                shown.note(&format!(
                    "could not restore {} performance_schema setting(s) ({why}); run `spinscope restore {}`, or:\n{}",
                    self.changed(),
                    self.target.flags_hint(),
                    stmts.iter().map(|s| format!("{s};")).collect::<Vec<_>>().join("\n")
                ));
            }
        }
        self.restored
    }
}

impl Drop for InstrumentGuard<'_> {
    // Only a panic between `enable` and the collection's own `restore` gets here: the
    // instruments are still put back, nobody is left to show the note to.
    fn drop(&mut self) {
        self.restore(&mut Silent);
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a valid, exclusively borrowed local.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

const BURST_SQL: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN \
     ('Threads_running', 'Threads_connected', 'Questions', 'Innodb_row_lock_current_waits')";

/// What the burst sampler reads, and how often.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstPlan {
    /// The sampler's rate: of the /proc series when it runs, else of the SQL counters.
    pub hz: f64,
    /// The rate of the SQL counters (at most `hz`; rounded to every n-th tick of `hz`).
    pub sql_hz: f64,
    /// The server's pid on this host: count its running threads from /proc at `hz`.
    pub proc_pid: Option<u32>,
    /// Which threads' `stat` each /proc sample reads.
    pub proc_gate: super::proc_threads::Gate,
}

/// The SQL counters' rate beside a /proc series at `hz`, unless the user chose one: 10 Hz
/// (a `SHOW GLOBAL STATUS` costs a MariaDB 10.11 server about 0.5 ms of CPU, so 10 Hz is
/// about 0.5% of a core; docs/PERFORMANCE.md).
pub const SQL_HZ_BESIDE_PROC: f64 = 10.0;

impl BurstPlan {
    /// SQL only, at `hz` (remote servers, and `watch`).
    pub fn sql_only(hz: f64) -> BurstPlan {
        BurstPlan {
            hz,
            sql_hz: hz,
            proc_pid: None,
            proc_gate: super::proc_threads::DEFAULT_GATE,
        }
    }

    /// Every how many ticks of `hz` the SQL counters are read.
    fn sql_every(&self) -> u64 {
        if self.proc_pid.is_none() {
            return 1;
        }
        (self.hz / self.sql_hz.max(1e-3)).round().max(1.0) as u64
    }
}

/// The OS thread id of the server thread serving this session (MariaDB 10.5+:
/// `information_schema.PROCESSLIST.TID`; MySQL 8: `performance_schema.threads.THREAD_OS_ID`).
fn session_tid(conn: &mut dyn Session) -> Option<u32> {
    for sql in [
        "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
        "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID()",
    ] {
        if let Ok(Some(Some(t))) = conn.query_first::<Option<u32>, _>(sql) {
            return Some(t);
        }
    }
    None
}

/// Sample at `hz` on one persistent connection for `window_s` (SQL counters only). See
/// [`burst_sample_plan`].
pub fn burst_sample(
    conn: &mut dyn Session,
    hz: f64,
    window_s: f64,
    stop: &AtomicBool,
    notes: &mut Vec<String>,
) -> BurstRecord {
    burst_sample_plan(conn, &BurstPlan::sql_only(hz), window_s, stop, notes)
}

/// Sample for `window_s` as `plan` says: on a local server the server's running threads from
/// /proc at `plan.hz` and the SQL counters at `plan.sql_hz`, else the SQL counters at
/// `plan.hz`. The sampler's own session is removed from Threads_running and its own statements
/// from Questions. Stops early (keeping what it has) on `stop` or a failed query.
pub fn burst_sample_plan(
    conn: &mut dyn Session,
    plan: &BurstPlan,
    window_s: f64,
    stop: &AtomicBool,
    notes: &mut Vec<String>,
) -> BurstRecord {
    BurstSampler::new(conn, plan, notes).sample(conn, window_s, stop, notes)
}

/// The burst sampler on one connection, kept across windows (`watch` samples in short
/// rounds): the /proc files stay open, the SQL reads keep their place on the tick grid, and
/// Questions counts from the sampler's first read.
pub struct BurstSampler {
    plan: BurstPlan,
    procs: Option<super::proc_threads::ProcThreads>,
    /// (server pid, the TID of the server thread serving this session).
    session: Option<(u32, u32)>,
    every: u64,
    tick: u64,
    q0: Option<u64>,
    issued: u64,
}

impl BurstSampler {
    /// Open the /proc series when `plan` asks for it (a note when it cannot).
    pub fn new(conn: &mut dyn Session, plan: &BurstPlan, notes: &mut Vec<String>) -> BurstSampler {
        let mut procs = plan
            .proc_pid
            .and_then(super::proc_threads::ProcThreads::open);
        if plan.proc_pid.is_some() && procs.is_none() {
            notes.push(format!(
                "burst sampler: /proc/{}/task not readable; SQL counters only",
                plan.proc_pid.unwrap_or(0)
            ));
        }
        let every = if procs.is_some() { plan.sql_every() } else { 1 };
        // The server thread serving this session, to measure what the sampler costs it.
        let session = procs
            .as_ref()
            .and_then(|p| session_tid(conn).map(|t| (p.pid(), t)));
        if let Some(p) = procs.as_mut() {
            p.exclude(session.map(|s| s.1));
            p.set_gate(plan.proc_gate);
        }
        BurstSampler {
            plan: *plan,
            procs,
            session,
            every,
            tick: 0,
            q0: None,
            issued: 0,
        }
    }

    /// Whether the /proc series runs (a local server whose task directory is readable).
    pub fn has_proc(&self) -> bool {
        self.procs.is_some()
    }

    /// The SQL counters' rate now: `plan.sql_hz` beside the /proc series, else `plan.hz`.
    pub fn sql_hz(&self) -> f64 {
        self.plan.hz / self.every as f64
    }

    /// Sample at `hz` from now on, the SQL counters beside the /proc series at about `sql_hz`
    /// (rounded to every n-th tick; without the /proc series they are read at `hz`).
    pub fn set_rates(&mut self, hz: f64, sql_hz: f64) {
        self.plan.hz = hz;
        self.plan.sql_hz = sql_hz.min(hz);
        self.every = if self.procs.is_some() {
            self.plan.sql_every()
        } else {
            1
        };
    }

    /// How the /proc series counts (the words of `ProcSeries::source`), when it runs.
    pub fn proc_source(&self) -> Option<String> {
        self.procs
            .as_ref()
            .map(|p| proc_source(p.pid(), p.gate(), p.gate_note()))
    }

    /// Sample for `window_s` (see [`burst_sample_plan`]); `t_ms` counts from this window's
    /// start, `questions` from the sampler's first read.
    pub fn sample(
        &mut self,
        conn: &mut dyn Session,
        window_s: f64,
        stop: &AtomicBool,
        notes: &mut Vec<String>,
    ) -> BurstRecord {
        let hz = self.plan.hz;
        let every = self.every;
        let session = self.session;
        let session_cpu0 = session.and_then(|(p, t)| super::proc_threads::thread_cpu_ns(p, t));
        let source = self.proc_source();
        let period = Duration::from_secs_f64(1.0 / hz.max(0.001));
        let window = Duration::from_secs_f64(window_s.max(0.0));
        let n_sql = (hz * window_s / every as f64) as usize + 8;
        let mut points = Vec::with_capacity(n_sql);
        let mut proc_points = Vec::with_capacity(if self.procs.is_some() {
            (hz * window_s) as usize + 8
        } else {
            0
        });
        let mut rtts_us = Vec::with_capacity(n_sql);
        let cpu0 = thread_cpu_ns();
        let start = Instant::now();
        let mut next = start;
        let mut interrupted = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            let now = Instant::now();
            if now.duration_since(start) >= window {
                break;
            }
            if next > now && !crate::interrupt::sleep(next - now, stop) {
                continue; // stopped: the top of the loop ends it
            }
            let t = start.elapsed();
            let sql_tick = self.tick % every == 0;
            self.tick += 1;
            // /proc first: the session's own server thread is idle between statements.
            if let Some(p) = self.procs.as_mut() {
                match p.count() {
                    Some(c) => proc_points.push(ProcPoint {
                        t_ms: t.as_secs_f64() * 1e3,
                        running: c.running,
                        threads: c.threads,
                    }),
                    None => {
                        notes.push(format!(
                            "burst sampler: the server process left /proc after {:.1} s",
                            t.as_secs_f64()
                        ));
                        self.procs = None;
                        self.every = 1;
                    }
                }
            }
            if sql_tick {
                let t = start.elapsed();
                let q_start = Instant::now();
                let rows: Vec<(String, String)> = match conn.query(BURST_SQL) {
                    Ok(r) => r,
                    Err(e) => {
                        notes.push(format!(
                            "burst sampler stopped after {:.1} s: {e}",
                            t.as_secs_f64()
                        ));
                        interrupted = true;
                        break;
                    }
                };
                rtts_us.push(q_start.elapsed().as_secs_f64() * 1e6);
                self.issued += 1;
                let get = |n: &str| {
                    rows.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(n))
                        .and_then(|(_, v)| v.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                let q = get("Questions");
                let q0v = *self.q0.get_or_insert(q);
                points.push(BurstPoint {
                    t_ms: t.as_secs_f64() * 1e3,
                    // Our own session is running while it reads the counter.
                    threads_running: get("Threads_running").saturating_sub(1),
                    threads_connected: get("Threads_connected").saturating_sub(1),
                    questions: q.saturating_sub(q0v).saturating_sub(self.issued - 1),
                    row_lock_waits: get("Innodb_row_lock_current_waits"),
                });
            }
            next += period;
            let now = Instant::now();
            if next < now {
                // Behind schedule: do not fire a catch-up burst, the gap shows in the record.
                next = now;
            }
        }
        let sampler_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
        // Measured only while the session kept its thread (one thread per connection).
        let server_session_cpu_ns = match (session, session_cpu0) {
            (Some((p, t)), Some(c0)) if !interrupted && session_tid(conn) == Some(t) => {
                super::proc_threads::thread_cpu_ns(p, t).map(|c1| c1.saturating_sub(c0))
            }
            _ => None,
        };
        rtts_us.sort_by(f64::total_cmp);
        let query_p50_us = rtts_us.get(rtts_us.len() / 2).copied().unwrap_or(0.0);
        let last_ms = points
            .last()
            .map(|p| p.t_ms)
            .into_iter()
            .chain(proc_points.last().map(|p| p.t_ms))
            .fold(0.0, f64::max);
        let pid = self.plan.proc_pid.unwrap_or(0);
        BurstRecord {
            target_hz: hz,
            window_s: start
                .elapsed()
                .as_secs_f64()
                .min(window_s.max(0.0))
                .max(last_ms / 1e3),
            points,
            sampler_cpu_ns,
            query_p50_us,
            interrupted,
            sql_hz: (!proc_points.is_empty() && every > 1).then(|| hz / every as f64),
            proc_running: (!proc_points.is_empty()).then(|| ProcSeries {
                source: source.unwrap_or_else(|| proc_source(pid, self.plan.proc_gate, None)),
                pid,
                target_hz: hz,
                points: proc_points,
            }),
            server_session_cpu_ns,
        }
    }
}

/// How the /proc series was counted, in words (the snapshot's `proc_running.source`).
/// `gate_note` says why the gate asked for was not used (see `ProcThreads::gate_note`).
pub fn proc_source(pid: u32, gate: super::proc_threads::Gate, gate_note: Option<&str>) -> String {
    use super::proc_threads::Gate;
    let full = |n: u32| {
        if n == 0 {
            String::new()
        } else {
            format!(", every thread's every {n}th sample while /proc/loadavg shows more runnable tasks than CPUs")
        }
    };
    format!(
        "threads of server pid {pid} in state R (on a CPU or runnable; the sampler's own session excluded when its thread is known), /proc/{pid}/task/*/stat{}{}",
        match gate {
            Gate::Every => String::new(),
            Gate::Schedstat { full_every } => format!(
                " (a thread's stat read when its schedstat changed or it was R at its last read{}; none when /proc/loadavg shows nothing else runnable on the host)",
                full(full_every)
            ),
            Gate::Group { full_every } => format!(
                " (none read when no thread was R at the last sample and the process's taskstats sums show no thread put on a CPU since, or /proc/loadavg shows nothing else runnable on the host; else a thread's stat read when its schedstat changed or it was R at its last read{}, unless /proc/loadavg shows nothing else runnable)",
                full(full_every)
            ),
        },
        gate_note.map_or(String::new(), |n| format!(
            "; the taskstats gate could not be used: {n}"
        ))
    )
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// [`collect_metered`] showing nothing.
pub fn collect(t: &Target, o: &CollectOpts, stop: &AtomicBool) -> Result<Snapshot> {
    collect_metered(t, o, stop, &mut Silent)
}

/// Collect everything from a live server, the window told to `shown` as a period. Fails
/// (exit 3) only when the first connection or the version query fails; later refusals and
/// failures become `refused` / `notes`.
pub fn collect_metered(
    t: &Target,
    o: &CollectOpts,
    stop: &AtomicBool,
    shown: &mut dyn Meter,
) -> Result<Snapshot> {
    collect_on(t, &|| connect_target(t).map(session::boxed), o, stop, shown)
}

/// [`collect_metered`] on the sessions `open` opens (each a session on the server `t` names):
/// the first is the collection's own, others the instruments' and a reconnect's.
pub fn collect_on(
    t: &Target,
    open: &Opener<'_>,
    o: &CollectOpts,
    stop: &AtomicBool,
    shown: &mut dyn Meter,
) -> Result<Snapshot> {
    let (mut live, version, version_comment) = Live::open(t, open, o, shown)?;
    let variables = pairs(
        live.query(
            "SHOW GLOBAL VARIABLES",
            "global variables",
            "none (any user)",
        )
        .unwrap_or_default(),
    );
    let innodb_status = live.innodb_status();
    let var_origins = super::var_origin::scrape(&mut *live.conn, &version, &mut live.ctx.refused);
    let local = t.is_local();
    let mut host = if local {
        Some(local_host(o, &variables, shown))
    } else {
        o.host_facts.clone()
    };
    let (mut pfs, mut guard) = live.pfs_before(&variables, shown)?;
    let status_before = live.status();
    let pid = host.as_ref().and_then(|h| h.server_pid);
    if local {
        counters_before(host.as_mut(), pid);
    }
    let t0 = Instant::now();
    if let Some(p) = pfs.as_mut().filter(|p| p.enabled) {
        p.before = read_waits(&mut live.ctx, &mut *live.conn);
    }
    let plan = burst_plan(o, pid.filter(|_| local));
    let sampled = live.window(&variables, &plan, stop, shown);
    let window_s = t0.elapsed().as_secs_f64();
    if let Some(p) = pfs.as_mut().filter(|p| p.enabled) {
        if o.window_s > 0.0 {
            p.after = read_waits(&mut live.ctx, &mut *live.conn);
            p.window_s = window_s;
        }
    }
    let status_after = if o.window_s > 0.0 {
        live.status()
    } else {
        BTreeMap::new()
    };
    if local {
        counters_after(host.as_mut(), pid);
    }
    if let Some(mut g) = guard.take() {
        let ok = g.restore(shown);
        if let Some(p) = pfs.as_mut() {
            p.restored = ok;
        }
    }
    let Ctx { refused, mut notes } = live.ctx;
    let journal = live.journal.map(|j| j.entries()).unwrap_or_default();
    let captured_at_unix_s = now_unix();
    notes.extend(journal_notes(&journal, crate::journal::now_unix()));
    Ok(Snapshot {
        schema: SNAPSHOT_SCHEMA.to_string(),
        captured_at_unix_s,
        target: t.describe(),
        local,
        version,
        version_comment,
        variables,
        status_before,
        status_after,
        window_s: if o.window_s > 0.0 { window_s } else { 0.0 },
        innodb_status,
        pfs,
        burst: sampled.burst,
        host,
        refused,
        notes,
        lost_connection: sampled.lost_connection,
        rt: sampled.rt,
        journal,
        var_origins,
    })
}

/// One collection in progress: what it reads, the connection it reads on, and what went
/// wrong so far.
struct Live<'a> {
    t: &'a Target,
    o: &'a CollectOpts,
    open: &'a Opener<'a>,
    conn: Box<dyn Session>,
    ctx: Ctx,
    /// This server's change journal, read on `conn` when it opened.
    journal: Option<crate::journal::Checked>,
}

/// What the observation window gathered.
struct Sampled {
    burst: Option<BurstRecord>,
    rt: Option<RtRecord>,
    /// The server was gone after the window (no new connection opened).
    lost_connection: bool,
}

impl<'a> Live<'a> {
    /// Connect and read the version: the two steps whose failure fails the collection.
    fn open(
        t: &'a Target,
        open: &'a Opener<'a>,
        o: &'a CollectOpts,
        shown: &mut dyn Meter,
    ) -> Result<(Live<'a>, String, Option<String>)> {
        let mut conn = open()?;
        let journal = super::conn::check_journal(&mut *conn, t);
        if let Some(j) = journal.as_ref().filter(|_| !o.quiet_journal) {
            for w in crate::journal::warnings(&j.findings) {
                shown.note(&w);
            }
        }
        let (version, version_comment) = super::live_settings::version_on(&mut *conn)
            .map_err(|e| super::conn::explain(t, &e))?
            .unwrap_or_default();
        let live = Live {
            t,
            o,
            open,
            conn,
            ctx: Ctx::default(),
            journal,
        };
        Ok((live, version, version_comment))
    }

    fn query<T: mysql::prelude::FromRow>(
        &mut self,
        sql: &str,
        what: &str,
        privilege: &str,
    ) -> Option<Vec<T>> {
        self.ctx.query(&mut *self.conn, sql, what, privilege)
    }

    fn innodb_status(&mut self) -> Option<String> {
        self.query::<(String, String, String)>(
            "SHOW ENGINE INNODB STATUS",
            "SHOW ENGINE INNODB STATUS",
            "PROCESS",
        )
        .and_then(|r| r.into_iter().next())
        // Its TRANSACTIONS section quotes other sessions' statements: no passwords kept.
        .map(|(_, _, s)| crate::secret::redact_sql(&s).into_owned())
    }

    fn status(&mut self) -> BTreeMap<String, String> {
        pairs(
            self.query(STATUS_SQL, "global status", "none (any user)")
                .unwrap_or_default(),
        )
    }

    /// The performance_schema record before the window, and the instruments turned on for
    /// it with `--enable-instruments` (None when not asked, not possible or refused).
    fn pfs_before(
        &mut self,
        variables: &BTreeMap<String, String>,
        shown: &mut dyn Meter,
    ) -> Result<(Option<PfsRecord>, Option<InstrumentGuard<'a>>)> {
        let pfs_on = variables
            .get("performance_schema")
            .is_some_and(|v| v.eq_ignore_ascii_case("ON") || v == "1");
        if pfs_on {
            self.pfs_on(shown).map(|(p, g)| (Some(p), g))
        } else if variables.contains_key("performance_schema") {
            Ok((Some(self.pfs_off(shown)), None))
        } else {
            Ok((None, None))
        }
    }

    /// performance_schema is on: count the wait/synch instruments on and timed, and turn
    /// them on for the window when asked.
    fn pfs_on(
        &mut self,
        shown: &mut dyn Meter,
    ) -> Result<(PfsRecord, Option<InstrumentGuard<'a>>)> {
        let (t, o, open) = (self.t, self.o, self.open);
        let state: Vec<(String, String)> = self
            .query(
                "SELECT ENABLED, TIMED FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'",
                "performance_schema.setup_instruments",
                "SELECT on performance_schema.*",
            )
            .unwrap_or_default();
        let total = state.len() as u64;
        let enabled = state
            .iter()
            .filter(|(e, t)| e == "YES" && t == "YES")
            .count() as u64;
        let mut note = None;
        let mut guard = None;
        if o.enable_instruments && o.window_s > 0.0 {
            match open().and_then(|c| InstrumentGuard::enable(c, open, t, shown)) {
                Err(e @ crate::Error::BadInput(_)) => return Err(e),
                Ok(g) => {
                    note = Some(format!(
                        "--enable-instruments changed {} instrument/consumer setting(s) for the window",
                        g.changed()
                    ));
                    guard = Some(g);
                }
                Err(e) => {
                    self.ctx.refused.push(Refusal {
                        what: "enabling performance_schema instruments".into(),
                        privilege: "UPDATE on performance_schema.*".into(),
                        message: e.to_string(),
                    });
                }
            }
        }
        let pfs = PfsRecord {
            enabled: true,
            synch_instruments_enabled: enabled,
            synch_instruments_total: total,
            enabled_by_us: guard.as_ref().is_some_and(|g| g.changed() > 0),
            restored: true,
            before: Vec::new(),
            after: Vec::new(),
            window_s: 0.0,
            note,
        };
        Ok((pfs, guard))
    }

    /// performance_schema is off: it can only be turned on at server start, so say so
    /// instead of nothing when `--enable-instruments` asked for it.
    fn pfs_off(&self, shown: &mut dyn Meter) -> PfsRecord {
        let o = self.o;
        let note = (o.enable_instruments && o.window_s > 0.0).then(|| {
            let n = "--enable-instruments did nothing: performance_schema is OFF on this server \
                     and can only be turned on at start; add performance_schema=ON under [mysqld] \
                     and restart the server, then rerun";
            shown.note(n);
            n.to_string()
        });
        PfsRecord {
            enabled: false,
            synch_instruments_enabled: 0,
            synch_instruments_total: 0,
            enabled_by_us: false,
            restored: true,
            before: Vec::new(),
            after: Vec::new(),
            window_s: 0.0,
            note,
        }
    }

    /// The observation window (none when `window_s` is 0): response times when asked, the
    /// burst sampler on this connection, shown to `shown` as a period. Reconnects when the
    /// server dropped the sampler's session.
    fn window(
        &mut self,
        variables: &BTreeMap<String, String>,
        plan: &BurstPlan,
        stop: &AtomicBool,
        shown: &mut dyn Meter,
    ) -> Sampled {
        let (t, o) = (self.t, self.o);
        let mut rt = (o.rt && o.window_s > 0.0)
            .then(|| super::rt_window::start(t, variables, &mut *self.conn, o.window_s));
        if o.window_s > 0.0 {
            shown.period(
                "doctor",
                "sampling",
                o.window_s,
                crate::meter::DOCTOR_WINDOW_ASIDE,
            );
        }
        if let Some(r) = rt.as_mut() {
            r.window_starts();
        }
        let burst = (o.window_s > 0.0).then(|| {
            burst_sample_plan(&mut *self.conn, plan, o.window_s, stop, &mut self.ctx.notes)
        });
        let rt = rt.map(super::rt_window::RtWindow::finish);
        shown.finish();
        if stop.load(Ordering::Relaxed)
            && burst
                .as_ref()
                .is_some_and(|b| b.interrupted && b.points.len() < 2)
        {
            self.ctx.notes.push(
                "stopped (Ctrl-C or a signal) within the window's first sampling period: too \
                 short for burst figures"
                    .into(),
            );
        }
        // A failed sampler query that was not Ctrl-C: check whether the server is still there.
        let lost = burst
            .as_ref()
            .is_some_and(|b| b.interrupted && !stop.load(Ordering::Relaxed))
            && self.conn.ping().is_err();
        Sampled {
            burst,
            rt,
            lost_connection: lost && !self.reconnect(),
        }
    }

    /// Our connection is gone; if a new one opens, the server is there: it dropped (KILLed)
    /// the sampler's session, so go on with the new one. False when none opens.
    fn reconnect(&mut self) -> bool {
        let Ok(c) = (self.open)() else {
            return false;
        };
        self.conn = c;
        self.ctx.notes.push(
            "the server closed doctor's sampling connection during the window (a KILL?); sampling stopped there, the rest was read on a new connection".into(),
        );
        true
    }
}

/// This server's journal findings as notes, their ages counted at `now_unix_s`.
fn journal_notes(entries: &[crate::journal::Entry], now_unix_s: i64) -> Vec<String> {
    entries
        .iter()
        .map(|e| format!("change journal: {}", e.warning_at(now_unix_s)))
        .collect()
}

/// This host's facts for a local server: measured, or the probe figures from `--host-facts`
/// (the spin hint's cost), with the server's process found from its pid file.
fn local_host(
    o: &CollectOpts,
    variables: &BTreeMap<String, String>,
    shown: &mut dyn Meter,
) -> HostFacts {
    // A probe file given with --host-facts replaces the live measurement.
    let mut h = if o
        .host_facts
        .as_ref()
        .is_some_and(|f| f.ns_per_hint.is_some())
    {
        super::host::local_static()
    } else {
        super::host::local_with_probe(shown)
    };
    if let Some(pf) = variables.get("pid_file") {
        if let Some((pid, comm)) = super::host::server_pid(pf) {
            h.server_pid = Some(pid);
            h.server_comm = Some(comm);
        }
    }
    if let Some(f) = &o.host_facts {
        h.ns_per_hint = f.ns_per_hint;
        h.tsc_ticks_per_hint = f.tsc_ticks_per_hint;
    }
    h
}

fn counters_before(host: Option<&mut HostFacts>, pid: Option<u32>) {
    let (cpu, ctxt) = super::host::counters(pid);
    if let Some(h) = host {
        h.cpu_before = cpu;
        h.server_ctxt_before = ctxt;
        h.server_cpu_before = super::host::process_cpu(pid);
        h.clock_ticks_per_s = super::host::clock_ticks_per_s();
    }
}

fn counters_after(host: Option<&mut HostFacts>, pid: Option<u32>) {
    let (cpu, ctxt) = super::host::counters(pid);
    if let Some(h) = host {
        h.cpu_after = cpu;
        h.server_ctxt_after = ctxt;
        h.server_cpu_after = super::host::process_cpu(pid);
    }
}

/// The burst sampler's plan: /proc at `hz` beside slower SQL counters when the server's
/// process is on this host (`local_pid`), else SQL only.
fn burst_plan(o: &CollectOpts, local_pid: Option<u32>) -> BurstPlan {
    match local_pid {
        Some(p) => BurstPlan {
            hz: o.hz,
            sql_hz: o.sql_hz.unwrap_or(SQL_HZ_BESIDE_PROC).min(o.hz),
            proc_pid: Some(p),
            proc_gate: super::proc_threads::DEFAULT_GATE,
        },
        None => BurstPlan::sql_only(o.hz),
    }
}
