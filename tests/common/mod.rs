//! Shared helpers for integration tests. Each test binary (offline, live, meta) includes this once as `mod common;`; its modules `use crate::common;` and
//! uses only what it needs.
#![allow(dead_code)]

pub mod mariadb;
pub mod tls;
pub mod watch;

/// Live tests share a 2-core CI machine with whichever test the harness runs beside them. Every
/// throwaway server holds a `Shared` pass while it lives; a test whose figures depend on having
/// the machine to itself (a capture's latency, a perf sample count, a tune decision) takes
/// `solo()` first, before starting its servers: it waits until no other test's server lives,
/// and no other server starts until it ends. A solo test starts its servers on its own thread.
/// (One binary holds every live test; when each file was its own binary, such tests only ever
/// ran beside their own file's tests.)
struct Gate {
    state: std::sync::Mutex<(usize, bool)>,
    cv: std::sync::Condvar,
}

static GATE: Gate = Gate {
    state: std::sync::Mutex::new((0, false)),
    cv: std::sync::Condvar::new(),
};

thread_local! {
    static SOLO_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The machine to this test alone while it is held (see [`Gate`]).
pub struct Solo(());

pub fn solo() -> Solo {
    let mut st = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    while st.0 > 0 || st.1 {
        st = GATE.cv.wait(st).unwrap_or_else(|e| e.into_inner());
    }
    st.1 = true;
    SOLO_HERE.with(|s| s.set(true));
    Solo(())
}

impl Drop for Solo {
    fn drop(&mut self) {
        SOLO_HERE.with(|s| s.set(false));
        GATE.state.lock().unwrap_or_else(|e| e.into_inner()).1 = false;
        GATE.cv.notify_all();
    }
}

/// A live server's pass: waits while a solo test runs (unless this is the solo test's thread).
pub struct Shared(bool);

pub fn shared() -> Shared {
    if SOLO_HERE.with(|s| s.get()) {
        return Shared(false);
    }
    let mut st = GATE.state.lock().unwrap_or_else(|e| e.into_inner());
    while st.1 {
        st = GATE.cv.wait(st).unwrap_or_else(|e| e.into_inner());
    }
    st.0 += 1;
    Shared(true)
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.0 {
            GATE.state.lock().unwrap_or_else(|e| e.into_inner()).0 -= 1;
            GATE.cv.notify_all();
        }
    }
}

/// For tests that call the library in-process (sweep's API and client): one state directory for
/// the whole test binary (the change journal of in-process sweeps lives there, never in the
/// user's own) and no MYSQL_PWD. The environment is changed once, before the first such test
/// goes on; tests that spawn spinscope set their own environment on the command instead.
pub fn lib_env() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().expect("a temporary state directory");
        std::env::set_var("XDG_STATE_HOME", d.path());
        std::env::remove_var("MYSQL_PWD");
        d
    })
    .path()
}

/// Whether the binary under test has the test switches (`SPINSCOPE_FAULT`,
/// `SPINSCOPE_TEST_CLOCK_SHIFT_S`), built only with `--features test-seams`. Without them a
/// test that needs them fails, naming the command, unless SPINSCOPE_SKIP_MISSING=1 (never
/// under CI) asks to skip it, as for a missing program.
pub fn has_seams(test: &str) -> bool {
    let why = (!cfg!(feature = "test-seams")).then(|| {
        "the binary was built without the test switches; run `cargo test --release --features test-seams`".to_string()
    });
    mariadb::skip_reason(test, why).is_none()
}

/// spinscope `args` against `db`'s socket as root, no option files, the change journal in
/// `home` (its XDG_STATE_HOME), and none of the caller's MYSQL_PWD or test switches.
pub fn server_cmd(
    db: &mariadb::MariaDb,
    home: &std::path::Path,
    args: &[&str],
) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.args(args)
        .args(["--socket", db.socket.to_str().unwrap(), "-u", "root"])
        .arg("--no-defaults")
        .env_remove("MYSQL_PWD")
        .env_remove("SPINSCOPE_FAULT")
        .env_remove("SPINSCOPE_TEST_CLOCK_SHIFT_S")
        .env("XDG_STATE_HOME", home);
    c
}

