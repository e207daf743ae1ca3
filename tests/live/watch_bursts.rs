//! `spinscope watch` with its defaults against a throwaway MariaDB under a steady background
//! load: repeated hot-row bursts are captured at the first one and each counted once in
//! `/metrics` while the capture cools down; a password in another session's statement does not
//! reach the capture. (Issue 25 item 2, issue 24 item 8.)
//!
//! The short version runs in CI (3 bursts every 4 s); the full target of docs/PERFORMANCE.md
//! (6 bursts of 300 ms every 5 s, count 5 to 9, capture within 1.5 s of the first) runs with
//! `SPINSCOPE_WATCH_BURSTS=6 SPINSCOPE_WATCH_EVERY_S=5`.

use crate::common;
use common::http_get;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::mariadb::{available, skip_reason, MariaDb};
use common::watch::Watch;
use common::{bin, free_port, metric};
use mysql::prelude::Queryable;

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn conn(db: &MariaDb) -> mysql::Conn {
    let o = mysql::OptsBuilder::new()
        .socket(Some(db.socket.to_string_lossy().into_owned()))
        .user(Some("root"))
        .db_name(Some("h"));
    mysql::Conn::new(o).expect("connection")
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

/// `n` bursts of `ms` ms every `every_s` s from `conns` connections updating one row, starting
/// at `t0`; returns the Unix ms each burst started.
fn hot_row_bursts(db: &MariaDb, conns: usize, n: usize, every_s: f64, ms: u64) -> Vec<f64> {
    let mut cs: Vec<mysql::Conn> = (0..conns).map(|_| conn(db)).collect();
    let t0 = Instant::now() + Duration::from_millis(200);
    let t0_unix = unix_ms() + 200.0;
    std::thread::scope(|s| {
        for c in cs.iter_mut() {
            s.spawn(move || {
                for k in 0..n {
                    let start = t0 + Duration::from_secs_f64(k as f64 * every_s);
                    if let Some(d) = start.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d);
                    }
                    let end = start + Duration::from_millis(ms);
                    while Instant::now() < end {
                        c.query_drop("UPDATE hot SET c = c + 1 WHERE id = 1")
                            .unwrap();
                    }
                }
            });
        }
    });
    (0..n).map(|k| t0_unix + k as f64 * every_s * 1e3).collect()
}

