//! CPU probe: spin-hint latency, counter calibration, topology, caches, hypervisor, kernel,
//! and what MariaDB's startup rule would conclude here.
//!
//! - `arch`: per-architecture counter reads and unrolled hint batches (touches the hardware).
//! - `measure`: clocks, pinning, the cycle counter, the SMT load (touches the OS).
//! - `calc`: pure arithmetic from raw ticks to statistics.
//! - `cpuinfo`, `topology`: pure parsers of /proc and /sys text plus thin readers.
//!
//! The result is a [`ProbeReport`] (`spinscope.probe/1`). `spin --probe FILE` reads it back
//! through [`load_probe_file`] and [`cpu_model`]; `doctor --host-facts FILE` through
//! [`parse_probe`] and `server::host::from_probe`.

pub mod arch;
pub mod calc;
pub mod cpuinfo;
pub mod measure;
pub mod saved;
pub mod source;
pub mod timing;
pub mod topology;

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::analysis::stats::Summary;
use crate::error::{Error, Result};
use crate::spin::cpus::{self, Hint};
use crate::spin::model::{Arch, CpuModel};

pub const SCHEMA: &str = "spinscope.probe/1";

/// Timed batches of the default probe (1 us each, in 40 groups of 50). docs/PERFORMANCE.md
/// ("probe: under 100 ms", "issue 25: the probe on a busy host") has the measurements.
pub const DEFAULT_BATCHES: usize = 2000;

/// Series measured at most per CPU and hint when the host stretches the groups of batches.
pub const MAX_ATTEMPTS: usize = 2;

/// How much measuring to do.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// CPUs to measure, pinned one after another; None = the current CPU only.
    pub cpus: Option<Vec<usize>>,
    /// Also measure each CPU with its SMT sibling busy.
    pub smt_load: bool,
    /// Timed batches per CPU and hint.
    pub batches: usize,
    /// Target length of one batch in ns (short enough that few batches see an interrupt and
    /// a hypervisor does not see a pause loop, long enough that the timer's cost is small;
    /// converted to ticks after calibration, since the aarch64 counter ticks 100x slower).
    pub batch_ns: f64,
    /// Spinning before the timed batches, in ms (see `measure::time_hint`).
    pub warmup_ms: f64,
    /// Counter calibration window (`measure::CALIBRATION_WINDOWS` are taken).
    pub calibration: Duration,
    /// Trials of MariaDB's startup measurement.
    pub mariadb_trials: usize,
    /// Try the hardware cycle counter.
    pub cycles: bool,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            cpus: None,
            smt_load: false,
            batches: DEFAULT_BATCHES,
            batch_ns: 1_000.0,
            warmup_ms: 15.0,
            calibration: Duration::from_millis(1),
            mariadb_trials: 101,
            cycles: true,
        }
    }
}

