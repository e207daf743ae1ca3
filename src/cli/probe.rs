//! `spinscope probe`: measure this machine's spin hint and describe the CPU.

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::cpu::{self, ProbeOptions, ProbeReport};
use crate::error::{Error, Result};
use crate::report::{fmt_ns, fmt_num};

const AFTER_HELP: &str = "\
Method: many short batches (about 1 us) of unrolled spin hints (x86 PAUSE; aarch64 ISB and
YIELD), each between two serialized counter reads and followed by a short gap of plain work
(so a hypervisor does not take them for a pause loop); the counter (TSC / CNTVCT) is
calibrated against CLOCK_MONOTONIC_RAW over 9 short windows; the timer's own cost is
subtracted. Batches run in groups; a group in which the thread was switched out or moved is
measured again. The figure is the lower quartile of the groups' medians (contention only adds
time); when the groups spread more than 10%, or disagree with MariaDB's own short
measurement, the series is repeated (3 at most) and otherwise the probe says the host is too
busy: no figure, valid = false with invalid_reason in the JSON, exit code 3. Core cycles per hint come from the hardware cycle counter
(perf_event_open) where one can be read, and are reported as unavailable otherwise.

Examples:
  spinscope probe                          # the current CPU, under 0.1 s
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
        let allowed = cpu::measure::get_affinity()
            .map(|s| cpu::measure::cpus_in(&s))
            .unwrap_or_default();
        o.cpus = Some(cpu::resolve_cpus(spec, &allowed)?);
    }
    // The output path checked before measuring: a bad path never costs a finished probe.
    if let Some(path) = &a.save {
        crate::files::check_output(path, "--save")?;
    }
    let show_progress = std::io::stderr().is_terminal();
    let report = cpu::probe(&o, &mut |msg| {
        if show_progress {
            eprint!("\r\x1b[2Kspinscope probe: {msg}...");
        }
    })?;
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    if let Some(path) = &a.save {
        crate::report::save_json(&report, path)?;
    }
    if a.json {
        crate::report::print_json(&report)?;
    } else {
        print!("{}", render(&report));
        if let Some(path) = &a.save {
            println!("saved to {}", path.display());
        }
    }
    if !report.valid {
        eprintln!(
            "spinscope probe: no figure: {}",
            report
                .invalid_reason
                .as_deref()
                .unwrap_or("the host is too busy")
        );
        return Ok(crate::error::EXIT_RUNTIME);
    }
    Ok(crate::error::EXIT_OK)
}

