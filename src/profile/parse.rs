//! A lenient reader of `perf script` text: counts samples, finds leaf frames without a symbol
//! (so their instruction bytes can be examined), and renames chosen leaf frames before the
//! text goes to inferno's folder. It never panics on any input; it only reports what it saw.

use std::collections::BTreeMap;

/// One frame line: `\t<hex ip> <symbol>[+0xoff] (<dso>)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameLine<'a> {
    pub ip: u64,
    pub sym: &'a str,
    pub dso: &'a str,
}

/// Parse one frame line; `None` when it is not one. Byte-level searches: this runs on every
/// frame line (millions in a long recording).
pub fn frame_line(line: &str) -> Option<FrameLine<'_>> {
    let t = line.trim_ascii();
    let sp = t.bytes().position(|b| b == b' ' || b == b'\t')?;
    let ip = u64::from_str_radix(&t[..sp], 16).ok()?;
    let rest = t[sp..].trim_ascii_start();
    // The DSO is the last parenthesised group: ` (<dso>)` at the end, or the whole rest.
    let body = rest.strip_suffix(')')?;
    let open = body.bytes().rposition(|b| b == b'(')?;
    if open > 0 && body.as_bytes()[open - 1] != b' ' {
        return None;
    }
    let dso = &body[open + 1..];
    let sym = rest[..open].trim_ascii_end();
    Some(FrameLine { ip, sym, dso })
}

/// A cheap test that a line has a frame's shape (`<hex> ... )`), for lines whose fields are
/// not needed.
fn looks_like_frame(line: &str) -> bool {
    let t = line.trim_ascii();
    t.ends_with(')') && t.bytes().next().is_some_and(|b| b.is_ascii_hexdigit())
}

/// What one pass over a perf-script text found.
#[derive(Debug, Default, Clone)]
pub struct Scan {
    /// Events with at least one frame.
    pub samples: u64,
    /// Samples whose leaf frame has no symbol.
    pub no_symbol_samples: u64,
    /// Leaf (sampled IP) frames without a symbol, in a file-backed DSO: (dso, ip) -> samples.
    pub unknown_leaves: BTreeMap<(String, u64), u64>,
    /// Lines that were neither a header, a frame nor blank.
    pub bad_lines: u64,
    /// Header lines seen (events, with or without frames).
    pub headers: u64,
    /// The event name of the first header (`cpu-clock`, `cycles`), as inferno reads it.
    pub first_event: Option<String>,
}

/// The event name of a header: the token after the time (`12.345678:`), up to its first ':'.
pub fn event_of(header: &str) -> Option<&str> {
    let mut toks = header.split_whitespace();
    toks.by_ref().find(|t| {
        t.strip_suffix(':')
            .is_some_and(|x| x.contains('.') && x.parse::<f64>().is_ok())
    })?;
    let mut t = toks.next()?;
    if t.bytes().all(|b| b.is_ascii_digit()) {
        t = toks.next()?; // the sample period
    }
    t.split(':').next().filter(|e| !e.is_empty())
}

fn is_unknown(sym: &str) -> bool {
    sym.is_empty() || sym.starts_with("[unknown]")
}

/// Scan a perf-script text.
pub fn scan(text: &str) -> Scan {
    let mut s = Scan::default();
    let mut in_event = false;
    let mut have_leaf = false;
    for line in text.lines() {
        if line.trim().is_empty() {
            in_event = false;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // An event header (`comm pid/tid time: period event:`), or a side-band record.
            if line.contains("PERF_RECORD_") {
                in_event = false;
                continue;
            }
            if line.contains(": ") || line.trim_end().ends_with(':') {
                s.headers += 1;
                if s.first_event.is_none() {
                    s.first_event = event_of(line).map(str::to_string);
                }
                in_event = true;
                have_leaf = false;
            } else {
                s.bad_lines += 1;
                in_event = false;
            }
            continue;
        }
        if !in_event {
            s.bad_lines += 1;
            continue;
        }
        if have_leaf {
            // Callers of the leaf: only whether the line is a frame matters here.
            if !looks_like_frame(line) {
                s.bad_lines += 1;
            }
            continue;
        }
        match frame_line(line) {
            Some(f) => {
                have_leaf = true;
                s.samples += 1;
                if is_unknown(f.sym) {
                    s.no_symbol_samples += 1;
                    if f.dso.starts_with('/') {
                        *s.unknown_leaves
                            .entry((f.dso.to_string(), f.ip))
                            .or_insert(0) += 1;
                    }
                }
            }
            None => s.bad_lines += 1,
        }
    }
    s
}

