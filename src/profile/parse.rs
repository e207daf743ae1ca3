//! A lenient reader of `perf script` text: counts samples, finds leaf frames without a symbol
//! (so their instruction bytes can be examined), and notes where the text must change before it
//! goes to inferno's folder (sample periods dropped, chosen leaf frames renamed). The changes
//! are applied on the fly by [`Edited`], a reader, so a 100 MB script is never copied. It never
//! panics on any input; it only reports what it saw.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read};
use std::ops::Range;

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
    /// Byte ranges of the sample periods in event headers, in text order: dropped before
    /// folding so that inferno counts samples rather than summing periods.
    pub periods: Vec<Range<usize>>,
    /// Byte ranges (without the line end) of the leaf lines counted in `unknown_leaves`, in text
    /// order: the candidates for renaming once their instruction bytes have been examined.
    pub unknown_leaf_lines: Vec<Range<usize>>,
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

/// Blank (empty or whitespace only, as `trim()` and inferno see it); decides on the first
/// byte that is not ASCII whitespace instead of trimming both ends of every line.
fn is_blank(line: &str) -> bool {
    match line.bytes().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(b) if b.is_ascii() => false,
        Some(_) => line.trim().is_empty(),
    }
}

/// Substring test without building a `str` searcher per call (this runs once per header).
fn has(hay: &str, needle: &[u8]) -> bool {
    let h = hay.as_bytes();
    let mut i = 0;
    while let Some(p) = h[i..].iter().position(|&b| b == needle[0]) {
        if h[i + p..].starts_with(needle) {
            return true;
        }
        i += p + 1;
    }
    false
}

/// The lines of `text` as `lines()` yields them, each with the offset where it starts.
fn lines_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut pos = 0;
    text.split_inclusive('\n').map(move |raw| {
        let at = pos;
        pos += raw.len();
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        (at, line.strip_suffix('\r').unwrap_or(line))
    })
}

/// Scan a perf-script text.
pub fn scan(text: &str) -> Scan {
    let mut s = Scan::default();
    let mut in_event = false;
    let mut have_leaf = false;
    for (at, line) in lines_at(text) {
        if is_blank(line) {
            in_event = false;
            continue;
        }
        let first = line.as_bytes()[0];
        if first == b'#' {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            // An event header (`comm pid/tid time: period event:`), or a side-band record.
            if has(line, b"PERF_RECORD_") {
                in_event = false;
                continue;
            }
            if has(line, b": ") || line.trim_end().ends_with(':') {
                s.headers += 1;
                if s.first_event.is_none() {
                    s.first_event = event_of(line).map(str::to_string);
                }
                if let Some(r) = period_span(line) {
                    s.periods.push(at + r.start..at + r.end);
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
                        s.unknown_leaf_lines.push(at..at + line.len());
                    }
                }
            }
            None => s.bad_lines += 1,
        }
    }
    s
}

/// Where the sample period sits in an event header (`comm pid/tid time: PERIOD event:`), or
/// `None` for a header without one. Works from the end without collecting every token.
pub fn period_span(line: &str) -> Option<Range<usize>> {
    // The last three tokens must be `time:`, `PERIOD`, `event:`.
    let t = line.trim_end();
    let (rest, event) = t.rsplit_once(char::is_whitespace)?;
    let rest = rest.trim_end();
    let (before, period) = rest.rsplit_once(char::is_whitespace)?;
    let time_ok = before
        .trim_end()
        .rsplit(char::is_whitespace)
        .next()
        .is_some_and(|x| x.ends_with(':'));
    if event.ends_with(':')
        && !period.is_empty()
        && period.bytes().all(|b| b.is_ascii_digit())
        && time_ok
    {
        let end = rest.len();
        return Some(end - period.len()..end);
    }
    None
}

/// One change to the text: `range` is replaced by `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub with: String,
}

/// The changes that prepare a scanned text for inferno: drop every sample period (count
/// samples), and rename the unknown leaf frames whose (dso, ip) is in `names` to carry that name
/// as their symbol. Sorted by position, non-overlapping.
pub fn edits(text: &str, scan: &Scan, names: &BTreeMap<(String, u64), String>) -> Vec<Edit> {
    let mut renames = Vec::new();
    if !names.is_empty() {
        for r in &scan.unknown_leaf_lines {
            let Some(f) = frame_line(&text[r.clone()]) else {
                continue;
            };
            if let Some(name) = names.get(&(f.dso.to_string(), f.ip)) {
                renames.push(Edit {
                    range: r.clone(),
                    with: format!("\t{:x} {} ({})", f.ip, name, f.dso),
                });
            }
        }
    }
    let mut all: Vec<Edit> = scan
        .periods
        .iter()
        .map(|r| Edit {
            range: r.clone(),
            with: String::new(),
        })
        .collect();
    if !renames.is_empty() {
        all.extend(renames);
        all.sort_by_key(|e| e.range.start);
    }
    all
}

