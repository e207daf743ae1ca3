//! Completions, man pages and top-level usage errors.

use assert_cmd::Command;
use predicates::prelude::*;

#[test]
fn completions_are_generated_from_the_clap_definition() {
    for shell in ["bash", "zsh", "fish"] {
        Command::cargo_bin("spinscope")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("spin"))
            .stdout(predicate::str::contains("probe"));
    }
}

#[test]
fn man_pages_are_written_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("spinscope")
        .unwrap()
        .args(["man", "--out-dir"])
        .arg(dir.path())
        .assert()
        .success();
    let main = std::fs::read_to_string(dir.path().join("spinscope.1")).unwrap();
    assert!(main.contains(".TH spinscope"), "{main}");
    assert!(dir.path().join("spinscope-spin.1").exists());
    assert!(dir.path().join("spinscope-probe.1").exists());
}

#[test]
fn unknown_command_is_a_usage_error() {
    Command::cargo_bin("spinscope")
        .unwrap()
        .arg("frobnicate")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("frobnicate"));
}
