//! One watched server: connect (with back-off), learn its cores and spin budget, run the burst
//! sampler in short rounds into the ring, feed the triggers and the metrics, back off the rate
//! when the server's round trip climbs, and start / finish captures.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use super::capture::{self, CaptureDoc, LogLine, CAPTURE_SCHEMA};
use super::ledger::{BurstDoc, Entry, Fire, Ledger, Reason};
use super::metrics::{CaptureLabel, ServerLabel};
use super::osstat::{OsSecond, ProcessList};
use super::rate::{Change, Load, RateControl};
use super::ring::{to_burst_record, Ring, Sample, NO_PROC};
use super::trigger::{BurstEvent, Evaluator, Fired, Point, Series};
use super::{log, utc, Shared, Watched};
use crate::server::collect::{collect_on, BurstPlan, BurstSampler, CollectOpts};
use crate::server::conn::{connect_target, Target};
use crate::server::snapshot::{BurstPoint, BurstRecord, ProcPoint};
use crate::server::snapshot::{HostFacts, Snapshot};
use crate::session::Session as SqlSession;

/// One sampler round lasts about this long: the trigger latency and the longest a stop waits.
const ROUND_S: f64 = 0.2;
/// Longest wait between two connection attempts.
const MAX_BACKOFF_S: f64 = 30.0;
/// How often the journal's open records of the server are read again.
const JOURNAL_EVERY: Duration = Duration::from_secs(30);

/// What is learnt about a server when it connects.
#[derive(Debug, Clone, Default)]
struct Info {
    cores: f64,
    host: Option<HostFacts>,
    pid: Option<u32>,
    version: String,
    /// The /proc series on this connection: (server pid, how it counts, the SQL counters' rate).
    proc: Option<(u32, String, f64)>,
    /// The server's TCP port for the rt series, or why there is none.
    port: Option<Result<u16, String>>,
}

fn learn(sh: &Shared, w: &Watched, prev: Option<&Info>) -> crate::Result<Info> {
    let never = AtomicBool::new(false);
    let opts = CollectOpts {
        window_s: 0.0,
        hz: sh.plan.hz,
        sql_hz: None,
        enable_instruments: false,
        // After the first connection the host's spin hint is known: no second probe.
        host_facts: prev.and_then(|p| p.host.clone()),
        rt: false,
        quiet_journal: true,
    };
    let snap = collect_on(
        &w.target,
        &|| (sh.connect)(&w.target),
        &opts,
        &never,
        &mut crate::meter::Notes(say_note),
    )?;
    // This server's journal, said once per connection under its own name.
    for e in &snap.journal {
        log(&format!(
            "{}: {}",
            w.name,
            e.warning_at(snap.captured_at_unix_s as i64)
        ));
    }
    let facts = crate::doctor::Facts::from_snapshot(snap);
    let label = ServerLabel {
        server: w.name.clone(),
    };
    if let (Some(v), Some(cpu)) = (&facts.version, &facts.cpu) {
        let info = crate::spin::model::family_for(v);
        let (cur, _, _) = crate::spin::model::settings_from_vars(&info, |n| facts.vars.str(n));
        let vs = crate::spin::doc::vs_design(&info, &cur, cpu);
        let m = &sh.metrics;
        m.spin_budget_us
            .get_or_create(&label)
            .set(vs.here_max_spin_ns / 1e3);
        m.spin_design_us
            .get_or_create(&label)
            .set(vs.design_max_spin_ns / 1e3);
    }
    let cores = match (facts.cores, sh.plan.cores) {
        (_, Some(c)) => c,
        (Some(c), None) => c,
        // Said by learn_fast.
        (None, None) => std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64),
    };
    let host = facts.snap.host.clone();
    Ok(Info {
        cores,
        pid: host.as_ref().and_then(|h| h.server_pid),
        host,
        version: facts.snap.version.clone(),
        proc: None,
        port: Some(crate::server::rt_window::server_port(&facts.snap.variables)),
    })
}

/// A collection's note (the host's spin figure) as watch always said it: a `spinscope: TEXT`
/// line without watch's time stamp, as the collector printed it before it took a meter.
fn say_note(text: &str) {
    eprintln!("spinscope: {text}");
}

/// What the sampler needs, read on the sampling connection itself: version, cores, the
/// server's pid and port. No probe and no INNODB STATUS stand before the first sample; the rest
/// ([`learn`]: the spin budget, the journal, the probed host) follows on its own thread.
fn learn_fast(
    sh: &Shared,
    w: &Watched,
    conn: &mut dyn SqlSession,
    prev: Option<&Info>,
) -> crate::Result<Info> {
    let rows: Vec<(String, Option<String>)> = conn
        .query("SHOW GLOBAL VARIABLES")
        .map_err(|e| crate::Error::runtime(format!("{}: SHOW GLOBAL VARIABLES: {e}", w.name)))?;
    let vars: std::collections::BTreeMap<String, String> = rows
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.unwrap_or_default()))
        .collect();
    let host = if w.target.is_local() {
        let mut h = prev
            .and_then(|p| p.host.clone())
            .unwrap_or_else(crate::server::host::local_static);
        h.server_pid = None;
        if let Some((pid, comm)) = vars
            .get("pid_file")
            .map(String::as_str)
            .and_then(crate::server::host::server_pid)
        {
            h.server_pid = Some(pid);
            h.server_comm = Some(comm);
        }
        Some(h)
    } else {
        prev.and_then(|p| p.host.clone())
    };
    let host_cores = host
        .as_ref()
        .filter(|_| w.target.is_local())
        .and_then(|h| h.online_cpus)
        .map(f64::from);
    let cores = match (host_cores, sh.plan.cores) {
        (_, Some(c)) => c,
        (Some(c), None) => c,
        (None, None) => {
            let c = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
            if prev.is_none() {
                log(&format!(
                    "{}: its host's cores are unknown (not local); 'cores' in triggers means {c} (this machine's); set --cores",
                    w.name
                ));
            }
            c
        }
    };
    Ok(Info {
        cores,
        pid: host.as_ref().and_then(|h| h.server_pid),
        host,
        version: vars.get("version").cloned().unwrap_or_default(),
        proc: None,
        port: Some(crate::server::rt_window::server_port(&vars)),
    })
}

/// A capture whose after window is still running.
struct Pending {
    fired: Fired,
    until_ms: f64,
    dir: PathBuf,
    start: std::thread::JoinHandle<Start>,
    /// The process list once a second through the after window.
    lists: std::thread::JoinHandle<(Vec<ProcessList>, Option<String>)>,
    /// The bursts that began in the window, set when the capture is handed to its writer.
    bursts: Vec<BurstDoc>,
}

/// What was taken at the trigger.
struct Start {
    snapshot: crate::Result<Snapshot>,
    processlist: Result<String, String>,
    perf: Option<Result<PathBuf, String>>,
}

fn cell(v: &mysql::Value) -> String {
    match v {
        mysql::Value::NULL => "NULL".into(),
        mysql::Value::Bytes(b) => String::from_utf8_lossy(b)
            .replace(['\t', '\n'], " ")
            .chars()
            .take(4096)
            .collect(),
        mysql::Value::Int(i) => i.to_string(),
        mysql::Value::UInt(u) => u.to_string(),
        mysql::Value::Float(f) => f.to_string(),
        mysql::Value::Double(f) => f.to_string(),
        other => format!("{other:?}"),
    }
}

