//! Integration: `spinscope sweep` against a throwaway MariaDB (own datadir, socket and port,
//! stopped at the end). prepare / run (3-step ladder, A/B of innodb_spin_wait_delay with
//! repeats, open loop, connections killed mid-step) / cleanup, and SIGINT mid-run: the setting
//! is restored and the partial results are saved. All load stays on the local throwaway
//! server and is bounded in time.

use crate::common;
use std::process::{Command as StdCommand, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use common::mariadb::{self, delay, MariaDb};
use serde_json::Value;
use spinscope::analysis::knee::{past_knee, StepPoint};

/// The tests share 2 cores with the server: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A value distinct from both variants, so restoring is visible.
const ORIGINAL_DELAY: &str = "7";

fn start() -> Option<MariaDb> {
    if mariadb::skip_reason("sweep_mariadb", mariadb::available().err()).is_some() {
        return None;
    }
    let db = MariaDb::start(&[
        "--innodb-flush-log-at-trx-commit=0",
        "--max-connections=100",
    ]);
    db.sql(&format!(
        "SET GLOBAL innodb_spin_wait_delay = {ORIGINAL_DELAY}"
    ));
    Some(db)
}

/// `spinscope sweep SUB` connected to the throwaway server as root over its socket, as a
/// process the test can signal or let run in the background.
fn sweep_child(db: &MariaDb, sub: &str) -> StdCommand {
    let mut c = StdCommand::new(env!("CARGO_BIN_EXE_spinscope"));
    c.args([
        "sweep",
        sub,
        "--socket",
        &sock(db),
        "--user",
        "root",
        "--no-defaults",
    ]);
    c.env_remove("MYSQL_PWD");
    // The change journal of these runs stays with the throwaway server.
    c.env("XDG_STATE_HOME", db.dir().join("state"));
    c
}

/// The same, run to completion with assert_cmd.
fn sweep(db: &MariaDb, sub: &str) -> Command {
    Command::from_std(sweep_child(db, sub))
}

fn sock(db: &MariaDb) -> String {
    db.socket.display().to_string()
}

fn prepare(db: &MariaDb) {
    sweep(db, "prepare")
        .args(["--tables", "2", "--table-size", "2000"])
        .assert()
        .success();
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.sbtest2").trim(),
        "2000"
    );
    assert!(db.sql("SHOW INDEX FROM spinscope.sbtest1").contains("k_1"));
}

