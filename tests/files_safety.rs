//! Issue 24, item 5, through the binary: a symlink planted at any kind of output is refused
//! (exit 2, one line) and its target left untouched; FIFOs as inputs exit 2 at once instead
//! of hanging; an output that is one of the inputs is refused before anything is written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

const FIXTURE: &str = "tests/fixtures/perf/synthetic_mariadb1011.perf";
/// Port 1 refuses connections: a command that got as far as connecting fails with exit 3.
const NO_SERVER: [&str; 4] = ["-h", "127.0.0.1", "-P", "1"];

fn bin() -> Command {
    let mut c = Command::cargo_bin("spinscope").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("MYSQL_PWD")
        .timeout(Duration::from_secs(20));
    c
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Run `args`; expect exit 2 with exactly one stderr line containing each of `wanted`.
fn refused(args: &[String], wanted: &[&str]) {
    let t = Instant::now();
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    for w in wanted {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
    }
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{args:?} took {:?}",
        t.elapsed()
    );
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// A victim file and a symlink to it named `name` in `dir`.
fn plant(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let victim = dir.join(format!("victim-{}", name.replace('/', "_")));
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.join(name);
    if let Some(p) = link.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    (victim, link)
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_symlink_planted_at_any_output_is_refused_and_its_target_kept() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let perf = fixture(FIXTURE);
    let perf = perf.to_str().unwrap();
    let report_in = fixture("tests/fixtures/report/probe.json");
    let pcap = fixture("tests/fixtures/rt/plain-queries.pcap");
    // (link name inside dir, the command with LINK standing for the link's path)
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "flame.svg",
            vec!["profile", "--perf-script", perf, "--svg", "LINK"],
        ),
        (
            "stacks.folded",
            vec!["profile", "--perf-script", perf, "--folded", "LINK"],
        ),
        ("man/spinscope.1", vec!["man", "--out-dir", "DIR/man"]),
        (
            "man2/spinscope-doctor.1",
            vec!["man", "--out-dir", "DIR/man2"],
        ),
        (
            "report.html",
            vec!["report", report_in.to_str().unwrap(), "--out", "LINK"],
        ),
        (
            "rt.json",
            vec!["rt", "--read", pcap.to_str().unwrap(), "--save", "LINK"],
        ),
        (
            "probe.json",
            vec!["probe", "--batches", "1000000", "--save", "LINK"],
        ),
        (
            "snap.json",
            [&["doctor"], &NO_SERVER[..], &["--save-snapshot", "LINK"]].concat(),
        ),
        (
            "sweep.json",
            [&["sweep", "run"], &NO_SERVER[..], &["--save", "LINK"]].concat(),
        ),
        (
            "sweep.csv",
            [&["sweep", "run"], &NO_SERVER[..], &["--csv", "LINK"]].concat(),
        ),
        (
            "sweep.html",
            [&["sweep", "run"], &NO_SERVER[..], &["--html", "LINK"]].concat(),
        ),
        (
            "charts/p99.svg",
            [
                &["sweep", "run"],
                &NO_SERVER[..],
                &["--charts", "DIR/charts"],
            ]
            .concat(),
        ),
        (
            "tune.json",
            [&["tune"], &NO_SERVER[..], &["--save", "LINK"]].concat(),
        ),
        (
            "w/watch.log",
            [
                &["watch"],
                &NO_SERVER[..],
                &["--out", "DIR/w", "--duration", "1"],
            ]
            .concat(),
        ),
    ];
    for (name, cmd) in cases {
        let (victim, link) = plant(dir, name);
        let args: Vec<String> = cmd
            .iter()
            .map(|a| match *a {
                "LINK" => link.display().to_string(),
                a if a.starts_with("DIR/") => dir.join(&a[4..]).display().to_string(),
                a => a.to_string(),
            })
            .collect();
        refused(&args, &["symbolic link"]);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious",
            "{name}"
        );
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            m.file_type().is_symlink(),
            "{name}: the link itself is kept too"
        );
    }
    // Nothing else appeared beside the planted files (no temp files, no half-written pages).
    let stray: Vec<String> = walk(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| p.display().to_string())
        .collect();
    assert!(stray.is_empty(), "left behind: {stray:?}");
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            v.extend(walk(&p));
        }
        v.push(p);
    }
    v
}

#[test]
fn fifo_inputs_exit_2_at_once() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("fifo");
    mkfifo(&f);
    let f = f.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["doctor", "--inventory", f], "--inventory"),
        (
            [
                &["watch"],
                &NO_SERVER[..],
                &["--inventory", f, "--duration", "1"],
            ]
            .concat(),
            "--inventory",
        ),
        (vec!["rt", "--read", f], "--read"),
        (vec!["doctor", "--snapshot", f], "--snapshot"),
        (vec!["profile", "--perf-script", f], "--perf-script"),
        (vec!["report", f], "report input"),
        (vec!["spin", "--server", "10.11.6", "--probe", f], "--probe"),
        (
            [&["sweep", "run"], &NO_SERVER[..], &["--sql", f]].concat(),
            "--sql",
        ),
        (
            [&["doctor"], &NO_SERVER[..], &["--host-facts", f]].concat(),
            "--host-facts",
        ),
    ];
    for (cmd, flag) in cases {
        refused(&s(&cmd), &[flag, "FIFO"]);
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let x = d.path().join("x");
    std::fs::copy(fixture(FIXTURE), &x).unwrap();
    let before = std::fs::read(&x).unwrap();
    let x = x.to_str().unwrap();
    let dotted = format!("{}/./x", d.path().display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["profile", "--perf-script", x, "--svg", x],
        vec!["profile", "--perf-script", x, "--folded", &dotted],
        vec!["report", x, "--out", x],
        vec!["rt", "--read", x, "--save", x],
        [
            &["sweep", "run"],
            &NO_SERVER[..],
            &["--sql", x, "--save", x],
        ]
        .concat(),
        [&["tune"], &NO_SERVER[..], &["--sql", x, "--save", x]].concat(),
    ];
    for cmd in cases {
        refused(&s(&cmd), &["is the same file as"]);
        assert_eq!(
            std::fs::read(x).unwrap(),
            before,
            "{cmd:?} changed its input"
        );
    }
    // Two outputs at one path.
    let y = format!("{}/y.svg", d.path().display());
    refused(
        &s(&["profile", "--perf-script", x, "--svg", &y, "--folded", &y]),
        &["is the same file as --folded"],
    );
    assert!(!Path::new(&y).exists());
}

#[test]
fn outputs_holding_server_data_are_private_and_replace_atomically() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r.html");
    std::fs::write(&out, "old").unwrap();
    let input = fixture("tests/fixtures/report/doctor.json");
    bin()
        .args([
            "report",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "report --out holds server data");
    assert!(std::fs::read_to_string(&out).unwrap().contains("<html"));
    let svg = d.path().join("f.svg");
    bin()
        .args([
            "profile",
            "--perf-script",
            FIXTURE,
            "--svg",
            svg.to_str().unwrap(),
        ])
        .assert()
        .success();
    let mode = std::fs::metadata(&svg).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let man = d.path().join("man");
    bin()
        .args(["man", "--out-dir", man.to_str().unwrap()])
        .assert()
        .success();
    assert!(man.join("spinscope.1").is_file() && man.join("spinscope-doctor.1").is_file());
    // Only the result files: no temp file left in any of the directories.
    let stray: Vec<PathBuf> = walk(d.path())
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}
