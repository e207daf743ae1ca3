//! CLI tests of `spinscope lab`: bad input exits 2 with one line, short runs produce the
//! documented JSON, the compare table and charts.

use assert_cmd::Command;
use predicates::prelude::*;

fn lab() -> Command {
    let mut c = Command::cargo_bin("spinscope").unwrap();
    c.arg("lab");
    c
}

fn bad(args: &[&str], needle: &str) {
    let out = lab().args(args).assert().code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(needle),
        "stderr for {args:?} lacks {needle:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
}

#[test]
fn zero_and_absurd_threads_are_bad_input() {
    bad(&["--threads", "0"], "--threads 0: 0 is out of range");
    bad(
        &["--threads", "5000"],
        "--threads 5000 is out of range: use 1..=1024",
    );
    bad(
        &["--threads", "1..4096:x2"],
        "--threads 2048 is out of range: use 1..=1024",
    );
    bad(
        &["--threads", "two"],
        "\"two\" is not a whole number; use a list like 1,2,4,8",
    );
}

#[test]
fn unknown_latch_lists_the_known_ones() {
    bad(&["--latch", "spinny"], "[possible values: innodb57, mysql80, mariadb106, time-budget, futex, std, parking-lot, ticket, mcs, sharded, all]");
}

#[test]
fn pause_scale_zero_and_bad_compare_are_bad_input() {
    bad(&["--pause-scale", "0"], "--pause-scale 0 is out of range");
    bad(
        &["--compare-pause-scale", "1,0"],
        "--pause-scale 0 is out of range",
    );
    bad(&["--compare-pause-scale", "14"], "exactly two scales");
}

#[test]
fn durations_too_short_or_long_are_bad_input() {
    bad(&["--duration-ms", "1"], "too short to measure");
    bad(
        &["--duration-ms", "99999999"],
        "--duration 99999999ms is out of range",
    );
    bad(&["--padding", "32"], "use 0, 64 or 128");
    bad(&["--repeats", "0"], "--repeat 0 is out of range");
}

#[test]
fn json_document_has_schema_points_and_no_lost_updates() {
    let out = lab()
        .args([
            "--latch",
            "innodb57,time-budget,mcs",
            "--threads",
            "1,3",
            "--duration-ms",
            "40",
            "--repeats",
            "2",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "spinscope.lab/2");
    let doc: spinscope::lab::LabDoc = serde_json::from_value(v).unwrap();
    assert_eq!(doc.points.len(), 6);
    for p in &doc.points {
        assert_eq!(p.runs.len(), 2);
        assert_eq!(p.lost_updates, 0, "{}", p.latch);
        assert!(p.ops_per_s.unwrap().median > 0.0);
        for r in &p.runs {
            assert!(
                r.elapsed_ms >= 40.0,
                "{}: elapsed {} ms",
                p.latch,
                r.elapsed_ms
            );
        }
    }
    assert!(doc.machine.timer_cost_ns > 0.0 && doc.machine.timer_cost_ns < 2_000.0);
    assert!(doc.machine.hint_ns.unwrap() > 0.0);
    assert!(doc.compare.is_empty());
}

#[test]
fn compare_prints_the_story_and_charts_are_written() {
    let dir = tempfile::tempdir().unwrap();
    lab()
        .args([
            "--latch",
            "mysql80,time-budget",
            "--threads",
            "4",
            "--duration-ms",
            "40",
            "--repeats",
            "1",
        ])
        .args(["--compare-pause-scale", "1,14", "--svg-dir"])
        .arg(dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "When the spin hint gets 14x slower",
        ))
        .stdout(predicate::str::contains("time-budget"));
    for f in [
        "lab_throughput_k1.svg",
        "lab_p99_k14.svg",
        "lab_cpu_per_op_k14.svg",
    ] {
        let s = std::fs::read_to_string(dir.path().join(f)).unwrap();
        assert!(s.starts_with("<svg") && s.contains("mysql80"), "{f}");
    }
}

