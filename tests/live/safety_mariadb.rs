//! Integration: what spinscope changes on a server always has a way back, it writes only where
//! it owns, and no password is readable. Each test starts its own throwaway MariaDB (own
//! datadir, socket, port) and its own change journal (XDG_STATE_HOME in the server's temp dir).
//!
//! - kill -9 of `sweep run` mid-variant: the next command warns (variable, original), sweep
//!   refuses the variable, a person's later change makes `restore` refuse without --force;
//!   SIGHUP mid-variant restores like SIGINT; a second sweep on a variable in use refuses
//!   (also from "another host", through the server-side lock); a side-effect variable is
//!   restored, after a normal end and after kill -9; a restart closes the record.
//! - kill -9 during the baseline (before any change) leaves nothing and claims nothing;
//!   kill -9 between two variants leaves nothing changed (or, if the second change won the
//!   race, warns and `restore` fixes it); one Ctrl-C against a SIGSTOPped server exits 130
//!   within the 15 s grace with the restore statement, the journal stays open, `restore`
//!   fixes it once the server continues. (kill -9 *during* the restore is not tested: the
//!   restore is one statement of a few ms with no observable point to stop at.)
//! - kill -9 of `doctor --enable-instruments` (performance_schema on), its cmdline holds no
//!   password, and `restore` brings the instruments back.
//! - ownership: system schemas and user schemas refused, intact; run on a foreign or
//!   half-prepared schema refused before any change; a bad output path fails before load.

use crate::common;

fn start(extra: &[&str]) -> Option<MariaDb> {
    common::mariadb::start_or_skip("safety_mariadb", extra)
}
use common::server_cmd as cmd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::mariadb::{state, var, MariaDb};
use common::{open_records, out, wait_for};

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped yet.
    unsafe {
        libc::kill(child.id() as libc::pid_t, sig);
    }
}

