//! The README's measured numbers against this build, so they cannot go stale: the table under
//! "Measured" (README.md) gives the stripped and release binary sizes, the number of tests and
//! the disk used by target/; each is checked within a tolerance against the binary cargo built
//! for these tests, the test executables of this build (`--list`) and target/ itself.
//! The figures docs/USAGE.md (the reference the README points to) and the README's own prose
//! quote ("about 11.7 MB", "524 tests") are held to that table, so the moved reference cannot
//! keep an old number.
//! Also the skip policy of tests/common/mariadb.rs: a missing program fails a test unless
//! SPINSCOPE_SKIP_MISSING is set (and never under CI).

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::bin;

const README: &str = include_str!("../../README.md");
const USAGE: &str = include_str!("../../docs/USAGE.md");

/// The value cell of the "Measured" table row whose first cell starts with `key`, as a number
/// (the first number in the cell).
fn measured(key: &str) -> f64 {
    let row = README
        .lines()
        .filter(|l| l.starts_with('|'))
        .find(|l| l.trim_start_matches('|').trim().starts_with(key))
        .unwrap_or_else(|| panic!("README has no measured row starting with {key:?}"));
    let cell = row.split('|').nth(2).unwrap_or("");
    let num: String = cell
        .trim()
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    num.parse()
        .unwrap_or_else(|_| panic!("README row {key:?}: no number in {cell:?}"))
}

fn within(what: &str, stated: f64, actual: f64, tolerance: f64) {
    let off = (actual - stated).abs() / stated;
    assert!(
        off <= tolerance,
        "README says {what} is {stated}, this build has {actual:.1} ({:.0}% off, more than \
         {:.0}%): measure again and update the README's Measured table",
        off * 100.0,
        tolerance * 100.0
    );
}

#[test]
fn binary_sizes_are_the_readmes() {
    let release = std::fs::metadata(bin()).unwrap().len() as f64 / 1e6;
    within(
        "target/release/spinscope (MB)",
        measured("`target/release/spinscope`"),
        release,
        0.15,
    );
    // The dist profile and the package strip the same code: strip a copy.
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("spinscope");
    let st = Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(bin())
        .status()
        .expect("strip (apt-get install binutils)");
    assert!(st.success());
    let size = std::fs::metadata(&stripped).unwrap().len() as f64 / 1e6;
    within(
        "the installed (stripped) binary (MB)",
        measured("`spinscope` installed"),
        size,
        0.15,
    );
}

/// The integration test binaries: the folders of tests/ with a main.rs (tests/common has none).
fn test_binaries() -> Vec<String> {
    std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("main.rs").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The test executables of this build: per test target the newest `NAME-HASH` in deps/ that
/// answers `--list` as a test harness (the lib's and the bin's harnesses both for `spinscope`).
fn harnesses(deps: &Path) -> Vec<(String, PathBuf)> {
    let mut targets = test_binaries();
    targets.push("spinscope".into());
    // The workspace crates' unit tests (crates/*): `cargo test --release` runs them too.
    targets.push("spinscope_proto".into());
    let mut out = Vec::new();
    for t in targets {
        let mut cands: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(deps)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let hash = name.strip_prefix(&format!("{t}-"))?;
                let exe = hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit());
                let md = e.metadata().ok()?;
                use std::os::unix::fs::PermissionsExt;
                (exe && md.is_file() && md.permissions().mode() & 0o111 != 0)
                    .then(|| (md.modified().ok().unwrap(), e.path()))
            })
            .collect();
        cands.sort();
        let want = if t == "spinscope" { 2 } else { 1 };
        let mut found = 0;
        for (_, p) in cands.into_iter().rev() {
            if found == want {
                break;
            }
            if list(&p).is_some() {
                out.push((t.clone(), p));
                found += 1;
            }
        }
    }
    out
}

