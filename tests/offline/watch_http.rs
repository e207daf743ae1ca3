//! watch's `/metrics` endpoint is bounded (issue 24 item 6): thousands of idle connections cost
//! a handful of threads and little memory, an idle connection is closed after the header
//! timeout, and the endpoint answers again once they close. Also the retention flags that
//! would delete a capture at once are refused (issue 24 item 7). No server needed: watch keeps
//! retrying an unreachable one while it serves its metrics.
//!
//! CI opens 2,000 connections; `SPINSCOPE_HTTP_IDLE=10000` runs the full count (recorded in
//! docs/PERFORMANCE.md).

use crate::common;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, free_port, Reaped};

/// The body of GET `path`, or None when there is no 200 answer within 3 s.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.starts_with("HTTP/1.1 200").then_some(out)
}

/// (threads, resident KiB) of a process.
fn status(pid: u32) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |k: &str| {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

fn raise_nofile() -> u64 {
    // SAFETY: getrlimit/setrlimit on a zeroed local struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur = r.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur
    }
}

#[test]
fn ten_thousand_idle_connections_cost_little_and_the_endpoint_comes_back() {
    let want = std::env::var("SPINSCOPE_HTTP_IDLE")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(2000);
    let limit = raise_nofile();
    let n = want.min(limit.saturating_sub(100) as usize);
    assert!(
        n >= 1000,
        "RLIMIT_NOFILE {limit} leaves room for {n} connections only"
    );
    let port = free_port();
    let dead = free_port();
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("watch.err");
    let w = Reaped(
        Command::new(bin())
            .args(["watch", "--no-defaults"])
            .arg(format!("root@127.0.0.1:{dead}"))
            .arg("--out")
            .arg(dir.path().join("caps"))
            .args(["--profile-duration", "0", "--min-free-disk", "0"])
            .arg("--metrics-listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while !get(port, "/metrics").is_some_and(|b| b.contains("spinscope_watch_up{server=")) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no metrics: {}",
            std::fs::read_to_string(&err).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (threads0, rss0) = status(w.0.id());
    // An idle connection is closed by the server within its lifetime (10 s).
    let mut idle = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let idle_reader = std::thread::spawn(move || {
        let t = Instant::now();
        let mut b = [0u8; 16];
        let r = idle.read(&mut b).map_err(|e| e.kind());
        (r, t.elapsed())
    });
    // Thousands of idle clients.
    let mut held = Vec::with_capacity(n);
    for _ in 0..n {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => held.push(s),
            Err(e) => panic!("connection {} refused: {e}", held.len()),
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let (threads, rss) = status(w.0.id());
    eprintln!(
        "{n} idle connections: watch has {threads} threads (before: {threads0}), {} MiB resident (before: {} MiB)",
        rss / 1024,
        rss0 / 1024
    );
    assert!(threads < 50, "{threads} threads with {n} idle connections");
    assert!(
        rss < 50 * 1024,
        "{rss} KiB resident with {n} idle connections"
    );
    let (r, waited) = idle_reader.join().unwrap();
    assert!(
        matches!(r, Ok(0)) || r.is_err() && waited < Duration::from_secs(20),
        "{r:?}"
    );
    assert!(
        waited < Duration::from_secs(14),
        "the idle connection was kept {waited:?}"
    );
    drop(held);
    let t0 = Instant::now();
    while get(port, "/metrics").is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the endpoint did not come back after the connections closed"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "answered again {:.1} s after they closed",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn retention_that_would_delete_a_capture_at_once_is_refused() {
    for (flag, value, needle) in [
        ("--max-age", "0", "--max-age 0h"),
        ("--max-age", "30m", "--max-age 0.5h"),
        ("--keep", "0", "--keep 0"),
    ] {
        let o = Command::new(bin())
            .args([
                "watch",
                "--no-defaults",
                "root@/nonexistent.sock",
                flag,
                value,
            ])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.contains(needle) && e.contains("right after"), "{e}");
    }
}
