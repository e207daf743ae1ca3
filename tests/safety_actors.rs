//! Integration (issue 24): spinscope among other actors, each row against real throwaway
//! MariaDBs with their own change journal (XDG_STATE_HOME in the server's temp dir).
//!
//! - row 1: kill -9 of a sweep mid-variant, then commands from a client whose clock is 20 s
//!   behind and 10 s ahead (the `SPINSCOPE_TEST_CLOCK_SHIFT_S` seam): the record stays open,
//!   `restore` puts the server back.
//! - row 2: two servers with the same `--port` and `--skip-networking` (same hostname:port):
//!   a killed `doctor --enable-instruments` on A is neither closed nor reported by B, and
//!   `restore` on A puts A's instruments back.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::mariadb::{self, MariaDb};

fn start(extra: &[&str]) -> Option<MariaDb> {
    if mariadb::skip_reason("safety_actors", mariadb::available().err()).is_some() {
        return None;
    }
    Some(MariaDb::start(extra))
}

fn state(db: &MariaDb) -> PathBuf {
    db.dir().join("state")
}

/// spinscope on the server's socket as root, the journal in `home`.
fn cmd(db: &MariaDb, home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.args(args)
        .args(["--socket", db.socket.to_str().unwrap(), "-u", "root"])
        .arg("--no-defaults")
        .env_remove("MYSQL_PWD")
        .env_remove("SPINSCOPE_FAULT")
        .env_remove("SPINSCOPE_TEST_CLOCK_SHIFT_S")
        .env("XDG_STATE_HOME", home);
    c
}

fn out(mut c: impl std::borrow::BorrowMut<Command>) -> (Option<i32>, String, String) {
    let o: Output = c.borrow_mut().output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn var(db: &MariaDb, name: &str) -> String {
    db.sql(&format!("SELECT @@GLOBAL.{name}"))
        .trim()
        .to_string()
}

fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

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

/// Open change records in the local journal (one .json file each).
fn open_records(home: &Path) -> usize {
    std::fs::read_dir(home.join("spinscope/journal"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn row1_a_shifted_client_clock_never_closes_a_record() {
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
        db.sql("SELECT COUNT(*) FROM spinscope.spinscope_journal").trim(),
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
    let (code, _, err) = out(cmd(&db, &home, &["restore"]).env("SPINSCOPE_TEST_CLOCK_SHIFT_S", "10"));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("restored innodb_spin_wait_delay = 7 (read back)"),
        "{err}"
    );
    assert_eq!(var(&db, "innodb_spin_wait_delay"), "7");
    assert_eq!(open_records(&home), 0);
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM spinscope.spinscope_journal").trim(),
        "0"
    );
}

#[test]
fn row2_two_servers_with_the_same_hostname_and_port_are_told_apart() {
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

    let mut doc = cmd(&a, &home, &["doctor", "--window", "60", "--enable-instruments"])
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
    assert!(!err.contains("restarted") && !err.contains("warning"), "{err}");
    assert_eq!(open_records(&home), 1, "{err}");
    let (code, _, err) = out(cmd(&b, &home, &["restore"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("nothing to restore"), "{err}");
    assert_eq!(count(&b), before_b);
    // B's own instruments can be enabled and are put back.
    let (code, _, err) = out(cmd(&b, &home, &["doctor", "--window", "1", "--enable-instruments"]));
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
