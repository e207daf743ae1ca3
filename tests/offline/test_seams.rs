//! The test switches `SPINSCOPE_FAULT` and `SPINSCOPE_TEST_CLOCK_SHIFT_S` (issue 35 §1) are
//! read only by a binary built with `--features test-seams` (the test command's); the binary a
//! plain `cargo build --release` makes has no such switch. Both tests assert what the build
//! under test must do, so the one command that leaves the feature off
//! (`cargo test --release --test offline test_seams`) checks the shipped side.

use std::process::Command;

/// "opened ... ago" of a record opened now, listed with the clock shifted 2 h ahead.
#[test]
fn the_clock_shift_acts_only_in_a_build_with_the_test_seams() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("spinscope/journal");
    std::fs::create_dir_all(&dir).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let rec = format!(
        r#"{{"id":"1-2-0","server":{{"endpoint":"/a.sock","key":"db:3306",
        "started_unix_s":1699999000,"connect_hint":"--socket /a.sock"}},
        "what":"innodb_spin_wait_delay","original":"4","set_to":"6000",
        "check_sql":"SELECT @@GLOBAL.innodb_spin_wait_delay",
        "restore_sql":["SET GLOBAL innodb_spin_wait_delay = 4"],
        "holder":{{"pid":1,"pid_start":1,"user":"u","client_host":"h","command":"spinscope sweep run"}},
        "opened_unix_s":{now}}}"#
    );
    std::fs::write(dir.join("1-2-0.json"), rec).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["restore", "--list"])
        .env("XDG_STATE_HOME", home.path())
        .env("SPINSCOPE_TEST_CLOCK_SHIFT_S", "7200")
        .env_remove("SPINSCOPE_FAULT")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let shifted = text.contains(") 2.0 h ago");
    let unshifted = text.contains(" s ago");
    assert_eq!(
        (shifted, unshifted),
        (cfg!(feature = "test-seams"), !cfg!(feature = "test-seams")),
        "{text}"
    );
}

/// The switches' names are in the binary exactly when the feature is on.
#[test]
fn a_build_without_the_test_seams_has_no_such_switch() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_spinscope")).unwrap();
    for name in ["SPINSCOPE_FAULT", "SPINSCOPE_TEST_CLOCK_SHIFT_S"] {
        let found = bin.windows(name.len()).any(|w| w == name.as_bytes());
        assert_eq!(found, cfg!(feature = "test-seams"), "{name} in the binary");
    }
}
