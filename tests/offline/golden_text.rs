//! Golden files of the text reports (tests/golden/text/): doctor from snapshot fixtures, spin
//! from a saved probe and a reference CPU, sweep from a saved sweep document, profile from a
//! perf-script fixture, probe from a saved probe. Every input is a file in tests/fixtures, so
//! the output is stable; a change to a report shows up as a diff here. Regenerate with
//! `UPDATE_GOLDEN=1 cargo test --release --test offline golden_text::` and read the diff.

use crate::common;
use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn golden(name: &str, text: &str) {
    common::golden(&format!("golden/text/{name}"), text);
}

/// The binary's stdout for `args`, run from the crate root (fixture paths are relative, as
/// the reports print them); it must exit `code`. Not a terminal and no `COLUMNS`: doctor's
/// text is wrapped to 80 columns.
fn stdout(args: &[&str], code: i32) -> String {
    stdout_at(args, code, None)
}

/// [`stdout`] with `COLUMNS` set to `columns`.
fn stdout_at(args: &[&str], code: i32, columns: Option<usize>) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.env_remove("COLUMNS");
    if let Some(n) = columns {
        c.env("COLUMNS", n.to_string());
    }
    let out = c.args(args).current_dir(root()).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn doctor_text_reports() {
    for (snap, name) in [
        ("mariadb1011_delay6000", "doctor_mariadb1011_delay6000.txt"),
        ("mariadb1011_live", "doctor_mariadb1011_live.txt"),
        (
            "mysql57_synthetic_wait_cells_remote",
            "doctor_mysql57_wait_cells.txt",
        ),
    ] {
        let file = format!("tests/fixtures/snapshots/{snap}.json");
        let text = stdout(&["doctor", "--snapshot", &file], 0);
        let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(wide.is_empty(), "{name}: lines over 80 columns: {wide:?}");
        golden(name, &text);
    }
}

/// Wrapping only moves line breaks: at 50 and at 200 columns (`COLUMNS`) doctor's text has the
/// same words in the same order, each line within its width; the underlines follow the
/// headings, so they are left out of the comparison.
#[test]
fn doctor_text_wraps_to_columns_and_loses_nothing() {
    let file = "tests/fixtures/snapshots/mariadb1011_delay6000.json";
    let words = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.chars().all(|c| c == '='))
            .flat_map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .collect()
    };
    let narrow = stdout_at(&["doctor", "--snapshot", file], 0, Some(50));
    let wide = stdout_at(&["doctor", "--snapshot", file], 0, Some(200));
    for (cols, t) in [(50, &narrow), (200, &wide)] {
        let over: Vec<&str> = t.lines().filter(|l| l.chars().count() > cols).collect();
        assert!(over.is_empty(), "over {cols} columns: {over:?}");
    }
    assert!(narrow.lines().count() > wide.lines().count());
    // A word longer than 50 columns is cut, so compare the text with spaces removed.
    assert_eq!(
        words(&narrow).concat(),
        words(&wide).concat(),
        "the words differ between 50 and 200 columns"
    );
}

#[test]
fn spin_text_reports() {
    golden(
        "spin_mariadb_probe_delay30.txt",
        &stdout(
            &[
                "spin",
                "--server",
                "10.11.6-MariaDB",
                "--probe",
                "tests/fixtures/report/probe.json",
                "--spin-wait-delay",
                "30",
            ],
            0,
        ),
    );
    golden(
        "spin_mysql8036_skylake_match.txt",
        &stdout(
            &[
                "spin",
                "--server",
                "8.0.36",
                "--cpu",
                "skylake-sp",
                "--match",
                "baseline",
            ],
            0,
        ),
    );
}

#[test]
fn sweep_text_report_from_a_saved_document() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/report/sweep.json")).unwrap();
    let doc: spinscope::report::sweep::SweepDoc = serde_json::from_str(&text).unwrap();
    golden("sweep_report.txt", &spinscope::report::sweep::render(&doc));
    golden("sweep_report.csv", &spinscope::report::sweep::csv(&doc));
}

/// The probe's human report of a saved probe (`probe` itself only prints what it measured).
#[test]
fn probe_text_report_from_a_saved_probe() {
    let path = root().join("tests/fixtures/report/probe.json");
    let doc = spinscope::cpu::load_probe_file(&path).unwrap();
    golden("probe_report.txt", &spinscope::report::probe::render(&doc));
}

/// The build of `/usr/sbin/mariadbd` the captured fixture was recorded from
/// (tests/fixtures/perf/README.md). profile reads the binary a script names (its instruction
/// bytes for spin loops, its unwind table, its build-id for a debug file), so the report of that
/// script depends on which build is installed.
const FIXTURE_BUILD_ID: &str = "439da8d94412de2c7eb3e2c5554bc0f31f438dc3";
const FIXTURE_BINARY: &str = "/usr/sbin/mariadbd";

/// The profile report of the captured script, twice: with the binary it names moved to a path
/// that does not exist (nothing read from any installed file: the same on every machine), and,
/// where the installed server is the build it was recorded from, as recorded (the spin loops
/// found from that build's instruction bytes, its build-id in the debug-file note). Another
/// build has other code at the script's addresses, so the second is skipped there, saying why.
#[test]
fn profile_text_report() {
    let script = "tests/fixtures/perf/mariadb/mariadbd-cpu-clock-g.perf";
    let dir = tempfile::tempdir().unwrap();
    let moved = dir.path().join("no-binary.perf");
    let text = std::fs::read_to_string(root().join(script)).unwrap();
    let from = format!("({FIXTURE_BINARY})");
    assert!(text.contains(&from));
    std::fs::write(
        &moved,
        text.replace(&from, "(/nonexistent/spinscope-fixture/mariadbd)"),
    )
    .unwrap();
    let args = ["profile", "--perf-script", moved.to_str().unwrap()];
    golden("profile_mariadb_cpu_clock_no_binary.txt", &stdout(&args, 0));
    let installed = spinscope::profile::elf::build_id(Path::new(FIXTURE_BINARY))
        .map(|id| spinscope::profile::elf::hex(&id));
    if installed.as_deref() != Some(FIXTURE_BUILD_ID) {
        eprintln!(
            "skipped the recorded build's report: {FIXTURE_BINARY} is {}, not build {FIXTURE_BUILD_ID} the script was recorded from",
            installed.map_or("not installed".to_string(), |id| format!("build {id}"))
        );
        return;
    }
    golden(
        "profile_mariadb_cpu_clock.txt",
        &stdout(&["profile", "--perf-script", script], 0),
    );
}

/// A probe saved on an Intel guest without a PMU (family 6 model 167, 2026-11-26): the figure in
/// core cycles at the clock the dependent-add chain measured.
#[test]
fn probe_text_report_with_the_chain_clock() {
    let path = root().join("tests/fixtures/report/probe_intel_model167_chain.json");
    let doc = spinscope::cpu::load_probe_file(&path).unwrap();
    let text = spinscope::report::probe::render(&doc);
    assert!(
        text.contains("core cycles at the 3.998 GHz the core ran at"),
        "{text}"
    );
    golden("probe_report_chain_clock.txt", &text);
}
