//! `spinscope rt` on an idle throwaway MariaDB (issue 36 §5): an interval without requests
//! says "no requests" in text, and its JSON keeps the counts as numbers but has no
//! percentiles (null), never a 0 us p99. Needs root or CAP_NET_RAW, like rt_mariadb.rs.

use crate::common;
use std::process::Command;

use common::mariadb::MariaDb;
use spinscope::rt::stats::IntervalReport;

fn rt(db: &MariaDb, json: bool) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spinscope"));
    c.args(["rt", "--port", &db.port.to_string()])
        .args(["--interval", "200ms", "--duration", "1"]);
    if json {
        c.arg("--json");
    }
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn idle_intervals_say_no_requests() {
    if let Err(why) = common::mariadb::available() {
        panic!("{why}");
    }
    let db = MariaDb::start(&[]);

    let text = rt(&db, false);
    let intervals: Vec<&str> = text.lines().filter(|l| l.contains("requests=")).collect();
    assert!(intervals.len() >= 3, "{text}");
    for l in &intervals {
        assert!(l.ends_with("requests=0 no requests"), "{l}\n{text}");
    }
    assert!(!text.contains("0us"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("all ") && l.ends_with(" no requests")),
        "{text}"
    );

    let json = rt(&db, true);
    let lines: Vec<&str> = json.lines().collect();
    assert!(lines.len() >= 4, "{json}");
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["requests"], 0, "{l}");
        assert!(v["rate_per_s"].is_number(), "{l}");
        assert!(v["ttlb_us"].is_null() && v["ttfb_us"].is_null(), "{l}");
        // The typed reader takes it back.
        let r: IntervalReport = serde_json::from_str(l).unwrap();
        assert_eq!(r.ttlb_us.p99_us, 0.0);
        assert!(r.ttlb_us.is_empty());
    }
}