fn processlist(t: &Target) -> Result<String, String> {
    let mut c = connect_target(t).map_err(|e| e.to_string())?;
    let rows: Vec<mysql::Row> = c
        .query("SHOW FULL PROCESSLIST")
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    if let Some(r) = rows.first() {
        let names: Vec<String> = r
            .columns_ref()
            .iter()
            .map(|c| c.name_str().into())
            .collect();
        out.push_str(&names.join("\t"));
        out.push('\n');
    }
    for r in &rows {
        // Other sessions' statements: password literals redacted (crate::server::redact).
        let cells: Vec<String> = (0..r.len())
            .map(|i| r.as_ref(i).map_or(String::new(), cell))
            .map(|c| crate::secret::redact_sql(&c).into_owned())
            .collect();
        out.push_str(&cells.join("\t"));
        out.push('\n');
    }
    Ok(out)
}

fn innodb_status(t: &Target) -> Result<String, String> {
    let mut c = connect_target(t).map_err(|e| e.to_string())?;
    let r: Option<(String, String, String)> = c
        .query_first("SHOW ENGINE INNODB STATUS")
        .map_err(|e| e.to_string())?;
    Ok(r.map(|x| crate::secret::redact_sql(&x.2).into_owned())
        .unwrap_or_default())
}

/// perf's recording of the server process, as `perf script` text (capped at 256 MiB).
fn perf_record(pid: u32, seconds: f64, path: PathBuf) -> Result<PathBuf, String> {
    use std::io::Read;
    let req = crate::profile::collect::Request {
        pid,
        seconds,
        frequency_hz: 99,
    };
    let p2 = path.clone();
    crate::profile::collect::record(&req, move |r| {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&p2)
            .map_err(|e| crate::Error::runtime(format!("{}: {e}", p2.display())))?;
        std::io::copy(&mut r.take(256 << 20), &mut f)
            .and_then(|_| f.sync_all())
            .map_err(|e| crate::Error::runtime(format!("{}: {e}", p2.display())))?;
        Ok(())
    })
    .map(|_| path.clone())
    .map_err(|e| {
        // A half-written recording (a full disk) is not left to be read as a whole one.
        let _ = std::fs::remove_file(&path);
        e.to_string()
    })
}

fn skip(sh: &Shared, w: &Watched, f: &Fired, reason: Reason, why: String) -> (Reason, String) {
    sh.skipped.fetch_add(1, Ordering::SeqCst);
    log(&format!(
        "{}: trigger '{}' fired but {why}",
        w.name, f.trigger
    ));
    let _ = capture::append_log(
        &sh.plan.out_dir,
        &LogLine {
            time: utc(sh.unix_ms(f.t_ms)),
            server: w.name.clone(),
            trigger: f.trigger.clone(),
            dir: None,
            peaks: None,
            skipped: Some(why.clone()),
            burst: None,
            bursts: None,
        },
    );
    (reason, why)
}

/// Start a capture, or say why not.
fn begin(sh: &Shared, w: &Watched, info: &Info, f: Fired) -> Result<Pending, (Reason, String)> {
    let plan = &sh.plan;
    if sh.captures.fetch_add(1, Ordering::SeqCst) >= plan.max_captures {
        sh.captures.fetch_sub(1, Ordering::SeqCst);
        return Err(skip(
            sh,
            w,
            &f,
            Reason::MaxCaptures,
            format!(
                "--max-captures {} is reached; capture skipped",
                plan.max_captures
            ),
        ));
    }
    if let Some(why) = capture::disk_refusal(&plan.out_dir, plan.min_free_bytes) {
        sh.captures.fetch_sub(1, Ordering::SeqCst);
        return Err(skip(sh, w, &f, Reason::DiskLimit, why));
    }
    let dir = plan
        .out_dir
        .join(capture::dir_name(&utc(sh.unix_ms(f.t_ms)), &w.name));
    let made = {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
    };
    let made = made.and_then(|()| capture::mark_incomplete(&dir));
    if let Err(e) = made {
        sh.captures.fetch_sub(1, Ordering::SeqCst);
        let _ = std::fs::remove_dir_all(&dir);
        return Err(skip(
            sh,
            w,
            &f,
            Reason::CaptureFailed,
            format!("{} cannot be created ({e})", dir.display()),
        ));
    }
    log(&format!(
        "{}: trigger '{}' fired ({} {} against {}, held {:.0} ms); capturing into {}",
        w.name,
        f.trigger,
        f.trigger.split_whitespace().next().unwrap_or("value"),
        f.value,
        f.threshold,
        f.t_ms - f.since_ms,
        dir.display()
    ));
    let (t, host, pid, hz) = (w.target.clone(), info.host.clone(), info.pid, plan.hz);
    let profile_s = plan.profile_seconds;
    let local = w.target.is_local();
    let perf_path = dir.join("perf-script.txt");
    // The process list each second of the after window, on its own connection.
    let (t2, stop2) = (w.target.clone(), Arc::clone(&sh.stop));
    let (zero, after) = (Instant::now(), Duration::from_secs_f64(plan.after_s));
    let lists =
        std::thread::spawn(move || super::osstat::processlists(&t2, zero, zero + after, &stop2));
    let connect = Arc::clone(&sh.connect);
    let start = std::thread::spawn(move || {
        let never = AtomicBool::new(false);
        let opts = CollectOpts {
            window_s: 0.0,
            hz,
            sql_hz: None,
            enable_instruments: false,
            host_facts: host,
            rt: false,
            quiet_journal: true,
        };
        // A new session: the snapshot carries the journal as it reads now.
        let snapshot = collect_on(
            &t,
            &|| connect(&t),
            &opts,
            &never,
            &mut crate::meter::Notes(say_note),
        );
        let processlist = processlist(&t);
        let perf = match (local, pid) {
            _ if profile_s <= 0.0 => None,
            (true, Some(pid)) => Some(perf_record(pid, profile_s, perf_path)),
            _ => Some(Err(
                "the server is not local (or its pid is unknown): no perf recording".into(),
            )),
        };
        Start {
            snapshot,
            processlist,
            perf,
        }
    });
    Ok(Pending {
        until_ms: f.t_ms + plan.after_s * 1e3,
        fired: f,
        dir,
        start,
        lists,
        bursts: Vec::new(),
    })
}