/// The number of tests a harness lists, or None when `exe` is no test harness.
fn list(exe: &Path) -> Option<usize> {
    let o = Command::new(exe)
        .args(["--list", "--format", "terse"])
        .output()
        .ok()?;
    let text = String::from_utf8(o.stdout).ok()?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    (o.status.success()
        && lines
            .iter()
            .all(|l| l.ends_with(": test") || l.ends_with(": benchmark")))
    .then(|| lines.iter().filter(|l| l.ends_with(": test")).count())
}

#[test]
fn the_test_count_and_target_size_are_the_readmes() {
    let me = std::env::current_exe().unwrap();
    let deps = me.parent().unwrap();
    let hs = harnesses(deps);
    let n_bins = test_binaries().len();
    assert!(
        hs.len() > n_bins,
        "found {} test executables for {n_bins} test binaries: {hs:?}",
        hs.len()
    );
    let count: usize = hs.iter().filter_map(|(_, p)| list(p)).sum();
    within(
        "the number of tests",
        measured("tests run by"),
        count as f64,
        0.15,
    );
    // target/: deps -> release (or the profile) -> target.
    let target = deps.parent().unwrap().parent().unwrap();
    let du = Command::new("du")
        .args(["-s", "-B1"])
        .arg(target)
        .output()
        .unwrap();
    let bytes: f64 = String::from_utf8_lossy(&du.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Rebuilds add to target/ until `cargo clean`: only a fresh build is held to the number.
    let gb = bytes / 1e9;
    let stated = measured("`target/` after");
    assert!(
        gb >= stated * 0.6,
        "README says target/ takes {stated} GB after the tests; this one takes {gb:.2} GB"
    );
}

/// The numbers that precede `unit` in `text` ("about 11.7 MB" gives 11.7 for " MB"), outside
/// tables (the Measured table is the source).
fn quoted(text: &str, unit: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('|')) {
        let mut rest = l;
        while let Some(i) = rest.find(unit) {
            let num: String = rest[..i]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            if let Ok(v) = num.parse() {
                out.push(v);
            }
            rest = &rest[i + unit.len()..];
        }
    }
    out
}

#[test]
fn the_pages_quote_the_measured_table() {
    let mb = [
        measured("`spinscope` installed"),
        measured("`target/release/spinscope`"),
        measured("the package"),
    ];
    let gb = measured("`target/` after");
    let mut n = 0;
    for (name, page) in [("README.md", README), ("docs/USAGE.md", USAGE)] {
        for v in quoted(page, " MB") {
            n += 1;
            assert!(
                mb.contains(&v),
                "{name} quotes {v} MB, which is none of the Measured table's sizes {mb:?}: \
                 quote the table (README.md, Measured)"
            );
        }
        for v in quoted(page, " GB after") {
            n += 1;
            assert_eq!(
                v, gb,
                "{name} quotes {v} GB for target/, the table says {gb}"
            );
        }
        for v in quoted(page, " tests, about") {
            n += 1;
            within(
                &format!("{name}'s test count in prose"),
                measured("tests run by"),
                v,
                0.15,
            );
        }
    }
    assert!(n >= 3, "only {n} quoted figures found");
}

#[test]
fn a_missing_program_fails_a_test_unless_skipping_is_asked_for() {
    use common::mariadb::decide;
    let yes = Some(std::ffi::OsString::from("1"));
    let fails = |opt: Option<std::ffi::OsString>, ci: Option<std::ffi::OsString>| {
        std::panic::catch_unwind(|| decide("t", "x is not installed (apt-get install x)", opt, ci))
            .map_err(|p| p.downcast_ref::<String>().cloned().unwrap_or_default())
    };
    let e = fails(None, None).unwrap_err();
    assert!(
        e.contains("apt-get install x") && e.contains("SPINSCOPE_SKIP_MISSING=1"),
        "{e}"
    );
    assert!(fails(Some("0".into()), None).is_err());
    assert!(fails(yes.clone(), yes.clone())
        .unwrap_err()
        .contains("CI is set"));
    assert_eq!(
        fails(yes, None).unwrap(),
        Some("x is not installed (apt-get install x)".to_string())
    );
}
