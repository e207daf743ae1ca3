//! `spinscope rt --read` on a capture made by tcpdump (tests/fixtures/rt/README.md says how):
//! the login is not a request, four COM_QUERY with their fingerprints, one ERR, COM_QUIT
//! unanswered.

use assert_cmd::Command;
use spinscope::rt::stats::IntervalReport;

#[test]
fn plain_capture_gives_its_four_queries() {
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["rt", "--read", "tests/fixtures/rt/plain-queries.pcap"])
        .args(["--port", "13306", "--json", "--by-command", "--top", "5"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let total: IntervalReport = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(total.kind, "total");
    assert_eq!(total.requests, 4);
    assert_eq!(total.errors, 1);
    assert_eq!(total.no_response, 1, "COM_QUIT");
    assert_eq!(total.by_command.len(), 1);
    assert_eq!(total.by_command[0].key, "COM_QUERY");
    let fps: Vec<(&str, u64)> = total
        .top_statements
        .iter()
        .map(|g| (g.key.as_str(), g.requests))
        .collect();
    assert!(
        fps.contains(&("select c from t.a where id=?", 2)),
        "{fps:?}"
    );
    assert!(fps.contains(&("select nosuchcol from t.a", 1)), "{fps:?}");
    assert!(total.ttfb_us.p50_us > 0.0 && total.ttlb_us.max_us >= total.ttfb_us.max_us);
}

#[test]
fn wrong_port_says_which_ports_the_file_holds() {
    let out = Command::cargo_bin("spinscope")
        .unwrap()
        .args(["rt", "--read", "tests/fixtures/rt/plain-queries.pcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no TCP segment of port [3306]")
            && err.contains("13306 (")
            && err.contains("give --port 13306"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("--port")).count(),
        1,
        "{err}"
    );
}
