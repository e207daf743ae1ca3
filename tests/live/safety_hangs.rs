//! Integration (issue 24 item 9, "every wait has a deadline"): a server that stops answering
//! (SIGSTOP) against real throwaway MariaDBs, each test a few seconds with the tools' short
//! timeouts and windows.
//!
//! - `doctor` over two servers, one stopped: the run ends within its per-server limit, the
//!   stopped one is a failed row with the reason, the other is diagnosed, and while it waits
//!   the progress names the late server and when it is given up (never "about 1 s left" for a
//!   minute).
//! - `tune` with the server stopped mid-run: it says so within the step plus two query
//!   timeouts, stops, saves what it measured, says that `spinscope restore` puts the settings
//!   back, and `restore` does once the server answers again.
//!
//! A stopped server is always continued (SIGCONT) by a guard's `Drop`, also when a test fails.
//! (`sweep run` against a stopped server: `safety_actors.rs`, row 12.)

use crate::common;

fn start(test: &str) -> Option<MariaDb> {
    common::mariadb::start_or_skip(test, &[])
}
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mariadb::{self, state, MariaDb};
use common::open_records;

/// One test at a time: each starts its own servers and load on a small machine.
static SERIAL: Mutex<()> = Mutex::new(());

/// A server stopped with SIGSTOP until this is dropped (SIGCONT), whatever happens.
struct Stopped(u32);

impl Stopped {
    fn new(db: &MariaDb) -> Stopped {
        // SAFETY: kill(2) on the pid of the throwaway server this test started.
        unsafe { libc::kill(db.pid() as libc::pid_t, libc::SIGSTOP) };
        Stopped(db.pid())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: as in `new`.
        unsafe { libc::kill(self.0 as libc::pid_t, libc::SIGCONT) };
    }
}

/// A spinscope run whose stderr lines are kept with the time each arrived; killed on drop.
struct Run {
    child: Child,
    t0: Instant,
    lines: Arc<Mutex<Vec<(Duration, String)>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Run {
    fn spawn(mut c: Command) -> Run {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting spinscope");
        let t0 = Instant::now();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (err, l) = (child.stderr.take().unwrap(), Arc::clone(&lines));
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                l.lock().unwrap().push((t0.elapsed(), line));
            }
        });
        Run {
            child,
            t0,
            lines,
            reader: Some(reader),
        }
    }

    /// When the first line containing `what` arrived (after the start).
    fn seen(&self, what: &str) -> Option<Duration> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .find(|(_, l)| l.contains(what))
            .map(|(t, _)| *t)
    }

    fn stderr(&self) -> String {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .map(|(t, l)| format!("{:5.1} {l}\n", t.as_secs_f64()))
            .collect()
    }

    /// Wait up to `secs` for the end: (exit code, time since the start, stdout).
    fn wait(&mut self, secs: u64) -> (Option<i32>, Duration, String) {
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                let took = self.t0.elapsed();
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                let mut out = String::new();
                std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut out)
                    .unwrap();
                return (st.code(), took, out);
            }
            assert!(
                self.t0.elapsed() < Duration::from_secs(secs),
                "no end within {secs} s:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spinscope(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.args(args)
        .arg("--no-defaults")
        .env_remove("MYSQL_PWD")
        .env_remove("SPINSCOPE_FAULT")
        .env_remove("SPINSCOPE_TEST_CLOCK_SHIFT_S")
        .env("XDG_STATE_HOME", home);
    c
}

