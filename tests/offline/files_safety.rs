//! Issue 24, item 5, through the binary: a symlink planted at any kind of output is refused
//! (exit 2, one line) and its target left untouched; FIFOs as inputs exit 2 at once instead
//! of hanging; an output that is one of the inputs is refused before anything is written.
//!
//! Issue 38: one table of offline readers (`readers()`): each refuses FIFOs and devices at
//! once, never lets a marker secret planted in its input reach stdout, stderr or a written
//! file, and keeps its promises (no panic or hang, exit 0..=3, one error line) on its real
//! fixture damaged by proptest (`PROPTEST_CASES=N` for a longer run). A new reader is a row.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

const FIXTURE: &str = "tests/fixtures/perf/synthetic_mariadb1011.perf";
/// Port 1 refuses connections: a command that got as far as connecting fails with exit 3.
const NO_SERVER: [&str; 4] = ["-h", "127.0.0.1", "-P", "1"];

fn bin() -> Command {
    let mut c = Command::cargo_bin("spinscope").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("MYSQL_PWD")
        .timeout(Duration::from_secs(20));
    c
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Run `args`; expect exit 2 with exactly one stderr line containing each of `wanted`.
fn refused(args: &[String], wanted: &[&str]) {
    let t = Instant::now();
    let out = bin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    for w in wanted {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err}");
    }
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{args:?} took {:?}",
        t.elapsed()
    );
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// A victim file and a symlink to it named `name` in `dir`.
fn plant(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let victim = dir.join(format!("victim-{}", name.replace('/', "_")));
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.join(name);
    if let Some(p) = link.parent() {
        std::fs::create_dir_all(p).unwrap();
    }
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    (victim, link)
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only reads it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn a_symlink_planted_at_any_output_is_refused_and_its_target_kept() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let perf = fixture(FIXTURE);
    let perf = perf.to_str().unwrap();
    let report_in = fixture("tests/fixtures/report/probe.json");
    let pcap = fixture("tests/fixtures/rt/plain-queries.pcap");
    // (link name inside dir, the command with LINK standing for the link's path)
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "flame.svg",
            vec!["profile", "--perf-script", perf, "--svg", "LINK"],
        ),
        (
            "stacks.folded",
            vec!["profile", "--perf-script", perf, "--folded", "LINK"],
        ),
        ("man/spinscope.1", vec!["man", "--out-dir", "DIR/man"]),
        (
            "man2/spinscope-doctor.1",
            vec!["man", "--out-dir", "DIR/man2"],
        ),
        (
            "report.html",
            vec!["report", report_in.to_str().unwrap(), "--out", "LINK"],
        ),
        (
            "rt.json",
            vec!["rt", "--read", pcap.to_str().unwrap(), "--save", "LINK"],
        ),
        (
            "probe.json",
            vec!["probe", "--batches", "1000000", "--save", "LINK"],
        ),
        (
            "snap.json",
            [&["doctor"], &NO_SERVER[..], &["--save-snapshot", "LINK"]].concat(),
        ),
        (
            "sweep.json",
            [&["sweep", "run"], &NO_SERVER[..], &["--save", "LINK"]].concat(),
        ),
        (
            "sweep.csv",
            [&["sweep", "run"], &NO_SERVER[..], &["--csv", "LINK"]].concat(),
        ),
        (
            "sweep.html",
            [&["sweep", "run"], &NO_SERVER[..], &["--html", "LINK"]].concat(),
        ),
        (
            "charts/p99.svg",
            [
                &["sweep", "run"],
                &NO_SERVER[..],
                &["--charts", "DIR/charts"],
            ]
            .concat(),
        ),
        (
            "tune.json",
            [&["tune"], &NO_SERVER[..], &["--save", "LINK"]].concat(),
        ),
        (
            "w/watch.log",
            [
                &["watch"],
                &NO_SERVER[..],
                &["--out", "DIR/w", "--duration", "1"],
            ]
            .concat(),
        ),
    ];
    for (name, cmd) in cases {
        let (victim, link) = plant(dir, name);
        let args: Vec<String> = cmd
            .iter()
            .map(|a| match *a {
                "LINK" => link.display().to_string(),
                a if a.starts_with("DIR/") => dir.join(&a[4..]).display().to_string(),
                a => a.to_string(),
            })
            .collect();
        refused(&args, &["symbolic link"]);
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "precious",
            "{name}"
        );
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            m.file_type().is_symlink(),
            "{name}: the link itself is kept too"
        );
    }
    // Nothing else appeared beside the planted files (no temp files, no half-written pages).
    let stray: Vec<String> = walk(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .map(|p| p.display().to_string())
        .collect();
    assert!(stray.is_empty(), "left behind: {stray:?}");
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            v.extend(walk(&p));
        }
        v.push(p);
    }
    v
}

