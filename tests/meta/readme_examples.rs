//! The README and the usage reference it points to (docs/USAGE.md) stay true: every
//! `spinscope` command line in their shell blocks parses with today's flags, and those that can
//! run in CI run, the README's first and then the reference's, in order, in one scratch
//! directory (HOME there too): the ones that need no server as written, the ones that need a server against a
//! throwaway MariaDB (tests/common/mariadb.rs: its socket and port put in for
//! /run/mysqld/mysqld.sock and 3306, its root without a password). The rest (made-up hosts, runs of
//! minutes, perf as root, a watcher that runs until stopped) are parsed only, each for a
//! stated reason.

use crate::common;
use std::path::Path;
use std::process::Command;

use clap::Parser;

/// The pages whose examples are checked, in the order they run, and the fewest `spinscope`
/// lines each must have (so that a page whose blocks stopped being ```sh is noticed).
const PAGES: [(&str, &str, usize); 2] = [
    ("README.md", include_str!("../../README.md"), 3),
    ("docs/USAGE.md", include_str!("../../docs/USAGE.md"), 20),
];

/// Shell lines of a page's ```sh blocks, `\` continuations joined, `$ ` prompts removed.
fn shell_lines(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut cont = String::new();
    for l in page.lines() {
        if l.starts_with("```") {
            in_sh = !in_sh && l.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let l = l.trim();
        if let Some(head) = l.strip_suffix('\\') {
            cont.push_str(head);
            continue;
        }
        let full = format!("{cont}{l}");
        cont.clear();
        let full = full.strip_prefix("$ ").unwrap_or(&full).trim();
        let full = full.strip_prefix("sudo ").unwrap_or(full).to_string();
        if !full.is_empty() && !full.starts_with('#') {
            out.push(full);
        }
    }
    out
}

/// Lines that install software or change the machine (packages, the toolchain, the service),
/// or read a file a skipped line would have made (`go tool pprof`, `profilecli upload` of a
/// profile recorded as root): never run by the tests, whose machine CI sets up (`.ci/run`,
/// deploy/debian/ for the package); `tests/offline/cli_pprof.rs` runs `go tool pprof` itself.
fn installs(l: &str) -> bool {
    let first = l.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        "apt-get"
            | "apt"
            | "curl"
            | "rustup"
            | "."
            | "git"
            | "cd"
            | "systemctl"
            | "sudoedit"
            | "mariadb"
            | "go"
            | "profilecli"
    ) || first.starts_with("deploy/")
        || first.starts_with("./deploy/")
}

/// Why a line is only parsed, or None when it runs.
fn parse_only(l: &str) -> Option<&'static str> {
    if l.contains("db1:") || l.contains("--inventory") || l.contains("10.0.0.") {
        Some("made-up servers")
    } else if l.starts_with("spinscope sweep run") || l.starts_with("spinscope tune") {
        Some("minutes of load: a benchmark, not a CI test (tests/live/sweep_mariadb.rs, tests/live/tune_mariadb.rs run short ones)")
    } else if l.contains("profile --process") {
        Some("perf as root on the one mariadbd (tests/live/profile_mariadb.rs)")
    } else if l.starts_with("spinscope watch") || l.contains("/var/lib/spinscope/watch/") {
        Some("runs until stopped (tests/live/watch_mariadb.rs)")
    } else if l.starts_with("spinscope rt") {
        Some("captures packets as root (tests/live/rt_mariadb.rs)")
    } else if l.contains("| man") {
        Some("needs man-db")
    } else {
        None
    }
}

