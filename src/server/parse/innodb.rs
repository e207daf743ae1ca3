//! `SHOW ENGINE INNODB STATUS`: sections, the SEMAPHORES counters of every format
//! (spin-facts.md §4) and the long-wait cells. Pure; sections may be missing, reordered,
//! truncated (the server cuts the text at 1 MB) or garbled: the parser never panics and says
//! what it did not find.

use serde::{Deserialize, Serialize};

/// spins / rounds / OS waits of one latch class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpinCounters {
    pub spins: u64,
    pub rounds: u64,
    pub os_waits: u64,
}

/// Which counter layout the SEMAPHORES section has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SemaphoreLayout {
    /// MySQL 5.6: a Mutex line plus RW-shared / RW-excl.
    Mutex56,
    /// MySQL 5.7 / 8.0: RW-shared / RW-excl / RW-sx, no Mutex line.
    Rw57,
    /// The section header with no counters at all (MariaDB 10.6+ by design).
    Blank,
    /// Text in the section but no counter line recognised.
    Unrecognised,
}

/// One `--Thread N has waited ...` cell and what follows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitCell {
    pub thread: String,
    pub waited_file: String,
    pub waited_line: u64,
    pub seconds: f64,
    /// e.g. "X-lock on RW-latch", "S-lock on RW-latch", "Mutex".
    pub latch: Option<String>,
    pub created_file: Option<String>,
    pub created_line: Option<u64>,
    /// The holder's mode, e.g. "SX", "exclusive", "wait exclusive".
    pub holder_mode: Option<String>,
    pub holder_thread: Option<String>,
}

/// The SEMAPHORES section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Semaphores {
    pub layout: SemaphoreLayout,
    pub reservation_counts: Vec<u64>,
    pub signal_counts: Vec<u64>,
    pub mutex: Option<SpinCounters>,
    pub rw_shared: Option<SpinCounters>,
    pub rw_excl: Option<SpinCounters>,
    pub rw_sx: Option<SpinCounters>,
    /// `Spin rounds per wait: X mutex, Y RW-shared, ...` as (class, value).
    pub rounds_per_wait: Vec<(String, f64)>,
    pub wait_cells: Vec<WaitCell>,
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
                .all(|(_, c)| c.spins == 0 && c.rounds == 0 && c.os_waits == 0)
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

/// Split into (title, body lines) at `---\nTITLE\n---` headers.
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

/// The number right after `key` in `line` (digits, optional thousands separators absent).
fn num_after(line: &str, key: &str) -> Option<u64> {
    let at = line.find(key)? + key.len();
    let rest = line.get(at..)?.trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
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

fn counters(line: &str) -> Option<SpinCounters> {
    let spins = num_after(line, "spins ").or_else(|| num_after(line, "spin waits "))?;
    Some(SpinCounters {
        spins,
        rounds: num_after(line, "rounds ")?,
        os_waits: num_after(line, "OS waits ")?,
    })
}

/// The word after `key` up to a delimiter.
fn word_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(key)? + key.len();
    let rest = line.get(at..)?.trim_start();
    let w = rest.split([' ', ',', ')', ':']).next()?;
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
        created_file: None,
        created_line: None,
        holder_mode: None,
        holder_thread: None,
    })
}

