//! doctor's first screen (issue 36 §2): on an 80-column terminal the verdict, the cause and the
//! fix (the SET GLOBAL line and where the lasting fix goes) are within the first 24 lines, the
//! evidence follows the fix, and no line is wider than the terminal. Against a real throwaway
//! MariaDB started with `--innodb-spin-wait-delay=6000` (the incident of issue 36) under a write
//! load that runs until doctor's 3 s window is over.

use crate::common;
use std::process::Command;

use common::mariadb::MariaDb;

/// The line (0-based) of the first line that contains `needle`, naming it when none does.
fn line_of(lines: &[&str], needle: &str, text: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn the_fix_is_on_the_first_80_column_screen() {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    let db = MariaDb::start(&["--innodb-spin-wait-delay=6000"]);
    let probe = db.dir().join("probe.json");
    common::save_probe(&probe);
    db.sql(
        "CREATE DATABASE hot; CREATE TABLE hot.t (id INT PRIMARY KEY, v BIGINT) ENGINE=InnoDB; \
         INSERT INTO hot.t VALUES (1, 0)",
    );
    let load = db.load(4, "UPDATE hot.t SET v = v + 1 WHERE id = 1");
    load.wait_observed(60);
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["doctor", "--no-defaults", "-u", "root", "-S"])
        .arg(&db.socket)
        .args(["--window", "3s", "--host-facts"])
        .arg(&probe)
        .env("COLUMNS", "80")
        .env_remove("MYSQL_PWD")
        .output()
        .unwrap();
    load.stop();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What a user sees (visible with --nocapture): the README's first-screen example is this.
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    let wide: Vec<_> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.chars().count() > 80)
        .map(|(i, l)| format!("line {}: {} columns", i + 1, l.chars().count()))
        .collect();
    assert!(wide.is_empty(), "wider than 80: {wide:?}\n{text}");

    let verdict = line_of(&lines, "verdict: CRITICAL", &text);
    let cause = line_of(&lines, "[spin-budget] design ratio", &text);
    let now = line_of(
        &lines,
        "run: SET GLOBAL innodb_spin_wait_delay = DEFAULT;",
        &text,
    );
    // Where the lasting fix goes: the value came from the command line (the sentence may wrap
    // after "remove", so the option's own name is looked for).
    let lasting = line_of(&lines, "`--innodb-spin-wait-delay`", &text);
    let option_file = line_of(&lines, "       innodb_spin_wait_delay = 4", &text);
    for (what, at) in [
        ("verdict", verdict),
        ("cause", cause),
        ("SET GLOBAL", now),
        ("lasting fix", lasting),
        ("option-file line", option_file),
    ] {
        assert!(
            at < 24,
            "the {what} is on line {}, past the first 24:\n{text}",
            at + 1
        );
    }
    assert!(verdict < cause && cause < now, "{text}");
    // The finding's evidence follows its fix, and the facts follow the findings.
    let evidence = cause
        + lines[cause..]
            .iter()
            .position(|l| l.starts_with("  evidence: max_spin_here"))
            .unwrap_or_else(|| panic!("no spin-budget evidence:\n{text}"));
    assert!(evidence > now && evidence > option_file, "{text}");
    let measured = line_of(&lines, "MEASURED", &text);
    assert!(measured > evidence, "{text}");
    assert!(
        line_of(&lines, "burst sampler:", &text) > measured,
        "{text}"
    );
    let updates: u64 = db.sql("SELECT v FROM hot.t").trim().parse().unwrap();
    assert!(updates > 0, "the load did not run");
}
