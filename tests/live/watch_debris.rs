//! watch's children and debris (issue 24 item 7) against a throwaway MariaDB: `kill -9` of watch
//! during a capture leaves no perf running, its half-written capture is marked and removed by
//! the next run's retention, and a capture whose files cannot be written (a file-size limit:
//! every write past it fails, as on a full disk) is logged as failed and not counted.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::bin;
use common::mariadb::{available, skip_reason, which, MariaDb};
use common::watch::Watch;

fn watch_cmd(db: &MariaDb, out: &Path, trigger: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(["watch", "--no-defaults"])
        .arg(format!("root@{}", db.socket.display()))
        .arg("--out")
        .arg(out)
        .args(["--trigger", trigger, "--min-free-disk", "0"])
        .args(["--history", "5", "--after", "1"])
        .args(extra);
    c
}

/// (pid, state) of the children of `parent` named `comm`.
fn children(parent: u32, comm: &str) -> Vec<(u32, char)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (s.find('('), s.rfind(')')) else {
            continue;
        };
        let rest: Vec<&str> = s[close + 2..].split_whitespace().collect();
        if &s[open + 1..close] == comm && rest.get(1) == Some(&parent.to_string().as_str()) {
            v.push((pid, rest[0].chars().next().unwrap_or('?')));
        }
    }
    v
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn kill_9_during_a_capture_leaves_no_perf_and_retention_clears_the_half_capture() {
    let name = "kill_9_during_a_capture_leaves_no_perf";
    let why = available().err().or_else(|| {
        which("perf")
            .is_none()
            .then(|| "perf is not installed".into())
    });
    if skip_reason(name, why).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("caps");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut cmd = watch_cmd(
        &db,
        &out,
        "threads_running >= 0",
        &["--profile-duration", "30"],
    );
    cmd.env("TMPDIR", &tmp);
    let w = Watch::spawn(&mut cmd, dir.path().join("w1.err"));
    assert!(w.wait_for("capturing into", 60), "{}", w.stderr());
    let watch_pid = w.child.id();
    let t0 = Instant::now();
    let perf = loop {
        if let Some(&(p, _)) = children(watch_pid, "perf").first() {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "perf never started: {}",
            w.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    // The half-written capture: private, and marked.
    let half: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(half.len(), 1, "{half:?}");
    let mode = std::fs::metadata(&half[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", half[0].display());
    assert!(half[0].join(".incomplete").is_file());
    assert!(!half[0].join("capture.json").exists());
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(watch_pid as i32, libc::SIGKILL);
    }
    let t0 = Instant::now();
    while alive(perf) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "perf {perf} still running {:?} after watch was killed",
            t0.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(w);
    // What perf left in its temporary directory is private.
    for e in std::fs::read_dir(&tmp).unwrap().flatten() {
        let mode = e.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{} is mode {mode:o}", e.path().display());
    }
    // The next run removes the half-written capture (its writer is gone).
    let mut cmd = watch_cmd(
        &db,
        &out,
        "threads_running > 100000",
        &["--profile-duration", "0", "--duration", "1"],
    );
    let mut w2 = Watch::spawn(&mut cmd, dir.path().join("w2.err"));
    // --duration 1: it stops by itself.
    let t0 = Instant::now();
    let code = loop {
        if let Ok(Some(st)) = w2.child.try_wait() {
            break st.code();
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", w2.stderr());
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(dir.path().join("w2.err")).unwrap();
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("retention: removed"), "{err}");
    assert!(!half[0].exists(), "{err}");
}

#[test]
fn a_capture_that_cannot_be_written_is_logged_as_failed_and_not_counted() {
    if skip_reason("a_capture_that_cannot_be_written", available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("caps");
    let mut cmd = watch_cmd(
        &db,
        &out,
        "threads_running >= 0",
        &["--profile-duration", "0"],
    );
    // Every write past 32 KiB fails with EFBIG, as writes on a full disk fail with ENOSPC: the
    // snapshot and capture.json are larger than that.
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs before exec.
    unsafe {
        cmd.pre_exec(|| {
            let r = libc::rlimit {
                rlim_cur: 32 << 10,
                rlim_max: 32 << 10,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &r);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let w = Watch::spawn(&mut cmd, dir.path().join("w.err"));
    assert!(w.wait_for("capture FAILED", 60), "{}", w.stderr());
    let err = w.stderr();
    let (code, stdout, _) = w.stop();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("capture written"), "{err}");
    assert!(
        stdout.contains("0 capture(s)") && stdout.contains("1 failed to write"),
        "{stdout}"
    );
    let left: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert!(left.is_empty(), "the failed capture is left: {left:?}");
    let log = std::fs::read_to_string(out.join("watch.log")).unwrap();
    assert!(log.contains("capture failed"), "{log}");
}