/// Hand a pending capture with its samples to a writer thread (joined before watch exits).
fn finish(
    sh: &Arc<Shared>,
    w: &Watched,
    info: &Info,
    p: Pending,
    ring: &Ring,
    cut: Option<String>,
    cpu_ns_per_sample: f64,
) {
    let from = p.fired.t_ms - sh.plan.history_s * 1e3;
    let Pending {
        fired,
        until_ms,
        dir,
        start,
        lists,
        bursts,
    } = p;
    // This host's statistics belong in the captures of a server on this host only.
    let os = match sh.os.as_ref().filter(|_| w.target.is_local()) {
        Some(o) => o.between(from, until_ms, fired.t_ms),
        None => Vec::new(),
    };
    let job = CaptureJob {
        sh: Arc::clone(sh),
        name: w.name.clone(),
        target: w.target.clone(),
        cores: info.cores,
        proc: info.proc.clone(),
        fired_unix: sh.unix_ms(fired.t_ms),
        samples: ring.between(from, until_ms),
        cpu_ns_per_sample,
        fired,
        dir,
        bursts,
        os,
    };
    let writer = std::thread::spawn(move || {
        let out = Outcome {
            failed: None,
            notes: cut.into_iter().collect(),
            files: vec!["capture.json".to_string()],
        };
        let start = start.join();
        let second = innodb_status(&job.target);
        let lists = lists
            .join()
            .unwrap_or_else(|_| (Vec::new(), Some("the process-list thread failed".into())));
        job.write(start, second, lists, out);
    });
    if let Ok(mut v) = sh.writers.lock() {
        v.push(writer);
    }
}

/// A capture's writer: what it writes, owned by its thread.
struct CaptureJob {
    sh: Arc<Shared>,
    name: String,
    target: Target,
    cores: f64,
    /// The connection's /proc series ([`Info::proc`]).
    proc: Option<(u32, String, f64)>,
    fired: Fired,
    fired_unix: f64,
    dir: PathBuf,
    /// From `--history` before the trigger to the end of the after window (or the cut).
    samples: Vec<Sample>,
    cpu_ns_per_sample: f64,
    /// The bursts that began in the window (watch.log has what became of each).
    bursts: Vec<BurstDoc>,
    /// This host's seconds through the window (local servers).
    os: Vec<OsSecond>,
}

/// A capture's files so far, its notes, and the first failure that voids it: a file the
/// capture cannot be read without, not written (a full disk).
struct Outcome {
    files: Vec<String>,
    notes: Vec<String>,
    failed: Option<String>,
}

impl CaptureJob {
    /// Write what was taken at the trigger and after it, then capture.json; count the capture,
    /// or remove it when it failed (not counted).
    fn write(
        &self,
        start: std::thread::Result<Start>,
        second: Result<String, String>,
        lists: (Vec<ProcessList>, Option<String>),
        mut out: Outcome,
    ) {
        let plan = &self.sh.plan;
        let cpu_ns = (self.cpu_ns_per_sample * self.samples.len() as f64) as u64;
        let proc = self.proc.as_ref().map(|(p, s, h)| (*p, s.as_str(), *h));
        let record = to_burst_record(&self.samples, plan.hz, cpu_ns, proc);
        match start {
            Ok(s) => self.save_start(s, record, &mut out),
            Err(_) => out.notes.push("the snapshot thread failed".into()),
        }
        self.save_second_status(second, &mut out);
        if let Some(e) = &lists.1 {
            out.notes.push(format!("process list each second: {e}"));
        }
        let peaks = capture::peaks(&self.samples);
        let before = self
            .samples
            .iter()
            .filter(|s| s.t_ms < self.fired.t_ms)
            .count();
        let Outcome {
            files,
            notes,
            mut failed,
        } = out;
        let mut doc = self.doc(peaks.clone(), before, files, notes);
        doc.processlists = lists.0;
        if failed.is_none() {
            if let Err(e) = crate::files::save_json(&doc, &self.dir.join("capture.json")) {
                failed = Some(format!("capture.json: {e}"));
            }
        }
        match failed {
            Some(why) => self.discard(&why),
            None => self.complete(&doc, &peaks, before),
        }
    }

    /// The doctor snapshot (with the burst record), processlist and perf recording taken at
    /// the trigger.
    fn save_start(&self, s: Start, record: BurstRecord, out: &mut Outcome) {
        match s.snapshot {
            Ok(snap) => self.save_snapshot(snap, record, out),
            Err(e) => out.notes.push(format!("doctor snapshot not taken: {e}")),
        }
        match s.processlist {
            Ok(t) => {
                let f = self.dir.join("processlist.tsv");
                match crate::files::write_atomic(&f, t.as_bytes(), "--out", true) {
                    Ok(()) => out.files.push("processlist.tsv".into()),
                    Err(e) => out.notes.push(format!("processlist.tsv not written: {e}")),
                }
            }
            Err(e) => out.notes.push(format!("processlist not read: {e}")),
        }
        match s.perf {
            Some(Ok(_)) => out.files.push("perf-script.txt".into()),
            Some(Err(e)) => out.notes.push(format!("perf recording: {e}")),
            None => {}
        }
    }

    /// doctor-snapshot.json with the burst record, and host-facts.json.
    fn save_snapshot(&self, mut snap: Snapshot, record: BurstRecord, out: &mut Outcome) {
        let plan = &self.sh.plan;
        snap.burst = Some(record);
        snap.notes.push(format!(
            "captured by spinscope watch: trigger '{}' fired at {}; the burst record holds the {} s before it and up to {} s after",
            self.fired.trigger,
            utc(self.fired_unix),
            plan.history_s,
            plan.after_s
        ));
        if let Some(h) = &snap.host {
            let _ = crate::files::save_json(h, &self.dir.join("host-facts.json"));
            out.files.push("host-facts.json".into());
        }
        match snap.save(&self.dir.join("doctor-snapshot.json")) {
            Ok(()) => out.files.push("doctor-snapshot.json".into()),
            Err(e) => {
                out.failed
                    .get_or_insert(format!("doctor-snapshot.json: {e}"));
            }
        }
    }

    /// innodb-status-after.txt: the INNODB STATUS read at the end of the after window.
    fn save_second_status(&self, second: Result<String, String>, out: &mut Outcome) {
        match second {
            Ok(t)
                if crate::files::write_atomic(
                    &self.dir.join("innodb-status-after.txt"),
                    t.as_bytes(),
                    "--out",
                    true,
                )
                .is_ok() =>
            {
                out.files.push("innodb-status-after.txt".into())
            }
            Ok(_) => out.notes.push("innodb-status-after.txt not written".into()),
            Err(e) => out
                .notes
                .push(format!("second INNODB STATUS not read: {e}")),
        }
    }

    /// capture.json's document.
    fn doc(
        &self,
        peaks: capture::Peaks,
        before: usize,
        files: Vec<String>,
        notes: Vec<String>,
    ) -> CaptureDoc {
        let plan = &self.sh.plan;
        let proc = self.proc.as_ref();
        CaptureDoc {
            schema: CAPTURE_SCHEMA.into(),
            server: self.name.clone(),
            target: self.target.describe(),
            fired_at: utc(self.fired_unix),
            fired_at_unix_ms: self.fired_unix.round(),
            cores: self.cores,
            hz: plan.hz,
            sql_hz: proc.map(|p| p.2).filter(|h| *h < plan.hz),
            series: capture::series_sources(plan.hz, proc.map(|p| p.2), proc.map(|p| p.1.as_str())),
            history_s: plan.history_s,
            after_s: plan.after_s,
            peaks,
            samples_before: before,
            samples_after: self.samples.len() - before,
            samples: capture::points(&self.samples, self.fired.t_ms),
            files,
            notes,
            trigger: self.fired.clone(),
            bursts: self.bursts.clone(),
            os_seconds: self.os.clone(),
            processlists: Vec::new(),
        }
    }

