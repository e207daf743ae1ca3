//! Captures: one directory per trigger event, the `watch.log` index, the free-space floor and
//! retention by count and age.
//!
//! A capture directory holds `doctor-snapshot.json` (what `doctor --snapshot DIR` reads: the
//! server's variables, status, INNODB STATUS and performance_schema waits at the trigger, host
//! facts, and the sampler history as its burst record), `capture.json`
//! (`spinscope.watch-capture/1`: trigger, peaks, every sample from `--history` before to
//! `--after` after the trigger), `processlist.tsv`, `innodb-status-after.txt` (the second
//! INNODB STATUS, at the end of the after window), `host-facts.json` and, when recorded,
//! `perf-script.txt` (read by `spinscope profile --perf-script`).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

// The documents a capture writes are plain types in `watch::doc` (serde only); this module
// writes them and keeps the directories.
pub use super::doc::{peaks, points, CaptureDoc, CapturePoint, LogLine, Peaks, CAPTURE_SCHEMA};

/// The `series` lines of `capture.json` (and of `watch --help`): each series, its source and
/// its rate.
pub fn series_sources(hz: f64, sql_hz: Option<f64>, proc_source: Option<&str>) -> Vec<String> {
    let sql = sql_hz.unwrap_or(hz);
    let mut v = vec![format!(
        "threads_running, threads_connected, qps (from Questions), row_lock_waits (Innodb_row_lock_current_waits): SHOW GLOBAL STATUS at {sql} Hz{}",
        if sql < hz { "; samples marked held repeat the last read" } else { "" }
    ), format!("rtt_us: that statement's round trip at {sql} Hz")];
    if let Some(src) = proc_source {
        v.push(format!("running: {src}, at {hz} Hz"));
    }
    v.push("host_busy_pct, server_cpu_pct: /proc/stat and /proc/PID/stat, once a second (local servers)".into());
    v
}

/// A directory name from a time and a server name: `20261123T221530.125Z-db1`.
pub fn dir_name(time: &str, server: &str) -> String {
    let slug: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let t: String = time.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{t}-{slug}")
}

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs writes one struct into a valid, exclusively borrowed local.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}

/// Why a capture may not be written now (the free-space floor), or None.
pub fn disk_refusal(dir: &Path, min_free: u64) -> Option<String> {
    let free = free_bytes(dir)?;
    (free < min_free).then(|| {
        format!(
            "only {} free on {}, under --min-free-disk {}; capture skipped (free space or lower the floor)",
            human_bytes(free),
            dir.display(),
            human_bytes(min_free)
        )
    })
}

pub fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// Parse "500M", "2G", "1048576", "10GiB" into bytes.
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n.parse().map_err(|_| {
        Error::bad_input(format!(
            "--min-free-disk {s:?}: give a size such as 500M, 2G or 0"
        ))
    })?;
    let mul = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1u64,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        u => {
            return Err(Error::bad_input(format!(
                "--min-free-disk {s:?}: unknown unit {u:?}; use K, M, G or T"
            )))
        }
    };
    Ok((n * mul as f64) as u64)
}

/// Serialises appends to `watch.log` and retention between server threads.
static INDEX: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Append one line to `watch.log` (created private on first use).
pub fn append_log(out: &Path, line: &LogLine) -> Result<()> {
    let _g = INDEX.lock();
    let path = out.join("watch.log");
    // O_NOFOLLOW: a symlink planted at watch.log is refused, never appended through.
    let mut f = crate::files::append_nofollow(&path, 0o600)
        .map_err(|e| Error::runtime(format!("appending to {}: {e}", path.display())))?;
    let s = serde_json::to_string(line).map_err(|e| Error::runtime(e.to_string()))? + "\n";
    f.write_all(s.as_bytes())
        .map_err(|e| Error::runtime(format!("appending to {}: {e}", path.display())))
}

/// The marker of a capture being written: holds the writing process's pid. A directory with it
/// and no `capture.json` whose writer is gone (a `kill -9`, a crash) is debris that retention
/// removes.
pub const INCOMPLETE: &str = ".incomplete";

/// Mark a new capture directory as being written by this process.
pub fn mark_incomplete(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(INCOMPLETE))?;
    f.write_all(format!("{}\n", std::process::id()).as_bytes())
}

/// The capture is whole: its marker goes.
pub fn mark_complete(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(INCOMPLETE));
}