fn size(b: u64) -> String {
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The human report.
pub fn render(r: &ProbeReport) -> String {
    let mut out = machine_lines(r);
    out += &format!("{}\n\n", measurements_table(r));
    if r.valid {
        out += &figure_lines(r);
        if let Some(n) = &r.hypervisor.note {
            out += &format!("note: {n}\n");
        }
    } else {
        out += &no_figure_lines(r);
    }
    for n in &r.notes {
        out += &format!("note: {n}\n");
    }
    out += &format!("probe took {} ms\n", fmt_num(r.elapsed_ms));
    out
}

/// The machine: CPU identity, host, topology, caches, hypervisor and counter.
fn machine_lines(r: &ProbeReport) -> String {
    let mut out = cpu_line(r);
    out += &format!(
        "host       {} {}, kernel {}\n",
        r.host.hostname.as_deref().unwrap_or("-"),
        r.host.arch,
        r.host.kernel_release.as_deref().unwrap_or("unknown")
    );
    let t = &r.topology;
    out +=
        &format!(
        "topology   {} socket(s), {} core(s), {} thread(s), SMT {}, NUMA nodes {}, online {}{}\n",
        t.sockets,
        t.cores,
        t.threads,
        if t.smt { "on" } else { "off" },
        t.numa_nodes.map_or("-".into(), |n| n.to_string()),
        t.online,
        if t.exact { "" } else { " (placement not readable: assumed)" }
    );
    out += &caches_line(r);
    out += &format!(
        "hypervisor {}\n",
        if r.hypervisor.present {
            format!(
                "yes ({})",
                r.hypervisor.vendor.as_deref().unwrap_or("vendor unknown")
            )
        } else {
            "none detected".into()
        }
    );
    let c = &r.counter;
    out += &format!(
        "counter    {} {} GHz{}{}, calibrated in {} ms\n\n",
        c.name,
        fmt_num(c.ghz),
        c.nominal_ghz
            .map_or(String::new(), |n| format!(" (nominal {})", fmt_num(n))),
        match c.invariant {
            Some(true) => ", invariant",
            Some(false) => ", NOT invariant",
            None => "",
        },
        fmt_num(c.calibration_ms)
    );
    out
}

/// The CPU's name, microarchitecture and identification numbers.
fn cpu_line(r: &ProbeReport) -> String {
    let name = if r.cpu.model_name.is_empty() {
        format!("{} part {:#x}", r.cpu.vendor, r.cpu.arm_part)
    } else {
        r.cpu.model_name.clone()
    };
    let uarch = match (&r.cpu.reference_key, &r.cpu.microarch) {
        (Some(k), Some(m)) => format!("{k}: {m}"),
        _ => "not in the reference table".into(),
    };
    let ident = if r.cpu.arm_implementer != 0 {
        format!(
            "implementer {:#x} part {:#x}",
            r.cpu.arm_implementer, r.cpu.arm_part
        )
    } else {
        format!(
            "family {} model {} stepping {}",
            r.cpu.family, r.cpu.model, r.cpu.stepping
        )
    };
    format!("cpu        {name} ({uarch}; {} {ident})\n", r.cpu.vendor)
}

/// The cache sizes by level and the cache line.
fn caches_line(r: &ProbeReport) -> String {
    let caches: Vec<String> = r
        .caches
        .iter()
        .map(|c| {
            let k = match c.kind.as_str() {
                "Data" => "d",
                "Instruction" => "i",
                _ => "",
            };
            format!("L{}{k} {}", c.level, size(c.size_bytes))
        })
        .collect();
    format!(
        "caches     {}; cache line {}\n",
        if caches.is_empty() {
            "not readable".into()
        } else {
            caches.join(", ")
        },
        r.cache_line_bytes
            .map_or("unknown".into(), |l| format!("{l} B"))
    )
}

/// One row per CPU, hint and sibling state.
fn measurements_table(r: &ProbeReport) -> comfy_table::Table {
    let mut tab = crate::report::table(&[
        "CPU",
        "hint",
        "sibling",
        "batches",
        "groups kept/redone",
        "ticks/hint min",
        "median",
        "figure",
        "group spread",
        "ns/hint figure",
        "cycles/hint",
    ]);
    for m in &r.measurements {
        tab.add_row(vec![
            m.cpu.to_string(),
            m.hint.name().to_string(),
            m.smt_sibling_busy
                .map_or("idle".into(), |s| format!("{s} busy")),
            format!("{}x{}", m.batches, m.hints_per_batch),
            format!("{}/{}", m.groups, m.disturbed_groups),
            fmt_num(m.ticks_per_hint.min),
            fmt_num(m.ticks_per_hint.median),
            fmt_num(m.figure_ticks()),
            m.group_spread_pct
                .map_or("-".into(), |g| format!("{}%", fmt_num(g))),
            fmt_num(m.figure_ns()),
            m.core_cycles_per_hint.map_or("unavailable".into(), fmt_num),
        ]);
    }
    tab
}

/// Why there is no figure and what to do instead.
fn no_figure_lines(r: &ProbeReport) -> String {
    format!(
        "no figure: {}.\nprobe again when the host is quieter (load average {}, steal {}), \
         or use a probe saved on a quiet host (`spin --probe FILE`).\n",
        r.invalid_reason
            .as_deref()
            .unwrap_or("the host is too busy"),
        r.load.loadavg_1m.map_or("-".into(), fmt_num),
        r.load
            .steal_pct
            .map_or("-".into(), |p| format!("{}%", fmt_num(p)))
    )
}

/// The figure against the baseline, the reference table and MariaDB's startup rule.
fn figure_lines(r: &ProbeReport) -> String {
    let s = &r.summary;
    let mut out = format!(
        "one {} here takes {} ({} {} ticks{}): {}x the {} baseline of {} per hint.\n",
        s.hint.name().to_uppercase(),
        fmt_ns(s.ns_per_hint),
        fmt_num(s.ticks_per_hint),
        r.counter.name,
        s.core_cycles_per_hint
            .map_or(String::new(), |cy| format!(", {} core cycles", fmt_num(cy))),
        fmt_num(s.vs_baseline),
        crate::spin::cpus::baseline().microarch,
        fmt_ns(crate::spin::cpus::baseline().ns_per_hint()),
    );
    if let Some(refc) = r.cpu.reference_hint_cycles {
        out += &format!(
            "the reference table says {} cycles per hint for this microarchitecture.\n",
            fmt_num(refc)
        );
    }
    let m = &r.mariadb_rule;
    out += &format!("MariaDB's startup rule: {}\n", m.explanation);
    if m.applies {
        out += &format!(
            "  so innodb_spin_wait_delay=4 spins {} hints per round = {} here.\n",
            crate::report::fmt_count(m.hints_per_round_per_unit_delay * 4.0),
            fmt_ns(m.hints_per_round_per_unit_delay * 4.0 * s.ns_per_hint)
        );
    }
    out
}