    /// A failed capture: uncounted, removed (or left marked incomplete for retention), said in
    /// the log and in watch.log.
    fn discard(&self, why: &str) {
        let (sh, name, dir) = (&self.sh, &self.name, &self.dir);
        sh.captures.fetch_sub(1, Ordering::SeqCst);
        sh.failed.fetch_add(1, Ordering::SeqCst);
        let removed = std::fs::remove_dir_all(dir).is_ok();
        log(&format!(
            "{name}: capture FAILED, not counted: {why}; {}",
            if removed {
                format!("{} removed", dir.display())
            } else {
                format!(
                    "{} left marked incomplete (retention removes it)",
                    dir.display()
                )
            }
        ));
        let _ = capture::append_log(
            &sh.plan.out_dir,
            &LogLine {
                time: utc(self.fired_unix),
                server: name.clone(),
                trigger: self.fired.trigger.clone(),
                dir: None,
                peaks: None,
                skipped: Some(format!("capture failed: {why}")),
                burst: None,
                bursts: None,
            },
        );
    }

    /// A written capture: marked complete, counted, logged in watch.log, retention applied.
    fn complete(&self, doc: &CaptureDoc, peaks: &capture::Peaks, before: usize) {
        let (sh, name, dir) = (&self.sh, &self.name, &self.dir);
        let plan = &sh.plan;
        capture::mark_complete(dir);
        sh.metrics
            .captures
            .get_or_create(&CaptureLabel {
                server: name.clone(),
                trigger: self.fired.trigger.clone(),
            })
            .inc();
        let line = LogLine {
            time: utc(self.fired_unix),
            server: name.clone(),
            trigger: self.fired.trigger.clone(),
            dir: Some(dir.display().to_string()),
            peaks: Some(peaks.clone()),
            skipped: None,
            burst: None,
            bursts: None,
        };
        if let Err(e) = capture::append_log(&plan.out_dir, &line) {
            log(&format!("{name}: {e}"));
        }
        for d in capture::retain(&plan.out_dir, plan.keep, plan.max_age_s) {
            log(&format!("retention: removed {}", d.display()));
        }
        log(&format!(
            "{name}: capture written: {} ({} samples before the trigger, {} after; peak threads_running {})",
            dir.display(),
            before,
            doc.samples_after,
            peaks.threads_running
        ));
    }
}

/// Running values carried from one sample to the next.
#[derive(Default)]
struct Carry {
    questions: u64,
    qps: f64,
    /// The last SQL read: its time, its Questions (counted from the sampler's first read), its
    /// values (held in the samples until the next read).
    last_t_ms: Option<f64>,
    last_q: Option<u64>,
    sql: BurstPoint,
    rtt_us: f32,
    host_at: Option<Instant>,
    host_prev: Option<(crate::server::snapshot::CpuTicks, Option<u64>)>,
    host_busy_pct: f32,
    server_cpu_pct: f32,
    cpu_ns: u64,
    samples: u64,
}

impl Carry {
    /// The sampling thread's CPU per sample so far (for a capture's own-cost figure).
    fn cpu_ns_per_sample(&self) -> f64 {
        self.cpu_ns as f64 / self.samples.max(1) as f64
    }

    /// An SQL read at `t_ms`: Questions counted on from the last read, and the rate.
    fn read_sql(&mut self, t_ms: f64, p: BurstPoint) {
        let dt_s = self.last_t_ms.map_or(0.0, |l| (t_ms - l) / 1e3);
        match self.last_q {
            Some(lq) => {
                let dq = p.questions.saturating_sub(lq);
                self.questions += dq;
                if dt_s > 0.0 {
                    self.qps = dq as f64 / dt_s;
                }
            }
            // The first read on this connection: the interval since the last one is estimated
            // at the last rate.
            None => self.questions += (self.qps * dt_s).round() as u64,
        }
        self.last_q = Some(p.questions);
        self.last_t_ms = Some(t_ms);
        self.sql = p;
    }

    /// The sample of a tick: its /proc count, the last SQL read's values (`held` when they are
    /// not this tick's) and the rt percentiles.
    fn sample(&self, t_ms: f64, pp: Option<ProcPoint>, held: bool, rt: (f32, f32, f32)) -> Sample {
        let p = &self.sql;
        let (rt_p50_ms, rt_p95_ms, rt_p99_ms) = rt;
        Sample {
            t_ms,
            threads_running: p.threads_running.min(u32::MAX as u64) as u32,
            threads_connected: p.threads_connected.min(u32::MAX as u64) as u32,
            qps: self.qps,
            row_lock_waits: p.row_lock_waits.min(u32::MAX as u64) as u32,
            rtt_us: self.rtt_us,
            questions: self.questions,
            host_busy_pct: self.host_busy_pct,
            server_cpu_pct: self.server_cpu_pct,
            running: pp.map_or(NO_PROC, |c| c.running),
            threads: pp.map_or(0, |c| c.threads.min(u16::MAX as u32) as u16),
            held,
            rt_p50_ms,
            rt_p95_ms,
            rt_p99_ms,
        }
    }
}

/// Host CPU busy and the server's own CPU since the last reading (local servers, once a second).
fn host_signature(c: &mut Carry, pid: Option<u32>) {
    if c.host_at
        .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
    {
        return;
    }
    let elapsed = c.host_at.map(|t| t.elapsed().as_secs_f64());
    c.host_at = Some(Instant::now());
    let (Some(now), _) = crate::server::host::counters(None) else {
        return;
    };
    let proc_ticks = crate::server::host::process_cpu(pid).map(|p| p.utime + p.stime);
    let hz = crate::server::host::clock_ticks_per_s().unwrap_or(100) as f64;
    if let (Some((prev, pprev)), Some(dt)) = (c.host_prev, elapsed) {
        let total = |t: &crate::server::snapshot::CpuTicks| {
            t.user + t.nice + t.system + t.idle + t.iowait + t.irq + t.softirq + t.steal
        };
        let dt_ticks = total(&now).saturating_sub(total(&prev)) as f64;
        let idle = (now.idle + now.iowait).saturating_sub(prev.idle + prev.iowait) as f64;
        if dt_ticks > 0.0 {
            c.host_busy_pct = ((dt_ticks - idle) / dt_ticks * 100.0) as f32;
        }
        if let (Some(a), Some(b)) = (pprev, proc_ticks) {
            c.server_cpu_pct = (b.saturating_sub(a) as f64 / hz / dt * 100.0) as f32;
        }
    }
    c.host_prev = Some((now, proc_ticks));
}

/// One round's samples in time order: each /proc count with the SQL read of the same tick, if
/// any; SQL reads alone when there is no /proc series (or after it stopped).
fn ticks(rec: &BurstRecord) -> Vec<(f64, Option<ProcPoint>, Option<BurstPoint>)> {
    let procs = rec.proc_running.as_ref().map_or(&[][..], |p| &p.points[..]);
    let mut out = Vec::with_capacity(procs.len().max(rec.points.len()));
    let mut j = 0;
    for (i, pp) in procs.iter().enumerate() {
        let next_t = procs.get(i + 1).map_or(f64::INFINITY, |n| n.t_ms);
        let sql = (j < rec.points.len() && rec.points[j].t_ms < next_t).then(|| {
            j += 1;
            rec.points[j - 1]
        });
        out.push((pp.t_ms, Some(*pp), sql));
    }
    out.extend(rec.points[j..].iter().map(|p| (p.t_ms, None, Some(*p))));
    out
}

