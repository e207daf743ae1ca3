//! `SHOW ENGINE INNODB STATUS`: sections, the SEMAPHORES counters of every layout from MySQL
//! 5.0 to 9.x, Percona Server / XtraDB and MariaDB (docs/REFERENCE.md §4), and the wait cells.
//! Pure; sections may be missing, reordered, truncated (the server cuts the text at 1 MB) or
//! garbled: the parser never panics, never turns a line it does not understand into a number,
//! and keeps every such line so the caller can say what was not recognised.

use serde::{Deserialize, Serialize};

/// spins / rounds / OS waits of one latch class. `rounds` is `None` where the server does not
/// print it (the MySQL 5.0-5.5 `RW-shared spins N, OS waits N; RW-excl ...` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpinCounters {
    pub spins: u64,
    pub rounds: Option<u64>,
    pub os_waits: u64,
}

/// Which counter layout the SEMAPHORES section has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SemaphoreLayout {
    /// MySQL 5.0-5.5 (built-in InnoDB, early plugin, XtraDB): a Mutex line with rounds and one
    /// `RW-shared spins N, OS waits N; RW-excl spins N, OS waits N` line without rounds.
    Mutex50,
    /// MySQL 5.5 plugin / 5.6 / 5.7.0-5.7.7, XtraDB, MariaDB 10.0-10.1: a Mutex line plus
    /// RW-shared / RW-excl lines with rounds (5.7.0-5.7.7 add RW-sx).
    Mutex56,
    /// MySQL 5.7.8+ / 8.x / 9.x, MariaDB 10.2-10.5: RW-shared / RW-excl / RW-sx, no Mutex line.
    Rw57,
    /// The section header with no counters at all (MariaDB 10.6+ by design).
    Blank,
    /// Text in the section but no counter line recognised.
    Unrecognised,
}

impl SemaphoreLayout {
    /// Which servers print this layout, for messages.
    pub fn servers(self) -> &'static str {
        match self {
            SemaphoreLayout::Mutex50 => "MySQL 5.0-5.5 style (Mutex line, RW line without rounds)",
            SemaphoreLayout::Mutex56 => "MySQL 5.5-5.7.7 style (Mutex line, RW lines with rounds)",
            SemaphoreLayout::Rw57 => "MySQL 5.7.8+ / 8.x / 9.x style (RW-shared, RW-excl, RW-sx)",
            SemaphoreLayout::Blank => "header only",
            SemaphoreLayout::Unrecognised => "unrecognised",
        }
    }
}

/// One `--Thread N has waited ...` cell and what follows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitCell {
    pub thread: String,
    pub waited_file: String,
    pub waited_line: u64,
    pub seconds: f64,
    /// e.g. "X-lock on RW-latch", "S-lock on RW-latch", "SX-lock on RW-latch", "Mutex".
    pub latch: Option<String>,
    /// The latch's name where the server prints it (`Mutex at 0x... '&kernel_mutex'`).
    pub latch_name: Option<String>,
    pub created_file: Option<String>,
    pub created_line: Option<u64>,
    /// The holder's mode, e.g. "SX", "exclusive", "wait exclusive".
    pub holder_mode: Option<String>,
    pub holder_thread: Option<String>,
    pub last_write_file: Option<String>,
    pub last_write_line: Option<u64>,
}

/// The SEMAPHORES section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Semaphores {
    pub layout: SemaphoreLayout,
    /// One per sync array (`innodb_sync_array_size`), in order.
    pub reservation_counts: Vec<u64>,
    pub signal_counts: Vec<u64>,
    pub mutex: Option<SpinCounters>,
    pub rw_shared: Option<SpinCounters>,
    pub rw_excl: Option<SpinCounters>,
    pub rw_sx: Option<SpinCounters>,
    /// `Spin rounds per wait: X mutex, Y RW-shared, ...` as (class, value).
    pub rounds_per_wait: Vec<(String, f64)>,
    pub wait_cells: Vec<WaitCell>,
    /// Lines of the section that no rule recognised (trimmed, at most 20 kept).
    pub unrecognised: Vec<String>,
    /// How many lines were not recognised in all (may exceed `unrecognised.len()`).
    pub unrecognised_count: usize,
    /// Lines of a debug build's `RW-LATCH INFO` list (recognised and skipped).
    pub debug_latch_lines: usize,
}

