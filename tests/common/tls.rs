//! Certificates for the TLS tests, made with the `openssl` command (`apt-get install openssl`).

use std::path::{Path, PathBuf};

/// Run `openssl ARGS` in `dir`; a failure panics with openssl's own message.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed server certificate for `CN=localhost` in `dir`: (key.pem, cert.pem).
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ],
    );
    (dir.join("key.pem"), dir.join("cert.pem"))
}

/// A test CA and a server certificate it signed for the DNS name `localhost` only (so
/// `127.0.0.1` does not match it), in `dir`: (ca.pem, server-key.pem, server-cert.pem).
pub fn ca_signed_localhost(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| openssl(dir, args);
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=spinscope-test-ca",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server-key.pem",
        "-out",
        "server.csr",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
        "-out",
        "server-cert.pem",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server-key.pem"),
        dir.join("server-cert.pem"),
    )
}
