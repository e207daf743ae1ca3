//! `spinscope doctor` against a throwaway MariaDB (tests/common/mariadb.rs) with
//! performance_schema on: socket and TCP, the burst sampler under a bounded mariadb-slap load,
//! --enable-instruments restoring the exact previous state (also on Ctrl-C), access denied,
//! a missing PROCESS privilege, the spin-budget finding at a high delay, snapshot round trip.

use crate::common;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::doctor_cmd;
use common::mariadb::MariaDb;
use common::tls::openssl;
use spinscope::doctor::{DoctorDoc, Severity};

const SECRET: &str = "Zq9secretXy";

fn run(db: &MariaDb, args: &[&str]) -> Output {
    doctor_cmd()
        .args(["-S", db.socket.to_str().unwrap(), "-u", "root"])
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> DoctorDoc {
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("spinscope.doctor/1")
}

fn instrument_state(db: &MariaDb) -> String {
    db.sql(
        "SELECT CONCAT(ENABLED, TIMED), COUNT(*) FROM performance_schema.setup_instruments \
         WHERE NAME LIKE 'wait/synch/%' GROUP BY 1 ORDER BY 1; \
         SELECT NAME, ENABLED FROM performance_schema.setup_consumers ORDER BY NAME",
    )
}

fn finding<'a>(d: &'a DoctorDoc, id: &str) -> &'a spinscope::doctor::Finding {
    d.findings.iter().find(|f| f.id == id).unwrap_or_else(|| {
        panic!(
            "no {id} in {:?}",
            d.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
        )
    })
}

