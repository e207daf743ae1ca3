//! `spinscope doctor`: diagnose a live server or a captured snapshot.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use super::doctor_args::DoctorArgs;
use super::doctor_args::{check, render};
use crate::doctor::{build_doc, Facts};
use crate::error::{Error, Result, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK};
use crate::server::collect::{collect_metered, CollectOpts};
use crate::server::conn::resolve;
use crate::server::snapshot::Snapshot;

/// A directory stands for the snapshot file inside it.
fn snapshot_path(p: &std::path::Path) -> PathBuf {
    if p.is_dir() {
        p.join("doctor-snapshot.json")
    } else {
        p.to_path_buf()
    }
}

/// The line that closes an announced sampling window: the whole time doctor took, of which
/// the window, so "sampling for 10 s" is not read as the whole cost (collection before and
/// after it: variables, INNODB STATUS, performance_schema, host counters).
fn took_line(window_s: f64, total_s: f64) -> String {
    format!(
        "spinscope doctor: took {total_s:.1} s in all: the {window_s:.1} s sampling window and {:.1} s of collection around it",
        (total_s - window_s).max(0.0)
    )
}

pub fn run(a: DoctorArgs) -> Result<i32> {
    check(&a)?;
    if a.inventory.is_some() || !a.more.is_empty() {
        if a.waits.is_some() {
            return Err(Error::bad_input(
                "--waits with several servers: a wait document is of one server; run doctor --waits for that server alone",
            ));
        }
        if a.rt {
            return Err(Error::bad_input(
                "--rt with several servers: rt captures packets on one server's host; run doctor --rt there for each",
            ));
        }
        return super::fleet::run(&a);
    }
    // Read before anything is collected, so a bad document fails at once.
    let waits = a
        .waits
        .as_deref()
        .map(|p| crate::profile::waits::load(p, "--waits"))
        .transpose()?;
    let mut stop = Arc::new(AtomicBool::new(false));
    let (snap, source) = match &a.snapshot {
        Some(p) => {
            let mut snap = Snapshot::load(&snapshot_path(p))?;
            if let Some(h) = &a.host_facts {
                snap.host = Some(crate::server::host::load(h)?);
            }
            (snap, p.display().to_string())
        }
        None => {
            // The snapshot path is checked before anything is collected or changed.
            if let Some(p) = &a.save_snapshot {
                crate::files::check_output(&snapshot_path(p), "--save-snapshot")?;
            }
            let target = resolve(&a.conn)?;
            let host_facts = match &a.host_facts {
                Some(p) => Some(crate::server::host::load(p)?),
                None => None,
            };
            // Ctrl-C, SIGTERM, SIGHUP, SIGQUIT end the window early; collection then restores
            // instruments and reports.
            stop = crate::interrupt::install()?;
            let o = CollectOpts {
                window_s: a.window,
                hz: a.hz,
                sql_hz: a.sql_hz,
                enable_instruments: a.enable_instruments,
                host_facts,
                rt: a.rt,
                quiet_journal: false,
            };
            let t0 = std::time::Instant::now();
            let snap = collect_metered(
                &target,
                &o,
                &stop,
                &mut crate::cli::progress::Stderr::default(),
            )?;
            // Said only where the window was announced (progress::Window), on stderr.
            if a.window >= crate::cli::progress::ANNOUNCE_S {
                eprintln!("{}", took_line(snap.window_s, t0.elapsed().as_secs_f64()));
            }
            (snap, "live".to_string())
        }
    };
    if let Some(p) = &a.save_snapshot {
        let p = &snapshot_path(p);
        snap.save(p)?;
        eprintln!("spinscope: snapshot saved to {}", p.display());
    }
    let lost = snap.lost_connection;
    let mut facts = Facts::from_snapshot(snap);
    if let (Some(doc), Some(p)) = (waits, &a.waits) {
        facts.waits = Some(waits_given(&facts, doc, p)?);
    }
    let doc = build_doc(&source, &facts);
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!("{}", render(&doc, a.markdown));
    }
    if lost && a.snapshot.is_none() {
        return Err(Error::runtime(
            "the server went away during the window; the findings above are partial",
        ));
    }
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("spinscope: interrupted; partial results above");
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(match (a.fail_on, doc.max_severity) {
        (Some(f), Some(m)) if m >= f => EXIT_FINDINGS,
        _ => EXIT_OK,
    })
}

/// The wait document checked against the server the snapshot is of: refused in one line when
/// it is of another server or of an earlier run.
fn waits_given(
    facts: &Facts,
    doc: crate::profile::waits::WaitDoc,
    path: &std::path::Path,
) -> Result<crate::doctor::facts::WaitsGiven> {
    let mut against = facts.identity_for_waits();
    // The data directory as this host resolves it, as the recording read it from /proc.
    if facts.snap.local {
        against.datadir = against
            .datadir
            .map(|d| std::fs::canonicalize(&d).map_or(d, |c| c.display().to_string()));
    }
    let note = crate::profile::waits::identity::check(doc.server.as_ref(), &against).map_err(
        |why| {
            Error::bad_input(format!(
                "--waits {}: {why}: record this server's waits (spinscope profile --waits --json --pid PID on its host) and give that file",
                path.display()
            ))
        },
    )?;
    Ok(crate::doctor::facts::WaitsGiven {
        file: path.display().to_string(),
        doc,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::took_line;

    #[test]
    fn the_whole_time_and_the_window() {
        assert_eq!(
            took_line(10.02, 13.24),
            "spinscope doctor: took 13.2 s in all: the 10.0 s sampling window and 3.2 s of collection around it"
        );
        assert!(took_line(5.0, 4.9).ends_with("and 0.0 s of collection around it"));
    }
}
