//! Host facts read from /proc and /sys when the server runs on this machine, and
//! `--host-facts FILE` (a JSON HostFacts, e.g. from another host's snapshot).

use std::path::Path;

use super::snapshot::{CpuTicks, HostFacts, ProcCpu};
use crate::error::{Error, Result};
use crate::spin::model::{Arch, CpuModel};

/// Parse the `cpu` line of /proc/stat.
pub fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTicks {
        user: g(0),
        nice: g(1),
        system: g(2),
        idle: g(3),
        iowait: g(4),
        irq: g(5),
        softirq: g(6),
        steal: g(7),
    })
}

/// (voluntary, nonvoluntary) from /proc/PID/status.
pub fn parse_ctxt(text: &str) -> Option<(u64, u64)> {
    let get = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    Some((
        get("voluntary_ctxt_switches")?,
        get("nonvoluntary_ctxt_switches")?,
    ))
}

/// Static facts of this machine.
pub fn local_static() -> HostFacts {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let ci = crate::cpu::cpuinfo::parse_cpuinfo(&read("/proc/cpuinfo").unwrap_or_default());
    let is_arm = ci.is_arm();
    let opt = |x: u32| (x != 0).then_some(x);
    HostFacts {
        source: "local".to_string(),
        arch: std::env::consts::ARCH.to_string(),
        kernel_release: read("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
        cpu_model_name: Some(ci.model_name.clone()).filter(|s| !s.is_empty()),
        cpu_vendor: Some(ci.vendor.clone()).filter(|s| !s.is_empty()),
        cpu_family: (!is_arm).then_some(ci.family),
        cpu_model: (!is_arm).then_some(ci.model),
        cpu_stepping: (!is_arm).then_some(ci.stepping),
        arm_implementer: opt(ci.arm_implementer),
        arm_part: opt(ci.arm_part),
        online_cpus: std::thread::available_parallelism()
            .ok()
            .map(|n| n.get() as u32),
        cache_line_bytes: read("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
            .and_then(|s| s.trim().parse().ok()),
        ..Default::default()
    }
}

/// Host facts from a probe report (`spinscope probe --save FILE`, or a quick live probe). The
/// spin figures are the probe's one CPU model (`cpu::cpu_model`), so `doctor --host-facts
/// FILE` prices the CPU exactly as `spin --probe FILE` does (same hint time, the same TSC
/// figure for MariaDB's multiplier, the same clock).
pub fn from_probe(r: &crate::cpu::ProbeReport, source: &str) -> HostFacts {
    let opt = |x: u32| (x != 0).then_some(x);
    let is_arm = r.cpu.arm_implementer != 0;
    let m = crate::cpu::cpu_model(r, source);
    HostFacts {
        source: source.to_string(),
        arch: r.host.arch.clone(),
        kernel_release: r.host.kernel_release.clone(),
        cpu_model_name: Some(r.cpu.model_name.clone()).filter(|s| !s.is_empty()),
        cpu_vendor: Some(r.cpu.vendor.clone()).filter(|s| !s.is_empty()),
        cpu_family: (!is_arm).then_some(r.cpu.family),
        cpu_model: (!is_arm).then_some(r.cpu.model),
        cpu_stepping: (!is_arm).then_some(r.cpu.stepping),
        arm_implementer: opt(r.cpu.arm_implementer),
        arm_part: opt(r.cpu.arm_part),
        online_cpus: Some(r.topology.threads as u32).filter(|&n| n > 0),
        cache_line_bytes: r.cache_line_bytes,
        ns_per_hint: Some(m.ns_per_hint),
        tsc_ticks_per_hint: m.tsc_ticks_per_hint,
        cpu_ghz: m.ghz,
        ns_per_hint_noise_pct: Some(m.noise_pct),
        ..Default::default()
    }
}

/// Static facts of this machine plus its spin hint's figure (this host's saved probe, else a
/// quick probe of about 0.5 s, see `cpu::saved`); without it (and saying why as a note to
/// `shown`) when there is neither.
pub fn local_with_probe(shown: &mut dyn crate::meter::Meter) -> HostFacts {
    let mut h = local_static();
    match crate::cpu::saved::this_host() {
        Ok(fig) => {
            if let Some(n) = &fig.note {
                shown.note(n);
            }
            let source = if fig.saved_age_s.is_some() {
                "local (saved probe)"
            } else {
                "local (quick probe)"
            };
            let p = from_probe(&fig.report, source);
            h.source = p.source;
            h.ns_per_hint = p.ns_per_hint;
            h.tsc_ticks_per_hint = p.tsc_ticks_per_hint;
            h.cpu_ghz = p.cpu_ghz;
            h.ns_per_hint_noise_pct = p.ns_per_hint_noise_pct;
        }
        Err(e) => shown.note(&format!(
            "spin hint not measured ({e}); using the reference table"
        )),
    }
    h
}

fn measured_label(source: &str) -> String {
    match source {
        "local (quick probe)" => "quick probe of the server's host".to_string(),
        "local (saved probe)" => "saved probe of the server's host".to_string(),
        "local" => "probe of the server's host".to_string(),
        other => format!("measured: {other}"),
    }
}

/// The CPU the spin model prices for host facts, when known: the measured figures (from a
/// probe through `cpu::cpu_model`, see [`from_probe`]) or else the reference table's CPU.
pub fn cpu_model(h: &HostFacts) -> Option<CpuModel> {
    let arch = match h.arch.as_str() {
        "aarch64" => Arch::Aarch64,
        "x86_64" => Arch::X86_64,
        _ => return None,
    };
    let ident = crate::spin::cpus::CpuIdent {
        vendor: h.cpu_vendor.clone().unwrap_or_default(),
        family: h.cpu_family.unwrap_or(0),
        model: h.cpu_model.unwrap_or(0),
        stepping: h.cpu_stepping.unwrap_or(0),
        arm_implementer: h.arm_implementer.unwrap_or(0),
        arm_part: h.arm_part.unwrap_or(0),
    };
    let reference = crate::spin::cpus::identify(&ident);
    match (h.ns_per_hint, reference) {
        (Some(ns), r) => Some(CpuModel {
            label: measured_label(&h.source),
            arch,
            ns_per_hint: ns,
            tsc_ticks_per_hint: h.tsc_ticks_per_hint,
            // The probe's clock when the facts carry it, else the reference table's.
            ghz: h.cpu_ghz.or(r.map(|r| r.typical_ghz)),
            approximate: false,
            noise_pct: h
                .ns_per_hint_noise_pct
                .unwrap_or(crate::spin::model::PROBE_NOISE_FLOOR_PCT)
                .max(crate::spin::model::PROBE_NOISE_FLOOR_PCT),
        }),
        (None, Some(r)) => Some(CpuModel::from_reference(r)),
        (None, None) => None,
    }
}

/// The server's pid from its pid file, if it is readable here and the process exists.
pub fn server_pid(pid_file: &str) -> Option<(u32, String)> {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some((pid, comm.trim().to_string()))
}

/// Counters sampled at the start or end of the window.
pub fn counters(pid: Option<u32>) -> (Option<CpuTicks>, Option<(u64, u64)>) {
    let stat = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| parse_proc_stat(&t));
    // /proc/PID/status counts only the main thread: sum over all threads.
    let ctxt = pid.and_then(|p| {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task")).ok()?;
        let mut sum = (0u64, 0u64);
        for t in tasks.flatten() {
            if let Some((v, n)) = std::fs::read_to_string(t.path().join("status"))
                .ok()
                .and_then(|s| parse_ctxt(&s))
            {
                sum.0 += v;
                sum.1 += n;
            }
        }
        Some(sum)
    });
    (stat, ctxt)
}

/// utime and stime (fields 14 and 15, clock ticks, all threads) of a /proc/PID/stat line. The
/// command name in parentheses may hold spaces and parentheses: fields are counted after the
/// last ')'.
pub fn parse_pid_stat(text: &str) -> Option<ProcCpu> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    Some(ProcCpu {
        utime: f.get(11)?.parse().ok()?,
        stime: f.get(12)?.parse().ok()?,
    })
}

