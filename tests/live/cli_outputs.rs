//! Outputs are checked before any work: a path that cannot be written is bad input (exit 2,
//! one line naming the flag) before a probe, a lab run, a sweep or a tune starts, so a bad
//! path never loses a finished run. A closed stdout ends quietly (exit 0, no panic text) for
//! the commands `cli_misc` does not cover.

use crate::common;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("MYSQL_PWD")
        .stdin(Stdio::null());
    c
}

/// A path whose parent is a regular file: not writable by anyone, root included.
const BAD: &str = "Cargo.toml/out.json";

#[test]
fn a_bad_output_path_is_refused_before_the_work() {
    // Each of these would run for tens of seconds (or need a server: port 1 refuses) if the
    // path were checked after the work.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["probe", "--batches", "1000000", "--save", BAD],
            "--save",
        ),
        (
            vec![
                "lab",
                "--latch",
                "futex",
                "--threads",
                "2",
                "--duration",
                "20s",
                "--charts",
                BAD,
            ],
            "--charts",
        ),
        (
            vec!["sweep", "run", "-h", "127.0.0.1", "-P", "1", "--save", BAD],
            "--save",
        ),
        (
            vec!["sweep", "run", "-h", "127.0.0.1", "-P", "1", "--csv", BAD],
            "--csv",
        ),
        (
            vec!["sweep", "run", "-h", "127.0.0.1", "-P", "1", "--html", BAD],
            "--html",
        ),
        (
            vec![
                "sweep",
                "run",
                "-h",
                "127.0.0.1",
                "-P",
                "1",
                "--charts",
                BAD,
            ],
            "--charts",
        ),
        (
            vec!["tune", "-h", "127.0.0.1", "-P", "1", "--save", BAD],
            "--save",
        ),
        (
            vec![
                "doctor",
                "-h",
                "127.0.0.1",
                "-P",
                "1",
                "--save-snapshot",
                BAD,
            ],
            "--save-snapshot",
        ),
    ];
    for (args, flag) in cases {
        let t = Instant::now();
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag) && err.contains("Cargo.toml/out.json"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
}

/// Every chart file is checked before the run, not only the directory: one name taken by a
/// directory refuses a 20 s lab run (and a sweep) at once, and nothing is written.
#[test]
fn a_chart_name_taken_by_a_directory_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let charts = dir.path().join("charts");
    // Names the runs below would write: lab's second pause scale, sweep's p99 chart.
    std::fs::create_dir_all(charts.join("lab_p99_k14.svg")).unwrap();
    std::fs::create_dir_all(charts.join("p99.svg")).unwrap();
    let c = charts.to_str().unwrap();
    let lab = [
        "lab",
        "--latch",
        "futex",
        "--threads",
        "2",
        "--duration",
        "20s",
        "--compare-pause-scale",
        "1,14",
        "--charts",
        c,
    ];
    let sweep = ["sweep", "run", "-h", "127.0.0.1", "-P", "1", "--charts", c];
    for (args, name) in [(&lab[..], "lab_p99_k14.svg"), (&sweep[..], "p99.svg")] {
        let t = Instant::now();
        let out = bin().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--charts") && err.contains(name) && err.contains("is a directory"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{args:?} took {:?}",
            t.elapsed()
        );
    }
    let written: Vec<_> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(written.len(), 2, "{written:?}");
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let perf = "tests/fixtures/perf/mariadb/mariadbd-cpu-clock-g.perf";
    let runs: [&[&str]; 7] = [
        &["probe"],
        &["spin", "--server", "8.0.36", "--cpu", "skylake-sp"],
        &["spin", "--cpu", "list"],
        &["profile", "--perf-script", perf, "--json"],
        &[
            "lab",
            "--latch",
            "futex",
            "--threads",
            "2",
            "--duration",
            "20ms",
            "--repeat",
            "1",
            "--json",
        ],
        &["report", "tests/fixtures/report/sweep.json"],
        &[
            "report",
            "tests/fixtures/report/doctor.json",
            "--format",
            "md",
        ],
    ];
    for args in runs {
        let (code, err) = common::with_closed_stdout(args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        // A probe on a host too busy for a figure says so and exits 3 (its documented refusal).
        let busy = args[0] == "probe" && code == Some(3) && err.contains("too busy");
        assert!(code == Some(0) || busy, "{args:?}: {code:?} {err}");
    }
}