#[test]
fn fifo_inputs_exit_2_at_once() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("fifo");
    mkfifo(&f);
    let f = f.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["doctor", "--inventory", f], "--inventory"),
        (
            [
                &["watch"],
                &NO_SERVER[..],
                &["--inventory", f, "--duration", "1"],
            ]
            .concat(),
            "--inventory",
        ),
        (vec!["rt", "--read", f], "--read"),
        (vec!["doctor", "--snapshot", f], "--snapshot"),
        (vec!["profile", "--perf-script", f], "--perf-script"),
        (vec!["report", f], "report input"),
        (vec!["spin", "--server", "10.11.6", "--probe", f], "--probe"),
        (
            [&["sweep", "run"], &NO_SERVER[..], &["--sql", f]].concat(),
            "--sql",
        ),
        (
            [&["doctor"], &NO_SERVER[..], &["--host-facts", f]].concat(),
            "--host-facts",
        ),
    ];
    for (cmd, flag) in cases {
        refused(&s(&cmd), &[flag, "FIFO"]);
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let x = d.path().join("x");
    std::fs::copy(fixture(FIXTURE), &x).unwrap();
    let before = std::fs::read(&x).unwrap();
    let x = x.to_str().unwrap();
    let dotted = format!("{}/./x", d.path().display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["profile", "--perf-script", x, "--svg", x],
        vec!["profile", "--perf-script", x, "--folded", &dotted],
        vec!["report", x, "--out", x],
        vec!["rt", "--read", x, "--save", x],
        [
            &["sweep", "run"],
            &NO_SERVER[..],
            &["--sql", x, "--save", x],
        ]
        .concat(),
        [&["tune"], &NO_SERVER[..], &["--sql", x, "--save", x]].concat(),
    ];
    for cmd in cases {
        refused(&s(&cmd), &["is the same file as"]);
        assert_eq!(
            std::fs::read(x).unwrap(),
            before,
            "{cmd:?} changed its input"
        );
    }
    // Two outputs at one path.
    let y = format!("{}/y.svg", d.path().display());
    refused(
        &s(&["profile", "--perf-script", x, "--svg", &y, "--folded", &y]),
        &["is the same file as --folded"],
    );
    assert!(!Path::new(&y).exists());
}

