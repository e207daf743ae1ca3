//! Live collection: `perf record -g` of a server (per CPU or per task) for a fixed time, its
//! output streamed through memory into `perf script`, whose text is handed to the caller while
//! the recording runs. Uses the software cpu-clock event when the CPU's hardware events are not
//! supported (VMs). perf's messages go to a private temporary directory (mkdtemp, 0700) that is
//! removed on every way out; the perf children are stopped and reaped on every way out too,
//! including SIGINT, SIGTERM and SIGHUP during the recording.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Columns asked of `perf script`: enough for folding, weights and the spin-loop search.
pub const SCRIPT_FIELDS: &str = "comm,pid,tid,time,period,event,ip,sym,symoff,dso";

/// A live recording request.
#[derive(Debug, Clone)]
pub struct Request {
    pub pid: u32,
    pub seconds: f64,
    pub frequency_hz: u32,
}

/// How perf attaches to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Attach {
    /// One event per CPU (`perf record -a`), the server's samples kept by `perf script --pid`:
    /// nothing is switched at the server's context switches (docs/PERFORMANCE.md, issue 25).
    Cpu,
    /// One event per server thread (`perf record -p PID`): switched in and out at each of its
    /// context switches, which an OLTP server makes thousands of times a second.
    Task,
}

/// How call chains are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CallGraph {
    /// Frame pointers (`-g`): cheap; callers of code built without them are cut short.
    Fp,
    /// DWARF unwinding of a stack copy (`--call-graph dwarf`): full chains, much more data.
    Dwarf,
    /// The sampled function alone.
    None,
}

/// The way of recording: how perf attaches and unwinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    pub attach: Attach,
    pub call_graph: CallGraph,
}

impl Default for Mode {
    /// Per CPU with frame-pointer call chains: measured under 3% of a loaded server's
    /// throughput at the default frequency (docs/PERFORMANCE.md, issue 25 §5).
    fn default() -> Self {
        Mode {
            attach: Attach::Cpu,
            call_graph: CallGraph::Fp,
        }
    }
}

impl Mode {
    fn record_args(self, pid: u32) -> Vec<String> {
        let mut v: Vec<String> = match self.call_graph {
            CallGraph::Fp => vec!["-g".into()],
            CallGraph::Dwarf => vec!["--call-graph".into(), "dwarf,16384".into()],
            CallGraph::None => Vec::new(),
        };
        match self.attach {
            Attach::Cpu => v.push("-a".into()),
            Attach::Task => v.extend(["-p".into(), pid.to_string()]),
        }
        v
    }

    /// How it is named in documents: "per-cpu, fp".
    pub fn describe(self) -> String {
        let a = match self.attach {
            Attach::Cpu => "per-cpu",
            Attach::Task => "per-task",
        };
        let g = match self.call_graph {
            CallGraph::Fp => "fp",
            CallGraph::Dwarf => "dwarf",
            CallGraph::None => "no call graph",
        };
        format!("{a}, {g}")
    }
}

fn perf_missing(e: &std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        Error::runtime(
            "perf is not installed: install it (Debian/Ubuntu: `apt-get install linux-perf` or \
             `linux-tools-$(uname -r)`; RHEL: `dnf install perf`)",
        )
    } else {
        Error::runtime(format!("could not run perf: {e}"))
    }
}

fn paranoid_hint(stderr: &str) -> Option<Error> {
    let s = stderr.to_ascii_lowercase();
    (s.contains("perf_event_paranoid") || s.contains("permission denied") || s.contains("not permitted"))
        .then(|| {
            Error::runtime(
                "perf was not permitted to sample: run as root, or allow it with \
                 `sysctl -w kernel.perf_event_paranoid=1` (see /proc/sys/kernel/perf_event_paranoid)",
            )
        })
}