/// `text` read with `edits` applied, without copying the text: what inferno's folder reads.
pub struct Edited<'a> {
    text: &'a [u8],
    edits: &'a [Edit],
    /// Next byte of `text` to deliver (when not inside a replacement).
    pos: usize,
    /// Index of the first edit not yet passed.
    next: usize,
    /// Inside `edits[next].with`, at this offset.
    in_edit: Option<usize>,
}

impl<'a> Edited<'a> {
    /// `edits` must be sorted by position and not overlap (as [`edits`] returns them).
    pub fn new(text: &'a str, edits: &'a [Edit]) -> Self {
        Edited {
            text: text.as_bytes(),
            edits,
            pos: 0,
            next: 0,
            in_edit: None,
        }
    }
}

impl BufRead for Edited<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        loop {
            if let Some(off) = self.in_edit {
                let e = &self.edits[self.next];
                if off < e.with.len() {
                    return Ok(&e.with.as_bytes()[off..]);
                }
                self.pos = e.range.end.min(self.text.len());
                self.next += 1;
                self.in_edit = None;
                continue;
            }
            let stop = self
                .edits
                .get(self.next)
                .map_or(self.text.len(), |e| e.range.start.min(self.text.len()));
            if self.pos < stop {
                return Ok(&self.text[self.pos..stop]);
            }
            if self.next < self.edits.len() {
                self.in_edit = Some(0);
                continue;
            }
            return Ok(&[]);
        }
    }

    fn consume(&mut self, n: usize) {
        match &mut self.in_edit {
            Some(off) => *off += n,
            None => self.pos += n,
        }
    }
}

impl Read for Edited<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let src = self.fill_buf()?;
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(t: &str, s: &Scan, names: &BTreeMap<(String, u64), String>) -> String {
        let e = edits(t, s, names);
        let mut out = String::new();
        Edited::new(t, &e).read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn edits_apply_in_place_of_a_copy() {
        let t = "a 1/2 3.0: 7 ev:\r\n\t 10 [unknown] (/b)\r\n\n# c\nd 1/2 4.0: 8 ev:\n\t 10 [unknown] (/b)";
        let s = scan(t);
        assert_eq!(s.periods.len(), 2);
        assert_eq!(s.unknown_leaf_lines.len(), 2);
        assert_eq!(
            edited(t, &s, &BTreeMap::new()),
            "a 1/2 3.0:  ev:\r\n\t 10 [unknown] (/b)\r\n\n# c\nd 1/2 4.0:  ev:\n\t 10 [unknown] (/b)"
        );
        let names = BTreeMap::from([(("/b".to_string(), 0x10), "[x]".to_string())]);
        assert_eq!(
            edited(t, &s, &names),
            "a 1/2 3.0:  ev:\r\n\t10 [x] (/b)\r\n\n# c\nd 1/2 4.0:  ev:\n\t10 [x] (/b)"
        );
        // Small reads cross edit boundaries like large ones.
        let e = edits(t, &s, &names);
        let mut r = Edited::new(t, &e);
        let (mut out, mut b) = (Vec::new(), [0u8; 3]);
        loop {
            let n = r.read(&mut b).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&b[..n]);
        }
        assert_eq!(String::from_utf8(out).unwrap(), edited(t, &s, &names));
        assert!(is_blank(" \t\u{3000}") && !is_blank(" x") && !is_blank("\u{e9}"));
    }

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
        let r = edited(t, &s, &names);
        assert!(r.contains("\t10 [spin] (/usr/sbin/mariadbd)\n"));
        assert!(r.contains("\t 20 main (/usr/sbin/mariadbd)\n"));
        assert!(r.starts_with("mariadbd 1/2 10.0:  cpu-clock:\n"), "{r}");
        let h = "mysqld 1/2 [001] 5.0:    1001001 cpu-clock: ";
        assert_eq!(&h[period_span(h).unwrap()], "1001001");
        assert_eq!(period_span("mysqld 1/2 5.0: cpu-clock:"), None);
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
