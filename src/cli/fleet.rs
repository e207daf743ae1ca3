//! `spinscope doctor TARGET TARGET...` / `--inventory FILE`: several servers at once.

use std::sync::atomic::Ordering;

use super::doctor_args::DoctorArgs;
use crate::error::{Error, Result, EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNTIME};
use crate::fleet::{diagnose_with, limit, render, Event, Member};
use crate::server::collect::CollectOpts;
use crate::server::conn::{redact_target, resolve};

/// The servers named on the command line and in the inventory, resolved with the shared
/// connection flags. A `-p` prompt is asked once and reused.
fn members(a: &DoctorArgs) -> Result<Vec<Member>> {
    let mut named: Vec<(Option<String>, String)> = Vec::new();
    named.extend(a.conn.target.iter().map(|t| (None, t.clone())));
    named.extend(a.more.iter().map(|t| (None, t.clone())));
    if let Some(p) = &a.inventory {
        let text = crate::files::read_capped(p, 1 << 20, "--inventory")?;
        named.extend(crate::server::inventory::parse(
            &text,
            &p.display().to_string(),
        )?);
    }
    if named.is_empty() {
        return Err(Error::bad_input(
            "--inventory: no servers to diagnose; name them as TARGETs or in the file",
        ));
    }
    let mut conn = a.conn.clone();
    let mut out = Vec::with_capacity(named.len());
    for (name, t) in named {
        conn.target = Some(t.clone());
        let target = resolve(&conn)?;
        if conn.password == Some(None) {
            // Asked once on the terminal; the same password for the other servers.
            conn.password = Some(target.password.clone());
        }
        out.push(Member {
            name: name.unwrap_or_else(|| redact_target(&t)),
            target,
        });
    }
    Ok(out)
}

pub fn run(a: &DoctorArgs) -> Result<i32> {
    if a.parallel == 0 || a.parallel > 256 {
        return Err(Error::bad_input(format!(
            "--parallel {}: give 1..=256 servers at once",
            a.parallel
        )));
    }
    if a.save_snapshot.is_some() {
        return Err(Error::bad_input(
            "--save-snapshot takes one server; with several, use --json to keep every document",
        ));
    }
    let members = members(a)?;
    let host_facts = match &a.host_facts {
        Some(p) => Some(crate::server::host::load(p)?),
        None => None,
    };
    let o = CollectOpts {
        window_s: a.window,
        hz: a.hz,
        sql_hz: None,
        enable_instruments: a.enable_instruments,
        host_facts,
        rt: false,
        quiet_journal: false,
    };
    let stop = crate::interrupt::install()?;
    let at_once = a.parallel.min(members.len());
    let given_up_after = members
        .iter()
        .map(|m| limit(m, &o))
        .max()
        .unwrap_or_default();
    let shown = crate::cli::progress::Servers::new(
        "doctor",
        members.len() as u64,
        at_once as u64,
        // The window plus about a second of collection (variables, status, INNODB STATUS).
        a.window + 1.0,
        given_up_after.as_secs_f64(),
        &format!(
            "diagnosing {} servers, {at_once} at a time, {} s window each",
            members.len(),
            crate::report::fmt_num(a.window)
        ),
    );
    let doc = diagnose_with(&members, &o, a.parallel, &stop, &|e| match e {
        Event::Started { i, name } => shown.started(i, name),
        Event::Done { i, k, line } => shown.done(i, k as u64, line),
        Event::Waiting => shown.waiting(),
        Event::Note { text } => shown.note(text),
    });
    shown.finish();
    // A server given up with its instruments still on (--enable-instruments): its record
    // stays open for `spinscope restore`.
    let pending = crate::journal::pending_statements();
    if !pending.is_empty() {
        eprintln!(
            "spinscope: a server stopped answering with spinscope's changes still on it; run `spinscope restore` with its connection flags once it answers, or these statements:\n{}",
            pending
                .iter()
                .map(|s| format!("  {s};"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!(
            "{}",
            render(&doc, a.markdown, super::doctor_args::text_width())
        );
        if a.details {
            for r in &doc.servers {
                if let Some(d) = &r.doc {
                    println!();
                    print!("{}", super::doctor_args::render(d, a.markdown));
                }
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("spinscope: interrupted; partial results above");
        return Ok(EXIT_INTERRUPTED);
    }
    if doc.failed > 0 {
        eprintln!(
            "spinscope: error: {} of {} servers could not be diagnosed (see their rows)",
            doc.failed,
            doc.servers.len()
        );
        return Ok(EXIT_RUNTIME);
    }
    Ok(match (a.fail_on, doc.max_severity) {
        (Some(f), Some(m)) if m >= f => EXIT_FINDINGS,
        _ => EXIT_OK,
    })
}
