//! `spinscope probe`: measure this machine's spin hint and describe the CPU.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::cpu::{self, ProbeOptions};
use crate::error::{Error, Result};
use crate::report;

const AFTER_HELP: &str = "\
Method: many short batches (about 1 us) of unrolled spin hints (x86 PAUSE; aarch64 ISB and
YIELD), each between two serialized counter reads and followed by a short gap of plain work
(so a hypervisor does not take them for a pause loop); the counter (TSC / CNTVCT) is
calibrated against CLOCK_MONOTONIC_RAW over 9 short windows; the timer's own cost is
subtracted. Batches run in groups; a group in which the thread was switched out or moved is
measured again. The figure is the lower quartile of the groups' medians (contention only adds
time). Every batch is paired with a timed chain of dependent adds (one core cycle each), so
each batch has its own core cycles per hint whatever the clock did; the figure is given in
cycles and in ns at the fast clock of the probe (and at the slowest, when the clock moved).
When the groups' cycles spread more than 10% the series is repeated once, and otherwise the
probe says the host is too busy: no figure, valid = false with invalid_reason in the JSON,
exit code 3. A valid probe is kept as this host's CPU figure (in the state directory, with the
figures of earlier probes for the run-to-run spread): doctor, spin, tune and watch use it
until the CPU, the kernel or the hypervisor changes, or it is 7 days old. Core cycles per hint come from the hardware cycle counter
(perf_event_open) where one can be read, and are reported as unavailable otherwise.

Examples:
  spinscope probe                          # the current CPU, about 0.5 s
  spinscope probe --cpus all --smt-load    # every CPU, idle and with its SMT sibling busy
  spinscope probe --save host-a.json       # for `spin --probe` / `doctor --host-facts`
  spinscope probe --json | jq .summary";

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct ProbeArgs {
    /// CPUs to measure, one after another, pinned with sched_setaffinity: `all` or a list
    /// such as `0,2-3`. Default: the CPU this process runs on.
    #[arg(long, value_name = "all|LIST")]
    pub cpus: Option<String>,
    /// Also measure each CPU while its SMT sibling runs a busy loop (says so where there is
    /// no sibling).
    #[arg(long)]
    pub smt_load: bool,
    /// Timed batches per CPU and hint (more = tighter statistics, longer run).
    #[arg(long, default_value_t = cpu::DEFAULT_BATCHES, value_name = "N")]
    pub batches: usize,
    /// Print the `spinscope.probe/1` JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
}

pub fn run(a: ProbeArgs) -> Result<i32> {
    if !(10..=1_000_000).contains(&a.batches) {
        return Err(Error::bad_input(format!(
            "--batches {}: out of range; give 10 to 1000000",
            a.batches
        )));
    }
    let mut o = ProbeOptions {
        batches: a.batches,
        smt_load: a.smt_load,
        ..Default::default()
    };
    if let Some(spec) = &a.cpus {
        o.cpus = Some(cpu::resolve_cpus_here(spec)?);
    }
    // The output path checked before measuring: a bad path never costs a finished probe.
    if let Some(path) = &a.save {
        crate::files::check_output(path, "--save")?;
    }
    let show_progress = std::io::stderr().is_terminal();
    let mut doc = cpu::probe(&o, &mut |msg| {
        if show_progress {
            eprint!("\r\x1b[2Kspinscope probe: {msg}...");
        }
    })?;
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    // A valid probe is this host's CPU figure from now on, for every command (`cpu::saved`);
    // one taken under --smt-load describes a loaded core, not the host.
    if doc.valid && !a.smt_load {
        match cpu::saved::record(&doc) {
            Ok((path, spread)) => {
                doc.runs_on_this_host = spread;
                eprintln!(
                    "spinscope probe: kept as this host's CPU figure ({}): doctor, spin, tune and \
                     watch price settings with it until the CPU changes or it is {} old",
                    path.display(),
                    cpu::saved::fmt_age(cpu::saved::MAX_AGE_S)
                );
            }
            Err(e) => eprintln!("spinscope probe: not kept as this host's CPU figure: {e}"),
        }
    }
    if let Some(path) = &a.save {
        report::save_json(&doc, path)?;
    }
    if a.json {
        crate::cli::print_json(&doc)?;
    } else {
        print!("{}", report::probe::render(&doc));
        if let Some(path) = &a.save {
            println!("saved to {}", path.display());
        }
    }
    if !doc.valid {
        eprintln!(
            "spinscope probe: no figure: {}",
            doc.invalid_reason
                .as_deref()
                .unwrap_or("the host is too busy")
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(crate::error::EXIT_OK)
}
