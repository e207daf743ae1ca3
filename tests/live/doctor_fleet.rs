//! `spinscope doctor` over a fleet: two throwaway MariaDBs (tests/common/mariadb.rs), one
//! with a high spin delay, and a target nothing listens on, named in an inventory and on the
//! command line. Every server gets its row, the unreachable one with its error, the others
//! are diagnosed anyway, and the exit code says some could not be.

use crate::common;
use common::doctor_cmd;
use common::mariadb::MariaDb;
use spinscope::fleet::FleetDoc;

#[test]
fn fleet_of_two_servers_and_one_unreachable() {
    if let Some(_why) = common::mariadb::skip_reason(
        "fleet_of_two_servers_and_one_unreachable",
        common::mariadb::available().err(),
    ) {
        return;
    }
    let a = MariaDb::start(&[]);
    let b = MariaDb::start(&["--innodb-spin-wait-delay=6000"]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let inv = dir.path().join("fleet.txt");
    std::fs::write(
        &inv,
        format!(
            "# test fleet\nalpha root@{sa}\nbeta  root@127.0.0.1:{pb}   # TCP\n\nghost root@127.0.0.1:{dead}\n",
            sa = a.socket.display(),
            pb = b.port,
        ),
    )
    .unwrap();

    let out = doctor_cmd()
        .args([
            "--inventory",
            inv.to_str().unwrap(),
            "--window",
            "1",
            "--json",
        ])
        .args(["--connect-timeout", "3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr: {err}");
    let d: FleetDoc = serde_json::from_slice(&out.stdout).expect("spinscope.doctor-fleet/1");
    assert_eq!(d.schema, "spinscope.doctor-fleet/1");
    let names: Vec<&str> = d.servers.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta", "ghost"]);
    assert_eq!((d.diagnosed, d.failed), (2, 1));
    let ghost = &d.servers[2];
    assert!(ghost.doc.is_none());
    assert!(
        ghost
            .error
            .as_deref()
            .unwrap_or("")
            .contains(&dead.to_string()),
        "{:?}",
        ghost.error
    );
    // Both live servers were sampled for their window and priced.
    for r in &d.servers[..2] {
        let doc = r.doc.as_ref().expect("a document");
        assert!(doc.version.contains("MariaDB"), "{}", doc.version);
        let burst = doc.burst.as_ref().expect("burst sampler ran");
        // Local servers: running threads from /proc at 100 Hz, the SQL counters at 10 Hz.
        let proc = burst.proc_running.as_ref().expect("a /proc series");
        assert!(proc.samples >= 20, "{} /proc samples", proc.samples);
        assert!(burst.samples >= 5, "{} SQL samples", burst.samples);
        assert!(r.summary.as_ref().unwrap().max_spin_us.is_some());
    }
    // The 6000 delay spins far longer per attempt than the default.
    let spin = |i: usize| d.servers[i].summary.as_ref().unwrap().max_spin_us.unwrap();
    assert!(spin(1) > 50.0 * spin(0), "{} vs {}", spin(1), spin(0));
    assert!(err.contains("[3/3]"), "progress lines: {err}");

    // The same servers as positional targets, as a table with details.
    let out = doctor_cmd()
        .arg(format!("root@{}", a.socket.display()))
        .arg(format!("root@127.0.0.1:{}", b.port))
        .args(["--window", "0", "--details"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("2 of 2 servers diagnosed"), "{text}");
    // Summary table plus one full report per server.
    assert_eq!(
        text.matches("spinscope doctor: MariaDB").count(),
        2,
        "{text}"
    );
    assert!(text.contains("vs design"), "{text}");

    // A broken inventory line is bad input naming the file and line.
    std::fs::write(&inv, "a b c\n").unwrap();
    let out = doctor_cmd()
        .args(["--inventory", inv.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 1") && err.contains("fleet.txt"), "{err}");
}
