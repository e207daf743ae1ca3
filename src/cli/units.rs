//! Flag values shared by every command: durations with units (`10s`, `500ms`, `2m`, `1h30m`,
//! `1.5s`; parsed by humantime, decimals added here) where a bare number keeps the flag's old
//! unit, and thread ladders (`1,2,4` or `1..64:x2`, the sweep's form).

use std::time::Duration;

/// The built-in workloads (`load::workload::Kind`), for `--workload`'s possible values.
pub const WORKLOADS: [&str; 4] = ["point-select", "read-only", "write-only", "read-write"];

/// The accepted forms, for error messages.
const FORMS: &str = "give a duration like 10s, 500ms, 2m or 1h30m";

/// `s` as a duration, a bare number counting `bare` (its unit's name in `bare_name`).
fn parse(s: &str, bare: f64, bare_name: &str) -> Result<f64, String> {
    let t = s.trim();
    let bad = || format!("{FORMS} (a bare number is {bare_name})");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(v) = t.parse::<f64>() {
        if !v.is_finite() {
            return Err(bad());
        }
        return Ok(v * bare);
    }
    if let Ok(d) = humantime::parse_duration(t) {
        return Ok(d.as_secs_f64());
    }
    // humantime takes whole numbers only: `1.5s`, `0.25ms`.
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| bad())?;
    let unit_s = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    Ok(v * unit_s)
}

/// A duration flag in seconds (a bare number is seconds).
pub fn seconds(s: &str) -> Result<f64, String> {
    parse(s, 1.0, "seconds")
}

/// A duration flag in milliseconds (a bare number is milliseconds).
pub fn millis(s: &str) -> Result<f64, String> {
    parse(s, 1e-3, "milliseconds").map(|v| v * 1e3)
}

/// A duration flag kept as its text for a command that converts it itself, checked here so
/// junk is refused like every other duration.
pub fn duration_text(s: &str) -> Result<String, String> {
    seconds(s).map(|_| s.to_string())
}

/// A duration flag in days (a bare number is days).
pub fn days(s: &str) -> Result<f64, String> {
    parse(s, 86_400.0, "days").map(|v| v / 86_400.0)
}

/// A duration flag in whole nanoseconds (a bare number is nanoseconds).
pub fn nanos(s: &str) -> Result<u64, String> {
    let v = parse(s, 1e-9, "nanoseconds")? * 1e9;
    if !(0.0..=1e15).contains(&v) {
        return Err(format!("{FORMS}, from 0 to 11 days"));
    }
    Ok(v.round() as u64)
}

/// The flags that take a duration (current and still-accepted old names).
const DURATION_FLAGS: [&str; 21] = [
    "--window",
    "--duration",
    "--budget",
    "--max-age",
    "--warmup",
    "--report-interval",
    "--interval",
    "--after",
    "--history",
    "--cooldown",
    "--profile-duration",
    "--connect-timeout",
    "--query-timeout",
    "--cs-ns",
    "--think-ns",
    "--budget-ns",
    "--duration-ms",
    "--profile-seconds",
    "--max-age-days",
    "--seconds",
    "--timeout",
];

/// Words a unit could be written as, apart from its number.
const UNIT_WORDS: [&str; 24] = [
    "ns", "us", "µs", "ms", "s", "sec", "secs", "second", "seconds", "m", "min", "mins", "minute",
    "minutes", "h", "hr", "hrs", "hour", "hours", "d", "day", "days", "msec", "usec",
];

/// The short form of a unit word from UNIT_WORDS (`seconds` -> `s`).
fn canonical_unit(word: &str) -> &'static str {
    match word.to_ascii_lowercase().as_str() {
        "ns" => "ns",
        "us" | "µs" | "usec" => "us",
        "ms" | "msec" => "ms",
        w if w.starts_with('s') => "s",
        w if w.starts_with('m') => "m",
        w if w.starts_with('h') => "h",
        _ => "d",
    }
}