/// The process's command name, if it exists.
pub fn comm_of(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Find the pid of the one process with this command name; several are refused with each pid's
/// ports, sockets and data directory listed (bad input: the user must choose with --pid).
pub fn find_process(name: &str) -> Result<u32> {
    let rd =
        std::fs::read_dir("/proc").map_err(|e| Error::runtime(format!("reading /proc: {e}")))?;
    let mut pids: Vec<u32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| comm_of(*p).as_deref() == Some(name))
        .collect();
    pids.sort_unstable();
    match pids.as_slice() {
        [] => Err(Error::bad_input(format!(
            "--process {name}: no running process has that name; start the server or give --pid"
        ))),
        [one] => Ok(*one),
        many => Err(Error::bad_input(format!(
            "--process {name}: {} processes have that name; choose one with --pid PID:\n{}",
            many.len(),
            many.iter()
                .map(|&p| format!("  {}", super::instances::describe(p).line()))
                .collect::<Vec<_>>()
                .join("\n")
        ))),
    }
}

/// Whether hardware events work here; on VMs without a PMU perf reports `<not supported>`.
pub fn hardware_events_supported() -> Result<bool> {
    let out = Command::new("perf")
        .args(["stat", "-x", ",", "-e", "cycles", "--", "true"])
        .output()
        .map_err(|e| perf_missing(&e))?;
    let err = String::from_utf8_lossy(&out.stderr);
    Ok(out.status.success() && !err.contains("not supported") && !err.contains("<not counted>"))
}

/// `--no-bpf-event` where perf has it (5.1 and later). Without it perf record starts a
/// side-band thread for BPF program events that polls with a 1 s timeout and is joined at
/// exit: with perf 6.1 on the 2-vCPU guest every recording ended about 0.95 s late
/// (`perf record -a -g -o - -- true`: 1.09 s, with the flag 0.13 s), which was most of the
/// time from the end of a recording to the answer. What is lost: samples inside BPF programs
/// are not named after their program (a database server runs none of its own).
fn no_bpf_event() -> &'static [&'static str] {
    let version = Command::new("perf")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| parse_perf_version(&String::from_utf8_lossy(&o.stdout)));
    match version {
        Some(v) if v >= (5, 1) => &["--no-bpf-event"],
        _ => &[],
    }
}