/// The words `spinscope` gets from a command line, as bash splits them: the line runs with
/// `spinscope` (and `man`) as shell functions that print their arguments, in a scratch
/// directory and HOME so redirects land there.
fn argv(l: &str, scratch: &Path) -> Vec<String> {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "exec 3>&1 1>/dev/null; spinscope() {{ printf '%s\\0' spinscope \"$@\" >&3; }}; man() {{ :; }}; cargo() {{ :; }}; {l}"
        ))
        .current_dir(scratch)
        .env("HOME", scratch)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{l}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn every_readme_command_parses() {
    // Every shell line runs in order (mkdir, printf for real, in the scratch HOME) so that
    // redirects find their directories; `spinscope` lines are then parsed by the real CLI.
    let scratch = tempfile::tempdir().unwrap();
    for (name, page, least) in PAGES {
        let mut n = 0;
        for l in shell_lines(page) {
            if installs(&l) {
                continue;
            }
            let words = argv(&l, scratch.path());
            if !l.starts_with("spinscope ") {
                continue;
            }
            n += 1;
            let args = spinscope::server::conn::mysql_style_args(
                words.into_iter().map(Into::into).collect(),
            );
            if let Err(e) = spinscope::cli::Cli::try_parse_from(&args) {
                panic!("{name}: `{l}` does not parse: {e}");
            }
        }
        assert!(
            n >= least,
            "only {n} spinscope lines found in {name} (at least {least} expected)"
        );
    }
}

#[test]
fn readme_commands_run() {
    let db = match common::mariadb::skip_reason(
        "README commands against a server",
        common::mariadb::available().err(),
    ) {
        None => Some(common::mariadb::MariaDb::start(&[])),
        Some(_) => None,
    };
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::os::unix::fs::symlink(root.join("tests"), dir.path().join("tests")).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_spinscope")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (mut ran, mut parsed) = (Vec::new(), Vec::new());
    let lines = PAGES
        .iter()
        .flat_map(|(name, page, _)| shell_lines(page).into_iter().map(move |l| (*name, l)));
    for (name, l) in lines {
        if l.starts_with("cargo ") || l.starts_with("printf ") || installs(&l) {
            continue; // building (the test binary is built), a file for a skipped line, installs
        }
        if let Some(why) = parse_only(&l) {
            parsed.push(format!("{name}: {l}: {why}"));
            continue;
        }
        let needs_server = l.contains("mysqld.sock") || l.contains(" -P 3306");
        let mut cmd = l.clone();
        if needs_server {
            let Some(db) = &db else {
                parsed.push(format!("{name}: {l}: no MariaDB here"));
                continue;
            };
            cmd = cmd
                .replace("/run/mysqld/mysqld.sock", db.socket.to_str().unwrap())
                .replace(" -P 3306", &format!(" -P {}", db.port));
            // The throwaway server's root has no password: -p would prompt for an empty one.
            cmd = cmd.replace(" -p ", " ");
            // The server's root signs in over the socket without a password, as on Debian.
            if !cmd.contains(" -u ") {
                cmd = cmd.replacen(" --socket", " -u root --socket", 1);
            }
        }
        let run = || {
            Command::new("bash")
                .arg("-c")
                .arg(&cmd)
                .current_dir(dir.path())
                .env("HOME", dir.path())
                .env("PATH", &path)
                .env_remove("MYSQL_PWD")
                .env_remove("MYSQL_HOST")
                .output()
                .unwrap()
        };
        let mut out = run();
        // A probe (or a quick probe) the host is too busy for exits 3 and says "too busy": the
        // README's advice is to probe again when the host is quieter, so the test does, five
        // times at most, a second apart (the tests around it load this machine).
        for _ in 0..4 {
            let busy = out.status.code() == Some(3)
                && String::from_utf8_lossy(&out.stderr).contains("too busy");
            if !busy {
                break;
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
            out = run();
        }
        let code = out.status.code();
        // doctor exits 1 for findings at or above --fail-on: that is the example working.
        let ok = code == Some(0) || (l.contains("--fail-on") && code == Some(1));
        assert!(
            ok,
            "{name}: `{cmd}` exited {code:?}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran.push(format!("{name}: {l}"));
    }
    eprintln!(
        "ran {} README and docs/USAGE.md commands:\n  {}",
        ran.len(),
        ran.join("\n  ")
    );
    eprintln!("parsed only:\n  {}", parsed.join("\n  "));
    // What the examples promise exists afterwards.
    for f in [
        "this-host.json",
        "man/spinscope.1",
        ".local/share/bash-completion/completions/spinscope",
    ] {
        assert!(
            dir.path().join(f).exists(),
            "{f} missing after the README and docs/USAGE.md"
        );
    }
    assert!(ran.len() >= 10, "{ran:#?}");
    if db.is_some() {
        assert!(ran.iter().any(|l| l.contains("sweep prepare")), "{ran:#?}");
        assert!(dir.path().join("db1.json").exists());
    }
}