/// A unit written apart from its number (`--window 10 sec`): the shell makes `sec` a word of
/// its own that would be taken as a server or ignored. The one-line refusal, or None. Pure.
pub fn stray_unit(args: &[String]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        let (flag, value, next) = match a.split_once('=') {
            Some((f, v)) => (f, v, i + 1),
            None => (a.as_str(), args.get(i + 1).map(String::as_str)?, i + 2),
        };
        if !DURATION_FLAGS.contains(&flag) || value.trim().parse::<f64>().is_err() {
            continue;
        }
        let Some(word) = args.get(next) else { continue };
        if UNIT_WORDS.contains(&word.to_ascii_lowercase().as_str()) {
            return Some(format!(
                "{flag} {value} {word}: the unit is a word of its own, so it would be taken as \
                 another argument; write it without the space, e.g. {flag} {value}{}",
                canonical_unit(word)
            ));
        }
    }
    None
}

/// Seconds as a `Duration` for the engines (the value was range-checked by the caller).
pub fn dur(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0))
}

/// A thread ladder flag: `1,2,4,8`, `1..64:x2`, `4..32:+4`.
pub fn ladder(s: &str) -> Result<Vec<u32>, String> {
    crate::load::spec::parse_ladder(s).map_err(|e| {
        // The parser names `--threads "VALUE"`; clap already says which flag and value.
        e.split_once(": ")
            .map(|(_, rest)| rest.to_string())
            .unwrap_or(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_numbers() {
        assert_eq!(seconds("10").unwrap(), 10.0);
        assert_eq!(seconds("2.5").unwrap(), 2.5);
        assert_eq!(seconds("10s").unwrap(), 10.0);
        assert_eq!(seconds("500ms").unwrap(), 0.5);
        assert_eq!(seconds("2m").unwrap(), 120.0);
        assert_eq!(seconds("1h30m").unwrap(), 5400.0);
        assert_eq!(seconds("1.5s").unwrap(), 1.5);
        assert_eq!(millis("200").unwrap(), 200.0);
        assert_eq!(millis("1s").unwrap(), 1000.0);
        assert_eq!(nanos("200").unwrap(), 200);
        assert_eq!(nanos("2us").unwrap(), 2000);
        assert_eq!(nanos("1.5us").unwrap(), 1500);
        assert_eq!(ladder("1..8:x2").unwrap(), vec![1, 2, 4, 8]);
    }

    #[test]
    fn junk_is_refused_with_the_forms() {
        for j in [
            "",
            "x",
            "10x",
            "s",
            "1..2s",
            "inf",
            "NaN",
            "10 parsecs",
            "--",
        ] {
            let e = seconds(j).unwrap_err();
            assert!(e.contains("like 10s, 500ms"), "{j}: {e}");
        }
        assert!(nanos("-5").is_err());
        let args = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        for (line, flag, fix) in [
            (
                "doctor -S /x.sock --window 10 sec",
                "--window 10 sec",
                "--window 10s",
            ),
            ("watch --after=2 s", "--after 2 s", "--after 2s"),
            (
                "sweep run --duration 1.5 Minutes",
                "--duration 1.5 Minutes",
                "--duration 1.5m",
            ),
            ("lab --cs-ns 200 NS", "--cs-ns 200 NS", "--cs-ns 200ns"),
        ] {
            let e = stray_unit(&args(line)).unwrap_or_else(|| panic!("{line}"));
            assert!(e.starts_with(flag) && e.ends_with(fix), "{e}");
            assert!(seconds(&fix[fix.find(' ').unwrap() + 1..]).is_ok(), "{fix}");
        }
        for ok in [
            "doctor --window 10s sec.example.com",
            "doctor --window 10 db1",
            "watch --hz 100 m",
            "doctor --window",
        ] {
            assert_eq!(stray_unit(&args(ok)), None, "{ok}");
        }
        assert!(ladder("8..1").unwrap_err().contains("1..64:x2"));
    }
}
