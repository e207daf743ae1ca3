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