impl Semaphores {
    /// All spin/round/OS-wait counters present, in a fixed order.
    pub fn counters(&self) -> Vec<(&'static str, SpinCounters)> {
        [
            ("mutex", self.mutex),
            ("RW-shared", self.rw_shared),
            ("RW-excl", self.rw_excl),
            ("RW-sx", self.rw_sx),
        ]
        .into_iter()
        .filter_map(|(n, c)| c.map(|c| (n, c)))
        .collect()
    }
    /// True when counters exist and every one of them is zero.
    pub fn all_counters_zero(&self) -> bool {
        let c = self.counters();
        !c.is_empty()
            && c.iter()
                .all(|(_, c)| c.spins == 0 && c.rounds.unwrap_or(0) == 0 && c.os_waits == 0)
    }
    /// One line saying what was recognised and what was not.
    pub fn describe(&self) -> String {
        let mut got: Vec<String> = Vec::new();
        if !self.reservation_counts.is_empty() || !self.signal_counts.is_empty() {
            got.push(format!(
                "OS WAIT ARRAY ({} reservation, {} signal)",
                self.reservation_counts.len(),
                self.signal_counts.len()
            ));
        }
        got.extend(self.counters().iter().map(|(n, _)| n.to_string()));
        if !self.rounds_per_wait.is_empty() {
            got.push("spin rounds per wait".into());
        }
        if !self.wait_cells.is_empty() {
            got.push(format!("{} wait cell(s)", self.wait_cells.len()));
        }
        let got = if got.is_empty() {
            "nothing".to_string()
        } else {
            got.join(", ")
        };
        match self.unrecognised.first() {
            None => format!("SEMAPHORES ({}): recognised {got}", self.layout.servers()),
            Some(first) => format!(
                "SEMAPHORES ({}): recognised {got}; {} line(s) not recognised, the first: {:?}",
                self.layout.servers(),
                self.unrecognised_count,
                first
            ),
        }
    }
}

/// A parsed INNODB STATUS text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InnodbStatus {
    /// Section titles in the order they appear.
    pub sections: Vec<String>,
    pub semaphores: Option<Semaphores>,
    /// `END OF INNODB MONITOR OUTPUT` missing: the text was cut (1 MB limit) or garbled.
    pub truncated: bool,
    pub read_views_open: Option<u64>,
}

fn is_rule(l: &str) -> bool {
    let t = l.trim();
    t.len() >= 3 && t.bytes().all(|b| b == b'-' || b == b'=')
}

fn is_title(l: &str) -> bool {
    let t = l.trim();
    !t.is_empty()
        && t.len() <= 60
        && t.bytes().any(|b| b.is_ascii_uppercase())
        && t.bytes().all(|b| {
            b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ' || b == b'/' || b == b'_'
        })
}

/// Split into (title, body lines) at `---\nTITLE\n---` headers. A debug build's
/// `RW-LATCH INFO` sub-header (it has a dash) stays inside SEMAPHORES.
pub fn sections(text: &str) -> Vec<(String, Vec<&str>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<(String, Vec<&str>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if i + 2 < lines.len()
            && is_rule(lines[i])
            && is_title(lines[i + 1])
            && is_rule(lines[i + 2])
        {
            out.push((lines[i + 1].trim().to_string(), Vec::new()));
            i += 3;
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.1.push(lines[i]);
        }
        i += 1;
    }
    out
}

/// The whole number right after `key` in `line`. It must end at a delimiter (end, space,
/// comma, semicolon): `12abc` is not a number.
fn num_after(line: &str, key: &str) -> Option<u64> {
    let at = line.find(key)? + key.len();
    let rest = line.get(at..)?.trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let next = rest[end..].chars().next();
    if !matches!(next, None | Some(' ' | ',' | ';' | ')' | ':' | '\t')) {
        return None;
    }
    rest[..end].parse().ok()
}

fn float_after(line: &str, key: &str) -> Option<f64> {
    let at = line.find(key)? + key.len();
    let rest = line.get(at..)?.trim_start();
    let s: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `X spins N, rounds N, OS waits N` (rounds optional in the 5.0-5.5 RW line). Any field that
/// is present but not a number makes the whole line unreadable: no partial guesses.
fn counters(part: &str) -> Option<SpinCounters> {
    let spins = if part.contains("spin waits ") {
        num_after(part, "spin waits ")?
    } else {
        num_after(part, "spins ")?
    };
    let rounds = if part.contains("rounds") {
        Some(num_after(part, "rounds ")?)
    } else {
        None
    };
    Some(SpinCounters {
        spins,
        rounds,
        os_waits: num_after(part, "OS waits ")?,
    })
}

/// The word after `key` up to a delimiter.
fn word_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    let rest = line.get(at..)?.trim_start();
    let w = rest.split([' ', ',', ')', '\'']).next()?;
    (!w.is_empty()).then_some(w)
}