/// Major and minor version from `perf --version` ("perf version 6.1.192").
pub fn parse_perf_version(text: &str) -> Option<(u32, u32)> {
    let v = text.trim().strip_prefix("perf version ")?;
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// SIGINT, SIGTERM and SIGHUP caught for the lifetime of the guard (the last one seen is kept).
struct Signals {
    got: Arc<AtomicUsize>,
    ids: Vec<signal_hook::SigId>,
}

impl Signals {
    fn catch() -> Signals {
        let got = Arc::new(AtomicUsize::new(0));
        let ids = [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ]
        .iter()
        .filter_map(|&s| signal_hook::flag::register_usize(s, Arc::clone(&got), s as usize).ok())
        .collect();
        Signals { got, ids }
    }
    fn caught(&self) -> Option<i32> {
        match self.got.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// A child that is stopped (SIGINT, then SIGKILL after a grace period) and reaped when dropped.
struct Reaped(Option<Child>);

impl Reaped {
    fn signal(&self, sig: i32) {
        if let Some(c) = &self.0 {
            // SAFETY: kill(2) on our own, not yet reaped, child.
            unsafe {
                libc::kill(c.id() as libc::pid_t, sig);
            }
        }
    }
    /// Ask the child to finish (SIGINT: perf writes its data and exits), wait up to `grace`,
    /// then kill it; returns whether it finished cleanly (perf exits 130 after SIGINT).
    fn stop(&mut self, grace: Duration) -> bool {
        use std::os::unix::process::ExitStatusExt;
        let clean = |st: std::process::ExitStatus| {
            st.success() || st.code() == Some(130) || st.signal() == Some(libc::SIGINT)
        };
        let Some(mut c) = self.0.take() else {
            return false;
        };
        if let Ok(Some(st)) = c.try_wait() {
            return st.success();
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(c.id() as libc::pid_t, libc::SIGINT);
        }
        let end = Instant::now() + grace;
        while Instant::now() < end {
            if let Ok(Some(st)) = c.try_wait() {
                return clean(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        false
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A perf command in its own process group (a terminal's Ctrl-C reaches spinscope, which stops
/// perf itself), told by the kernel to stop if spinscope dies.
fn perf_command() -> Command {
    let mut c = Command::new("perf");
    c.process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    c
}

fn first_line(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "no message".into())
}

/// What recording costs a loaded server, as measured (docs/PERFORMANCE.md, issue 25 §5:
/// sysbench oltp_read_write, 8 threads, throughput with and without, interleaved pairs).
pub fn expected_cost(mode: Mode, frequency_hz: u32) -> String {
    let band = match frequency_hz {
        0..=99 => 0,
        100..=499 => 1,
        500..=999 => 2,
        _ => 3,
    };
    let c = match (mode.attach, mode.call_graph, band) {
        (_, _, 3) => "more than at 999 Hz, not measured",
        (Attach::Task, _, 0) => "about 10% of its throughput",
        (Attach::Task, _, _) => "about 20% of its throughput",
        (Attach::Cpu, CallGraph::Dwarf, 0) => "about 5% of its throughput",
        (Attach::Cpu, CallGraph::Dwarf, _) => "more than 5% of its throughput, not measured",
        (Attach::Cpu, _, 0) => "about 1% of its throughput",
        (Attach::Cpu, _, 1) => "at most about 3% of its throughput",
        (Attach::Cpu, _, _) => "about 5% of its throughput",
    };
    c.to_string()
}

/// Record `req.pid` for `req.seconds` in the default [`Mode`] and hand `perf script`'s output,
/// streamed, to `consume`. Returns what `consume` returned and the event recorded.
pub fn record<T>(
    req: &Request,
    consume: impl FnOnce(&mut dyn BufRead) -> Result<T>,
) -> Result<(T, String)> {
    record_with(req, Mode::default(), consume)
}

/// [`record`] in the given mode.
///
/// The recording is streamed: `perf record -o -` writes into a pipe that spinscope drains into
/// memory at once (perf record never waits on the reader, so it loses nothing to a slow
/// consumer), and `perf script -i -` reads it while the recording runs, at a lower CPU priority
/// (nice 10) so that on a saturated host it takes only CPU the server leaves; when the
/// recording ends it gets this process's priority back, as the answer now waits on it. `consume` reads
/// perf script's output as it comes; when the recording ends only the tail is left to read.
pub fn record_with<T>(
    req: &Request,
    mode: Mode,
    consume: impl FnOnce(&mut dyn BufRead) -> Result<T>,
) -> Result<(T, String)> {
    if comm_of(req.pid).is_none() {
        return Err(Error::bad_input(format!(
            "--pid {}: no such process",
            req.pid
        )));
    }
    let event = if hardware_events_supported()? {
        "cycles"
    } else {
        "cpu-clock"
    };
    let mut rec: Vec<String> = ["-e", event, "-F", &req.frequency_hz.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    rec.extend(mode.record_args(req.pid));
    let script: Vec<String> = ["-F", SCRIPT_FIELDS, "--pid", &req.pid.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let value = record_args(req.pid, req.seconds, &rec, &script, consume)?;
    Ok((value, event.to_string()))
}

/// The recording machinery of [`record_with`] with the caller's `perf record` arguments
/// (events, attach, call chains; `-q`, `-o -` and `--no-bpf-event` are added) and `perf
/// script` arguments (fields, filters; `-i -` is added): `profile --waits` records its own
/// events this way.
pub fn record_args<T>(
    pid: u32,
    seconds: f64,
    record: &[String],
    script_args: &[String],
    consume: impl FnOnce(&mut dyn BufRead) -> Result<T>,
) -> Result<T> {
    let dir = private_dir(pid)?;
    let errlog = dir.path().join("perf-record.stderr");
    let script_err = dir.path().join("perf-script.stderr");
    let signals = Signals::catch();
    let mut perf = Reaped(Some(
        perf_command()
            .arg("record")
            .args(record)
            .arg("-q")
            .args(no_bpf_event())
            .args(["-o", "-"])
            .args(timed(seconds))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(&errlog)?)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let data = perf.0.as_mut().and_then(|c| c.stdout.take());
    let mut script_cmd = perf_command();
    // SAFETY: setpriority is async-signal-safe; it lowers only the child's own priority.
    unsafe {
        script_cmd.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, SCRIPT_NICE);
            Ok(())
        });
    }
    let mut script = Reaped(Some(
        script_cmd
            .arg("script")
            .args(script_args)
            .args(["-i", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file(&script_err)?)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let (Some(data), Some(into), Some(out)) = (
        data,
        script.0.as_mut().and_then(|c| c.stdin.take()),
        script.0.as_mut().and_then(|c| c.stdout.take()),
    ) else {
        return Err(Error::runtime("perf: no pipes to its record and script"));
    };
    let pump = Pump::start(data, into);
    let script_pid = script.0.as_ref().map_or(0, |c| c.id()) as libc::pid_t;
    let got = Arc::clone(&signals.got);
    let control = std::thread::spawn(move || run_recording(perf, seconds, &got, Some(script_pid)));

    let mut reader = BufReader::with_capacity(1 << 18, out);
    let res = consume(&mut reader);
    // Whatever consume left unread is not waited for: perf script's writes now fail.
    drop(reader);
    let recorded = control.join().unwrap_or(Recorded::Failed);
    let pumped = pump.finish();
    let stderr = std::fs::read_to_string(&errlog).unwrap_or_default();
    if let Some(s) = signals.caught() {
        script.signal(libc::SIGTERM);
        return Err(stopped_by(s));
    }
    let status = script.0.take().map(|mut c| c.wait());
    if comm_of(pid).is_none() {
        return Err(exited(pid));
    }
    if let Err(e) = pumped {
        return Err(Error::runtime(format!("reading perf record's output: {e}")));
    }
    if recorded != Recorded::Finished {
        if let Some(e) = paranoid_hint(&stderr) {
            return Err(e);
        }
        return Err(Error::runtime(format!(
            "perf record failed: {}",
            first_line(&errlog)
        )));
    }
    let value = res?;
    if !matches!(status, Some(Ok(st)) if st.success()) {
        return Err(Error::runtime(format!(
            "perf script failed: {}",
            first_line(&script_err)
        )));
    }
    drop(dir);
    Ok(value)
}

/// Like [`record_args`], but `perf record` writes a file in a private temporary directory and
/// `perf script` reads it only after the recording ended, so the window itself pays only the
/// kernel's event cost and perf record's writes. `profile --waits` records this way: streamed,
/// its thousands of switch events a second kept perf script and the join busy beside the
/// server during the window (a 4-client insert load on 2 vCPUs lost 20-32% of its throughput
/// streamed, nothing measurable recorded to a file; docs/PERFORMANCE.md). `max_bytes` bounds
/// the file (`perf record --max-size`).
pub fn record_to_file_args<T>(
    pid: u32,
    seconds: f64,
    record: &[String],
    script_args: &[String],
    max_bytes: u64,
    consume: impl FnOnce(&mut dyn BufRead) -> Result<T>,
) -> Result<T> {
    let dir = private_dir(pid)?;
    let data = dir.path().join("perf.data");
    let errlog = dir.path().join("perf-record.stderr");
    let script_err = dir.path().join("perf-script.stderr");
    let signals = Signals::catch();
    let perf = Reaped(Some(
        perf_command()
            .arg("record")
            .args(record)
            .arg("-q")
            .args(no_bpf_event())
            .arg(format!("--max-size={}K", (max_bytes / 1024).max(1024)))
            .arg("-o")
            .arg(&data)
            .args(timed(seconds))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&errlog)?)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let got = Arc::clone(&signals.got);
    let recorded = run_recording(perf, seconds, &got, None);
    if let Some(s) = signals.caught() {
        return Err(stopped_by(s));
    }
    if comm_of(pid).is_none() {
        return Err(exited(pid));
    }
    let stderr = std::fs::read_to_string(&errlog).unwrap_or_default();
    if recorded != Recorded::Finished {
        if let Some(e) = paranoid_hint(&stderr) {
            return Err(e);
        }
        return Err(Error::runtime(format!(
            "perf record failed: {}",
            first_line(&errlog)
        )));
    }
    let mut script = Reaped(Some(
        perf_command()
            .arg("script")
            .args(script_args)
            .arg("-i")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(&script_err)?)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let Some(out) = script.0.as_mut().and_then(|c| c.stdout.take()) else {
        return Err(Error::runtime("perf: no pipe from its script"));
    };
    let mut reader = BufReader::with_capacity(1 << 18, out);
    let res = consume(&mut reader);
    // Whatever consume left unread is not waited for: perf script's writes now fail.
    drop(reader);
    if let Some(s) = signals.caught() {
        script.signal(libc::SIGTERM);
        return Err(stopped_by(s));
    }
    let status = script.0.take().map(|mut c| c.wait());
    let value = res?;
    if !matches!(status, Some(Ok(st)) if st.success()) {
        return Err(Error::runtime(format!(
            "perf script failed: {}",
            first_line(&script_err)
        )));
    }
    drop(dir);
    Ok(value)
}

/// The recording's private temporary directory (perf's data and messages), once `pid` is
/// known to exist.
fn private_dir(pid: u32) -> Result<tempfile::TempDir> {
    if comm_of(pid).is_none() {
        return Err(Error::bad_input(format!("--pid {pid}: no such process")));
    }
    tempfile::Builder::new()
        .prefix("spinscope-profile-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("creating a private temporary directory: {e}")))
}

fn stopped_by(sig: i32) -> Error {
    Error::runtime(format!(
        "profile stopped by {}: perf was stopped and its temporary files removed; nothing was \
         analysed",
        signal_name(sig)
    ))
}

fn exited(pid: u32) -> Error {
    Error::runtime(format!(
        "process {pid} exited during the profile; profile a running server"
    ))
}

/// perf script's niceness while it reads the recording as it is made.
const SCRIPT_NICE: i32 = 10;

/// Give `pid` (perf script, niced while the recording ran) this process's own niceness back.
/// An unprivileged user may not raise a priority (EPERM without CAP_SYS_NICE or RLIMIT_NICE):
/// then perf script stays at nice 10, as before.
fn unnice(pid: libc::pid_t) {
    if pid <= 0 {
        return;
    }
    // SAFETY: getpriority/setpriority take no pointers; errno is this thread's.
    unsafe {
        *libc::__errno_location() = 0;
        let own = libc::getpriority(libc::PRIO_PROCESS, 0);
        if own == -1 && *libc::__errno_location() != 0 {
            return;
        }
        libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, own);
    }
}

/// At most this much of perf record's output waits in memory for perf script (a recording
/// about 20x larger than a busy 2-minute per-CPU one; docs/PERFORMANCE.md).
const MAX_BUFFERED: usize = 512 << 20;

fn log_file(path: &std::path::Path) -> Result<File> {
    File::create(path).map_err(|e| Error::runtime(format!("creating {}: {e}", path.display())))
}

/// How the recording ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    /// Ended with its workload's time and flushed its data.
    Finished,
    /// perf record failed, or had to be stopped at the deadline and did not end cleanly.
    Failed,
    /// A signal stopped it.
    Signalled,
}

/// Let perf record run until its `seconds` workload ends (stopping it early on a signal, which
/// also stops perf script at `script_pid`).
fn run_recording(
    mut perf: Reaped,
    seconds: f64,
    got: &AtomicUsize,
    script_pid: Option<libc::pid_t>,
) -> Recorded {
    // perf times the window itself (its `-- sleep SECONDS` workload, see [`timed`]); this
    // deadline only bounds a perf that never ends.
    let deadline = Instant::now() + Duration::from_secs_f64(seconds) + START_GRACE;
    let ended = loop {
        if got.load(Ordering::SeqCst) != 0 {
            perf.stop(Duration::from_secs(10));
            if let Some(p) = script_pid.filter(|p| *p > 0) {
                // SAFETY: kill(2) on our child, reaped only after this thread is joined.
                unsafe {
                    libc::kill(p, libc::SIGTERM);
                }
            }
            return Recorded::Signalled;
        }
        if let Some(c) = perf.0.as_mut() {
            match c.try_wait() {
                Ok(Some(st)) => {
                    perf.0 = None;
                    break st.success();
                }
                Ok(None) => {}
                Err(_) => {
                    perf.0 = None;
                    break false;
                }
            }
        }
        if Instant::now() >= deadline {
            break perf.stop(Duration::from_secs(30));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The recording is over: from now on perf script decides when the answer comes, so it
    // gets this process's priority back. Left at nice 10 on a host with other work at nice 0
    // (two busy loops per CPU), its start (symbols, kallsyms) took over a minute.
    if let Some(p) = script_pid {
        unnice(p);
    }
    if ended {
        Recorded::Finished
    } else {
        Recorded::Failed
    }
}

/// How long perf may take to start (describing the running processes) and to finish beyond
/// the window before it is stopped.
const START_GRACE: Duration = Duration::from_secs(120);

/// The workload that times a recording: perf record enables its events only after it has
/// described the processes already running, and on a host whose CPUs the server kept busy
/// (16 clients at innodb_spin_wait_delay=6000 on 2 vCPUs) that took most of a 3 s window
/// timed from perf's start: 26-63 samples instead of about 3000. `-- sleep SECONDS` starts
/// the clock when the events are on.
fn timed(seconds: f64) -> [String; 3] {
    [
        "--".into(),
        "sleep".into(),
        format!("{:.3}", seconds.max(0.001)),
    ]
}

/// Moves perf record's output to perf script's input through memory: a reader thread that
/// never blocks on the writer, and a writer thread.
struct Pump {
    reader: std::thread::JoinHandle<std::io::Result<()>>,
    writer: std::thread::JoinHandle<()>,
}

impl Pump {
    fn start(
        mut from: impl std::io::Read + Send + 'static,
        mut to: impl std::io::Write + Send + 'static,
    ) -> Pump {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let q = Arc::clone(&queued);
        let reader = std::thread::spawn(move || {
            let mut open = true;
            loop {
                let mut buf = vec![0u8; 1 << 16];
                let n = match from.read(&mut buf) {
                    Ok(0) => return Ok(()),
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if !open {
                    continue; // perf script is gone: drain perf record so it can finish
                }
                if q.fetch_add(n, Ordering::SeqCst) + n > MAX_BUFFERED {
                    return Err(std::io::Error::other(format!(
                        "perf script fell more than {} MiB behind the recording",
                        MAX_BUFFERED >> 20
                    )));
                }
                buf.truncate(n);
                open = tx.send(buf).is_ok();
            }
        });
        let writer = std::thread::spawn(move || {
            for chunk in rx {
                queued.fetch_sub(chunk.len(), Ordering::SeqCst);
                if to.write_all(&chunk).is_err() {
                    return; // dropping rx makes the reader drain and discard
                }
            }
        });
        Pump { reader, writer }
    }

    /// Wait for both ends; the error is the reader's (perf record's pipe).
    fn finish(self) -> std::io::Result<()> {
        let r = self
            .reader
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the reader thread panicked")));
        let _ = self.writer.join();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::parse_perf_version;

    #[test]
    fn perf_versions_as_perf_prints_them() {
        // Debian 12's linux-perf, an Ubuntu kernel build, an old RHEL 7 perf.
        assert_eq!(parse_perf_version("perf version 6.1.192\n"), Some((6, 1)));
        assert_eq!(
            parse_perf_version("perf version 5.15.180-generic"),
            Some((5, 15))
        );
        assert_eq!(
            parse_perf_version("perf version 3.10.0-1160.el7.x86_64.debug"),
            Some((3, 10))
        );
        assert!(parse_perf_version("perf version 4.19.0").unwrap() < (5, 1));
        assert_eq!(parse_perf_version("perf version"), None);
        assert_eq!(parse_perf_version("bash: perf: command not found"), None);
        assert_eq!(parse_perf_version(""), None);
    }
}
