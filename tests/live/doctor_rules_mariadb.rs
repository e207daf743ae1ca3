//! Doctor rules against a real, throwaway MariaDB (tests/common/mariadb.rs), one condition per
//! test, each produced on the server rather than read from a snapshot (issue 12 §4):
//! performance_schema OFF and ON, spin delay settings priced with one probe file, bursts vs
//! sustained running threads, and a hot row hammered at a lowered spin delay.
//!
//! Rules a MariaDB 10.6+ server cannot produce, so they keep their snapshot tests
//! (tests/offline/cli_doctor.rs, unit tests in src/doctor/rules/):
//! - `long-semaphore-waits`: MariaDB 10.6 removed the sync arrays and their wait cells
//!   (MDEV-21452, docs/REFERENCE.md §4), so SEMAPHORES is blank under any load.
//!   `hot_row_at_a_lowered_delay_keeps_semaphores_blank` checks exactly that against the
//!   server: the rule stays silent and `semaphores-untrusted` says why.
//! - `innodb-status-cut`: the server cuts an over-1 MB status by omitting the start of the
//!   transaction list and keeps the sections after it and the END line (ha_innodb.cc,
//!   `innodb_show_status`); a text without END takes a damaged capture.
//! - `ppoll-siglock`: MySQL / Percona 8.0+ on a kernel before 4.10 only.
//! - `arm-128-byte-cache-lines`: aarch64 hosts with 128-byte cache lines only.
//!
//! Covered against a real server in other files: `missing-privilege`, `spin-signature`,
//! `pfs-latch-waits` under a write load (doctor_mariadb.rs), `spinscope-left-changed`
//! (safety_mariadb.rs).

use crate::common;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::mariadb::MariaDb;
use spinscope::doctor::rules::spin_budget::{CRITICAL_RATIO, WARN_RATIO};
use spinscope::doctor::{DoctorDoc, Finding, Severity};

/// A server, or the test's failure when MariaDB is not installed (these tests never skip).
fn server(extra: &[&str]) -> MariaDb {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    MariaDb::start(extra)
}

fn doctor(db: &MariaDb, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["doctor", "--no-defaults", "-S"])
        .arg(&db.socket)
        .args(["-u", "root"])
        .args(args)
        .env_remove("MYSQL_PWD")
        .output()
        .unwrap()
}

fn doc(out: &Output) -> DoctorDoc {
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("spinscope.doctor/1")
}

fn ids(d: &DoctorDoc) -> Vec<&str> {
    d.findings.iter().map(|f| f.id.as_str()).collect()
}

fn finding<'a>(d: &'a DoctorDoc, id: &str) -> &'a Finding {
    d.findings
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(d)))
}

fn evidence(f: &Finding, name: &str) -> f64 {
    f.evidence
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{}: no evidence {name} in {:?}", f.id, f.evidence))
        .value
}

#[test]
fn performance_schema_off_then_on() {
    // MariaDB's default is OFF: the rule says so and its fix is an option-file line.
    let off = server(&["--performance-schema=OFF"]);
    let d = doc(&doctor(&off, &["--window", "0", "--json"]));
    let f = finding(&d, "pfs-off");
    assert_eq!(f.option_file, vec!["performance_schema = ON".to_string()]);
    assert!(
        !ids(&d).iter().any(|id| id.starts_with("pfs-latch")),
        "{:?}",
        ids(&d)
    );
    assert!(d.pfs_top_waits.is_empty(), "{:?}", d.pfs_top_waits);
    drop(off);

    // ON: no pfs-off; the wait/synch instruments are off by default and the finding counts
    // them as the server does.
    let on = server(&["--performance-schema=ON"]);
    let total: f64 = on
        .sql("SELECT COUNT(*) FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%'")
        .trim()
        .parse()
        .unwrap();
    assert!(total > 10.0, "{total}");
    let d = doc(&doctor(&on, &["--window", "1", "--json"]));
    assert!(!ids(&d).contains(&"pfs-off"), "{:?}", ids(&d));
    let f = finding(&d, "pfs-latch-instruments-off");
    assert_eq!(evidence(f, "synch_instruments_total"), total);
    assert!(f.statements[0].contains("setup_instruments"), "{:?}", f);
    // Enabled by the server's own option instead of --enable-instruments: the hint goes away.
    on.sql(
        "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' \
         WHERE NAME LIKE 'wait/synch/%'",
    );
    let d = doc(&doctor(&on, &["--window", "1", "--json"]));
    assert!(
        !ids(&d).contains(&"pfs-latch-instruments-off") && !ids(&d).contains(&"pfs-off"),
        "{:?}",
        ids(&d)
    );
}

