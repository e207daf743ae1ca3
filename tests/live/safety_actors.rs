//! Integration (issue 24): spinscope among other actors, each row against real throwaway
//! MariaDBs with their own change journal (XDG_STATE_HOME in the server's temp dir).
//!
//! - row 1: kill -9 of a sweep mid-variant, then commands from a client whose clock is 20 s
//!   behind and 10 s ahead (the `SPINSCOPE_TEST_CLOCK_SHIFT_S` seam): the record stays open,
//!   `restore` puts the server back.
//! - row 2: two servers with the same `--port` and `--skip-networking` (same hostname:port):
//!   a killed `doctor --enable-instruments` on A is neither closed nor reported by B, and
//!   `restore` on A puts A's instruments back.

use crate::common;

fn start(extra: &[&str]) -> Option<MariaDb> {
    common::mariadb::start_or_skip("safety_actors", extra)
}
use common::server_cmd as cmd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::mariadb::{self, state, var, MariaDb};
use common::{open_records, out, wait_for};

/// One test at a time: each starts its own servers and load, and eight of them at once on a
/// 2-core machine starve tune's first candidate past the test's bounds.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn kill9(child: &mut Child) {
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped yet.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = child.wait();
}

fn prepare(db: &MariaDb) {
    let (code, _, err) = out(cmd(db, &state(db), &["sweep", "prepare"]).args([
        "--tables",
        "1",
        "--table-size",
        "200",
    ]));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn row1_a_shifted_client_clock_never_closes_a_record() {
    if !common::has_seams("row1_a_shifted_client_clock_never_closes_a_record") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let mut a = cmd(&db, &home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "60"])
        .args(["--report-interval", "0", "--workload", "point-select"])
        .args(["--variant", "slow:innodb_spin_wait_delay=6000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    kill9(&mut a);
    assert_eq!(open_records(&home), 1);

    // A client 20 s behind: the record is still open and warned about, not "restarted".
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "cleanup", "--schema", "none"])
        .env("SPINSCOPE_TEST_CLOCK_SHIFT_S", "-20"));
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("restarted"), "{err}");
    assert!(
        err.contains("warning: innodb_spin_wait_delay") && err.contains("from 7 to 6000"),
        "{err}"
    );
    assert_eq!(open_records(&home), 1, "{err}");
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.spinscope_journal")
            .trim(),
        "1"
    );
    // A sweep from that client refuses the variable instead of taking 6000 as the original.
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "0.3"])
        .args(["--variant", "d4:innodb_spin_wait_delay=4"])
        .env("SPINSCOPE_TEST_CLOCK_SHIFT_S", "-20"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("was left changed"), "{err}");
    // An NTP step of +10 s, then restore: the server is put back.
    let (code, _, err) =
        out(cmd(&db, &home, &["restore"]).env("SPINSCOPE_TEST_CLOCK_SHIFT_S", "10"));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored innodb_spin_wait_delay = 7 (read back)"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(open_records(&home), 0);
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.spinscope_journal")
            .trim(),
        "0"
    );
}