#[test]
fn outputs_holding_server_data_are_private_and_replace_atomically() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("r.html");
    std::fs::write(&out, "old").unwrap();
    let input = fixture("tests/fixtures/report/doctor.json");
    bin()
        .args([
            "report",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "report --out holds server data");
    assert!(std::fs::read_to_string(&out).unwrap().contains("<html"));
    let svg = d.path().join("f.svg");
    bin()
        .args([
            "profile",
            "--perf-script",
            FIXTURE,
            "--svg",
            svg.to_str().unwrap(),
        ])
        .assert()
        .success();
    let mode = std::fs::metadata(&svg).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let man = d.path().join("man");
    bin()
        .args(["man", "--out-dir", man.to_str().unwrap()])
        .assert()
        .success();
    assert!(man.join("spinscope.1").is_file() && man.join("spinscope-doctor.1").is_file());
    // Only the result files: no temp file left in any of the directories.
    let stray: Vec<PathBuf> = walk(d.path())
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

// ---- Issue 38: hostile input through every offline reader ----------------------------------

/// Every file a command reads in other ways than these readers is one row here: the next
/// reader gets the FIFO/device refusal, the marker-secret test and the fuzzing by adding a row.
struct Reader {
    name: &'static str,
    /// A real fixture: the seed of the fuzzing and of the planted inputs.
    seed: &'static str,
    /// The command lines that read `input` (outputs, if any, go to `out`): each is run.
    runs: fn(input: &str, out: &str) -> Vec<Vec<String>>,
    /// The seed with a marker secret planted in every field that can carry one; each input
    /// is run separately.
    plants: fn(seed: &[u8], marker: &str) -> Vec<Vec<u8>>,
}

const SNAPSHOT: &str = "tests/fixtures/snapshots/mariadb1011_delay6000.json";
const PCAP: &str = "tests/fixtures/rt/plain-queries.pcap";
const FOLDED_AFTER: &str = "tests/fixtures/perf/diff/mariadbd-write-d6000.folded";

/// The forms a password takes in text: URL user info, a URL parameter, an option, SQL.
fn secret_forms(m: &str) -> [String; 4] {
    [
        format!("mysql://u:{m}@db1:3306/"),
        format!("mysql://u@db1:1/db?password={m}&x=1"),
        format!("--ssl-key-password={m}"),
        format!("ALTER USER u IDENTIFIED BY '{m}'"),
    ]
}

/// JSON planted in its secret-carrying fields: `target` as a URL with a password, statement
/// text with a password literal, `password` members at the top and in every object.
fn plant_json_fields(seed: &[u8], m: &str) -> Vec<u8> {
    fn walk(x: &mut serde_json::Value, m: &str) {
        match x {
            serde_json::Value::Object(o) => {
                for (k, y) in o.iter_mut() {
                    match k.as_str() {
                        "target" => {
                            *y = format!("mysql://root:{m}@db1:3306/?ssl_key_password={m}").into()
                        }
                        "innodb_status" => {
                            *y = format!(
                                "{}\nALTER USER u IDENTIFIED BY '{m}'",
                                y.as_str().unwrap_or("")
                            )
                            .into()
                        }
                        _ => walk(y, m),
                    }
                }
                o.insert("password".into(), m.into());
                o.insert("loose_pass".into(), m.into());
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|y| walk(y, m)),
            _ => {}
        }
    }
    let mut x: serde_json::Value = serde_json::from_slice(seed).unwrap();
    walk(&mut x, m);
    serde_json::to_vec(&x).unwrap()
}

/// JSON with a secret form appended to every string (most fields then fail to parse: the
/// errors must not quote it either).
fn plant_json_everywhere(seed: &[u8], m: &str) -> Vec<u8> {
    fn walk(x: &mut serde_json::Value, f: &[String; 4], n: &mut usize) {
        match x {
            serde_json::Value::String(s) => {
                s.push(' ');
                s.push_str(&f[*n % 4]);
                *n += 1;
            }
            serde_json::Value::Object(o) => o.values_mut().for_each(|y| walk(y, f, n)),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|y| walk(y, f, n)),
            _ => {}
        }
    }
    let mut x: serde_json::Value = serde_json::from_slice(seed).unwrap();
    walk(&mut x, &secret_forms(m), &mut 0);
    serde_json::to_vec(&x).unwrap()
}

fn plant_json(seed: &[u8], m: &str) -> Vec<Vec<u8>> {
    vec![plant_json_fields(seed, m), plant_json_everywhere(seed, m)]
}

/// Text with the secret forms in its header comments and in one line no parser takes.
fn plant_text(seed: &[u8], m: &str) -> Vec<Vec<u8>> {
    let f = secret_forms(m);
    let mut head = Vec::new();
    for x in &f {
        head.extend_from_slice(format!("# cmdline : {x}\n").as_bytes());
    }
    let bad = format!("{} {} {} {}\n", f[0], f[1], f[2], f[3]);
    vec![[&head[..], seed].concat(), [seed, bad.as_bytes()].concat()]
}

/// The capture with its first query replaced by `SET PASSWORD='<marker>'` (same length, 28
/// bytes: the marker is 13 characters).
fn plant_pcap(seed: &[u8], m: &str) -> Vec<Vec<u8>> {
    let q = b"SELECT c FROM t.a WHERE id=1";
    let new = format!("SET PASSWORD='{m}'");
    assert_eq!(new.len(), q.len(), "a 13-character marker");
    let at = seed.windows(q.len()).position(|w| w == q).unwrap();
    let mut b = seed.to_vec();
    b[at..at + q.len()].copy_from_slice(new.as_bytes());
    vec![b]
}

