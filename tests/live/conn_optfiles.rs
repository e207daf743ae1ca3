//! Option files read like the mysql client: Debian 12's real layout, syntax quirks checked
//! against MariaDB's own `my_print_defaults`, include loops and caps, the order of the
//! default files, and a throwaway MariaDB reached over its socket through a defaults file and
//! through a positional `user@/path.sock`.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use spinscope::server::conn::{resolve_env, ConnArgs};
use spinscope::server::optfile::{load, Options, Source, CLIENT_GROUPS};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/optfiles");

/// Copy a fixture tree, replacing `from` in every file with the copy's directory.
fn copy_fixture(name: &str, from: &str) -> tempfile::TempDir {
    fn walk(src: &Path, dst: &Path, from: &str, root: &str) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            let d = dst.join(p.file_name().unwrap());
            if p.is_dir() {
                walk(&p, &d, from, root);
            } else {
                let t = std::fs::read_to_string(&p).unwrap().replace(from, root);
                std::fs::write(d, t).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let root = format!("{}/", dir.path().display());
    let from = format!("{}/", from.trim_end_matches('/'));
    walk(&Path::new(FIX).join(name), dir.path(), &from, &root);
    dir
}

fn only(f: PathBuf) -> Options {
    load(&Source::Only(f), None, CLIENT_GROUPS).unwrap()
}

fn args() -> ConnArgs {
    ConnArgs {
        connect_timeout: 10,
        query_timeout: 60,
        ..Default::default()
    }
}

fn no_prompt() -> spinscope::Result<String> {
    Err(spinscope::Error::bad_input("no prompt in tests"))
}

#[test]
fn debian12_layout_gives_the_socket_through_includedir() {
    let d = copy_fixture("debian12", "/etc/mysql");
    let o = only(d.path().join("my.cnf"));
    assert_eq!(o.value("socket"), Some("/run/mysqld/mysqld.sock"));
    let read: Vec<String> = o
        .files
        .iter()
        .map(|f| f.strip_prefix(d.path()).unwrap().display().to_string())
        .collect();
    assert_eq!(
        read,
        [
            "my.cnf",
            "conf.d/mysql.cnf",
            "conf.d/mysqldump.cnf",
            "mariadb.conf.d/50-client.cnf",
            "mariadb.conf.d/50-mysql-clients.cnf",
            "mariadb.conf.d/50-mysqld_safe.cnf",
            "mariadb.conf.d/50-server.cnf",
            "mariadb.conf.d/60-galera.cnf",
        ]
    );
    // [mysqldump] and [mysqld] options are not the client's.
    assert!(
        o.get("quick").is_none() && o.get("datadir").is_none(),
        "{o:?}"
    );
    // No host anywhere: localhost, i.e. the socket the files name.
    let mut a = args();
    a.defaults_file = Some(d.path().join("my.cnf"));
    let t = resolve_env(&a, None, None, &no_prompt).unwrap();
    assert_eq!(t.socket, Some(PathBuf::from("/run/mysqld/mysqld.sock")));
    // A host other than localhost means TCP, and the socket is dropped.
    a.host = Some("db1".into());
    let t = resolve_env(&a, None, None, &no_prompt).unwrap();
    assert_eq!((t.socket, t.host.as_str(), t.port), (None, "db1", 3306));
}

#[test]
fn quirks_are_read_as_the_client_reads_them() {
    let d = copy_fixture("quirks", "@DIR@");
    let o = only(d.path().join("my.cnf"));
    let v = |k: &str| o.value(k).map(str::to_string);
    let sock = format!("{}/quirk dir/mysqld.sock", d.path().display());
    assert_eq!(v("socket"), Some(sock.clone()));
    assert_eq!(v("password").as_deref(), Some("pa#ss;word 2"));
    assert_eq!(v("port").as_deref(), Some("3307"));
    assert_eq!(v("ssl-mode").as_deref(), Some("DISABLED"));
    assert_eq!(v("database").as_deref(), Some("it''s"));
    // The loop a -> b -> a is read once; conf.d's .cnf files in name order, not the .txt.
    assert_eq!(v("host").as_deref(), Some("from-b"));
    assert_eq!(v("user").as_deref(), Some("from_conf_d_20"));
    assert!(!o.files.iter().any(|f| f.ends_with("30-ignored.txt")));
    let mut a = args();
    a.defaults_file = Some(d.path().join("my.cnf"));
    let t = resolve_env(&a, None, None, &no_prompt).unwrap();
    // The files name host from-b: TCP to it, the port from the files.
    assert_eq!((t.host.as_str(), t.port, t.socket), ("from-b", 3307, None));
    assert_eq!(t.password.as_deref(), Some("pa#ss;word 2"));
    assert_eq!(t.user, "from_conf_d_20");
    // --print-defaults hides the password.
    let p = spinscope::server::conn::print_defaults_text(&a).unwrap();
    assert!(
        p.contains("--password=*****") && !p.contains("pa#ss"),
        "{p}"
    );
    assert!(
        p.contains("--port=3307") && p.contains("--user=from_conf_d_20"),
        "{p}"
    );
}

/// Last value per option as MariaDB's `my_print_defaults` prints them for the client's groups.
fn my_print_defaults(file: &Path) -> Option<BTreeMap<String, String>> {
    let bin = common::mariadb::which("my_print_defaults");
    if common::mariadb::skip_reason(
        "my_print_defaults comparison",
        bin.is_none().then(|| {
            "my_print_defaults is not installed (apt-get install mariadb-server-core)".into()
        }),
    )
    .is_some()
    {
        return None;
    }
    let out = Command::new(bin.unwrap())
        .arg(format!("--defaults-file={}", file.display()))
        .args(CLIENT_GROUPS)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = BTreeMap::new();
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let l = l.strip_prefix("--").unwrap();
        let (k, v) = l.split_once('=').unwrap_or((l, ""));
        let k = k.to_ascii_lowercase().replace('_', "-");
        let k = k.strip_prefix("loose-").unwrap_or(&k).to_string();
        m.insert(k, v.to_string());
    }
    Some(m)
}

