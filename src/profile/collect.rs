//! Live collection: `perf record -g` on one process for a fixed time, then `perf script`.
//! Uses the software cpu-clock event when the CPU's hardware events are not supported (VMs).

use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};

/// Columns asked of `perf script`: enough for folding and for the no-symbol spin-loop search.
pub const SCRIPT_FIELDS: &str = "comm,pid,tid,time,event,ip,sym,symoff,dso";

/// A live recording request.
#[derive(Debug, Clone)]
pub struct Request {
    pub pid: u32,
    pub seconds: f64,
    pub frequency_hz: u32,
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct Recording {
    pub script: String,
    pub event: String,
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

/// Find the pid of a process by its command name; the lowest pid when several match.
pub fn find_process(name: &str) -> Result<u32> {
    let rd =
        std::fs::read_dir("/proc").map_err(|e| Error::runtime(format!("reading /proc: {e}")))?;
    let mut pids: Vec<u32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| comm_of(*p).as_deref() == Some(name))
        .collect();
    pids.sort_unstable();
    pids.first().copied().ok_or_else(|| {
        Error::bad_input(format!(
            "--process {name}: no running process has that name; start the server or give --pid"
        ))
    })
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

/// Record `req.pid` for `req.seconds`, writing perf.data into `dir`, and return the script.
pub fn record(req: &Request, dir: &Path) -> Result<Recording> {
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
    let data = dir.join("perf.data");
    let out = Command::new("perf")
        .arg("record")
        .args([
            "-e",
            event,
            "-g",
            "-F",
            &req.frequency_hz.to_string(),
            "-p",
            &req.pid.to_string(),
        ])
        .arg("-o")
        .arg(&data)
        .args(["--", "sleep", &format!("{:.3}", req.seconds)])
        .output()
        .map_err(|e| perf_missing(&e))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if let Some(e) = paranoid_hint(&stderr) {
            return Err(e);
        }
        if comm_of(req.pid).is_none() {
            return Err(Error::runtime(format!(
                "process {} exited during the profile; nothing usable was recorded",
                req.pid
            )));
        }
        let first = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(Error::runtime(format!("perf record failed: {first}")));
    }
    if comm_of(req.pid).is_none() {
        return Err(Error::runtime(format!(
            "process {} exited during the profile; profile a running server",
            req.pid
        )));
    }
    let out = Command::new("perf")
        .args(["script", "-F", SCRIPT_FIELDS, "-i"])
        .arg(&data)
        .output()
        .map_err(|e| perf_missing(&e))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(Error::runtime(format!("perf script failed: {first}")));
    }
    let script = String::from_utf8(out.stdout)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if script.trim().is_empty() {
        return Err(Error::runtime(format!(
            "perf recorded no samples of process {} in {} s: is it busy? try a longer --seconds",
            req.pid, req.seconds
        )));
    }
    Ok(Recording {
        script,
        event: event.to_string(),
    })
}