#[test]
fn doctor_against_a_live_mariadb() {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    let db = MariaDb::start(&["--performance-schema=ON"]);
    let port = db.port.to_string();

    // Idle, over the socket: the sampler must not count its own session.
    let d = json(&run(&db, &["--window", "2", "--json"]));
    assert!(
        d.server.starts_with("MariaDB 10.") || d.server.starts_with("MariaDB 11."),
        "{}",
        d.server
    );
    assert_eq!(d.semaphores.as_deref(), Some("blank-by-design"));
    let b = d.burst.clone().unwrap();
    eprintln!(
        "idle burst sampler: {} samples, {:.1} Hz achieved, longest gap {:.1} ms, own CPU {:.2}%, query p50 {:.0} us",
        b.samples, b.achieved_hz, b.longest_gap_ms, b.sampler_cpu_pct, b.sampler_query_p50_us
    );
    // A local server: the /proc series at 100 Hz, the SQL counters at 10 Hz beside it, and
    // the sampler's server cost measured on its session's thread.
    let idle_proc = b
        .proc_running
        .clone()
        .expect("a /proc series on a local server");
    eprintln!(
        "idle /proc series: {} samples, {:.1} Hz, longest gap {:.1} ms, running p50 {} max {} of {} threads; SQL {:.1} Hz; server cost measured {:?}%",
        idle_proc.samples, idle_proc.achieved_hz, idle_proc.longest_gap_ms, idle_proc.running.p50,
        idle_proc.running.max, idle_proc.threads_max, b.achieved_hz, b.sampler_server_measured_pct
    );
    assert!(idle_proc.achieved_hz > 40.0, "{idle_proc:?}");
    assert!(idle_proc.threads_max >= 3.0, "{idle_proc:?}");
    assert_eq!(b.sql_target_hz, Some(10.0));
    assert!(b.achieved_hz > 4.0 && b.achieved_hz < 12.0, "{b:?}");
    assert!(
        b.sampler_server_measured_pct.is_some_and(|p| p > 0.0),
        "{b:?}"
    );
    assert_eq!(b.threads_running.p50, 0.0, "own session counted: {b:?}");
    let text = String::from_utf8(run(&db, &["--window", "1"]).stdout).unwrap();
    assert!(
        text.contains("running threads from /proc") && text.contains("Threads_running from SQL"),
        "{text}"
    );
    finding(&d, "spin-budget");
    finding(&d, "semaphores-untrusted");
    // performance_schema on, instruments off by default, not enabled: say how to see them.
    finding(&d, "pfs-latch-instruments-off");

    // TCP, with the URL form; PREFERRED falls back to plain; REQUIRED is refused (exit 3).
    let out = doctor_cmd()
        .args([
            "--url",
            &format!("mysql://root@127.0.0.1:{port}/"),
            "--window",
            "0",
            "--json",
        ])
        .output()
        .unwrap();
    let d = json(&out);
    assert_eq!(d.target, format!("root@127.0.0.1:{port}"));
    let out = doctor_cmd()
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            "root",
            "--ssl-mode",
            "REQUIRED",
            "--window",
            "0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("TLS"), "{err}");

    // A write load on the socket while the sampler and the instruments watch: 16 clients
    // inserting into one table without a primary key (what mariadb-slap's generated write load
    // did), running until the window is over. The window starts once the server shows them.
    let before = instrument_state(&db);
    db.sql(
        "CREATE DATABASE spinscope_load; CREATE TABLE spinscope_load.t1 \
         (intcol1 INT(32), charcol1 VARCHAR(128)) ENGINE=InnoDB",
    );
    let load = db.load(
        16,
        "INSERT INTO spinscope_load.t1 VALUES (FLOOR(RAND() * 2147483647), \
         CONCAT(MD5(RAND()), MD5(RAND()), MD5(RAND()), MD5(RAND())))",
    );
    load.wait_observed(60);
    let snap = db.dir().join("snap.json");
    let d = json(&run(
        &db,
        &[
            "--window",
            "3",
            "--enable-instruments",
            "--json",
            "--save-snapshot",
            snap.to_str().unwrap(),
        ],
    ));
    let inserts = load.stop();
    eprintln!("write load: {inserts} inserts");
    assert_eq!(instrument_state(&db), before, "instruments not restored");
    assert_eq!(d.pfs_instruments_restored, Some(true));
    let b = d.burst.clone().unwrap();
    eprintln!(
        "loaded burst sampler: {} samples, {:.1} Hz achieved, longest gap {:.1} ms, running p50 {} p99 {} max {}, 1 s monitor max {}, own CPU {:.2}%",
        b.samples, b.achieved_hz, b.longest_gap_ms, b.threads_running.p50, b.threads_running.p99,
        b.threads_running.max, b.monitor_1s.max, b.sampler_cpu_pct
    );
    assert!(b.threads_running.max > 2.0, "{b:?}");
    // The /proc series rises under the 16-client load.
    let p = b.proc_running.clone().expect("a /proc series under load");
    eprintln!(
        "loaded /proc series: {} samples, {:.1} Hz, running p50 {} p99 {} max {} of {} threads",
        p.samples, p.achieved_hz, p.running.p50, p.running.p99, p.running.max, p.threads_max
    );
    assert!(
        p.running.max >= 2.0 && p.running.max > idle_proc.running.max,
        "idle {idle_proc:?} loaded {p:?}"
    );
    assert!(p.threads_max > idle_proc.threads_max, "{p:?}");
    // SQL at 10 Hz beside the /proc series at 100 Hz.
    assert!(b.achieved_hz > 4.0 && b.longest_gap_ms > 0.0, "{b:?}");
    assert!(p.achieved_hz > 20.0, "{p:?}");
    assert!(
        d.pfs_top_waits.iter().any(|w| w.event.contains("/innodb/")),
        "no InnoDB latch named: {:?}",
        d.pfs_top_waits
    );
    finding(&d, "pfs-latch-waits");
    // The server process's own CPU was recorded, and the spin signature reads it.
    let h = d.host.clone().unwrap();
    assert!(
        h.server_cpu_before.is_some() && h.server_cpu_after.is_some(),
        "{h:?}"
    );
    let f = finding(&d, "spin-signature");
    assert!(
        f.evidence.iter().any(|e| e.name == "server_cpu"),
        "{}: {:?}",
        f.title,
        f.evidence
    );
    // Under the load: bursts or sustained overload, named by what the samples show.
    let b = d.burst.clone().unwrap();
    let running = d
        .findings
        .iter()
        .find(|f| f.id.starts_with("threads-running"))
        .expect("a Threads_running finding");
    if b.time_above_threshold_pct >= 50.0 {
        assert_eq!(running.id, "threads-running-sustained", "{}", running.title);
    } else {
        assert_ne!(running.id, "threads-running-sustained", "{}", running.title);
    }
    // Header and evidence give one figure for the clients' questions.
    for e in d.findings.iter().flat_map(|f| &f.evidence) {
        if e.name.starts_with("questions") {
            assert!((e.value - b.questions_per_s).abs() < 1e-6, "{e:?}");
        }
    }
    // Replay of the saved snapshot gives the same findings.
    let out = doctor_cmd()
        .args(["--snapshot", snap.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let r = json(&out);
    let ids = |d: &DoctorDoc| d.findings.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&r), ids(&d));

    // Ctrl-C in the middle of the window: exit 130, partial report, instruments restored.
    let mut child = doctor_cmd()
        .args(["-S", db.socket.to_str().unwrap(), "-u", "root"])
        .args(["--window", "60", "--enable-instruments", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // stderr line by line: the Ctrl-C is sent once the window has begun ("sampling for"),
    // not merely once the instruments are on (on a busy host the queries between the two
    // took long enough for a Ctrl-C to land before the first sample).
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let t0 = Instant::now();
    let mut sampling = false;
    while !sampling || instrument_state(&db) == before {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the window never began with the instruments on (sampling line seen: {sampling})"
        );
        sampling |= rx
            .recv_timeout(Duration::from_millis(100))
            .is_ok_and(|l| l.contains("sampling for"));
    }
    // Most runs: let the first samples land, so the partial report has figures to show.
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on the pid of a child we spawned and have not waited for yet.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "{err}");
    let d: DoctorDoc = serde_json::from_slice(&out.stdout).unwrap();
    // A Ctrl-C that lands between "sampling for" and the first sample (seen on a new CI
    // machine) leaves no burst figures; the report must then say why instead.
    match &d.burst {
        Some(b) => assert!(b.interrupted, "{b:?}"),
        None => assert!(
            d.notes
                .iter()
                .any(|n| n.contains("too short for burst figures")),
            "no burst figures and no note why: {:?}",
            d.notes
        ),
    }
    assert_eq!(
        instrument_state(&db),
        before,
        "instruments not restored after Ctrl-C"
    );

    // High delay: the spin-budget finding is critical, --fail-on critical exits 1.
    db.sql("SET GLOBAL innodb_spin_wait_delay = 6000");
    let out = run(&db, &["--window", "0", "--json", "--fail-on", "critical"]);
    assert_eq!(out.status.code(), Some(1));
    let d = json(&out);
    let f = finding(&d, "spin-budget").clone();
    assert_eq!(f.severity, Severity::Critical, "{}", f.title);
    assert!(
        f.what_to_do
            .contains("innodb_spin_wait_delay 6000 is 1500x the default 4"),
        "{}",
        f.what_to_do
    );
    // `spin --from-server` prices the live settings, not the version's defaults.
    let out = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["spin", "--from-server", "--no-defaults", "-S"])
        .arg(&db.socket)
        .args([
            "-u", "root", "--cpu", "zen4", "--match", "baseline", "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: spinscope::spin::doc::SpinReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.settings.spin_wait_delay, 6000);
    assert!(
        r.settings_source.starts_with("live server root@"),
        "{}",
        r.settings_source
    );
    let rec = r.advice.unwrap().recommendation;
    assert!(rec.reachable, "{}", rec.explanation);
    // The finding's statements are SQL the server runs as they are; afterwards the spin
    // budget is no longer critical.
    for st in &f.statements {
        db.sql(st);
    }
    assert!(db.sql("SELECT @@innodb_spin_wait_delay").trim() != "6000");
    let d = json(&run(&db, &["--window", "0", "--json"]));
    let f = finding(&d, "spin-budget");
    assert!(f.severity < Severity::Critical, "{}", f.title);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 4; SET GLOBAL innodb_sync_spin_loops = 30");

    // A monitoring user without PROCESS: says which privilege, carries on (exit 0).
    db.sql(&format!(
        "CREATE USER mon@localhost IDENTIFIED BY '{SECRET}'; GRANT SELECT ON *.* TO mon@localhost"
    ));
    let out = doctor_cmd()
        .args([
            "-S",
            db.socket.to_str().unwrap(),
            "-u",
            "mon",
            "--window",
            "1",
            "--json",
        ])
        .env("MYSQL_PWD", SECRET)
        .output()
        .unwrap();
    let d = json(&out);
    let f = finding(&d, "missing-privilege");
    assert!(f.title.contains("PROCESS"), "{}", f.title);
    assert!(d.burst.is_some());
    let snap2 = db.dir().join("mon.json");
    let out = doctor_cmd()
        .args([
            "-S",
            db.socket.to_str().unwrap(),
            "-u",
            "mon",
            "--window",
            "0",
        ])
        .args(["--save-snapshot", snap2.to_str().unwrap()])
        .env("MYSQL_PWD", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!std::fs::read_to_string(&snap2).unwrap().contains(SECRET));

    // Wrong password: access denied, exit 3, one line, the password never shown.
    let out = doctor_cmd()
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            "mon",
            "-pWrongPw123",
            "--window",
            "0",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("access denied for mon@127.0.0.1"), "{err}");
    assert!(
        !err.contains("WrongPw123")
            && err
                .trim_end()
                .lines()
                .filter(|l| !l.contains("[Warning] Using a password"))
                .count()
                == 1,
        "{err}"
    );
}

