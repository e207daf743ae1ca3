//! Integration: TLS in the events client against throwaway MariaDB servers, one with TLS (a
//! certificate for `localhost` signed by a test CA) and one without: every `--ssl-mode`
//! connects (with or without TLS) or refuses exactly as the thread client does, which the
//! server's own `Ssl_accepts` confirms; and a short sweep over TLS runs on the events client,
//! its JSON saying `client: {kind: events, tls: true}`.

use crate::common;
use std::path::{Path, PathBuf};

use common::mariadb::{self, MariaDb};
use spinscope::load::session_tls;
use spinscope::server::conn::{connect_target, resolve, ConnArgs, SslMode, Target};
use spinscope::sweep::wire_connector;

fn start(extra: &[&str]) -> Option<MariaDb> {
    if mariadb::skip_reason("sweep_tls", mariadb::available().err()).is_some() {
        return None;
    }
    let mut args = vec!["--max-connections=100"];
    args.extend_from_slice(extra);
    let db = MariaDb::start(&args);
    // In-process sweeps keep their change journal in the binary's own state directory.
    common::lib_env();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["sweep", "prepare", "--socket"])
        .arg(&db.socket)
        .args(["--user", "root", "--no-defaults", "--schema", "spinscope"])
        .args(["--tables", "1", "--table-size", "500"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(db)
}

/// The server with TLS: (server, the certificates' directory, the CA that signed its
/// certificate, another CA).
fn tls_server() -> Option<(MariaDb, tempfile::TempDir, PathBuf, PathBuf)> {
    let certs = tempfile::tempdir().unwrap();
    let (ca, key, cert) = common::tls::ca_signed_localhost(certs.path());
    let other = certs.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let (_, other_ca) = common::tls::self_signed(&other);
    let db = start(&[
        &format!("--ssl-cert={}", cert.display()),
        &format!("--ssl-key={}", key.display()),
    ])?;
    Some((db, certs, ca, other_ca))
}

fn target(db: &MariaDb, host: &str, mode: SslMode, ca: Option<&Path>) -> Target {
    resolve(&ConnArgs {
        host: Some(host.into()),
        port: Some(db.port),
        user: Some("root".into()),
        no_defaults: true,
        ssl_mode: Some(mode),
        ssl_ca: ca.map(Path::to_path_buf),
        connect_timeout: 10,
        query_timeout: 30,
        ..Default::default()
    })
    .unwrap()
}

fn socket_target(db: &MariaDb, mode: SslMode) -> Target {
    resolve(&ConnArgs {
        socket: Some(db.socket.clone()),
        user: Some("root".into()),
        no_defaults: true,
        ssl_mode: Some(mode),
        connect_timeout: 10,
        query_timeout: 30,
        ..Default::default()
    })
    .unwrap()
}

/// The server's count of TLS handshakes that completed (a refused one may be counted in
/// `Ssl_accepts` only after the next case began), read over its socket (never TLS there).
fn accepts(db: &MariaDb) -> u64 {
    use mysql::prelude::Queryable;
    let mut c = connect_target(&socket_target(db, SslMode::Disabled)).unwrap();
    c.query_first::<(String, u64), _>("SHOW GLOBAL STATUS LIKE 'Ssl_finished_accepts'")
        .unwrap()
        .unwrap()
        .1
}

/// What a client did: None refused, Some(tls) connected.
type Got = Option<bool>;

/// Connect with the thread client and with the events client; their answers, checked against
/// the server's TLS handshakes.
fn both(db: &MariaDb, t: &Target, what: &str) -> (Got, Got) {
    let before = accepts(db);
    let thread = match connect_target(t) {
        Ok(mut c) => Some(session_tls(&mut c)),
        Err(e) => {
            eprintln!("{what}: thread client: {e}");
            None
        }
    };
    let mid = accepts(db);
    let events = match wire_connector(t, "spinscope")() {
        Ok(c) => Some(c.tls()),
        Err(e) => {
            eprintln!("{what}: events client: {e}");
            None
        }
    };
    let after = accepts(db);
    // An events connection that says TLS made one handshake on the server, a plain one none.
    if events.is_some() {
        assert_eq!(
            after - mid,
            u64::from(events == Some(true)),
            "{what}: events"
        );
    }
    if thread.is_some() {
        assert_eq!(mid - before >= 1, thread == Some(true), "{what}: thread");
    }
    (thread, events)
}

#[test]
fn every_ssl_mode_connects_or_refuses_as_the_thread_client_does() {
    let Some((db, _certs, ca, other_ca)) = tls_server() else {
        return;
    };
    let on = Some(true);
    let plain = Some(false);
    let refused = None;
    let cases: Vec<(&str, Target, Got)> = vec![
        (
            "TLS server, DISABLED",
            target(&db, "127.0.0.1", SslMode::Disabled, None),
            plain,
        ),
        (
            "TLS server, PREFERRED",
            target(&db, "127.0.0.1", SslMode::Preferred, None),
            on,
        ),
        (
            "TLS server, REQUIRED",
            target(&db, "127.0.0.1", SslMode::Required, None),
            on,
        ),
        (
            "TLS server, REQUIRED with a CA that did not sign (not checked)",
            target(&db, "127.0.0.1", SslMode::Required, Some(&other_ca)),
            on,
        ),
        (
            "TLS server, VERIFY_CA, the CA, another name",
            target(&db, "127.0.0.1", SslMode::VerifyCa, Some(&ca)),
            on,
        ),
        (
            "TLS server, VERIFY_CA, another CA",
            target(&db, "127.0.0.1", SslMode::VerifyCa, Some(&other_ca)),
            refused,
        ),
        (
            "TLS server, VERIFY_IDENTITY, the CA, another name",
            target(&db, "127.0.0.1", SslMode::VerifyIdentity, Some(&ca)),
            refused,
        ),
        (
            "TLS server, VERIFY_IDENTITY, the CA, its name",
            target(&db, "localhost", SslMode::VerifyIdentity, Some(&ca)),
            on,
        ),
        (
            "TLS server, VERIFY_IDENTITY, another CA, its name",
            target(&db, "localhost", SslMode::VerifyIdentity, Some(&other_ca)),
            refused,
        ),
        (
            "TLS server, socket, REQUIRED (never TLS on a socket)",
            socket_target(&db, SslMode::Required),
            plain,
        ),
    ];
    for (what, t, want) in &cases {
        let (thread, events) = both(&db, t, what);
        assert_eq!(thread, *want, "{what}: the thread client");
        assert_eq!(events, *want, "{what}: the events client");
    }
    drop(db);

    let Some(db) = start(&["--skip-ssl"]) else {
        return;
    };
    let cases: Vec<(&str, Target, Got)> = vec![
        (
            "plain server, DISABLED",
            target(&db, "127.0.0.1", SslMode::Disabled, None),
            plain,
        ),
        (
            "plain server, PREFERRED",
            target(&db, "127.0.0.1", SslMode::Preferred, None),
            plain,
        ),
        (
            "plain server, REQUIRED",
            target(&db, "127.0.0.1", SslMode::Required, None),
            refused,
        ),
        (
            "plain server, VERIFY_CA",
            target(&db, "127.0.0.1", SslMode::VerifyCa, Some(&ca)),
            refused,
        ),
        (
            "plain server, VERIFY_IDENTITY",
            target(&db, "localhost", SslMode::VerifyIdentity, Some(&ca)),
            refused,
        ),
    ];
    for (what, t, want) in &cases {
        let (thread, events) = both(&db, t, what);
        assert_eq!(thread, *want, "{what}: the thread client");
        assert_eq!(events, *want, "{what}: the events client");
    }
}

/// `sweep run` over TCP with `args`; the saved document's steps' `client` and errors.
fn sweep(db: &MariaDb, dir: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let save = dir.join("sweep.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "sweep",
            "run",
            "-h",
            "127.0.0.1",
            "-P",
            &db.port.to_string(),
        ])
        .args(["-u", "root", "--no-defaults", "--schema", "spinscope"])
        .args(["--workload", "point-select", "--threads", "2,3"])
        .args(["--warmup", "0.2", "--duration", "0.6", "--save"])
        .arg(&save)
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&save).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap().clone();
    assert_eq!(steps.len(), 2, "{args:?}");
    for s in &steps {
        assert!(s["txns"].as_u64().unwrap() > 0, "{args:?}: {s}");
        assert!(s["errors"].as_object().unwrap().is_empty(), "{args:?}: {s}");
    }
    steps
}

#[test]
fn a_short_sweep_over_tls_runs_on_the_events_client() {
    let Some((db, certs, _, _)) = tls_server() else {
        return;
    };
    let client = |s: &serde_json::Value| {
        (
            s["client"]["kind"].as_str().unwrap().to_string(),
            s["client"]["tls"].as_bool().unwrap(),
        )
    };
    for (args, kind, tls) in [
        (&["--ssl-mode", "REQUIRED"][..], "events", true),
        (&["--ssl-mode", "PREFERRED"][..], "events", true),
        (&["--ssl-mode", "DISABLED"][..], "events", false),
        (
            &["--ssl-mode", "REQUIRED", "--client", "threads"][..],
            "threads",
            true,
        ),
    ] {
        let before = accepts(&db);
        let steps = sweep(&db, certs.path(), args);
        let handshakes = accepts(&db) - before;
        for s in &steps {
            assert_eq!(client(s), (kind.to_string(), tls), "{args:?}: {s}");
        }
        // Every client connection of the 2 + 3 threads made its own TLS handshake.
        assert_eq!(
            handshakes >= 5,
            tls,
            "{args:?}: {handshakes} TLS handshakes"
        );
    }
}
