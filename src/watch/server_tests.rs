//! Watch's session logic against scripted servers (`session::Scripted`, answering as
//! a recorded MariaDB 10.11): each server's journal is read on its own session, and a server
//! that goes away is reconnected when it comes back.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::metrics::{Metrics, ServerLabel};
use super::{server::watch_one, Shared, WatchPlan, Watched};
use crate::journal::{self, Record};
use crate::server::conn::{SslMode, Target};
use crate::session::{Scripted, MARIADB_10_11};

fn remote(host: &str) -> Target {
    Target {
        host: host.into(),
        port: 3306,
        socket: None,
        user: "monitor".into(),
        password: None,
        database: None,
        ssl_mode: SslMode::Disabled,
        ssl_ca: None,
        connect_timeout: Duration::from_secs(1),
        query_timeout: Duration::from_secs(1),
    }
}

fn plan(out: &Path, servers: Vec<Watched>) -> WatchPlan {
    WatchPlan {
        servers,
        hz: 20.0,
        sql_hz: 20.0,
        history_s: 1.0,
        after_s: 0.5,
        triggers: Vec::new(),
        default_triggers: false,
        cooldown_s: 1.0,
        max_captures: 0,
        min_free_bytes: 0,
        keep: 10,
        max_age_s: 1e9,
        out_dir: out.to_path_buf(),
        profile_seconds: 0.0,
        cores: Some(2.0),
        metrics_listen: None,
        duration_s: None,
    }
}

/// `n` records of changes to the server `fake` is, left by a spinscope that is gone.
fn left_changed(fake: &Scripted, n: usize) -> Vec<Record> {
    let server = journal::identify(&mut *fake.session(), "x", "").unwrap();
    let mut holder = journal::me();
    holder.pid_start += 1;
    (0..n)
        .map(|i| Record {
            id: journal::new_id(),
            server: server.clone(),
            what: format!("innodb_variable_{i}"),
            original: "4".into(),
            set_to: "5".into(),
            check_sql: String::new(),
            restore_sql: Vec::new(),
            holder: holder.clone(),
            opened_unix_s: 0,
            lock: None,
            server_copy: None,
            also_ours: Vec::new(),
            around: Default::default(),
        })
        .collect()
}

/// Wait (up to a minute, however slow the host) until `cond` holds.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn each_server_reads_its_own_journal_and_reconnects_when_it_returns() {
    let (jdir, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Scripted::recorded(MARIADB_10_11).unwrap();
    let b = Scripted::recorded(
        &MARIADB_10_11.replace("\tspinscope-recorded-host\t", "\tanother-host\t"),
    )
    .unwrap();
    for r in left_changed(&a, 1).iter().chain(&left_changed(&b, 2)) {
        journal::save_in(jdir.path(), r).unwrap();
    }
    let servers = vec![
        Watched {
            name: "a".into(),
            target: remote("a.example"),
        },
        Watched {
            name: "b".into(),
            target: remote("b.example"),
        },
    ];
    let (m, _registry) = Metrics::new();
    let (fa, fb) = (a.clone(), b.clone());
    let sh = Arc::new(Shared {
        plan: plan(out.path(), servers.clone()),
        metrics: m.clone(),
        stop: Arc::new(AtomicBool::new(false)),
        captures: AtomicU64::new(0),
        skipped: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        bursts: Mutex::default(),
        os: None,
        up_once: AtomicU64::new(0),
        writers: Mutex::default(),
        t0: Instant::now(),
        t0_unix_ms: 0.0,
        connect: Arc::new(move |t: &Target| match t.host.as_str() {
            "a.example" => fa.connect(),
            _ => fb.connect(),
        }),
    });
    let threads: Vec<_> = servers
        .into_iter()
        .map(|w| {
            let (sh, d) = (Arc::clone(&sh), jdir.path().to_path_buf());
            std::thread::spawn(move || {
                journal::use_dir_in_this_thread(&d);
                watch_one(&sh, &w);
            })
        })
        .collect();
    let label = |s: &str| ServerLabel { server: s.into() };
    let up = |s: &str| m.up.get_or_create(&label(s)).get();
    let open = |s: &str| m.journal_open.get_or_create(&label(s)).get();
    wait_for("both servers up, their journals read", || {
        up("a") == 1 && up("b") == 1 && open("a") > 0 && open("b") > 0
    });
    // Each server's own records, whichever connected first.
    assert_eq!((open("a"), open("b")), (1, 2));
    // A goes away: its sampler loses the session; B goes on.
    a.set_gone(true);
    wait_for("a down", || up("a") == 0);
    assert_eq!(up("b"), 1);
    let before = m.reconnects.get_or_create(&label("a")).get();
    a.set_gone(false);
    wait_for("a reconnected", || {
        up("a") == 1 && m.reconnects.get_or_create(&label("a")).get() == before + 1
    });
    assert_eq!(m.reconnects.get_or_create(&label("b")).get(), 0);
    sh.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
}
