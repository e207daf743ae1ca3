//! CLI tests of `spinscope sweep` that need no server: every bad input exits 2 with one line
//! that shows the correct form, before any connection is tried; an unreachable server exits 3.

use assert_cmd::Command;

/// A socket that does not exist: if validation wrongly connected first, the exit would be 3.
const NO_SOCKET: &str = "/nonexistent/spinscope-test.sock";

fn run(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("spinscope")
        .unwrap()
        .args(["sweep", "run", "--no-defaults", "--socket", NO_SOCKET])
        .args(args)
        .output()
        .unwrap()
}

fn bad(args: &[&str], needle: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(needle),
        "stderr for {args:?} lacks {needle:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
}

#[test]
fn bad_thread_ladders_show_the_form() {
    for l in [
        "0", "1,,2", "8..4", "1..64:x1", "1..64:*2", "many", "100000",
    ] {
        bad(&["--threads", l], "1..64:x2");
    }
}

#[test]
fn bad_sla_shows_the_form() {
    for s in ["99<5ms", "p99<5", "p99>5ms", "p101<5ms", "p99<-1ms"] {
        bad(&["--sla", s], "p99<5ms");
    }
}

#[test]
fn bad_variant_syntax_shows_the_form() {
    for v in [
        "d4",
        "d4:",
        "d4:innodb_spin_wait_delay",
        ":x=1",
        "d4:x=1;drop table t",
        "a:x=1,x=2",
    ] {
        bad(&["--variant", v], "NAME:variable=value");
    }
    let out = run(&[
        "--variant",
        "a:innodb_spin_wait_delay=4",
        "--variant",
        "a:innodb_spin_wait_delay=5",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_setting_that_needs_a_restart_is_refused() {
    bad(
        &["--variant", "ps:performance_schema=ON"],
        "needs a restart",
    );
    bad(
        &["--variant", "pg:innodb_page_size=8192"],
        "needs a restart",
    );
}

#[test]
fn unknown_workload_lists_the_known_ones() {
    bad(
        &["--workload", "oltp_insert"],
        "point-select, read-only, write-only, read-write",
    );
}

#[test]
fn bad_sql_files_and_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("q.sql");
    std::fs::write(&f, "SELECT c FROM {table} WHERE id=?\n").unwrap();
    bad(&["--sql", f.to_str().unwrap()], "placeholders");
    std::fs::write(&f, "SELECT {nope}\n").unwrap();
    bad(
        &["--sql", f.to_str().unwrap()],
        "unknown placeholder {nope}",
    );
    bad(&["--sql", "/nonexistent/q.sql"], "cannot read it");
    bad(&["--duration", "0"], "--duration");
    bad(&["--repeat", "0"], "--repeat");
    bad(&["--rate", "0"], "--rate");
    bad(&["--schema", "a;b"], "--schema");
}

#[test]
fn unreachable_server_exits_3_without_a_password() {
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args([
            "sweep",
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            "1",
            "--user",
            "u",
        ])
        .env("MYSQL_PWD", "sekret-pw")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(!err.contains("sekret-pw"), "{err}");
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["sweep", "prepare", "--no-defaults", "--socket", NO_SOCKET])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn help_names_the_subcommands() {
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["sweep", "--help"])
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    for w in ["prepare", "run", "cleanup"] {
        assert!(s.contains(w), "{s}");
    }
}

#[test]
fn run_help_explains_every_column_and_ratio() {
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["sweep", "run", "--help"])
        .output()
        .unwrap();
    // clap wraps the text: compare with whitespace collapsed.
    let s = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for w in [
        "tps = transactions/s",
        "qps = statements/s",
        "N=X*R = concurrency implied by Little's law",
        "Little ratio = (N=X*R) / threads",
        "INVALID",
        "too little data for a verdict",
        "--allow-writes-outside",
        "harmful",
    ] {
        assert!(s.contains(w), "--help lacks {w:?}: {s}");
    }
}
