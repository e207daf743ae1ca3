//! CLI tests of `spinscope probe` on this machine, and of its file as `spin` and `doctor` read
//! it back. The figures are this CPU's own, so the tests check their consistency (ticks, ns
//! and the counter rate agree; the summary is the series' median; the MariaDB rule follows
//! from the measured ticks), not fixed values.

use assert_cmd::Command;
use proptest::prelude::*;
use spinscope::cpu::{parse_probe, ProbeReport, SCHEMA};
use spinscope::doctor::DoctorDoc;
use spinscope::spin::doc::SpinReport;

fn bin() -> Command {
    Command::cargo_bin("spinscope").unwrap()
}

/// The probe's document. On a host too busy for a figure the probe exits 3 with
/// `"valid": false`, a reason in the document and one line on stderr; both are accepted here,
/// and nothing else.
fn probe_json(args: &[&str]) -> ProbeReport {
    let out = bin()
        .arg("probe")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let r: ProbeReport =
        serde_json::from_slice(&out.stdout).expect("probe --json is a spinscope.probe/1 document");
    match out.status.code() {
        Some(0) => assert!(r.valid && r.invalid_reason.is_none(), "{err}"),
        Some(3) => {
            assert!(!r.valid, "exit 3 only for an invalid probe: {err}");
            let why = r
                .invalid_reason
                .as_deref()
                .expect("an invalid probe says why");
            assert!(err.contains("no figure") && err.contains(why), "{err}");
        }
        c => panic!("probe exited {c:?}: {err}"),
    }
    r
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs())
}

#[test]
fn json_is_self_consistent() {
    let r = probe_json(&["--batches", "200"]);
    assert_eq!(r.schema, SCHEMA);
    assert!(!r.measurements.is_empty());
    let m = &r.measurements[0];
    assert!(
        m.batches >= 100,
        "most of 200 batches are usable: {}",
        m.batches
    );
    assert!(m.ticks_per_hint.min <= m.ticks_per_hint.median);
    assert!(m.ticks_per_hint.median <= m.ticks_per_hint.max);
    // ns = ticks / GHz, batch by batch, so the medians agree too, and so do the figures.
    assert!(close(
        m.ns_per_hint.median,
        m.ticks_per_hint.median / r.counter.ghz,
        1e-9
    ));
    assert!(close(m.figure_ns(), m.figure_ticks() / r.counter.ghz, 1e-9));
    assert!(close(
        r.summary.ns_per_hint * r.counter.ghz,
        r.summary.ticks_per_hint,
        1e-9
    ));
    // The figure is the lower quartile of the groups' medians: within the batches' range. When
    // the core clock moved between groups, the figure is taken in core cycles and given at the
    // fast clock, so it may sit outside the tick range by at most the clock's spread.
    assert!(m.groups >= 1 && m.attempts >= 1);
    let moved = 1.0 + m.clock_spread_pct.unwrap_or(0.0).max(0.0) / 100.0;
    assert!(
        m.figure_ticks() >= m.ticks_per_hint.min / moved * (1.0 - 1e-9)
            && m.figure_ticks() <= m.ticks_per_hint.max * moved * (1.0 + 1e-9),
        "figure {} outside [{}, {}] with the clock moving {:?}%",
        m.figure_ticks(),
        m.ticks_per_hint.min,
        m.ticks_per_hint.max,
        m.clock_spread_pct
    );
    assert!(
        r.counter.ghz > 0.01 && r.counter.ghz < 20.0,
        "{}",
        r.counter.ghz
    );
    // One CPU measured: the summary is that series' figure.
    assert_eq!(r.summary.ns_per_hint, m.figure_ns());
    assert!(r.summary.ns_per_hint > 0.0 && r.summary.ns_per_hint < 10_000.0);
    // Cycles are either measured or explained, never both missing.
    assert!(m.core_cycles_per_hint.is_some() || m.cycles_note.is_some());
    assert!(r.topology.threads >= 1 && r.topology.cores >= 1);
    assert!(r.host.kernel_release.is_some());
    if cfg!(target_arch = "x86_64") {
        let rule = &r.mariadb_rule;
        assert!(rule.applies);
        assert_eq!(rule.chose_100 + rule.chose_200, rule.trials);
        assert!(rule.multiplier == 100 || rule.multiplier == 200);
        let med = rule.median_ticks_per_pause.unwrap();
        // Far from the threshold, the majority must follow the measured ticks.
        if med > 40.0 {
            assert_eq!(rule.multiplier, 100, "{rule:?}");
        } else if med < 20.0 {
            assert_eq!(rule.multiplier, 200, "{rule:?}");
        }
    }
}

#[test]
fn table_names_the_hint_the_baseline_and_mariadbs_rule() {
    let out = bin().args(["probe", "--batches", "100"]).output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(3) {
        // Too busy: the answer line is replaced by the reason, never a number.
        assert!(s.contains("no figure:") && !s.contains("here takes"), "{s}");
        return;
    }
    assert_eq!(out.status.code(), Some(0));
    for needle in [
        "cpu ",
        "topology",
        "counter",
        "ticks/hint",
        "baseline",
        "MariaDB",
    ] {
        assert!(s.contains(needle), "table lacks {needle:?}:\n{s}");
    }
}