fn parse_cell_header(line: &str) -> Option<WaitCell> {
    // --Thread 140 has waited at btr0cur.cc line 5889 for 241.00 seconds the semaphore:
    let rest = line.trim().strip_prefix("--Thread ")?;
    let thread = rest.split_whitespace().next()?.to_string();
    let waited_file = word_after(rest, "has waited at ")?.to_string();
    let waited_line = num_after(rest, " line ")?;
    let seconds = float_after(rest, " for ")?;
    Some(WaitCell {
        thread,
        waited_file,
        waited_line,
        seconds,
        latch: None,
        latch_name: None,
        created_file: None,
        created_line: None,
        holder_mode: None,
        holder_thread: None,
        last_write_file: None,
        last_write_line: None,
    })
}

/// `F line L` after `key`, or `F:L` (8.0 mutex cells: `created trx0sys.cc:589`).
fn file_line_after(t: &str, key: &str) -> Option<(String, Option<u64>)> {
    let at = t.find(key)?;
    let tail = &t[at..];
    let f = word_after(tail, key)?;
    if let Some((file, line)) = f.rsplit_once(':') {
        if let Ok(n) = line.parse::<u64>() {
            return Some((file.to_string(), Some(n)));
        }
    }
    Some((f.to_string(), num_after(tail, " line ")))
}

fn fill_cell(cell: &mut WaitCell, t: &str) {
    if cell.latch.is_none() {
        if let Some(p) = t.find(" at 0x") {
            let kind = t[..p].trim();
            if !kind.is_empty() && kind.len() < 60 {
                cell.latch = Some(kind.to_string());
            }
            // Older servers name the latch: `Mutex at 0xf89ab0 '&kernel_mutex', lock var 1`.
            let after = &t[p..];
            if let Some(q) = after.find('\'') {
                if let Some(len) = after[q + 1..].find('\'') {
                    cell.latch_name = Some(after[q + 1..q + 1 + len].to_string());
                }
            }
        }
    }
    if cell.created_file.is_none() {
        for key in ["created in file ", "created file ", "created "] {
            if t.contains(key) {
                if let Some((f, l)) = file_line_after(t, key) {
                    cell.created_file = Some(f);
                    cell.created_line = l;
                }
                break;
            }
        }
    }
    if t.starts_with("a writer") || t.contains("has reserved it in mode") {
        cell.holder_thread = num_after(t, "thread id ").map(|n| n.to_string());
        if let Some(p) = t.find("in mode") {
            let m = t[p + "in mode".len()..].trim();
            if !m.is_empty() {
                cell.holder_mode = Some(m.to_string());
            }
        }
    }
    if t.starts_with("Last time write locked in file ") {
        if let Some((f, l)) = file_line_after(t, "in file ") {
            cell.last_write_file = Some(f);
            cell.last_write_line = l;
        }
    }
}

/// `0.48 mutex, 4.07 RW-shared` -> pairs; None when any part is not `<number> <class>`.
fn rounds_per_wait_parts(s: &str) -> Option<Vec<(String, f64)>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let mut it = part.split_whitespace();
        let (v, name) = (it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        let v = v.parse::<f64>().ok().filter(|v| v.is_finite())?;
        if !(name == "mutex" || name.starts_with("RW-")) {
            return None;
        }
        out.push((name.to_string(), v));
    }
    (!out.is_empty()).then_some(out)
}

fn is_debug_latch_line(t: &str) -> bool {
    t == "RW-LATCH INFO"
        || is_rule(t)
        || t.starts_with("RW-LOCK: ")
        || t.starts_with("Locked: thread ")
        || t.starts_with("Total number of rw-locks")
}

const KEEP_UNRECOGNISED: usize = 20;

fn unknown(s: &mut Semaphores, t: &str) {
    s.unrecognised_count += 1;
    if s.unrecognised.len() < KEEP_UNRECOGNISED {
        s.unrecognised.push(t.chars().take(200).collect());
    }
}