/// The rt capture for the rt_* series (local server, capture permitted), or None, said once.
fn rt_feed(
    sh: &Shared,
    w: &Watched,
    inf: &Info,
    conn: &mut dyn SqlSession,
    said: &mut bool,
) -> Option<super::rt_feed::RtFeed> {
    let why = if !w.target.is_local() {
        format!(
            "rt_* triggers need the server's host: {} is not local, so they never fire; run watch on its host",
            w.target.describe()
        )
    } else {
        match inf
            .port
            .clone()
            .unwrap_or(Err("its TCP port is unknown".into()))
        {
            Err(why) => format!("rt_* triggers never fire: {why}"),
            Ok(port) => {
                let own = if w.target.socket.is_none() {
                    crate::server::rt_window::own_client_port(conn)
                } else {
                    None
                };
                let label = ServerLabel {
                    server: w.name.clone(),
                };
                let (hz, m) = (sh.plan.hz, sh.metrics.clone());
                match super::rt_feed::RtFeed::start(port, hz, own, m, label) {
                    Ok(f) => {
                        if !*said {
                            log(&format!(
                                "{}: rt capturing port {port} ({:.0} ms per tick{})",
                                w.name,
                                f.tick_ms,
                                own.map_or(String::new(), |p| format!(
                                    ", own session's client port {p} left out"
                                ))
                            ));
                            *said = true;
                        }
                        return Some(f);
                    }
                    Err(e) => format!("rt_* triggers never fire: {e}"),
                }
            }
        }
    };
    if !*said {
        log(&format!("{}: {why}", w.name));
        *said = true;
    }
    None
}

/// The journal's open records of the server behind `conn` (this host's and the copies kept on
/// the server), or None when the server cannot say who it is.
fn journal_open(conn: &mut dyn SqlSession, t: &Target) -> Option<usize> {
    let id = crate::journal::identify(conn, &t.describe(), "").ok()?;
    Some(crate::journal::records_for(conn, &id).len())
}

/// The server's clock minus watch's, ms (the midpoint of the query's round trip).
fn server_offset_ms(sh: &Shared, conn: &mut dyn SqlSession) -> Option<f64> {
    let t0 = sh.now_ms();
    let v: Option<f64> = conn
        .query_first("SELECT UNIX_TIMESTAMP(NOW(6)) * 1000")
        .ok()
        .flatten();
    let t1 = sh.now_ms();
    v.map(|server_ms| server_ms - sh.unix_ms((t0 + t1) / 2.0))
}

/// One connection's sampler: its rt capture, /proc series and session (dropped in that order).
struct Session {
    rt: Option<super::rt_feed::RtFeed>,
    /// What was learnt about the server when this connection started.
    inf: Info,
    sampler: BurstSampler,
    conn: Box<dyn SqlSession>,
}

/// One server's sampling state, kept across rounds and reconnections.
struct Watch<'a> {
    sh: &'a Arc<Shared>,
    /// The server, its query timeout capped so that a hung server cannot stall the sampler.
    w: Watched,
    label: ServerLabel,
    ring: Ring,
    evals: Vec<Evaluator>,
    rc: RateControl,
    /// Every burst and what became of it.
    ledger: Ledger,
    /// The learning thread ([`Watch::learn_slow`]) and what it probed.
    learning: Option<std::thread::JoinHandle<()>>,
    probed: Arc<std::sync::Mutex<Option<HostFacts>>>,
    /// The server's clock minus watch's (ms), read at each connection.
    server_offset_ms: f64,
    first_sample_said: bool,
    journal_at: Option<Instant>,
    info: Option<Info>,
    wants_rt: bool,
    rt_said: bool,
    backoff: f64,
    down_since: Option<Instant>,
    last_err: String,
    pending: Option<Pending>,
    warned_running: bool,
    said_proc: bool,
    carry: Carry,
}

/// Watch one server until the stop flag; never returns an error (they are logged).
pub fn watch_one(sh: &Arc<Shared>, w: &Watched) {
    let mut me = Watch::new(sh, w);
    while !sh.stop.load(Ordering::Relaxed) {
        let Some(mut conn) = me.connect() else {
            continue;
        };
        if !me.learn_info(&mut *conn) {
            continue;
        }
        let Some(mut s) = me.open_session(conn) else {
            continue;
        };
        let lost = me.sample_until_lost(&mut s);
        me.session_ended(lost, &s.inf);
    }
    me.stopped();
}