/// A long one-thread sweep with one variant, in the background.
fn long_sweep(db: &MariaDb, home: &std::path::Path, variant: &str) -> Child {
    cmd(db, home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "60"])
        .args(["--report-interval", "0", "--workload", "point-select"])
        .args(["--variant", variant])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
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
fn kill_hangup_overlap_and_restart_always_leave_a_way_back() {
    let Some(mut db) = start(&[]) else { return };
    let started = Instant::now();
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);

    // kill -9 mid-variant.
    let mut a = long_sweep(&db, &home, "slow:innodb_spin_wait_delay=6000");
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    signal(&a, libc::SIGKILL);
    let _ = a.wait();
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "6000");

    // The next connecting command warns first, with the variable and the original value.
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["sweep", "cleanup", "--schema", "nothing_here"],
    ));
    assert_eq!(code, Some(0), "{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("warning: innodb_spin_wait_delay") && first.contains("from 7 to 6000"),
        "{err}"
    );
    assert!(first.contains("spinscope restore --socket"), "{err}");
    // A client whose own journal is empty (another host) learns it from the copy the sweep
    // kept in its scratch schema.
    let elsewhere = db.dir().join("other-host-state");
    let (code, _, err) = out(cmd(
        &db,
        &elsewhere,
        &["sweep", "cleanup", "--schema", "nothing_here"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: innodb_spin_wait_delay") && err.contains("from 7 to 6000"),
        "{err}"
    );
    // `restore --list` shows it without connecting.
    let (code, list, _) = out(cmd(&db, &home, &["restore", "--list"]));
    assert_eq!(code, Some(0));
    assert!(
        list.contains("innodb_spin_wait_delay") && list.contains("its process is gone"),
        "{list}"
    );
    // A sweep refuses the journaled variable instead of adopting 6000 as the original.
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "run"]).args([
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--variant",
        "d4:innodb_spin_wait_delay=4",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("was left changed") && err.contains("spinscope restore"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "6000");

    // A person changes it after the kill: restore refuses without --force, then --force.
    db.sql("SET GLOBAL innodb_spin_wait_delay = 50");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("is 50 now, not the 6000 spinscope set"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "50");
    let (code, _, err) = out(cmd(&db, &home, &["restore", "--force"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored innodb_spin_wait_delay = 7 (read back)"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.spinscope_journal")
            .trim(),
        "0"
    );

    // Two sweeps on one variable: the second refuses, naming the holder; also from a client
    // whose own journal does not have the first (another host): the server-side copy and the
    // named lock tell it.
    let mut a = long_sweep(&db, &home, "slow:innodb_spin_wait_delay=6000");
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    let (code, stdout, err) = out(cmd(&db, &home, &["sweep", "run"]).args([
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--variant",
        "d100:innodb_spin_wait_delay=100",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("being changed by another spinscope")
            && err.contains(&format!("pid {}", a.id())),
        "{err}"
    );
    // The refusal is said once, on stderr.
    assert!(!stdout.contains("being changed"), "{stdout}");
    assert_eq!(err.matches("being changed by another").count(), 1, "{err}");
    let (code, _, err) = out(cmd(&db, &elsewhere, &["sweep", "run"]).args([
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--variant",
        "d100:innodb_spin_wait_delay=100",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("being changed by another spinscope") && err.contains("sweep run"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "6000");

    // SIGHUP (a dropped SSH session) mid-variant restores like SIGINT and exits 130.
    signal(&a, libc::SIGHUP);
    let t0 = Instant::now();
    let status = a.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    let mut err = String::new();
    std::io::Read::read_to_string(a.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("restored innodb_spin_wait_delay = 7 (read back)"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    let (_, list, _) = out(cmd(&db, &home, &["restore", "--list"]));
    assert!(list.contains("no open change records"), "{list}");

    // A holder known only by its server-side named lock is refused too, and named.
    let lock = "spinscope:innodb_spin_wait_delay";
    // Held until the test lets it go (drop KILLs the session), however long the refusal takes.
    let holder = db.load(1, &format!("SELECT GET_LOCK('{lock}', 0), SLEEP(600)"));
    let used = |db: &MariaDb| {
        db.sql(&format!("SELECT IS_USED_LOCK('{lock}') IS NOT NULL"))
            .trim()
            == "1"
    };
    wait_for("lock taken", 10, || used(&db));
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "run"]).args([
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--variant",
        "d100:innodb_spin_wait_delay=100",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("holds the lock {lock}")) && err.contains("server connection"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    drop(holder);
    wait_for("lock released", 10, || !used(&db));

    // A hung server (SIGSTOP): a second Ctrl-C exits at once with the statements still
    // needed, leaving the journal open; `restore` finishes the job once the server is back.
    let mut a = long_sweep(&db, &home, "slow:innodb_spin_wait_delay=6000");
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    // SAFETY: kill(2) on the throwaway server this test started (continued below).
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGSTOP) };
    let mut lines = common::StderrLines::of(&mut a);
    signal(&a, libc::SIGINT);
    // The second Ctrl-C once the first has been taken (two at once would be one signal).
    lines.wait_for("press Ctrl-C again", 30);
    signal(&a, libc::SIGINT);
    let t0 = Instant::now();
    let status = a.wait().unwrap();
    let quick = t0.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGCONT) };
    let err = lines.rest();
    assert!(quick < Duration::from_secs(3), "{quick:?}: {err}");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("SET GLOBAL innodb_spin_wait_delay = 7"),
        "{err}"
    );
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");

    // Side effect: innodb_io_capacity above innodb_io_capacity_max moves the max too.
    let max_before = var(&db, "innodb_io_capacity_max");
    let cap_before = var(&db, "innodb_io_capacity");
    let big = (max_before.parse::<u64>().unwrap() + 3000).to_string();
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "run"]).args([
        "--threads",
        "1",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--report-interval",
        "0",
        "--variant",
        &format!("io:innodb_io_capacity={big}"),
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("the server moved innodb_io_capacity_max"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_io_capacity_max"), max_before, "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), cap_before, "{err}");
    // ... and after a kill -9, restore puts both back.
    let mut a = long_sweep(&db, &home, &format!("io:innodb_io_capacity={big}"));
    wait_for("side effect journaled", 30, || {
        std::fs::read_dir(home.join("spinscope/journal"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
                    >= 2
            })
            .unwrap_or(false)
    });
    signal(&a, libc::SIGKILL);
    let _ = a.wait();
    assert_ne!(var(&db, "innodb_io_capacity_max"), max_before);
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(var(&db, "innodb_io_capacity_max"), max_before, "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), cap_before, "{err}");

    // kill -9, then a server restart: the next command closes the record and says so.
    let mut a = long_sweep(&db, &home, "slow:innodb_spin_wait_delay=6000");
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    signal(&a, libc::SIGKILL);
    let _ = a.wait();
    // A restart tells itself by a start time more than a few seconds later.
    std::thread::sleep(Duration::from_secs(6).saturating_sub(started.elapsed()));
    db.restart();
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["sweep", "cleanup", "--schema", "nothing_here"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("the server restarted since"), "{err}");
    let (_, list, _) = out(cmd(&db, &home, &["restore", "--list"]));
    assert!(list.contains("no open change records"), "{list}");
}

#[test]
fn killed_doctor_leaves_instruments_that_restore_brings_back_and_no_password_in_cmdline() {
    let Some(db) = start(&["--performance-schema=ON"]) else {
        return;
    };
    let home = state(&db);
    db.sql("CREATE USER mon@localhost IDENTIFIED BY 'Pw4Doctor9'");
    db.sql("GRANT ALL ON *.* TO mon@localhost");
    let count = |db: &MariaDb| {
        db.sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%' AND ENABLED='YES' AND TIMED='YES'")
            .trim()
            .to_string()
    };
    let before = count(&db);
    let total = db
        .sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'")
        .trim()
        .to_string();
    assert_ne!(before, total, "the test needs instruments that are off");
    let url = format!(
        "mysql://mon:Pw4Doctor9@localhost/?socket={}",
        db.socket.display()
    );

    // A server-side KILL of doctor's connections: its guard reconnects and restores, once,
    // and doctor does not claim the server went away.
    let mut doc = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "doctor",
            "--no-defaults",
            "--window",
            "4",
            "--enable-instruments",
            "--url",
            &url,
        ])
        .env("XDG_STATE_HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Killed in the window, once it has begun with the instruments on.
    let mut lines = common::StderrLines::of(&mut doc);
    lines.wait_for("sampling for", 30);
    wait_for("instruments enabled", 30, || count(&db) == total);
    for id in db
        .sql("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'mon'")
        .lines()
    {
        let _ = db.client().args(["-e", &format!("KILL {id}")]).output();
    }
    let status = doc.wait().unwrap();
    let err = lines.rest();
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(err.matches("restored").count(), 1, "{err}");
    assert!(
        !err.contains("went away") && !err.contains("UPDATE"),
        "{err}"
    );
    assert_eq!(count(&db), before, "{err}");
    let mut doc = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "doctor",
            "--no-defaults",
            "--window",
            "60",
            "--enable-instruments",
            "--url",
            &url,
        ])
        .env("XDG_STATE_HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("instruments enabled", 30, || count(&db) == total);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", doc.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline);
    assert!(cmdline.contains("mysql://mon:"), "{cmdline}");
    assert!(!cmdline.contains("Pw4Doctor9"), "{cmdline}");
    signal(&doc, libc::SIGKILL);
    let _ = doc.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(doc.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("Using a password on the command line interface can be insecure"),
        "{err}"
    );
    assert_eq!(count(&db), total, "kill -9 leaves them on");

    // The next doctor warns, reports it, and refuses to enable them again.
    let (code, report, err) = out(cmd(&db, &home, &["doctor", "--window", "0"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: performance_schema wait/synch instruments"),
        "{err}"
    );
    // The report is wrapped to 80 columns: compare its words, not its line breaks.
    let report = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(report.contains("change journal"), "{report}");
    assert!(
        report.contains("still as a killed spinscope left it"),
        "{report}"
    );
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["doctor", "--window", "1", "--enable-instruments"],
    ));
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored performance_schema wait/synch instruments"),
        "{err}"
    );
    assert_eq!(count(&db), before);
}

