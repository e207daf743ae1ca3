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
        .stdout(predicate::str::contains("504 us"))
        .stdout(predicate::str::contains("CPU ratio 12.3x"))
        .stdout(predicate::str::contains("design ratio 12.3x"));
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
    .stdout(predicate::str::contains(
        "unreachable: no legal combination of innodb_spin_wait_delay, innodb_sync_spin_loops",
    ));
    // The closest legal combination is the smallest spin there is: one round of d=1.
    let r = json(&[
        "--server",
        "10.11.19-MariaDB",
        "--cpu",
        "zen4",
        "--target-us",
        "0.5",
    ]);
    let rec = r.advice.unwrap().recommendation;
    assert!(!rec.reachable);
    assert_eq!(
        (rec.settings.spin_wait_delay, rec.settings.sync_spin_loops),
        (1, 1)
    );
}

/// Issue 11: only the delay was searched, so these were called unreachable.
#[test]
fn every_knob_is_searched_and_default_is_offered() {
    // MariaDB 10.11 at 6000 on a 24.6 ns PAUSE, matching the defaults' design budget.
    let r = json(&[
        "--server",
        "10.11.19-MariaDB",
        "--spin-wait-delay",
        "6000",
        "--cpu",
        "zen4",
        "--match",
        "baseline",
    ]);
    // The design budget gets the one design advice (doctor's): the default back (under 3x on
    // Zen 4), and, as the alternative, what the exact search over every knob found.
    let advice = r.advice.unwrap();
    assert_eq!(
        advice.recommendation.set_global,
        vec!["SET GLOBAL innodb_spin_wait_delay = DEFAULT;".to_string()]
    );
    let rec = advice
        .alternative
        .expect("the exact settings as the alternative");
    assert!(rec.reachable, "{}", rec.explanation);
    assert_eq!(
        rec.set_global[0],
        "SET GLOBAL innodb_spin_wait_delay = DEFAULT;"
    );
    assert!(rec.set_global[1].starts_with("SET GLOBAL innodb_sync_spin_loops = "));
    assert_eq!(
        rec.current_vs_default,
        vec!["innodb_spin_wait_delay 6000 is 1500x the default 4".to_string()]
    );
    assert!(rec.set_global.iter().all(|s| s.starts_with("SET GLOBAL")));
    assert!(rec
        .option_file
        .iter()
        .all(|l| !l.contains("SET") && l.contains(" = ")));
    // The help example: Percona 5.7 at 50 us.
    let r = json(&[
        "--server",
        "5.7.26-29-log",
        "--flavor",
        "percona",
        "--cpu",
        "zen4",
        "--target-us",
        "50",
    ]);
    let rec = r.advice.unwrap().recommendation;
    assert!(rec.reachable, "{}", rec.explanation);
    assert_eq!(rec.changes.len(), 1, "{rec:?}");
    // Defaults that meet the target are put back with DEFAULT.
    spin(&[
        "--server",
        "8.0.36",
        "--pause-multiplier",
        "5",
        "--cpu",
        "broadwell",
        "--match",
        "baseline",
    ])
    .success()
    .stdout(predicate::str::contains(
        "SET GLOBAL innodb_spin_wait_pause_multiplier = DEFAULT;",
    ))
    .stdout(predicate::str::contains(
        "innodb_spin_wait_pause_multiplier 5 is 1/10.0 the default 50",
    ));
}

/// One meaning per ratio: the design ratio and the CPU ratio are both stated and labelled.
#[test]
fn design_ratio_and_cpu_ratio_are_labelled() {
    let out = spin(&[
        "--server",
        "10.11.19-MariaDB",
        "--spin-wait-delay",
        "6000",
        "--cpu",
        "zen4",
    ])
    .success();
    let s = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(s.contains("design ratio 4062x"), "{s}");
    assert!(s.contains("CPU ratio 2.7x"), "{s}");
    let r = json(&[
        "--server",
        "10.11.19-MariaDB",
        "--spin-wait-delay",
        "6000",
        "--cpu",
        "zen4",
    ]);
    let d = r.vs_design.ratio.unwrap();
    assert!((d - 4062.0).abs() < 1.0, "{d}");
    assert!((r.comparison.ratio.unwrap() - 2.706).abs() < 0.01);
    // Pricing the defaults says so.
    spin(&["--server", "8.0.36", "--cpu", "zen4"])
        .success()
        .stdout(predicate::str::contains(
            "these are the defaults of MySQL 8.0.36, not a live server's settings",
        ));
}

/// `spin --snapshot` prices the settings and the CPU recorded by doctor.
#[test]
fn snapshot_settings_are_priced() {
    let f = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/snapshots/mariadb1011_delay6000.json"
    );
    let r = json(&["--snapshot", f]);
    assert_eq!(r.settings.spin_wait_delay, 6000);
    assert!(
        r.settings_source.starts_with("snapshot "),
        "{}",
        r.settings_source
    );
    assert_eq!(
        r.settings_given,
        vec!["innodb_spin_wait_delay", "innodb_sync_spin_loops"]
    );
    assert!(r.vs_design.ratio.unwrap() > 1000.0);
    // Connection flags without --from-server are refused.
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["spin", "--server", "8.0.36", "-u", "root", "--cpu", "zen4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("need --from-server"));
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
