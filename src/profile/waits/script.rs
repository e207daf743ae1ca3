//! `perf script` text of a wait recording, read as a stream of typed events: on-CPU samples
//! (`cpu-clock`, `cycles`, ...) and scheduler switches (`sched:sched_switch` with its
//! `prev_pid`, `prev_state` and `next_pid`), each with its call chain, leaf first. Lines are
//! read one at a time with a length cap and an input cap; a line that is neither an event nor a
//! frame is counted and skipped, never a panic.

use std::io::BufRead;

/// Longest line read (a C++ symbol can be long; nothing in perf script output is near this).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One frame of a call chain: the address as perf prints it (an address in the DSO's file
/// layout for user code with call chains), its symbol without the `+0x..` offset (`None` for
/// `[unknown]`), and its DSO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub ip: u64,
    pub sym: Option<String>,
    pub dso: String,
}

/// What an event is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A sample of an on-CPU event (its name as perf prints it, e.g. `cpu-clock`,
    /// `cpu-clock/period=2004008/`).
    Sample(String),
    /// A scheduler switch: `prev_pid` leaves the CPU in `prev_state` (`S` sleeping, `D`
    /// uninterruptible, `R`/`R+` preempted while runnable), `next_pid` gets it.
    Switch {
        prev_pid: u32,
        prev_state: String,
        next_pid: u32,
    },
    /// Another tracepoint or event this view does not use.
    Other(String),
}

/// One event line and its frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub comm: String,
    pub pid: u32,
    pub tid: u32,
    pub time_ns: u64,
    /// The sample's period (nanoseconds for cpu-clock; 1 for a tracepoint); 1 when absent.
    pub period: u64,
    pub kind: Kind,
    /// Leaf first.
    pub frames: Vec<Frame>,
}

/// Counts of what the reader saw besides events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    pub lines: u64,
    pub events: u64,
    pub frame_lines: u64,
    /// Lines that were neither (and frame lines with no event before them).
    pub odd_lines: u64,
    pub bytes: u64,
}

/// Why reading stopped early.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    TooLong { max_bytes: u64 },
    LineTooLong { line: u64 },
}

/// Events of `perf script` text read from `r`, at most `max_bytes` of it.
pub struct Events<R> {
    r: R,
    buf: Vec<u8>,
    pending: Option<Event>,
    pub seen: Seen,
    max_bytes: u64,
    pub error: Option<ReadError>,
    done: bool,
}

impl<R: BufRead> Events<R> {
    pub fn new(r: R, max_bytes: u64) -> Events<R> {
        Events {
            r,
            buf: Vec::with_capacity(256),
            pending: None,
            seen: Seen::default(),
            max_bytes,
            error: None,
            done: false,
        }
    }

    /// The next line without its end, or `None` at the end (or on an error, kept in `error`).
    fn line(&mut self) -> Option<String> {
        self.buf.clear();
        let mut limited = std::io::Read::take(&mut self.r, MAX_LINE_BYTES as u64 + 1);
        match limited.read_until(b'\n', &mut self.buf) {
            Ok(0) => return None,
            Ok(n) => {
                self.seen.bytes += n as u64;
                self.seen.lines += 1;
                if self.seen.bytes > self.max_bytes {
                    self.error = Some(ReadError::TooLong {
                        max_bytes: self.max_bytes,
                    });
                    return None;
                }
                if n > MAX_LINE_BYTES && self.buf.last() != Some(&b'\n') {
                    self.error = Some(ReadError::LineTooLong {
                        line: self.seen.lines,
                    });
                    return None;
                }
            }
            Err(e) => {
                self.error = Some(ReadError::Io(e));
                return None;
            }
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Some(String::from_utf8_lossy(&self.buf).into_owned())
    }
}

impl<R: BufRead> Iterator for Events<R> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.done {
            return self.pending.take();
        }
        loop {
            let Some(line) = self.line() else {
                self.done = true;
                return self.pending.take();
            };
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            // perf pads the comm of a chain-less event to the right: an event line may start
            // with spaces; frame lines start with a tab.
            let event = if line.starts_with('\t') {
                None
            } else {
                parse_event(&line)
            };
            if event.is_none() && line.starts_with(char::is_whitespace) {
                match (parse_frame(&line), self.pending.as_mut()) {
                    (Some(f), Some(ev)) => {
                        self.seen.frame_lines += 1;
                        ev.frames.push(f);
                    }
                    _ => self.seen.odd_lines += 1,
                }
                continue;
            }
            match event {
                Some(ev) => {
                    self.seen.events += 1;
                    if let Some(prev) = self.pending.replace(ev) {
                        return Some(prev);
                    }
                }
                None => self.seen.odd_lines += 1,
            }
        }
    }
}

