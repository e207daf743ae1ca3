//! `restore --list` takes a server (issue 36 §8): with connection flags it lists only the
//! records of the server they reach, as the journal identifies a server (server-side facts);
//! without, every server's records, connecting to none. Two real throwaway MariaDB servers,
//! one open record written into the journal for each.

use crate::common;
use std::path::Path;
use std::process::Command;

use common::mariadb::MariaDb;
use spinscope::journal::{self, Record};

fn server() -> MariaDb {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    MariaDb::start(&[])
}

/// An open record for `what` on `db`, identified the way spinscope identifies servers; its
/// holder is a process that has ended.
fn record(db: &MariaDb, what: &str) -> Record {
    let opts = mysql::OptsBuilder::new()
        .socket(Some(db.socket.to_str().unwrap()))
        .user(Some("root"));
    let mut conn = mysql::Conn::new(opts).expect("connect");
    let endpoint = db.socket.display().to_string();
    let hint = format!("--socket {endpoint} -u root");
    let server = journal::identify(&mut conn, &endpoint, &hint).expect("identify");
    let mut holder = journal::me();
    let mut gone = Command::new("true").spawn().unwrap();
    holder.pid = gone.id();
    gone.wait().unwrap();
    Record {
        id: journal::new_id(),
        server,
        what: what.into(),
        original: "4".into(),
        set_to: "6000".into(),
        check_sql: format!("SELECT @@GLOBAL.{what}"),
        restore_sql: vec![format!("SET GLOBAL {what} = 4")],
        holder,
        opened_unix_s: journal::now_unix(),
        lock: None,
        server_copy: None,
        also_ours: vec![],
        around: Default::default(),
    }
}

fn list(home: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["restore", "--list", "--no-defaults"])
        .args(args)
        .env_remove("MYSQL_PWD")
        .env("XDG_STATE_HOME", home)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_with_a_server_shows_that_servers_records_only() {
    let a = server();
    let b = server();
    let home = tempfile::tempdir().unwrap();
    // Written where the spawned `restore` will look (its XDG_STATE_HOME), without touching this
    // process's environment: other tests of the binary run beside this one.
    let jdir = home.path().join("spinscope/journal");
    std::fs::create_dir_all(&jdir).unwrap();
    journal::save_in(&jdir, &record(&a, "innodb_spin_wait_delay")).unwrap();
    journal::save_in(&jdir, &record(&b, "innodb_sync_spin_loops")).unwrap();

    // Without a server: both, as before.
    let (code, all, err) = list(home.path(), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(all.starts_with("2 open change record(s) in "), "{all}");
    assert!(
        all.contains("innodb_spin_wait_delay") && all.contains("innodb_sync_spin_loops"),
        "{all}"
    );

    // With A's socket: A's record alone, and the count left out.
    let sa = a.socket.to_str().unwrap();
    let (code, only_a, err) = list(home.path(), &["-S", sa, "-u", "root"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        only_a.starts_with(&format!("1 open change record(s) for {sa} in ")),
        "{only_a}"
    );
    assert!(only_a.contains("1 more for other servers"), "{only_a}");
    assert!(only_a.contains("innodb_spin_wait_delay"), "{only_a}");
    assert!(!only_a.contains("innodb_sync_spin_loops"), "{only_a}");

    // With B's TCP port as a URL: B's alone (the same server by its server-side identity,
    // reached another way).
    let url = format!("mysql://root@127.0.0.1:{}", b.port);
    let (code, only_b, err) = list(home.path(), &["--url", &url]);
    assert_eq!(code, Some(0), "{err}");
    assert!(only_b.contains("innodb_sync_spin_loops"), "{only_b}");
    assert!(!only_b.contains("innodb_spin_wait_delay"), "{only_b}");

    // A server with nothing open says so, and points at the others.
    let c = server();
    let (code, none, err) = list(
        home.path(),
        &["-S", c.socket.to_str().unwrap(), "-u", "root"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(none.starts_with("no open change records for "), "{none}");
    assert!(none.contains("2 more for other servers"), "{none}");

    // An unreachable server named: exit 3, not everyone's records.
    let gone = home.path().join("nothing.sock");
    let (code, out, _) = list(home.path(), &["-S", gone.to_str().unwrap(), "-u", "root"]);
    assert_eq!(code, Some(3), "{out}");
    assert!(out.is_empty(), "{out}");
}
