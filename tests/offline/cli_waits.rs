//! A saved wait document through the CLI, without a server: `doctor --snapshot ... --waits FILE`
//! follows its measured direction with its numbers and refuses a document of another server
//! in one line; doctor and tune refuse a file that is not a wait document before connecting;
//! `profile --waits --pprof` refuses its own input as output. Fixtures: tests/fixtures/waits/
//! (README there says how they were made).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use spinscope::doctor::{DoctorDoc, Severity};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(args)
        .env_remove("COLUMNS")
        .current_dir(root())
        .output()
        .unwrap()
}

fn doctor(waits: &str, extra: &[&str]) -> Output {
    let snap = fixture("snapshots/mariadb1011_delay6000.json");
    let w = fixture(&format!("waits/{waits}"));
    let mut args = vec![
        "doctor",
        "--no-defaults",
        "--snapshot",
        snap.to_str().unwrap(),
        "--waits",
        w.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// Exit 2 and one line on stderr holding `needle`.
fn refused(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{needle}: {err}");
}

#[test]
fn doctor_follows_the_wait_document_of_its_server() {
    let out = doctor("waits-d6000-vm.json", &["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).unwrap();
    let w: spinscope::profile::waits::WaitDoc =
        serde_json::from_slice(&std::fs::read(fixture("waits/waits-d6000-vm.json")).unwrap())
            .unwrap();
    let f = d
        .findings
        .iter()
        .find(|f| f.id == "spin-budget")
        .expect("the spin-budget finding");
    // The document measured spin less, as the design ratio at delay 6000 says: the design's
    // fix stands, with the measured numbers beside it.
    assert_eq!(
        w.advice.direction,
        spinscope::profile::waits::advice::Direction::Less
    );
    assert!(f.severity >= Severity::Warning);
    assert!(f
        .statements
        .iter()
        .all(|s| s.contains("innodb_spin_wait_delay")));
    let spin = f
        .evidence
        .iter()
        .find(|e| e.name == "waits_spin_cpu")
        .expect("the measured spin CPU");
    assert_eq!(spin.value, w.spin_cpu_seconds_per_s);
    assert!(f.why.contains("waits-d6000-vm.json"), "{}", f.why);
    // The text report says the same.
    let text = String::from_utf8(doctor("waits-d6000-vm.json", &[]).stdout).unwrap();
    assert!(text.contains("measured waits point the same way"), "{text}");
}

#[test]
fn a_wait_document_of_another_server_is_refused() {
    refused(
        &doctor("waits-d6000-otherhost.json", &[]),
        "recorded from pid 10769 on db-other, but the server doctor read runs on host vm",
    );
    // Not a wait document at all: a doctor snapshot given as one.
    let snap = "tests/fixtures/snapshots/mariadb1011_live.json";
    refused(
        &run(&[
            "doctor",
            "--no-defaults",
            "--snapshot",
            snap,
            "--waits",
            snap,
        ]),
        "not spinscope.profile-waits/1",
    );
    // tune reads it before connecting: no server is needed to refuse it.
    refused(
        &run(&[
            "tune",
            "--no-defaults",
            "--socket",
            "/nonexistent/spinscope.sock",
            "--waits",
            snap,
        ]),
        "--waits tests/fixtures/snapshots/mariadb1011_live.json",
    );
}

#[test]
fn profile_waits_pprof_refuses_its_input_as_output() {
    let script = "tests/fixtures/perf/waits/mariadbd-waits-d4-l1.perf";
    let out = run(&[
        "profile",
        "--waits",
        "--perf-script",
        script,
        "--pprof",
        script,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--pprof"), "{err}");
}
