//! The settings guard against a scripted session (`session::Scripted`) answering as a
//! recorded MariaDB 10.11 did, its globals kept by the fake: the journal record is durable
//! before each `SET GLOBAL`, a restore reads back before it closes the record, a failed
//! restore leaves the record open, and a value someone else set meanwhile is left alone.

use std::sync::{Arc, Mutex};

use super::guard::SettingsGuard;
use crate::globals::{Setting, Variant};
use crate::journal;
use crate::session::{Reply, Scripted, MARIADB_10_11};

const VAR: &str = "innodb_spin_wait_delay";

/// Each `SET GLOBAL` of the variable with the journal's open records (original, set to) then.
type Seen = Arc<Mutex<Vec<(String, Vec<(String, String)>)>>>;

fn guard(fake: &Scripted) -> SettingsGuard {
    let f = fake.clone();
    SettingsGuard::on_sessions(
        Arc::new(move || f.connect()),
        "db.example:3306",
        "-h db.example -P 3306 -u root",
    )
}

fn delay(v: &str) -> Variant {
    Variant {
        name: format!("delay {v}"),
        settings: vec![Setting {
            variable: VAR.into(),
            value: v.into(),
        }],
    }
}

/// A server as recorded, a journal of this thread's own, and the value before any change.
fn setup() -> (Scripted, tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    journal::use_dir_in_this_thread(d.path());
    let fake = Scripted::recorded(MARIADB_10_11).unwrap();
    let before = fake.global(VAR).expect("the recorded variables have it");
    (fake, d, before)
}

#[test]
fn each_change_is_journaled_before_it_is_sent_and_closed_after_the_read_back() {
    let (fake, _d, before) = setup();
    // What the journal held each time a SET GLOBAL of the variable reached the server.
    let seen: Seen = Arc::default();
    let s = seen.clone();
    fake.on_statement(move |sql| {
        if sql.starts_with(&format!("SET GLOBAL {VAR} =")) {
            let open = journal::list()
                .into_iter()
                .map(|r| (r.original, r.set_to))
                .collect();
            s.lock().unwrap().push((sql.to_string(), open));
        }
    });
    let mut g = guard(&fake);
    let now = g.apply(&delay("77")).unwrap();
    assert_eq!(now[0].value, "77");
    assert_eq!(fake.global(VAR).as_deref(), Some("77"));
    let open: Vec<String> = journal::list().into_iter().map(|r| r.set_to).collect();
    assert_eq!(open, ["77"]);
    let changed = g.restore();
    assert!(changed[0].restored, "{changed:?}");
    assert_eq!(
        changed[0].note,
        format!("restored {VAR} = {before} (read back)")
    );
    assert_eq!(fake.global(VAR), Some(before.clone()));
    assert!(
        journal::list().is_empty(),
        "the record closes after the read-back"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            // The change: its record (original, intended value) written first.
            (
                format!("SET GLOBAL {VAR} = 77"),
                vec![(before.clone(), "77".to_string())]
            ),
            // The restore: the record still open while the statement is in flight.
            (
                format!("SET GLOBAL {VAR} = {before}"),
                vec![(before.clone(), "77".to_string())]
            ),
        ]
    );
    // The restore is read back after it is sent.
    let log = fake.log();
    let restore = log
        .iter()
        .rposition(|s| *s == format!("SET GLOBAL {VAR} = {before}"))
        .unwrap();
    assert!(log[restore + 1..]
        .iter()
        .any(|s| *s == format!("SELECT @@GLOBAL.{VAR}")));
}

#[test]
fn a_failing_restore_keeps_the_record_open_and_says_what_to_run() {
    let (fake, _d, before) = setup();
    let mut g = guard(&fake);
    g.apply(&delay("77")).unwrap();
    fake.answer(
        &format!("SET GLOBAL {VAR} = {before}"),
        Reply::Error {
            code: 1227,
            message: "Access denied; you need (at least one of) the SUPER privilege(s)".into(),
        },
    );
    let changed = g.restore();
    assert!(!changed[0].restored);
    assert!(
        changed[0]
            .note
            .starts_with(&format!("could not restore {VAR}"))
            && changed[0]
                .note
                .ends_with(&format!("run SET GLOBAL {VAR} = {before}")),
        "{}",
        changed[0].note
    );
    assert_eq!(fake.global(VAR).as_deref(), Some("77"));
    let open: Vec<(String, String)> = journal::list()
        .into_iter()
        .map(|r| (r.original, r.set_to))
        .collect();
    assert_eq!(open, [(before, "77".to_string())]);
}

#[test]
fn a_value_someone_else_set_meanwhile_is_left_and_its_record_closed() {
    let (fake, _d, before) = setup();
    let mut g = guard(&fake);
    g.apply(&delay("77")).unwrap();
    // Another session sets it while the run goes on.
    fake.set_global(VAR, "99");
    let changed = g.restore();
    assert!(!changed[0].restored);
    assert_eq!(
        changed[0].note,
        format!("left {VAR} = 99: someone else changed it after spinscope set 77 (original {before}); not reverted")
    );
    assert_eq!(fake.global(VAR).as_deref(), Some("99"));
    assert!(!fake.log().contains(&format!("SET GLOBAL {VAR} = {before}")));
    assert!(
        journal::list().is_empty(),
        "theirs now: the record is closed"
    );
}

#[test]
fn a_variable_left_changed_by_a_dead_run_is_refused() {
    let (fake, d, _) = setup();
    // A first run changes the variable and dies without restoring (its guard forgotten).
    let mut first = guard(&fake);
    first.apply(&delay("77")).unwrap();
    let mut rec = journal::list().pop().unwrap();
    std::mem::forget(first);
    rec.holder.pid_start += 1; // its process is gone
    journal::save_in(d.path(), &rec).unwrap();
    let e = guard(&fake).apply(&delay("5")).unwrap_err();
    assert!(
        matches!(e, crate::Error::BadInput(_)) && e.to_string().contains("was left changed"),
        "{e}"
    );
    assert_eq!(fake.global(VAR).as_deref(), Some("77"));
}
