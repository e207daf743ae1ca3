//! `spinscope profile` from the command line: classification and folding of fixture perf
//! scripts (MySQL 8.0, MariaDB 10.11, kernel frames), JSON contract, SVG golden file and
//! repeatability, faults with one-line errors and DESIGN.md exit codes, and a property test
//! that the reader never panics.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use proptest::prelude::*;
use spinscope::profile::{self, ProfileDoc, Source};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name)
}

fn spinscope() -> Command {
    Command::cargo_bin("spinscope").unwrap()
}

fn json_of(name: &str) -> ProfileDoc {
    let out = spinscope()
        .args(["profile", "--json", "--perf-script"])
        .arg(fixture(name))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn class<'a>(d: &'a ProfileDoc, id: &str) -> &'a profile::ClassShare {
    d.classes
        .iter()
        .find(|c| c.class == id)
        .unwrap_or_else(|| panic!("no class {id}"))
}

#[test]
fn mysql80_classes_and_shares() {
    let d = json_of("mysql80.perf");
    assert_eq!(d.schema, "spinscope.profile/1");
    // 5 + 3 + 2 + 4 + 3 + 1 events; periods in headers are not counted as samples.
    assert_eq!(d.samples, 18);
    assert_eq!(d.no_symbol_samples, 0);
    let spin = class(&d, "innodb_spin");
    assert_eq!(spin.self_samples, 8);
    // The sync-array wait also has rw_lock_x_lock_func on its stack.
    assert_eq!(spin.inclusive_samples, 10);
    assert_eq!(class(&d, "os_wait").self_samples, 2);
    assert_eq!(class(&d, "kernel_spinlock").self_samples, 4);
    let sig = class(&d, "signal_mask");
    assert_eq!((sig.self_samples, sig.inclusive_samples), (0, 4));
    assert_eq!(class(&d, "server").self_samples, 3);
    assert_eq!(class(&d, "libc").self_samples, 1);
    // Amdahl: p = 8/18.
    let p = 8.0 / 18.0;
    assert!((spin.amdahl_speedup_if_removed - 1.0 / (1.0 - p)).abs() < 1e-9);
    assert!((spin.amdahl_speedup_if_halved - 1.0 / ((1.0 - p) + p / 2.0)).abs() < 1e-9);
    assert_eq!(spin.top_stacks[0].samples, 5);
    assert!(spin.top_stacks[0]
        .stack
        .ends_with("spin_and_try_lock;ut_delay"));
    assert!(d.notes.iter().any(|n| n.contains("skid")));
    // Classes ordered by self samples.
    assert!(d
        .classes
        .windows(2)
        .all(|w| w[0].self_samples >= w[1].self_samples));
}

#[test]
fn mariadb1011_classes_and_no_symbol_count() {
    let d = json_of("mariadb1011.perf");
    assert_eq!(d.samples, 16);
    assert_eq!(d.no_symbol_samples, 1);
    assert_eq!(d.spin_loop_samples, 0);
    assert_eq!(class(&d, "innodb_spin").self_samples, 8); // wait_and_lock 6 + LF_BACKOFF 2
    assert_eq!(class(&d, "os_wait").self_samples, 5); // futex wait 2 + futex wake 3
    assert_eq!(class(&d, "innodb").self_samples, 2);
    assert_eq!(class(&d, "unsymbolized").self_samples, 1);
    assert!(d.notes.iter().any(|n| n.contains("no symbol")));
}

#[test]
fn folded_output_is_inferno_format_with_kernel_marks() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out.folded");
    spinscope()
        .args(["profile", "--perf-script"])
        .arg(fixture("mysql80.perf"))
        .arg("--folded")
        .arg(&f)
        .assert()
        .success()
        .stdout(predicate::str::contains("InnoDB spin"));
    let text = std::fs::read_to_string(&f).unwrap();
    let total: u64 = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 18);
    assert!(text.contains(
        "connection;do_command;my_net_read;vio_io_wait;ppoll;__x64_sys_ppoll_[k];do_sys_ppoll_[k];\
         set_user_sigmask_[k];sigprocmask_[k];__set_current_blocked_[k];_raw_spin_lock_irq_[k];\
         native_queued_spin_lock_slowpath_[k] 4\n"
    ));
}