fn parse_semaphores(body: &[&str]) -> Semaphores {
    let mut s = Semaphores {
        layout: SemaphoreLayout::Blank,
        reservation_counts: Vec::new(),
        signal_counts: Vec::new(),
        mutex: None,
        rw_shared: None,
        rw_excl: None,
        rw_sx: None,
        rounds_per_wait: Vec::new(),
        wait_cells: Vec::new(),
        unrecognised: Vec::new(),
        unrecognised_count: 0,
        debug_latch_lines: 0,
    };
    let mut cell: Option<WaitCell> = None;
    let mut after_rounds_per_wait = false;
    let mut rw_without_rounds = false;
    let mut any_text = false;
    for line in body {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        any_text = true;
        let continues_rpw = after_rounds_per_wait;
        after_rounds_per_wait = false;
        if t.starts_with("--Thread ") {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
            cell = parse_cell_header(t);
            if cell.is_none() {
                unknown(&mut s, t);
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("OS WAIT ARRAY INFO") {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
            let r = num_after(rest, "reservation count ");
            let g = num_after(rest, "signal count ");
            s.reservation_counts.extend(r);
            s.signal_counts.extend(g);
            if r.is_none() && g.is_none() {
                unknown(&mut s, t);
            }
            continue;
        }
        let counter_line = if t.starts_with("Mutex spin waits") {
            s.mutex = counters(t);
            if s.mutex.is_none() {
                unknown(&mut s, t);
            }
            true
        } else if t.starts_with("RW-shared spins")
            || t.starts_with("RW-excl spins")
            || t.starts_with("RW-sx spins")
        {
            // 5.0-5.5 put shared and exclusive on one line separated by ';'.
            for part in t.split(';') {
                let part = part.trim();
                let c = counters(part);
                let slot = if part.starts_with("RW-shared") {
                    &mut s.rw_shared
                } else if part.starts_with("RW-excl") {
                    &mut s.rw_excl
                } else if part.starts_with("RW-sx") {
                    &mut s.rw_sx
                } else {
                    unknown(&mut s, part);
                    continue;
                };
                match c {
                    Some(c) => {
                        rw_without_rounds |= c.rounds.is_none();
                        *slot = Some(c);
                    }
                    None => unknown(&mut s, part),
                }
            }
            true
        } else if let Some(rest) = t.strip_prefix("Spin rounds per wait:") {
            match rounds_per_wait_parts(rest) {
                Some(p) => s.rounds_per_wait.extend(p),
                None => unknown(&mut s, t),
            }
            after_rounds_per_wait = true;
            true
        } else if continues_rpw && cell.is_none() {
            // A long `Spin rounds per wait` line wrapped by the client: `0.00 RW-sx`.
            match rounds_per_wait_parts(t) {
                Some(p) => {
                    s.rounds_per_wait.extend(p);
                    after_rounds_per_wait = true;
                    true
                }
                None => false,
            }
        } else {
            false
        };
        if counter_line {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
        } else if let Some(c) = cell.as_mut() {
            fill_cell(c, t);
        } else if is_debug_latch_line(t) {
            s.debug_latch_lines += 1;
        } else {
            unknown(&mut s, t);
        }
    }
    if let Some(c) = cell.take() {
        s.wait_cells.push(c);
    }
    s.layout = if s.mutex.is_some() && rw_without_rounds {
        SemaphoreLayout::Mutex50
    } else if s.mutex.is_some() {
        SemaphoreLayout::Mutex56
    } else if s.rw_shared.is_some() || s.rw_excl.is_some() || s.rw_sx.is_some() {
        SemaphoreLayout::Rw57
    } else if !any_text {
        SemaphoreLayout::Blank
    } else {
        SemaphoreLayout::Unrecognised
    };
    s
}

/// Parse a full `SHOW ENGINE INNODB STATUS` text.
pub fn parse(text: &str) -> InnodbStatus {
    let secs = sections(text);
    let semaphores = secs
        .iter()
        .find(|(t, _)| t == "SEMAPHORES")
        .map(|(_, b)| parse_semaphores(b));
    let read_views_open = secs
        .iter()
        .filter(|(t, _)| t == "ROW OPERATIONS" || t == "TRANSACTIONS")
        .flat_map(|(_, b)| b.iter())
        .find_map(|l| {
            let t = l.trim();
            t.contains("read views open inside InnoDB")
                .then(|| t.split_whitespace().next()?.parse().ok())
                .flatten()
        });
    InnodbStatus {
        sections: secs
            .iter()
            .map(|(t, _)| t.clone())
            .filter(|t| t != "END OF INNODB MONITOR OUTPUT")
            .collect(),
        semaphores,
        truncated: !text.contains("END OF INNODB MONITOR OUTPUT"),
        read_views_open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! fixture {
        ($name:literal) => {
            include_str!(concat!("../../../tests/fixtures/innodb_status/", $name))
        };
    }

    #[test]
    fn mysql56_has_mutex_line_and_live_counters() {
        let st = parse(fixture!("synthetic_mysql56.txt"));
        let s = st.semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Mutex56);
        assert_eq!(
            s.mutex,
            Some(SpinCounters {
                spins: 9123456,
                rounds: Some(51234567),
                os_waits: 84321
            })
        );
        assert_eq!(s.rw_excl.unwrap().os_waits, 34567);
        assert!(s.rw_sx.is_none());
        assert_eq!(s.rounds_per_wait[0], ("mutex".to_string(), 5.62));
        assert_eq!(s.reservation_counts, vec![128734]);
        assert_eq!(s.signal_counts, vec![119811]);
        assert!(!st.truncated);
        assert_eq!(st.read_views_open, Some(1));
        assert_eq!(st.sections[0], "BACKGROUND THREAD");
    }

    #[test]
    fn mysql57_rw_sx_and_no_mutex() {
        let s = parse(fixture!("synthetic_mysql57.txt")).semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Rw57);
        assert!(s.mutex.is_none());
        assert_eq!(s.rw_sx.unwrap().spins, 117046);
        assert_eq!(s.rounds_per_wait.len(), 3);
        assert!(!s.all_counters_zero());
    }

    #[test]
    fn mysql8032_and_84_print_hard_zeros() {
        for text in [
            fixture!("synthetic_mysql8032_zeros.txt"),
            fixture!("synthetic_mysql84.txt"),
        ] {
            let st = parse(text);
            let s = st.semaphores.unwrap();
            assert_eq!(s.layout, SemaphoreLayout::Rw57);
            assert!(s.all_counters_zero());
        }
        let st = parse(fixture!("synthetic_mysql84.txt"));
        assert!(st
            .sections
            .contains(&"LATEST DETECTED DEADLOCK".to_string()));
        assert_eq!(st.read_views_open, Some(2));
    }

    #[test]
    fn mariadb1011_blank_by_design() {
        let st = parse(fixture!("synthetic_mariadb1011_blank.txt"));
        let s = st.semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Blank);
        assert!(s.counters().is_empty() && s.wait_cells.is_empty());
        assert_eq!(st.sections[1], "SEMAPHORES");
        assert_eq!(st.sections[2], "TRANSACTIONS");
        assert_eq!(st.read_views_open, Some(0));
    }

    #[test]
    fn deadlock_right_after_empty_semaphores() {
        let st = parse(fixture!("synthetic_mariadb1011_deadlock_after_blank.txt"));
        assert_eq!(st.semaphores.unwrap().layout, SemaphoreLayout::Blank);
        assert_eq!(
            &st.sections[1..4],
            &["SEMAPHORES", "LATEST DETECTED DEADLOCK", "TRANSACTIONS"]
        );
        assert_eq!(st.read_views_open, Some(4));
    }

    #[test]
    fn wait_cells_and_truncation() {
        let st = parse(fixture!("synthetic_mysql57_wait_cells.txt"));
        assert!(st.truncated, "no END line: cut text");
        let s = st.semaphores.unwrap();
        assert_eq!(s.wait_cells.len(), 2);
        let c = &s.wait_cells[0];
        assert_eq!(c.thread, "140305473447680");
        assert_eq!(
            (c.waited_file.as_str(), c.waited_line),
            ("btr0cur.cc", 5889)
        );
        assert_eq!(c.seconds, 241.0);
        assert_eq!(c.latch.as_deref(), Some("X-lock on RW-latch"));
        assert_eq!(c.created_file.as_deref(), Some("buf0buf.cc"));
        assert_eq!(c.created_line, Some(1425));
        assert_eq!(c.holder_mode.as_deref(), Some("SX"));
        assert_eq!(c.holder_thread.as_deref(), Some("140305462929152"));
        assert_eq!(s.wait_cells[1].holder_mode.as_deref(), Some("exclusive"));
        assert_eq!(s.wait_cells[1].seconds, 12.5);
        assert_eq!(s.rw_sx.unwrap().os_waits, 190233);
        assert_eq!(s.signal_counts, vec![2580011]);
    }

    #[test]
    fn garbage_and_empty() {
        let st = parse("");
        assert!(st.semaphores.is_none() && st.truncated);
        let st = parse("----------\nSEMAPHORES\n----------\nRW-shared spins x, rounds\n--Thread");
        assert_eq!(st.semaphores.unwrap().layout, SemaphoreLayout::Unrecognised);
    }

    #[test]
    fn wrapped_rounds_per_wait_and_80_mutex_cell() {
        // Synthetic: the wrap is how a public 5.7 capture shows a long line cut by a client;
        // the mutex cell is the 8.0 `created F:L` form.
        let t = "----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count 119\n\
                 --Thread 139 has waited at trx0trx.cc line 1541 for 3 seconds the semaphore:\n\
                 Mutex at 0x7f00, Mutex TRX_SYS created trx0sys.cc:589, lock var 1\n\
                 OS WAIT ARRAY INFO: signal count 103\n\
                 Mutex spin waits 0, rounds 0, OS waits 0\n\
                 RW-shared spins 38, rounds 76, OS waits 38\n\
                 RW-excl spins 2, rounds 9383715, OS waits 3\nRW-sx spins 0, rounds 0, OS waits 0\n\
                 Spin rounds per wait: 0.00 mutex, 2.00 RW-shared, 4691857.50 RW-excl,\n0.00 RW-sx\n";
        let s = parse(t).semaphores.unwrap();
        assert_eq!(s.unrecognised, Vec::<String>::new());
        assert_eq!(s.rounds_per_wait.len(), 4);
        assert_eq!(s.rounds_per_wait[3], ("RW-sx".to_string(), 0.0));
        let c = &s.wait_cells[0];
        assert_eq!(c.latch.as_deref(), Some("Mutex"));
        assert_eq!(
            (c.created_file.as_deref(), c.created_line),
            (Some("trx0sys.cc"), Some(589))
        );
        assert_eq!(s.layout, SemaphoreLayout::Mutex56);
    }

    #[test]
    fn several_sync_arrays() {
        // Synthetic: innodb_sync_array_size=2 prints one reservation line per array, each
        // followed by its cells, then one signal line.
        let t = "----------\nSEMAPHORES\n----------\nOS WAIT ARRAY INFO: reservation count 10\n\
                 --Thread 1 has waited at row0sel.cc line 3 for 1.00 seconds the semaphore:\n\
                 S-lock on RW-latch at 0x1 created in file dict0dict.cc line 2\n\
                 OS WAIT ARRAY INFO: reservation count 20\n\
                 --Thread 2 has waited at btr0cur.cc line 5 for 2.00 seconds the semaphore:\n\
                 X-lock on RW-latch at 0x2 created in file buf0buf.cc line 7\n\
                 OS WAIT ARRAY INFO: signal count 25\n\
                 RW-shared spins 1, rounds 2, OS waits 3\nRW-excl spins 4, rounds 5, OS waits 6\n\
                 RW-sx spins 7, rounds 8, OS waits 9\n";
        let s = parse(t).semaphores.unwrap();
        assert_eq!(s.reservation_counts, vec![10, 20]);
        assert_eq!(s.signal_counts, vec![25]);
        assert_eq!(s.wait_cells.len(), 2);
        assert_eq!(s.wait_cells[1].created_file.as_deref(), Some("buf0buf.cc"));
        assert_eq!(s.rw_sx.unwrap().rounds, Some(8));
        assert_eq!(s.unrecognised_count, 0);
    }

    #[test]
    fn numbers_must_end_at_a_delimiter() {
        let s = parse(
            "----------\nSEMAPHORES\n----------\nRW-shared spins 12abc, rounds 3, OS waits 1\n",
        )
        .semaphores
        .unwrap();
        assert_eq!(s.rw_shared, None);
        assert_eq!(s.unrecognised_count, 1);
        assert_eq!(s.layout, SemaphoreLayout::Unrecognised);
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(s in "\\PC{0,400}") {
            let _ = parse(&s);
        }

        #[test]
        fn never_panics_on_mangled_fixtures(cut in 0usize..3000, junk in "[-A-Za-z0-9 ,.:\n]{0,80}") {
            for f in [fixture!("synthetic_mysql56.txt"), fixture!("synthetic_mysql57_wait_cells.txt"), fixture!("synthetic_mysql84.txt")] {
                let mut t: String = f.chars().take(cut).collect();
                t.push_str(&junk);
                let _ = parse(&t);
            }
        }
    }
}