#[test]
fn spin_delay_settings_are_read_live_and_priced_with_one_probe() {
    let db = server(&[]);
    // One CPU figure for every run: a probe file of this host, so the ratios are exact.
    let probe = db.dir().join("probe.json");
    common::save_probe(&probe);
    let probe_arg = probe.to_str().unwrap();
    let run = |delay: u64, loops: u64| {
        db.sql(&format!(
            "SET GLOBAL innodb_spin_wait_delay = {delay}; SET GLOBAL innodb_sync_spin_loops = {loops}"
        ));
        let d = doc(&doctor(
            &db,
            &["--window", "0", "--host-facts", probe_arg, "--json"],
        ));
        finding(&d, "spin-budget").clone()
    };
    let mut previous: Option<(u64, Finding)> = None;
    for delay in [1u64, 4, 40, 400, 4000] {
        let f = run(delay, 30);
        // The live values, not the version's defaults.
        assert_eq!(evidence(&f, "innodb_spin_wait_delay"), delay as f64);
        assert_eq!(evidence(&f, "innodb_sync_spin_loops"), 30.0);
        // Severity follows the low end of the ratio over the rule's thresholds.
        let low = f
            .evidence
            .iter()
            .find(|e| e.name == "design_ratio_low")
            .map_or_else(|| evidence(&f, "design_ratio"), |e| e.value);
        let expected = if low >= CRITICAL_RATIO {
            Severity::Critical
        } else if low >= WARN_RATIO {
            Severity::Warning
        } else {
            Severity::Info
        };
        assert_eq!(f.severity, expected, "delay {delay}: {}", f.title);
        if let Some((d0, f0)) = &previous {
            // MariaDB 10.6+ spins M/4 * d hints per round: the time is linear in the delay.
            let k = delay as f64 / *d0 as f64;
            let here = evidence(&f, "max_spin_here");
            let here0 = evidence(f0, "max_spin_here");
            assert!(
                (here / here0 - k).abs() < 1e-6 * k,
                "delay {d0} -> {delay}: {here0} -> {here} us"
            );
            assert_eq!(
                evidence(&f, "max_spin_design"),
                evidence(f0, "max_spin_design")
            );
            assert!(f.severity >= f0.severity, "{} then {}", f0.title, f.title);
        }
        previous = Some((delay, f));
    }
    let (_, top) = previous.unwrap();
    assert_eq!(top.severity, Severity::Critical, "{}", top.title);
    // The loops count scales the same way, and `spin --from-server` with the same probe file
    // prices the same live settings at the same ratio (one CPU model per probe).
    let f = run(40, 60);
    let f30 = run(40, 30);
    let r = evidence(&f, "max_spin_here") / evidence(&f30, "max_spin_here");
    assert!((r - 2.0).abs() < 1e-6, "loops 30 -> 60: x{r}");
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["spin", "--from-server", "--no-defaults", "-S"])
        .arg(&db.socket)
        .args(["-u", "root", "--probe", probe_arg, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: spinscope::spin::doc::SpinReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (s.settings.spin_wait_delay, s.settings.sync_spin_loops),
        (40, 30)
    );
    let ratio = s.vs_design.ratio.expect("a design ratio");
    assert!(
        (ratio - evidence(&f30, "design_ratio")).abs() < 1e-9 * ratio,
        "spin {ratio} vs doctor {}",
        evidence(&f30, "design_ratio")
    );
    // Back to the defaults: the finding's statements are what the server accepts.
    db.sql(
        "SET GLOBAL innodb_spin_wait_delay = DEFAULT; SET GLOBAL innodb_sync_spin_loops = DEFAULT",
    );
}

/// Clients the burst threshold (the cores) is far below: `pattern` needs p99 > 2 x cores.
fn burst_clients() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (4 * cores + 4).max(16)
}

