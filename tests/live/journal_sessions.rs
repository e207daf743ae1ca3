//! Integration (issue 35): the change journal belongs to the server it was read on. Two
//! throwaway MariaDBs (tests/common/mariadb.rs) share one client journal, as a DBA's host
//! does; a `sweep run` killed by its own seam (`SPINSCOPE_FAULT=after-statement:1`, a
//! `kill -9` right after its first `SET GLOBAL`) leaves a change on one of them. Fleet doctor,
//! in either order and either parallelism, reports each leftover on its own server's report
//! and nowhere else.

use crate::common;
use common::server_cmd as cmd;
use std::path::Path;

use common::mariadb::{self, var, MariaDb};
use common::{doctor_cmd, out};
use spinscope::fleet::FleetDoc;

/// A `sweep run` of one variant `setting`, killed right after its first change statement:
/// the server keeps the value, the journal keeps the record.
fn leave_changed(db: &MariaDb, home: &Path, setting: &str) {
    let (code, _, err) =
        out(cmd(db, home, &["sweep", "prepare"]).args(["--tables", "1", "--table-size", "200"]));
    assert_eq!(code, Some(0), "prepare: {err}");
    let (code, _, err) = out(cmd(db, home, &["sweep", "run"])
        .args(["--threads", "1", "--warmup", "0", "--duration", "0.3"])
        .args(["--report-interval", "0", "--workload", "point-select"])
        .args(["--variant", &format!("a:{setting}")])
        .env("SPINSCOPE_FAULT", "after-statement:1"));
    assert_eq!(code, None, "killed by its own seam: {err}");
    assert!(err.contains("SPINSCOPE_FAULT: dying"), "{err}");
}

/// `doctor` over `dbs` in that order, the journal in `home`: the fleet document and stderr.
fn fleet(dbs: &[&MariaDb], home: &Path, parallel: Option<&str>) -> (FleetDoc, String) {
    let mut c = doctor_cmd();
    for db in dbs {
        c.arg(format!("root@{}", db.socket.display()));
    }
    if let Some(p) = parallel {
        c.args(["--parallel", p]);
    }
    c.args(["--window", "0", "--json"])
        .env_remove("SPINSCOPE_FAULT")
        .env("XDG_STATE_HOME", home);
    let (code, stdout, err) = out(c);
    assert!(matches!(code, Some(0 | 1)), "exit {code:?}: {err}");
    let d: FleetDoc = serde_json::from_str(&stdout).expect("spinscope.doctor-fleet/1");
    (d, err)
}

/// Each server's `spinscope-left-changed` statements, in the document's order.
fn left_changed(d: &FleetDoc) -> Vec<Vec<String>> {
    d.servers
        .iter()
        .map(|r| {
            let doc = r.doc.as_ref().expect("a document");
            doc.findings
                .iter()
                .filter(|f| f.id == "spinscope-left-changed")
                .flat_map(|f| f.statements.clone())
                .collect()
        })
        .collect()
}

#[test]
fn each_report_carries_its_own_servers_journal() {
    if !common::has_seams("each_report_carries_its_own_servers_journal") {
        return;
    }
    if mariadb::skip_reason("journal_sessions", mariadb::available().err()).is_some() {
        return;
    }
    let a = MariaDb::start(&[]);
    let b = MariaDb::start(&[]);
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let delay_was = var(&a, "innodb_spin_wait_delay");
    let loops_was = var(&b, "innodb_sync_spin_loops");

    leave_changed(&a, home, "innodb_spin_wait_delay=77");
    assert_eq!(var(&a, "innodb_spin_wait_delay"), "77");
    let fix_a = format!("SET GLOBAL innodb_spin_wait_delay = {delay_was}");

    // A's leftover: on A's report only, whichever server comes first, one at a time or not.
    for parallel in [Some("1"), None] {
        let (d, err) = fleet(&[&a, &b], home, parallel);
        assert_eq!(
            left_changed(&d),
            [vec![fix_a.clone()], vec![]],
            "A B {parallel:?}: {err}"
        );
        let (d, err) = fleet(&[&b, &a], home, parallel);
        assert_eq!(
            left_changed(&d),
            [vec![], vec![fix_a.clone()]],
            "B A {parallel:?}: {err}"
        );
        // Said once per run, for A (its endpoint in the text), whatever the order.
        assert_eq!(err.matches("never set back").count(), 1, "{err}");
        assert!(err.contains(&format!("on {}", a.socket.display())), "{err}");
    }

    // A leftover on each: each report shows its own.
    leave_changed(&b, home, "innodb_sync_spin_loops=99");
    assert_eq!(var(&b, "innodb_sync_spin_loops"), "99");
    let fix_b = format!("SET GLOBAL innodb_sync_spin_loops = {loops_was}");
    for parallel in [Some("1"), None] {
        let (d, err) = fleet(&[&a, &b], home, parallel);
        assert_eq!(
            left_changed(&d),
            [vec![fix_a.clone()], vec![fix_b.clone()]],
            "A B {parallel:?}: {err}"
        );
        let (d, err) = fleet(&[&b, &a], home, parallel);
        assert_eq!(
            left_changed(&d),
            [vec![fix_b.clone()], vec![fix_a.clone()]],
            "B A {parallel:?}: {err}"
        );
        assert_eq!(err.matches("never set back").count(), 2, "{err}");
    }

    // restore on B puts B's change back (and only B's).
    let (code, _, err) = out(cmd(&b, home, &["restore"]));
    assert_eq!(code, Some(0), "restore on B: {err}");
    assert_eq!(var(&b, "innodb_sync_spin_loops"), loops_was, "{err}");
    assert_eq!(var(&a, "innodb_spin_wait_delay"), "77", "{err}");
    let (d, err) = fleet(&[&b, &a], home, Some("1"));
    assert_eq!(left_changed(&d), [vec![], vec![fix_a]], "{err}");
}