impl ProbeOptions {
    /// A fast probe for `spin` and `doctor` when no CPU was given: the default measurement with
    /// fewer MariaDB trials (about 50 ms).
    pub fn quick() -> Self {
        ProbeOptions {
            mariadb_trials: 31,
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    /// `x86_64` or `aarch64` (or another target, where hints cannot be timed).
    pub arch: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuIdentity {
    pub vendor: String,
    pub model_name: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    pub arm_implementer: u32,
    pub arm_part: u32,
    /// The reference table's key and microarchitecture when the CPU is known to it.
    pub reference_key: Option<String>,
    pub microarch: Option<String>,
    /// The table's cycles per hint for this microarchitecture (for comparison only).
    pub reference_hint_cycles: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyInfo {
    pub sockets: usize,
    pub cores: usize,
    pub threads: usize,
    pub smt: bool,
    pub numa_nodes: Option<usize>,
    /// Online logical CPUs as a kernel list (`0-3`).
    pub online: String,
    /// False when /sys and /proc gave no placement and one core per CPU was assumed.
    pub exact: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hypervisor {
    pub present: bool,
    /// CPUID leaf 0x40000000 vendor (e.g. `KVMKVMKVM`) or /sys/hypervisor/type.
    pub vendor: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterInfo {
    /// `TSC` on x86_64, `CNTVCT_EL0` on aarch64.
    pub name: String,
    /// Ticks per ns, calibrated against CLOCK_MONOTONIC_RAW.
    pub ghz: f64,
    /// The architecture's published rate where there is one (CNTFRQ_EL0), GHz.
    pub nominal_ghz: Option<f64>,
    /// x86 flags `constant_tsc` and `nonstop_tsc` (an invariant TSC), when known.
    pub invariant: Option<bool>,
    pub calibration_ms: f64,
}

/// One series: a hint on one CPU, idle or with its SMT sibling busy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HintMeasurement {
    pub cpu: usize,
    pub hint: Hint,
    /// The busy SMT sibling, when this series ran under `--smt-load`.
    pub smt_sibling_busy: Option<usize>,
    pub batches: usize,
    pub hints_per_batch: u64,
    /// Cost of the two serialized counter reads, subtracted from each batch.
    pub overhead_ticks: f64,
    pub ticks_per_hint: Summary,
    pub ns_per_hint: Summary,
    /// Core cycles per hint from the hardware counter; None with the reason in `cycles_note`.
    pub core_cycles_per_hint: Option<f64>,
    pub cycles_note: Option<String>,
    /// Groups of consecutive batches kept (no context switch or migration inside them).
    #[serde(default)]
    pub groups: usize,
    /// Groups measured again because a context switch or a migration landed inside them.
    #[serde(default)]
    pub disturbed_groups: usize,
    /// Spread of the groups' medians, (p75 - p25) / p25 in percent: how far the host moved
    /// the figure during this series.
    #[serde(default)]
    pub group_spread_pct: Option<f64>,
    /// The series' figure: the lower quartile of the groups' medians (contention only adds
    /// time), in ticks and in ns at the calibrated rate. Absent in probes saved before it.
    #[serde(default)]
    pub estimate_ticks_per_hint: Option<f64>,
    #[serde(default)]
    pub estimate_ns_per_hint: Option<f64>,
    /// Series measured to get this one (more than 1 when the host stretched the first).
    #[serde(default)]
    pub attempts: usize,
    /// The core clock in GHz at which the figure holds (the fast clock of the groups, timed
    /// with a chain of dependent adds), and how far the groups' clocks spread (p90 over p10 of
    /// the groups, percent).
    #[serde(default)]
    pub core_ghz: Option<f64>,
    #[serde(default)]
    pub clock_spread_pct: Option<f64>,
    /// Core cycles per hint from that clock (no PMU needed).
    #[serde(default)]
    pub chain_cycles_per_hint: Option<f64>,
}

impl HintMeasurement {
    /// The figure in ticks: the estimate where recorded, else the batches' median.
    pub fn figure_ticks(&self) -> f64 {
        self.estimate_ticks_per_hint
            .unwrap_or(self.ticks_per_hint.median)
    }

    /// The figure in ns, consistent with [`Self::figure_ticks`].
    pub fn figure_ns(&self) -> f64 {
        self.estimate_ns_per_hint.unwrap_or(self.ns_per_hint.median)
    }
}

/// What the host did while the probe ran: the reasons a figure may not stand.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLoad {
    /// 1-minute load average at the start.
    pub loadavg_1m: Option<f64>,
    /// Share of all CPU time a hypervisor gave to others during the probe (/proc/stat steal).
    pub steal_pct: Option<f64>,
}

/// The probe's verdict in one place: what `spin` and `doctor` use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub hint: Hint,
    /// Median over measured CPUs (idle series) of each CPU's figure (the lower quartile of its
    /// groups' medians); `ticks_per_hint` is the same figure in ticks (ns x counter GHz).
    pub ns_per_hint: f64,
    pub ticks_per_hint: f64,
    pub core_cycles_per_hint: Option<f64>,
    /// Spread of the per-CPU medians, percent of the lowest (hybrid CPUs), when >1 CPU.
    pub cpu_spread_pct: Option<f64>,
    /// How many times the reference baseline (Broadwell-class, 10 cycles per PAUSE) this is.
    pub vs_baseline: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub schema: String,
    pub tool_version: String,
    pub host: HostInfo,
    pub cpu: CpuIdentity,
    pub topology: TopologyInfo,
    pub caches: Vec<topology::CacheInfo>,
    pub cache_line_bytes: Option<u32>,
    pub hypervisor: Hypervisor,
    pub counter: CounterInfo,
    pub measurements: Vec<HintMeasurement>,
    pub summary: ProbeSummary,
    pub mariadb_rule: calc::MariadbRule,
    pub notes: Vec<String>,
    pub elapsed_ms: f64,
    /// False when the host was too busy for a figure within the stated noise: the summary's
    /// numbers are then not an answer, and `invalid_reason` says why.
    #[serde(default = "yes")]
    pub valid: bool,
    #[serde(default)]
    pub invalid_reason: Option<String>,
    #[serde(default)]
    pub load: HostLoad,
    /// The figures of this host's probes so far (this one included), from the saved host
    /// figure (`saved`); absent on a first probe, an invalid one or another host's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_on_this_host: Option<saved::RunSpread>,
}

fn yes() -> bool {
    true
}

const PLE_NOTE: &str = "in a VM, a long PAUSE loop can trigger a pause-loop exit to the \
                        hypervisor, which may deschedule the vCPU: long spins cost more than \
                        the per-hint latency measured here";

fn identity(info: &cpuinfo::CpuInfo) -> CpuIdentity {
    let r = cpus::identify(&info.ident());
    let vendor = if info.vendor.is_empty() && info.is_arm() {
        cpuinfo::arm_implementer_name(info.arm_implementer)
    } else {
        info.vendor.clone()
    };
    CpuIdentity {
        vendor,
        model_name: info.model_name.clone(),
        family: info.family,
        model: info.model,
        stepping: info.stepping,
        arm_implementer: info.arm_implementer,
        arm_part: info.arm_part,
        reference_key: r.map(|r| r.key.to_string()),
        microarch: r.map(|r| r.microarch.to_string()),
        reference_hint_cycles: r.map(|r| r.hint_cycles),
    }
}

fn hypervisor(info: &cpuinfo::CpuInfo) -> Hypervisor {
    let cpuid = arch::hypervisor_cpuid_vendor().filter(|s| !s.is_empty());
    let sys = std::fs::read_to_string("/sys/hypervisor/type")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let present = cpuid.is_some() || sys.is_some() || info.has_flag("hypervisor");
    Hypervisor {
        present,
        vendor: cpuid.or(sys),
        note: present.then(|| PLE_NOTE.to_string()),
    }
}

/// Check a `--cpus` selection against the CPUs this process may run on.
pub fn resolve_cpus(spec: &str, allowed: &[usize]) -> Result<Vec<usize>> {
    let spec_t = spec.trim();
    if spec_t.eq_ignore_ascii_case("all") {
        return Ok(allowed.to_vec());
    }
    let list = topology::parse_cpu_list(spec_t).map_err(|e| {
        Error::bad_input(format!(
            "--cpus {spec:?}: {e}; give `all` or a list such as 0,2-3"
        ))
    })?;
    if list.is_empty() {
        return Err(Error::bad_input(format!(
            "--cpus {spec:?}: no CPU given; give `all` or a list such as 0,2-3"
        )));
    }
    if let Some(bad) = list.iter().find(|c| !allowed.contains(c)) {
        return Err(Error::bad_input(format!(
            "--cpus {spec:?}: CPU {bad} is not available to this process (available: {})",
            topology::format_cpu_list(allowed)
        )));
    }
    Ok(list)
}

/// [`resolve_cpus`] against this process's affinity mask (empty when it cannot be read).
pub fn resolve_cpus_here(spec: &str) -> Result<Vec<usize>> {
    let allowed = measure::get_affinity()
        .map(|s| measure::cpus_in(&s))
        .unwrap_or_default();
    resolve_cpus(spec, &allowed)
}

fn measure_series(
    cpu: usize,
    hint: Hint,
    sibling: Option<usize>,
    ghz: f64,
    o: &ProbeOptions,
) -> Result<HintMeasurement> {
    let mut best: Option<HintMeasurement> = None;
    for attempt in 1..=MAX_ATTEMPTS {
        let mut m = measure_series_once(cpu, hint, sibling, ghz, o)?;
        m.attempts = attempt;
        let wanted = o.batches.div_ceil(measure::group_size(o.batches)).max(1);
        let ok = calc::judge(
            m.groups,
            wanted,
            m.group_spread_pct.unwrap_or(f64::NAN),
            m.figure_ticks(),
            None,
        )
        .is_ok();
        let better = best.as_ref().is_none_or(|b| {
            m.group_spread_pct.unwrap_or(f64::INFINITY)
                < b.group_spread_pct.unwrap_or(f64::INFINITY)
        });
        if better {
            best = Some(m);
        }
        if ok {
            break;
        }
    }
    if let Some(b) = best.as_mut() {
        b.attempts = b.attempts.max(1);
    }
    best.ok_or_else(|| Error::runtime("probe: no series measured"))
}

fn measure_series_once(
    cpu: usize,
    hint: Hint,
    sibling: Option<usize>,
    ghz: f64,
    o: &ProbeOptions,
) -> Result<HintMeasurement> {
    let warmup = (o.warmup_ms * 1e6 * ghz) as u64;
    let gap = (measure::BATCH_GAP_NS * ghz).ceil() as u64;
    let s =
        measure::time_hint(hint, o.batches, o.batch_ns * ghz, warmup, gap).ok_or_else(|| {
            Error::runtime(format!(
                "timing {} is not supported on this architecture",
                hint.name()
            ))
        })?;
    let oh = calc::overhead(&s.overhead);
    let hints = s.iters as u64 * arch::UNROLL as u64;
    let per = calc::per_hint(&s.batches, oh, hints);
    let (ticks, ns) = calc::summarize_hint(&per, ghz).ok_or_else(|| {
        Error::runtime(format!(
            "every batch of {} on CPU {cpu} came out below the timer's own cost or was \
             interrupted by a context switch; the counter is not usable for timing here",
            hint.name()
        ))
    })?;
    let fig = calc::series_figure(&s.groups, &s.pair_clocks, oh, hints);
    let (cycles, note) = if o.cycles {
        match measure::cycles_per_hint(hint, s.iters, 31) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(format!("core cycles unavailable: {e}"))),
        }
    } else {
        (None, Some("core cycles not measured".into()))
    };
    Ok(HintMeasurement {
        cpu,
        hint,
        smt_sibling_busy: sibling,
        batches: per.len(),
        hints_per_batch: hints,
        overhead_ticks: oh,
        ticks_per_hint: ticks,
        ns_per_hint: ns,
        core_cycles_per_hint: cycles,
        cycles_note: note,
        groups: s.groups.len(),
        disturbed_groups: s.disturbed_groups,
        group_spread_pct: fig.map(|f| f.spread_pct),
        estimate_ticks_per_hint: fig.map(|f| f.ticks),
        estimate_ns_per_hint: fig.map(|f| f.ticks / ghz),
        attempts: 1,
        core_ghz: fig.and_then(|f| f.cycles_per_tick).map(|c| c * ghz),
        clock_spread_pct: fig.and_then(|f| f.clock_spread_pct),
        chain_cycles_per_hint: fig.and_then(|f| f.cycles),
    })
}

fn summarize_report(ms: &[HintMeasurement], hint: Hint) -> Option<ProbeSummary> {
    let idle: Vec<&HintMeasurement> = ms
        .iter()
        .filter(|m| m.hint == hint && m.smt_sibling_busy.is_none())
        .collect();
    let med = |f: &dyn Fn(&HintMeasurement) -> f64| {
        let v: Vec<f64> = idle.iter().map(|m| f(m)).collect();
        crate::analysis::stats::summarize(&v).map(|s| s.median)
    };
    let ns = med(&|m| m.figure_ns())?;
    let ticks = med(&|m| m.figure_ticks())?;
    let cyc: Vec<f64> = idle.iter().filter_map(|m| m.core_cycles_per_hint).collect();
    let cycles = crate::analysis::stats::summarize(&cyc).map(|s| s.median);
    let spread = calc::spread_pct(&idle.iter().map(|m| m.figure_ns()).collect::<Vec<_>>());
    Some(ProbeSummary {
        hint,
        ns_per_hint: ns,
        ticks_per_hint: ticks,
        core_cycles_per_hint: cycles,
        cpu_spread_pct: spread,
        vs_baseline: ns / cpus::baseline().ns_per_hint(),
    })
}

/// Run the probe on this machine. `progress` is called before each series.
pub fn probe(o: &ProbeOptions, progress: &mut dyn FnMut(&str)) -> Result<ProbeReport> {
    if !arch::SUPPORTED {
        return Err(Error::runtime(format!(
            "probe: timing spin hints is not supported on {}; use `spin --cpu NAME` or \
             `--pause-ns`",
            std::env::consts::ARCH
        )));
    }
    let t0 = Instant::now();
    let steal0 = measure::steal_jiffies();
    let loadavg_1m = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok());
    let mut notes = Vec::new();
    let info =
        cpuinfo::parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default());
    let online = topology::read_online_cpus(&info.processors);
    let (entries, exact) = topology::read_topology(&online, &info.processors);
    let topo = topology::summarize(&entries);
    let (hostname, kernel) = measure::host_strings();

    let orig = measure::get_affinity();
    let allowed = orig
        .as_ref()
        .map(measure::cpus_in)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| online.clone());
    let targets = match &o.cpus {
        Some(v) => v.clone(),
        None => vec![measure::current_cpu().unwrap_or(allowed[0])],
    };
    let caches = topology::read_caches(targets[0]);
    let cache_line = topology::read_cache_line(&caches);

    progress("calibrating the counter against CLOCK_MONOTONIC_RAW");
    // Calibrate even where the architecture publishes a rate (CNTFRQ_EL0): firmware can set it
    // wrong, and the two are reported side by side.
    let (ghz, cal_ms) = measure::calibrate(o.calibration).ok_or_else(|| {
        Error::runtime("probe: cannot calibrate the counter (CLOCK_MONOTONIC_RAW unreadable)")
    })?;
    let nominal = arch::counter_nominal_hz().map(|hz| hz as f64 / 1e9);
    let invariant = (!info.is_arm() && !info.flags.is_empty())
        .then(|| info.has_flag("constant_tsc") && info.has_flag("nonstop_tsc"));
    if invariant == Some(false) {
        notes.push(
            "the TSC is not invariant (constant_tsc/nonstop_tsc missing): ns per hint may be off \
             when the core clock changes"
                .into(),
        );
    }

    let base = Series {
        cpu: targets[0],
        ghz,
        o,
        entries: &entries,
        allowed: &allowed,
        smt: topo.smt,
    };
    let rounds = measure_rounds(&targets, base, &mut notes, progress);
    if let Some(set) = &orig {
        measure::set_affinity(set);
    }
    let Rounds {
        measurements,
        trials,
        verdict,
    } = rounds?;

    let hint = arch::primary_hint();
    let summary = summarize_report(&measurements, hint)
        .ok_or_else(|| Error::runtime("probe: no usable measurement of the spin hint"))?;
    let steal_pct = match (steal0, measure::steal_jiffies()) {
        (Some((s0, a0)), Some((s1, a1))) if a1 > a0 => {
            Some(s1.saturating_sub(s0) as f64 / (a1 - a0) as f64 * 100.0)
        }
        _ => None,
    };
    notes.extend(measurement_notes(&measurements, &summary, steal_pct));
    let hv = hypervisor(&info);
    let ident = identity(&info);
    if ident.reference_key.is_none() {
        notes.push(format!(
            "this CPU (vendor {:?}, family {} model {}) is not in the reference table; the \
             measured figures stand on their own",
            ident.vendor, ident.family, ident.model
        ));
    }
    Ok(ProbeReport {
        schema: SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        host: HostInfo {
            hostname,
            kernel_release: kernel,
            arch: std::env::consts::ARCH.into(),
        },
        cpu: ident,
        topology: TopologyInfo {
            sockets: topo.sockets,
            cores: topo.cores,
            threads: topo.threads,
            smt: topo.smt,
            numa_nodes: topology::read_numa_nodes(),
            online: topology::format_cpu_list(&online),
            exact,
        },
        caches,
        cache_line_bytes: cache_line,
        hypervisor: hv,
        counter: CounterInfo {
            name: arch::counter_name().into(),
            ghz,
            nominal_ghz: nominal,
            invariant,
            calibration_ms: cal_ms,
        },
        measurements,
        summary,
        mariadb_rule: calc::mariadb_rule(&trials),
        notes,
        elapsed_ms: t0.elapsed().as_secs_f64() * 1e3,
        valid: verdict.is_ok(),
        invalid_reason: verdict.err(),
        load: HostLoad {
            loadavg_1m,
            steal_pct,
        },
        runs_on_this_host: None,
    })
}

