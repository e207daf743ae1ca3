//! A throwaway MariaDB server for integration tests: a fresh datadir in a temp dir
//! (mariadb-install-db), its own socket and 127.0.0.1 port, run as root (`--user=root`), and
//! stopped in `Drop` even when the test panics. Nothing outside the temp dir is touched.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

pub const MARIADBD: &str = "/usr/sbin/mariadbd";

/// Path of a program on PATH or in the usual sbin dirs.
pub fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Path::new(prog).exists().then(|| PathBuf::from(prog));
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/usr/bin", "/sbin"])
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.exists());
    found
}

/// Whether everything needed to run a throwaway server is installed.
pub fn available() -> Result<(), String> {
    for p in [MARIADBD, "mariadb-install-db", "mariadb", "mariadb-admin"] {
        if which(p).is_none() {
            return Err(format!(
                "{p} is not installed (apt-get install mariadb-server mariadb-client)"
            ));
        }
    }
    Ok(())
}

/// The environment variable that lets `cargo test` skip the tests whose programs (MariaDB,
/// prometheus, perf, chromium) are missing instead of failing them.
pub const SKIP_VAR: &str = "SPINSCOPE_SKIP_MISSING";

/// The dependency check of a test that needs a program: `Some(reason)` means skip. A missing
/// program fails the test, naming what to install, so a plain `cargo test` never passes a test
/// that did not run; with `SPINSCOPE_SKIP_MISSING=1` (and `CI` unset) it is skipped, loudly.
pub fn skip_reason(test: &str, why: Option<String>) -> Option<String> {
    let why = why?;
    decide(
        test,
        &why,
        std::env::var_os(SKIP_VAR),
        std::env::var_os("CI"),
    )
}

pub fn decide(
    test: &str,
    why: &str,
    opt_out: Option<std::ffi::OsString>,
    ci: Option<std::ffi::OsString>,
) -> Option<String> {
    let opted_out = opt_out.is_some_and(|v| !v.is_empty() && v != "0");
    if ci.is_some() {
        panic!("{test}: {why} (CI is set: tests must not be skipped)");
    }
    if !opted_out {
        panic!("{test}: {why}; or set {SKIP_VAR}=1 to skip the tests that need it");
    }
    eprintln!("\n!!! SKIPPING {test}: {why} ({SKIP_VAR} is set) !!!\n");
    Some(why.to_string())
}

pub struct MariaDb {
    dir: tempfile::TempDir,
    child: Option<Child>,
    pub port: u16,
    pub socket: PathBuf,
    extra: Vec<String>,
    /// Held while the server lives (declared last: dropped after the server is stopped).
    _pass: super::Shared,
}

/// A throwaway server for `test`, or None when MariaDB is missing and skipping was asked for
/// (`skip_reason`: otherwise a missing server fails the test).
pub fn start_or_skip(test: &str, extra: &[&str]) -> Option<MariaDb> {
    if skip_reason(test, available().err()).is_some() {
        return None;
    }
    Some(MariaDb::start(extra))
}

impl MariaDb {
    /// Install a datadir and start the server with `extra` server options; waits until it
    /// answers on its socket (up to 60 s).
    pub fn start(extra: &[&str]) -> MariaDb {
        MariaDb::start_with_cnf(None, extra)
    }

    /// [`MariaDb::start`] with `cnf` as the server's `--defaults-file` (written as `my.cnf` in
    /// its directory) instead of `--no-defaults`: values from it have origin CONFIG.
    pub fn start_with_cnf(cnf: Option<&str>, extra: &[&str]) -> MariaDb {
        let pass = super::shared();
        let dir = tempfile::Builder::new()
            .prefix("spinscope-mdb")
            .tempdir()
            .expect("tempdir");
        let data = dir.path().join("data");
        // A private tmpdir: servers bootstrapping in parallel (tests run concurrently) once
        // failed in the shared /tmp with "Could not remove temporary table ... error: 2".
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("tmpdir");
        let install = || {
            Command::new(which("mariadb-install-db").unwrap())
                .arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--tmpdir={}", tmp.display()))
                .args([
                    "--user=root",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ])
                .output()
                .expect("running mariadb-install-db")
        };
        let mut out = install();
        if !out.status.success() {
            // One retry on a clean datadir: bootstrap failures seen here were transient.
            let _ = std::fs::remove_dir_all(&data);
            out = install();
        }
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some(text) = cnf {
            std::fs::write(dir.path().join("my.cnf"), text).expect("my.cnf");
        }
        let port = super::free_port();
        let socket = dir.path().join("mysqld.sock");
        let mut db = MariaDb {
            dir,
            child: None,
            port,
            socket,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            _pass: pass,
        };
        db.spawn_and_wait();
        db
    }

