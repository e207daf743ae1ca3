//! Consistent flags and progress (issue 13 §3-4): every duration flag (value name DURATION in
//! any command's help) takes units and refuses junk with exit 2 and one line; the old flag
//! names still parse; enums list their possible values; progress on a non-terminal stderr is
//! a few plain lines (lab, and doctor's window against a throwaway MariaDB), never one per run.

use crate::common;
use std::process::Command;

use clap::{CommandFactory, Parser};
use spinscope::cli::{Cli, Command as Sub};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.env_remove("MYSQL_PWD");
    c
}

/// Every (command words, --flag) whose value is a DURATION, found by walking the clap tree.
fn duration_flags() -> Vec<(Vec<String>, String)> {
    fn walk(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
        for a in c.get_arguments() {
            let dur = a
                .get_value_names()
                .is_some_and(|v| v.iter().any(|n| n.as_str() == "DURATION"));
            if let (true, Some(l)) = (dur, a.get_long()) {
                out.push((path.clone(), format!("--{l}")));
            }
        }
        for s in c.get_subcommands() {
            path.push(s.get_name().to_string());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &mut Vec::new(), &mut out);
    out
}

#[test]
fn the_known_duration_flags_are_all_durations() {
    let all = duration_flags();
    let has = |cmd: &str, flag: &str| {
        all.iter()
            .any(|(p, f)| p.join(" ") == cmd && f.as_str() == flag)
    };
    for (cmd, flag) in [
        ("doctor", "--window"),
        ("lab", "--duration"),
        ("lab", "--cs-ns"),
        ("lab", "--think-ns"),
        ("lab", "--budget-ns"),
        ("tune", "--budget"),
        ("sweep run", "--warmup"),
        ("sweep run", "--duration"),
        ("sweep run", "--report-interval"),
        ("profile", "--duration"),
        ("tune", "--warmup"),
        ("tune", "--duration"),
        ("watch", "--history"),
        ("watch", "--after"),
        ("watch", "--cooldown"),
        ("watch", "--max-age"),
        ("watch", "--profile-duration"),
        ("watch", "--duration"),
    ] {
        assert!(has(cmd, flag), "{cmd} {flag} is not a DURATION: {all:?}");
    }
}

#[test]
fn every_duration_flag_takes_units() {
    for (path, flag) in duration_flags() {
        for v in ["2m", "500ms", "10s", "1.5s", "3"] {
            let mut argv = vec!["spinscope".to_string()];
            argv.extend(path.iter().cloned());
            if path == ["profile"] {
                argv.extend(["--pid".into(), "1".into()]);
            }
            argv.push(format!("{flag}={v}"));
            if let Err(e) = Cli::try_parse_from(&argv) {
                panic!("{argv:?} does not parse: {e}");
            }
        }
    }
}

#[test]
fn every_duration_flag_refuses_junk_with_exit_2_and_one_line() {
    let flags = duration_flags();
    assert!(flags.len() >= 18, "{flags:?}");
    for (path, flag) in flags {
        for junk in ["ten", "10x", "1..2s", "inf"] {
            let out = bin()
                .args(&path)
                .arg(format!("{flag}={junk}"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{path:?} {flag}={junk}: {err}");
            assert_eq!(err.lines().count(), 1, "{path:?} {flag}={junk}: {err}");
            assert!(err.starts_with("spinscope: error: "), "{err}");
            assert!(
                err.contains(flag.as_str()) && err.contains("like 10s, 500ms"),
                "{err}"
            );
        }
    }
}

#[test]
fn units_mean_what_they_say_and_bare_numbers_keep_their_old_unit() {
    let p = |argv: &[&str]| Cli::try_parse_from(argv).unwrap().command;
    match p(&["spinscope", "doctor", "--window", "2m"]) {
        Sub::Doctor(a) => assert_eq!(a.window, 120.0),
        _ => unreachable!(),
    }
    match p(&["spinscope", "doctor", "--window", "7"]) {
        Sub::Doctor(a) => assert_eq!(a.window, 7.0),
        _ => unreachable!(),
    }
    match p(&[
        "spinscope",
        "lab",
        "--duration",
        "250ms",
        "--cs-ns",
        "2us",
        "--think-ns",
        "300",
    ]) {
        Sub::Lab(a) => {
            assert_eq!(a.duration, 0.25);
            assert_eq!(a.cs_ns, 2000);
            assert_eq!(a.think_ns, 300);
        }
        _ => unreachable!(),
    }
    match p(&["spinscope", "watch", "--max-age", "36h", "--cooldown", "90"]) {
        Sub::Watch(a) => {
            assert_eq!(a.max_age_days, 1.5);
            assert_eq!(a.cooldown, 90.0);
        }
        _ => unreachable!(),
    }
}

#[test]
fn old_flag_names_still_parse_and_mean_the_same() {
    let Sub::Lab(a) = Cli::try_parse_from([
        "spinscope",
        "lab",
        "--duration-ms",
        "40",
        "--repeats",
        "2",
        "--svg-dir",
        "d",
        "--threads",
        "1,3",
    ])
    .unwrap()
    .command
    else {
        unreachable!()
    };
    let p = spinscope::cli::lab::plan(&a, 4).unwrap();
    assert_eq!((p.duration_ms, p.repeats), (40, 2));
    assert_eq!(p.threads, vec![1, 3]);
    assert_eq!(a.charts.as_deref(), Some(std::path::Path::new("d")));
    let Sub::Watch(w) = Cli::try_parse_from([
        "spinscope",
        "watch",
        "--max-age-days",
        "2",
        "--profile-seconds",
        "0",
    ])
    .unwrap()
    .command
    else {
        unreachable!()
    };
    assert_eq!((w.max_age_days, w.profile_seconds), (2.0, 0.0));
    // Hidden: the help names one flag per concept.
    let out = bin().args(["lab", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for old in ["--duration-ms", "--repeats", "--svg-dir"] {
        assert!(!help.contains(old), "{old} shown in lab --help");
    }
}

#[test]
fn lab_threads_take_a_ladder_and_enums_list_their_values() {
    let Sub::Lab(a) = Cli::try_parse_from([
        "spinscope",
        "lab",
        "--threads",
        "1..16:x2",
        "--latch",
        "mcs",
    ])
    .unwrap()
    .command
    else {
        unreachable!()
    };
    let p = spinscope::cli::lab::plan(&a, 4).unwrap();
    assert_eq!(p.threads, vec![1, 2, 4, 8, 16]);
    for (cmd, needle) in [
        (&["lab", "--help"][..], "parking-lot"),
        (&["tune", "--help"][..], "point-select"),
        (&["report", "--help"][..], "[possible values: html, md]"),
    ] {
        let out = bin().args(cmd).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains(needle), "{cmd:?}: {help}");
    }
    let out = bin().args(["lab", "--latch", "spinny"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("possible values") && err.contains("time-budget"),
        "{err}"
    );
    let out = bin().args(["tune", "--workload", "oltp"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Lines of progress a run of `runs` runs printed on a non-terminal stderr.
fn progress_lines(err: &str, prefix: &str) -> usize {
    err.lines().filter(|l| l.starts_with(prefix)).count()
}

#[test]
fn lab_progress_on_a_pipe_is_a_few_plain_lines() {
    // 2 latches x 3 thread counts x 4 repeats = 24 runs of 100 ms: about 2.4 s.
    let out = bin()
        .args(["lab", "--latch", "futex,mcs", "--threads", "1..4:x2"])
        .args(["--duration", "100ms", "--repeat", "4", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("spinscope lab: 24 runs of 100 ms, about 2 s"),
        "the estimate comes first: {err}"
    );
    assert!(err.contains("spinscope lab: 1/24 runs: "), "{err}");
    assert!(err.contains("spinscope lab: 24/24 runs: "), "{err}");
    assert!(err.contains(" elapsed, about "), "{err}");
    // One line at the start, the end, and at most one per 10 s in between (the run may be
    // slowed by a loaded machine: allow for 60 s).
    let n = progress_lines(&err, "spinscope lab: ");
    assert!((3..=3 + 6).contains(&n), "{n} lines: {err}");
    assert!(
        !err.contains('\r'),
        "no carriage returns off a terminal: {err:?}"
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is the document");
}

#[test]
fn doctor_window_progress_on_a_pipe() {
    if common::mariadb::skip_reason("doctor window progress", common::mariadb::available().err())
        .is_some()
    {
        return;
    }
    let db = common::mariadb::MariaDb::start(&[]);
    let t = std::time::Instant::now();
    let out = bin()
        .args(["doctor", "--no-defaults", "-u", "root", "-S"])
        .arg(&db.socket)
        .args(["--window", "12s", "--hz", "20", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert!(t.elapsed().as_secs_f64() >= 12.0);
    assert!(
        err.contains("spinscope doctor: sampling for 12 s"),
        "says how long first: {err}"
    );
    // One line at 10 s of the 12 s window, none per sample.
    let n = progress_lines(&err, "spinscope doctor: sampling: ");
    assert_eq!(n, 1, "{err}");
    assert!(err.contains("sampling: 10/12 s, about 2 s left"), "{err}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is the document");
}
