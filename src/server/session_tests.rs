//! The collector and the journal check against a scripted session answering with what a real
//! MariaDB 10.11 answered (`tests/fixtures/session/mariadb-10.11.txt`), no server needed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::collect::{collect_on, CollectOpts};
use super::conn::{SslMode, Target};
use super::snapshot::{OriginKind, Snapshot};
use crate::journal::{self, EntryKind, Record};
use crate::meter::Silent;
use crate::session::{parse_recorded, Reply, Scripted, MARIADB_10_11};

/// A server that is not on this host (no /proc, no perf: only what the session answers).
fn remote() -> Target {
    Target {
        host: "db.example".into(),
        port: 3306,
        socket: None,
        user: "monitor".into(),
        password: None,
        database: None,
        ssl_mode: SslMode::Disabled,
        ssl_ca: None,
        connect_timeout: Duration::from_secs(1),
        query_timeout: Duration::from_secs(1),
    }
}

fn opts() -> CollectOpts {
    CollectOpts {
        window_s: 0.0,
        hz: 100.0,
        sql_hz: None,
        enable_instruments: false,
        host_facts: None,
        rt: false,
        quiet_journal: true,
    }
}

fn collect(fake: &Scripted) -> Snapshot {
    collect_on(
        &remote(),
        &|| fake.connect(),
        &opts(),
        &AtomicBool::new(false),
        &mut Silent,
    )
    .expect("a snapshot from the scripted server")
}

