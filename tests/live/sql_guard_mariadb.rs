//! Issue 24, item 4, against a real throwaway MariaDB (performance_schema on): `sweep run
//! --sql` with `--allow-writes-outside` and a statement that writes a system schema (the
//! issue's row: `UPDATE performance_schema.setup_instruments ...`) is refused before anything
//! runs: exit 2, one line naming the line and the statement, no instrument, consumer,
//! account, sys setting or global changed, no step run. The flag still lets a statement write
//! another user schema (the control that the test can see a write).

use crate::common;
use common::server_cmd as cmd;
use std::process::{Command, Output};

use common::mariadb::{self, MariaDb};

fn run(c: &mut Command) -> (Option<i32>, String, String) {
    let o: Output = c.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Everything the refused statements would touch, as text.
fn server_state(db: &MariaDb) -> String {
    db.sql(
        "SELECT (SELECT GROUP_CONCAT(NAME, ENABLED, TIMED ORDER BY NAME) FROM performance_schema.setup_instruments), \
         (SELECT GROUP_CONCAT(NAME, ENABLED ORDER BY NAME) FROM performance_schema.setup_consumers), \
         (SELECT COUNT(*) FROM performance_schema.setup_actors), \
         (SELECT GROUP_CONCAT(User, Priv ORDER BY User, Host) FROM mysql.global_priv), \
         (SELECT GROUP_CONCAT(variable, value) FROM sys.sys_config), \
         @@global.innodb_spin_wait_delay, @@global.max_connections",
    )
}

#[test]
fn system_schema_writes_are_refused_before_anything_runs() {
    if mariadb::skip_reason("sql_guard_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&["--performance-schema=ON"]);
    let home = db.dir().join("state");
    let (code, _, err) =
        run(cmd(&db, &home, &["sweep", "prepare"]).args(["--tables", "1", "--table-size", "100"]));
    assert_eq!(code, Some(0), "{err}");
    db.sql("CREATE DATABASE appdb; CREATE TABLE appdb.t (id INT PRIMARY KEY, c VARCHAR(20)); INSERT INTO appdb.t VALUES (1, 'mine')");
    db.sql("SET GLOBAL innodb_spin_wait_delay = 7");
    let before = server_state(&db);
    let statements = [
        "UPDATE performance_schema.setup_instruments SET ENABLED='YES', TIMED='YES' WHERE NAME LIKE 'wait/synch/%'",
        "UPDATE `PERFORMANCE_SCHEMA`.setup_consumers SET ENABLED = 'YES'",
        "UPDATE {table} t JOIN performance_schema.setup_instruments s ON t.id = 1 SET s.ENABLED = 'YES'",
        "INSERT INTO performance_schema.setup_actors VALUES ('%', 'x', '%', 'YES', 'YES')",
        "CALL sys.ps_setup_enable_instrument('wait/synch')",
        "UPDATE sys.sys_config SET value = '1' WHERE variable = 'statement_truncate_len'",
        "DELETE FROM mysql.global_priv WHERE User = 'nobody'",
        "GRANT SELECT ON appdb.* TO 'x'@'%' IDENTIFIED BY 'pw'",
        "SET GLOBAL max_connections = 17",
    ];
    let dir = tempfile::tempdir().unwrap();
    for (i, st) in statements.iter().enumerate() {
        let sql = dir.path().join(format!("w{i}.sql"));
        // A harmless first line: the refusal names line 2.
        std::fs::write(
            &sql,
            format!("SELECT c FROM {{table}} WHERE id={{id}}\n{st}\n"),
        )
        .unwrap();
        let (code, out, err) = run(cmd(&db, &home, &["sweep", "run"]).args([
            "--sql",
            sql.to_str().unwrap(),
            "--allow-writes-outside",
            "--threads",
            "1",
            "--duration",
            "0.3",
            "--variant",
            "d9:innodb_spin_wait_delay=9",
        ]));
        assert_eq!(code, Some(2), "{st}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{st}: one line: {err}");
        assert!(err.contains("line 2"), "{st}: {err}");
        assert!(err.contains("refused"), "{st}: {err}");
        assert!(out.is_empty(), "{st}: no step ran: {out}");
        assert_eq!(server_state(&db), before, "{st}: the server changed");
    }
    // The static check needs no server: refused before connecting (exit 2, not 3).
    let sql = dir.path().join("w0.sql");
    let o = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "sweep",
            "run",
            "-h",
            "127.0.0.1",
            "-P",
            "1",
            "--allow-writes-outside",
        ])
        .arg("--sql")
        .arg(&sql)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("performance_schema"), "{err}");

    // Control: the flag still allows a write to another user schema, and the test sees it.
    let sql = dir.path().join("user.sql");
    std::fs::write(&sql, "UPDATE appdb.t SET c = 'swept' WHERE id = 1\n").unwrap();
    let (code, _, err) = run(cmd(&db, &home, &["sweep", "run"]).args([
        "--sql",
        sql.to_str().unwrap(),
        "--allow-writes-outside",
        "--threads",
        "1",
        "--warmup",
        "0",
        "--duration",
        "0.3",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(db.sql("SELECT c FROM appdb.t").trim(), "swept");
    assert_eq!(server_state(&db), before);
}