impl<'a> Watch<'a> {
    /// The state before the first connection; the server's metrics start at 0.
    fn new(sh: &'a Arc<Shared>, w: &Watched) -> Watch<'a> {
        let plan = &sh.plan;
        let m = &sh.metrics;
        let label = ServerLabel {
            server: w.name.clone(),
        };
        let mut target = w.target.clone();
        // A hung server must not stall the sampler for a minute.
        target.query_timeout = target.query_timeout.min(Duration::from_secs(10));
        let w = Watched {
            name: w.name.clone(),
            target,
        };
        let ring = Ring::new(plan.history_s + plan.after_s + 1.0, plan.hz);
        let evals: Vec<Evaluator> = plan
            .triggers
            .iter()
            .map(|t| Evaluator::new(t.clone(), plan.cooldown_s * 1e3))
            .collect();
        m.target_hz.get_or_create(&label).set(plan.hz);
        m.up.get_or_create(&label).set(0);
        m.reconnects.get_or_create(&label).inc_by(0);
        m.bursts.get_or_create(&label).inc_by(0);
        Watch {
            sh,
            w,
            label,
            ring,
            evals,
            rc: RateControl::new(plan.hz),
            ledger: Ledger::new(
                plan.history_s * 1e3,
                plan.triggers
                    .iter()
                    .map(|t| t.cooldown_ms.unwrap_or(plan.cooldown_s * 1e3))
                    .fold(0.0, f64::max),
            ),
            server_offset_ms: 0.0,
            first_sample_said: false,
            learning: None,
            probed: Arc::new(std::sync::Mutex::new(None)),
            journal_at: None,
            info: None,
            wants_rt: plan.triggers.iter().any(|t| t.series.is_rt()),
            rt_said: false,
            backoff: 1.0,
            down_since: None,
            last_err: String::new(),
            pending: None,
            warned_running: false,
            said_proc: false,
            carry: Carry {
                host_busy_pct: f32::NAN,
                server_cpu_pct: f32::NAN,
                ..Default::default()
            },
        }
    }

    /// Wait the back-off (cut short by the stop flag) and double it, up to MAX_BACKOFF_S.
    fn back_off(&mut self) {
        crate::interrupt::sleep(Duration::from_secs_f64(self.backoff), &self.sh.stop);
        self.backoff = (self.backoff * 2.0).min(MAX_BACKOFF_S);
    }

    /// A connection, or None after a failed attempt (each new error said once) and the back-off.
    fn connect(&mut self) -> Option<Box<dyn SqlSession>> {
        let m = &self.sh.metrics;
        match (self.sh.connect)(&self.w.target) {
            Ok(c) => Some(c),
            Err(e) => {
                m.up.get_or_create(&self.label).set(0);
                let msg = e.to_string();
                if msg != self.last_err {
                    log(&format!(
                        "{}: {msg}; retrying (back-off up to {MAX_BACKOFF_S:.0} s)",
                        self.w.name
                    ));
                    self.last_err = msg;
                }
                self.down_since.get_or_insert_with(Instant::now);
                self.back_off();
                None
            }
        }
    }

    /// Learn (again) what the server is; false, after the back-off, while it was never learnt.
    fn learn_info(&mut self, conn: &mut dyn SqlSession) -> bool {
        self.learn_slow();
        let sh = self.sh;
        let w = &self.w;
        match learn_fast(sh, w, conn, self.info.as_ref()) {
            Ok(i) => {
                if self.info.is_none() {
                    let k = sh.up_once.fetch_add(1, Ordering::Relaxed) + 1;
                    log(&format!(
                        "{}: connected ({}, {} cores{}); {k} of {} servers sampling after {}",
                        w.name,
                        i.version,
                        i.cores,
                        if w.target.is_local() { ", local" } else { "" },
                        sh.plan.servers.len(),
                        crate::units::human(sh.t0.elapsed().as_secs_f64())
                    ));
                }
                self.info = Some(i);
            }
            Err(e) if self.info.is_none() => {
                log(&format!("{}: {e}; retrying", w.name));
                self.back_off();
                return false;
            }
            Err(_) => {}
        }
        self.info.is_some()
    }

    /// The spin budget, the journal's warnings and the probed host, on their own thread (the
    /// first time a probe of this host may take seconds); one at a time.
    fn learn_slow(&mut self) {
        if self.learning.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let (sh, w, slot) = (
            Arc::clone(self.sh),
            self.w.clone(),
            Arc::clone(&self.probed),
        );
        let prev = self.info.clone();
        self.learning = std::thread::Builder::new()
            .name(format!("watch-learn-{}", w.name))
            .spawn(move || match learn(&sh, &w, prev.as_ref()) {
                Ok(i) => {
                    if let (Some(h), Ok(mut g)) = (i.host, slot.lock()) {
                        *g = Some(h);
                    }
                }
                Err(e) => log(&format!(
                    "{}: the spin budget and journal not read ({e}); sampling goes on",
                    w.name
                )),
            })
            .ok();
    }

    /// The probed host facts once the learning thread has them (captures' snapshots use them
    /// instead of probing again).
    fn take_probed(&mut self, inf: &mut Info) {
        let h = self.probed.lock().ok().and_then(|mut g| g.take());
        if let Some(mut h) = h {
            h.server_pid = inf.pid;
            inf.host = Some(h.clone());
            if let Some(i) = self.info.as_mut() {
                i.host = Some(h);
            }
        }
    }

    /// The sampler on a fresh connection, the rates reset and the rt feed started; None when
    /// the server is still unknown.
    fn open_session(&mut self, mut conn: Box<dyn SqlSession>) -> Option<Session> {
        let (sampler, sql_target) = self.sampler(&mut *conn);
        self.say_running_unread(sampler.has_proc());
        self.say_proc(&sampler, sql_target);
        let inf = self.info.clone()?;
        self.reconnected(&inf);
        self.server_offset_ms = server_offset_ms(self.sh, &mut *conn).unwrap_or(0.0);
        self.ledger.session_started();
        let rt = self
            .wants_rt
            .then(|| rt_feed(self.sh, &self.w, &inf, &mut *conn, &mut self.rt_said))
            .flatten();
        Some(Session {
            rt,
            inf,
            sampler,
            conn,
        })
    }

    /// The burst sampler and its SQL rate: on a local server the running threads from /proc at
    /// --hz, the SQL counters at --sql-hz; else the SQL counters at --hz.
    fn sampler(&mut self, conn: &mut dyn SqlSession) -> (BurstSampler, f64) {
        let plan = &self.sh.plan;
        let bplan = match self
            .info
            .as_ref()
            .and_then(|i| i.pid)
            .filter(|_| self.w.target.is_local())
        {
            Some(pid) => BurstPlan {
                hz: plan.hz,
                sql_hz: plan.sql_hz.min(plan.hz),
                proc_pid: Some(pid),
                proc_gate: crate::server::proc_threads::DEFAULT_GATE,
            },
            None => BurstPlan::sql_only(plan.hz),
        };
        let mut sampler_notes = Vec::new();
        let sampler = BurstSampler::new(conn, &bplan, &mut sampler_notes);
        for n in sampler_notes {
            log(&format!("{}: {n}", self.w.name));
        }
        let sql_target = if sampler.has_proc() {
            bplan.sql_hz
        } else {
            plan.hz
        };
        if self.rc.target_hz != sql_target {
            self.rc = RateControl::new(sql_target);
        }
        (sampler, sql_target)
    }

    /// The default 'running' trigger beside the SQL one is for local servers; said only of one
    /// the user chose, once.
    fn say_running_unread(&mut self, has_proc: bool) {
        let plan = &self.sh.plan;
        if !has_proc && !self.warned_running && !plan.default_triggers {
            self.warned_running = true;
            for t in plan.triggers.iter().filter(|t| t.series == Series::Running) {
                log(&format!(
                    "{}: trigger '{}' reads 'running', counted from /proc on a local server only: it will not fire here",
                    self.w.name, t.text
                ));
            }
        }
    }

    /// The /proc series of this connection into the server's info, said the first time.
    fn say_proc(&mut self, sampler: &BurstSampler, sql_target: f64) {
        let plan = &self.sh.plan;
        if let Some(i) = self.info.as_mut() {
            i.proc = sampler
                .proc_source()
                .zip(i.pid)
                .map(|(src, pid)| (pid, src, sql_target));
            if i.proc.is_some() && !self.said_proc {
                self.said_proc = true;
                log(&format!(
                    "{}: running threads from /proc at {} Hz, SQL counters at {sql_target} Hz",
                    self.w.name, plan.hz
                ));
            }
        }
    }

    /// The server is up: a reconnection counted and said, the back-off, rate and Questions
    /// reference reset.
    fn reconnected(&mut self, inf: &Info) {
        let m = &self.sh.metrics;
        if let Some(t) = self.down_since.take() {
            m.reconnects.get_or_create(&self.label).inc();
            log(&format!(
                "{}: reconnected after {:.1} s down ({})",
                self.w.name,
                t.elapsed().as_secs_f64(),
                inf.version
            ));
        }
        self.last_err.clear();
        self.backoff = 1.0;
        self.rc.reset();
        self.carry.last_t_ms = None;
        self.carry.last_q = None;
        m.up.get_or_create(&self.label).set(1);
    }

    /// Rounds until the stop flag (None) or a lost connection (Some(why)).
    fn sample_until_lost(&mut self, s: &mut Session) -> Option<String> {
        while !self.sh.stop.load(Ordering::Relaxed) {
            if let Some(why) = self.round(s) {
                return Some(why);
            }
        }
        None
    }

    /// One round of about ROUND_S: sample, feed the ring, triggers and metrics, adapt the rate,
    /// sleep to the next round's first slot. Some(why) when the connection was lost.
    fn round(&mut self, s: &mut Session) -> Option<String> {
        let sh = self.sh;
        let (plan, m) = (&sh.plan, &sh.metrics);
        self.take_probed(&mut s.inf);
        self.read_journal(&mut *s.conn);
        let server_cpu0 = s
            .inf
            .pid
            .filter(|_| s.sampler.has_proc())
            .and_then(|p| crate::server::host::process_cpu(Some(p)));
        let hz = if s.sampler.has_proc() {
            plan.hz
        } else {
            self.rc.hz
        };
        s.sampler.set_rates(hz, self.rc.hz);
        let n = ((ROUND_S * hz).round() as usize).max(1);
        let round_start_ms = sh.now_ms();
        let round_start = Instant::now();
        let mut notes = Vec::new();
        // Window ends just after the n-th slot's start, so the round takes n samples and
        // the next round starts on the next slot.
        let rec = s.sampler.sample(
            &mut *s.conn,
            (n as f64 - 1.0) / hz + 1e-6,
            &sh.stop,
            &mut notes,
        );
        let ticks = ticks(&rec);
        self.account(&rec, ticks.len(), &s.inf);
        for (t_rel, pp, sp) in ticks {
            self.tick(round_start_ms + t_rel, pp, sp, s.rt.as_ref(), &s.inf);
        }
        self.ring_metrics();
        self.adapt_rate(&rec, server_cpu0, &s.inf);
        m.target_hz.get_or_create(&self.label).set(self.rc.hz);
        if rec.interrupted && !sh.stop.load(Ordering::Relaxed) {
            return Some(notes.pop().unwrap_or_else(|| "the sampler stopped".into()));
        }
        // Sleep to the next round's first slot.
        let slot = Duration::from_secs_f64(n as f64 / hz);
        let el = round_start.elapsed();
        if el < slot {
            crate::interrupt::sleep(slot - el, &sh.stop);
        }
        None
    }

    /// The journal's open records of the server, read again every JOURNAL_EVERY.
    fn read_journal(&mut self, conn: &mut dyn SqlSession) {
        if self.journal_at.is_none_or(|t| t.elapsed() >= JOURNAL_EVERY) {
            self.journal_at = Some(Instant::now());
            if let Some(n) = journal_open(conn, &self.w.target) {
                let m = &self.sh.metrics;
                m.journal_open.get_or_create(&self.label).set(n as i64);
            }
        }
    }

    /// A round's own cost and round trip; the host's CPU on a local server.
    fn account(&mut self, rec: &BurstRecord, samples: usize, inf: &Info) {
        let m = &self.sh.metrics;
        self.carry.cpu_ns += rec.sampler_cpu_ns;
        self.carry.samples += samples as u64;
        m.sampler_cpu
            .get_or_create(&self.label)
            .inc_by(rec.sampler_cpu_ns as f64 / 1e9);
        if !rec.points.is_empty() {
            m.sample_rtt
                .get_or_create(&self.label)
                .set(rec.query_p50_us / 1e6);
            self.carry.rtt_us = rec.query_p50_us as f32;
        }
        if self.w.target.is_local() {
            host_signature(&mut self.carry, inf.pid);
        }
    }

    /// One tick: its sample into the ring and metrics, the triggers, the burst count, and the
    /// pending capture finished once its after window has passed.
    fn tick(
        &mut self,
        t_ms: f64,
        pp: Option<ProcPoint>,
        sp: Option<BurstPoint>,
        rt: Option<&super::rt_feed::RtFeed>,
        inf: &Info,
    ) {
        let sh = self.sh;
        let m = &sh.metrics;
        let held = sp.is_none();
        if let Some(p) = sp {
            self.carry.read_sql(t_ms, p);
        }
        let rt_ms = rt.map_or((f32::NAN, f32::NAN, f32::NAN), |f| f.at(sh.unix_ms(t_ms)));
        let s = self.carry.sample(t_ms, pp, held, rt_ms);
        self.ring.push(s);
        if s.running != NO_PROC {
            m.running
                .get_or_create(&self.label)
                .observe(s.running as f64);
        }
        if !held {
            m.threads_running
                .get_or_create(&self.label)
                .observe(s.threads_running as f64);
        }
        if !self.first_sample_said {
            self.first_sample_said = true;
            log(&format!(
                "{}: first sample {:.0} ms after start",
                self.w.name, t_ms
            ));
        }
        let fire = self.fire_triggers(&s, inf);
        // Every burst counts, whatever the cooldowns and capture limits say.
        let step = self.ledger.step(
            t_ms,
            self.evals.iter().any(Evaluator::holding),
            (!held).then_some(s.threads_running),
            (s.running != NO_PROC).then_some(s.running),
            fire,
        );
        self.burst_step(step);
        if self.pending.as_ref().is_some_and(|p| t_ms >= p.until_ms) {
            if let Some(p) = self.pending.take() {
                self.finish_pending(inf, p, None);
            }
        }
    }

    /// A pending capture handed to its writer with the bursts of its window.
    fn finish_pending(&self, inf: &Info, mut p: Pending, cut: Option<String>) {
        let from = p.fired.t_ms - self.sh.plan.history_s * 1e3;
        p.bursts = self
            .ledger
            .within(from, p.until_ms)
            .iter()
            .map(|e| self.burst_doc(e))
            .collect();
        let cpu = self.carry.cpu_ns_per_sample();
        finish(self.sh, &self.w, inf, p, &self.ring, cut, cpu);
    }

    /// A burst's document, its start on the server's clock.
    fn burst_doc(&self, e: &Entry) -> BurstDoc {
        let (sh, off) = (self.sh, self.server_offset_ms);
        e.doc(|t| sh.unix_ms(t) + off)
    }

    /// A burst started or ended (the metrics), and the bursts decided (stderr and watch.log).
    fn burst_step(&self, step: super::ledger::Step) {
        let m = &self.sh.metrics;
        match step.event {
            Some(BurstEvent::Started) => {
                m.bursts.get_or_create(&self.label).inc();
            }
            Some(BurstEvent::Ended { duration_ms }) => {
                m.burst_duration
                    .get_or_create(&self.label)
                    .observe(duration_ms / 1e3);
            }
            None => {}
        }
        for e in &step.decided {
            let d = self.burst_doc(e);
            let what = match (&d.capture, &d.why) {
                (Some(c), _) if d.outcome == "captured" => format!("captured in {c}"),
                (Some(c), _) => format!("in the window of capture {c}"),
                (_, Some(why)) => format!("skipped: {why}"),
                _ => d.outcome.clone(),
            };
            log(&format!(
                "{}: burst at {}{}, {:.0} ms, peak Threads_running {}{}: {what}",
                self.w.name,
                d.start,
                if d.at_first_sample {
                    " (going on at the first sample)"
                } else {
                    ""
                },
                d.duration_ms,
                d.peak_threads_running,
                d.peak_running
                    .map_or(String::new(), |r| format!(", running {r}"))
            ));
            let _ = capture::append_log(
                &self.sh.plan.out_dir,
                &LogLine {
                    time: d.start.clone(),
                    server: self.w.name.clone(),
                    trigger: String::new(),
                    dir: None,
                    peaks: None,
                    skipped: None,
                    burst: Some(d),
                    bursts: None,
                },
            );
        }
    }

    /// Each trigger fed the sample; one that fires starts a capture unless one is running. A
    /// capture starts the cooldown of every trigger of the server: the default triggers are two
    /// views (SQL and /proc) of one pile-up, and one capture per cooldown is what is wanted.
    fn fire_triggers(&mut self, s: &Sample, inf: &Info) -> Option<Fire> {
        let sh = self.sh;
        let mut began = None;
        let mut fire = None;
        for ev in self.evals.iter_mut() {
            let series = ev.trigger.series;
            if !s.has(series) {
                continue;
            }
            let pt = Point {
                t_ms: s.t_ms,
                value: s.get(series),
            };
            let ring_ref = &self.ring;
            if let Some(f) = ev.step(pt, inf.cores, || Box::new(ring_ref.series(series))) {
                if let Some(p) = &self.pending {
                    log(&format!(
                        "{}: trigger '{}' fired during the capture of '{}'; that capture covers it",
                        self.w.name, f.trigger, p.fired.trigger
                    ));
                    if fire.is_none() {
                        fire = Some(Fire::DuringCapture {
                            dir: p.dir.display().to_string(),
                        });
                    }
                } else {
                    let t_ms = f.t_ms;
                    match begin(sh, &self.w, inf, f) {
                        Ok(p) => {
                            began = Some(t_ms);
                            fire = Some(Fire::Captured {
                                dir: p.dir.display().to_string(),
                                from_ms: t_ms - sh.plan.history_s * 1e3,
                                to_ms: p.until_ms,
                            });
                            self.pending = Some(p);
                        }
                        Err((reason, why)) => fire = Some(Fire::Refused { reason, why }),
                    }
                }
            }
        }
        if let Some(t_ms) = began {
            for ev in self.evals.iter_mut() {
                ev.quiet_from(t_ms);
            }
        }
        fire
    }

    /// The ring's rates, gaps and recent maxima over the last 10 s.
    fn ring_metrics(&self) {
        let sh = self.sh;
        let (m, label, ring) = (&sh.metrics, &self.label, &self.ring);
        let now = sh.now_ms();
        let (achieved, gap) = ring.rate_and_gap(now, 10_000.0, false);
        m.achieved_hz.get_or_create(label).set(achieved);
        m.longest_gap.get_or_create(label).set(gap / 1e3);
        let (sql_hz, sql_gap) = ring.rate_and_gap(now, 10_000.0, true);
        m.sql_hz.get_or_create(label).set(sql_hz);
        m.sql_longest_gap.get_or_create(label).set(sql_gap / 1e3);
        if let Some(last) = ring.last() {
            m.threads_connected
                .get_or_create(label)
                .set(last.threads_connected as f64);
        }
        let max10 = ring
            .iter()
            .rev()
            .take_while(|s| s.t_ms >= now - 10_000.0)
            .map(|s| s.threads_running)
            .max()
            .unwrap_or(0);
        m.threads_running_max.get_or_create(label).set(max10 as f64);
    }

    /// The SQL rate lowered while watch's own statements are the server's load (and raised
    /// again), said when it changes.
    fn adapt_rate(
        &mut self,
        rec: &BurstRecord,
        server_cpu0: Option<crate::server::snapshot::ProcCpu>,
        inf: &Info,
    ) {
        // Who the server was busy with: watch's session against the whole server (local),
        // else whether other sessions were running at the round's reads.
        let tick_ns = 1e9 / crate::server::host::clock_ticks_per_s().unwrap_or(100) as f64;
        let server_cpu_ns = server_cpu0
            .zip(
                inf.pid
                    .and_then(|p| crate::server::host::process_cpu(Some(p))),
            )
            .map(|(a, b)| {
                let ticks = (b.utime + b.stime).saturating_sub(a.utime + a.stime);
                (ticks as f64 * tick_ns) as u64
            });
        let others = rec
            .points
            .iter()
            .map(|p| p.threads_running)
            .max()
            .unwrap_or(0);
        let load = Load::judge(
            rec.server_session_cpu_ns,
            server_cpu_ns,
            tick_ns as u64,
            others,
        );
        match self.rc.observe(
            if rec.points.is_empty() {
                f64::NAN
            } else {
                rec.query_p50_us
            },
            load,
        ) {
            Some(Change::Lowered { hz, rtt_us, usual_us }) => log(&format!(
                "{}: sample round trip {:.1} ms (usually {:.2} ms) while watch's own statements are the server's load; lowering the SQL rate to {hz} Hz",
                self.w.name,
                rtt_us / 1e3,
                usual_us / 1e3
            )),
            Some(Change::Raised { hz, rtt_us, back_to_target }) => log(&format!(
                "{}: round trip back to {:.2} ms; sampling at {hz} Hz{}",
                self.w.name,
                rtt_us / 1e3,
                if back_to_target { " again" } else { "" }
            )),
            None => {}
        }
    }

    /// The server is down (or watch stops): a lost connection said, and the pending capture
    /// written with what it has.
    fn session_ended(&mut self, lost: Option<String>, inf: &Info) {
        let sh = self.sh;
        sh.metrics.up.get_or_create(&self.label).set(0);
        let step = self.ledger.session_ended(sh.now_ms());
        self.burst_step(step);
        if let Some(why) = lost {
            log(&format!(
                "{}: connection lost ({why}); reconnecting",
                self.w.name
            ));
            self.down_since = Some(Instant::now());
            if let Some(p) = self.pending.take() {
                let cut = format!(
                    "the connection was lost {:.0} ms after the trigger; the after window is cut short",
                    sh.now_ms() - p.fired.t_ms
                );
                self.finish_pending(inf, p, Some(cut));
            }
        }
    }

    /// watch stops: a capture still in its after window is written with what it has.
    fn stopped(mut self) {
        let sh = self.sh;
        let now = sh.now_ms();
        let decided = self.ledger.finish(now);
        self.burst_step(super::ledger::Step {
            event: None,
            decided,
        });
        if let (Some(p), Some(inf)) = (self.pending.take(), self.info.as_ref()) {
            let cut = format!(
                "watch was stopped {:.0} ms after the trigger; the after window is cut short",
                now - p.fired.t_ms
            );
            self.finish_pending(inf, p, Some(cut));
        }
        let counts = self.ledger.counts.clone();
        log(&format!("{}: {}", self.w.name, counts.line()));
        let _ = capture::append_log(
            &sh.plan.out_dir,
            &LogLine {
                time: utc(sh.unix_ms(now) + self.server_offset_ms),
                server: self.w.name.clone(),
                trigger: String::new(),
                dir: None,
                peaks: None,
                skipped: None,
                burst: None,
                bursts: Some(counts.clone()),
            },
        );
        if let Ok(mut b) = sh.bursts.lock() {
            b.merge(&counts);
        }
    }
}