/// The recorded rows of `sql` as lower-case name -> value.
fn recorded_pairs(sql: &str) -> BTreeMap<String, String> {
    let all = parse_recorded(MARIADB_10_11).unwrap();
    let Some((_, Reply::Rows { rows, .. })) = all.iter().find(|(s, _)| s == sql) else {
        panic!("{sql} not recorded");
    };
    rows.iter()
        .map(|r| {
            (
                r[0].clone().unwrap().to_ascii_lowercase(),
                r[1].clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// A journal of this thread's own in a new temporary directory.
fn own_journal() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    journal::use_dir_in_this_thread(d.path());
    d
}

#[test]
fn a_snapshot_from_recorded_server_text() {
    let _j = own_journal();
    let fake = Scripted::recorded(MARIADB_10_11).unwrap();
    let snap = collect(&fake);
    assert!(snap.version.contains("MariaDB"), "{}", snap.version);
    assert_eq!(snap.variables, recorded_pairs("SHOW GLOBAL VARIABLES"));
    assert_eq!(snap.status_before, recorded_pairs("SHOW GLOBAL STATUS"));
    // The server was started with --innodb-spin-wait-delay=6000: its origin says so.
    assert_eq!(
        snap.variables
            .get("innodb_spin_wait_delay")
            .map(String::as_str),
        Some("6000")
    );
    assert_eq!(
        snap.var_origins
            .get("innodb_spin_wait_delay")
            .map(|o| o.kind),
        Some(OriginKind::CommandLine)
    );
    let innodb = snap.innodb_status.as_deref().expect("INNODB STATUS read");
    assert!(innodb.contains("BUFFER POOL AND MEMORY"), "{innodb}");
    // No window: no second status, no burst; not local: no host facts.
    assert!(snap.status_after.is_empty() && snap.burst.is_none() && snap.host.is_none());
    assert!(
        snap.refused.is_empty() && snap.journal.is_empty(),
        "{snap:?}"
    );
    // MariaDB has no @@server_uuid: the identity statements fall through to the third; the
    // collection then reads in this order.
    let log = fake.log();
    let pos = |p: &str| {
        log.iter()
            .position(|s| s.starts_with(p))
            .unwrap_or_else(|| panic!("{p} never sent: {log:#?}"))
    };
    assert!(log[0].starts_with("SELECT @@server_uuid"));
    assert!(pos("SELECT NULL, CAST(UNIX_TIMESTAMP()") < pos("SELECT VERSION()"));
    assert!(pos("SELECT VERSION()") < pos("SHOW GLOBAL VARIABLES"));
    assert!(pos("SHOW ENGINE INNODB STATUS") < pos("SHOW GLOBAL STATUS"));
    assert_eq!(log.last().map(String::as_str), Some("SHOW GLOBAL STATUS"));
}

#[test]
fn a_refused_statement_becomes_a_refusal_not_a_failure() {
    let _j = own_journal();
    let fake = Scripted::recorded(MARIADB_10_11).unwrap();
    fake.answer(
        "SHOW ENGINE INNODB STATUS",
        Reply::Error {
            code: 1227,
            message: "Access denied; you need (at least one of) the PROCESS privilege(s) for this operation".into(),
        },
    );
    let snap = collect(&fake);
    assert_eq!(snap.innodb_status, None);
    let r: Vec<(&str, &str)> = snap
        .refused
        .iter()
        .map(|r| (r.what.as_str(), r.privilege.as_str()))
        .collect();
    assert_eq!(r, [("SHOW ENGINE INNODB STATUS", "PROCESS")]);
    // Everything else was still read.
    assert_eq!(snap.variables, recorded_pairs("SHOW GLOBAL VARIABLES"));
}

#[test]
fn the_version_query_failing_fails_the_collection() {
    let _j = own_journal();
    let fake = Scripted::recorded(MARIADB_10_11).unwrap();
    fake.answer(
        "SELECT VERSION(), @@version_comment",
        Reply::Error {
            code: 1045,
            message: "Access denied for user 'monitor'".into(),
        },
    );
    let e = collect_on(
        &remote(),
        &|| fake.connect(),
        &opts(),
        &AtomicBool::new(false),
        &mut Silent,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("access denied for monitor@db.example"),
        "{e}"
    );
}

/// A record of a change to the server `fake` is, made by a spinscope that is gone.
fn left_changed(fake: &Scripted, endpoint: &str) -> Record {
    let server = journal::identify(&mut *fake.session(), endpoint, "-h db.example").unwrap();
    let mut holder = journal::me();
    holder.pid_start += 1; // this pid, another start: a process that is gone
    Record {
        id: journal::new_id(),
        server,
        what: "innodb_spin_wait_delay".into(),
        original: "4".into(),
        set_to: "6000".into(),
        check_sql: "SELECT @@GLOBAL.innodb_spin_wait_delay".into(),
        restore_sql: vec!["SET GLOBAL innodb_spin_wait_delay = 4".into()],
        holder,
        opened_unix_s: journal::now_unix() - 60,
        lock: Some("spinscope:innodb_spin_wait_delay".into()),
        server_copy: None,
        also_ours: Vec::new(),
        around: BTreeMap::new(),
    }
}

/// The same recorded server under another identity (another host name).
fn other_server() -> Scripted {
    let text = MARIADB_10_11.replace("\tspinscope-recorded-host\t", "\tanother-host\t");
    Scripted::recorded(&text).unwrap()
}

#[test]
fn a_snapshot_carries_its_own_servers_journal_findings_only() {
    let j = own_journal();
    let a = Scripted::recorded(MARIADB_10_11).unwrap();
    let b = other_server();
    journal::save_in(j.path(), &left_changed(&a, "a:3306")).unwrap();
    // Read B first, then A, then B again: the order of connections decides nothing.
    for (fake, want) in [(&b, 0), (&a, 1), (&b, 0)] {
        let snap = collect(fake);
        let kinds: Vec<EntryKind> = snap.journal.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, vec![EntryKind::LeftChanged; want]);
        let notes = snap
            .notes
            .iter()
            .filter(|n| n.starts_with("change journal: warning: innodb_spin_wait_delay"))
            .count();
        assert_eq!(notes, want, "{:?}", snap.notes);
    }
}

#[test]
fn the_recorded_identity_names_the_recording_host() {
    // The fixture's host name is replaced by a fixed one so `other_server` can change it.
    let a = Scripted::recorded(MARIADB_10_11).unwrap();
    let ia = journal::identify(&mut *a.session(), "a", "").unwrap();
    let ib = journal::identify(&mut *other_server().session(), "b", "").unwrap();
    assert!(ia.key.starts_with("spinscope-recorded-host:"), "{}", ia.key);
    assert!(!ia.same_as(&ib));
    let keys: BTreeSet<String> = [ia.key, ib.key].into();
    assert_eq!(keys.len(), 2);
}

#[test]
fn the_collectors_notes_go_to_its_meter_not_to_stderr() {
    let j = own_journal();
    let fake = Scripted::recorded(MARIADB_10_11).unwrap();
    journal::save_in(j.path(), &left_changed(&fake, "a:3306")).unwrap();
    // The recorded server runs with performance_schema OFF: asking for the instruments over a
    // window says so; the journal's warning is said too (not quiet).
    let o = CollectOpts {
        window_s: 0.05,
        enable_instruments: true,
        quiet_journal: false,
        ..opts()
    };
    let mut said = Vec::new();
    let snap = collect_on(
        &remote(),
        &|| fake.connect(),
        &o,
        &AtomicBool::new(false),
        &mut crate::meter::Notes(|t: &str| said.push(t.to_string())),
    )
    .unwrap();
    let pfs_note = snap.pfs.as_ref().and_then(|p| p.note.clone()).unwrap();
    assert!(pfs_note.contains("performance_schema is OFF"), "{pfs_note}");
    assert_eq!(said.len(), 2, "{said:#?}");
    assert!(
        said[0].starts_with("warning: innodb_spin_wait_delay on a:3306 was changed from 4 to 6000")
    );
    assert_eq!(said[1], pfs_note);
    // The window sampled the recorded counters.
    assert!(snap.burst.as_ref().is_some_and(|b| !b.points.is_empty()));
}
