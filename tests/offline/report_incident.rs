//! `spinscope report` over the documents of one real incident (tests/fixtures/report/incident/,
//! made by docs/bench/incident_report.sh: a throwaway MariaDB at innodb_spin_wait_delay=6000
//! under a write load with bursts, then fixed) and one of every other kind: every document
//! spinscope writes is taken, only what is not spinscope's is refused (one line naming it); the
//! page opens with the verdict; headings are unique; the Markdown renders with a CommonMark
//! renderer (pulldown-cmark), its charts written beside it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use pulldown_cmark::{Event, Options, Parser, Tag};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

/// Copy a fixture into `dir`, modified `secs` after the watch capture fired (documents without
/// a time of their own are ordered by it; these are the offsets the incident had).
fn placed(dir: &Path, name: &str, secs: u64) -> PathBuf {
    let cap: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("incident/capture/capture.json")).unwrap(),
    )
    .unwrap();
    let fired_s = cap["fired_at_unix_ms"].as_f64().unwrap() / 1e3;
    let to = dir.join(name.replace('/', "_"));
    std::fs::copy(fixture(name), &to).unwrap();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(fired_s as u64 + secs);
    std::fs::File::options()
        .write(true)
        .open(&to)
        .unwrap()
        .set_modified(t)
        .unwrap();
    to
}

/// The incident's documents, in a temp dir, at the times they were written.
fn incident(dir: &Path) -> Vec<PathBuf> {
    vec![
        placed(dir, "incident/doctor-after.json", 102),
        placed(dir, "incident/doctor-before.json", 10),
        fixture("incident/capture"),
        fixture("incident/watch"),
        placed(dir, "incident/rt-before.json", 20),
        placed(dir, "incident/rt-after.json", 110),
        placed(dir, "incident/profile-before.json", 30),
        placed(dir, "incident/profile-after.json", 120),
        placed(dir, "incident/profile-diff.json", 130),
        placed(dir, "incident/tune.json", 90),
    ]
}

fn report(args: &[PathBuf], extra: &[&str]) -> (i32, String, String) {
    let o = assert_cmd::Command::cargo_bin("spinscope")
        .unwrap()
        .arg("report")
        .args(args)
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `rt --json` output (one interval per line, the total last) made from a saved run.
fn rt_lines(dir: &Path) -> PathBuf {
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("incident/rt-before.json")).unwrap())
            .unwrap();
    let mut s = String::new();
    for i in run["intervals"].as_array().unwrap() {
        s.push_str(&format!("{i}\n"));
    }
    s.push_str(&format!("{}\n", run["total"]));
    let p = dir.join("rt.jsonl");
    std::fs::write(&p, s).unwrap();
    p
}

/// A doctor-fleet document of two servers, from the incident's two doctor documents (the
/// shape `doctor --inventory --json` writes; src/fleet.rs).
fn fleet(dir: &Path) -> PathBuf {
    let doc = |n: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(fixture(n)).unwrap()).unwrap()
    };
    let row = |name: &str, d: serde_json::Value| {
        serde_json::json!({"name": name, "target": d["target"], "summary": {"worst_severity": d["max_severity"],
        "worst_finding": d["findings"][0]["title"]}, "error": null, "doc": d})
    };
    let f = serde_json::json!({"schema": "spinscope.doctor-fleet/1", "servers": [
        row("db1", doc("incident/doctor-before.json")), row("db2", doc("incident/doctor-after.json")),
        {"name": "db3", "target": "monitor@db3:3306", "summary": null, "error": "connection refused", "doc": null}],
        "diagnosed": 2, "failed": 1, "max_severity": "critical", "interrupted": false});
    let p = dir.join("fleet.json");
    std::fs::write(&p, f.to_string()).unwrap();
    p
}

#[test]
fn every_document_kind_is_taken_and_only_a_stranger_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = incident(dir.path());
    for k in ["probe", "spin", "doctor", "sweep", "profile", "lab", "tune"] {
        inputs.push(fixture(&format!("{k}.json")));
    }
    inputs.push(rt_lines(dir.path()));
    inputs.push(fleet(dir.path()));
    inputs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    let (code, page, err) = report(&inputs, &[]);
    assert_eq!(code, 0, "{err}");
    let refused: Vec<&str> = err.lines().filter(|l| l.contains("not included")).collect();
    assert_eq!(refused.len(), 1, "only Cargo.toml is refused: {err}");
    assert!(
        refused[0].contains("Cargo.toml") && refused[0].contains("not a JSON document"),
        "{err}"
    );
    for title in [
        "Doctor: ",
        "Watch capture: ",
        "Watch log: ",
        "Response time (rt): ",
        "Profile: ",
        "Profile diff: ",
        "Tune: ",
        "Probe: ",
        "Spin budget: ",
        "Sweep: ",
        "Lab: ",
        "Fleet: 2 servers diagnosed, 1 failed",
    ] {
        assert!(
            page.contains(&format!("<h3>{title}")),
            "no section {title:?}"
        );
    }
    for chart in [
        "burst timeline",
        "differential flame graph",
        "flame graph",
        "rt p99 per interval",
    ] {
        assert!(
            page.contains(&format!("data-name=\"{chart}\"")),
            "no chart {chart:?}"
        );
    }
    // The fleet's servers are sections of their own, and the unreachable one is said.
    assert!(page.contains("not diagnosed: connection refused"));
    let heads = headings(&page);
    let mut uniq = heads.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), heads.len(), "headings repeat: {heads:?}");
}

