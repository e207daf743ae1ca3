//! CLI tests of `spinscope doctor` that need no server: offline diagnosis of snapshot
//! fixtures (every server format), the JSON contract, --fail-on, and bad input (exit 2) or an
//! unreachable server (exit 3) with one-line messages and no password.

use std::path::PathBuf;

use assert_cmd::Command;
use spinscope::doctor::{DoctorDoc, Severity};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/snapshots")
        .join(name)
        .display()
        .to_string()
}

fn doctor(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("spinscope")
        .unwrap()
        .arg("doctor")
        .args(args)
        .env_remove("MYSQL_PWD")
        .output()
        .unwrap()
}

fn doc(name: &str) -> DoctorDoc {
    let out = doctor(&["--snapshot", &fixture(name), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).expect("spinscope.doctor/1 JSON");
    assert_eq!(d.schema, "spinscope.doctor/1");
    d
}

fn ids(d: &DoctorDoc) -> Vec<(&str, Severity)> {
    d.findings
        .iter()
        .map(|f| (f.id.as_str(), f.severity))
        .collect()
}

fn has<'a>(d: &'a DoctorDoc, id: &str, sev: Severity) -> &'a spinscope::doctor::Finding {
    d.findings
        .iter()
        .find(|f| f.id == id && f.severity == sev)
        .unwrap_or_else(|| panic!("no {id} {sev:?} in {:?}", ids(d)))
}

#[test]
fn mariadb_1011_live_capture() {
    let d = doc("mariadb1011_live.json");
    assert_eq!(d.server, "MariaDB 10.11.19");
    assert_eq!(d.semaphores.as_deref(), Some("blank-by-design"));
    // Recaptured by tests/fixtures/snapshots/recapture.sh: latches are 23% of P_S wait time.
    let f = has(&d, "pfs-latch-waits", Severity::Info);
    assert!(f.title.contains("index_tree_rw_lock"), "{}", f.title);
    let f = has(&d, "threads-running-bursts", Severity::Warning);
    // MariaDB 10.6+ has no innodb_thread_concurrency: the advice is the thread pool.
    assert!(f.statements.iter().any(|s| s.contains("pool-of-threads")));
    assert!(!f
        .statements
        .iter()
        .any(|s| s.contains("innodb_thread_concurrency")));
    has(&d, "semaphores-untrusted", Severity::Info);
    let b = d.burst.unwrap();
    assert!(b.achieved_hz > 50.0 && b.longest_gap_ms > 0.0);
    assert_eq!(d.pfs_instruments_restored, Some(true));
}

#[test]
fn high_spin_delay_is_critical_with_statements() {
    let d = doc("mariadb1011_delay6000.json");
    let f = has(&d, "spin-budget", Severity::Critical);
    assert!(f.title.contains("30 rounds here spin up to"), "{}", f.title);
    assert!(f
        .statements
        .iter()
        .any(|s| s.contains("SET GLOBAL innodb_spin_wait_delay")));
    assert!(f
        .evidence
        .iter()
        .any(|e| e.name == "ratio" && e.value > 100.0));
}

#[test]
fn mysql_8036_zeros_and_old_kernel() {
    let d = doc("mysql8036_synthetic_zeros_old_kernel.json");
    assert_eq!(d.semaphores.as_deref(), Some("hard-coded-zeros"));
    has(&d, "ppoll-siglock", Severity::Warning);
    has(&d, "semaphores-untrusted", Severity::Info);
    let f = has(&d, "threads-running-bursts", Severity::Warning);
    assert!(f
        .statements
        .iter()
        .any(|s| s.contains("innodb_thread_concurrency")));
}

#[test]
fn mysql_84_zeros_new_kernel_has_no_ppoll_finding() {
    let d = doc("mysql84_synthetic_zeros.json");
    assert_eq!(d.semaphores.as_deref(), Some("hard-coded-zeros"));
    assert!(!d.findings.iter().any(|f| f.id == "ppoll-siglock"));
}

#[test]
fn mysql_57_wait_cells_remote_without_host_facts() {
    let d = doc("mysql57_synthetic_wait_cells_remote.json");
    let f = has(&d, "long-semaphore-waits", Severity::Critical);
    assert!(
        f.why.contains("btr0cur.cc:5889") && f.why.contains("buf0buf.cc:1425"),
        "{}",
        f.why
    );
    has(&d, "spin-budget-unknown-cpu", Severity::Info);
    assert_eq!(d.semaphores.as_deref(), Some("live"));
    // Its INNODB STATUS text stops without the END line: the cut is reported.
    let cut = has(&d, "innodb-status-cut", Severity::Info);
    assert!(cut.title.contains("TRANSACTIONS"), "{}", cut.title);
}

#[test]
fn complete_innodb_status_is_not_reported_cut() {
    let d = doc("mysql56_synthetic_live_counters.json");
    assert!(!d.findings.iter().any(|f| f.id == "innodb-status-cut"));
}

#[test]
fn mysql_56_live_counters() {
    let d = doc("mysql56_synthetic_live_counters.json");
    let f = has(&d, "semaphores-live", Severity::Info);
    assert!(f
        .evidence
        .iter()
        .any(|e| e.name == "mutex spins" && e.value == 9123456.0));
}

#[test]
fn aarch64_and_missing_privilege() {
    let d = doc("mariadb1011_synthetic_aarch64_no_process.json");
    has(&d, "arm-128-byte-cache-lines", Severity::Warning);
    let f = has(&d, "missing-privilege", Severity::Warning);
    assert!(f.title.contains("PROCESS"));
    has(&d, "pfs-off", Severity::Info);
}

