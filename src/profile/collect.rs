//! Live collection: `perf record -g` on one process for a fixed time, then `perf script`
//! streamed to the caller. Uses the software cpu-clock event when the CPU's hardware events are
//! not supported (VMs). perf.data lives in a private temporary directory (mkdtemp, 0700) that is
//! removed on every way out; the perf children are stopped and reaped on every way out too,
//! including SIGINT, SIGTERM and SIGHUP during the recording.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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

/// Find the pid of the one process with this command name; several are refused with their
/// pids listed (bad input: the user must choose with --pid).
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
            "--process {name}: {} processes have that name (pids {}); choose one with --pid PID",
            many.len(),
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
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
    let dir = tempfile::Builder::new()
        .prefix("spinscope-profile-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("creating a private temporary directory: {e}")))?;
    let data = dir.path().join("perf.data");
    let errlog = dir.path().join("perf.stderr");
    let signals = Signals::catch();
    let err_file = File::create(&errlog)
        .map_err(|e| Error::runtime(format!("creating {}: {e}", errlog.display())))?;
    let mut perf = Reaped(Some(
        perf_command()
            .arg("record")
            .args(["-e", event, "-F", &req.frequency_hz.to_string(), "-q"])
            .args(mode.record_args(req.pid))
            .arg("-o")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let deadline = Instant::now() + Duration::from_secs_f64(req.seconds);
    let mut ended_early = None;
    while Instant::now() < deadline {
        if let Some(s) = signals.caught() {
            perf.stop(Duration::from_secs(10));
            return Err(Error::runtime(format!(
                "profile stopped by {}: perf record was stopped and its temporary files removed; \
                 nothing was analysed",
                signal_name(s)
            )));
        }
        if let Some(c) = perf.0.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                ended_early = Some(st);
                perf.0 = None;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let ok = match ended_early {
        Some(st) => st.success(),
        None => perf.stop(Duration::from_secs(30)),
    };
    let stderr = std::fs::read_to_string(&errlog).unwrap_or_default();
    if comm_of(req.pid).is_none() {
        return Err(Error::runtime(format!(
            "process {} exited during the profile; profile a running server",
            req.pid
        )));
    }
    if !ok || ended_early.is_some() || !data.exists() {
        if let Some(e) = paranoid_hint(&stderr) {
            return Err(e);
        }
        return Err(Error::runtime(format!(
            "perf record failed: {}",
            first_line(&errlog)
        )));
    }

    let script_err = dir.path().join("perf-script.stderr");
    let err_file = File::create(&script_err)
        .map_err(|e| Error::runtime(format!("creating {}: {e}", script_err.display())))?;
    let mut script = Reaped(Some(
        perf_command()
            .args([
                "script",
                "-F",
                SCRIPT_FIELDS,
                "--pid",
                &req.pid.to_string(),
                "-i",
            ])
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err_file)
            .spawn()
            .map_err(|e| perf_missing(&e))?,
    ));
    let out = script
        .0
        .as_mut()
        .and_then(|c| c.stdout.take())
        .ok_or_else(|| Error::runtime("perf script: no output pipe"))?;
    // A signal while perf script runs stops it; the reader then sees the end of its output.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = Arc::clone(&done);
        let got = Arc::clone(&signals.got);
        let pid = script.0.as_ref().map_or(0, |c| c.id()) as libc::pid_t;
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if got.load(Ordering::SeqCst) != 0 {
                    // SAFETY: kill(2) on our child; it is reaped only after this thread ends.
                    unsafe {
                        libc::kill(pid, libc::SIGTERM);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut reader = BufReader::with_capacity(1 << 18, out);
    let res = consume(&mut reader);
    drop(reader);
    done.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    if let Some(s) = signals.caught() {
        script.signal(libc::SIGTERM);
        return Err(Error::runtime(format!(
            "profile stopped by {} while reading the recording: perf was stopped and its \
             temporary files removed",
            signal_name(s)
        )));
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
    Ok((value, event.to_string()))
}