/// Drop the sample period from an event header (`comm pid/tid time: PERIOD event:`), so that
/// inferno counts samples rather than summing periods; other headers are returned unchanged.
pub fn header_without_period(line: &str) -> Option<String> {
    // The last three tokens must be `time:`, `PERIOD`, `event:`; work from the end without
    // collecting every token (this runs once per sample on 100k-sample scripts).
    let t = line.trim_end();
    let (rest, event) = t.rsplit_once(char::is_whitespace)?;
    let rest = rest.trim_end();
    let (before, period) = rest.rsplit_once(char::is_whitespace)?;
    let before = before.trim_end();
    let time_ok = before
        .rsplit(char::is_whitespace)
        .next()
        .is_some_and(|x| x.ends_with(':'));
    if event.ends_with(':')
        && !period.is_empty()
        && period.bytes().all(|b| b.is_ascii_digit())
        && time_ok
    {
        let mut h = String::with_capacity(before.len() + event.len() + 1);
        h.push_str(before);
        h.push(' ');
        h.push_str(event);
        return Some(h);
    }
    None
}

/// Prepare a perf-script text for inferno: drop sample periods from headers (count samples),
/// and rename leaf frames whose (dso, ip) is in `names` to carry that name as their symbol.
pub fn rename_leaves(text: &str, names: &BTreeMap<(String, u64), String>) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    let mut in_event = false;
    let mut have_leaf = false;
    for line in text.lines() {
        let mut replaced = false;
        if line.trim().is_empty() {
            in_event = false;
        } else if !line.starts_with(char::is_whitespace) {
            in_event = !line.starts_with('#') && !line.contains("PERF_RECORD_");
            have_leaf = false;
            if in_event {
                if let Some(h) = header_without_period(line) {
                    out.push_str(&h);
                    out.push('\n');
                    replaced = true;
                }
            }
        } else if in_event && !have_leaf {
            if let Some(f) = frame_line(line) {
                have_leaf = true;
                if is_unknown(f.sym) {
                    if let Some(name) = names.get(&(f.dso.to_string(), f.ip)) {
                        out.push_str(&format!("\t{:x} {} ({})\n", f.ip, name, f.dso));
                        replaced = true;
                    }
                }
            }
        }
        if !replaced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lines() {
        let f = frame_line("\t    7f1e2215d058 ut_delay+0x2c (/usr/sbin/mysqld)").unwrap();
        assert_eq!(
            (f.ip, f.sym, f.dso),
            (0x7f1e2215d058, "ut_delay+0x2c", "/usr/sbin/mysqld")
        );
        let f = frame_line("\t           4330 [unknown] (/usr/bin/gzip)").unwrap();
        assert_eq!((f.ip, f.sym, f.dso), (0x4330, "[unknown]", "/usr/bin/gzip"));
        let f = frame_line("\t 7f1e2215d058  (/lib/libc.so)").unwrap();
        assert_eq!(f.sym, "");
        let f = frame_line("\t 1f foo(int, char*)+0x10 (/usr/lib/x.so)").unwrap();
        assert_eq!((f.sym, f.dso), ("foo(int, char*)+0x10", "/usr/lib/x.so"));
        assert!(
            frame_line("\t 1f foo(/x)").is_none(),
            "no space before the DSO"
        );
        assert!(frame_line("\tnot a frame").is_none());
        assert!(frame_line("").is_none());
    }

    #[test]
    fn scan_counts_leaves() {
        let t = "mariadbd 1/2 10.0: 1 cpu-clock:\n\t 10 [unknown] (/usr/sbin/mariadbd)\n\t 20 main (/usr/sbin/mariadbd)\n\nmariadbd 1/2 10.1: 1 cpu-clock:\n\t 30 foo+0x1 (/x)\n\n";
        let s = scan(t);
        assert_eq!((s.samples, s.no_symbol_samples, s.bad_lines), (2, 1, 0));
        assert_eq!(
            s.unknown_leaves.get(&("/usr/sbin/mariadbd".into(), 0x10)),
            Some(&1)
        );
        let mut names = BTreeMap::new();
        names.insert(
            ("/usr/sbin/mariadbd".to_string(), 0x10),
            "[spin]".to_string(),
        );
        let r = rename_leaves(t, &names);
        assert!(r.contains("\t10 [spin] (/usr/sbin/mariadbd)\n"));
        assert!(r.contains("\t 20 main (/usr/sbin/mariadbd)\n"));
        assert_eq!(
            header_without_period("mysqld 1/2 [001] 5.0:    1001001 cpu-clock: ").as_deref(),
            Some("mysqld 1/2 [001] 5.0: cpu-clock:")
        );
        assert_eq!(header_without_period("mysqld 1/2 5.0: cpu-clock:"), None);
        assert_eq!(
            event_of("mysqld 1/2 [001] 5.0:    1001001 cpu-clock: "),
            Some("cpu-clock")
        );
        assert_eq!(
            event_of("vote   913    72.176760:     257597 cycles:uppp:"),
            Some("cycles")
        );
        assert_eq!(event_of("no time here: x:"), None);
    }
}
