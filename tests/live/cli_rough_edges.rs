//! Rough edges of issue 29, each a clear one-line answer: `spin` without a source names all
//! three, a unit written apart from its number is refused, `doctor --enable-instruments` on a
//! server without performance_schema says so and what to do.

use crate::common;
use std::process::Command;

use common::mariadb::{available, skip_reason, MariaDb};

fn spinscope(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn spin_without_a_source_names_all_three() {
    for args in [&["spin"][..], &["spin", "--cpu", "skylake-sp"]] {
        let (code, out, err) = spinscope(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        for src in ["--server VERSION", "--from-server", "--snapshot FILE"] {
            assert!(err.contains(src), "{args:?}: {src} not named: {err}");
        }
    }
    // `--cpu list` still needs none.
    let (code, out, _) = spinscope(&["spin", "--cpu", "list"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("skylake-sp"));
}

#[test]
fn a_unit_apart_from_its_number_is_refused() {
    for (args, fix) in [
        (
            &["doctor", "-S", "/nonexistent.sock", "--window", "10", "sec"][..],
            "--window 10s",
        ),
        (
            &[
                "doctor",
                "--window=10",
                "seconds",
                "-S",
                "/nonexistent.sock",
            ],
            "--window 10s",
        ),
        (&["lab", "--duration", "200", "ms"], "--duration 200ms"),
    ] {
        let (code, _, err) = spinscope(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("without the space") && err.trim_end().ends_with(fix),
            "{err}"
        );
    }
    // Units attached, and a server word after a bare number, are untouched (the unreachable
    // socket is a runtime failure, exit 3, not a refusal of the command line).
    let (code, _, err) = spinscope(&["doctor", "--window", "1s", "-S", "/nonexistent.sock"]);
    assert_eq!(code, Some(3), "{err}");
}

#[test]
fn enable_instruments_without_performance_schema_says_so() {
    if skip_reason(
        "enable_instruments_without_performance_schema",
        available().err(),
    )
    .is_some()
    {
        return;
    }
    let db = MariaDb::start(&["--performance-schema=OFF"]);
    let sock = db.socket.display().to_string();
    let (code, _, err) = spinscope(&[
        "doctor",
        "--no-defaults",
        "-u",
        "root",
        "-S",
        &sock,
        "--window",
        "1s",
        "--enable-instruments",
    ]);
    assert!(matches!(code, Some(0 | 1)), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("--enable-instruments"))
        .unwrap_or_else(|| panic!("nothing said about --enable-instruments: {err}"));
    assert!(
        line.contains("performance_schema is OFF") && line.contains("performance_schema=ON"),
        "{line}"
    );
}
