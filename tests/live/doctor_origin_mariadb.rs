//! The fix where it lives (issue 36 §3): doctor reads where each spin setting's value came
//! from (MariaDB `information_schema.SYSTEM_VARIABLES`) and the spin-budget finding says
//! where to make the fix stick. Against real throwaway MariaDB servers: a value on the
//! command line, one in a `--defaults-file`, one set with SET GLOBAL; and a snapshot fixture,
//! old (no origins: loads, says nothing) and with origins added.

use crate::common;
use std::path::PathBuf;
use std::process::{Command, Output};

use common::mariadb::MariaDb;
use spinscope::doctor::{DoctorDoc, Finding};

fn server(cnf: Option<&str>, extra: &[&str]) -> MariaDb {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    MariaDb::start_with_cnf(cnf, extra)
}

fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .arg("doctor")
        .args(args)
        .env_remove("MYSQL_PWD")
        .output()
        .unwrap()
}

fn live(db: &MariaDb, probe: &str, extra: &[&str]) -> Output {
    let sock = db.socket.to_str().unwrap().to_string();
    let mut args = vec![
        "--no-defaults",
        "-S",
        &sock,
        "-u",
        "root",
        "--window",
        "0",
        "--host-facts",
        probe,
    ];
    args.extend_from_slice(extra);
    doctor(&args)
}

fn doc(out: &Output) -> DoctorDoc {
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("spinscope.doctor/1")
}

fn spin_budget(d: &DoctorDoc) -> &Finding {
    d.findings
        .iter()
        .find(|f| f.id == "spin-budget")
        .unwrap_or_else(|| {
            panic!(
                "no spin-budget in {:?}",
                d.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
            )
        })
}

fn probe_file(db: &MariaDb) -> String {
    let probe = db.dir().join("probe.json");
    common::save_probe(&probe);
    probe.to_str().unwrap().to_string()
}

#[test]
fn delay_on_the_command_line_then_set_global() {
    let db = server(None, &["--innodb-spin-wait-delay=6000"]);
    let probe = probe_file(&db);
    let snap = db.dir().join("snap.json");
    let out = live(
        &db,
        &probe,
        &["--json", "--save-snapshot", snap.to_str().unwrap()],
    );
    let d = doc(&out);
    let todo = &spin_budget(&d).what_to_do;
    assert!(
        todo.contains(
            "innodb_spin_wait_delay = 6000 came from the server's command line: remove `--innodb-spin-wait-delay` from it"
        ),
        "{todo}"
    );
    assert!(
        todo.contains("editing an option file alone would not stop it coming back"),
        "{todo}"
    );
    // The snapshot carries the origin as typed data.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&snap).unwrap()).unwrap();
    let o = &v["var_origins"]["innodb_spin_wait_delay"];
    assert_eq!(o["kind"], "command_line", "{o}");
    assert_eq!(o["reported"], "COMMAND-LINE", "{o}");
    assert_eq!(
        v["var_origins"]["innodb_sync_spin_loops"]["kind"],
        "compiled"
    );

    // Set at runtime: the origin becomes SQL and the advice says so.
    db.sql("SET GLOBAL innodb_spin_wait_delay = 5000");
    let d = doc(&live(&db, &probe, &["--json"]));
    let todo = &spin_budget(&d).what_to_do;
    assert!(
        todo.contains("innodb_spin_wait_delay = 5000 was set at runtime with SET GLOBAL"),
        "{todo}"
    );
    assert!(todo.contains("keeps the fix across restarts"), "{todo}");
    // The text report shows the same sentence.
    let out = live(&db, &probe, &[]);
    // Wrapped to the terminal (80 columns): compare the words, not the line breaks.
    let text = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("was set at runtime with SET GLOBAL"),
        "{text}"
    );
}

#[test]
fn delay_in_a_defaults_file() {
    let db = server(Some("[mysqld]\ninnodb_spin_wait_delay = 6000\n"), &[]);
    let probe = probe_file(&db);
    let cnf = db.dir().join("my.cnf");
    let d = doc(&live(&db, &probe, &["--json"]));
    let todo = &spin_budget(&d).what_to_do;
    let want = format!(
        "innodb_spin_wait_delay = 6000 came from {}: change it there",
        cnf.display()
    );
    assert!(todo.contains(&want), "{want}\nnot in: {todo}");
    assert!(!todo.contains("command line"), "{todo}");
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/snapshots")
        .join(name)
}

#[test]
fn snapshot_fixture_old_and_with_origins() {
    let old = fixture("mariadb1011_delay6000.json");
    let d = doc(&doctor(&["--snapshot", old.to_str().unwrap(), "--json"]));
    let todo = spin_budget(&d).what_to_do.clone();
    assert!(!todo.contains("came from"), "{todo}");

    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    v["var_origins"] = serde_json::json!({
        "innodb_spin_wait_delay": {
            "kind": "config", "reported": "CONFIG",
            "path": "/etc/mysql/mariadb.conf.d/50-server.cnf"
        },
        "innodb_sync_spin_loops": {"kind": "some_future_word", "reported": "FUTURE"}
    });
    let dir = tempfile::tempdir().unwrap();
    let with = dir.path().join("with_origins.json");
    std::fs::write(&with, v.to_string()).unwrap();
    let d = doc(&doctor(&["--snapshot", with.to_str().unwrap(), "--json"]));
    let f = spin_budget(&d);
    assert!(f.what_to_do.starts_with(&todo), "{}", f.what_to_do);
    assert!(
        f.what_to_do.ends_with(
            " innodb_spin_wait_delay = 6000 came from /etc/mysql/mariadb.conf.d/50-server.cnf: change it there \
             (the option-file line above), or it comes back at the next restart."
        ),
        "{}",
        f.what_to_do
    );
}
