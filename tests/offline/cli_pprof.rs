//! `profile --pprof` read back by a real pprof reader (`go tool pprof`, Debian's golang-go): its
//! totals per sample type, per class label and its top functions equal spinscope's own JSON table
//! and folded stacks. And the spin share by second of a script with one dense-spin second.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/perf")
        .join(name)
}

/// `go tool pprof ARGS FILE`'s output; `None` (with a printed reason) when `go` is missing.
fn go_pprof(args: &[&str], file: &Path) -> Option<String> {
    let out = match Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", file.parent().unwrap())
        .env("HOME", file.parent().unwrap())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: `go` is not installed (Debian: apt-get install golang-go)");
            return None;
        }
        Err(e) => panic!("go tool pprof: {e}"),
    };
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The total of `-top`'s header, "Showing nodes accounting for 72, 100% of 72 total".
fn total(top: &str) -> i64 {
    let line = top
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for"))
        .unwrap_or_else(|| panic!("no header in:\n{top}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == "total").unwrap();
    number(w[i - 1]).unwrap_or_else(|| panic!("{line}"))
}

/// What a filtered `-top` keeps: "Showing nodes accounting for N, ..% of TOTAL total" (every
/// node shown: run it with `-nodefraction=0`).
fn shown(top: &str) -> i64 {
    let line = top
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for"))
        .unwrap_or_else(|| panic!("no header in:\n{top}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    number(w[4].trim_end_matches(',')).unwrap_or_else(|| panic!("{line}"))
}

/// A value as `-top` prints it: `72`, or `730303030ns` with `-unit=ns`.
fn number(w: &str) -> Option<i64> {
    w.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse()
        .ok()
}

/// `-top` rows: function -> flat value.
fn flat(top: &str) -> Vec<(String, i64)> {
    top.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let v = number(w.first()?)?;
            Some((w.get(5..)?.join(" "), v))
        })
        .collect()
}

struct Run {
    doc: serde_json::Value,
    folded: String,
    pprof: PathBuf,
    _dir: tempfile::TempDir,
}

fn run(script: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let pprof = dir.path().join("p.pb.gz");
    let folded = dir.path().join("p.folded");
    let out = Command::new(common::bin())
        .args(["profile", "--json", "--perf-script"])
        .arg(fixture(script))
        .arg("--pprof")
        .arg(&pprof)
        .arg("--folded")
        .arg(&folded)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&pprof).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzipped");
    Run {
        doc: serde_json::from_slice(&out.stdout).unwrap(),
        folded: std::fs::read_to_string(folded).unwrap(),
        pprof,
        _dir: dir,
    }
}

/// A C++ name without template arguments, as `pprof -top` shows names
/// (`srw_mutex_impl<true>::wait_and_lock` is `srw_mutex_impl::wait_and_lock`).
fn untemplated(name: &str) -> String {
    let (mut out, mut depth) = (String::new(), 0);
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Leaf function -> summed weight, from spinscope's own folded stacks.
fn leaf_weights(folded: &str) -> HashMap<String, i64> {
    let mut m = HashMap::new();
    for l in folded.lines() {
        let (stack, w) = l.rsplit_once(' ').unwrap();
        let leaf = untemplated(stack.rsplit(';').next().unwrap());
        *m.entry(leaf).or_insert(0) += w.parse::<i64>().unwrap();
    }
    m
}

fn check(script: &str) -> usize {
    let r = run(script);
    let samples = r.doc["samples"].as_i64().unwrap();
    let weight = r.doc["weight"].as_i64().unwrap();
    assert_eq!(r.doc["weight_unit"], "ns", "{script}: a cpu-clock script");
    let Some(by_samples) = go_pprof(&["-top", "-sample_index=samples"], &r.pprof) else {
        return 0;
    };
    assert_eq!(total(&by_samples), samples, "{script}:\n{by_samples}");
    let cpu_args = ["-top", "-sample_index=cpu", "-unit=ns", "-nodecount=8"];
    let by_cpu = go_pprof(&cpu_args, &r.pprof).unwrap();
    assert_eq!(total(&by_cpu), weight, "{script}:\n{by_cpu}");
    // Each class of spinscope's table, by its label.
    for c in r.doc["classes"].as_array().unwrap() {
        let id = c["class"].as_str().unwrap();
        let want = c["self_samples"].as_i64().unwrap();
        // pprof matches a tag by regular expression: anchored, so `innodb` does not take `innodb_spin` too.
        let focus = format!("-tagfocus=class=^{id}$");
        let got = go_pprof(
            &["-top", "-sample_index=samples", "-nodefraction=0", &focus],
            &r.pprof,
        )
        .unwrap();
        if want == 0 {
            continue;
        }
        assert_eq!(shown(&got), want, "{script}: class {id}:\n{got}");
    }
    // The top functions: pprof's flat time per function is the weight of the stacks that end
    // in it (a leaf without a symbol is named by its file offset in pprof, `[mariadbd]` in the
    // folded text, so those are compared in sum).
    let leaves = leaf_weights(&r.folded);
    let rows = flat(&by_cpu);
    assert!(!rows.is_empty(), "{by_cpu}");
    let unnamed_row =
        |n: &str| (n.contains("+0x") || n.starts_with('[')) && !n.starts_with("[spin loop at ");
    let mut compared = 0;
    for (name, v) in &rows {
        // A function with no flat time (do_command) is no stack's leaf: only its callers' rows.
        if unnamed_row(name) || *v == 0 {
            continue;
        }
        assert_eq!(leaves.get(name), Some(v), "{script}: {name}:\n{by_cpu}");
        compared += 1;
    }
    let unnamed: i64 = rows
        .iter()
        .filter(|(n, _)| unnamed_row(n))
        .map(|(_, v)| v)
        .sum();
    let folded_unnamed: i64 = leaves
        .iter()
        .filter(|(n, _)| n.starts_with('[') && !n.starts_with("[spin loop at "))
        .map(|(_, v)| v)
        .sum();
    assert!(unnamed <= folded_unnamed, "{unnamed} > {folded_unnamed}");
    // The heaviest function is spinscope's heaviest leaf (named ones compared).
    let heaviest = leaves.values().max().copied().unwrap();
    assert!(rows[0].1 <= heaviest.max(folded_unnamed));
    compared
}

#[test]
fn go_pprof_reads_the_same_totals_classes_and_top_functions() {
    let synthetic = check("synthetic_burst_mariadb1011.perf");
    let captured = check("mariadb/mariadbd-cpu-clock-g.perf");
    if Command::new("go").arg("version").output().is_ok() {
        assert!(synthetic >= 2, "named top functions compared: {synthetic}");
        assert!(captured >= 1, "named top functions compared: {captured}");
    }
}

/// A 10 s recording's samples span a little less than 10 s (the first sample comes a period
/// after the start, the last before the end): its periods are still whole seconds, not tenths
/// of the span (0.95 s here), so "by second" means seconds.
#[test]
fn a_recording_short_of_ten_seconds_is_read_by_seconds() {
    let text = std::fs::read_to_string(fixture("synthetic_burst_mariadb1011.perf")).unwrap();
    // The samples of the first 9.5 s only: blocks whose header time is below 5009.5.
    let kept: Vec<&str> = text
        .split("\n\n")
        .filter(|b| {
            let head = b.lines().next().unwrap_or("");
            let t = head
                .split_whitespace()
                .find_map(|w| w.strip_suffix(':')?.parse::<f64>().ok());
            t.is_some_and(|t| t < 5009.5)
        })
        .collect();
    assert!(kept.len() > 100 && kept.len() < text.split("\n\n").count());
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("short.perf");
    std::fs::write(&script, kept.join("\n\n") + "\n").unwrap();
    let out = Command::new(common::bin())
        .args(["profile", "--json", "--perf-script"])
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &doc["spin_by_time"];
    assert_eq!(t["period_s"].as_f64(), Some(1.0), "{t}");
    assert_eq!(t["spin_share"].as_array().map(Vec::len), Some(10), "{t}");
    assert_eq!(t["peak_period"].as_u64(), Some(2), "{t}");
}

/// One second of dense spinning in a 10 s script: the whole-recording share is about a tenth
/// of it, and the second stands out by name in the text and in the JSON.
#[test]
fn a_one_second_burst_stands_out() {
    let r = run("synthetic_burst_mariadb1011.perf");
    let t = &r.doc["spin_by_time"];
    assert_eq!(t["period_s"].as_f64(), Some(1.0), "{t}");
    let shares: Vec<f64> = t["spin_share"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(shares.len(), 10, "{shares:?}");
    assert_eq!(t["peak_period"].as_u64(), Some(2), "{t}");
    let total = r.doc["spin_share"].as_f64().unwrap();
    assert!(shares[2] > 0.7 && total < 0.15, "{shares:?} vs {total}");
    for (i, s) in shares.iter().enumerate() {
        if i != 2 {
            assert!(*s < 0.1, "second {i}: {s}");
        }
    }
    let samples: u64 = t["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(samples, r.doc["samples"].as_u64().unwrap());
    let out = Command::new(common::bin())
        .args(["profile", "--perf-script"])
        .arg(fixture("synthetic_burst_mariadb1011.perf"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("spin share by second: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("peak 80% in second 3 of 10, 2-3 s"), "{line}");
    assert!(
        line.contains("a burst the whole-recording share dilutes"),
        "{line}"
    );
}

/// A function name as `-top` shows it: templates dropped, and a trailing parenthesised remark
/// ("(no function start)") too, which pprof may shorten.
fn shown_name(name: &str) -> String {
    let n = untemplated(name);
    match n.find(" (") {
        Some(i) => n[..i].to_string(),
        None => n,
    }
}

/// `profile --waits --pprof` of the captured wait recordings read by `go tool pprof`: its totals
/// per sample type are the table's on-CPU and off-CPU time, its `class` labels give the table's
/// spin CPU and latch sleep time, and with latch sleeps in focus its top functions are the
/// table's sites, each with the site's sleep time (a site is a function and its caller: pprof
/// sums a function over its callers).
#[test]
fn go_pprof_reads_the_wait_view() {
    let mut sites_compared = 0;
    for script in [
        "waits/mariadbd-waits-d6000-l1.perf",
        "waits/mariadbd-waits-d4-l1.perf",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let pprof = dir.path().join("w.pb.gz");
        let out = Command::new(common::bin())
            .args(["profile", "--waits", "--json", "--perf-script"])
            .arg(fixture(script))
            .arg("--pprof")
            .arg(&pprof)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let secs = doc["source"]["seconds"].as_f64().unwrap();
        let ns = |per_s: f64| (per_s * secs * 1e9).round() as i64;
        let f = |v: &serde_json::Value| v.as_f64().unwrap();
        let top = |args: &[&str]| {
            let mut a = vec!["-top", "-unit=ns", "-nodefraction=0", "-nodecount=50"];
            a.extend_from_slice(args);
            go_pprof(&a, &pprof)
        };
        let Some(off) = top(&["-sample_index=off_cpu"]) else {
            return;
        };
        if script.contains("d4-") {
            assert!(doc["latch_sleeps"].as_i64().unwrap() > 0, "{script}");
        }
        let off_total: f64 = doc["off_cpu"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| f(&o["seconds_per_s"]))
            .sum();
        assert!(
            (total(&off) - ns(off_total)).abs() <= 8,
            "{script}: off-CPU:\n{off}"
        );
        let cpu = top(&["-sample_index=cpu"]).unwrap();
        assert_eq!(
            total(&cpu),
            ns(f(&doc["cpu_seconds_per_s"])),
            "{script}:\n{cpu}"
        );
        // A focus that keeps nothing is left out: pprof has no profile to show then.
        if doc["spin_samples"].as_i64().unwrap() > 0 {
            let spin = top(&["-sample_index=cpu", "-tagfocus=class=^innodb_spin$"]).unwrap();
            assert_eq!(
                shown(&spin),
                ns(f(&doc["spin_cpu_seconds_per_s"])),
                "{script}:\n{spin}"
            );
            sites_compared += by_site(&doc, &spin, "spin_cpu_seconds_per_s", &ns, script);
        }
        let latch_ns = ns(f(&doc["latch_sleep_seconds_per_s"]));
        if latch_ns > 0 {
            let latch = top(&["-sample_index=off_cpu", "-tagfocus=class=^latch_sleep$"]).unwrap();
            assert!((shown(&latch) - latch_ns).abs() <= 2, "{script}:\n{latch}");
            sites_compared += by_site(&doc, &latch, "sleep_seconds_per_s", &ns, script);
        }
    }
    // At delay 6000 the spin sites, at delay 4 the sleeping ones.
    assert!(sites_compared >= 2, "sites compared: {sites_compared}");
}

/// The table's time per site function (`field`, per second, summed over the function's
/// callers) against `top`'s flat rows: each site function pprof shows has the table's time, and
/// the first of them is the table's largest. How many sites were compared.
fn by_site(
    doc: &serde_json::Value,
    top: &str,
    field: &str,
    ns: &dyn Fn(f64) -> i64,
    script: &str,
) -> usize {
    let mut by_fn: HashMap<String, i64> = HashMap::new();
    for s in doc["sites"].as_array().unwrap() {
        let n = shown_name(s["function"].as_str().unwrap());
        if n.starts_with('(') {
            continue; // spin samples with no server frame: no site function to end at
        }
        *by_fn.entry(n).or_default() += ns(s[field].as_f64().unwrap());
    }
    by_fn.retain(|_, v| *v > 0);
    if by_fn.is_empty() {
        return 0;
    }
    let rows: Vec<(String, i64)> = flat(top)
        .into_iter()
        .map(|(n, v)| (shown_name(&n), v))
        .filter(|(n, _)| by_fn.contains_key(n))
        .collect();
    assert!(!rows.is_empty(), "{script} {field}: no site in\n{top}");
    for (n, v) in &rows {
        assert!(
            (by_fn[n] - v).abs() <= 2,
            "{script} {field}: {n}: table {} pprof {v}",
            by_fn[n]
        );
    }
    let best = by_fn.values().max().copied().unwrap();
    assert!((rows[0].1 - best).abs() <= 2, "{script} {field}:\n{top}");
    rows.len()
}
