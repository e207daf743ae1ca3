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
