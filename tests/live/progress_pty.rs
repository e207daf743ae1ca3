//! Progress as people see it: on a terminal (a real pseudo-terminal from util-linux's
//! `script`, 100 columns) a bar that is redrawn in place on one line and cleared at the end;
//! with stderr a pipe, plain lines without escape sequences and without repeats.

use crate::common;
use std::process::Command;

use common::mariadb::{self, which, MariaDb};

const BIN: &str = env!("CARGO_BIN_EXE_spinscope");

/// Everything `args` wrote to the terminal, run under `script` on a 100x30 pty.
fn on_pty(args: &str) -> Option<String> {
    let script = match which("script") {
        Some(s) => s,
        None => {
            mariadb::skip_reason("progress_pty", Some("no `script` (util-linux)".into()))?;
            return None;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("pty.log");
    let out = Command::new(script)
        .args(["-qfec", &format!("stty cols 100 rows 30; {BIN} {args}")])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned())
}

/// The bar was drawn (prefix, position and the clear-line sequence), never wrapped (no
/// cursor-up: a one-line bar needs none) and was cleared before `last`, the final line.
fn check_bar(tty: &str, prefix: &str, last: &str) {
    assert!(tty.contains(&format!("{prefix} [")), "no bar:\n{tty}");
    assert!(tty.contains("\x1b[2K"), "bar never redrawn:\n{tty}");
    assert!(
        !tty.contains("\x1b[1A"),
        "the bar wrapped to a second line:\n{tty}"
    );
    let end = tty
        .rfind(last)
        .unwrap_or_else(|| panic!("no {last:?}:\n{tty}"));
    let after_bar = tty.rfind(&format!("{prefix} [")).unwrap();
    assert!(after_bar < end, "a bar drawn after the end line:\n{tty}");
    for line in tty.split(['\r', '\n']) {
        let text = line.replace("\x1b[2K", "");
        assert!(
            text.chars().count() <= 100 || !text.starts_with(prefix),
            "{text}"
        );
    }
}

/// Plain progress: no escape sequence, no line twice.
fn check_plain(stderr: &str) {
    assert!(
        !stderr.contains('\x1b'),
        "escape sequences off a terminal:\n{stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    let mut seen = std::collections::HashSet::new();
    for l in &lines {
        assert!(seen.insert(*l), "line repeated: {l}\n{stderr}");
    }
}

#[test]
fn lab_bar_on_a_terminal_lines_elsewhere() {
    // 8 runs of 300 ms: over the 2 s from which progress is shown.
    let args = "lab --latch innodb57 --threads 2 --duration 300ms --repeat 8";
    let Some(tty) = on_pty(args) else { return };
    assert!(
        tty.contains("spinscope lab: 8 runs of 300 ms, about 2 s"),
        "{tty}"
    );
    check_bar(&tty, "lab", "innodb57");
    let out = Command::new(BIN).args(args.split(' ')).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    check_plain(&err);
    assert!(err.contains("spinscope lab: 8/8 runs"), "{err}");
}

#[test]
fn sweep_prepare_bar_and_plain_lines() {
    if mariadb::skip_reason("progress_pty", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&["--innodb-flush-log-at-trx-commit=0"]);
    let sock = db.socket.display().to_string();
    let args = format!(
        "sweep prepare --no-defaults -S {sock} -u root --tables 2 --table-size 60000 --load-threads 1"
    );
    let Some(tty) = on_pty(&args) else { return };
    assert!(tty.contains("rows"), "{tty}");
    check_bar(
        &tty,
        "sweep prepare",
        "spinscope sweep prepare: prepared `spinscope`",
    );
    let out = Command::new(BIN).args(args.split(' ')).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    check_plain(&err);
    assert!(
        err.starts_with("spinscope sweep prepare: loading 2 tables x 60000 rows"),
        "{err}"
    );
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("spinscope sweep prepare: prepared `spinscope`: 2 tables x 60000 rows in"),
        "{err}"
    );
    // The start, at most one line per 10 s, the end: a short load prints few lines.
    assert!(err.lines().count() <= 6, "{err}");
}
