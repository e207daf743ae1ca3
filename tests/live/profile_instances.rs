//! `profile --process mariadbd` on a host with several instances (issue 36 §6): the refusal names
//! each pid with the port, socket and data directory it serves, so the DBA can pick one.

use crate::common;
use common::mariadb::{self, MariaDb};

#[test]
fn several_mariadbd_are_listed_with_port_socket_and_datadir() {
    if mariadb::skip_reason("profile_instances", mariadb::available().err()).is_some() {
        return;
    }
    let (a, b) = (MariaDb::start(&[]), MariaDb::start(&[]));
    let out = std::process::Command::new(common::bin())
        .args(["profile", "--duration", "1s", "--process", "mariadbd"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "bad input: the user must choose"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("choose one with --pid PID"), "{err}");
    for db in [&a, &b] {
        let line = err
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("pid {}:", db.pid())))
            .unwrap_or_else(|| panic!("pid {} not listed:\n{err}", db.pid()));
        assert!(line.contains(&format!("port {}", db.port)), "{line}");
        assert!(
            line.contains(&format!("socket {}", db.socket.display())),
            "{line}"
        );
        let datadir = db.dir().join("data");
        assert!(
            line.contains(&format!("datadir {}", datadir.display())),
            "{line}"
        );
    }
}