/// What the measurements themselves say about their figure: no cycle counter, CPUs that
/// differ, a moving core clock, a busy hypervisor.
fn measurement_notes(
    measurements: &[HintMeasurement],
    summary: &ProbeSummary,
    steal_pct: Option<f64>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(note) = measurements.iter().find_map(|m| m.cycles_note.clone()) {
        if summary.core_cycles_per_hint.is_none() {
            out.push(note);
        }
    }
    if let Some(sp) = summary.cpu_spread_pct {
        if sp > 10.0 {
            out.push(format!(
                "CPUs differ by {}% in ns per hint (hybrid cores, or a busy CPU): use --cpus \
                 with the server's CPUs",
                crate::units::fmt_num(sp)
            ));
        }
    }
    if let Some(m) = measurements
        .iter()
        .find(|m| m.clock_spread_pct.is_some_and(|c| c > 5.0))
    {
        out.push(format!(
            "the core clock moved {}% between groups on CPU {} (a busy SMT sibling on the host, \
             or a power limit): the figure is taken in core cycles and given at the fast clock \
             ({} GHz)",
            crate::units::fmt_num(m.clock_spread_pct.unwrap_or(0.0)),
            m.cpu,
            m.core_ghz.map_or("-".into(), crate::units::fmt_num)
        ));
    }
    if let Some(sp) = steal_pct.filter(|s| *s >= 5.0) {
        out.push(format!(
            "the hypervisor gave {}% of this machine's CPU time to others during the probe \
             (steal): the host is busy",
            crate::units::fmt_num(sp)
        ));
    }
    out
}