/// The server process's own CPU time so far, when its /proc entry is readable here.
pub fn process_cpu(pid: Option<u32>) -> Option<ProcCpu> {
    let text = std::fs::read_to_string(format!("/proc/{}/stat", pid?)).ok()?;
    parse_pid_stat(&text)
}

/// Clock ticks per second of /proc's CPU counters (USER_HZ).
pub fn clock_ticks_per_s() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (t > 0).then_some(t as u64)
}

/// Read `--host-facts FILE`: a HostFacts JSON, or a snapshot whose `host` is used.
pub fn load(path: &Path) -> Result<HostFacts> {
    let text = crate::files::read_capped(path, crate::files::JSON_INPUT_CAP, "--host-facts")?;
    let mut v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::bad_input(format!("--host-facts {}: not JSON ({e})", path.display()))
    })?;
    crate::secret::scrub_json(&mut v);
    if v.get("schema").and_then(|s| s.as_str()) == Some(crate::cpu::SCHEMA) {
        let r = crate::cpu::parse_probe(&text)
            .map_err(|e| Error::bad_input(format!("--host-facts {}: {e}", path.display())))?;
        return Ok(from_probe(&r, &path.display().to_string()));
    }
    let v = match v.get("host") {
        Some(h) if h.is_object() => h.clone(),
        _ => v,
    };
    let mut h: HostFacts = serde_json::from_value(v).map_err(|e| {
        Error::bad_input(format!(
            "--host-facts {}: not host facts ({e}); give a snapshot or host-facts JSON",
            path.display()
        ))
    })?;
    h.source = path.display().to_string();
    // Counters of another host's window say nothing about this window.
    h.cpu_before = None;
    h.cpu_after = None;
    h.server_ctxt_before = None;
    h.server_ctxt_after = None;
    h.server_cpu_before = None;
    h.server_cpu_after = None;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_parsers() {
        let t = parse_proc_stat("cpu  10 1 5 100 2 0 3 0 0 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!((t.user, t.system, t.idle, t.softirq), (10, 5, 100, 3));
        assert_eq!(
            parse_ctxt(
                "Name:\tmariadbd\nvoluntary_ctxt_switches:\t42\nnonvoluntary_ctxt_switches:\t7\n"
            ),
            Some((42, 7))
        );
        assert_eq!(parse_proc_stat("garbage"), None);
        // A comm with a space and a parenthesis; utime 1234, stime 56.
        let line = "31271 (my (sql)d) S 1 31271 31271 0 -1 4194560 9000 0 3 0 1234 56 0 0 20 0 40 0 100 0 0";
        assert_eq!(
            parse_pid_stat(line),
            Some(ProcCpu {
                utime: 1234,
                stime: 56
            })
        );
        assert_eq!(parse_pid_stat("1 (x) S 1 2"), None);
        let own = process_cpu(Some(std::process::id())).expect("own /proc/PID/stat");
        assert!(own.utime + own.stime < 1_000_000_000);
    }
}