    fn spawn_and_wait(&mut self) {
        let (dir, port, socket, extra) = (self.dir.path(), self.port, &self.socket, &self.extra);
        let data = dir.join("data");
        let tmp = dir.join("tmp");
        let cnf = dir.join("my.cnf");
        let defaults = if cnf.exists() {
            format!("--defaults-file={}", cnf.display())
        } else {
            "--no-defaults".to_string()
        };
        let child = Command::new(MARIADBD)
            .arg(defaults)
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            .args([
                "--bind-address=127.0.0.1",
                "--user=root",
                "--innodb-buffer-pool-size=128M",
            ])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting mariadbd");
        self.child = Some(child);
        let db = self;
        let t0 = Instant::now();
        loop {
            if db.try_sql("SELECT 1").is_ok() {
                break;
            }
            if let Some(c) = db.child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    panic!("mariadbd exited at start ({st}); log: {}", db.error_log());
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "mariadbd did not start: {}",
                db.error_log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Stop the server and start it again on the same datadir, port and socket.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn_and_wait();
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).expect("server running")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// A `mariadb` client command on this server's socket, as root.
    pub fn client(&self) -> Command {
        let mut c = Command::new(which("mariadb").unwrap());
        c.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["--user=root", "--batch", "--skip-column-names"]);
        c
    }

    /// A load that runs until it is dropped (or `stop`ped): `clients` sessions on this server's
    /// socket, as root, each running `stmt` again and again. The sessions are open when this
    /// returns; `wait_observed` waits until the server shows them working.
    pub fn load(&self, clients: usize, stmt: &str) -> Load {
        Load::start(self, clients, stmt)
    }

    fn try_sql(&self, sql: &str) -> Result<String, String> {
        let out: Output = self
            .client()
            .args(["-e", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Run SQL and return its tab-separated output; panics with the server's message on error.
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql)
            .unwrap_or_else(|e| panic!("SQL failed: {sql}: {e}"))
    }

    /// Run one statement that contains semicolons (a stored program body).
    pub fn sql_delimited(&self, sql: &str) -> String {
        let out = self
            .client()
            .args(["--delimiter=$$", "-e", sql])
            .output()
            .expect("mariadb client");
        assert!(
            out.status.success(),
            "SQL failed: {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on the pid of a child we spawned and have not reaped yet.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
            }
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The XDG_STATE_HOME of the change journal for tests on `db`: inside its temp dir.
pub fn state(db: &MariaDb) -> PathBuf {
    db.dir().join("state")
}

/// A global variable's value as the server reports it.
pub fn var(db: &MariaDb, name: &str) -> String {
    db.sql(&format!("SELECT @@GLOBAL.{name}"))
        .trim()
        .to_string()
}

/// innodb_spin_wait_delay as the server reports it.
pub fn delay(db: &MariaDb) -> String {
    var(db, "innodb_spin_wait_delay")
}

/// A root session on `socket` (the mysql crate, no client process).
fn session(socket: &Path) -> mysql::Result<mysql::Conn> {
    mysql::Conn::new(
        mysql::OptsBuilder::new()
            .socket(Some(socket.to_string_lossy().into_owned()))
            .user(Some("root")),
    )
}

/// Wait until the server shows a client load that is not the test's own (a sweep's or tune's
/// step, its clients' schema `schema`): at least `clients` sessions in `schema` and the
/// server's `Queries` risen by 50 since the first look (the looks' own statements not
/// counted). Panics after `secs` s with what was seen.
pub fn wait_busy(db: &MariaDb, schema: &str, clients: usize, secs: u64) {
    let mut look = session(&db.socket).expect("a session to watch the server");
    let q = format!(
        "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
           WHERE VARIABLE_NAME = 'QUERIES'), \
         (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{schema}' \
           AND ID <> CONNECTION_ID())"
    );
    let t0 = Instant::now();
    let (mut first, mut looks) = (None, 0u64);
    loop {
        let (queries, present): (u64, u64) = look.query_first(&q).expect("a look").unwrap();
        looks += 1;
        let risen = queries
            .saturating_sub(*first.get_or_insert(queries))
            .saturating_sub(looks);
        if present >= clients as u64 && risen >= 50 {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "no load on {schema} within {secs} s: {present} of {clients} sessions, Queries +{risen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A load sized by time, not by a count: its clients run until the load is stopped or dropped.
/// Drop (also when the test panics) sets the stop flag, KILLs the clients' sessions on the
/// server (so a long statement, a SLEEP or a looping procedure ends at once) and joins them.
pub struct Load {
    socket: PathBuf,
    ids: Vec<u32>,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    threads: Vec<JoinHandle<Option<String>>>,
}

impl Load {
    fn start(db: &MariaDb, clients: usize, stmt: &str) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let mut load = Load {
            socket: db.socket.clone(),
            ids: Vec::new(),
            stop: Arc::clone(&stop),
            done: Arc::clone(&done),
            threads: Vec::new(),
        };
        for _ in 0..clients {
            let mut c = session(&db.socket).expect("a load session");
            load.ids.push(c.connection_id());
            let (stop, done, stmt) = (Arc::clone(&stop), Arc::clone(&done), stmt.to_string());
            load.threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match c.query_drop(&stmt) {
                        Ok(()) => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) if stop.load(Ordering::Relaxed) => break,
                        Err(e) => return Some(format!("{stmt}: {e}")),
                    }
                }
                None
            }));
        }
        load
    }