#[test]
fn never_writes_where_it_does_not_own() {
    let Some(db) = start(&[]) else { return };
    let home = state(&db);
    db.sql("CREATE DATABASE appdb");
    db.sql("CREATE TABLE appdb.sbtest1 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))");
    db.sql("CREATE TABLE appdb.users (id INT PRIMARY KEY)");
    db.sql("INSERT INTO appdb.sbtest1 VALUES (1, 1, 'mine', 'mine')");
    let users_before = db.sql("SELECT COUNT(*) FROM mysql.global_priv");
    for schema in ["mysql", "sys", "performance_schema", "appdb", "MySQL"] {
        for args in [
            vec![
                "sweep",
                "prepare",
                "--schema",
                schema,
                "--force",
                "--tables",
                "1",
                "--table-size",
                "10",
            ],
            vec!["sweep", "cleanup", "--schema", schema],
            vec!["sweep", "cleanup", "--schema", schema, "--force"],
        ] {
            let (code, _, err) = out(cmd(&db, &home, &args));
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(!err.contains("dropped"), "{args:?}: {err}");
        }
    }
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM mysql.global_priv"),
        users_before
    );
    assert_eq!(db.sql("SELECT c FROM appdb.sbtest1").trim(), "mine");

    // run on a foreign schema: refused before any change.
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let run = |schema: &str| {
        out(cmd(&db, &home, &["sweep", "run"]).args([
            "--schema",
            schema,
            "--workload",
            "write-only",
            "--threads",
            "1",
            "--duration",
            "0.3",
            "--variant",
            "d9:innodb_spin_wait_delay=9",
        ]))
    };
    let (code, _, err) = run("appdb");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("did not create this schema"), "{err}");
    assert!(!err.contains("changing"), "{err}");
    assert_eq!(db.sql("SELECT c FROM appdb.sbtest1").trim(), "mine");

    // A half-prepared schema (rows missing, or prepare unfinished) is refused with the fix.
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "prepare"]).args([
        "--schema",
        "scratch",
        "--tables",
        "2",
        "--table-size",
        "300",
    ]));
    assert_eq!(code, Some(0), "{err}");
    db.sql("DELETE FROM scratch.sbtest2 WHERE id > 100");
    let (code, _, err) = run("scratch");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("sbtest2 holds 100 rows, prepare promised 300"),
        "{err}"
    );
    assert!(
        err.contains("sweep prepare --schema scratch --tables 2 --table-size 300"),
        "{err}"
    );
    db.sql("UPDATE scratch.spinscope_manifest SET complete = 0");
    let (code, _, err) = run("scratch");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("prepare did not finish"), "{err}");
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");

    // A bad output path fails before any load or change.
    let (code, _, err) = out(cmd(&db, &home, &["sweep", "run"]).args([
        "--schema",
        "scratch",
        "--html",
        "/nonexistent-dir/report.html",
        "--variant",
        "d9:innodb_spin_wait_delay=9",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--html /nonexistent-dir/report.html"), "{err}");
    assert!(!err.contains("changing"), "{err}");

    // cleanup drops spinscope's tables; a table a user added keeps the schema.
    db.sql("CREATE TABLE scratch.notes (id INT)");
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["sweep", "cleanup", "--schema", "scratch"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("kept the schema"), "{err}");
    assert_eq!(db.sql("SHOW TABLES FROM scratch").trim(), "notes");
}

#[test]
fn inputs_and_urls_fail_cleanly_without_a_server() {
    let bin = || Command::new(env!("CARGO_BIN_EXE_spinscope"));
    let o = bin()
        .args(["doctor", "--snapshot", "/dev/zero"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--snapshot /dev/zero: is a device"), "{err}");
    let t0 = Instant::now();
    // A bad output path fails before connecting (nothing is listening on port 1).
    let o = bin()
        .args(["doctor", "--no-defaults", "-h", "127.0.0.1", "-P", "1"])
        .args(["--save-snapshot", "/nonexistent-dir/snap.json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--save-snapshot /nonexistent-dir/snap.json"),
        "{err}"
    );
    let o = bin()
        .args(["doctor", "--window", "1", "--hz", "1e-9"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(t0.elapsed() < Duration::from_secs(5));
    for (url, secrets) in [
        (
            "mysql://ceo:S3cret?Passw0rd@host:x/",
            &["S3cret", "Passw0rd"][..],
        ),
        ("mysql://ceo:pw!", &["pw!"][..]),
    ] {
        let o = bin()
            .args([
                "doctor",
                "--no-defaults",
                "--connect-timeout",
                "1",
                "--url",
                url,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{url}: {err}");
        for s in secrets {
            assert!(!err.contains(s), "{url}: {err}");
        }
    }
}

#[test]
fn kill_before_the_first_change_between_variants_and_one_ctrl_c_on_a_hung_server() {
    let Some(db) = start(&[]) else { return };
    prepare(&db);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let home = state(&db);
    let io_before = var(&db, "innodb_io_capacity");

    // kill -9 during the baseline, before any change: nothing is claimed, nothing is left.
    let mut a = cmd(&db, &home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "30"])
        .args(["--report-interval", "0", "--workload", "point-select"])
        .args(["--variant", "base:default"])
        .args(["--variant", "slow:innodb_spin_wait_delay=6000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let q0: u64 = db
        .sql("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='COM_SELECT'")
        .trim()
        .parse()
        .unwrap();
    wait_for("baseline load running", 30, || {
        let q: u64 = db
            .sql("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='COM_SELECT'")
            .trim()
            .parse()
            .unwrap();
        q > q0 + 500
    });
    signal(&a, libc::SIGKILL);
    let _ = a.wait();
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(open_records(&home), 0);
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["sweep", "cleanup", "--schema", "nothing_here"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (code, list, _) = out(cmd(&db, &home, &["restore", "--list"]));
    assert_eq!(code, Some(0));
    assert!(list.contains("no open change records"), "{list}");

    // kill -9 between variants: the first variant is restored (value back, its record
    // closed), the second (another variable) not yet applied.
    let mut a = cmd(&db, &home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "1.5"])
        .args(["--report-interval", "0", "--workload", "point-select"])
        .args(["--variant", "slow:innodb_spin_wait_delay=6000"])
        .args([
            "--variant",
            &format!(
                "io:innodb_io_capacity={}",
                io_before.parse::<u64>().unwrap() + 1
            ),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("first variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    wait_for("first variant restored", 30, || {
        var(&db, "innodb_spin_wait_delay") == "7" && open_records(&home) == 0
    });
    signal(&a, libc::SIGKILL);
    let _ = a.wait();
    let io_now = var(&db, "innodb_io_capacity");
    let (code, _, err) = out(cmd(
        &db,
        &home,
        &["sweep", "cleanup", "--schema", "nothing_here"],
    ));
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("innodb_spin_wait_delay"), "{err}");
    if io_now == io_before && open_records(&home) == 0 {
        // Caught between the variants: nothing left, nothing claimed.
        assert!(!err.contains("warning"), "{err}");
        eprintln!("kill -9 landed between the variants");
    } else {
        // The second change won the race with the poll: it is journaled and warned about.
        eprintln!("kill -9 landed in the second variant");
        assert!(
            err.contains("warning: innodb_io_capacity")
                && err.contains(&format!("from {io_before} to")),
            "{err}"
        );
    }
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(var(&db, "innodb_io_capacity"), io_before);
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(open_records(&home), 0);

    // One Ctrl-C against a hung (SIGSTOPped) server: the command gives up within the
    // documented grace, prints the statements still needed, leaves the journal open.
    let mut a = long_sweep(&db, &home, "slow:innodb_spin_wait_delay=6000");
    wait_for("variant applied", 30, || {
        var(&db, "innodb_spin_wait_delay") == "6000"
    });
    // SAFETY: kill(2) on the throwaway server this test started (continued below).
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGSTOP) };
    signal(&a, libc::SIGINT);
    let t0 = Instant::now();
    let mut status = None;
    while t0.elapsed() < Duration::from_secs(25) {
        if let Some(s) = a.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = t0.elapsed();
    // SAFETY: as above.
    unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGCONT) };
    let status = match status {
        Some(s) => s,
        None => {
            let _ = a.kill();
            a.wait().unwrap()
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(a.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(took < Duration::from_secs(20), "{took:?}: {err}");
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("SET GLOBAL innodb_spin_wait_delay = 7"),
        "{err}"
    );
    assert!(open_records(&home) >= 1, "{err}");
    let (code, _, err) = out(cmd(&db, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored innodb_spin_wait_delay = 7 (read back)"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(open_records(&home), 0);
    eprintln!("single Ctrl-C on a hung server answered in {took:?}");
}