fn plant_optfile(seed: &[u8], m: &str) -> Vec<Vec<u8>> {
    let mut b = seed.to_vec();
    for k in [
        "password",
        "pass",
        "passwd",
        "passw",
        "ssl-key-password",
        "loose-password",
        "loose_ssl_key_password",
        "password1",
        "PASSWORD",
    ] {
        b.extend_from_slice(
            format!("\n[client]\n{k}={m}\n[mariadb-client]\n{k} = \"{m}\"\n").as_bytes(),
        );
    }
    vec![b]
}

fn plant_inventory(_seed: &[u8], m: &str) -> Vec<Vec<u8>> {
    [
        format!("mysql://u:{m}@127.0.0.1:1/\n"),
        format!("[db1] u:{m}@127.0.0.1:1\n"),
        format!("mysql://u@127.0.0.1:1/db?password={m}&x=1\n"),
        format!("mysql://u@127.0.0.1:1/db?x=1&pass={m}\n"),
        format!("mysql://u:{m}@127.0.0.1:x/\n"),
        format!("[db2] mysql://u:{m}@127.0.0.1:1/ extra\n"),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect()
}

fn readers() -> Vec<Reader> {
    vec![
        Reader {
            name: "doctor --snapshot",
            seed: SNAPSHOT,
            runs: |i, _| {
                vec![
                    s(&["doctor", "--snapshot", i]),
                    s(&["doctor", "--snapshot", i, "--json"]),
                    s(&["doctor", "--snapshot", i, "--markdown"]),
                ]
            },
            plants: plant_json,
        },
        Reader {
            name: "doctor --host-facts",
            seed: SNAPSHOT,
            runs: |i, _| {
                vec![s(&[
                    "doctor",
                    "--snapshot",
                    SNAPSHOT,
                    "--host-facts",
                    i,
                    "--json",
                ])]
            },
            plants: plant_json,
        },
        Reader {
            name: "spin --snapshot",
            seed: SNAPSHOT,
            runs: |i, _| {
                vec![
                    s(&["spin", "--snapshot", i]),
                    s(&["spin", "--snapshot", i, "--json"]),
                ]
            },
            plants: plant_json,
        },
        Reader {
            name: "spin --probe",
            seed: "tests/fixtures/report/probe.json",
            runs: |i, _| vec![s(&["spin", "--server", "10.11.6", "--probe", i, "--json"])],
            plants: plant_json,
        },
        Reader {
            name: "report",
            seed: "tests/fixtures/report/doctor.json",
            runs: |i, o| {
                vec![
                    s(&["report", i, "--out", &format!("{o}/r.html")]),
                    s(&[
                        "report",
                        i,
                        SNAPSHOT,
                        "--format",
                        "md",
                        "--out",
                        &format!("{o}/r.md"),
                    ]),
                ]
            },
            plants: plant_json,
        },
        Reader {
            name: "profile --perf-script",
            seed: FIXTURE,
            runs: |i, o| {
                vec![
                    s(&["profile", "--perf-script", i, "--json"]),
                    s(&[
                        "profile",
                        "--perf-script",
                        i,
                        "--svg",
                        &format!("{o}/f.svg"),
                        "--folded",
                        &format!("{o}/f.folded"),
                    ]),
                ]
            },
            plants: plant_text,
        },
        Reader {
            name: "profile --diff",
            seed: "tests/fixtures/perf/diff/mariadbd-write-d4.folded",
            runs: |i, o| {
                vec![
                    s(&["profile", "--diff", i, FOLDED_AFTER, "--json"]),
                    s(&[
                        "profile",
                        "--diff",
                        FOLDED_AFTER,
                        i,
                        "--svg",
                        &format!("{o}/d.svg"),
                    ]),
                ]
            },
            plants: plant_text,
        },
        Reader {
            name: "rt --read",
            seed: PCAP,
            runs: |i, o| {
                vec![
                    s(&[
                        "rt",
                        "--read",
                        i,
                        "--port",
                        "13306",
                        "--by-command",
                        "--top",
                        "5",
                    ]),
                    s(&[
                        "rt",
                        "--read",
                        i,
                        "--port",
                        "13306",
                        "--json",
                        "--top",
                        "5",
                        "--save",
                        &format!("{o}/rt.json"),
                    ]),
                ]
            },
            plants: plant_pcap,
        },
        Reader {
            name: "option file",
            seed: "tests/fixtures/optfiles/quirks/my.cnf",
            runs: |i, _| {
                vec![
                    s(&["doctor", "--defaults-file", i, "--print-defaults"]),
                    s(&[
                        "spin",
                        "--from-server",
                        "--defaults-file",
                        i,
                        "-h",
                        "127.0.0.1",
                        "-P",
                        "1",
                        "--connect-timeout",
                        "1",
                        "--cpu",
                        "zen4",
                    ]),
                ]
            },
            plants: plant_optfile,
        },
        Reader {
            name: "--inventory",
            seed: "tests/fixtures/optfiles/README.md",
            runs: |i, _| {
                vec![s(&[
                    "doctor",
                    "--no-defaults",
                    "--inventory",
                    i,
                    "--connect-timeout",
                    "1",
                    "--json",
                ])]
            },
            plants: plant_inventory,
        },
    ]
}

/// What one run left: exit code, stdout, stderr and every file written under `out`.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    files: Vec<(PathBuf, Vec<u8>)>,
}