#[test]
fn default_triggers_catch_repeated_hot_row_bursts_under_a_background_load() {
    let _solo = crate::common::solo();
    let name = "default_triggers_catch_repeated_hot_row_bursts";
    if skip_reason(name, available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&["--max-connections=200"]);
    db.sql(
        "CREATE DATABASE h; USE h; CREATE TABLE h.hot (id INT PRIMARY KEY, c BIGINT) ENGINE=InnoDB; \
         INSERT INTO h.hot VALUES (1, 0); \
         CREATE TABLE h.bg (id INT PRIMARY KEY, c BIGINT) ENGINE=InnoDB; \
         INSERT INTO h.bg SELECT seq, 0 FROM seq_1_to_1000",
    );
    let n = env_num("SPINSCOPE_WATCH_BURSTS", 3.0) as usize;
    let every_s = env_num("SPINSCOPE_WATCH_EVERY_S", 4.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("caps");
    let port = free_port();
    let err = dir.path().join("watch.err");
    // Defaults but for where captures go, perf (its own tests), and the free-space floor.
    let mut w = Watch {
        child: Command::new(bin())
            .args(["watch", "--no-defaults"])
            .arg(format!("root@{}", db.socket.display()))
            .arg("--out")
            .arg(&out)
            .args(["--profile-duration", "0", "--min-free-disk", "0"])
            .arg("--metrics-listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
        err,
    };
    assert!(w.wait_for("connected", 60), "{}", w.stderr());
    // A steady background load: two clients updating and reading other rows without pause.
    let stop = Arc::new(AtomicBool::new(false));
    let bg: Vec<_> = (0..2)
        .map(|i| {
            let mut c = conn(&db);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut k = i * 7;
                while !stop.load(Ordering::Relaxed) {
                    k = (k * 31 + 17) % 1000 + 1;
                    c.exec_drop("UPDATE bg SET c = c + 1 WHERE id = ?", (k,))
                        .unwrap();
                    let _: Option<i64> = c
                        .exec_first("SELECT c FROM bg WHERE id = ?", (1001 - k,))
                        .unwrap();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(3));
    let quiet = http_get(port, "/metrics");
    let bursts_before = metric(&quiet, "spinscope_watch_bursts_total");
    // A session whose statement names a password is running when the capture is taken: in
    // it until the capture is written (was a SLEEP(3), over before the capture where
    // connecting the 32 burst clients took long).
    let secret = db.load(1, "SELECT SLEEP(600), PASSWORD('hunter2-watch-secret')");
    secret.wait_observed(30);
    let starts = hot_row_bursts(&db, 32, n, every_s, 300);
    // Once the capture is written and the bursts counted (or 30 s, then the range below
    // decides).
    assert!(w.wait_for("capture written", 30), "{}", w.stderr());
    drop(secret);
    let t = Instant::now();
    let mut metrics = http_get(port, "/metrics");
    while metric(&metrics, "spinscope_watch_bursts_total") - bursts_before < n as f64
        && t.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(200));
        metrics = http_get(port, "/metrics");
    }
    stop.store(true, Ordering::Relaxed);
    for h in bg {
        h.join().unwrap();
    }
    let bursts = metric(&metrics, "spinscope_watch_bursts_total") - bursts_before;
    // No change of spinscope's is left on this server: the journal gauge says 0.
    assert_eq!(
        metric(&metrics, "spinscope_journal_open_records{"),
        0.0,
        "{metrics}"
    );
    let stderr = w.stderr();
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(w.child.id() as i32, libc::SIGTERM);
    }
    let t0 = Instant::now();
    let st = loop {
        if let Ok(Some(st)) = w.child.try_wait() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "watch did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(st.code(), Some(0), "{}", w.stderr());
    let caps: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("capture.json").is_file())
        .collect();
    assert_eq!(
        caps.len(),
        1,
        "one capture (30 s cooldown): {caps:?}\n{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(caps[0].join("capture.json")).unwrap())
            .unwrap();
    let fired = doc["fired_at_unix_ms"].as_f64().unwrap();
    let delay_ms = fired - starts[0];
    // What the samples saw around each burst: (ms after the first burst, SQL threads_running,
    // /proc running) where either is above 2.
    let seen: Vec<String> = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            p["threads_running"].as_u64().unwrap_or(0) > 2 || p["running"].as_u64().unwrap_or(0) > 2
        })
        .map(|p| {
            format!(
                "{:.0}:{}/{}",
                fired + p["t_ms"].as_f64().unwrap() - starts[0],
                p["threads_running"],
                p["running"]
            )
        })
        .collect();
    eprintln!(
        "samples above 2 (ms after the first burst: SQL/proc): {}",
        seen.join(" ")
    );
    eprintln!(
        "{n} bursts every {every_s} s: {bursts} counted (quiet before: {bursts_before}), \
         capture fired {delay_ms:.0} ms after the first by '{}'",
        doc["trigger"]["trigger"]
    );
    assert!(
        (-100.0..=1500.0).contains(&delay_ms),
        "capture {delay_ms:.0} ms after the first burst\n{stderr}"
    );
    let lo = n as f64 - 1.0;
    let hi = n as f64 + 3.0;
    assert!(
        (lo..=hi).contains(&bursts),
        "{bursts} bursts counted for {n}\n{stderr}"
    );
    assert!(
        !stderr.contains("lowering the SQL rate"),
        "the SQL reads backed off during others' bursts:\n{stderr}"
    );
    let pl = std::fs::read_to_string(caps[0].join("processlist.tsv")).unwrap();
    assert!(
        !pl.contains("hunter2-watch-secret"),
        "a password in processlist.tsv:\n{pl}"
    );
    assert!(pl.contains("PASSWORD('<redacted>')"), "{pl}");
}

