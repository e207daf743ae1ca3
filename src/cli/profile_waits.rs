//! `spinscope profile --waits`: the wait view (spin CPU beside latch sleeps per site), live
//! (`--pid`/`--process`: the cost check, then the recording) or from a saved `perf script`
//! text of a wait recording (`--perf-script`); with `--pprof`, the same recording as a pprof
//! profile with on-CPU and off-CPU time.

use std::io::BufReader;

use super::profile::ProfileArgs;
use crate::error::{Error, Result, EXIT_OK};
use crate::files;
use crate::profile::waits::{self, record};

/// Run `profile --waits`.
pub fn run(a: &ProfileArgs) -> Result<i32> {
    for (set, flag) in [
        (a.diff.is_some(), "--diff"),
        (a.folded.is_some(), "--folded"),
        (a.svg.is_some(), "--svg"),
        (a.save_script.is_some(), "--save-script"),
        (a.event.is_some(), "--event"),
    ] {
        if set {
            return Err(Error::bad_input(format!(
                "{flag}: not with --waits (the wait view is a table and a JSON document; record \
                 the flame graph with a plain `profile`)"
            )));
        }
    }
    if !(a.max_cost > 0.0 && a.max_cost <= 100.0) {
        return Err(Error::bad_input(format!(
            "--max-cost {}: give a percentage in (0, 100]",
            a.max_cost
        )));
    }
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Error::bad_input(format!(
            "--duration {}s: give a value in (0s, 1h]",
            a.seconds
        )));
    }
    if !(1..=100_000).contains(&a.frequency) {
        return Err(Error::bad_input(format!(
            "--hz {}: give 1..100000 samples per second",
            a.frequency
        )));
    }
    // The output is made before any recording or reading, so a bad path fails at once.
    if let (Some(out), Some(input)) = (&a.pprof, &a.perf_script) {
        files::refuse_same(&[("--perf-script", input)], &[("--pprof", out)])?;
    }
    let pprof_out = a
        .pprof
        .as_deref()
        .map(|p| super::profile::open_output("--pprof", p))
        .transpose()?;
    let max_input = a.max_input_mb.max(1).saturating_mul(1 << 20);
    let want = a.pprof.is_some();
    let waits::Analysed { doc, pprof } = match &a.perf_script {
        Some(path) => offline(path, a.pid, max_input, want)?,
        None => live(a, max_input, want)?,
    };
    if let (Some(p), Some(out), Some(pp)) = (&a.pprof, pprof_out, &pprof) {
        let bytes = crate::profile::pprof::encode(pp).map_err(|e| {
            Error::runtime(format!("--pprof {}: encoding failed ({e})", p.display()))
        })?;
        super::profile::write_out("--pprof", p, out, &bytes)?;
    }
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!("{}", waits::render::text(&doc));
    }
    Ok(EXIT_OK)
}

fn live(a: &ProfileArgs, max_input: u64, pprof: bool) -> Result<waits::Analysed> {
    let (pid, comm) = crate::profile::run::target(a.pid, a.process.as_deref())?;
    let live = record::Live {
        pid,
        comm,
        seconds: a.seconds,
        frequency_hz: a.frequency,
        max_cost_pct: a.max_cost,
        max_input_bytes: max_input,
        pprof,
    };
    let cost = record::check(&live)?;
    let what = format!(
        "recording the waits of {} (pid {}): on-CPU at {} Hz and every context switch of its \
         threads ({:.0}/s now, {:.1} CPUs idle); expected cost to the server: about {:.1}% of \
         its throughput (bound {}%)",
        live.comm,
        pid,
        live.frequency_hz,
        cost.switches_per_s,
        cost.idle_cpus,
        cost.expected_cost_pct,
        live.max_cost_pct
    );
    if a.seconds < crate::cli::progress::ANNOUNCE_S {
        eprintln!("spinscope profile: {what}");
    }
    let shown = crate::cli::progress::Window::start("profile", &what, a.seconds);
    let doc = record::record(&live, cost)?;
    drop(shown);
    Ok(doc)
}

/// A saved wait recording; the server is `pid`, else the process with the most events.
fn offline(
    path: &std::path::Path,
    pid: Option<u32>,
    max_input: u64,
    pprof: bool,
) -> Result<waits::Analysed> {
    let name = format!("--perf-script {}", path.display());
    let pid = match pid {
        Some(p) => p,
        None => {
            let f = files::open_input(path, "--perf-script")?;
            let mut counts = std::collections::HashMap::<u32, u64>::new();
            let mut ev =
                waits::script::Events::new(BufReader::with_capacity(1 << 18, f), max_input);
            for e in ev.by_ref() {
                if e.pid != 0 {
                    *counts.entry(e.pid).or_default() += 1;
                }
            }
            let best = counts.into_iter().max_by_key(|(p, n)| (*n, *p));
            best.map(|(p, _)| p).ok_or_else(|| {
                Error::bad_input(format!(
                    "{name}: no perf script events in it: export a wait recording with `perf \
                     script -F {}`",
                    record::SCRIPT_FIELDS
                ))
            })?
        }
    };
    let f = files::open_input(path, "--perf-script")?;
    let b = waits::Build {
        pid,
        kind: "perf-script".into(),
        file: Some(path.display().to_string()),
        comm: None,
        seconds: None,
        frequency_hz: None,
        off_cpu_method: "sched:sched_switch events in the script".into(),
        cost: None,
        server: None,
        pprof,
    };
    waits::analyse_reader(BufReader::with_capacity(1 << 18, f), &name, max_input, b)
}
