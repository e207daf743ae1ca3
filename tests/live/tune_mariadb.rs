//! Integration: `spinscope tune` against a throwaway MariaDB (own datadir, socket and port)
//! started with innodb_spin_wait_delay=6000. Short runs for CI: the search completes, ranks its
//! candidates, claims significance only on enough valid data, and puts 6000 back; `--apply`
//! leaves the winner set and logs it in the journal as an intended change; `--waits` races only
//! what moves the spin the document's way and refuses another server's document.

use crate::common;
use std::sync::Mutex;

use assert_cmd::Command;
use common::mariadb::{self, delay, MariaDb};
use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

fn start() -> Option<MariaDb> {
    if mariadb::skip_reason("tune_mariadb", mariadb::available().err()).is_some() {
        return None;
    }
    let db = MariaDb::start(&[
        "--innodb-flush-log-at-trx-commit=0",
        "--max-connections=100",
        "--innodb-spin-wait-delay=6000",
    ]);
    Some(db)
}

fn cmd(db: &MariaDb, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("spinscope").unwrap();
    c.args(args).args([
        "--socket",
        &db.socket.display().to_string(),
        "--user",
        "root",
        "--no-defaults",
    ]);
    c.env_remove("MYSQL_PWD");
    c.env("XDG_STATE_HOME", db.dir().join("state"));
    c
}

fn prepare(db: &MariaDb) {
    cmd(db, &["sweep", "prepare"])
        .args(["--tables", "2", "--table-size", "2000"])
        .assert()
        .success();
}

fn open_records(db: &MariaDb) -> usize {
    common::open_records(&mariadb::state(db))
}