#[test]
fn server_gone_mid_window_reports_partial_and_exits_3() {
    let db = MariaDb::start(&[]);
    // MariaDB's default performance_schema=OFF: the fix is an option-file line, not SQL.
    let d = json(&run(&db, &["--window", "0", "--json"]));
    let f = finding(&d, "pfs-off");
    assert_eq!(f.option_file, vec!["performance_schema = ON".to_string()]);
    assert!(f.statements.is_empty(), "{:?}", f.statements);
    let mut child = doctor_cmd()
        .args([
            "-S",
            db.socket.to_str().unwrap(),
            "-u",
            "root",
            "--window",
            "30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server goes once the window has begun and its first samples are in.
    let mut lines = common::StderrLines::of(&mut child);
    lines.wait_for("sampling for", 60);
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on the pid of the test server's process, which the harness owns.
    unsafe {
        libc::kill(db.pid() as libc::pid_t, libc::SIGKILL);
    }
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(20));
    let err = lines.rest();
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("went away"), "{err}");
    assert!(report.contains("burst sampler stopped"), "{report}");
    assert!(!err.contains("panicked"));
}

/// A CA, a server certificate for the name `localhost` only (not for 127.0.0.1) and one for
/// both (same key) in `dir`, plus an unrelated CA.
fn certificates(dir: &std::path::Path) {
    let x509 = |key: &str, out: &str, cn: &str| {
        openssl(
            dir,
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", cn,
                "-keyout", key, "-out", out,
            ],
        );
    };
    x509("ca-key.pem", "ca.pem", "/CN=spinscope test CA");
    x509("other-key.pem", "other-ca.pem", "/CN=some other CA");
    openssl(
        dir,
        &[
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
        ],
    );
    for (ext, out) in [
        ("DNS:localhost", "server-cert.pem"),
        ("DNS:localhost,IP:127.0.0.1", "server-cert-ip.pem"),
    ] {
        std::fs::write(
            dir.join("ext.cnf"),
            format!("subjectAltName={ext}\nbasicConstraints=CA:FALSE\n"),
        )
        .unwrap();
        openssl(
            dir,
            &[
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
                out,
            ],
        );
    }
}