#[test]
fn running_threads_in_short_bursts_and_sustained() {
    let db = server(&[]);
    let n = burst_clients();
    // A 6 s window with one 1 s burst of sleeping queries (Threads_running counts a thread in
    // a statement, asleep or not): bursts, not sustained overload. The burst starts a second
    // after the window has begun and lasts a second from when the server shows all of it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["doctor", "--no-defaults", "-S"])
        .arg(&db.socket)
        .args(["-u", "root", "--window", "6", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = common::StderrLines::of(&mut child);
    lines.wait_for("sampling for", 60);
    std::thread::sleep(Duration::from_secs(1));
    let burst = db.load(n, "SELECT SLEEP(60)");
    burst.wait_observed(30);
    std::thread::sleep(Duration::from_secs(1));
    drop(burst);
    let mut out = child.wait_with_output().unwrap();
    out.stderr = lines.rest().into_bytes();
    let d = doc(&out);
    let b = d.burst.clone().expect("burst statistics");
    eprintln!(
        "burst: p50 {} p99 {} max {}, {:.0}% above the cores, {} bursts, 1 s monitor max {}",
        b.threads_running.p50,
        b.threads_running.p99,
        b.threads_running.max,
        b.time_above_threshold_pct,
        b.bursts,
        b.monitor_1s.max
    );
    let f = finding(&d, "threads-running-bursts");
    assert!(b.threads_running.max >= (n - 1) as f64, "{b:?}");
    assert!(b.time_above_threshold_pct < 50.0 && b.bursts >= 1, "{b:?}");
    assert!(evidence(f, "longest_burst") >= 500.0, "{:?}", f.evidence);
    assert!(
        !ids(&d).contains(&"threads-running-sustained"),
        "{:?}",
        ids(&d)
    );

    // The same clients asleep through the whole window: sustained overload.
    let load = db.load(n, "SELECT SLEEP(60)");
    load.wait_observed(30);
    let d = doc(&doctor(&db, &["--window", "3", "--json"]));
    drop(load);
    let b = d.burst.clone().expect("burst statistics");
    assert!(b.time_above_threshold_pct >= 50.0, "{b:?}");
    let f = finding(&d, "threads-running-sustained");
    assert!(
        evidence(f, "threads_running_p50") >= (n - 1) as f64,
        "{:?}",
        f.evidence
    );
    assert!(
        !ids(&d).contains(&"threads-running-bursts"),
        "{:?}",
        ids(&d)
    );
}

#[test]
fn hot_row_at_a_lowered_delay_keeps_semaphores_blank() {
    let db = server(&["--performance-schema=ON"]);
    db.sql(
        "CREATE DATABASE hot; CREATE TABLE hot.t (id INT PRIMARY KEY, v BIGINT) ENGINE=InnoDB; \
         INSERT INTO hot.t VALUES (1, 0); SET GLOBAL innodb_spin_wait_delay = 0",
    );
    // 16 clients hammer one row (one page, one record lock) while doctor watches with the
    // latch instruments enabled; the load runs until doctor is done, and doctor starts once
    // the server shows it.
    let load = db.load(16, "UPDATE hot.t SET v = v + 1 WHERE id = 1");
    load.wait_observed(60);
    let d = doc(&doctor(
        &db,
        &["--window", "3", "--enable-instruments", "--json"],
    ));
    load.stop();
    let updates: u64 = db.sql("SELECT v FROM hot.t").trim().parse().unwrap();
    assert!(updates > 1000, "the load did not run: {updates} updates");
    // The contention is real and performance_schema names it ...
    assert!(
        d.pfs_top_waits.iter().any(|w| w.event.contains("/innodb/")),
        "{:?}",
        d.pfs_top_waits
    );
    // ... while SEMAPHORES stays blank: no wait cells to report, and doctor says why.
    assert_eq!(d.semaphores.as_deref(), Some("blank-by-design"));
    assert!(!ids(&d).contains(&"long-semaphore-waits"), "{:?}", ids(&d));
    let f = finding(&d, "semaphores-untrusted");
    assert!(f.title.contains("blank by design"), "{}", f.title);
    let status = db.sql("SHOW ENGINE INNODB STATUS");
    assert!(!status.contains("has waited at"), "a wait cell on 10.6+?");
    // The lowered delay is priced: zero delay spins no time at all.
    let s = finding(&d, "spin-budget");
    assert_eq!(evidence(s, "innodb_spin_wait_delay"), 0.0);
    assert_eq!(evidence(s, "max_spin_here"), 0.0);
}