    /// The server's ids of the load's sessions.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Statements the clients have finished so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Wait until the server shows the load working: all of its sessions there and either all
    /// of them in a statement at once (a load of long statements: SLEEP, a looping procedure),
    /// or the server's `Queries` (statements in stored programs included) risen by 4 a client
    /// since the first look, the looks' own statements not counted. Panics after `secs` s,
    /// with what was seen, also when a client has failed.
    pub fn wait_observed(&self, secs: u64) {
        let mut look = session(&self.socket).expect("a session to watch the load");
        let ids = self
            .ids
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let q = format!(
            "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
               WHERE VARIABLE_NAME = 'QUERIES'), \
             (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({ids})), \
             (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({ids}) \
               AND COMMAND = 'Query')"
        );
        let n = self.ids.len() as u64;
        let t0 = Instant::now();
        let mut first = None;
        let mut looks = 0u64;
        loop {
            let (queries, present, busy): (u64, u64, u64) =
                look.query_first(&q).expect("watching the load").unwrap();
            looks += 1;
            let q0 = *first.get_or_insert(queries);
            let risen = queries.saturating_sub(q0).saturating_sub(looks);
            if present == n && (busy == n || risen >= 4 * n) {
                return;
            }
            if let Some(e) = self.failed() {
                panic!("a load client failed: {e}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "the load not seen on the server within {secs} s: {present} of {n} sessions, \
                 {busy} in a statement, Queries +{risen}, {} statements done",
                self.done()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether a client has ended before the load was stopped (a statement failed: `stop`
    /// says which).
    fn failed(&self) -> Option<String> {
        self.threads
            .iter()
            .any(|t| t.is_finished())
            .then(|| "a client ended before the load was stopped".to_string())
    }

    fn halt(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(mut c) = session(&self.socket) {
            for id in &self.ids {
                let _ = c.query_drop(format!("KILL CONNECTION {id}"));
            }
        }
        self.threads
            .drain(..)
            .filter_map(|t| {
                t.join()
                    .unwrap_or_else(|_| Some("a client panicked".into()))
            })
            .collect()
    }

    /// Stop the load; the statements its clients finished. Panics when a client failed.
    pub fn stop(mut self) -> u64 {
        let errors = self.halt();
        assert!(errors.is_empty(), "load clients failed: {errors:?}");
        self.done()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.halt();
    }
}