/// The last round's series, MariaDB's short measurement and the verdict over both.
struct Rounds {
    measurements: Vec<HintMeasurement>,
    trials: Vec<(u64, u64)>,
    verdict: std::result::Result<(), String>,
}

/// Every series (each retried on its own when its cycles spread, see `measure_series`), then
/// MariaDB's short measurement on the last CPU. That measurement is in ticks at whatever the
/// clock was in its few microseconds, so it does not judge the figure (it once refused whole
/// rounds on a quiet host whose clock moved, and re-measured them: 2.5-7.4 s, issue 34); a
/// note says when it disagrees. Leaves the thread pinned: the caller restores its affinity.
fn measure_rounds(
    targets: &[usize],
    base: Series<'_>,
    notes: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> Result<Rounds> {
    let o = base.o;
    let mut measurements = Vec::new();
    for &cpu in targets {
        Series { cpu, ..base }.measure(&mut measurements, notes, progress)?;
    }
    // The MariaDB rule runs pinned too (still on the last CPU).
    let trials = if o.mariadb_trials > 0 {
        progress("repeating MariaDB's startup PAUSE measurement");
        measure::mariadb_trials(o.mariadb_trials, 1)
    } else {
        Vec::new()
    };
    let verdict = judge_report(&measurements, arch::primary_hint(), o);
    if let Some(n) = mariadb_disagreement(&measurements, arch::primary_hint(), &trials) {
        notes.push(n);
    }
    Ok(Rounds {
        measurements,
        trials,
        verdict,
    })
}

/// A note when MariaDB's own short measurement (ticks per PAUSE) lies outside
/// [`calc::MARIADB_AGREEMENT`] of the figure's ticks at the fast clock.
fn mariadb_disagreement(
    ms: &[HintMeasurement],
    hint: Hint,
    trials: &[(u64, u64)],
) -> Option<String> {
    let m = calc::mariadb_rule(trials).median_ticks_per_pause?;
    let fig = ms
        .iter()
        .rev()
        .find(|m| m.hint == hint && m.smt_sibling_busy.is_none())?
        .figure_ticks();
    let r = m / fig;
    (fig > 0.0 && !(calc::MARIADB_AGREEMENT.0..=calc::MARIADB_AGREEMENT.1).contains(&r)).then(
        || {
            format!(
                "MariaDB's own short measurement read {} ticks per PAUSE, x{} the figure's {} at \
             the fast clock: the clock (or the host) was slower in its few microseconds; its \
             startup rule below is what a server starting at such a moment would decide",
                crate::units::fmt_num(m),
                crate::units::fmt_num(r),
                crate::units::fmt_num(fig)
            )
        },
    )
}

/// Where one CPU's series are measured, and what it needs to know to do so.
#[derive(Clone, Copy)]
struct Series<'a> {
    cpu: usize,
    ghz: f64,
    o: &'a ProbeOptions,
    entries: &'a [topology::CpuTopo],
    allowed: &'a [usize],
    smt: bool,
}

