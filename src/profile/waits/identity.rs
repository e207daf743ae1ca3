//! Which server a wait recording is of, and whether a saved wait document may advise the server
//! doctor or tune is looking at. A live recording knows its process (`/proc`: the host's name,
//! the process's start, the TCP ports and Unix sockets it listens on, its data directory);
//! doctor and tune know the server from its own variables. The same facts the journal keys a
//! server by (hostname, port, socket, datadir), and its start time for a restart, compared
//! where both sides have them. Reading `/proc` is [`of_process`]; the comparison ([`check`]) is
//! pure.

use serde::{Deserialize, Serialize};

/// The recorded server process, as the wait document carries it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct WaitServer {
    /// This host's name (`/proc/sys/kernel/hostname`): the server's `@@hostname` when it runs
    /// here.
    pub hostname: String,
    pub pid: u32,
    /// When the process started, Unix seconds on this host's clock (None: unreadable).
    pub started_unix_s: Option<i64>,
    /// When the recording ended, Unix seconds on this host's clock.
    pub recorded_at_unix_s: i64,
    /// TCP ports it listens on (empty: none, or its descriptors were not readable).
    pub ports: Vec<u16>,
    /// Unix socket paths it listens on.
    pub sockets: Vec<String>,
    /// Its data directory (`--datadir`, else its working directory).
    pub datadir: Option<String>,
}

/// What the reader knows of the server it is about to advise (from `SHOW GLOBAL VARIABLES` or
/// the journal's identity statement).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Against {
    /// How to name it in a message, e.g. "the snapshot's server", "the server".
    pub what: String,
    pub hostname: Option<String>,
    pub port: Option<u64>,
    pub socket: Option<String>,
    pub datadir: Option<String>,
    /// When it started (Unix seconds), if known.
    pub started_unix_s: Option<i64>,
}

/// How far apart two readings of one start time may be: the server counts its uptime from a
/// moment after the process started (its option parsing), and a snapshot's estimate
/// (captured time minus `Uptime`) is only as good as the window it was read over.
pub const START_TOLERANCE_S: i64 = 120;

fn dir(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        "/"
    } else {
        t
    }
}

/// Whether the document `w` (of `file`) may advise the server `a`: `Ok(None)` when every fact
/// both sides know agrees, `Ok(Some(note))` when the document does not say which server it is
/// of (made from a saved perf script), `Err(line)` naming the first fact that differs.
pub fn check(w: Option<&WaitServer>, a: &Against) -> Result<Option<String>, String> {
    let Some(w) = w else {
        return Ok(Some(
            "the wait document does not say which server it was recorded from (made from a \
             saved perf script, not a live recording): its advice is taken as this server's"
                .into(),
        ));
    };
    let of = format!("recorded from pid {} on {}", w.pid, w.hostname);
    if let Some(h) = a.hostname.as_deref().filter(|h| !h.is_empty()) {
        if !h.eq_ignore_ascii_case(&w.hostname) {
            return Err(format!("{of}, but {} runs on host {h}", a.what));
        }
    }
    if let Some(p) = a.port.filter(|&p| p != 0) {
        if !w.ports.is_empty() && !w.ports.iter().any(|&x| u64::from(x) == p) {
            return Err(format!(
                "{of}, which listened on port {}, but {} is on port {p}",
                list(&w.ports),
                a.what
            ));
        }
    }
    if let Some(s) = a.socket.as_deref().filter(|s| s.starts_with('/')) {
        if !w.sockets.is_empty() && !w.sockets.iter().any(|x| x == s) {
            return Err(format!(
                "{of}, which listened on {}, but {}'s socket is {s}",
                w.sockets.join(", "),
                a.what
            ));
        }
    }
    if let (Some(d), Some(wd)) = (a.datadir.as_deref(), w.datadir.as_deref()) {
        if !d.is_empty() && dir(d) != dir(wd) {
            return Err(format!(
                "{of}, whose data directory is {wd}, but {}'s is {d}",
                a.what
            ));
        }
    }
    if let (Some(s), Some(ws)) = (a.started_unix_s, w.started_unix_s) {
        if s > 0 && ws > 0 && (s - ws).abs() > START_TOLERANCE_S {
            return Err(format!(
                "{of}, a process started {} s {} {} started: the server restarted since (or \
                 is another process), and its settings may have changed",
                (s - ws).abs(),
                if ws < s { "before" } else { "after" },
                a.what
            ));
        }
    }
    Ok(None)
}