fn svg_of(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out.svg");
    spinscope()
        .args(["profile", "--json", "--perf-script"])
        .arg(fixture(name))
        .arg("--svg")
        .arg(&f)
        .assert()
        .success();
    std::fs::read_to_string(&f).unwrap()
}

#[test]
fn svg_matches_golden_file_and_is_repeatable() {
    let svg = svg_of("mysql80.perf");
    assert_eq!(
        svg,
        svg_of("mysql80.perf"),
        "same input must give the same SVG"
    );
    assert!(svg.contains("spinscope-legend"));
    assert!(
        svg.contains("rgb(220,20,60)"),
        "spin frames in their own colour"
    );
    let golden = fixture("mysql80.svg");
    if std::env::var_os("SPINSCOPE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &svg).unwrap();
    }
    let want = std::fs::read_to_string(&golden)
        .expect("golden SVG missing: run with SPINSCOPE_UPDATE_GOLDEN=1 to create it");
    assert!(
        svg == want,
        "SVG differs from {}; if intended, regenerate with SPINSCOPE_UPDATE_GOLDEN=1",
        golden.display()
    );
}

#[test]
fn table_and_json_are_repeatable() {
    for args in [vec!["profile"], vec!["profile", "--json"]] {
        let run = || {
            spinscope()
                .args(&args)
                .arg("--perf-script")
                .arg(fixture("mariadb1011.perf"))
                .output()
                .unwrap()
                .stdout
        };
        assert_eq!(run(), run());
    }
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.perf");
    std::fs::write(&empty, "").unwrap();
    for (file, msg) in [
        (empty, "empty"),
        (fixture("garbled.perf"), "no samples"),
        (dir.path().join("missing.perf"), "cannot read"),
    ] {
        spinscope()
            .args(["profile", "--perf-script"])
            .arg(&file)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(msg))
            .stderr(predicate::function(|s: &str| {
                s.trim_end().lines().count() == 1
            }));
    }
    spinscope()
        .args(["profile", "--pid", "999999999"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such process"));
    spinscope()
        .args(["profile", "--process", "no-such-daemon-xyz"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no running process"));
    spinscope()
        .args(["profile", "--pid", "1", "--seconds", "0"])
        .assert()
        .code(2);
    spinscope().args(["profile"]).assert().code(2);
}

#[test]
fn perf_missing_exits_3_and_names_the_package() {
    spinscope()
        .env("PATH", "/nonexistent")
        .args(["profile", "--seconds", "1", "--pid"])
        .arg(std::process::id().to_string())
        .assert()
        .code(3)
        .stderr(predicate::str::contains("apt-get install linux-perf"));
}

fn src() -> Source {
    Source {
        kind: "perf-script".into(),
        file: None,
        pid: None,
        comm: None,
        seconds: None,
        frequency_hz: None,
        event: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reader_never_panics_on_arbitrary_text(s in "\\PC*") {
        let _ = profile::parse::scan(&s);
        let _ = profile::analyse(&s, src(), &profile::Options::default());
    }

    #[test]
    fn reader_never_panics_on_perf_like_text(
        lines in proptest::collection::vec(
            prop_oneof![
                "[a-z]{1,8} [0-9]{1,5}/[0-9]{1,5} [0-9]{1,4}\\.[0-9]{6}: ([0-9]{1,7} )?cpu-clock: ",
                "\t +[0-9a-f]{1,16} [a-z_:<>()\\[\\]+0-9x]{0,30} \\(\\[?[a-z./_]{0,20}\\]?\\)",
                "\t[ -~]{0,40}",
                Just(String::new()),
            ],
            0..60,
        )
    ) {
        let text = lines.join("\n");
        let _ = profile::analyse(&text, src(), &profile::Options::default());
    }
}