#[test]
fn prepare_run_ab_open_loop_and_cleanup() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);

    // A/B on write-only, 3-step ladder, interleaved repeats; JSON on stdout, files saved.
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("sweep.json");
    let html = dir.path().join("sweep.html");
    let out = sweep(&db, "run")
        .args(["--workload", "write-only", "--threads", "1,2,4"])
        .args([
            "--warmup",
            "0.3",
            "--duration",
            "1",
            "--repeat",
            "2",
            "--report-interval",
            "0.5",
        ])
        .args(["--variant", "d4:innodb_spin_wait_delay=4"])
        .args(["--variant", "d200:innodb_spin_wait_delay=200"])
        .args(["--sla", "p99<50ms", "--json"])
        .arg("--save")
        .arg(&save)
        .arg("--csv")
        .arg(dir.path().join("sweep.csv"))
        .arg("--charts")
        .arg(dir.path().join("charts"))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "restored innodb_spin_wait_delay = {ORIGINAL_DELAY}"
        )),
        "{err}"
    );
    assert_eq!(
        delay(&db),
        ORIGINAL_DELAY,
        "the global setting was not restored"
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["schema"], "spinscope.sweep/1");
    assert_eq!(doc["complete"], true);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3 * 2 * 2);
    // Interleaved: d4 d200 d4 d200 at each concurrency.
    let order: Vec<&str> = steps[..4]
        .iter()
        .map(|s| s["variant"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["d4", "d200", "d4", "d200"]);
    for s in steps {
        assert!(s["tps"].as_f64().unwrap() > 10.0, "{s}");
        assert!(s["queries"].as_u64().unwrap() >= 6 * s["txns"].as_u64().unwrap() - 6);
        let h = s["histogram"]["data"].as_str().unwrap();
        assert!(
            h.starts_with("HISTFAAA"),
            "not HdrHistogram V2 compressed base64: {h}"
        );
        assert!(!s["windows_tps"].as_array().unwrap().is_empty());
        let applied = &s["applied"][0]["value"];
        assert_eq!(applied, if s["variant"] == "d4" { "4" } else { "200" });
        // Closed loop: Little's law holds (clients never idle) when the client gets a CPU.
        // On a host with several runnable tasks per CPU the client's own time between an
        // answer and its next request grows, which no latency counts: the bound then only
        // says the ratio is measured and sane, and the report names it (note "Little ratio").
        let ratio = s["little"]["ratio"].as_f64().unwrap();
        let floor = if common::overloaded() { 0.3 } else { 0.8 };
        assert!(
            ratio > floor && ratio < 1.2,
            "Little ratio {ratio} (floor {floor}, load {:?}): {s}",
            std::fs::read_to_string("/proc/loadavg")
        );
    }
    let changed = &doc["settings_changed"][0];
    assert_eq!(changed["variable"], "innodb_spin_wait_delay");
    assert_eq!(changed["original"], ORIGINAL_DELAY);
    assert_eq!(changed["restored"], true);
    let ab = doc["analysis"]["ab"].as_array().unwrap();
    assert_eq!(ab.len(), 3);
    for v in ab {
        // 2 repeats of 1 s: below the minimum, so no interval is offered as a verdict.
        let t = v["text"].as_str().unwrap();
        assert!(t.starts_with("too little data for a verdict"), "{t}");
        assert!(v["tps"].is_null(), "{v}");
        // The A/B means are the table's: the mean of the repeats' tps.
        let mean = |name: &str| {
            let x: Vec<f64> = steps
                .iter()
                .filter(|s| s["variant"] == name && s["threads"] == v["threads"])
                .map(|s| s["tps"].as_f64().unwrap())
                .collect();
            x.iter().sum::<f64>() / x.len() as f64
        };
        assert!(
            (v["baseline_tps"].as_f64().unwrap() - mean("d4")).abs() < 1e-6,
            "{v}"
        );
        assert!(
            (v["variant_tps"].as_f64().unwrap() - mean("d200")).abs() < 1e-6,
            "{v}"
        );
    }
    for s in steps {
        // Every window counted: the windows add up to the step's transactions.
        let w: f64 = s["windows_tps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() * s["window_s"].as_f64().unwrap())
            .sum();
        let txns = s["txns"].as_f64().unwrap();
        assert!((w - txns).abs() < 0.5, "windows {w} vs txns {txns}: {s}");
        assert_eq!(s["windows_tps"].as_array().unwrap().len(), 2);
        assert!(s["invalid"].is_null(), "{s}");
    }
    assert_eq!(doc["analysis"]["variants"].as_array().unwrap().len(), 2);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(saved["steps"].as_array().unwrap().len(), 12);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("A/B verdicts"));
    assert!(dir.path().join("charts/throughput.svg").exists());
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13);

    // Open loop at a rate the server easily keeps: latency from intended starts, rate kept.
    let out = sweep(&db, "run")
        .args(["--workload", "point-select", "--threads", "2"])
        .args([
            "--warmup",
            "0.2",
            "--duration",
            "1",
            "--rate",
            "200",
            "--json",
            "--report-interval",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["config"]["mode"], "open");
    let ol = &doc["steps"][0]["open_loop"];
    let tps = ol["achieved_tps"].as_f64().unwrap();
    assert!((150.0..=250.0).contains(&tps), "{ol}");
    assert_eq!(ol["kept_up"], true, "{ol}");

    // Open loop at a rate no 2-core box keeps: it must say so, not silently lower the rate.
    let out = sweep(&db, "run")
        .args(["--workload", "read-write", "--threads", "2"])
        .args([
            "--warmup",
            "0",
            "--duration",
            "1",
            "--rate",
            "1000000",
            "--json",
            "--report-interval",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not keep up with --rate"), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["steps"][0]["open_loop"]["kept_up"], false);

    // A custom statement file, prepared per table, one pass per transaction.
    let sql = dir.path().join("mine.sql");
    std::fs::write(
        &sql,
        "-- read then write one row\nSELECT c FROM {table} WHERE id={id};\nUPDATE {table} SET k=k+1, c={c} WHERE id={id};\n",
    )
    .unwrap();
    let out = sweep(&db, "run")
        .args(["--threads", "2", "--warmup", "0", "--duration", "0.5"])
        .args(["--json", "--report-interval", "0", "--sql"])
        .arg(&sql)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["config"]["workload"], "custom");
    let st = &doc["steps"][0];
    assert!(st["txns"].as_u64().unwrap() > 0, "{st}");
    assert_eq!(
        st["queries"].as_u64().unwrap(),
        2 * st["txns"].as_u64().unwrap()
    );
    assert!(st["errors"].as_object().unwrap().is_empty(), "{st}");

    // Connections killed mid-step: the step is marked and the clients reconnect.
    let child = sweep_child(&db, "run")
        .args(["--workload", "point-select", "--threads", "2"])
        .args([
            "--warmup",
            "0",
            "--duration",
            "2.5",
            "--json",
            "--report-interval",
            "0",
            "--repeat",
            "2",
            "--variant",
            "k:innodb_spin_wait_delay=9",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Mid-step: once the server shows the step's two clients at work.
    mariadb::wait_busy(&db, "spinscope", 2, 30);
    // Every spinscope connection: the clients and the settings guard's admin connection.
    let ids = db.sql(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'root' AND ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'",
    );
    for id in ids.split_whitespace() {
        let _ = db
            .client()
            .args(["-e", &format!("KILL CONNECTION {id}")])
            .output();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = &doc["steps"][0];
    assert!(st["reconnects"].as_u64().unwrap() >= 1, "{st}");
    assert_eq!(st["disturbed"], true);
    // A KILL costs a client its transaction in flight: a few errors in thousands, still valid.
    assert!(st["invalid"].is_null(), "{st}");
    assert!(st["tps"].as_f64().unwrap() > 0.0);
    // The guard lost its connection too: it reconnected for the next step and restored.
    assert_eq!(doc["steps"].as_array().unwrap().len(), 2);
    assert_eq!(doc["steps"][1]["applied"][0]["value"], "9");
    assert_eq!(doc["settings_changed"][0]["restored"], true);
    assert_eq!(delay(&db), ORIGINAL_DELAY);

    // Settings the server refuses are bad input, checked before any load runs.
    let out = sweep(&db, "run")
        .args(["--threads", "1", "--duration", "0.5"])
        .args(["--variant", "x:innodb_autoinc_lock_mode=1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("needs a restart"), "{err}");
    let out = sweep(&db, "run")
        .args(["--threads", "1", "--duration", "0.5"])
        .args(["--variant", "x:no_such_variable_here=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // --stop-after-knee: the ladder ends at the first step where throughput has stopped
    // rising and p99 keeps growing (analysis::knee::past_knee over the steps so far), and not
    // before. Which step that is depends on this machine's noise, so the test replays the rule
    // on the measured steps rather than expecting a fixed step.
    let out = sweep(&db, "run")
        .args([
            "--workload",
            "point-select",
            "--threads",
            "1..64:x2",
            "--stop-after-knee",
        ])
        .args([
            "--warmup",
            "0.2",
            "--duration",
            "0.8",
            "--json",
            "--report-interval",
            "0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["complete"], true);
    let pts: Vec<StepPoint> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| StepPoint {
            threads: s["threads"].as_f64().unwrap(),
            tps: s["tps"].as_f64().unwrap(),
            lat_us: s["latency_us"]["p99"].as_f64().unwrap(),
            p99_us: s["latency_us"]["p99"].as_f64().unwrap(),
        })
        .collect();
    let n = pts.len();
    let first_past = (1..=7).find(|&k| k <= n && past_knee(&pts[..k]));
    eprintln!("--stop-after-knee ran {n} of 7 steps; rule first true at {first_past:?}");
    match first_past {
        Some(k) => {
            assert_eq!(n, k, "stopped at {n}, the rule said {k}");
            assert!(err.contains("ending the ladder"), "{err}");
        }
        None => {
            assert_eq!(n, 7, "stopped early without the rule");
            assert!(!err.contains("ending the ladder"), "{err}");
        }
    }

    // cleanup drops only what spinscope created.
    db.sql("CREATE DATABASE not_ours");
    sweep(&db, "cleanup")
        .args(["--schema", "not_ours"])
        .assert()
        .code(2);
    sweep(&db, "prepare")
        .args(["--schema", "not_ours", "--table-size", "10"])
        .assert()
        .code(2);
    sweep(&db, "cleanup").assert().success();
    assert_eq!(db.sql("SHOW DATABASES LIKE 'spinscope'").trim(), "");
    assert_eq!(db.sql("SHOW DATABASES LIKE 'not_ours'").trim(), "not_ours");
    assert_eq!(delay(&db), ORIGINAL_DELAY);
}

#[test]
fn sigint_mid_run_restores_the_setting_and_keeps_partial_results() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("partial.json");
    let mut child = sweep_child(&db, "run")
        .args(["--workload", "write-only"])
        .args([
            "--threads",
            "1,2,4,8",
            "--warmup",
            "0",
            "--duration",
            "1.5",
            "--report-interval",
            "0",
        ])
        .args(["--variant", "d200:innodb_spin_wait_delay=200"])
        .arg("--save")
        .arg(&save)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first saved step, then interrupt in the middle of the second.
    let t0 = Instant::now();
    while !save.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no step saved in 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The second step: the variant in force and the step's client at work.
    let t0 = Instant::now();
    while delay(&db) != "200" {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the variant never in force after the first step"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t1.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("spinscope did not stop within 20 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!(
            "restored innodb_spin_wait_delay = {ORIGINAL_DELAY}"
        )),
        "{err}"
    );
    assert_eq!(delay(&db), ORIGINAL_DELAY, "not restored after SIGINT");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["complete"], false);
    let steps = doc["steps"].as_array().unwrap();
    assert!(
        !steps.is_empty() && steps.len() < 4,
        "{} steps",
        steps.len()
    );
    assert_eq!(steps[0]["interrupted"], false);
    assert!(steps[0]["txns"].as_u64().unwrap() > 0);
    assert_eq!(doc["settings_changed"][0]["restored"], true);
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped early"));
}

#[test]
fn server_killed_mid_run_stops_with_partial_results_and_the_restore_statement() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    let dir = tempfile::tempdir().unwrap();
    let save = dir.path().join("partial.json");
    let mut child = sweep_child(&db, "run")
        .args(["--workload", "point-select"])
        .args([
            "--threads",
            "1,2,4",
            "--warmup",
            "0",
            "--duration",
            "1.5",
            "--report-interval",
            "0",
        ])
        .args(["--variant", "d200:innodb_spin_wait_delay=200"])
        .arg("--save")
        .arg(&save)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !save.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no step saved in 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the throwaway server this test started; the harness reaps it.
    unsafe {
        libc::kill(db.pid() as libc::pid_t, libc::SIGKILL);
    }
    let t1 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t1.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("spinscope did not stop within 30 s of the server's death");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("could not restore innodb_spin_wait_delay"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "SET GLOBAL innodb_spin_wait_delay = {ORIGINAL_DELAY}"
        )),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert_eq!(doc["complete"], false);
    assert!(
        doc["stopped_because"].is_string(),
        "{}",
        doc["stopped_because"]
    );
    let steps = doc["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    assert!(steps[0]["txns"].as_u64().unwrap() > 0);
    assert_eq!(doc["settings_changed"][0]["restored"], false);
}

/// A throwaway server with the scratch schema at 4 and 16 tables (and 64 when asked).
fn start_with_schemas(tables: &[u32]) -> Option<MariaDb> {
    let db = start()?;
    for &n in tables {
        sweep(&db, "prepare")
            .args(["--schema", &format!("s{n}"), "--tables", &n.to_string()])
            .args(["--table-size", "300"])
            .assert()
            .success();
    }
    Some(db)
}

/// Run `workload` at 1, 16 and 64 clients on each schema: every step error-free and valid.
fn zero_errors(workload: &str, tables: &[u32]) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start_with_schemas(tables) else {
        return;
    };
    for &n in tables {
        let out = sweep(&db, "run")
            .args(["--schema", &format!("s{n}"), "--workload", workload])
            .args(["--threads", "1,16,64", "--warmup", "0", "--duration", "0.5"])
            .args(["--report-interval", "0", "--json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{workload} at {n} tables: {err}"
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let steps = doc["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3);
        for s in steps {
            assert!(
                s["errors"].as_object().unwrap().is_empty() && s["first_error"].is_null(),
                "{workload} at {n} tables, {} threads: {s}",
                s["threads"]
            );
            assert!(s["invalid"].is_null(), "{s}");
            assert!(s["txns"].as_u64().unwrap() > 0, "{s}");
        }
        eprintln!(
            "{workload} at {n} tables: {} tps at 1/16/64 threads, statements per client {}",
            steps
                .iter()
                .map(|s| format!("{:.0}", s["tps"].as_f64().unwrap()))
                .collect::<Vec<_>>()
                .join("/"),
            steps[2]["statements"]["per_client"]
        );
    }
}

#[test]
fn point_select_has_no_errors_at_4_and_16_tables() {
    zero_errors("point-select", &[4, 16]);
}

#[test]
fn read_only_has_no_errors_at_4_and_16_tables() {
    zero_errors("read-only", &[4, 16]);
}

#[test]
fn write_only_has_no_errors_at_4_and_16_tables() {
    zero_errors("write-only", &[4, 16]);
}

/// read-write at 64 tables and 64 clients needs 36,864 statements, more than the server's
/// default max_prepared_stmt_count (16,382): each client keeps its share and re-prepares.
#[test]
fn read_write_has_no_errors_at_4_16_and_64_tables() {
    zero_errors("read-write", &[4, 16, 64]);
}

#[test]
fn bad_custom_sql_is_refused_before_any_change_and_failing_load_stops_with_exit_3() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    let dir = tempfile::tempdir().unwrap();
    let run_sql = |name: &str, text: &str, extra: &[&str]| {
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        sweep(&db, "run")
            .args(["--threads", "1,2", "--warmup", "0", "--duration", "0.5"])
            .args([
                "--report-interval",
                "0",
                "--variant",
                "d4:innodb_spin_wait_delay=4",
            ])
            .args(extra)
            .arg("--sql")
            .arg(&f)
            .output()
            .unwrap()
    };
    // Broken SQL: exit 2 naming the file and the line, before SET GLOBAL.
    let out = run_sql(
        "broken.sql",
        "SELECT c FROM {table} WHERE id={id}\nSELEC c FROM {table}\n",
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("broken.sql line 2 `SELEC c FROM {table}`"),
        "{err}"
    );
    assert!(err.contains("1064"), "{err}");
    assert!(!err.contains("changing innodb_spin_wait_delay"), "{err}");
    assert_eq!(delay(&db), ORIGINAL_DELAY);
    // DDL and writes outside the scratch schema: refused, nothing executed.
    let out = run_sql("drop.sql", "DROP TABLE {table}\n", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-writes-outside"), "{err}");
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.sbtest1").trim(),
        "2000"
    );
    db.sql("CREATE DATABASE appdb; CREATE TABLE appdb.t (id INT PRIMARY KEY); INSERT INTO appdb.t VALUES (1)");
    let out = run_sql("foreign.sql", "DELETE FROM appdb.t WHERE id={id}\n", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("appdb"), "{err}");
    assert_eq!(db.sql("SELECT COUNT(*) FROM appdb.t").trim(), "1");
    // Every transaction fails (a duplicate key each time): the first step stops the sweep
    // with exit 3 and the first error; the setting is restored.
    let out = run_sql(
        "dup.sql",
        "INSERT INTO {table} (id, k, c, pad) VALUES (1, 1, 'x', 'y')\n",
        &["--json"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("the first step failed") && err.contains("1062"),
        "{err}"
    );
    assert_eq!(delay(&db), ORIGINAL_DELAY);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["steps"].as_array().unwrap().len(), 1);
    let inv = doc["steps"][0]["invalid"].as_str().unwrap();
    assert!(inv.starts_with("every transaction failed"), "{inv}");
}

#[test]
fn a_setting_changed_under_a_step_makes_it_invalid() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    let child = sweep_child(&db, "run")
        .args(["--workload", "point-select", "--threads", "2"])
        .args(["--warmup", "0", "--duration", "2", "--report-interval", "0"])
        .args(["--variant", "d4:innodb_spin_wait_delay=4", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Someone else changes the variable mid-step.
    let t0 = Instant::now();
    while delay(&db) != "4" {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "variant never applied"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Mid-step: once the server shows the step's two clients at work.
    mariadb::wait_busy(&db, "spinscope", 2, 30);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 77");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let inv = doc["steps"][0]["invalid"].as_str().unwrap_or_default();
    assert!(
        inv.contains("innodb_spin_wait_delay read 77 at the end of the step, not 4"),
        "{inv}"
    );
    assert!(err.contains("INVALID"), "{err}");
    assert!(!doc["analysis"]["left_out"].as_array().unwrap().is_empty());
    assert_eq!(doc["steps"][0]["settings_after"][0]["value"], "77");
}

#[test]
fn a_server_restart_during_a_step_makes_it_invalid() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut db) = start() else { return };
    prepare(&db);
    // Let the server age a few seconds, so that its Uptime tells a restart from the wall clock
    // (connection ids tell it too, unless many reconnects after the restart catch up).
    std::thread::sleep(Duration::from_millis(2500));
    let child = sweep_child(&db, "run")
        .args(["--workload", "point-select", "--threads", "2"])
        .args(["--warmup", "0", "--duration", "6", "--report-interval", "0"])
        .args(["--variant", "d9:innodb_spin_wait_delay=9", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while delay(&db) != "9" {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "variant never applied"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Mid-step: once the server shows the step's two clients at work.
    mariadb::wait_busy(&db, "spinscope", 2, 30);
    // The server restarts mid-step and comes back at its default (4), not the variant's 9.
    db.restart();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let st = &doc["steps"][0];
    let inv = st["invalid"].as_str().unwrap_or_default();
    assert!(
        inv.contains("the server restarted during the step"),
        "{inv}\n{st}\n{err}"
    );
    assert!(
        inv.contains("innodb_spin_wait_delay read 4 at the end of the step, not 9"),
        "{inv}"
    );
    assert!(!doc["analysis"]["left_out"].as_array().unwrap().is_empty());
}