#[test]
fn fail_on_sets_exit_1() {
    let f = fixture("mariadb1011_live.json");
    assert_eq!(
        doctor(&["--snapshot", &f, "--fail-on", "warning"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        doctor(&["--snapshot", &f, "--fail-on", "critical"])
            .status
            .code(),
        Some(0)
    );
    let f = fixture("mariadb1011_delay6000.json");
    assert_eq!(
        doctor(&["--snapshot", &f, "--fail-on", "critical"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn text_and_markdown_reports() {
    let out = doctor(&["--snapshot", &fixture("mariadb1011_delay6000.json")]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("CRITICAL (1)") && s.contains("[spin-budget]") && s.contains("run: SET GLOBAL"),
        "{s}"
    );
    let out = doctor(&[
        "--snapshot",
        &fixture("mariadb1011_delay6000.json"),
        "--markdown",
    ]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("## CRITICAL (1)") && s.contains("```sql"), "{s}");
}

fn bad(args: &[&str], code: i32, needle: &str) {
    let out = doctor(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "stderr for {args:?} lacks {needle:?}: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("hunter2"),
        "{err}"
    );
    // One line, besides the mysql client's warning about a password on the command line.
    assert_eq!(
        err.trim_end()
            .lines()
            .filter(|l| !l.contains("[Warning] Using a password on the command line"))
            .count(),
        1,
        "one line expected: {err}"
    );
}

#[test]
fn bad_input_exits_2() {
    bad(&["--url", "postgres://u:hunter2@h/db"], 2, "mysql://");
    bad(&["--url", "mysql://u:hunter2@h:99999/db"], 2, "1..=65535");
    bad(&["--no-defaults", "--hz", "0"], 2, "--hz");
    bad(&["--no-defaults", "--window=-1"], 2, "--window");
    bad(&["--no-defaults", "--ssl-mode", "VERIFY_CA"], 2, "--ssl-ca");
    bad(&["--snapshot", "/nonexistent/snap.json"], 2, "cannot read");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("garbled.json");
    std::fs::write(
        &f,
        "{\"schema\": \"spinscope.doctor-snapshot/1\", \"variables\": 12",
    )
    .unwrap();
    bad(&["--snapshot", f.to_str().unwrap()], 2, "not JSON");
    std::fs::write(
        &f,
        "{\"schema\": \"spinscope.doctor-snapshot/1\", \"variables\": 12}",
    )
    .unwrap();
    bad(&["--snapshot", f.to_str().unwrap()], 2, "damaged snapshot");
    std::fs::write(&f, "{\"schema\": \"spinscope.sweep/1\"}").unwrap();
    bad(&["--snapshot", f.to_str().unwrap()], 2, "schema");
    bad(
        &["--no-defaults", "--host-facts", "/nonexistent/h.json"],
        2,
        "--host-facts",
    );
}

#[test]
fn unreachable_server_exits_3() {
    bad(
        &[
            "--no-defaults",
            "-h",
            "127.0.0.1",
            "-P",
            "1",
            "-u",
            "x",
            "-phunter2",
            "--connect-timeout",
            "2",
        ],
        3,
        "cannot connect to x@127.0.0.1:1",
    );
    bad(
        &[
            "--no-defaults",
            "-S",
            "/nonexistent/spinscope.sock",
            "-u",
            "x",
        ],
        3,
        "cannot connect",
    );
}

#[test]
fn dash_h_is_the_host_and_help_stays() {
    let out = doctor(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("-h, --host") && s.contains("--enable-instruments"));
}

#[test]
fn host_facts_file_completes_a_remote_snapshot() {
    let out = doctor(&[
        "--snapshot",
        &fixture("mysql57_synthetic_wait_cells_remote.json"),
        "--host-facts",
        &fixture("mariadb1011_live.json"),
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).unwrap();
    assert!(d.findings.iter().any(|f| f.id == "spin-budget"));
    assert!(!d.findings.iter().any(|f| f.id == "spin-budget-unknown-cpu"));
}

#[test]
fn absurd_variable_values_are_named_not_priced() {
    let d = doc("mysql84_synthetic_absurd_values.json");
    let bad: Vec<_> = d
        .findings
        .iter()
        .filter(|f| f.id == "spin-setting-out-of-range")
        .map(|f| f.title.as_str())
        .collect();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad.iter().any(|t| t.contains("\"500\"")) && bad.iter().any(|t| t.contains("\"lots\""))
    );
    let f = has(&d, "spin-budget", Severity::Warning);
    assert!(f
        .evidence
        .iter()
        .any(|e| e.name == "innodb_sync_spin_loops" && e.value == 30.0));
}

#[test]
fn from_a_capture_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("mysql84_synthetic_zeros.json"),
        dir.path().join("doctor-snapshot.json"),
    )
    .unwrap();
    let out = doctor(&["--from", dir.path().to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d.server, "MySQL 8.4.3");
}

#[test]
fn dash_p_without_a_terminal_is_bad_input() {
    if std::fs::File::open("/dev/tty").is_ok() {
        // With a terminal the prompt would wait for a person; covered by the unit test.
        return;
    }
    bad(
        &[
            "--no-defaults",
            "-S",
            "/nonexistent/s.sock",
            "-u",
            "x",
            "-p",
        ],
        2,
        "no terminal",
    );
}
