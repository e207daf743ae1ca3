//! Terminal rendering of the `spinscope.probe/1` document (`probe`'s human report).

use crate::cpu::ProbeReport;
use crate::units::{fmt_count, fmt_ns, fmt_num, table};

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
    let mut tab = table(&[
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

/// Without a PMU, the core clock the figure was taken at (the chain of dependent adds) and the
/// figure in core cycles: the cycles are the core's own; the ns follow its clock, which a busy
/// host lowers (measured: 34.3 cycles per PAUSE at 3.82-4.10 GHz on one guest, 8.37-8.99 ns).
fn clock_line(r: &ProbeReport) -> String {
    if r.summary.core_cycles_per_hint.is_some() {
        return String::new();
    }
    let Some((ghz, cycles)) = r
        .measurements
        .first()
        .and_then(|m| Some((m.core_ghz?, m.chain_cycles_per_hint?)))
    else {
        return String::new();
    };
    let hint = r.summary.hint.name().to_uppercase();
    let mut out = format!(
        "  that is {} core cycles at the {} GHz the core ran at during the probe (timed with a \
         chain of dependent adds); a lower core clock (a busy host's turbo) makes each {hint} \
         longer in ns, not in cycles.\n",
        fmt_num(cycles),
        fmt_num(ghz),
    );
    let spread = r.measurements.first().and_then(|m| m.clock_spread_pct);
    if let Some(sp) = spread.filter(|sp| *sp > 5.0) {
        let slow = ghz / (1.0 + sp / 100.0);
        out += &format!(
            "  the clock moved during the probe: at the slowest {} GHz seen, one {hint} took {}.\n",
            fmt_num(slow),
            fmt_ns(cycles / slow)
        );
    }
    out
}

/// This host's probes so far (the saved figures), when there were earlier ones.
fn runs_line(r: &ProbeReport) -> String {
    let Some(s) = &r.runs_on_this_host else {
        return String::new();
    };
    let since = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(s.since_unix_s),
    );
    let pct = |x: f64| (x - s.ns_median) / s.ns_median * 100.0;
    let mut out = format!(
        "run to run: {} probes of this host since {since}: {} - {} (median {}, {:+.1}% .. {:+.1}%)",
        s.runs,
        fmt_ns(s.ns_min),
        fmt_ns(s.ns_max),
        fmt_ns(s.ns_median),
        pct(s.ns_min),
        pct(s.ns_max)
    );
    if let (Some(a), Some(b)) = (s.cycles_min, s.cycles_max) {
        out += &format!("; {} - {} core cycles", fmt_num(a), fmt_num(b));
    }
    if let (Some(a), Some(b)) = (s.ghz_min, s.ghz_max) {
        out += &format!(" at {} - {} GHz", fmt_num(a), fmt_num(b));
    }
    out + ".\n"
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
    out += &clock_line(r);
    out += &runs_line(r);
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
            fmt_count(m.hints_per_round_per_unit_delay * 4.0),
            fmt_ns(m.hints_per_round_per_unit_delay * 4.0 * s.ns_per_hint)
        );
    }
    out
}
