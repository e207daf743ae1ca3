//! Doctor over a fleet: several servers diagnosed in parallel with a bounded number of
//! connections, one summary row each. A server that cannot be reached is one row with its
//! error and never stops the others.
//!
//! The engine ([`diagnose`]) opens connections and starts threads; the summary of a row
//! ([`Summary::of`]) and the table ([`render`]) are pure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::doctor::{build_doc, Facts};
use crate::server::collect::{collect_metered, CollectOpts};
use crate::server::conn::Target;

// The document (`spinscope.doctor-fleet/1`) is plain types in `fleet::doc` (serde only).
pub use doc::{FleetDoc, Row, Summary, FLEET_SCHEMA};

pub mod doc;

/// One server to diagnose: a display name and how to reach it.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub target: Target,
}

/// Diagnose every member with at most `parallel` at a time; rows keep the members' order.
/// `progress` is called with k (servers done) and a line saying which and how ("db2:
/// warning"). See [`diagnose_with`].
pub fn diagnose(
    members: &[Member],
    o: &CollectOpts,
    parallel: usize,
    stop: &AtomicBool,
    progress: &(dyn Fn(usize, &str) + Sync),
) -> FleetDoc {
    diagnose_with(members, o, parallel, stop, &|e| {
        if let Event::Done { k, line, .. } = e {
            progress(k, line)
        }
    })
}

