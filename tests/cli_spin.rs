//! CLI tests of `spinscope spin`: output, the JSON contract, and every bad input of the issue.

use assert_cmd::Command;
use predicates::prelude::*;
use spinscope::spin::doc::{SpinReport, SCHEMA};

fn spin(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("spinscope")
        .unwrap()
        .arg("spin")
        .args(args)
        .assert()
}

fn json(args: &[&str]) -> SpinReport {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let out = spin(&a).success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("spin --json is a spinscope.spin/1 document")
}

#[test]
fn table_names_the_server_the_baseline_and_the_ratio() {
    spin(&["--server", "8.0.40", "--cpu", "skylake-sp"])
        .success()
        .stdout(predicate::str::contains("MySQL 8.0.40"))
        .stdout(predicate::str::contains("504.0 us"))
        .stdout(predicate::str::contains("12.3x longer"));
}

#[test]
fn json_round_trip_and_worked_example() {
    let r = json(&[
        "--server",
        "8.0.40",
        "--cpu",
        "skylake-sp",
        "--match",
        "baseline",
    ]);
    assert_eq!(r.schema, SCHEMA);
    assert_eq!(r.this.readings.len(), 1);
    let first = &r.this.readings[0];
    assert_eq!(first.max_spin_hints, 9000.0);
    assert!((first.max_spin_ns - 504_000.0).abs() < 1.0);
    let base = &r.comparison.baseline.readings[0];
    assert!(
        (base.max_spin_ns - 40_909.1).abs() < 1.0,
        "{}",
        base.max_spin_ns
    );
    let m = r
        .advice
        .unwrap()
        .recommendation
        .settings
        .pause_multiplier
        .unwrap();
    assert!((3..=5).contains(&m), "50/14 expected near 3.6, got {m}");
}

#[test]
fn percona_with_explicit_flavor_and_mariadb_inferred() {
    let r = json(&[
        "--server",
        "5.7.26-29-log",
        "--flavor",
        "percona",
        "--pause-ns",
        "10",
    ]);
    assert!(!r.server.flavor_inferred);
    assert_eq!(r.this.readings[0].hints_per_round.max, 250.0);
    let r = json(&[
        "--server",
        "10.11.19-MariaDB-0+deb12u1",
        "--pause-cycles",
        "140",
        "--ghz",
        "2.5",
    ]);
    assert_eq!(
        r.this.readings.len(),
        1,
        "ticks known from cycles: one multiplier"
    );
    assert_eq!(r.this.readings[0].mariadb_multiplier, Some(100));
    assert_eq!(r.this.readings[0].hints_per_round.max, 100.0);
}

#[test]
fn target_that_no_setting_reaches_is_said() {
    spin(&[
        "--server",
        "10.11.19-MariaDB",
        "--cpu",
        "zen4",
        "--target-us",
        "0.5",
    ])
    .success()
    .stdout(predicate::str::contains("no legal setting"));
}

#[test]
fn cpu_list_shows_the_table() {
    spin(&["--server", "8.0.36", "--cpu", "list"])
        .success()
        .stdout(predicate::str::contains("kunpeng-920"));
}

/// Every bad input: one line on stderr naming the input, exit 2.
#[test]
fn bad_inputs_exit_2_with_one_line_naming_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let garbled = dir.path().join("garbled.json");
    std::fs::write(&garbled, "{not json").unwrap();
    let wrong_schema = dir.path().join("wrong.json");
    std::fs::write(&wrong_schema, r#"{"schema":"spinscope.spin/1"}"#).unwrap();
    let missing = dir.path().join("missing.json");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--flavor".into(),
                "oracle".into(),
            ],
            "--flavor",
        ),
        (
            vec![
                "--server".into(),
                "eight".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--server",
        ),
        (
            vec![
                "--server".into(),
                "5.5.62".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--server",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--spin-wait-delay".into(),
                "1001".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--spin-wait-delay",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--pause-multiplier".into(),
                "101".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--pause-multiplier",
        ),
        (
            vec![
                "--server".into(),
                "10.11.6-MariaDB".into(),
                "--pause-multiplier".into(),
                "5".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--pause-multiplier",
        ),
        (
            vec![
                "--server".into(),
                "5.7.44".into(),
                "--pause-multiplier".into(),
                "5".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--pause-multiplier",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--spin-wait-delay".into(),
                "-1".into(),
                "--cpu".into(),
                "zen4".into(),
            ],
            "--spin-wait-delay",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "zen4".into(),
                "--pause-ns".into(),
                "20".into(),
            ],
            "--pause-ns",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--pause-cycles".into(),
                "140".into(),
            ],
            "--ghz",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--pause-ns".into(),
                "0".into(),
            ],
            "--pause-ns",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--pause-ns".into(),
                "NaN".into(),
            ],
            "--pause-ns",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--pause-cycles".into(),
                "140".into(),
                "--ghz".into(),
                "99".into(),
            ],
            "--ghz",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "pentium4".into(),
            ],
            "skylake-sp",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "zen4".into(),
                "--baseline".into(),
                "486".into(),
            ],
            "--baseline",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "zen4".into(),
                "--match".into(),
                "z80".into(),
            ],
            "--match",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "zen4".into(),
                "--target-us".into(),
                "-3".into(),
            ],
            "--target-us",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--cpu".into(),
                "zen4".into(),
                "--target-us".into(),
                "5".into(),
                "--match".into(),
                "baseline".into(),
            ],
            "--match",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--probe".into(),
                garbled.display().to_string(),
            ],
            "garbled.json",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--probe".into(),
                wrong_schema.display().to_string(),
            ],
            "wrong.json",
        ),
        (
            vec![
                "--server".into(),
                "8.0.36".into(),
                "--probe".into(),
                missing.display().to_string(),
            ],
            "missing.json",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::cargo_bin("spinscope")
            .unwrap()
            .arg("spin")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: stderr lacks {needle:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // Our own errors are one line; clap's usage errors add the legal values and a hint.
        if err.starts_with("spinscope: error:") {
            assert_eq!(
                err.trim_end().lines().count(),
                1,
                "{args:?}: one line expected: {err}"
            );
        }
    }
}
