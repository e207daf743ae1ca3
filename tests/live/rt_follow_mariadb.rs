//! `spinscope rt --pid` and `rt -S` follow a throwaway MariaDB: its TCP port found without
//! `--port`, a `--port` that differs said, and its clients on the Unix socket counted (they are
//! not on the wire, so "no requests" says why). Needs root or CAP_NET_RAW (the capture).

use crate::common;
use common::mariadb::{self, MariaDb};
use spinscope::rt::stats::IntervalReport;

fn socket_client(db: &MariaDb) -> mysql::Conn {
    let o = mysql::OptsBuilder::new()
        .socket(Some(db.socket.to_str().unwrap()))
        .user(Some("root"));
    mysql::Conn::new(o).expect("a socket client of the throwaway server")
}

/// `rt ARGS --duration 300ms --json`: the total and stderr.
fn total(args: &[&str]) -> (IntervalReport, String) {
    let out = std::process::Command::new(common::bin())
        .arg("rt")
        .args(args)
        .args(["--duration", "300ms", "--interval", "100ms", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "rt {args:?}: {err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let t = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    (t, err)
}

#[test]
fn pid_and_socket_flags_find_the_port_and_count_socket_clients() {
    if mariadb::skip_reason("rt follows a server", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    let clients: Vec<mysql::Conn> = (0..3).map(|_| socket_client(&db)).collect();
    let pid = db.pid().to_string();
    let (t, err) = total(&["--pid", &pid]);
    let s = t.server.expect("the followed server in the total");
    assert_eq!(s.tcp_ports, vec![db.port], "{err}");
    assert_eq!(s.pid, Some(db.pid()));
    assert_eq!(s.unix_socket_clients, Some(3), "{err}");
    assert!(
        err.contains(&format!("TCP port {}", db.port))
            && err.contains("3 clients on the Unix socket (/proc): not on the wire"),
        "{err}"
    );
    let sock = db.socket.to_str().unwrap();
    let (t, err) = total(&["-S", sock, "-u", "root", "--no-defaults"]);
    let s = t.server.expect("the followed server in the total");
    assert_eq!(
        (s.tcp_ports, s.pid),
        (vec![db.port], Some(db.pid())),
        "{err}"
    );
    assert_eq!(
        s.unix_socket_clients,
        Some(3),
        "rt's own session is not counted: {err}"
    );
    assert_eq!(s.unix_clients_from.as_deref(), Some("processlist"));
    let other = (db.port - 1).to_string();
    let (t, err) = total(&["--pid", &pid, "--port", &other, "--interface", "lo"]);
    assert_eq!(t.server.unwrap().ports_given_differ, vec![db.port - 1]);
    assert!(
        err.contains(&format!(
            "--port {other} is not where it listens ({})",
            db.port
        )),
        "{err}"
    );
    drop(clients);
}