fn tune_json(db: &MariaDb, extra: &[&str]) -> Value {
    let out = cmd(db, &["tune"])
        .args([
            "--workload",
            "write-only",
            "--threads",
            "8",
            "--warmup",
            "0.5",
            "--duration",
            "2",
            "--json",
        ])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("leader"),
        "progress names the leader: {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Checks every run must pass: ranked rows, no verdict without enough valid repeats.
fn check_doc(doc: &Value) {
    assert_eq!(doc["schema"], "spinscope.tune/1");
    assert!(doc["spent_s"].as_f64().unwrap() <= doc["budget_s"].as_f64().unwrap() + 15.0);
    let rows = doc["candidates"].as_array().unwrap();
    assert!(rows.len() >= 2, "{rows:?}");
    assert!(rows.iter().any(|r| r["name"] == "current"));
    let means: Vec<f64> = rows
        .iter()
        .filter_map(|r| r["tps"]["mean"].as_f64())
        .collect();
    assert!(means.windows(2).all(|w| w[0] >= w[1]), "ranked: {means:?}");
    for r in rows {
        let valid = r["repeats"].as_u64().unwrap() - r["invalid_repeats"].as_u64().unwrap();
        if valid < 3 {
            assert!(
                r["vs_current_pct"].is_null(),
                "interval from {valid} repeats: {r}"
            );
        }
    }
    // The plan said before the race what the budget allowed; the candidates it left out are
    // rows that were never measured and say why.
    let plan = &doc["plan"];
    let raced = plan["raced"].as_u64().unwrap() as usize;
    assert!(raced >= 2, "{plan}");
    let names = plan["candidates"].as_array().unwrap();
    assert_eq!(names.len(), rows.len(), "{plan}");
    for n in &names[raced..] {
        let r = rows.iter().find(|r| r["name"] == *n).unwrap();
        assert_eq!(r["repeats"], 0, "{r}");
        assert!(
            r["status"].as_str().unwrap().starts_with("not raced"),
            "{r}"
        );
    }
    let dec = &doc["decision"];
    if dec["change"] == true {
        let w = &rows
            .iter()
            .find(|r| r["status"] == "leader")
            .expect("the winner leads");
        let valid = w["repeats"].as_u64().unwrap() - w["invalid_repeats"].as_u64().unwrap();
        assert!(valid >= 3, "{w}");
        assert!(dec["leader_vs_current"]["low"].as_f64().unwrap() > 0.0);
        assert!(!doc["set_global"].as_array().unwrap().is_empty());
    } else {
        // Kept only when the current settings lead (proven); otherwise the decision says
        // there is no proof within the budget and what one would take.
        let sentence = dec["sentence"].as_str().unwrap();
        if dec["proven"] == true {
            assert!(sentence.starts_with("keep current settings"), "{dec}");
        } else {
            assert!(
                sentence.starts_with("no decision within the budget"),
                "{dec}"
            );
        }
        assert!(doc["set_global"].as_array().unwrap().is_empty());
    }
}

#[test]
fn tune_ranks_candidates_and_restores_6000() {
    let _solo = crate::common::solo();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    assert_eq!(delay(&db), "6000");
    let doc = tune_json(&db, &["--budget", "30s", "--max-candidates", "3"]);
    check_doc(&doc);
    assert_eq!(doc["applied"], false);
    assert_eq!(delay(&db), "6000", "restored after the run");
    assert_eq!(open_records(&db), 0, "journal closed");
    // A budget too small for 3 valid repeats a candidate: never a change.
    let doc = tune_json(&db, &["--budget", "10s", "--max-candidates", "3"]);
    check_doc(&doc);
    assert_eq!(doc["decision"]["change"], false);
    assert_eq!(delay(&db), "6000");
    tune_follows_the_wait_document(&db);
}

/// A wait document for this server: the fixture's numbers (tests/fixtures/waits/), its
/// direction set to `direction`, and `server` as given.
fn waits_doc(
    db: &MariaDb,
    direction: &str,
    server: &spinscope::profile::waits::WaitServer,
) -> std::path::PathBuf {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/waits/waits-d6000-vm.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    doc["advice"]["direction"] = Value::from(direction);
    doc["server"] = serde_json::to_value(server).unwrap();
    let p = db.dir().join(format!("waits-{direction}.json"));
    std::fs::write(&p, serde_json::to_string(&doc).unwrap()).unwrap();
    p
}

/// At delay 6000 a document saying "spin more" leaves no grid point (the grid moves one knob
/// from the defaults, all spinning less): the step from the current settings, doubling the
/// rounds, races beside them, and nothing that spins less. Another server's document (its
/// data directory differs) is refused before anything is measured.
fn tune_follows_the_wait_document(db: &MariaDb) {
    let me = spinscope::profile::waits::identity::of_process(db.pid());
    let more = waits_doc(db, "more", &me);
    let doc = tune_json(db, &["--budget", "10s", "--waits", more.to_str().unwrap()]);
    check_doc(&doc);
    assert_eq!(doc["waits"]["direction"], "more", "{}", doc["waits"]);
    let rows = doc["candidates"].as_array().unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["current", "waits-step"]);
    let step = rows.iter().find(|r| r["name"] == "waits-step").unwrap();
    assert_eq!(step["settings"]["sync_spin_loops"], 60, "{step}");
    assert_eq!(step["settings"]["spin_wait_delay"], 6000, "{step}");
    assert!(!doc["waits"]["left_out"].as_array().unwrap().is_empty());
    assert_eq!(delay(db), "6000", "restored after the run");
    let mut other = me.clone();
    other.datadir = Some("/var/lib/another-server".into());
    let bad = waits_doc(db, "less", &other);
    let out = cmd(db, &["tune"])
        .args(["--workload", "write-only", "--waits", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("data directory is /var/lib/another-server"),
        "{err}"
    );
    assert_eq!(open_records(db), 0, "nothing changed, nothing journaled");
}

#[test]
fn tune_apply_leaves_the_winner_set_and_journaled() {
    let _solo = crate::common::solo();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    prepare(&db);
    let doc = tune_json(
        &db,
        &["--budget", "30s", "--max-candidates", "2", "--apply"],
    );
    check_doc(&doc);
    let applied_dir = db.dir().join("state/spinscope/journal/applied");
    if doc["decision"]["change"] == true {
        assert_eq!(doc["applied"], true);
        let w = &doc["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["status"] == "leader")
            .unwrap()["settings"];
        assert_eq!(
            delay(&db),
            w["spin_wait_delay"].to_string(),
            "the winner is left set"
        );
        assert_eq!(
            db.sql("SELECT @@GLOBAL.innodb_sync_spin_loops").trim(),
            w["sync_spin_loops"].to_string()
        );
        let logged: Vec<Value> = std::fs::read_dir(&applied_dir)
            .unwrap()
            .flatten()
            .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
            .collect();
        // One intended-change record per statement of the winner, with the value before.
        let statements = doc["set_global"].as_array().unwrap();
        assert_eq!(logged.len(), statements.len(), "{logged:?}");
        for rec in &logged {
            let what = rec["what"].as_str().unwrap();
            let want = if what == "innodb_spin_wait_delay" {
                "6000"
            } else {
                "30"
            };
            assert_eq!(rec["original"], want, "{rec}");
            assert!(
                statements
                    .iter()
                    .any(|s| s.as_str().unwrap().contains(what)),
                "{rec}"
            );
        }
    } else {
        eprintln!(
            "no significant winner this time: {}",
            doc["decision"]["sentence"]
        );
        assert_eq!(doc["applied"], false);
        assert_eq!(delay(&db), "6000");
    }
    assert_eq!(
        open_records(&db),
        0,
        "no open record: the change is intended, not left over"
    );
}

/// The long scenarios of docs/PERFORMANCE.md ("tune: 5-minute searches"), not run in CI:
/// `cargo test --release --test live tune_mariadb::bench -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark of several minutes (docs/PERFORMANCE.md, tune), run by hand"]
fn bench_tune_long_scenarios() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    cmd(&db, &["sweep", "prepare"])
        .args(["--tables", "4", "--table-size", "10000"])
        .assert()
        .success();
    let budget = std::env::var("TUNE_BENCH_BUDGET").unwrap_or_else(|_| "5m".into());
    let aa_budget = std::env::var("TUNE_BENCH_AA_BUDGET").unwrap_or_else(|_| "2m".into());
    let aa_runs: usize = std::env::var("TUNE_BENCH_AA_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let run = |label: &str, budget: &str| {
        let t = std::time::Instant::now();
        let out = cmd(&db, &["tune"])
            .args([
                "--workload",
                "write-only",
                "--threads",
                "16",
                "--budget",
                budget,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "=== {label} (budget {budget}, wall {:.0} s)\n{}",
            t.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(open_records(&db), 0);
    };
    run("start 6000", &budget);
    assert_eq!(delay(&db), "6000");
    db.sql("SET GLOBAL innodb_spin_wait_delay = DEFAULT");
    for i in 1..=aa_runs {
        run(
            &format!("defaults, run {i}"),
            if i == 1 { &budget } else { &aa_budget },
        );
        assert_eq!(delay(&db), "4");
    }
}

/// Issue 34 (part 4): from delay 6000, a short budget decides. Not run in CI (2 minutes a run):
/// `cargo test --release --test live tune_mariadb::short_budget -- --ignored --nocapture`
/// (`TUNE_SHORT_BUDGET`, default 2m; `TUNE_SHORT_THREADS`, default 4; `TUNE_SHORT_RUNS`,
/// default 2). Prints each run's load average before and after, its wall time and its report.
#[test]
#[ignore = "a benchmark of a few minutes (issue 34), run by hand"]
fn bench_tune_short_budget_decides() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(db) = start() else { return };
    cmd(&db, &["sweep", "prepare"])
        .args(["--tables", "4", "--table-size", "10000"])
        .assert()
        .success();
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.into());
    let budget = env("TUNE_SHORT_BUDGET", "2m");
    let threads = env("TUNE_SHORT_THREADS", "4");
    let runs: usize = env("TUNE_SHORT_RUNS", "2").parse().unwrap_or(2);
    let loadavg = || {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    for i in 1..=runs {
        assert_eq!(delay(&db), "6000");
        let before = loadavg();
        let t = std::time::Instant::now();
        let out = cmd(&db, &["tune"])
            .args([
                "--workload",
                "write-only",
                "--threads",
                &threads,
                "--budget",
                &budget,
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        println!(
            "=== run {i}: --budget {budget} --threads {threads}; load average {before} before, {} after; wall {:.1} s\n--- stderr\n{stderr}--- stdout\n{}",
            loadavg(),
            t.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(delay(&db), "6000", "restored");
        assert_eq!(open_records(&db), 0);
    }
}