fn headings(page: &str) -> Vec<String> {
    page.split("<h")
        .skip(1)
        .filter(|s| s.starts_with('2') || s.starts_with('3'))
        .filter_map(|s| {
            s.get(2..)
                .and_then(|s| s.split("</h").next())
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn the_page_opens_with_the_verdict_cause_fix_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let (code, page, err) = report(&incident(dir.path()), &[]);
    assert_eq!(code, 0, "{err}");
    let heads = headings(&page);
    assert_eq!(heads[0], "Verdict", "{heads:?}");
    let verdict =
        &page[page.find("<h2>Verdict").unwrap()..page.find("<h2>Before and after").unwrap()];
    assert!(
        verdict.contains("Critical: design ratio"),
        "cause in words: {verdict}"
    );
    assert!(
        verdict.contains("innodb spin wait delay: 6000"),
        "evidence in numbers"
    );
    assert!(
        verdict.contains("SET GLOBAL innodb_spin_wait_delay = DEFAULT;"),
        "the SQL fix"
    );
    assert!(
        verdict.contains("[mysqld]\ninnodb_spin_wait_delay = 4"),
        "the option-file fix"
    );
    assert!(
        verdict.contains("no longer reports spin-budget"),
        "what was measured after: {verdict}"
    );
    assert!(
        verdict.contains("fell from"),
        "the profile diff's fall on the first screen"
    );
    // No summary line twice, and no empty profile section.
    let items: Vec<&str> = verdict.split("<li>").skip(1).collect();
    let mut u = items.clone();
    u.sort();
    u.dedup();
    assert_eq!(u.len(), items.len(), "{items:?}");
    assert!(
        !page.contains("Profile: -") && !page.contains("<h3>-"),
        "no '-' sections"
    );
    // Before and after: the capture's burst and the two profiles' pictures side by side.
    assert!(page.contains("class=\"pair\""), "before/after side by side");
    // Details follow in time order: doctor before (+10 s) above doctor after (+102 s).
    let d = page.find("<h2>Details").unwrap();
    let b = page[d..].find("doctor-before.json").unwrap();
    let a = page[d..].find("doctor-after.json").unwrap();
    assert!(b < a, "time order");
}

#[test]
fn markdown_renders_with_tables_images_beside_it_and_no_entities() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.md");
    let mut inputs = incident(dir.path());
    inputs.push(fixture("sweep.json"));
    let (code, _, err) = report(&inputs, &["--format", "md", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(&out).unwrap();
    for ent in ["&lt;", "&gt;", "&amp;", "&quot;", "&#39;"] {
        assert!(!md.contains(ent), "HTML entity {ent} in the Markdown");
    }
    let mut tables = 0;
    let mut images = Vec::new();
    let mut html = Vec::new();
    for ev in Parser::new_ext(&md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::Image { dest_url, .. }) => images.push(dest_url.to_string()),
            Event::Html(h) | Event::InlineHtml(h) => html.push(h.to_string()),
            _ => {}
        }
    }
    assert!(tables >= 8, "{tables} GFM tables");
    assert!(html.is_empty(), "raw HTML in the Markdown: {html:?}");
    assert!(images.len() >= 5, "{images:?}");
    for i in &images {
        assert!(i.starts_with("report-files/"), "{i}");
        let svg = std::fs::read_to_string(dir.path().join(i)).unwrap();
        assert!(svg.contains("<svg"), "{i}");
    }
    assert!(
        images.iter().any(|i| i.contains("burst-timeline")),
        "{images:?}"
    );
    assert!(
        images
            .iter()
            .any(|i| i.contains("differential-flame-graph")),
        "{images:?}"
    );
    // Text with markup characters comes out as that text (escaped, not interpreted).
    let text: String = Parser::new_ext(&md, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Text(t) | Event::Code(t) => Some(t.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        text.contains("SET GLOBAL innodb_spin_wait_delay = DEFAULT;"),
        "{text}"
    );
    assert!(text.contains("Threads_running"), "{text}");
}