/// Issue 36 item 4: every burst is counted with what became of it. Bursts every 2.5 s against a
/// 4 s cooldown, 3 s of history and a 2 s after window make captured bursts, bursts held in a
/// capture's window and (timing decides) skipped ones; the final line and `watch.log` account
/// for each, and a capture holds this host's seconds and the server's process lists.
#[test]
fn every_burst_is_counted_with_its_outcome_and_captures_keep_os_stats_and_processlists() {
    let name = "every_burst_is_counted_with_its_outcome";
    if skip_reason(name, available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&["--max-connections=200"]);
    db.sql(
        "CREATE DATABASE h; CREATE TABLE h.hot (id INT PRIMARY KEY, c BIGINT) ENGINE=InnoDB; \
         INSERT INTO h.hot VALUES (1, 0)",
    );
    let n = env_num("SPINSCOPE_WATCH_LEDGER_BURSTS", 5.0) as usize;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("caps");
    let mut cmd = Command::new(bin());
    cmd.args(["watch", "--no-defaults"])
        .arg(format!("root@{}", db.socket.display()))
        .arg("--out")
        .arg(&out)
        .args(["--profile-duration", "0", "--min-free-disk", "0"])
        .args(["--cooldown", "4s", "--history", "3s", "--after", "2s"]);
    let w = Watch::spawn(&mut cmd, dir.path().join("watch.err"));
    assert!(w.wait_for("first sample", 60), "{}", w.stderr());
    let first = w
        .stderr()
        .lines()
        .find(|l| l.contains("first sample"))
        .unwrap_or_default()
        .to_string();
    eprintln!("{first}");
    // The first sample comes before the probe, INNODB STATUS and the journal: well within 2 s
    // on an idle host; 10 s leaves room for a host as loaded as the shared test machine.
    let ms: f64 = first
        .split("first sample ")
        .nth(1)
        .and_then(|r| r.split(" ms").next())
        .and_then(|v| v.parse().ok())
        .expect("first sample N ms");
    assert!(ms < 10_000.0, "{first}");
    let starts = hot_row_bursts(&db, 32, n, 2.5, 400);
    // The last burst is over; it ends 0.5 s after its last held sample and is then decided.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let log = std::fs::read_to_string(out.join("watch.log")).unwrap_or_default();
        let last = log
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["burst"]["start_unix_ms"].as_f64())
            .fold(0.0, f64::max);
        if last >= starts[n - 1] - 1000.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, stdout, stderr) = w.stop();
    assert_eq!(code, Some(0), "{stderr}");
    let log = std::fs::read_to_string(out.join("watch.log")).unwrap();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bursts: Vec<&serde_json::Value> = lines.iter().filter_map(|v| v.get("burst")).collect();
    let outcome = |o: &str| bursts.iter().filter(|b| b["outcome"] == o).count();
    let (cap, inw, skip) = (
        outcome("captured"),
        outcome("in_capture"),
        outcome("skipped"),
    );
    eprintln!(
        "{n} bursts made: {} counted ({cap} captured, {inw} in a capture's window, {skip} skipped); final line: {}",
        bursts.len(),
        stdout.trim()
    );
    // Every burst line has an outcome, and the outcomes add up.
    assert_eq!(cap + inw + skip, bursts.len(), "{log}");
    assert!(
        (n - 1..=n + 3).contains(&bursts.len()),
        "{} bursts counted for {n} made\n{log}\n{stderr}",
        bursts.len()
    );
    assert!(cap >= 1, "no burst captured\n{log}\n{stderr}");
    for b in &bursts {
        assert!(b["start"].as_str().is_some_and(|s| s.ends_with('Z')), "{b}");
        if b["outcome"] == "skipped" {
            assert!(b["reason"].is_string() && b["why"].is_string(), "{b}");
        } else {
            let c = b["capture"].as_str().unwrap();
            assert!(
                std::path::Path::new(c).join("capture.json").is_file(),
                "{c} of {b} is not a written capture"
            );
        }
    }
    // The end-of-run counts in watch.log and on the final line say the same.
    let counts = lines
        .iter()
        .find_map(|v| v.get("bursts"))
        .expect("the end-of-run counts line");
    assert_eq!(
        counts["bursts"].as_u64(),
        Some(bursts.len() as u64),
        "{log}"
    );
    assert_eq!(counts["captured"].as_u64(), Some(cap as u64));
    assert_eq!(counts["in_capture"].as_u64(), Some(inw as u64));
    let want = format!(
        "{} burst(s): {cap} captured, {inw} in a capture's window, {skip} skipped",
        bursts.len()
    );
    assert!(
        stdout.contains(&want),
        "final line {stdout:?} lacks {want:?}"
    );
    // A capture keeps this host's seconds and the process list each second of its after window.
    let c = bursts
        .iter()
        .find(|b| b["outcome"] == "captured")
        .and_then(|b| b["capture"].as_str())
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(std::path::Path::new(c).join("capture.json")).unwrap(),
    )
    .unwrap();
    let os = doc["os_seconds"].as_array().expect("os_seconds");
    assert!(os.len() >= 2, "{} OS seconds in a 5 s window", os.len());
    for s in os {
        let busy = 100.0 - s["cpu_pct"]["idle"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&busy), "{s}");
        assert!(s["mem_kb"]["total"].as_u64().unwrap() > 0, "{s}");
    }
    let pl = doc["processlists"].as_array().expect("processlists");
    assert!(!pl.is_empty(), "no process list in {c}");
    assert!(
        pl.iter()
            .all(|p| p["sessions_total"].as_u64().unwrap() >= 1),
        "watch's sampler session is always listed: {pl:?}"
    );
    assert!(
        doc["bursts"].as_array().is_some_and(|b| !b.is_empty()),
        "the capture lists the bursts of its window"
    );
}