#[test]
fn tls_modes_against_a_server_with_a_certificate() {
    let certs = tempfile::tempdir().unwrap();
    certificates(certs.path());
    let p = |f: &str| certs.path().join(f).display().to_string();
    let db = MariaDb::start(&[
        &format!("--ssl-ca={}", p("ca.pem")),
        &format!("--ssl-cert={}", p("server-cert.pem")),
        &format!("--ssl-key={}", p("server-key.pem")),
    ]);
    let port = db.port.to_string();
    let accepts = || {
        db.sql("SHOW GLOBAL STATUS LIKE 'Ssl_accepts'")
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let tcp = |mode: &str, ca: &str, host: &str| {
        doctor_cmd()
            .args([
                "-h", host, "-P", &port, "-u", "root", "--window", "0", "--json",
            ])
            .args(["--ssl-mode", mode, "--ssl-ca", ca])
            .output()
            .unwrap()
    };
    // The certificate names localhost, the connection goes to 127.0.0.1: VERIFY_CA checks the
    // chain only and connects; VERIFY_IDENTITY checks the name too and refuses.
    let connects = |mode: &str| {
        let n = accepts();
        let out = tcp(mode, &p("ca.pem"), "127.0.0.1");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(accepts() > n, "{mode}: no TLS handshake counted");
    };
    connects("REQUIRED");
    connects("VERIFY_CA");
    let out = tcp("VERIFY_IDENTITY", &p("ca.pem"), "127.0.0.1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("not valid for name \"127.0.0.1\"") && err.contains("\"localhost\""),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // `-h localhost -P port` is TCP, and VERIFY_IDENTITY checks the name as given: localhost.
    let n = accepts();
    let out = tcp("VERIFY_IDENTITY", &p("ca.pem"), "localhost");
    assert_eq!(
        out.status.code(),
        Some(0),
        "-h localhost: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(accepts() > n, "-h localhost: no TLS handshake counted");
    // The same key with 127.0.0.1 in the certificate (reloaded by FLUSH SSL): now it connects.
    std::fs::copy(p("server-cert-ip.pem"), p("server-cert.pem")).unwrap();
    db.sql("FLUSH SSL");
    connects("VERIFY_IDENTITY");
    let out = tcp("VERIFY_CA", &p("other-ca.pem"), "127.0.0.1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("TLS")
            && err.contains("not signed by the --ssl-ca")
            && err.trim_end().lines().count() == 1,
        "{err}"
    );
}