/// The run: spins of about a minute per round (d = 6000, L = 10^6, K = 1000) on a
/// 50 ms window. It took 66 s and reported 233,544 ops/s at 523 us CPU/op (122 busy CPUs on
/// 2) when the elapsed time was taken before the workers stopped.
#[test]
fn huge_spins_end_near_the_window_and_never_exceed_the_cpus() {
    let t0 = std::time::Instant::now();
    let out = lab()
        .args([
            "--latch",
            "innodb57,mysql80",
            "--pause-scale",
            "1000",
            "--spin-wait-delay",
            "6000",
            "--sync-spin-loops",
            "1000000",
            "--duration-ms",
            "50",
            "--threads",
            "4",
            "--repeats",
            "1",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let took = t0.elapsed();
    assert!(took.as_secs_f64() < 5.0, "took {took:?}");
    let doc: spinscope::lab::LabDoc = serde_json::from_slice(&out.stdout).unwrap();
    let cpus = doc.machine.cpus as f64;
    assert_eq!(doc.points.len(), 2);
    for p in &doc.points {
        let r = &p.runs[0];
        let implied = r.ops_per_s * r.cpu_ns_per_op / 1e9;
        assert!(
            r.busy_cpus <= cpus * 1.02 + 0.05 && (r.ops == 0 || implied <= cpus * 1.02 + 0.05),
            "{}: {} busy CPUs ({implied} implied) on {cpus}",
            p.latch,
            r.busy_cpus
        );
        assert_eq!(r.overrun, r.overrun_pct > 10.0);
        assert_eq!(p.overruns, usize::from(r.overrun));
    }
}

/// A stop reaches workers inside a spin of minutes: the run ends at once with exit 130. SIGTERM
/// here (the shared handler treats it as Ctrl-C; the test below sends SIGINT).
#[test]
fn sigterm_stops_workers_inside_huge_spins() {
    use std::io::{BufRead, BufReader};
    let bin = assert_cmd::cargo::cargo_bin("spinscope");
    let mut child = std::process::Command::new(bin)
        .args([
            "lab",
            "--latch",
            "innodb57",
            "--pause-scale",
            "1000",
            "--spin-wait-delay",
            "6000",
            "--sync-spin-loops",
            "1000000",
            "--duration-ms",
            "600000",
            "--threads",
            "4",
            "--repeats",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.contains("runs of 600000 ms"), "{first:?}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let t0 = std::time::Instant::now();
    // SAFETY: sending SIGTERM to our own child process by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        rest
    });
    let out = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    let rest = drain.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "stderr: {rest}");
    assert!(took.as_secs_f64() < 3.0, "stopped after {took:?}");
}

#[test]
fn ctrl_c_prints_what_was_measured() {
    use std::io::{BufRead, BufReader, Read};
    let bin = assert_cmd::cargo::cargo_bin("spinscope");
    let mut child = std::process::Command::new(bin)
        .args([
            "lab",
            "--latch",
            "std",
            "--threads",
            "1",
            "--duration-ms",
            "100",
            "--repeats",
            "100",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt only once the lab says it is measuring (its handler is installed by then): a
    // fixed delay could fire before the handler on a loaded machine and kill it outright.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(
        first.contains("runs of 100 ms"),
        "first stderr line: {first:?}"
    );
    // SAFETY: sending SIGINT to our own child process by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    // Keep reading stderr so the child never blocks on (or fails writing to) a full pipe.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        rest
    });
    let out = child.wait_with_output().unwrap();
    let rest = drain.join().unwrap();
    assert_eq!(out.status.code(), Some(130), "stderr: {rest}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("std") && stdout.contains("interrupted"),
        "{stdout}"
    );
    assert!(rest.contains("interrupted after"), "{rest}");
    // The lab changes nothing on any server, so its stop message promises no restore.
    assert!(rest.contains("SIGINT: stopping"), "{rest}");
    assert!(!rest.contains("putting back"), "{rest}");
}