impl Series<'_> {
    /// Pin to the CPU and measure each hint, then (`--smt-load`) again with its SMT sibling
    /// busy where it has one this process may use.
    fn measure(
        &self,
        measurements: &mut Vec<HintMeasurement>,
        notes: &mut Vec<String>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<()> {
        let (cpu, ghz, o) = (self.cpu, self.ghz, self.o);
        if let Err(e) = measure::pin_to(cpu) {
            return Err(Error::runtime(format!("probe: {e}")));
        }
        for hint in arch::hints_to_measure() {
            progress(&format!("CPU {cpu}: timing {}", hint.name()));
            measurements.push(measure_series(cpu, hint, None, ghz, o)?);
            if !o.smt_load {
                continue;
            }
            match topology::smt_sibling(self.entries, cpu) {
                Some(sib) if self.allowed.contains(&sib) => {
                    progress(&format!(
                        "CPU {cpu}: timing {} with SMT sibling {sib} busy",
                        hint.name()
                    ));
                    let load = measure::BusyLoad::start(sib)
                        .map_err(|e| Error::runtime(format!("--smt-load: {e}")))?;
                    let m = measure_series(cpu, hint, Some(sib), ghz, o);
                    drop(load);
                    measurements.push(m?);
                }
                Some(sib) => {
                    let n = format!(
                        "--smt-load: CPU {cpu}'s sibling {sib} is not available to this \
                         process; measured without load"
                    );
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
                None => {
                    let n = format!(
                        "--smt-load: CPU {cpu} has no SMT sibling (SMT {}); measured without load",
                        if self.smt {
                            "is on but not for this CPU"
                        } else {
                            "is off or absent"
                        }
                    );
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether the summary stands: every idle series of the primary hint passes `calc::judge`
/// (enough undisturbed groups, their cycles within [`calc::MAX_GROUP_SPREAD_PCT`]).
fn judge_report(
    ms: &[HintMeasurement],
    hint: Hint,
    o: &ProbeOptions,
) -> std::result::Result<(), String> {
    let wanted = o.batches.div_ceil(measure::group_size(o.batches)).max(1);
    for m in ms
        .iter()
        .filter(|m| m.hint == hint && m.smt_sibling_busy.is_none())
    {
        calc::judge(
            m.groups,
            wanted,
            m.group_spread_pct.unwrap_or(f64::NAN),
            m.figure_ticks(),
            None,
        )
        .map_err(|e| {
            format!(
                "the host is too busy for a figure within {}% on CPU {} ({} series measured): \
                 {e}",
                calc::MAX_GROUP_SPREAD_PCT,
                m.cpu,
                m.attempts
            )
        })?;
    }
    Ok(())
}

/// A quick probe of the current CPU, for `spin` and `doctor` when no CPU is given. A probe the
/// host was too busy for is an error that says why and what to give instead.
pub fn probe_current_cpu_quick() -> Result<ProbeReport> {
    let r = probe(&ProbeOptions::quick(), &mut |_| {})?;
    if !r.valid {
        return Err(Error::runtime(format!(
            "the quick probe of this CPU gave no figure: {}; retry when the host is quieter, \
             or give --cpu NAME, --pause-ns NS or --probe FILE",
            r.invalid_reason
                .as_deref()
                .unwrap_or("the host is too busy")
        )));
    }
    Ok(r)
}

/// Read a probe saved with `probe --save FILE` (or `probe --json > FILE`). Anything unreadable,
/// not JSON or of another schema is bad input naming the file.
pub fn load_probe_file(path: &Path) -> Result<ProbeReport> {
    let text = crate::files::read_capped(path, crate::files::JSON_INPUT_CAP, "--probe")?;
    parse_probe(&text).map_err(|e| Error::bad_input(format!("--probe {}: {e}", path.display())))
}

/// Parse probe JSON text; the error says what is wrong with it.
pub fn parse_probe(text: &str) -> std::result::Result<ProbeReport, String> {
    let mut v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("not JSON ({e}); give a file written by `spinscope probe --save`"))?;
    crate::secret::scrub_json(&mut v);
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "schema {other:?} is not {SCHEMA}; give a file written by `spinscope probe --save`"
            ))
        }
        None => {
            return Err(format!(
                "no \"schema\" field: not a {SCHEMA} document; give a file written by \
                 `spinscope probe --save`"
            ))
        }
    }
    let r: ProbeReport =
        serde_json::from_value(v).map_err(|e| format!("malformed {SCHEMA} document ({e})"))?;
    if !r.valid {
        return Err(format!(
            "this probe gave no figure ({}); probe again on a quieter host",
            r.invalid_reason.as_deref().unwrap_or("marked invalid")
        ));
    }
    let s = &r.summary;
    if !(s.ns_per_hint.is_finite() && s.ns_per_hint > 0.0 && s.ns_per_hint < 1e6) {
        return Err(format!(
            "summary.ns_per_hint {} is not a plausible hint latency (0..1e6 ns)",
            s.ns_per_hint
        ));
    }
    if !(s.ticks_per_hint.is_finite() && s.ticks_per_hint >= 0.0) {
        return Err("summary.ticks_per_hint is not a finite, non-negative number".into());
    }
    Ok(r)
}

/// The spin model's view of a probe.
/// The noise interval of a probe's figure (idle series), see `spin::model::probe_noise_pct`.
pub fn noise_pct(r: &ProbeReport) -> f64 {
    crate::spin::model::probe_noise_pct(
        r.measurements
            .iter()
            .filter(|m| m.smt_sibling_busy.is_none())
            // The groups' spread where recorded (the figure is their lower quartile), else
            // the batches' IQR (probes saved before groups).
            .map(|m| {
                m.group_spread_pct
                    .map_or(m.ns_per_hint.iqr_pct, |g| 2.0 * g)
            }),
    )
}

pub fn cpu_model(r: &ProbeReport, label: &str) -> CpuModel {
    let arch = if r.host.arch == "aarch64" {
        Arch::Aarch64
    } else {
        Arch::X86_64
    };
    let s = &r.summary;
    // Core clock: from the cycle counter where it was read, else the TSC rate (servers' TSC
    // runs near the nominal clock), else unknown.
    let ghz = match s.core_cycles_per_hint {
        Some(c) if s.ns_per_hint > 0.0 => Some(c / s.ns_per_hint),
        _ if arch == Arch::X86_64 => Some(r.counter.ghz),
        _ => None,
    };
    CpuModel {
        label: label.to_string(),
        arch,
        ns_per_hint: s.ns_per_hint,
        // What decides MariaDB's M: its own (unserialized) measurement where the probe repeated
        // it, so `spin --probe` and `probe` agree; there is no TSC off x86.
        tsc_ticks_per_hint: (arch == Arch::X86_64).then(|| {
            r.mariadb_rule
                .median_ticks_per_pause
                .filter(|_| r.mariadb_rule.applies)
                .unwrap_or(s.ticks_per_hint)
        }),
        ghz: ghz.filter(|g| g.is_finite() && *g > 0.0),
        approximate: false,
        noise_pct: noise_pct(r),
    }
}

/// Human description of a probe for labels: `EPYC 7B13 (zen3), probe of host-a`.
pub fn describe(r: &ProbeReport) -> String {
    let host = r.host.hostname.as_deref().unwrap_or("unknown host");
    format!("{}, probe of {host}", describe_cpu(r))
}

/// The probed CPU in a few words: its name and, where known, the reference table's key.
pub fn describe_cpu(r: &ProbeReport) -> String {
    let name = if r.cpu.model_name.is_empty() {
        r.cpu.vendor.clone()
    } else {
        r.cpu.model_name.clone()
    };
    let arch = r
        .cpu
        .reference_key
        .as_deref()
        .map(|k| format!(" ({k})"))
        .unwrap_or_default();
    format!("{name}{arch}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::summarize;

    fn sample_report() -> ProbeReport {
        let m = HintMeasurement {
            cpu: 0,
            hint: Hint::Pause,
            smt_sibling_busy: None,
            batches: 3,
            hints_per_batch: 1024,
            overhead_ticks: 30.0,
            ticks_per_hint: summarize(&[63.0, 64.0, 65.0]).unwrap(),
            ns_per_hint: summarize(&[24.0, 24.5, 25.0]).unwrap(),
            core_cycles_per_hint: None,
            cycles_note: Some("core cycles unavailable".into()),
            groups: 3,
            disturbed_groups: 0,
            group_spread_pct: Some(2.0),
            estimate_ticks_per_hint: Some(64.0),
            estimate_ns_per_hint: Some(24.5),
            attempts: 1,
            core_ghz: None,
            clock_spread_pct: None,
            chain_cycles_per_hint: None,
        };
        ProbeReport {
            schema: SCHEMA.into(),
            tool_version: "0".into(),
            host: HostInfo {
                hostname: Some("h".into()),
                kernel_release: Some("6.1".into()),
                arch: "x86_64".into(),
            },
            cpu: CpuIdentity {
                vendor: "AuthenticAMD".into(),
                model_name: "AMD EPYC".into(),
                family: 25,
                model: 1,
                stepping: 1,
                arm_implementer: 0,
                arm_part: 0,
                reference_key: Some("zen3".into()),
                microarch: Some("Zen 3".into()),
                reference_hint_cycles: Some(64.0),
            },
            topology: TopologyInfo {
                sockets: 1,
                cores: 2,
                threads: 2,
                smt: false,
                numa_nodes: Some(1),
                online: "0-1".into(),
                exact: true,
            },
            caches: vec![],
            cache_line_bytes: Some(64),
            hypervisor: Hypervisor {
                present: true,
                vendor: Some("KVMKVMKVM".into()),
                note: Some(PLE_NOTE.into()),
            },
            counter: CounterInfo {
                name: "TSC".into(),
                ghz: 2.6,
                nominal_ghz: None,
                invariant: Some(true),
                calibration_ms: 75.0,
            },
            summary: summarize_report(std::slice::from_ref(&m), Hint::Pause).unwrap(),
            measurements: vec![m],
            mariadb_rule: calc::mariadb_rule(&[(1024, 1024)]),
            notes: vec![],
            elapsed_ms: 100.0,
            valid: true,
            invalid_reason: None,
            load: HostLoad::default(),
            runs_on_this_host: None,
        }
    }

    #[test]
    fn json_round_trip_and_model() {
        let r = sample_report();
        let text = serde_json::to_string(&r).unwrap();
        let back = parse_probe(&text).unwrap();
        assert_eq!(back, r);
        let m = cpu_model(&back, "x");
        assert_eq!(m.ns_per_hint, 24.5);
        assert_eq!(m.tsc_ticks_per_hint, Some(64.0));
        assert_eq!(m.ghz, Some(2.6));
        assert!((back.summary.vs_baseline - 24.5 / cpus::baseline().ns_per_hint()).abs() < 1e-9);
        assert_eq!(describe(&back), "AMD EPYC (zen3), probe of h");
    }

    #[test]
    fn summary_ignores_loaded_series_and_takes_median_of_cpus() {
        let mk = |cpu, ns: f64, sib| HintMeasurement {
            cpu,
            hint: Hint::Pause,
            smt_sibling_busy: sib,
            batches: 1,
            hints_per_batch: 32,
            overhead_ticks: 0.0,
            ticks_per_hint: summarize(&[ns * 2.0]).unwrap(),
            ns_per_hint: summarize(&[ns]).unwrap(),
            core_cycles_per_hint: Some(ns * 3.0),
            cycles_note: None,
            groups: 0,
            disturbed_groups: 0,
            group_spread_pct: None,
            estimate_ticks_per_hint: None,
            estimate_ns_per_hint: None,
            attempts: 1,
            core_ghz: None,
            clock_spread_pct: None,
            chain_cycles_per_hint: None,
        };
        let s = summarize_report(
            &[
                mk(0, 10.0, None),
                mk(1, 30.0, None),
                mk(2, 12.0, None),
                mk(0, 99.0, Some(1)),
            ],
            Hint::Pause,
        )
        .unwrap();
        assert_eq!(s.ns_per_hint, 12.0);
        assert_eq!(s.ticks_per_hint, 24.0);
        assert_eq!(s.core_cycles_per_hint, Some(36.0));
        assert_eq!(s.cpu_spread_pct, Some(200.0));
        assert!(summarize_report(&[], Hint::Pause).is_none());
    }

    #[test]
    fn bad_probe_documents_are_refused_with_reasons() {
        assert!(parse_probe("{").unwrap_err().contains("not JSON"));
        assert!(parse_probe("{}").unwrap_err().contains("no \"schema\""));
        assert!(parse_probe(r#"{"schema":"spinscope.spin/1"}"#)
            .unwrap_err()
            .contains("is not spinscope.probe/1"));
        assert!(parse_probe(r#"{"schema":"spinscope.probe/1"}"#)
            .unwrap_err()
            .contains("malformed"));
        let mut r = sample_report();
        r.summary.ns_per_hint = -1.0;
        let e = parse_probe(&serde_json::to_string(&r).unwrap()).unwrap_err();
        assert!(e.contains("plausible"), "{e}");
    }

    #[test]
    fn an_invalid_probe_is_refused_and_an_old_one_still_reads() {
        let mut r = sample_report();
        r.valid = false;
        r.invalid_reason = Some("the groups of batches spread 80%".into());
        let e = parse_probe(&serde_json::to_string(&r).unwrap()).unwrap_err();
        assert!(e.contains("no figure") && e.contains("80%"), "{e}");
        // A probe saved before the validity and group fields: valid, figure = batch median.
        let mut v = serde_json::to_value(sample_report()).unwrap();
        for k in ["valid", "invalid_reason", "load"] {
            v.as_object_mut().unwrap().remove(k);
        }
        let m = v["measurements"][0].as_object_mut().unwrap();
        for k in [
            "groups",
            "group_spread_pct",
            "estimate_ticks_per_hint",
            "estimate_ns_per_hint",
        ] {
            m.remove(k);
        }
        let old = parse_probe(&v.to_string()).unwrap();
        assert!(old.valid);
        assert_eq!(old.measurements[0].figure_ns(), 24.5);
        assert_eq!(noise_pct(&old), crate::spin::model::PROBE_NOISE_FLOOR_PCT);
    }

    #[test]
    fn cpu_selection() {
        let allowed = [0, 1, 2, 3];
        assert_eq!(resolve_cpus("all", &allowed).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(resolve_cpus("1,3", &allowed).unwrap(), vec![1, 3]);
        assert_eq!(resolve_cpus("0-2", &allowed).unwrap(), vec![0, 1, 2]);
        let e = resolve_cpus("7", &allowed).unwrap_err().to_string();
        assert!(e.contains("CPU 7") && e.contains("0-3"), "{e}");
        assert!(resolve_cpus("x", &allowed).is_err());
        assert!(resolve_cpus("", &allowed).is_err());
    }
}