/// What [`diagnose_with`] reports while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Member `i` started.
    Started { i: usize, name: &'a str },
    /// Member `i` finished (or was given up), the `k`-th done; `line` says which and how.
    Done { i: usize, k: usize, line: &'a str },
    /// Nothing finished for a moment (a few times a second while servers run).
    Waiting,
    /// A member's collection has something to say (the CLI's `spinscope: TEXT` line).
    Note { text: &'a str },
}

/// What a member's thread sends back: a note while it runs, its row at the end.
enum Msg {
    Note(String),
    Row(usize, Box<Row>),
}

/// How long one member may take before it is given up: the window, the connect timeout (the
/// greeting included), one query timeout, and 5 s for the collection's own work. Every read
/// has its timeout; this bounds a server that stops answering after some of them.
pub fn limit(m: &Member, o: &CollectOpts) -> Duration {
    Duration::from_secs_f64(o.window_s.max(0.0))
        + m.target.connect_timeout
        + m.target.query_timeout
        + Duration::from_secs(5)
}

/// [`diagnose`], reporting every start and end and ticking while it waits. Each member runs on
/// its own thread; one that has not finished within its [`limit`] (a server stopped or hung
/// mid-collection) is given up: its row says so and the run goes on without waiting for its
/// thread (which ends with the process).
pub fn diagnose_with(
    members: &[Member],
    o: &CollectOpts,
    parallel: usize,
    stop: &AtomicBool,
    on: &dyn Fn(Event<'_>),
) -> FleetDoc {
    let n = members.len();
    let workers = parallel.clamp(1, n.max(1));
    let (tx, rx) = mpsc::channel::<Msg>();
    // The members' threads see the stop through their own flag (they may outlive this call).
    let halt = Arc::new(AtomicBool::new(false));
    let mut rows: Vec<Option<Row>> = vec![None; n];
    let mut running: Vec<(usize, Instant)> = Vec::new();
    let (mut next, mut done) = (0, 0);
    let mut finish = |i: usize, row: Row, rows: &mut Vec<Option<Row>>| {
        done += 1;
        let what = match (&row.error, &row.summary) {
            (Some(e), _) => format!("error: {e}"),
            (None, Some(s)) => s
                .worst_severity
                .map_or("no findings", |v| v.name())
                .to_string(),
            _ => String::new(),
        };
        on(Event::Done {
            i,
            k: done,
            line: &format!("{}: {what}", members[i].name),
        });
        rows[i] = Some(row);
    };
    while rows.iter().any(Option::is_none) {
        if stop.load(Ordering::Relaxed) {
            halt.store(true, Ordering::Relaxed);
        }
        while running.len() < workers && next < n {
            let (i, m) = (next, &members[next]);
            next += 1;
            if stop.load(Ordering::Relaxed) {
                finish(
                    i,
                    row_err(m, "not diagnosed: interrupted".into()),
                    &mut rows,
                );
                continue;
            }
            on(Event::Started { i, name: &m.name });
            let (m2, o2, halt2, tx2) = (m.clone(), o.clone(), Arc::clone(&halt), tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("fleet-{i}"))
                .spawn(move || {
                    let row = diagnose_one(&m2, &o2, &halt2, &tx2);
                    let _ = tx2.send(Msg::Row(i, Box::new(row)));
                });
            match spawned {
                Ok(_) => running.push((i, Instant::now())),
                Err(e) => finish(i, row_err(m, format!("not diagnosed: {e}")), &mut rows),
            }
        }
        if running.is_empty() {
            continue;
        }
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(Msg::Note(text)) => on(Event::Note { text: &text }),
            Ok(Msg::Row(i, row)) => {
                let row = *row;
                // A row that arrives after its member was given up is dropped.
                if let Some(p) = running.iter().position(|r| r.0 == i) {
                    running.remove(p);
                    finish(i, row, &mut rows);
                }
            }
            Err(_) => on(Event::Waiting),
        }
        let now = Instant::now();
        let mut k = 0;
        while k < running.len() {
            let (i, t0) = running[k];
            let lim = limit(&members[i], o);
            if now.duration_since(t0) >= lim {
                running.remove(k);
                let e = format!(
                    "no result within {} s (the window, --connect-timeout, --query-timeout and 5 s): the server stopped answering or hangs; given up",
                    lim.as_secs()
                );
                finish(i, row_err(&members[i], e), &mut rows);
            } else {
                k += 1;
            }
        }
    }
    let servers: Vec<Row> = rows
        .into_iter()
        .zip(members)
        .map(|(r, m)| r.unwrap_or_else(|| row_err(m, "not diagnosed".into())))
        .collect();
    let diagnosed = servers.iter().filter(|r| r.doc.is_some()).count();
    FleetDoc {
        schema: FLEET_SCHEMA.to_string(),
        failed: servers.len() - diagnosed,
        diagnosed,
        max_severity: servers
            .iter()
            .filter_map(|r| r.doc.as_ref()?.max_severity)
            .max(),
        interrupted: stop.load(Ordering::Relaxed),
        servers,
    }
}

fn row_err(m: &Member, e: String) -> Row {
    Row {
        name: m.name.clone(),
        target: m.target.describe(),
        summary: None,
        error: Some(e),
        doc: None,
    }
}

fn diagnose_one(m: &Member, o: &CollectOpts, stop: &AtomicBool, tx: &mpsc::Sender<Msg>) -> Row {
    // A local member's host facts are read from this machine; --host-facts, when given,
    // prices the remote ones (as for a single server).
    let mut notes = crate::meter::Notes(|t: &str| {
        let _ = tx.send(Msg::Note(t.to_string()));
    });
    match collect_metered(&m.target, o, stop, &mut notes) {
        Ok(snap) => {
            let lost = snap.lost_connection;
            let doc = build_doc("live", &Facts::from_snapshot(snap));
            Row {
                name: m.name.clone(),
                target: m.target.describe(),
                summary: Some(Summary::of(&doc)),
                error: lost.then(|| "the server went away during the window; partial".into()),
                doc: Some(doc),
            }
        }
        Err(e) => row_err(m, e.to_string()),
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// One row per server; `markdown` gives a Markdown table, else a text table within `width`
/// columns (long cells wrap inside their column).
pub fn render(d: &FleetDoc, markdown: bool, width: usize) -> String {
    let header = [
        "server",
        "version",
        "max spin",
        "vs design",
        "Threads_running p99/max",
        "worst finding",
    ];
    let cells: Vec<Vec<String>> = d
        .servers
        .iter()
        .map(|r| {
            let version = r
                .doc
                .as_ref()
                .map(|d| d.server.clone())
                .unwrap_or_else(|| "-".into());
            match (&r.summary, &r.error) {
                (Some(s), e) => vec![
                    r.name.clone(),
                    version,
                    opt(s.max_spin_us, |v| crate::units::fmt_ns(v * 1e3)),
                    opt(s.design_ratio, crate::spin::doc::fmt_ratio),
                    match (s.threads_running_p99, s.threads_running_max) {
                        (Some(p), Some(m)) => {
                            format!("{}/{}", crate::units::fmt_num(p), crate::units::fmt_num(m))
                        }
                        _ => "-".into(),
                    },
                    match (&s.worst_severity, &s.worst_finding, e) {
                        (_, _, Some(e)) => format!("error: {e}"),
                        (Some(v), Some(t), None) => format!("{}: {}", v.name(), clip(t, 90)),
                        _ => "none".into(),
                    },
                ],
                (None, e) => vec![
                    r.name.clone(),
                    version,
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("error: {}", e.as_deref().unwrap_or("unknown")),
                ],
            }
        })
        .collect();
    let mut s = String::new();
    if markdown {
        s.push_str("## spinscope doctor: fleet\n\n");
        s.push_str(&format!("| {} |\n", header.join(" | ")));
        s.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        for c in &cells {
            let esc: Vec<String> = c.iter().map(|x| x.replace('|', "\\|")).collect();
            s.push_str(&format!("| {} |\n", esc.join(" | ")));
        }
    } else {
        s.push_str("spinscope doctor: fleet\n=======================\n");
        let mut t = crate::units::table(&header);
        t.set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
            .set_width(width.clamp(40, u16::MAX as usize) as u16);
        for c in cells {
            t.add_row(c);
        }
        s.push_str(&format!("{t}\n"));
    }
    s.push_str(&format!(
        "\n{} of {} servers diagnosed{}{}\n",
        d.diagnosed,
        d.servers.len(),
        if d.failed > 0 {
            format!("; {} could not be (see their rows)", d.failed)
        } else {
            String::new()
        },
        if d.interrupted { "; interrupted" } else { "" }
    ));
    s
}

fn clip(t: &str, n: usize) -> String {
    if t.chars().count() <= n {
        t.to_string()
    } else {
        let mut c: String = t.chars().take(n.saturating_sub(3)).collect();
        c.push_str("...");
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{ev, DoctorDoc, Finding, Severity};
    use std::sync::Mutex;

    fn doc(findings: Vec<Finding>) -> DoctorDoc {
        DoctorDoc {
            schema: crate::doctor::DOCTOR_SCHEMA.into(),
            source: "live".into(),
            target: "t".into(),
            server: "MariaDB 10.11".into(),
            version: "10.11.19-MariaDB".into(),
            semaphores: None,
            burst: None,
            host: None,
            cpu_model: None,
            pfs_top_waits: vec![],
            pfs_instruments_restored: None,
            refused: vec![],
            notes: vec![],
            max_severity: findings.iter().map(|f| f.severity).max(),
            findings,
            rt: None,
            identity: None,
        }
    }

    fn finding(id: &str, sev: Severity, evidence: Vec<crate::doctor::Evidence>) -> Finding {
        Finding {
            id: id.into(),
            severity: sev,
            title: format!("{id} title | with a pipe"),
            evidence,
            why: String::new(),
            what_to_do: String::new(),
            statements: vec![],
            option_file: vec![],
        }
    }

    #[test]
    fn summary_reads_the_spin_budget_and_the_worst_finding() {
        let d = doc(vec![
            finding("running-bursts", Severity::Warning, vec![]),
            finding(
                "spin-budget",
                Severity::Info,
                vec![
                    ev("max_spin_here", 48.5, "us"),
                    ev("design_ratio", 1.7, "x"),
                ],
            ),
        ]);
        let s = Summary::of(&d);
        assert_eq!(s.max_spin_us, Some(48.5));
        assert_eq!(s.design_ratio, Some(1.7));
        assert_eq!(s.worst_severity, Some(Severity::Warning));
        assert!(s.worst_finding.unwrap().starts_with("running-bursts"));
        let none = Summary::of(&doc(vec![]));
        assert_eq!(none.max_spin_us, None);
        assert_eq!(none.worst_severity, None);
    }

    #[test]
    fn table_has_one_row_per_server_and_names_errors() {
        let ok = doc(vec![finding(
            "spin-budget",
            Severity::Critical,
            vec![
                ev("max_spin_here", 1200.0, "us"),
                ev("design_ratio", 14.0, "x"),
            ],
        )]);
        let fd = FleetDoc {
            schema: FLEET_SCHEMA.into(),
            servers: vec![
                Row {
                    name: "db1".into(),
                    target: "a".into(),
                    summary: Some(Summary::of(&ok)),
                    error: None,
                    doc: Some(ok),
                },
                Row {
                    name: "db2".into(),
                    target: "b".into(),
                    summary: None,
                    error: Some("cannot connect to 10.0.0.9:3306".into()),
                    doc: None,
                },
            ],
            diagnosed: 1,
            failed: 1,
            max_severity: Some(Severity::Critical),
            interrupted: false,
        };
        let t = render(&fd, false, 80);
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        let db1 = t.lines().find(|l| l.contains("db1")).unwrap();
        assert!(db1.contains("critical") && db1.contains("14"), "{t}");
        let db2 = t.lines().find(|l| l.contains("db2")).unwrap();
        // The cell wraps inside its column (80 columns): its first words on the row, the rest below.
        assert!(db2.contains("error: cannot"), "{t}");
        assert!(t.contains("10.0.0.9:3306"), "{t}");
        assert!(
            t.contains("1 of 2 servers diagnosed; 1 could not be"),
            "{t}"
        );
        let md = render(&fd, true, 80);
        assert_eq!(md.lines().filter(|l| l.starts_with("| db")).count(), 2);
        // A pipe inside a cell is escaped so the Markdown table keeps its columns.
        assert!(md.contains("title \\| with a pipe"), "{md}");
    }

    #[test]
    fn unreachable_members_do_not_stop_the_others() {
        // Two members on ports nothing listens on: both rows carry errors, in order.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mk = |n: &str| Member {
            name: n.into(),
            target: Target {
                host: "127.0.0.1".into(),
                port,
                socket: None,
                user: "x".into(),
                password: None,
                database: None,
                ssl_mode: crate::server::conn::SslMode::Disabled,
                ssl_ca: None,
                connect_timeout: std::time::Duration::from_secs(2),
                query_timeout: std::time::Duration::from_secs(2),
            },
        };
        let members = vec![mk("a"), mk("b"), mk("c")];
        let o = CollectOpts {
            window_s: 0.0,
            hz: 100.0,
            sql_hz: None,
            enable_instruments: false,
            host_facts: None,
            rt: false,
            quiet_journal: false,
        };
        let lines = Mutex::new(Vec::new());
        let d = diagnose(&members, &o, 2, &AtomicBool::new(false), &|k, l| {
            lines.lock().unwrap().push((k, l.to_string()))
        });
        assert_eq!(d.servers.len(), 3);
        assert_eq!(d.failed, 3);
        assert_eq!(
            d.servers
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert!(d.servers.iter().all(|r| r.error.is_some()));
        // Each server reported once, counted 1, 2, 3 in the order they finished.
        let mut ks: Vec<usize> = lines.lock().unwrap().iter().map(|(k, _)| *k).collect();
        ks.sort();
        assert_eq!(ks, [1, 2, 3]);
    }
}
