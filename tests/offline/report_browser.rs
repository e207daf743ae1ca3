//! The report page in a real browser: chromium renders a report built from real documents
//! (tests/fixtures/report/: probe, spin, doctor, sweep, profile, lab, tune as the commands saved them,
//! plus a doctor snapshot and an input that is not a document); every section and chart must be
//! in the DOM, no script may fail. Fails (not skips) under CI when chromium is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn browser(dir: &Path, args: &[&str], page: &Path) -> (String, String) {
    let out = Command::new(chromium().unwrap())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_renders_in_chromium_with_every_section_and_chart() {
    if chromium().is_none() {
        // As tests/common/mariadb.rs skip_reason: fail unless SPINSCOPE_SKIP_MISSING is set.
        assert!(
            std::env::var_os("CI").is_none()
                && std::env::var_os("SPINSCOPE_SKIP_MISSING").is_some_and(|v| v != "0"),
            "chromium is missing (apt-get install chromium); or set SPINSCOPE_SKIP_MISSING=1"
        );
        eprintln!(
            "\n!!! SKIPPING report_browser: no chromium (SPINSCOPE_SKIP_MISSING is set) !!!\n"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let inputs = [
        "tests/fixtures/report/probe.json",
        "tests/fixtures/report/spin.json",
        "tests/fixtures/report/doctor.json",
        "tests/fixtures/snapshots/mariadb1011_delay6000.json",
        "tests/fixtures/report/sweep.json",
        "tests/fixtures/report/profile.json",
        "tests/fixtures/report/lab.json",
        "tests/fixtures/report/tune.json",
        "Cargo.toml",
    ];
    let out = assert_cmd::Command::cargo_bin("spinscope")
        .unwrap()
        .arg("report")
        .args(inputs.iter().map(|i| fixture(i)))
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("http://cdn") && !html.contains("src=\"http"),
        "the page must load nothing"
    );

    let (dom, log) = browser(dir.path(), &["--dump-dom"], &page);
    for title in ["Verdict", "Details: ", "Not included"] {
        assert!(
            dom.contains(&format!("<h2>{title}")),
            "part {title:?} missing from the DOM"
        );
    }
    for title in [
        "Probe: ",
        "Spin budget: ",
        "Doctor: ",
        "Sweep: ",
        "Profile",
        "Lab: ",
        "Tune: ",
    ] {
        assert!(
            dom.contains(&format!("<h3>{title}")),
            "section {title:?} missing from the DOM"
        );
    }
    assert_eq!(
        dom.matches("class=\"doc\"").count(),
        8,
        "eight documents rendered"
    );
    assert!(
        dom.contains("Cargo.toml") && dom.contains("not a JSON document"),
        "the non-document is named"
    );
    for chart in [
        "sweep throughput",
        "sweep p99",
        "flame graph",
        "lab_throughput_k1.svg",
        "lab_p99_k1.svg",
        "lab_cpu_per_op_k1.svg",
        "tune_innodb_spin_wait_delay",
        "tune_innodb_sync_spin_loops",
    ] {
        assert!(
            dom.contains(&format!("data-name=\"{chart}\"")),
            "chart {chart} missing"
        );
    }
    assert!(dom.matches("<svg").count() >= 6, "inline SVGs rendered");
    // The page's error recorder sets data-js-error="..." on <html> (its own source names the
    // attribute without the "=").
    let js_error = dom
        .find("data-js-error=")
        .map(|i| dom[i..].chars().take(300).collect::<String>());
    assert!(js_error.is_none(), "script error in the page: {js_error:?}");
    assert!(
        !log.contains("Uncaught"),
        "script error in the console: {log}"
    );

    let shot = dir.path().join("report.png");
    let _ = browser(
        dir.path(),
        &[
            "--window-size=1200,2400",
            &format!("--screenshot={}", shot.display()),
        ],
        &page,
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "screenshot {} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("REPORT_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

#[test]
fn unreadable_and_unknown_inputs_are_listed_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("odd.json");
    std::fs::write(
        &odd,
        r#"{"schema":"spinscope.nothing/9","x":"<script>alert(1)</script>"}"#,
    )
    .unwrap();
    let out = assert_cmd::Command::cargo_bin("spinscope")
        .unwrap()
        .arg("report")
        .arg(&odd)
        .arg(dir.path().join("missing.json"))
        .arg(fixture("tests/fixtures/report/doctor.json"))
        .args(["--format", "md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# spinscope report\n\n## Verdict\n"), "{md}");
    assert!(
        md.contains("## Not included")
            && md.contains("unknown schema")
            && md.contains("cannot read"),
        "{md}"
    );
    assert!(
        md.contains("\n| severity | rule | finding | evidence |\n|---|---|---|---|\n"),
        "{md}"
    );
    assert!(!md.contains("<script>"), "{md}");
}
