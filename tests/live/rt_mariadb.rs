//! Integration: `spinscope rt` on loopback against a throwaway MariaDB (own datadir, port on
//! 127.0.0.1). A client of known queries over TCP: rt counts exactly those statements (by
//! their fingerprint, so the client library's own setup queries are not mixed in) and its
//! median is at most the client's; a query killed mid-way is counted without a panic. Needs
//! root or CAP_NET_RAW (the test machine runs as root).

use crate::common;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mariadb::{self, MariaDb};
use mysql::prelude::Queryable;
use spinscope::rt::stats::IntervalReport;

fn tcp(db: &MariaDb) -> mysql::Conn {
    let o = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(db.port)
        .prefer_socket(false)
        .user(Some("root"));
    mysql::Conn::new(o).expect("TCP connection to the throwaway server")
}

/// Start `rt --json` on the server's port, without a duration (it runs until `finish` stops
/// it); returns once its capture is open (its first interval line arrived) with the child and
/// the lines read so far.
fn start_rt(db: &MariaDb) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["rt", "--port", &db.port.to_string(), "--interval", "200ms"])
        .args(["--json", "--by-command", "--top", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spinscope rt");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("rt printed no interval: is the capture permitted (root or CAP_NET_RAW)?");
    assert!(first.contains("spinscope.rt/1"), "{first}");
    (child, rx)
}

/// Stop rt once the test's traffic is over and rt has caught up with it (an interval that
/// began after this call saw no request), then its total.
fn finish(mut child: std::process::Child, rx: std::sync::mpsc::Receiver<String>) -> IntervalReport {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let t0 = Instant::now();
    loop {
        let left = Duration::from_secs(30).saturating_sub(t0.elapsed());
        let line = rx
            .recv_timeout(left)
            .expect("rt gave no quiet interval within 30 s of the traffic's end");
        let r: IntervalReport = serde_json::from_str(&line).expect("spinscope.rt/1 interval");
        if r.start_unix_s >= now && r.requests == 0 {
            break;
        }
    }
    // SAFETY: kill(2) on the pid of our own child, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0));
    let lines: Vec<String> = rx.iter().collect();
    let last = lines.last().expect("rt printed its total");
    let total: IntervalReport = serde_json::from_str(last).expect("spinscope.rt/1 total");
    assert_eq!(total.kind, "total");
    total
}

/// Wait until session `vid` is in a `SELECT SLEEP` whose query id is not `after`; that id.
fn asleep(k: &mut mysql::Conn, vid: u64, after: Option<u64>) -> u64 {
    let t0 = Instant::now();
    loop {
        let q: Option<u64> = k
            .query_first(format!(
                "SELECT QUERY_ID FROM information_schema.PROCESSLIST \
                 WHERE ID = {vid} AND INFO LIKE 'SELECT SLEEP%'"
            ))
            .unwrap();
        if let Some(q) = q.filter(|&q| Some(q) != after) {
            return q;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "session {vid} not in a new SLEEP within 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn counts_match_the_client_and_the_median_is_below_the_clients() {
    if mariadb::skip_reason("rt_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    db.sql("CREATE DATABASE rt; CREATE TABLE rt.t (id INT PRIMARY KEY, c CHAR(20)); INSERT INTO rt.t VALUES (1,'a'),(2,'b'),(3,'c')");
    let (child, rx) = start_rt(&db);
    const N: usize = 3000;
    let mut c = tcp(&db);
    let mut client_us = Vec::with_capacity(N);
    for i in 0..N {
        let t = Instant::now();
        let _: Option<String> = c
            .query_first(format!("SELECT c FROM rt.t WHERE id = {}", i % 3 + 1))
            .unwrap();
        client_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    // A query killed mid-way (KILL QUERY from another session: the server answers ERR) and a
    // connection killed mid-query (closed unanswered or with an ERR).
    let mut victim = tcp(&db);
    let mut killer = tcp(&db);
    let vid: u64 = victim
        .query_first("SELECT CONNECTION_ID()")
        .unwrap()
        .unwrap();
    let h = std::thread::spawn(move || {
        let r: mysql::Result<Option<i64>> = victim.query_first("SELECT SLEEP(60)");
        let r2: mysql::Result<Option<i64>> = victim.query_first("SELECT SLEEP(60)");
        (r.is_ok(), r2.is_err())
    });
    // Each KILL once the victim is in its SLEEP (the second: a new query id).
    let first = asleep(&mut killer, vid, None);
    killer.query_drop(format!("KILL QUERY {vid}")).unwrap();
    asleep(&mut killer, vid, Some(first));
    killer.query_drop(format!("KILL {vid}")).unwrap();
    let _ = h.join().unwrap();
    drop(c);
    let total = finish(child, rx);

    let fp = total
        .top_statements
        .iter()
        .find(|g| g.key == "select c from rt.t where id = ?")
        .unwrap_or_else(|| panic!("statement not seen: {:?}", total.top_statements));
    assert!(
        (fp.requests as f64 - N as f64).abs() <= 0.02 * N as f64,
        "rt counted {} of {N}",
        fp.requests
    );
    client_us.sort_by(f64::total_cmp);
    let client_p50 = client_us[N / 2];
    assert!(
        fp.ttlb_us.p50_us <= client_p50 && fp.ttlb_us.p50_us > 0.0,
        "rt p50 {} us vs client p50 {client_p50} us",
        fp.ttlb_us.p50_us
    );
    let q = total
        .by_command
        .iter()
        .find(|g| g.key == "COM_QUERY")
        .expect("COM_QUERY row");
    assert!(q.requests >= N as u64);
    assert!(
        total.errors + total.abandoned >= 1,
        "the killed query shows as an error or unanswered: {total:?}"
    );
    assert!(total.valid, "{:?}", total.invalid_reason);
    eprintln!(
        "rt: {} statements, p50 {} us (client {client_p50:.1} us), errors {}, unanswered {}",
        fp.requests, fp.ttlb_us.p50_us, total.errors, total.abandoned
    );
}

#[test]
fn tls_connections_are_timed_with_the_command_unknown() {
    if mariadb::skip_reason("rt_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let (key, cert) = common::tls::self_signed(certs.path());
    let db = MariaDb::start(&[
        &format!("--ssl-cert={}", cert.display()),
        &format!("--ssl-key={}", key.display()),
    ]);
    let (child, rx) = start_rt(&db);
    const N: usize = 1000;
    let o = mysql::OptsBuilder::new()
        .ip_or_hostname(Some("127.0.0.1"))
        .tcp_port(db.port)
        .prefer_socket(false)
        .user(Some("root"))
        .ssl_opts(Some(
            mysql::SslOpts::default().with_danger_accept_invalid_certs(true),
        ));
    let mut c = mysql::Conn::new(o).expect("TLS connection");
    let cipher: Option<(String, String)> = c
        .query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        .unwrap();
    assert!(
        cipher.is_some_and(|(_, v)| !v.is_empty()),
        "the connection is not encrypted"
    );
    for i in 0..N {
        let _: Option<i64> = c.query_first(format!("SELECT {i}")).unwrap();
    }
    drop(c);
    let total = finish(child, rx);
    let unknown = total
        .by_command
        .iter()
        .find(|g| g.key == "unknown")
        .unwrap_or_else(|| panic!("no unknown-command row: {:?}", total.by_command));
    // N queries plus the one above; the encrypted login is not a request.
    let want = N as f64 + 1.0;
    assert!(
        (unknown.requests as f64 - want).abs() <= 0.02 * want,
        "rt timed {} encrypted requests of {want}",
        unknown.requests
    );
    assert!(unknown.ttlb_us.p50_us > 0.0 && total.top_statements.is_empty());
}

fn doctor(db: &MariaDb, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args(["doctor", "--no-defaults", "-h", "127.0.0.1", "-u", "root"])
        .args(["-P", &db.port.to_string()])
        .args(extra)
        .env_remove("MYSQL_PWD")
        .output()
        .expect("spinscope doctor")
}

fn doctor_doc(out: &std::process::Output) -> spinscope::doctor::DoctorDoc {
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("spinscope.doctor/1")
}

/// `doctor --rt`: the response times of the window beside Threads_running; the sampler's own
/// TCP session is not among them; without the capture permission the diagnosis goes on.
#[test]
fn doctor_rt_puts_response_times_beside_threads_running() {
    if mariadb::skip_reason("rt_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    // Idle: doctor's own sampler (10 Hz of SHOW GLOBAL STATUS over TCP) is left out.
    let d = doctor_doc(&doctor(&db, &["--window", "1s", "--rt", "--json"]));
    let rt = d.rt.expect("an rt part");
    assert_eq!(rt.unavailable, None);
    assert!(rt.excluded_client_port.is_some(), "{rt:?}");
    assert_eq!(
        rt.requests, 0,
        "the sampler's own statements were timed: {rt:?}"
    );

    // Under load: 4 clients over TCP for longer than the window.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let mut c = tcp(&db);
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _: Option<i64> = c.query_first("SELECT SLEEP(0.002)").unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("snap.json");
    let out = doctor(
        &db,
        &[
            "--window",
            "2s",
            "--rt",
            "--json",
            "--save-snapshot",
            snap.to_str().unwrap(),
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent: u64 = clients.into_iter().map(|h| h.join().unwrap()).sum();
    let d = doctor_doc(&out);
    let rt = d.rt.expect("an rt part");
    assert_eq!(rt.unavailable, None);
    // 4 clients at about 2 ms each: hundreds of requests in 2 s.
    assert!(
        rt.requests >= 200 && rt.requests <= sent,
        "{} of {sent}",
        rt.requests
    );
    assert!(
        rt.ttlb_us.p50_us >= 2000.0 && rt.ttlb_us.p50_us < 100_000.0,
        "{rt:?}"
    );
    assert!(rt.rows.len() >= 2, "{rt:?}");
    let row = &rt.rows[rt.rows.len() / 2];
    assert!(
        row.requests > 0 && row.threads_running_max.is_some() && row.proc_running_max.is_some(),
        "{row:?}"
    );
    assert!(rt.valid);
    // The saved snapshot replays the same RT part, in text, Markdown and the HTML report.
    let replay = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_spinscope"))
            .args(["doctor", "--snapshot", snap.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let text = replay(&[]);
    eprintln!("{text}");
    assert!(
        text.contains(&format!(
            "response time from packets (rt on lo port {}",
            db.port
        )),
        "{text}"
    );
    assert!(text.contains("TR = Threads_running max"), "{text}");
    let md = replay(&["--markdown"]);
    assert!(
        md.contains("## Response time (rt)") && md.contains("| t | requests |"),
        "{md}"
    );
    let html = dir.path().join("r.html");
    let st = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "report",
            snap.to_str().unwrap(),
            "--out",
            html.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Response time (rt)") && page.contains("ttlb p99"),
        "no rt in the page"
    );

    // Without CAP_NET_RAW (taken out of the bounding set): one line, and the diagnosis goes on.
    let o = Command::new("setpriv")
        .args(["--bounding-set", "-net_raw,-net_admin", "--"])
        .arg(env!("CARGO_BIN_EXE_spinscope"))
        .args(["doctor", "--no-defaults", "-h", "127.0.0.1", "-u", "root"])
        .args([
            "-P",
            &db.port.to_string(),
            "--window",
            "1s",
            "--rt",
            "--json",
        ])
        .output()
        .expect("setpriv (util-linux)");
    let d = doctor_doc(&o);
    let why =
        d.rt.and_then(|r| r.unavailable)
            .expect("rt unavailable without CAP_NET_RAW");
    assert!(why.contains("CAP_NET_RAW") && !why.contains('\n'), "{why}");
    eprintln!("without CAP_NET_RAW: {why}");
    assert!(d.burst.is_some_and(|b| b.samples > 0));
}

/// `watch --trigger 'p99 > 5ms for 200ms'`: the rt series from packets fires on a burst of
/// slow statements (SELECT SLEEP(0.05) from 4 clients over TCP), not while only the watch
/// sampler's own session (left out of the capture) talks to the server; the capture records
/// the series.
#[test]
fn watch_rt_trigger_fires_on_slow_answers() {
    if mariadb::skip_reason("rt_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("caps");
    let err_path = dir.path().join("watch.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinscope"))
        .args([
            "watch",
            &format!("root@127.0.0.1:{}", db.port),
            "--no-defaults",
        ])
        .args(["--out", out.to_str().unwrap(), "--profile-seconds", "0"])
        .args(["--history", "5", "--after", "1", "--min-free-disk", "0"])
        .args(["--trigger", "p99 > 5ms for 200ms"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let stderr = || std::fs::read_to_string(&err_path).unwrap_or_default();
    let wait_for = |needle: &str, secs: u64| {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(secs) {
            if stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    };
    assert!(wait_for("rt capturing port", 30), "{}", stderr());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !stderr().contains("fired"),
        "fired while idle: {}",
        stderr()
    );
    let t0 = Instant::now();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let mut c = tcp(&db);
            std::thread::spawn(move || {
                while t0.elapsed() < Duration::from_millis(1500) {
                    let _: Option<i64> = c.query_first("SELECT SLEEP(0.05)").unwrap();
                }
            })
        })
        .collect();
    for h in clients {
        h.join().unwrap();
    }
    let written = wait_for("capture written", 20);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    let err = stderr();
    assert!(written, "{err}");
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("trigger 'p99 > 5ms for 200ms' fired"), "{err}");
    let cap = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a capture directory");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cap.join("capture.json")).unwrap()).unwrap();
    let p99 = doc["peaks"]["rt_p99_ms"]
        .as_f64()
        .expect("rt peak in the capture");
    assert!((45.0..500.0).contains(&p99), "peak rt p99 {p99} ms");
    assert!(doc["trigger"]["value"].as_f64().unwrap() > 5.0);
    let samples = doc["samples"].as_array().unwrap();
    let before: Vec<_> = samples
        .iter()
        .filter(|s| s["t_ms"].as_f64().unwrap() < -300.0)
        .collect();
    assert!(
        before.iter().any(|s| s.get("rt_p99_ms").is_none()),
        "idle ticks carry no rt value"
    );
    let slow = samples
        .iter()
        .filter(|s| s["rt_p99_ms"].as_f64().is_some_and(|v| v >= 45.0))
        .count();
    assert!(slow >= 5, "{slow} samples with a slow rt p99");
    let valued: Vec<String> = samples
        .iter()
        .filter_map(|s| Some(format!("{}:{:.1}", s["t_ms"], s["rt_p99_ms"].as_f64()?)))
        .collect();
    eprintln!(
        "watch rt: fired, peak p99 {p99} ms, {slow} slow samples of {} with a value, {} samples; first: {:?}",
        valued.len(),
        samples.len(),
        &valued[..valued.len().min(8)]
    );
}

/// During a real `spinscope sweep run` over TCP (point-select, 4 clients, no warm-up, 2 s):
/// rt's count of the workload's statements matches the sweep's queries within 2%, and rt's
/// p50 is at most the sweep's client-side p50 and not far below it on loopback.
#[test]
fn rt_matches_a_sweep_run() {
    if mariadb::skip_reason("rt_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let db = MariaDb::start(&[]);
    let state = db.dir().join("state");
    let sweep = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_spinscope"))
            .arg("sweep")
            .args(args)
            .args([
                "--no-defaults",
                "-u",
                "root",
                "-h",
                "127.0.0.1",
                "-P",
                &db.port.to_string(),
            ])
            .env("XDG_STATE_HOME", &state)
            .env_remove("MYSQL_PWD")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    sweep(&["prepare", "--tables", "1", "--table-size", "1000"]);
    let plan = spinscope::rt::RtPlan {
        source: spinscope::rt::capture::Source::Live {
            interface: Some("lo".into()),
            snaplen: 65535,
            buffer_bytes: 32 << 20,
        },
        ports: vec![db.port],
        interval_ns: 1_000_000_000,
        duration_ns: None,
        breakdown: spinscope::rt::stats::Breakdown {
            by_command: true,
            top: 0,
        },
        exclude_client_ports: vec![],
        keep_intervals: true,
        ttlb_bounds_ns: Vec::new(),
    };
    let bg = spinscope::rt::Background::start(plan, Box::new(|_| {})).expect("capture (root)");
    let out = sweep(&[
        "run",
        "--workload",
        "point-select",
        "--threads",
        "4",
        "--warmup",
        "0s",
        "--duration",
        "2s",
        "--json",
    ]);
    let run = bg.finish().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("spinscope.sweep/1");
    let step = &doc["steps"][0];
    let queries = step["queries"].as_u64().unwrap();
    let client_p50_us = step["latency_us"]["p50"].as_f64().unwrap();
    // The workload's statements: the command rt saw most (the sweep's control queries are few).
    let g = run
        .total
        .by_command
        .iter()
        .max_by_key(|g| g.requests)
        .expect("rt saw requests");
    eprintln!(
        "sweep: {queries} queries, client p50 {client_p50_us} us; rt: {} {} requests, p50 {} us",
        g.key, g.requests, g.ttlb_us.p50_us
    );
    assert!(queries > 1000, "{queries}");
    assert!(
        (g.requests as f64 - queries as f64).abs() <= 0.02 * queries as f64,
        "rt counted {} {} of the sweep's {queries}",
        g.requests,
        g.key
    );
    assert!(
        g.ttlb_us.p50_us <= client_p50_us && g.ttlb_us.p50_us >= 0.2 * client_p50_us,
        "rt p50 {} us vs the sweep's {client_p50_us} us",
        g.ttlb_us.p50_us
    );
    assert!(run.total.valid);
    // On `lo` the kernel skips the sent copy of each segment (PACKET_IGNORE_OUTGOING): about
    // two packets per request (the request and its answer; ACKs ride on them), not four.
    let per_request = run.total.capture.received as f64 / g.requests as f64;
    assert!(
        (1.5..3.0).contains(&per_request),
        "{} packets received for {} requests: {per_request:.2} per request",
        run.total.capture.received,
        g.requests
    );
}