fn list(ports: &[u16]) -> String {
    ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The process's start in Unix seconds: boot time (`btime` of `/proc/stat`) plus its start in
/// clock ticks since boot (`/proc/PID/stat` field 22).
fn started_unix_s(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks: u64 = stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let btime: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf reads a constant of the C library; no memory is passed.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| btime + (ticks / hz as u64) as i64)
}

/// This host's clock, Unix seconds.
pub fn now_unix_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The facts `/proc` gives about `pid` now (the parts it hides left empty).
pub fn of_process(pid: u32) -> WaitServer {
    let i = crate::profile::instances::describe(pid);
    WaitServer {
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        pid,
        started_unix_s: started_unix_s(pid),
        recorded_at_unix_s: now_unix_s(),
        ports: i.ports,
        sockets: i.sockets,
        datadir: i.datadir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded() -> WaitServer {
        WaitServer {
            hostname: "db1".into(),
            pid: 4242,
            started_unix_s: Some(1_000_000),
            recorded_at_unix_s: 1_003_600,
            ports: vec![3306],
            sockets: vec!["/run/mysqld/mysqld.sock".into()],
            datadir: Some("/var/lib/mysql".into()),
        }
    }

    fn server() -> Against {
        Against {
            what: "the server".into(),
            hostname: Some("db1".into()),
            port: Some(3306),
            socket: Some("/run/mysqld/mysqld.sock".into()),
            datadir: Some("/var/lib/mysql/".into()),
            started_unix_s: Some(1_000_001),
        }
    }

    #[test]
    fn the_same_server_passes_and_a_bare_document_is_noted() {
        assert_eq!(check(Some(&recorded()), &server()), Ok(None));
        // What the reader does not know is not held against the document.
        let unknown = Against {
            what: "the server".into(),
            ..Against::default()
        };
        assert_eq!(check(Some(&recorded()), &unknown), Ok(None));
        let note = check(None, &server()).unwrap().unwrap();
        assert!(note.contains("perf script"), "{note}");
    }

    #[test]
    fn each_differing_fact_is_named() {
        let cases: Vec<(Against, &str)> = vec![
            (
                Against {
                    hostname: Some("db2".into()),
                    ..server()
                },
                "runs on host db2",
            ),
            (
                Against {
                    port: Some(3307),
                    ..server()
                },
                "on port 3307",
            ),
            (
                Against {
                    socket: Some("/tmp/other.sock".into()),
                    ..server()
                },
                "socket is /tmp/other.sock",
            ),
            (
                Against {
                    datadir: Some("/data/b/".into()),
                    ..server()
                },
                "is /var/lib/mysql, but the server's is /data/b/",
            ),
            (
                Against {
                    started_unix_s: Some(1_005_000),
                    ..server()
                },
                "restarted since",
            ),
        ];
        for (a, want) in cases {
            let e = check(Some(&recorded()), &a).unwrap_err();
            assert!(e.contains(want) && e.contains("pid 4242"), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn this_process_reads_itself() {
        let me = of_process(std::process::id());
        assert_eq!(me.pid, std::process::id());
        assert!(!me.hostname.is_empty());
        let started = me.started_unix_s.expect("a start time");
        assert!(started <= me.recorded_at_unix_s && started > me.recorded_at_unix_s - 86_400);
    }
}