#[test]
fn same_values_as_my_print_defaults() {
    for (fixture, from) in [("quirks", "@DIR@"), ("debian12", "/etc/mysql")] {
        let d = copy_fixture(fixture, from);
        let f = d.path().join("my.cnf");
        let Some(theirs) = my_print_defaults(&f) else {
            return;
        };
        let o = only(f);
        let ours: BTreeMap<String, String> = o
            .entries
            .iter()
            .map(|e| (e.key.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        assert!(theirs.contains_key("socket"), "{fixture}: {theirs:?}");
        assert_eq!(ours, theirs, "{fixture}");
    }
}

#[test]
fn loops_depth_and_size_are_bounded() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: usize| d.path().join(format!("f{n}.cnf"));
    // A chain deeper than the client follows is an error naming the file.
    for n in 0..14 {
        std::fs::write(
            p(n),
            format!("[client]\nuser=u{n}\n!include {}\n", p(n + 1).display()),
        )
        .unwrap();
    }
    let e = load(&Source::Only(p(0)), None, CLIENT_GROUPS).unwrap_err();
    assert!(e.to_string().contains("nested more than"), "{e}");
    // A file that includes itself is read once.
    std::fs::write(
        p(0),
        format!("[client]\nuser=self\n!include {}\n", p(0).display()),
    )
    .unwrap();
    let o = only(p(0));
    assert_eq!((o.files.len(), o.value("user")), (1, Some("self")));
    // An endless or huge file is refused, not read to the end.
    let big = d.path().join("big.cnf");
    std::fs::write(&big, "#".repeat(2 << 20)).unwrap();
    let e = load(&Source::Only(big), None, CLIENT_GROUPS).unwrap_err();
    assert!(e.to_string().contains("larger than"), "{e}");
    // A missing --defaults-file / --defaults-extra-file is bad input; --no-defaults reads none.
    let missing = d.path().join("none.cnf");
    assert!(load(&Source::Only(missing.clone()), None, CLIENT_GROUPS).is_err());
    assert!(load(
        &Source::Standard {
            extra: Some(missing)
        },
        None,
        CLIENT_GROUPS
    )
    .is_err());
    assert!(load(&Source::None, None, CLIENT_GROUPS)
        .unwrap()
        .files
        .is_empty());
}

#[test]
fn extra_file_comes_before_the_users_file() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".my.cnf"), "[client]\nuser=home\n").unwrap();
    let extra = home.path().join("extra.cnf");
    std::fs::write(&extra, "[client]\nuser=extra\npassword=x\n").unwrap();
    let o = load(
        &Source::Standard {
            extra: Some(extra.clone()),
        },
        Some(home.path()),
        CLIENT_GROUPS,
    )
    .unwrap();
    assert_eq!(
        (o.value("user"), o.value("password")),
        (Some("home"), Some("x"))
    );
    let n = o.files.len();
    assert_eq!(o.files[n - 2..], [extra, home.path().join(".my.cnf")]);
}

fn spin_from_server(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["spin", "--from-server", "--cpu", "broadwell", "--json"])
        .args(args)
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_UNIX_PORT")
        .output()
        .unwrap()
}

#[test]
fn real_server_over_its_socket_from_a_defaults_file_and_a_positional() {
    if common::mariadb::skip_reason("optfile server test", common::mariadb::available().err())
        .is_some()
    {
        return;
    }
    let db = common::mariadb::MariaDb::start(&[]);
    // A user only this server has: reaching another server (the machine's own) would fail.
    db.sql("CREATE USER spinscope_t@localhost; GRANT SELECT ON *.* TO spinscope_t@localhost");
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("client.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[client-server]\nsocket = \"{}\"  # the throwaway server\n[client]\nuser = spinscope_t\n[mysqld]\nuser = nobody\n",
            db.socket.display()
        ),
    )
    .unwrap();
    let cnf_s = cnf.to_str().unwrap();
    let out = spin_from_server(&["--defaults-file", cnf_s]);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && so.contains("MariaDB"),
        "{so}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same server as a positional user@/socket, no option file.
    let target = format!("spinscope_t@{}", db.socket.display());
    let out = spin_from_server(&["--no-defaults", &target]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --print-defaults shows what the file gives, and connects to nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["restore", "--defaults-file", cnf_s, "--print-defaults"])
        .output()
        .unwrap();
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}");
    assert!(
        so.contains(&format!("--socket={}", db.socket.display()))
            && so.contains("--user=spinscope_t"),
        "{so}"
    );
    assert!(!so.contains("nobody"), "{so}");
}