/// `pid/tid` (or a bare `tid`).
fn pid_tid(tok: &str) -> Option<(u32, u32)> {
    match tok.split_once('/') {
        Some((p, t)) => Some((p.parse().ok()?, t.parse().ok()?)),
        None => {
            let t = tok.parse().ok()?;
            Some((t, t))
        }
    }
}

/// `1234.567890:` as nanoseconds.
fn time_ns(tok: &str) -> Option<u64> {
    let t = tok.strip_suffix(':')?;
    let (s, frac) = t.split_once('.')?;
    if s.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let secs: u64 = s.parse().ok()?;
    let mut f: u64 = frac.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    for _ in frac.len()..9 {
        f *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(f)
}

/// An event line: `comm pid/tid [cpu] time: [period] event: [trace] [ip sym (dso)]`. The comm
/// may hold spaces, so the line is read from the `pid/tid time:` pair.
pub fn parse_event(line: &str) -> Option<Event> {
    let toks: Vec<(usize, &str)> = tokens(line);
    let i = (0..toks.len().saturating_sub(1)).find(|&i| {
        toks[i].1.bytes().all(|b| b.is_ascii_digit() || b == b'/')
            && pid_tid(toks[i].1).is_some()
            && {
                // An optional `[cpu]` column between pid/tid and the time.
                let j = if toks[i + 1].1.starts_with('[') {
                    i + 2
                } else {
                    i + 1
                };
                toks.get(j).is_some_and(|t| time_ns(t.1).is_some())
            }
    })?;
    let comm = line[..toks[i].0].trim().to_string();
    let (pid, tid) = pid_tid(toks[i].1)?;
    let mut j = i + 1;
    if toks[j].1.starts_with('[') {
        j += 1;
    }
    let time_ns = time_ns(toks[j].1)?;
    j += 1;
    let mut period = 1;
    if let Some(p) = toks.get(j).and_then(|t| t.1.parse::<u64>().ok()) {
        period = p.max(1);
        j += 1;
    }
    let (at, name) = *toks.get(j)?;
    let name = name.strip_suffix(':')?;
    if name.is_empty() {
        return None;
    }
    let rest = line[at + name.len() + 1..].trim();
    let (kind, frame) = if name == "sched:sched_switch" {
        let (trace, frame) = split_trailing_frame(rest);
        (switch(trace)?, frame)
    } else if name.contains(':') {
        let (_, frame) = split_trailing_frame(rest);
        (Kind::Other(name.to_string()), frame)
    } else {
        (
            Kind::Sample(name.to_string()),
            (!rest.is_empty()).then(|| parse_frame(rest)).flatten(),
        )
    };
    Some(Event {
        comm,
        pid,
        tid,
        time_ns,
        period,
        kind,
        frames: frame.into_iter().collect(),
    })
}

/// Byte offsets and text of the whitespace-separated tokens.
fn tokens(line: &str) -> Vec<(usize, &str)> {
    let mut v = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                v.push((s, &line[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        v.push((s, &line[s..]));
    }
    v
}

/// A tracepoint's text with the frame perf appends when there is no call chain
/// (`... next_prio=120 ffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])`) split off.
fn split_trailing_frame(rest: &str) -> (&str, Option<Frame>) {
    if rest.ends_with(')') {
        if let Some(open) = rest.rfind(" (") {
            // The frame starts at the last hex token before the symbol.
            let head = &rest[..open];
            let mut cut = None;
            for (at, tok) in tokens(head).into_iter().rev() {
                if u64::from_str_radix(tok, 16).is_ok() && !tok.contains('=') {
                    cut = Some(at);
                    break;
                }
            }
            if let Some(at) = cut {
                if let Some(f) = parse_frame(&rest[at..]) {
                    return (rest[..at].trim_end(), Some(f));
                }
            }
        }
    }
    (rest, None)
}

fn field<'a>(trace: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(p) = trace[from..].find(key) {
        let at = from + p;
        if at == 0 || trace.as_bytes()[at - 1] == b' ' {
            let v = &trace[at + key.len()..];
            return Some(v.split(' ').next().unwrap_or(""));
        }
        from = at + key.len();
    }
    None
}

/// `prev_comm=.. prev_pid=N prev_prio=.. prev_state=S ==> next_comm=.. next_pid=M ..`.
fn switch(trace: &str) -> Option<Kind> {
    let (prev, next) = trace.split_once("==>")?;
    Some(Kind::Switch {
        prev_pid: field(prev, "prev_pid=")?.parse().ok()?,
        prev_state: field(prev, "prev_state=")?.to_string(),
        next_pid: field(next, "next_pid=")?.parse().ok()?,
    })
}

/// `ffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])`.
pub fn parse_frame(line: &str) -> Option<Frame> {
    let line = line.trim();
    let (ip, rest) = line.split_once(|c: char| c.is_whitespace())?;
    let ip = u64::from_str_radix(ip, 16).ok()?;
    let rest = rest.trim();
    let open = rest.rfind('(')?;
    if !rest.ends_with(')') {
        return None;
    }
    let dso = rest[open + 1..rest.len() - 1].to_string();
    let sym = rest[..open].trim();
    let sym = match sym.rfind("+0x") {
        Some(p) if sym[p + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => &sym[..p],
        _ => sym,
    };
    let sym = (!sym.is_empty() && sym != "[unknown]").then(|| sym.to_string());
    Some(Frame { ip, sym, dso })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(text: &str) -> (Vec<Event>, Seen) {
        let mut ev = Events::new(text.as_bytes(), u64::MAX);
        let v: Vec<Event> = ev.by_ref().collect();
        (v, ev.seen)
    }

    #[test]
    fn a_switch_with_its_chain_a_bare_switch_and_a_sample() {
        let text = "mariadbd 19298/19456   775.724053:          1        sched:sched_switch: \
            prev_comm=mariadbd prev_pid=19456 prev_prio=120 prev_state=S ==> next_comm=opt cgu.1 \
            next_pid=19414 next_prio=120\n\
            \tffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\
            \t          101829 syscall+0x19 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\
            \t          e114d3 [unknown] (/usr/sbin/mariadbd)\n\
            opt cgu.1 20095/20095   775.723757:          1        sched:sched_switch: \
            prev_comm=opt cgu.1 prev_pid=20095 prev_prio=120 prev_state=R+ ==> next_comm=mariadbd \
            next_pid=19456 next_prio=120 ffffffff821facd8 __schedule+0x618 ([kernel.kallsyms])\n\
            mariadbd 19298/19421   775.739678:    2004008 cpu-clock/period=2004008/: \n\
            \t          de2972 [unknown] (/usr/sbin/mariadbd)\n\n";
        let (v, seen) = all(text);
        assert_eq!(v.len(), 3, "{v:?}");
        assert_eq!(seen.odd_lines, 0);
        assert_eq!(
            (v[0].pid, v[0].tid, v[0].time_ns),
            (19298, 19456, 775_724_053_000)
        );
        assert_eq!(
            v[0].kind,
            Kind::Switch {
                prev_pid: 19456,
                prev_state: "S".into(),
                next_pid: 19414
            }
        );
        assert_eq!(v[0].frames.len(), 3);
        assert_eq!(v[0].frames[1].sym.as_deref(), Some("syscall"));
        assert_eq!(v[0].frames[2].sym, None);
        assert_eq!(v[0].frames[2].ip, 0xe114d3);
        assert_eq!(v[1].comm, "opt cgu.1");
        assert_eq!(
            v[1].kind,
            Kind::Switch {
                prev_pid: 20095,
                prev_state: "R+".into(),
                next_pid: 19456
            }
        );
        assert_eq!(v[1].frames.len(), 1, "the frame on the event line");
        assert_eq!(v[2].kind, Kind::Sample("cpu-clock/period=2004008/".into()));
        assert_eq!(v[2].period, 2004008);
        assert_eq!(v[2].frames[0].dso, "/usr/sbin/mariadbd");
    }

    #[test]
    fn a_cpu_column_and_nanosecond_times() {
        let (v, _) = all("sleep 19528/19528 [000]   726.376378123:          1 sched:sched_switch: prev_comm=sleep prev_pid=19528 prev_prio=120 prev_state=S ==> next_comm=mariadbd next_pid=19412 next_prio=120\n");
        assert_eq!(v[0].time_ns, 726_376_378_123);
        assert!(matches!(
            v[0].kind,
            Kind::Switch {
                next_pid: 19412,
                ..
            }
        ));
    }

    #[test]
    fn garbage_is_counted_not_parsed() {
        let (v, seen) = all("hello\n\tnot a frame\nx 1/2 3.0: 1 cpu-clock:\n\tzz q (r)\n");
        assert_eq!(v.len(), 1);
        assert_eq!(seen.odd_lines, 3);
        assert!(v[0].frames.is_empty());
    }

    #[test]
    fn caps_stop_reading() {
        let mut ev = Events::new(&b"x 1/2 3.0: 1 cpu-clock:\n"[..], 5);
        assert_eq!(ev.by_ref().count(), 0);
        assert!(matches!(
            ev.error,
            Some(ReadError::TooLong { max_bytes: 5 })
        ));
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,400}") {
            let (_v, _s) = all(&s);
        }

        #[test]
        fn never_panics_on_near_misses(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just("mariadbd 1/2 3.000001: 1 sched:sched_switch: prev_comm=a prev_pid=2 prev_state=S ==> next_comm=b next_pid=3".to_string()),
                    Just("\t 10 [unknown] (/usr/sbin/mariadbd)".to_string()),
                    Just("m 1/2 3.5: 7 cpu-clock:".to_string()),
                    "[ -~\t]{0,80}",
                ],
                0..30,
            )
        ) {
            let text = lines.join("\n");
            let (v, seen) = all(&text);
            prop_assert!(v.len() as u64 <= seen.events);
        }
    }
}