fn run_reader(args: &[String], out: &Path) -> Ran {
    let t = Instant::now();
    let o = bin().args(args).output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "{args:?} took {:?}",
        t.elapsed()
    );
    let files = walk(out)
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    Ran {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        files,
    }
}

/// The promises of the README for any input: no panic, a documented exit code, and on a
/// failure one error line.
fn check_promises(args: &[String], r: &Ran) {
    assert!(
        matches!(r.code, Some(0..=3)),
        "{args:?}: exit {:?}: {}",
        r.code,
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    if matches!(r.code, Some(2 | 3)) {
        let errors = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("spinscope: error:"))
            .count();
        assert_eq!(errors, 1, "{args:?}: one error line: {}", r.stderr);
        assert!(
            r.stderr
                .trim_end()
                .lines()
                .last()
                .unwrap_or("")
                .starts_with("spinscope: error:"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

fn assert_no_marker(args: &[String], r: &Ran, m: &str) {
    assert!(!r.stdout.contains(m), "{args:?}: stdout has the secret");
    assert!(
        !r.stderr.contains(m),
        "{args:?}: stderr has the secret: {}",
        r.stderr
    );
    for (p, b) in &r.files {
        assert!(
            !String::from_utf8_lossy(b).contains(m),
            "{args:?}: {} has the secret",
            p.display()
        );
    }
}

/// Run every reader on every planted input; the marker must reach no output.
fn marker_never_leaves(m: &str) {
    for r in readers() {
        let seed = std::fs::read(fixture(r.seed)).unwrap();
        for (n, input) in (r.plants)(&seed, m).into_iter().enumerate() {
            assert!(
                input.windows(m.len()).any(|w| w == m.as_bytes()),
                "{}: the marker is planted",
                r.name
            );
            let d = tempfile::tempdir().unwrap();
            let inp = d.path().join(format!("input-{n}"));
            std::fs::write(&inp, &input).unwrap();
            let out = d.path().join("out");
            std::fs::create_dir(&out).unwrap();
            for args in (r.runs)(inp.to_str().unwrap(), out.to_str().unwrap()) {
                let ran = run_reader(&args, &out);
                check_promises(&args, &ran);
                assert_no_marker(&args, &ran, m);
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(cases(3)))]

    /// Issue 38, item 2: a marker secret planted in every field of every reader's input that
    /// can carry one never reaches stdout, stderr or a written file.
    #[test]
    fn a_planted_secret_never_leaves_any_reader(m in "[A-Z][a-z0-9]{11}[A-Z]") {
        marker_never_leaves(&m);
    }
}

/// Cases of a property test: `PROPTEST_CASES` when set (longer fuzzing runs), else `dflt`.
fn cases(dflt: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(dflt)
}

/// A damage done to a seed: what a crashed writer, a bad disk or an attacker does.
#[derive(Debug, Clone)]
enum Damage {
    Truncate(usize),
    Flip(usize, u8),
    InvalidUtf8(usize),
    HugeNumber(usize),
    Duplicate(usize, usize),
    Delete(usize, usize),
}

fn damage() -> impl proptest::strategy::Strategy<Value = Vec<Damage>> {
    use proptest::prelude::*;
    let one = prop_oneof![
        any::<usize>().prop_map(Damage::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Damage::Flip(p, b)),
        any::<usize>().prop_map(Damage::InvalidUtf8),
        any::<usize>().prop_map(Damage::HugeNumber),
        (any::<usize>(), 1usize..4096).prop_map(|(p, n)| Damage::Duplicate(p, n)),
        (any::<usize>(), 1usize..4096).prop_map(|(p, n)| Damage::Delete(p, n)),
    ];
    proptest::collection::vec(one, 1..4)
}

fn apply(seed: &[u8], ds: &[Damage]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for d in ds {
        let at = |p: usize, b: &Vec<u8>| if b.is_empty() { 0 } else { p % b.len() };
        match *d {
            Damage::Truncate(p) => b.truncate(at(p, &b)),
            Damage::Flip(p, x) => {
                if !b.is_empty() {
                    let i = at(p, &b);
                    b[i] ^= x | 1;
                }
            }
            Damage::InvalidUtf8(p) => {
                let i = at(p, &b);
                b.splice(i..i, [0xff, 0xfe, 0xc3]);
            }
            Damage::HugeNumber(p) => {
                let i = at(p, &b);
                b.splice(i..i, *b"184467440737095516169999e999");
            }
            Damage::Duplicate(p, n) => {
                let i = at(p, &b);
                let chunk = b[i..(i + n).min(b.len())].to_vec();
                b.splice(i..i, chunk);
            }
            Damage::Delete(p, n) => {
                let i = at(p, &b);
                let end = (i + n).min(b.len());
                b.drain(i..end);
            }
        }
    }
    b
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(cases(4)))]

    /// Issue 38, item 5: every reader, fed its real fixture damaged (truncated, bytes flipped,
    /// invalid UTF-8, huge numbers, chunks duplicated or cut), keeps the promises: no panic,
    /// no hang, exit 0..=3, one error line; and with a secret planted first, never prints it.
    #[test]
    fn every_reader_survives_damaged_input(ds in damage(), m in "[A-Z][a-z0-9]{11}[A-Z]") {
        for r in readers() {
            let seed = std::fs::read(fixture(r.seed)).unwrap();
            let planted = (r.plants)(&seed, &m);
            let damaged = apply(&planted[0], &ds);
            // A damage inside a secret's key or URL makes it another field (`pa$sword=`, a
            // user name): the marker is checked only where its context is intact.
            let check = intact_context(&planted[0], &damaged, &m);
            for (input, check) in [(apply(&seed, &ds), false), (damaged, check)] {
                let d = tempfile::tempdir().unwrap();
                let inp = d.path().join("input");
                std::fs::write(&inp, &input).unwrap();
                let out = d.path().join("out");
                std::fs::create_dir(&out).unwrap();
                let args = (r.runs)(inp.to_str().unwrap(), out.to_str().unwrap()).remove(0);
                let ran = run_reader(&args, &out);
                check_promises(&args, &ran);
                if check {
                    assert_no_marker(&args, &ran, &m);
                }
            }
        }
    }
}

/// Whether every marker left in `damaged` has the 24 bytes before it as in `planted`.
fn intact_context(planted: &[u8], damaged: &[u8], m: &str) -> bool {
    let m = m.as_bytes();
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    (0..damaged.len().saturating_sub(m.len() - 1))
        .filter(|&j| damaged[j..].starts_with(m))
        .all(|j| find(planted, &damaged[j.saturating_sub(24)..j + m.len()]))
}

/// Issue 24's FIFO test, for devices and for the readers it did not reach: every reader's
/// input refuses a FIFO, /dev/urandom, /dev/zero and /dev/null at once with one line.
#[test]
fn every_reader_refuses_fifos_and_devices_at_once() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    mkfifo(&fifo);
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for special in [
        fifo.to_str().unwrap(),
        "/dev/urandom",
        "/dev/zero",
        "/dev/null",
    ] {
        for r in readers() {
            let args = (r.runs)(special, out.to_str().unwrap()).remove(0);
            let kind = if special.ends_with("fifo") {
                "FIFO"
            } else {
                "a device"
            };
            refused(&args, &[special, kind]);
        }
    }
}

/// Issue 38's table, row by row, through the binary.
#[test]
fn issue_38_rows_give_one_line_the_documented_exit_and_keep_partial_captures() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();
    // A pcap cut inside its last record, as tcpdump killed mid-write leaves it: the four
    // requests before the cut are reported, with a warning saying where the file ends.
    let pcap = std::fs::read(fixture(PCAP)).unwrap();
    std::fs::write(p("cut.pcap"), &pcap[..pcap.len() - 7]).unwrap();
    let out = bin()
        .args(["rt", "--read", &p("cut.pcap"), "--port", "13306", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let total: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        total["requests"], 4,
        "every complete request before the cut"
    );
    assert!(
        err.contains("warning: --read") && err.contains("cut.pcap") && err.contains("ends early"),
        "{err}"
    );
    // Cut inside its first record: nothing readable is bad input.
    std::fs::write(p("cut0.pcap"), &pcap[..40]).unwrap();
    refused(
        &s(&["rt", "--read", &p("cut0.pcap"), "--port", "13306"]),
        &["cut0.pcap", "no whole packet"],
    );
    // A link type rt cannot decode is bad input too (was exit 3).
    let mut lt = pcap.clone();
    let le = lt[0] == 0xd4 || lt[0] == 0x4d;
    lt[20..24].copy_from_slice(&if le {
        147u32.to_le_bytes()
    } else {
        147u32.to_be_bytes()
    });
    std::fs::write(p("lt.pcap"), &lt).unwrap();
    refused(
        &s(&["rt", "--read", &p("lt.pcap")]),
        &["lt.pcap", "link type 147"],
    );
    // `report` with no usable input.
    std::fs::write(p("notes.txt"), "hello").unwrap();
    refused(
        &s(&["report", &p("notes.txt")]),
        &["notes.txt", "no input is a spinscope document"],
    );
    // `spin --snapshot` with a bad version names the file and the field, not --server.
    let mut snap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture(SNAPSHOT)).unwrap()).unwrap();
    snap["version"] = "eight".into();
    std::fs::write(p("badver.json"), snap.to_string()).unwrap();
    refused(
        &s(&["spin", "--snapshot", &p("badver.json")]),
        &["--snapshot", "badver.json", "field \"version\""],
    );
    let err = String::from_utf8_lossy(
        &bin()
            .args(["spin", "--snapshot", &p("badver.json")])
            .output()
            .unwrap()
            .stderr,
    )
    .into_owned();
    assert!(!err.contains("--server"), "{err}");
    // Without the CPU in its host facts: refused at once, naming the flags that give one,
    // never priced with this host's CPU.
    let mut snap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture(SNAPSHOT)).unwrap()).unwrap();
    snap.as_object_mut().unwrap().remove("host");
    std::fs::write(p("nohost.json"), snap.to_string()).unwrap();
    refused(
        &s(&["spin", "--snapshot", &p("nohost.json")]),
        &["nohost.json", "\"host\"", "--probe FILE", "--cpu NAME"],
    );
    bin()
        .args(["spin", "--snapshot", &p("nohost.json"), "--cpu", "zen4"])
        .assert()
        .success();
    // Secrets: a snapshot's target, option-file keys, an inventory's query string.
    let m = "Mk7q2zX9pL4wQ";
    let mut snap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture(SNAPSHOT)).unwrap()).unwrap();
    snap["target"] = format!("mysql://user:{m}@host:3306/").into();
    std::fs::write(p("secret.json"), snap.to_string()).unwrap();
    let out = bin()
        .args(["doctor", "--snapshot", &p("secret.json")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(mysql://***@host:3306/)"), "{text}");
    std::fs::write(
        p("my.cnf"),
        format!("[client]\npass={m}\npasswd={m}\nssl-key-password={m}\nuser=u\n"),
    )
    .unwrap();
    let out = bin()
        .args([
            "doctor",
            "--defaults-file",
            &p("my.cnf"),
            "--print-defaults",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--pass=***** --passwd=***** --ssl-key-password=***** --user=u"),
        "{text}"
    );
    std::fs::write(
        p("inv"),
        format!("mysql://u:p@host:1/db?password={m}&x=1\n"),
    )
    .unwrap();
    refused(
        &s(&["doctor", "--inventory", &p("inv")]),
        &[
            "inv line 1",
            "password=***",
            "a password is not a parameter",
        ],
    );
}
