//! Durations announced are the durations taken (issue 36 §8): doctor announces its sampling
//! window on stderr and, after collecting, says the whole time it took and how much of it was
//! the window; stdout stays the document alone. Against a real throwaway MariaDB.

use crate::common;
use std::process::Command;
use std::time::Instant;

use common::mariadb::MariaDb;

#[test]
fn doctor_says_the_whole_time_it_took() {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    let db = MariaDb::start(&[]);
    let doctor = |window: &str| {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
            .args(["doctor", "--no-defaults", "-u", "root", "-S"])
            .arg(&db.socket)
            .args(["--window", window, "--json"])
            .env_remove("MYSQL_PWD")
            .output()
            .unwrap();
        (out, t.elapsed().as_secs_f64())
    };
    let (out, elapsed) = doctor("3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    // The announcement says what its time leaves out, in the words of the closing line.
    assert!(
        err.contains(
            "spinscope doctor: sampling for 3 s (the sampling window; the collection around it comes on top, said at the end)"
        ),
        "{err}"
    );
    let took = err
        .lines()
        .find_map(|l| l.strip_prefix("spinscope doctor: took "))
        .unwrap_or_else(|| panic!("no 'took' line: {err}"));
    let total: f64 = took.split(' ').next().unwrap().parse().unwrap();
    assert!(
        took.contains(" s in all: the 3.0 s sampling window and "),
        "{took}"
    );
    assert!(took.ends_with(" s of collection around it"), "{took}");
    // The stated whole is at least the window and at most what the process took.
    assert!(
        total >= 3.0 && total <= elapsed + 0.05,
        "{total} vs {elapsed}"
    );
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is the document");

    // No window announced, no closing line either.
    let (out, _) = doctor("0");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("took"), "{err}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("stdout is the document");
}