/// The whole HTTP/1.0 response to `GET path` on 127.0.0.1:`port` (headers and body), or ""
/// when nothing listens there; a 10 s read timeout.
pub fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Compare `text` with the golden file tests/`rel` (e.g. "golden/text/x.txt");
/// `UPDATE_GOLDEN=1` rewrites it. On a difference, the first differing line of each.
pub fn golden(rel: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(rel);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    if want != text {
        let line = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(text.lines().count()));
        panic!(
            "{} differs from the golden file at line {} (UPDATE_GOLDEN=1 to accept):\n want: {:?}\n  got: {:?}",
            path.display(),
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            text.lines().nth(line).unwrap_or("<end>")
        );
    }
}

/// The spinscope binary under test.
pub fn bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_spinscope"))
}

/// `spinscope doctor` without option files and without MYSQL_PWD from the environment.
pub fn doctor_cmd() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.arg("doctor").arg("--no-defaults").env_remove("MYSQL_PWD");
    c
}

/// More than two runnable tasks per CPU over the last minute (the 1-minute load average): a
/// host where other work takes most of the CPUs, so figures that depend on how much CPU the
/// test's own server gets (a Little's-law ratio, a spin share) are checked with a lower floor.
pub fn overloaded() -> bool {
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    load > 2.0 * cpus
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

/// A child process killed and reaped on drop, even when the test panics.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Exit code and stderr of the spinscope binary run with stdout a pipe whose read end is
/// already closed (what `| head -c 10` does once it has its bytes).
pub fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors that we own from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: each descriptor was just created and is owned once.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
        .args(args)
        .stdout(std::process::Stdio::from(write))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Save a probe of this host to `path` for a test that needs one CPU figure, not the probe
/// itself. A probe the host is too busy for exits 3 ("too busy", its documented refusal);
/// the README tells users to probe again, and so does this, five times at most, a second
/// apart. Panics with the last stderr when no try gives a figure.
pub fn save_probe(path: &std::path::Path) {
    let mut last = String::new();
    for _ in 0..5 {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
            .args(["probe", "--save"])
            .arg(path)
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.code() == Some(3) && last.contains("too busy"),
            "probe --save failed otherwise: {last}"
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    panic!("five probes in a row found the host too busy: {last}");
}

/// Run a command to its end: exit code, stdout and stderr.
pub fn out(
    mut c: impl std::borrow::BorrowMut<std::process::Command>,
) -> (Option<i32>, String, String) {
    let o: std::process::Output = c.borrow_mut().output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Poll `f` every 50 ms until it holds; panics naming `what` after `secs` seconds.
pub fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Open change records in the journal under XDG_STATE_HOME `home` (one .json file each).
pub fn open_records(home: &std::path::Path) -> usize {
    std::fs::read_dir(home.join("spinscope/journal"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

/// The value of the first Prometheus metric line that starts with `prefix`; panics with the
/// text when there is none.
pub fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{prefix} not in metrics:\n{text}"))
}

/// A child's stderr read line by line on a thread, so that a test can wait for a line (a
/// window begun, a step started) while the child runs, instead of sleeping.
pub struct StderrLines {
    rx: std::sync::mpsc::Receiver<String>,
    seen: String,
}

impl StderrLines {
    /// Take `child`'s stderr (spawned with `Stdio::piped()`) and read it from now on.
    pub fn of(child: &mut std::process::Child) -> StderrLines {
        use std::io::BufRead;
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StderrLines {
            rx,
            seen: String::new(),
        }
    }

    /// Wait until a line containing `needle` is written; panics after `secs` seconds, or
    /// when stderr closes first, with what was written.
    pub fn wait_for(&mut self, needle: &str, secs: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if line.contains(needle) {
                        return;
                    }
                }
                Err(e) => panic!(
                    "{needle:?} not written ({e:?}) within {secs} s:\n{}",
                    self.seen
                ),
            }
        }
    }

    /// All of stderr, once the child has closed it (call after it has exited).
    pub fn rest(mut self) -> String {
        while let Ok(line) = self.rx.recv() {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        self.seen
    }
}
