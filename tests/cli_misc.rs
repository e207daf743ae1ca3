//! Completions, man pages, top-level usage errors and a closed stdout.

use assert_cmd::Command;
use predicates::prelude::*;

#[test]
fn completions_are_generated_from_the_clap_definition() {
    for shell in ["bash", "zsh", "fish"] {
        Command::cargo_bin("spinscope")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("spin"))
            .stdout(predicate::str::contains("probe"));
    }
}

#[test]
fn man_pages_are_written_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("spinscope")
        .unwrap()
        .args(["man", "--out-dir"])
        .arg(dir.path())
        .assert()
        .success();
    let main = std::fs::read_to_string(dir.path().join("spinscope.1")).unwrap();
    assert!(main.contains(".TH spinscope"), "{main}");
    assert!(dir.path().join("spinscope-spin.1").exists());
    assert!(dir.path().join("spinscope-probe.1").exists());
}

#[test]
fn unknown_command_is_a_usage_error() {
    Command::cargo_bin("spinscope")
        .unwrap()
        .arg("frobnicate")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("frobnicate"));
}

/// Run the binary with stdout a pipe whose read end is already closed (what `| head -c 1` does
/// once it has its byte), returning the exit code and stderr.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors that we own from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: each descriptor was just created and is owned once.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
        .args(args)
        .stdout(std::process::Stdio::from(write))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let snapshot = format!("{fixtures}/snapshots/mariadb1011_delay6000.json");
    let perf = format!("{fixtures}/perf/synthetic_mariadb1011.perf");
    let runs: [&[&str]; 6] = [
        &["probe", "--json"],
        &["spin", "--flavor", "mariadb", "--server", "10.11", "--json"],
        &["doctor", "--snapshot", &snapshot, "--json"],
        &["doctor", "--snapshot", &snapshot],
        &["profile", "--perf-script", &perf],
        &["completions", "bash"],
    ];
    for args in runs {
        let (code, err) = with_closed_stdout(args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
}

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
        .args(args)
        .env_remove("MYSQL_PWD")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_are_one_line_without_secrets() {
    for (args, want) in [
        (&["frobnicate"][..], "see 'spinscope --help'"),
        (
            &["sweep", "run", "--bogus"][..],
            "see 'spinscope sweep run --help'",
        ),
        (
            &["spin", "--flavor", "xx", "--server", "8.0.1"][..],
            "possible values: mysql, percona, mariadb",
        ),
        (&["doctor", "--window"][..], "see 'spinscope doctor --help'"),
        (
            &["restore", "u:hunter2@h", "v:hunter2@h"][..],
            "unexpected argument",
        ),
    ] {
        let (code, err) = stderr_of(args);
        let lines: Vec<&str> = err.lines().filter(|l| !l.contains("[Warning]")).collect();
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].starts_with("spinscope: error: "), "{err}");
        assert!(lines[0].contains(want), "{args:?}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[test]
fn dash_p_then_a_word_prompts_and_the_word_is_the_server() {
    if std::fs::File::open("/dev/tty").is_ok() {
        return; // with a terminal the prompt would wait for a person (unit-tested in conn.rs)
    }
    // The mysql client prompts for `-p WORD`; WORD is not the password. Here it is the
    // positional server, and with no terminal the prompt fails before any connection.
    let (code, err) = stderr_of(&["restore", "--no-defaults", "-p", "root@/nonexistent/s.sock"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no terminal"), "{err}");
    assert!(
        !err.contains("[Warning]"),
        "a word after -p is no password: {err}"
    );
}