#[test]
fn row2_two_servers_with_the_same_hostname_and_port_are_told_apart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let opts = [
        "--performance-schema=ON",
        "--skip-networking",
        "--port=3399",
    ];
    let Some(a) = start(&opts) else { return };
    let b = MariaDb::start(&opts);
    let same = "SELECT CONCAT(@@hostname, ':', @@port)";
    // (MariaDB reports @@port 0 under --skip-networking: the same for both either way.)
    assert_eq!(a.sql(same), b.sql(same));
    let home = a.dir().join("shared-state");
    let count = |db: &MariaDb| {
        db.sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%' AND ENABLED='YES' AND TIMED='YES'")
            .trim()
            .to_string()
    };
    let total = a
        .sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'")
        .trim()
        .to_string();
    let (before_a, before_b) = (count(&a), count(&b));
    assert_ne!(before_a, total, "the test needs instruments that are off");

    let mut doc = cmd(
        &a,
        &home,
        &["doctor", "--window", "60", "--enable-instruments"],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    wait_for("instruments enabled on A", 30, || count(&a) == total);
    kill9(&mut doc);
    assert_eq!(open_records(&home), 1);

    // B shares hostname:port but is another server: A's record is not B's.
    let (code, _, err) = out(cmd(&b, &home, &["doctor", "--window", "0"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !err.contains("restarted") && !err.contains("warning"),
        "{err}"
    );
    assert_eq!(open_records(&home), 1, "{err}");
    let (code, _, err) = out(cmd(&b, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("nothing to restore"), "{err}");
    assert_eq!(count(&b), before_b);
    // B's own instruments can be enabled and are put back.
    let (code, _, err) = out(cmd(
        &b,
        &home,
        &["doctor", "--window", "1", "--enable-instruments"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(count(&b), before_b, "{err}");
    assert_eq!(count(&a), total);

    // A still knows, and restore puts A back.
    let (code, _, err) = out(cmd(&a, &home, &["doctor", "--window", "0"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: performance_schema wait/synch instruments"),
        "{err}"
    );
    let (code, _, err) = out(cmd(&a, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored performance_schema wait/synch instruments"),
        "{err}"
    );
    assert_eq!(count(&a), before_a);
    assert_eq!(open_records(&home), 0);
}

fn sweep_with(db: &MariaDb, home: &Path, variants: &[&str], duration: &str) -> Command {
    let mut c = cmd(db, home, &["sweep", "run"]);
    c.args(["--threads", "1", "--warmup", "0", "--duration", duration])
        .args(["--report-interval", "0", "--workload", "point-select"]);
    for v in variants {
        c.args(["--variant", v]);
    }
    c
}

#[test]
fn row5_a_crash_on_either_side_of_any_statement_is_restorable_without_force() {
    if !common::has_seams(
        "row5_a_crash_on_either_side_of_any_statement_is_restorable_without_force",
    ) {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let variants = [
        "a:innodb_spin_wait_delay=200",
        "b:innodb_spin_wait_delay=300",
    ];
    // (fault, what the server holds when the process dies)
    for (fault, held) in [
        ("after-journal:1", "7"),
        ("after-statement:1", "200"),
        ("after-journal:2", "200"),
        ("after-statement:2", "300"),
    ] {
        let (code, _, err) =
            out(sweep_with(&db, &home, &variants, "0.3").env("SPINSCOPE_FAULT", fault));
        assert_eq!(code, None, "{fault}: killed by its own seam: {err}");
        assert!(err.contains("SPINSCOPE_FAULT: dying"), "{fault}: {err}");
        assert_eq!(var(&db, "innodb_spin_wait_delay"), held, "{fault}: {err}");
        assert_eq!(open_records(&home), 1, "{fault}: journaled before: {err}");
        let (code, _, err) = out(cmd(&db, &home, &["restore"]));
        assert_eq!(code, Some(0), "{fault}: restore without --force: {err}");
        assert_eq!(var(&db, "innodb_spin_wait_delay"), "7", "{fault}: {err}");
        assert_eq!(open_records(&home), 0, "{fault}: {err}");
    }
    // A later sweep is not refused.
    let (code, _, err) = out(sweep_with(&db, &home, &variants, "0.3"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");

    // A side effect in the window after the statement: named by restore with its statement.
    let max_before = var(&db, "innodb_io_capacity_max");
    let big = (max_before.parse::<u64>().unwrap() + 3000).to_string();
    let io = format!("io:innodb_io_capacity={big}");
    let (code, _, err) =
        out(sweep_with(&db, &home, &[&io], "0.3").env("SPINSCOPE_FAULT", "after-statement:1"));
    assert_eq!(code, None, "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), big);
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_ne!(var(&db, "innodb_io_capacity_max"), max_before);
    assert!(
        err.contains("note: innodb_io_capacity_max is ")
            && err.contains(&format!(
                "now, {max_before} just before spinscope's statement on innodb_io_capacity"
            ))
            && err.contains(&format!(
                "SET GLOBAL innodb_io_capacity_max = {max_before};"
            )),
        "{err}"
    );
    assert_ne!(var(&db, "innodb_io_capacity"), big);
}

#[test]
fn row5_a_clamped_value_cut_before_its_read_back_is_restored_without_force() {
    if !common::has_seams("row5_a_clamped_value_cut_before_its_read_back_is_restored_without_force")
    {
        return;
    }
    // The server clamps 7000 to its maximum 6000; the process dies right after the statement,
    // before reading back what the server holds. The record names the clamped value too (from
    // the server's published range), so restore knows 6000 as its own.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let (code, _, err) = out(
        sweep_with(&db, &home, &["big:innodb_spin_wait_delay=7000"], "0.3")
            .env("SPINSCOPE_FAULT", "after-statement:1"),
    );
    assert_eq!(code, None, "killed by its own seam: {err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "6000", "{err}");
    assert_eq!(open_records(&home), 1, "{err}");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "restore without --force: {err}");
    assert!(!err.contains("changed it since"), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7", "{err}");
    assert_eq!(open_records(&home), 0, "{err}");
}

#[test]
fn row5_performance_schema_updates_are_journaled_before_each_statement() {
    if !common::has_seams("row5_performance_schema_updates_are_journaled_before_each_statement") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&["--performance-schema=ON"]) else {
        return;
    };
    let home = state(&db);
    let count = |db: &MariaDb| {
        db.sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%' AND ENABLED='YES' AND TIMED='YES'")
            .trim()
            .to_string()
    };
    let before = count(&db);
    // Turn the consumer off so both statements change something.
    db.sql("UPDATE performance_schema.setup_consumers SET ENABLED='NO' WHERE NAME='global_instrumentation'");
    for fault in [
        "after-journal:1",
        "after-statement:1",
        "after-journal:2",
        "after-statement:2",
    ] {
        let (code, _, err) = out(cmd(
            &db,
            &home,
            &["doctor", "--window", "1", "--enable-instruments"],
        )
        .env("SPINSCOPE_FAULT", fault));
        assert_eq!(code, None, "{fault}: {err}");
        assert_eq!(open_records(&home), 1, "{fault}: {err}");
        let (code, _, err) = out(cmd(&db, &home, &["restore"]));
        assert_eq!(code, Some(0), "{fault}: restore without --force: {err}");
        assert_eq!(count(&db), before, "{fault}: {err}");
        assert_eq!(
            db.sql("SELECT ENABLED FROM performance_schema.setup_consumers WHERE NAME='global_instrumentation'").trim(),
            "NO",
            "{fault}: {err}"
        );
        assert_eq!(open_records(&home), 0, "{fault}: {err}");
    }
}

#[test]
fn row3_someone_elses_changes_are_reported_never_reverted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    let home = state(&db);
    let io0 = var(&db, "innodb_io_capacity");
    let toc0 = var(&db, "table_open_cache");
    let save = db.dir().join("run.json");
    let mut a = sweep_with(
        &db,
        &home,
        &["a:innodb_io_capacity=300", "b:innodb_io_capacity=400"],
        "3",
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for("variant a applied", 30, || {
        var(&db, "innodb_io_capacity") == "300"
    });
    // Mid-step: once the server shows the step's client at work.
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    db.sql("SET GLOBAL table_open_cache = 4242");
    let status = a.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(a.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "changed by someone else during step 1: table_open_cache {toc0} -> 4242"
        )),
        "{err}"
    );
    assert!(!err.contains("the server moved table_open_cache"), "{err}");
    assert_eq!(var(&db, "table_open_cache"), "4242", "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), io0, "{err}");
    assert_eq!(open_records(&home), 0);

    // Someone else sets one of the variant's variables mid-step: that step is invalid, the
    // run stops before overwriting it, and their value stays.
    let mut a = sweep_with(
        &db,
        &home,
        &["a:innodb_io_capacity=300", "b:innodb_io_capacity=400"],
        "3",
    )
    .args(["--save", save.to_str().unwrap()])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    wait_for("variant a applied", 30, || {
        var(&db, "innodb_io_capacity") == "300"
    });
    // Mid-step: once the server shows the step's client at work.
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    db.sql("SET GLOBAL innodb_io_capacity = 555");
    let status = a.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(a.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_ne!(status.code(), Some(0), "{err}");
    assert!(
        err.contains("changed by someone else during step 1: innodb_io_capacity 300 -> 555"),
        "{err}"
    );
    assert!(err.contains("left innodb_io_capacity = 555"), "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), "555", "{err}");
    assert_eq!(open_records(&home), 0, "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{doc}");
    assert!(
        steps[0]["invalid"]
            .as_str()
            .unwrap_or_default()
            .contains("innodb_io_capacity 300 -> 555"),
        "{doc}"
    );
}

#[test]
fn row4_a_second_run_honours_the_first_runs_lock() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let mut tune = cmd(&db, &home, &["tune"])
        .args(["--workload", "point-select", "--threads", "1"])
        .args(["--warmup", "0", "--duration", "2", "--budget", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held = |db: &MariaDb| {
        db.sql("SELECT IS_USED_LOCK('spinscope:run') IS NOT NULL")
            .trim()
            == "1"
    };
    wait_for("tune holds its run lock", 60, || held(&db));
    let (code, _, err) = out(sweep_with(
        &db,
        &home,
        &["x:innodb_spin_wait_delay=77"],
        "0.3",
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("another spinscope is running a tune or a sweep")
            && err.contains("spinscope:run"),
        "{err}"
    );
    assert_ne!(var(&db, "innodb_spin_wait_delay"), "77");
    // SAFETY: kill(2) on the tune this test started.
    unsafe { libc::kill(tune.id() as libc::pid_t, libc::SIGINT) };
    let status = tune.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(tune.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7", "{err}");
    assert!(!held(&db));
    assert_eq!(open_records(&home), 0);
}

fn stderr_of(c: &mut Child) -> String {
    let mut err = String::new();
    std::io::Read::read_to_string(c.stderr.as_mut().unwrap(), &mut err).unwrap();
    err
}

#[test]
fn row12_a_stopped_server_ends_sweep_in_bounded_time_with_partial_results() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let save = db.dir().join("partial.json");
    let mut a = sweep_with(
        &db,
        &home,
        &["a:innodb_spin_wait_delay=60", "b:innodb_spin_wait_delay=70"],
        "4",
    )
    .args(["--repeat", "2", "--query-timeout", "3"])
    .args(["--save", save.to_str().unwrap()])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Stop the server in the second step.
    wait_for("second variant applied", 60, || {
        var(&db, "innodb_spin_wait_delay") == "70"
    });
    // Mid-step: once the server shows the step's client at work.
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    // SAFETY: kill(2) on the throwaway server this test started (continued below).
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGSTOP) };
    let t0 = Instant::now();
    let mut status = None;
    while t0.elapsed() < Duration::from_secs(60) {
        if let Some(s) = a.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = t0.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGCONT) };
    if status.is_none() {
        let _ = a.kill();
    }
    let err = stderr_of(&mut a);
    let status = status.unwrap_or_else(|| panic!("no end within 60 s: {err}"));
    // The rest of the 4 s step, then about 4 x the 3 s query timeout.
    assert!(took < Duration::from_secs(25), "{took:?}: {err}");
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.contains("the server stopped answering") || err.contains("the server did not answer"),
        "{err}"
    );
    assert!(
        err.contains("SET GLOBAL innodb_spin_wait_delay = 7"),
        "{err}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    // The first step at least (the second too, marked invalid, when the checks timed out
    // before the last-resort deadline).
    let steps = doc["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{doc}");
    assert!(steps[0]["invalid"].is_null(), "{doc}");
    if let Some(s) = steps.get(1) {
        assert!(s["invalid"].is_string(), "{doc}");
    }
    // The journal kept it; restore puts it back once the server answers.
    assert_eq!(open_records(&home), 1, "{err}");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    eprintln!("sweep against a stopped server ended {took:?} after the stop");
}

#[test]
fn row12_a_server_restart_during_tune_keeps_partial_results() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut db) = start(&[]) else { return };
    prepare(&db);
    let default_delay = var(&db, "innodb_spin_wait_delay");
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let save = db.dir().join("tune.json");
    let mut tune = cmd(&db, &home, &["tune"])
        .args(["--workload", "point-select", "--threads", "1"])
        .args(["--warmup", "0", "--duration", "2", "--budget", "40"])
        .args(["--query-timeout", "3", "--connect-timeout", "2"])
        .args(["--save", save.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("a candidate applied", 60, || {
        var(&db, "innodb_spin_wait_delay") != "7"
    });
    // Mid-step: once the server shows the candidate's client at work.
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    db.restart();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = tune.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(90), "tune did not end");
        std::thread::sleep(Duration::from_millis(200));
    };
    let err = stderr_of(&mut tune);
    assert!(
        matches!(status.code(), Some(0) | Some(3)),
        "{status:?}: {err}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    assert!(!doc["candidates"].as_array().unwrap().is_empty(), "{doc}");
    if status.code() == Some(3) {
        assert!(doc["stopped_because"].is_string(), "{doc}");
    }
    // The restarted server's own value, or the original put back: never a candidate's, and
    // never reported as someone else's change.
    let now = var(&db, "innodb_spin_wait_delay");
    assert!(now == default_delay || now == "7", "{now}: {err}");
    assert!(!err.contains("someone else"), "{err}");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(open_records(&home), 0, "{err}");
    eprintln!("tune after a restart: {status:?}; {err}");
}