#[test]
fn doctor_fleet_gives_up_on_a_stopped_server_within_its_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(a) = start("doctor_fleet_gives_up_on_a_stopped_server_within_its_limit") else {
        return;
    };
    let b = MariaDb::start(&[]);
    let home = state(&a);
    let stopped = Stopped::new(&b);
    // Per server: window 1 s + connect 4 s + query 2 s + 5 s = 12 s at the most; the stopped
    // server never greets, so it fails after the 4 s connect timeout, late by then (expected:
    // the window and about a second).
    let mut run = Run::spawn(spinscope(
        &home,
        &[
            "doctor",
            &format!("root@127.0.0.1:{}", a.port),
            &format!("root@127.0.0.1:{}", b.port),
            "--window",
            "1",
            "--connect-timeout",
            "4",
            "--query-timeout",
            "2",
            "--json",
        ],
    ));
    let (code, took, out) = run.wait(60);
    drop(stopped);
    let err = run.stderr();
    eprintln!("doctor over a fleet with a stopped server ended after {took:?}:\n{err}");
    assert_eq!(code, Some(3), "{err}");
    assert!(took < Duration::from_secs(12), "{took:?}: {err}");
    assert!(
        err.contains("a server that does not answer is given up after 12 s"),
        "{err}"
    );
    // The wait is named while it lasts, before the stopped server's row.
    let waiting = run
        .seen(&format!("waiting for ***@127.0.0.1:{}", b.port))
        .unwrap_or_else(|| panic!("no waiting line: {err}"));
    let b_done = run
        .seen(&format!("***@127.0.0.1:{}: error:", b.port))
        .unwrap_or_else(|| panic!("no row for the stopped server: {err}"));
    assert!(waiting < b_done, "{err}");
    assert!(err.contains("given up at 12 s"), "{err}");
    let d: serde_json::Value = serde_json::from_str(&out).expect("spinscope.doctor-fleet/1");
    assert_eq!(d["diagnosed"], 1, "{d}");
    assert_eq!(d["failed"], 1, "{d}");
    assert!(d["servers"][0]["doc"].is_object(), "{d}");
    let why = d["servers"][1]["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("does not answer") && why.contains("stopped or hung"),
        "{why}"
    );
    assert_eq!(open_records(&home), 0);
}

#[test]
fn tune_says_a_stopped_server_stops_it_saves_and_restore_puts_it_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start("tune_says_a_stopped_server_stops_it_saves_and_restore_puts_it_back")
    else {
        return;
    };
    let home = state(&db);
    let sock = db.socket.to_str().unwrap().to_string();
    let conn = ["--socket", sock.as_str(), "-u", "root"];
    let st = spinscope(&home, &["sweep", "prepare"])
        .args(conn)
        .args(["--tables", "1", "--table-size", "200"])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let save = db.dir().join("tune.json");
    let mut run = Run::spawn({
        let mut c = spinscope(&home, &["tune"]);
        c.args(conn)
            .args(["--workload", "point-select", "--threads", "1"])
            .args(["--warmup", "0", "--duration", "2", "--budget", "60"])
            .args(["--query-timeout", "2", "--connect-timeout", "2"])
            .args(["--save", save.to_str().unwrap()]);
        c
    });
    let var = || {
        db.sql("SELECT @@GLOBAL.innodb_spin_wait_delay")
            .trim()
            .to_string()
    };
    let t = Instant::now();
    while var() == "7" {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no candidate applied:\n{}",
            run.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Mid-step: once the server shows the candidate's client at work.
    mariadb::wait_busy(&db, "spinscope", 1, 30);
    let stopped = Stopped::new(&db);
    let at = run.t0.elapsed();
    let (code, took, _) = run.wait(60);
    let err = run.stderr();
    // Said within the rest of the 2 s step, the wait for the answers in flight (one query
    // timeout) and the read after the step (another), plus slack for a loaded machine.
    let said = run
        .seen("the server stopped answering")
        .unwrap_or_else(|| panic!("never said the server stopped answering:\n{err}"));
    eprintln!("tune: server stopped at {at:?}; said at {said:?}, ended at {took:?}:\n{err}");
    assert!(said - at < Duration::from_secs(10), "{err}");
    // Then one restore attempt (the 2 s connect timeout) and the save.
    assert!(took - at < Duration::from_secs(15), "{err}");
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("`spinscope restore`"), "{err}");
    assert!(
        err.contains("SET GLOBAL innodb_spin_wait_delay = 7"),
        "{err}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).expect("partial results saved"))
            .unwrap();
    assert!(!doc["candidates"].as_array().unwrap().is_empty(), "{doc}");
    assert!(
        doc["stopped_because"]
            .as_str()
            .is_some_and(|s| s.contains("stopped answering")),
        "{doc}"
    );
    assert!(open_records(&home) >= 1, "{err}");
    drop(stopped);
    // The server answers again: restore puts the settings back and closes the records.
    let out = spinscope(&home, &["restore"]).args(conn).output().unwrap();
    let rerr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{rerr}");
    assert_eq!(var(), "7", "{rerr}");
    assert_eq!(open_records(&home), 0, "{rerr}");
}
