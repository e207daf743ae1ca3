//! Integration: profile a throwaway, stripped (as Debian ships it) MariaDB under a write-heavy
//! load with innodb_spin_wait_delay=6000; most samples must land in spin loops found from
//! instruction bytes, without symbols.

mod common;

use std::process::{Child, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use common::mariadb::{self, MariaDb};

const LOAD_SECONDS: u32 = 12;
const CLIENTS: usize = 16;

/// Load clients, killed in Drop so a failing assertion leaves nothing running.
struct Load(Vec<Child>);

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn finds_spin_loops_without_symbols_in_stripped_mariadbd() {
    if mariadb::skip_reason("profile_mariadb", mariadb::available().err()).is_some() {
        return;
    }
    let no_perf = mariadb::which("perf")
        .is_none()
        .then(|| "perf is not installed (apt-get install linux-perf)".to_string());
    if mariadb::skip_reason("profile_mariadb", no_perf).is_some() {
        return;
    }
    let db = MariaDb::start(&[
        "--innodb-flush-log-at-trx-commit=0",
        "--max-connections=100",
    ]);
    db.sql("SET GLOBAL innodb_spin_wait_delay = 6000");
    db.sql(
        "CREATE DATABASE spinscope_load; \
         CREATE TABLE spinscope_load.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, k INT, c INT, \
           KEY (k)) ENGINE=InnoDB; \
         INSERT INTO spinscope_load.t (k, c) WITH RECURSIVE s(n) AS \
           (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000) SELECT n % 100, 0 FROM s;",
    );
    // Time-bounded load inside the server: each client inserts and updates until a deadline.
    db.sql_delimited(&format!(
        "CREATE PROCEDURE spinscope_load.churn() BEGIN \
           DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL {LOAD_SECONDS} SECOND; \
           WHILE NOW(6) < t_end DO \
             INSERT INTO spinscope_load.t (k, c) VALUES (FLOOR(RAND()*100), 1); \
             UPDATE spinscope_load.t SET c = c + 1 WHERE id = 1 + FLOOR(RAND()*1000); \
           END WHILE; END"
    ));
    let load = Load(
        (0..CLIENTS)
            .map(|_| {
                db.client()
                    .args(["-e", "CALL spinscope_load.churn()"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("starting a load client")
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_secs(2));

    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args([
            "profile",
            "--pid",
            &db.pid().to_string(),
            "--seconds",
            "5",
            "--json",
        ])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    drop(load);
    assert!(
        out.status.success(),
        "profile failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: spinscope::profile::ProfileDoc = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc.schema, "spinscope.profile/1");
    assert!(doc.samples > 500, "too few samples: {}", doc.samples);
    let spin_share = doc.spin_loop_samples as f64 / doc.samples as f64;
    eprintln!(
        "samples {}, no symbol {}, in spin loops {} ({:.1}%), loops: {:?}",
        doc.samples,
        doc.no_symbol_samples,
        doc.spin_loop_samples,
        100.0 * spin_share,
        doc.spin_loops
            .iter()
            .take(5)
            .map(|l| (&l.name, l.samples))
            .collect::<Vec<_>>()
    );
    assert!(
        spin_share > 0.5,
        "only {:.1}% of samples in spin loops",
        100.0 * spin_share
    );
    assert!(doc
        .spin_loops
        .iter()
        .all(|l| l.name.starts_with("spin loop at mariadbd+0x")));
    let spin = doc
        .classes
        .iter()
        .find(|c| c.class == "innodb_spin")
        .expect("innodb_spin class");
    assert!(spin.self_share > 0.5);
}