fn fill_cell(cell: &mut WaitCell, line: &str) {
    let t = line.trim();
    if cell.latch.is_none() {
        if let Some(p) = t.find(" at 0x").or_else(|| t.find(" at ")) {
            let kind = t[..p].trim();
            if !kind.is_empty() && kind.len() < 60 {
                cell.latch = Some(kind.to_string());
            }
        }
    }
    if cell.created_file.is_none() {
        let key = if t.contains("created in file ") {
            "created in file "
        } else {
            "created file "
        };
        if let Some(f) = word_after(t, key) {
            cell.created_file = Some(f.to_string());
            let after = t.find(key).map(|p| &t[p..]).unwrap_or("");
            cell.created_line = num_after(after, " line ");
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
    };
    let mut cell: Option<WaitCell> = None;
    let mut any_text = false;
    for line in body {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        any_text = true;
        if t.starts_with("--Thread ") {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
            cell = parse_cell_header(t);
            continue;
        }
        if t.starts_with("OS WAIT ARRAY INFO") {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
            if let Some(n) = num_after(t, "reservation count ") {
                s.reservation_counts.push(n);
            }
            if let Some(n) = num_after(t, "signal count ") {
                s.signal_counts.push(n);
            }
            continue;
        }
        let counter_line = if t.starts_with("Mutex spin waits") {
            s.mutex = counters(t);
            true
        } else if t.starts_with("RW-shared spins") {
            s.rw_shared = counters(t);
            true
        } else if t.starts_with("RW-excl spins") {
            s.rw_excl = counters(t);
            true
        } else if t.starts_with("RW-sx spins") {
            s.rw_sx = counters(t);
            true
        } else if let Some(rest) = t.strip_prefix("Spin rounds per wait:") {
            for part in rest.split(',') {
                let mut it = part.split_whitespace();
                if let (Some(v), Some(name)) = (it.next(), it.next()) {
                    if let Ok(v) = v.parse::<f64>() {
                        if v.is_finite() {
                            s.rounds_per_wait.push((name.to_string(), v));
                        }
                    }
                }
            }
            true
        } else {
            false
        };
        if counter_line {
            if let Some(c) = cell.take() {
                s.wait_cells.push(c);
            }
        } else if let Some(c) = cell.as_mut() {
            fill_cell(c, t);
        }
    }
    if let Some(c) = cell.take() {
        s.wait_cells.push(c);
    }
    s.layout = if s.mutex.is_some() {
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
        let st = parse(fixture!("mysql56.txt"));
        let s = st.semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Mutex56);
        assert_eq!(
            s.mutex,
            Some(SpinCounters {
                spins: 9123456,
                rounds: 51234567,
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
        let s = parse(fixture!("mysql57.txt")).semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Rw57);
        assert!(s.mutex.is_none());
        assert_eq!(s.rw_sx.unwrap().spins, 117046);
        assert_eq!(s.rounds_per_wait.len(), 3);
        assert!(!s.all_counters_zero());
    }

    #[test]
    fn mysql8032_and_84_print_hard_zeros() {
        for text in [fixture!("mysql8032_zeros.txt"), fixture!("mysql84.txt")] {
            let st = parse(text);
            let s = st.semaphores.unwrap();
            assert_eq!(s.layout, SemaphoreLayout::Rw57);
            assert!(s.all_counters_zero());
        }
        let st = parse(fixture!("mysql84.txt"));
        assert!(st
            .sections
            .contains(&"LATEST DETECTED DEADLOCK".to_string()));
        assert_eq!(st.read_views_open, Some(2));
    }

    #[test]
    fn mariadb1011_blank_by_design() {
        let st = parse(fixture!("mariadb1011_blank.txt"));
        let s = st.semaphores.unwrap();
        assert_eq!(s.layout, SemaphoreLayout::Blank);
        assert!(s.counters().is_empty() && s.wait_cells.is_empty());
        assert_eq!(st.sections[1], "SEMAPHORES");
        assert_eq!(st.sections[2], "TRANSACTIONS");
        assert_eq!(st.read_views_open, Some(0));
    }

    #[test]
    fn deadlock_right_after_empty_semaphores() {
        let st = parse(fixture!("mariadb1011_deadlock_after_blank.txt"));
        assert_eq!(st.semaphores.unwrap().layout, SemaphoreLayout::Blank);
        assert_eq!(
            &st.sections[1..4],
            &["SEMAPHORES", "LATEST DETECTED DEADLOCK", "TRANSACTIONS"]
        );
        assert_eq!(st.read_views_open, Some(4));
    }

    #[test]
    fn wait_cells_and_truncation() {
        let st = parse(fixture!("mysql57_wait_cells.txt"));
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

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(s in "\\PC{0,400}") {
            let _ = parse(&s);
        }

        #[test]
        fn never_panics_on_mangled_fixtures(cut in 0usize..3000, junk in "[-A-Za-z0-9 ,.:\n]{0,80}") {
            for f in [fixture!("mysql56.txt"), fixture!("mysql57_wait_cells.txt"), fixture!("mysql84.txt")] {
                let mut t: String = f.chars().take(cut).collect();
                t.push_str(&junk);
                let _ = parse(&t);
            }
        }
    }
}
