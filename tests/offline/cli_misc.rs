//! Completions, man pages, top-level usage errors and a closed stdout.

use crate::common;
use assert_cmd::Command;
use predicates::prelude::*;

#[test]
fn completions_are_generated_from_the_clap_definition() {
    for shell in ["bash", "zsh", "fish"] {
        Command::cargo_bin("spinscope")
            .unwrap()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains("spin"))
            .stdout(predicate::str::contains("probe"));
    }
}

#[test]
fn man_pages_are_written_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    Command::cargo_bin("spinscope")
        .unwrap()
        .args(["man", "--out-dir"])
        .arg(dir.path())
        .assert()
        .success();
    let main = std::fs::read_to_string(dir.path().join("spinscope.1")).unwrap();
    assert!(main.contains(".TH spinscope"), "{main}");
    assert!(dir.path().join("spinscope-spin.1").exists());
    assert!(dir.path().join("spinscope-probe.1").exists());
}

#[test]
fn unknown_command_is_a_usage_error() {
    Command::cargo_bin("spinscope")
        .unwrap()
        .arg("frobnicate")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("frobnicate"));
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let snapshot = format!("{fixtures}/snapshots/mariadb1011_delay6000.json");
    let perf = format!("{fixtures}/perf/synthetic_mariadb1011.perf");
    let runs: [&[&str]; 6] = [
        &["probe", "--json"],
        &[
            "spin",
            "--flavor",
            "mariadb",
            "--server",
            "10.11",
            "--cpu",
            "skylake-sp",
            "--json",
        ],
        &["doctor", "--snapshot", &snapshot, "--json"],
        &["doctor", "--snapshot", &snapshot],
        &["profile", "--perf-script", &perf],
        &["completions", "bash"],
    ];
    for args in runs {
        let (code, err) = common::with_closed_stdout(args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        // A probe on a host too busy for a figure says so and exits 3 (its documented refusal).
        let busy = args[0] == "probe" && code == Some(3) && err.contains("too busy");
        assert!(code == Some(0) || busy, "{args:?}: {code:?} {err}");
    }
}

fn stderr_of(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
        .args(args)
        .env_remove("MYSQL_PWD")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_are_one_line_without_secrets() {
    for (args, want) in [
        (&["frobnicate"][..], "see 'spinscope --help'"),
        (
            &["sweep", "run", "--bogus"][..],
            "see 'spinscope sweep run --help'",
        ),
        (
            &["spin", "--flavor", "xx", "--server", "8.0.1"][..],
            "possible values: mysql, percona, mariadb",
        ),
        (&["doctor", "--window"][..], "see 'spinscope doctor --help'"),
        (
            &["restore", "u:hunter2@h", "v:hunter2@h"][..],
            "unexpected argument",
        ),
    ] {
        let (code, err) = stderr_of(args);
        let lines: Vec<&str> = err.lines().filter(|l| !l.contains("[Warning]")).collect();
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].starts_with("spinscope: error: "), "{err}");
        assert!(lines[0].contains(want), "{args:?}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[test]
fn dash_p_then_a_word_prompts_and_the_word_is_the_server() {
    if std::fs::File::open("/dev/tty").is_ok() {
        return; // with a terminal the prompt would wait for a person (unit-tested in conn.rs)
    }
    // The mysql client prompts for `-p WORD`; WORD is not the password. Here it is the
    // positional server, and with no terminal the prompt fails before any connection.
    let (code, err) = stderr_of(&["restore", "--no-defaults", "-p", "root@/nonexistent/s.sock"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no terminal"), "{err}");
    assert!(
        !err.contains("[Warning]"),
        "a word after -p is no password: {err}"
    );
}

/// Shell words of one example line, up to a redirection, pipe, `&&` or comment.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut quote: Option<char> = None;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                has = true;
            }
            (None, '\\') => cur.extend(it.next()),
            (None, c) if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
                has = false;
            }
            (None, '>' | '|' | '#') if cur.is_empty() => break,
            (None, '&') if it.peek() == Some(&'&') && cur.is_empty() => break,
            (None, c) => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Every `spinscope ...` line of a help text's "Example(s):" blocks (up to a blank line),
/// with `\` continuations joined.
fn example_lines(text: &str) -> Vec<String> {
    let mut block = String::new();
    let mut inside = false;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with("Example") && t.ends_with(':') {
            inside = true;
        } else if t.is_empty() {
            inside = false;
        } else if inside {
            block.push_str(l);
            block.push('\n');
        }
    }
    spinscope_lines(&block)
}

/// Every `spinscope ...` line of a text, with `\` continuations joined.
fn spinscope_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for l in text.lines() {
        let t = l.trim();
        let t = t.strip_prefix("$ ").unwrap_or(t);
        let line = match pending.take() {
            Some(p) => format!("{p} {t}"),
            None if t.starts_with("spinscope ") => t.to_string(),
            None => continue,
        };
        match line.strip_suffix('\\') {
            Some(head) => pending = Some(head.trim_end().to_string()),
            None => out.push(line),
        }
    }
    out
}

#[test]
fn shell_words_split_like_sh() {
    assert_eq!(
        shell_words("spinscope a --sla 'p99<5ms' \"x y\" b\\ c > out.txt"),
        ["spinscope", "a", "--sla", "p99<5ms", "x y", "b c"]
    );
    assert_eq!(
        shell_words("spinscope man | man -l -"),
        ["spinscope", "man"]
    );
    assert_eq!(
        example_lines("Examples:\n  spinscope x \\\n    --y 1\n  other\n  spinscope z"),
        ["spinscope x --y 1", "spinscope z"]
    );
}

#[test]
fn every_help_has_examples_and_they_parse() {
    use clap::{CommandFactory, Parser};
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        let help = cmd.render_long_help().to_string();
        out.push((path.to_string(), help));
        for sc in cmd.get_subcommands_mut() {
            if sc.get_name() == "help" {
                continue;
            }
            let p = format!("{path} {}", sc.get_name());
            walk(sc, &p, out);
        }
    }
    let mut helps = Vec::new();
    // No wrapping: an example must not be cut at the terminal width.
    let mut root = spinscope::cli::Cli::command().term_width(10_000);
    walk(&mut root, "spinscope", &mut helps);
    let mut checked = 0;
    for (path, help) in &helps {
        let examples: Vec<String> = example_lines(help)
            .into_iter()
            .filter(|l| {
                let w = shell_words(l);
                path.split(' ')
                    .skip(1)
                    .enumerate()
                    .all(|(i, p)| w.get(i + 1).map(String::as_str) == Some(p))
            })
            .collect();
        let leaf = path != "spinscope" && path != "spinscope sweep";
        assert!(
            !leaf || !examples.is_empty(),
            "`{path} --help` shows no example"
        );
        for ex in examples {
            let words = spinscope::server::conn::mysql_style_args(
                shell_words(&ex).into_iter().map(Into::into).collect(),
            );
            if let Err(e) = spinscope::cli::Cli::try_parse_from(&words) {
                assert!(
                    e.kind() == clap::error::ErrorKind::DisplayHelp,
                    "`{path} --help` example does not parse: {ex}\n{e}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} examples found");
}

#[test]
fn man_without_out_dir_prints_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("spinscope"))
        .arg("man")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH spinscope"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "man wrote files"
    );
}