/// `20261123T221530.125Z-...`: a name [`dir_name`] makes.
fn capture_like(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 21
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'.'
        && b[16..19].iter().all(u8::is_ascii_digit)
        && &b[19..21] == b"Z-"
}

/// Half-written capture directories under `out` whose writer is gone: a marker naming a
/// process that no longer runs, or (written before markers existed) a capture-named directory
/// without `capture.json` or marker, untouched for an hour.
pub fn debris(out: &Path) -> Vec<PathBuf> {
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir(out) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|d| !d.join("capture.json").exists())
        .filter(|d| match std::fs::read_to_string(d.join(INCOMPLETE)) {
            Ok(t) => match t.trim().parse::<u32>() {
                Ok(pid) => pid != me && !Path::new(&format!("/proc/{pid}")).exists(),
                Err(_) => true,
            },
            Err(_) => {
                d.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(capture_like)
                    && std::fs::symlink_metadata(d)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|m| m.elapsed().ok())
                        .is_some_and(|a| a.as_secs() > 3600)
            }
        })
        .collect();
    v.sort();
    v
}

/// Capture directories under `out` (those holding a `capture.json`), oldest name first.
pub fn list(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.join("capture.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Remove the oldest captures beyond `keep`, those older than `max_age_s`, and half-written
/// ones whose writer is gone ([`debris`]); returns the removed directories. Only directories
/// with a `capture.json` or a capture's marker (or name) are touched.
pub fn retain(out: &Path, keep: usize, max_age_s: f64) -> Vec<PathBuf> {
    let _g = INDEX.lock();
    let all = list(out);
    let now = std::time::SystemTime::now();
    let mut removed: Vec<PathBuf> = debris(out)
        .into_iter()
        .filter(|d| std::fs::remove_dir_all(d).is_ok())
        .collect();
    let excess = all.len().saturating_sub(keep);
    for (i, d) in all.iter().enumerate() {
        let old = std::fs::metadata(d.join("capture.json"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|age| age.as_secs_f64() > max_age_s);
        if (i < excess || old) && std::fs::remove_dir_all(d).is_ok() {
            removed.push(d.clone());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_bytes("500M").unwrap(), 500 << 20);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("0").unwrap(), 0);
        assert!(parse_bytes("lots")
            .unwrap_err()
            .to_string()
            .contains("500M"));
        assert!(parse_bytes("5X").unwrap_err().to_string().contains("unit"));
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
        assert_eq!(human_bytes(12), "12 B");
    }

    #[test]
    fn floor_refuses_and_retention_keeps_the_newest() {
        let d = tempfile::tempdir().unwrap();
        assert!(disk_refusal(d.path(), 0).is_none());
        let why = disk_refusal(d.path(), u64::MAX).unwrap();
        assert!(why.contains("--min-free-disk"), "{why}");
        for n in ["a", "b", "c", "d"] {
            std::fs::create_dir(d.path().join(n)).unwrap();
            std::fs::write(d.path().join(n).join("capture.json"), "{}").unwrap();
        }
        std::fs::create_dir(d.path().join("0-not-ours")).unwrap();
        // Half-written: by a process that is gone (no such pid), and by this one.
        let dead = d.path().join("20261123T221530.125Z-dead");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(INCOMPLETE), "4294967294\n").unwrap();
        let mine = d.path().join("20261123T221531.125Z-mine");
        std::fs::create_dir(&mine).unwrap();
        mark_incomplete(&mine).unwrap();
        assert!(mark_incomplete(&mine).is_err(), "the marker is made new");
        assert_eq!(debris(d.path()), vec![dead.clone()]);
        let gone = retain(d.path(), 2, 1e9);
        assert_eq!(gone.len(), 3, "{gone:?}");
        assert!(!dead.exists() && mine.exists());
        mark_complete(&mine);
        assert!(!mine.join(INCOMPLETE).exists());
        assert_eq!(list(d.path()).len(), 2);
        assert!(d.path().join("d").exists() && d.path().join("0-not-ours").exists());
        assert_eq!(retain(d.path(), 10, -1.0).len(), 2);
        assert!(mine.exists(), "a capture being written is not removed");
        assert!(capture_like("20261123T221530.125Z-db1") && !capture_like("caps"));
    }

    #[test]
    fn dir_names_are_safe() {
        assert_eq!(
            dir_name("2026-11-23T22:15:30.125Z", "root@/tmp/x.sock"),
            "20261123T221530.125Z-root__tmp_x_sock"
        );
    }
}