#[test]
fn every_cpu_and_the_smt_load_are_accounted_for() {
    // `all` means every CPU this process may run on (its affinity mask).
    let allowed =
        spinscope::cpu::measure::cpus_in(&spinscope::cpu::measure::get_affinity().unwrap());
    let r = probe_json(&["--cpus", "all", "--smt-load", "--batches", "50"]);
    let mut idle: Vec<usize> = r
        .measurements
        .iter()
        .filter(|m| m.smt_sibling_busy.is_none())
        .map(|m| m.cpu)
        .collect();
    idle.dedup();
    assert_eq!(idle, allowed, "one idle series per CPU");
    // Every CPU has a loaded series, or a note says why not.
    for cpu in idle {
        let loaded = r
            .measurements
            .iter()
            .any(|m| m.cpu == cpu && m.smt_sibling_busy.is_some());
        let noted = r
            .notes
            .iter()
            .any(|n| n.contains("--smt-load") && n.contains(&format!("CPU {cpu}")));
        assert!(loaded || noted, "CPU {cpu}: {:?}", r.notes);
    }
}

#[test]
fn saved_probe_drives_spin_and_doctor() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.json");
    let out = bin()
        .args(["probe", "--batches", "100", "--save"])
        .arg(&file)
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        // Too busy for a figure: the file is saved, marked invalid, and refused by spin.
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(parse_probe(&text).unwrap_err().contains("no figure"));
        let out = bin()
            .args(["spin", "--server", "8.0.36", "--probe"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        return;
    }
    assert_eq!(out.status.code(), Some(0));
    let saved = parse_probe(&std::fs::read_to_string(&file).unwrap()).unwrap();

    let out = bin()
        .args(["spin", "--server", "8.0.36", "--json", "--probe"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: SpinReport = serde_json::from_slice(&out.stdout).unwrap();
    let v = serde_json::to_value(&s).unwrap();
    let text = v.to_string();
    assert!(text.contains("probe.json"), "spin names the probe file");
    assert!(
        text.contains(&saved.summary.ns_per_hint.to_string()),
        "spin prices with the saved ns per hint {}",
        saved.summary.ns_per_hint
    );

    let snap = format!(
        "{}/tests/fixtures/snapshots/mysql57_synthetic_wait_cells_remote.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = bin()
        .args(["doctor", "--snapshot", &snap, "--json", "--host-facts"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).unwrap();
    let host = d.host.expect("host facts from the probe");
    assert_eq!(host.ns_per_hint, Some(saved.summary.ns_per_hint));
    assert!(d.cpu_model.unwrap().contains("probe.json"));
}

#[test]
fn bad_input_exits_2_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--cpus".into(), "99999".into()], "--cpus"),
        (vec!["--cpus".into(), "zero".into()], "--cpus"),
        (vec!["--cpus".into(), "3-1".into()], "--cpus"),
        (vec!["--batches".into(), "1".into()], "--batches"),
        (
            vec![
                "--save".into(),
                dir.path().join("no/such/dir/p.json").display().to_string(),
            ],
            "--save",
        ),
    ];
    for (args, needle) in cases {
        let out = bin().arg("probe").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"));
    }
    // A probe file of the wrong kind, for doctor.
    let wrong = dir.path().join("wrong.json");
    std::fs::write(&wrong, r#"{"schema":"spinscope.probe/1","summary":{}}"#).unwrap();
    let snap = format!(
        "{}/tests/fixtures/snapshots/mysql57_synthetic_wait_cells_remote.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = bin()
        .args(["doctor", "--snapshot", &snap, "--host-facts"])
        .arg(&wrong)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("wrong.json") && err.contains("malformed"),
        "{err}"
    );
}

proptest! {
    #[test]
    fn probe_parser_never_panics(s in ".{0,400}") {
        let _ = parse_probe(&s);
    }

    #[test]
    fn probe_parser_never_panics_on_json_like_text(
        s in r#"\{"schema":"spinscope\.probe/1"(,"[a-z_]{1,12}":(\d{1,5}|"[a-z]{0,5}"|null|\{\}|\[\])){0,6}\}"#
    ) {
        prop_assert!(parse_probe(&s).is_err());
    }
}

/// A valid probe is kept as this host's figure, and `spin` without a CPU flag prices with
/// exactly that figure (issue 34 §3: one CPU figure per host, so every command and every run
/// gives the same advice); a second probe adds its figure to the run-to-run spread. A host
/// too busy for a figure keeps nothing: then `spin` says the probe gave none.
#[test]
fn this_hosts_figure_is_kept_and_reused() {
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bin()
            .env("XDG_STATE_HOME", state.path())
            .args(args)
            .output()
            .unwrap()
    };
    let kept = state.path().join("spinscope/host-probe.json");
    let first = run(&["probe", "--json"]);
    if first.status.code() == Some(3) {
        assert!(!kept.exists(), "an invalid probe is not kept");
        return;
    }
    assert_eq!(first.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&first.stderr).contains("kept as this host's CPU figure"));
    let second = run(&["probe", "--json"]);
    let r2: ProbeReport = serde_json::from_slice(&second.stdout).unwrap();
    if r2.valid {
        let spread = r2.runs_on_this_host.expect("two probes of this host");
        assert_eq!(spread.runs, 2);
        assert!(spread.ns_min <= r2.summary.ns_per_hint && r2.summary.ns_per_hint <= spread.ns_max);
    }
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let ns = saved["probe"]["summary"]["ns_per_hint"].as_f64().unwrap();
    // Two runs of spin: the saved figure both times, to the last digit, and the same advice.
    let mut advice = Vec::new();
    for _ in 0..2 {
        let out = run(&[
            "spin",
            "--server",
            "10.11.6-MariaDB",
            "--spin-wait-delay",
            "6000",
            "--match",
            "baseline",
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: SpinReport = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s.this.cpu.ns_per_hint, ns);
        assert!(
            s.this.cpu.label.starts_with("saved probe of this host"),
            "{}",
            s.this.cpu.label
        );
        let a = s.advice.expect("advice for --match");
        // Delay 6000 is thousands of times the design budget on any CPU: something changes.
        assert!(!a.recommendation.set_global.is_empty());
        advice.push(a.recommendation.set_global);
    }
    assert_eq!(advice[0], advice[1]);
}
