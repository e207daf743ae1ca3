//! The spin formulas of each server family (docs/REFERENCE.md §1), turned into hint counts and time.
//!
//! Notation: `d` = innodb_spin_wait_delay, `L` = innodb_sync_spin_loops (rounds before the OS
//! wait), `m` = innodb_spin_wait_pause_multiplier (MySQL 8.0.16+), `M` = MariaDB's
//! my_cpu_relax_multiplier (100 or 200, chosen at startup from the measured PAUSE).

use serde::{Deserialize, Serialize};

use super::cpus::Hint;
use super::version::{Flavor, ServerVersion};
use crate::error::{Error, Result};

/// The formula families of §2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// MySQL 5.6, 5.7, 8.0 before 8.0.16; Percona 5.x; MariaDB before 10.3: `k * 50`,
    /// k uniform in {0..d-1}.
    MysqlFixed50,
    /// MySQL 8.0.16+, 8.4, 9.x; Percona 8.0.16+: `k * m`.
    MysqlMultiplier,
    /// MariaDB 10.3..10.5: `k * M/4`, k uniform in {0..d}.
    Mariadb103,
    /// MariaDB 10.6+ srw_lock/ssux_lock: `M/4 * d` hints per round, fixed.
    Mariadb106,
}

/// A server variable's default and legal range for one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VarSpec {
    pub name: &'static str,
    pub default: u64,
    pub min: u64,
    pub max: u64,
}

impl VarSpec {
    pub fn check(&self, flag: &str, value: u64, server: &str) -> Result<u64> {
        if value < self.min || value > self.max {
            return Err(Error::bad_input(format!(
                "{flag} {value}: out of range for {} on {server}; legal values are {}..={}",
                self.name, self.min, self.max
            )));
        }
        Ok(value)
    }
}

const U32_MAX: u64 = u32::MAX as u64;

/// What a server version spins like: its family, formula text and variables.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyInfo {
    pub family: Family,
    pub server: String,
    /// The formula in words, with the source files it was read from.
    pub formula: &'static str,
    pub delay: VarSpec,
    pub loops: VarSpec,
    pub multiplier: Option<VarSpec>,
    /// Where the random range of k is uncertain for this version (both readings shown).
    pub k_range_uncertain: bool,
    /// True when k's range is inclusive {0..d} (only meaningful when certain).
    pub k_inclusive: bool,
    pub notes: Vec<&'static str>,
}

/// Map a version to its family (docs/REFERENCE.md §1).
pub fn family_for(v: &ServerVersion) -> FamilyInfo {
    let loops = VarSpec {
        name: "innodb_sync_spin_loops",
        default: 30,
        min: 0,
        max: U32_MAX,
    };
    let server = v.short();
    match v.flavor {
        Flavor::Mysql | Flavor::Percona => {
            if v.at_least(8, 0, 16) {
                let certain_inclusive = v.at_least(8, 0, 40);
                let mut notes = vec!["m was added by WL#12616 in 8.0.16 and is dynamic"];
                if !certain_inclusive {
                    notes.push(
                        "the first 8.0.x release whose random k is inclusive {0..d} is not established \
                         (8.0.40 and 8.4 sources have it); both readings are shown",
                    );
                }
                FamilyInfo {
                    family: Family::MysqlMultiplier,
                    server,
                    formula: "each round executes k*m hints, k uniform random (ut0ut.cc ut_delay, ut0rnd.h)",
                    delay: VarSpec { name: "innodb_spin_wait_delay", default: 6, min: 0, max: 1000 },
                    loops,
                    multiplier: Some(VarSpec { name: "innodb_spin_wait_pause_multiplier", default: 50, min: 0, max: 100 }),
                    k_range_uncertain: !certain_inclusive,
                    k_inclusive: true,
                    notes,
                }
            } else {
                let delay_max = if v.major == 8 { 1000 } else { U32_MAX };
                FamilyInfo {
                    family: Family::MysqlFixed50,
                    server,
                    formula: "each round executes k*50 hints, k = ut_rnd_interval(0, d) uniform in {0..d-1} \
                              (exclusive despite its comment; ut0ut.cc, ut0rnd.ic)",
                    delay: VarSpec { name: "innodb_spin_wait_delay", default: 6, min: 0, max: delay_max },
                    loops,
                    multiplier: None,
                    k_range_uncertain: false,
                    k_inclusive: false,
                    notes: vec!["this version has no innodb_spin_wait_pause_multiplier: tune with innodb_spin_wait_delay and innodb_sync_spin_loops"],
                }
            }
        }
        Flavor::Mariadb => {
            if v.at_least(10, 6, 0) {
                FamilyInfo {
                    family: Family::Mariadb106,
                    server,
                    formula: "each round executes a FIXED M/4*d hints (srw_lock.cc), M = 100 or 200 chosen at startup",
                    delay: VarSpec { name: "innodb_spin_wait_delay", default: 4, min: 0, max: 6000 },
                    loops,
                    multiplier: None,
                    k_range_uncertain: false,
                    k_inclusive: true,
                    notes: vec![
                        "a newer srw_lock.cc (MariaDB main line, first release not established) uses exponential \
                         backoff with jitter bounded by max_delay = M/4*d*L; total spin is then a small multiple of \
                         the figure shown (docs/REFERENCE.md §1)",
                        "which latches spin at all depends on the release (MDEV-34431, MDEV-33515)",
                        "out-of-range innodb_spin_wait_delay values are clamped with warning 1292, not refused",
                    ],
                }
            } else if v.at_least(10, 3, 0) {
                FamilyInfo {
                    family: Family::Mariadb103,
                    server,
                    formula: "each round executes k*M/4 hints, k uniform random in {0..d} (MDEV-19845; include/my_cpu.h ut_delay)",
                    delay: VarSpec { name: "innodb_spin_wait_delay", default: 4, min: 0, max: 6000 },
                    loops,
                    multiplier: None,
                    k_range_uncertain: false,
                    k_inclusive: true,
                    notes: vec!["the upper bound of k in 10.3-10.5 (d or d-1) is read from one release, not every one (docs/REFERENCE.md §1)"],
                }
            } else {
                FamilyInfo {
                    family: Family::MysqlFixed50,
                    server,
                    formula:
                        "inherited from MySQL 5.6/5.7 InnoDB: k*50 hints, k uniform in {0..d-1}",
                    delay: VarSpec {
                        name: "innodb_spin_wait_delay",
                        default: 6,
                        min: 0,
                        max: U32_MAX,
                    },
                    loops,
                    multiplier: None,
                    k_range_uncertain: false,
                    k_inclusive: false,
                    notes: vec![
                        "MariaDB before 10.3 predates my_cpu_relax_multiplier (MDEV-19845)",
                    ],
                }
            }
        }
    }
}

/// The settings the model is evaluated with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub spin_wait_delay: u64,
    pub sync_spin_loops: u64,
    pub pause_multiplier: Option<u64>,
}

/// Fill in a version's defaults and check the given values against its ranges.
pub fn resolve_settings(
    info: &FamilyInfo,
    d: Option<u64>,
    l: Option<u64>,
    m: Option<u64>,
) -> Result<Settings> {
    let d = info.delay.check(
        "--spin-wait-delay",
        d.unwrap_or(info.delay.default),
        &info.server,
    )?;
    let l = info.loops.check(
        "--sync-spin-loops",
        l.unwrap_or(info.loops.default),
        &info.server,
    )?;
    let m = match (info.multiplier, m) {
        (Some(spec), m) => Some(spec.check("--pause-multiplier", m.unwrap_or(spec.default), &info.server)?),
        (None, Some(_)) => {
            return Err(Error::bad_input(format!(
                "--pause-multiplier: {} has no innodb_spin_wait_pause_multiplier (MySQL/Percona 8.0.16+ only); \
                 use --spin-wait-delay instead",
                info.server
            )))
        }
        (None, None) => None,
    };
    Ok(Settings {
        spin_wait_delay: d,
        sync_spin_loops: l,
        pause_multiplier: m,
    })
}

/// Settings from a server's variables (live or from a snapshot): each legal value found, the
/// default for a variable the server does not report. Returns the settings, the names of the
/// variables read, and one line per value that is not a legal number for this version.
pub fn settings_from_vars<'a>(
    info: &FamilyInfo,
    get: impl Fn(&str) -> Option<&'a str>,
) -> (Settings, Vec<String>, Vec<String>) {
    let (mut read, mut bad) = (Vec::new(), Vec::new());
    let mut one = |spec: VarSpec| match get(spec.name) {
        None => spec.default,
        Some(raw) => match raw.trim().parse::<u64>() {
            Ok(v) if (spec.min..=spec.max).contains(&v) => {
                read.push(spec.name.to_string());
                v
            }
            _ => {
                bad.push(format!(
                    "{} = {raw:?} is not a legal value on {} ({}..={})",
                    spec.name, info.server, spec.min, spec.max
                ));
                spec.default
            }
        },
    };
    let s = Settings {
        spin_wait_delay: one(info.delay),
        sync_spin_loops: one(info.loops),
        pause_multiplier: info.multiplier.map(&mut one),
    };
    (s, read, bad)
}

/// Defaults of a version.
pub fn default_settings(info: &FamilyInfo) -> Settings {
    Settings {
        spin_wait_delay: info.delay.default,
        sync_spin_loops: info.loops.default,
        pause_multiplier: info.multiplier.map(|s| s.default),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    X86_64,
    Aarch64,
}

/// One CPU as the model sees it: how long a hint takes and what MariaDB would measure there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuModel {
    /// Where the figure came from, e.g. "probe of this machine", "reference skylake-sp".
    pub label: String,
    pub arch: Arch,
    /// Nanoseconds per spin hint (PAUSE on x86, ISB on aarch64).
    pub ns_per_hint: f64,
    /// TSC ticks per PAUSE where known: decides MariaDB's M (> 30 ticks: 100, else 200).
    pub tsc_ticks_per_hint: Option<f64>,
    /// Core clock where known (used to price a bare loop iteration without a hint).
    pub ghz: Option<f64>,
    /// True when ns_per_hint is only indicative (a reference-table figure marked approximate).
    pub approximate: bool,
    /// Half-width of the interval around `ns_per_hint`, percent: how far the figure moves from
    /// run to run. 0 for figures given or taken from the reference table; at least
    /// [`PROBE_NOISE_FLOOR_PCT`] for measured ones. Advice and severities use the interval.
    #[serde(default)]
    pub noise_pct: f64,
}

/// Run-to-run movement of a measured ns per hint on a virtual machine, percent: the quick
/// probe's medians ranged 23.8-27.2 ns per PAUSE over repeated runs on a 2-vCPU KVM guest
/// (+-6.7% around 25.5 ns; 30 recorded runs of the full probe: 24.5-26.3), while one run's
/// batches spread only 2-5% (IQR); docs/PERFORMANCE.md "probe: run time and repeatability",
/// docs/REFERENCE.md §8. 8% covers the widest movement seen with a margin.
pub const PROBE_NOISE_FLOOR_PCT: f64 = 8.0;

/// The interval half-width of a measured figure from its batches' IQRs (percent of the median,
/// one per measured CPU): half the widest IQR, never below [`PROBE_NOISE_FLOOR_PCT`].
pub fn probe_noise_pct(iqr_pcts: impl IntoIterator<Item = f64>) -> f64 {
    iqr_pcts
        .into_iter()
        .filter(|x| x.is_finite())
        .map(|x| x / 2.0)
        .fold(PROBE_NOISE_FLOOR_PCT, f64::max)
}

impl CpuModel {
    pub fn from_reference(c: &super::cpus::RefCpu) -> CpuModel {
        CpuModel {
            label: format!("{} (reference: {})", c.key, c.microarch),
            arch: if c.hint == Hint::Pause {
                Arch::X86_64
            } else {
                Arch::Aarch64
            },
            ns_per_hint: c.ns_per_hint(),
            // Servers' TSC runs near the nominal clock, so ticks per PAUSE ~ core cycles.
            tsc_ticks_per_hint: if c.hint == Hint::Pause {
                Some(c.hint_cycles)
            } else {
                None
            },
            ghz: Some(c.typical_ghz),
            approximate: c.approximate,
            noise_pct: 0.0,
        }
    }
}

/// min / mean / max of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl Span {
    fn scale(self, f: f64) -> Span {
        Span {
            min: self.min * f,
            mean: self.mean * f,
            max: self.max * f,
        }
    }
}

/// One reading of the model (a version whose facts are uncertain gets several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub label: String,
    /// "uniform" (random k) or "fixed".
    pub distribution: String,
    /// The instruction executed per hint on this architecture by this server.
    pub hint: Hint,
    /// MariaDB's my_cpu_relax_multiplier assumed in this reading.
    pub mariadb_multiplier: Option<u64>,
    pub hints_per_round: Span,
    pub round_ns: Span,
    pub rounds: u64,
    /// The longest spin of one acquisition attempt before the OS wait: L rounds at the maximum.
    pub max_spin_hints: f64,
    pub max_spin_ns: f64,
    /// The expected spin if all L rounds run: L rounds at the mean.
    pub mean_spin_ns: f64,
}

/// The hint each family executes on an architecture (§2, "Spin hint per architecture").
pub fn hint_for(family: Family, arch: Arch) -> Hint {
    match (arch, family) {
        (Arch::X86_64, _) => Hint::Pause,
        (Arch::Aarch64, Family::Mariadb103 | Family::Mariadb106) => Hint::None,
        (Arch::Aarch64, _) => Hint::Isb,
    }
}

/// Uniform k in {0..n}: (min, mean, max) of k.
fn uniform_k(n_max: u64) -> Span {
    Span {
        min: 0.0,
        mean: n_max as f64 / 2.0,
        max: n_max as f64,
    }
}

/// Evaluate the model: one or more readings of the settings on a CPU.
pub fn readings(info: &FamilyInfo, s: &Settings, cpu: &CpuModel) -> Vec<Reading> {
    let hint = hint_for(info.family, cpu.arch);
    let ns_per_hint = match hint {
        // A bare loop iteration: about one cycle.
        Hint::None => 1.0 / cpu.ghz.unwrap_or(2.5),
        _ => cpu.ns_per_hint,
    };
    let d = s.spin_wait_delay;
    let mk = |label: String, distribution: &str, m_mariadb: Option<u64>, hints: Span| {
        let rounds = s.sync_spin_loops;
        Reading {
            label,
            distribution: distribution.into(),
            hint,
            mariadb_multiplier: m_mariadb,
            hints_per_round: hints,
            round_ns: hints.scale(ns_per_hint),
            rounds,
            max_spin_hints: hints.max * rounds as f64,
            max_spin_ns: hints.max * rounds as f64 * ns_per_hint,
            mean_spin_ns: hints.mean * rounds as f64 * ns_per_hint,
        }
    };
    match info.family {
        Family::MysqlFixed50 => {
            vec![mk(
                "k in {0..d-1} (exclusive)".into(),
                "uniform",
                None,
                uniform_k(d.saturating_sub(1)).scale(50.0),
            )]
        }
        Family::MysqlMultiplier => {
            let m = s.pause_multiplier.unwrap_or(50) as f64;
            let inclusive = mk(
                "k in {0..d} (inclusive)".into(),
                "uniform",
                None,
                uniform_k(d).scale(m),
            );
            if info.k_range_uncertain {
                let exclusive = mk(
                    "k in {0..d-1} (exclusive, older 8.0)".into(),
                    "uniform",
                    None,
                    uniform_k(d.saturating_sub(1)).scale(m),
                );
                vec![inclusive, exclusive]
            } else {
                vec![inclusive]
            }
        }
        Family::Mariadb103 | Family::Mariadb106 => mariadb_multipliers(cpu)
            .into_iter()
            .map(|(big_m, why)| {
                let unit = big_m as f64 / 4.0;
                let d_f = d as f64;
                let (dist, hints) = if info.family == Family::Mariadb106 {
                    (
                        "fixed",
                        Span {
                            min: unit * d_f,
                            mean: unit * d_f,
                            max: unit * d_f,
                        },
                    )
                } else {
                    ("uniform", uniform_k(d).scale(unit))
                };
                mk(format!("M={big_m} ({why})"), dist, Some(big_m), hints)
            })
            .collect(),
    }
}

/// Nanoseconds one hint of this family takes on `cpu` (a bare loop iteration, about one
/// cycle, where the server executes no hint instruction).
pub fn ns_per_spin_hint(info: &FamilyInfo, cpu: &CpuModel) -> f64 {
    match hint_for(info.family, cpu.arch) {
        Hint::None => 1.0 / cpu.ghz.unwrap_or(2.5),
        _ => cpu.ns_per_hint,
    }
}

/// Hints of the longest spin of one acquisition attempt (L rounds at the maximum hints per
/// round) under the first reading, without building the readings: the advisor calls this
/// millions of times. Equal to `readings(..)[0].max_spin_hints`.
pub fn max_spin_hints(info: &FamilyInfo, s: &Settings, cpu: &CpuModel) -> f64 {
    max_spin_hints_with(info, s, first_mariadb_multiplier(cpu))
}

/// MariaDB's M in the first reading on `cpu`.
pub fn first_mariadb_multiplier(cpu: &CpuModel) -> u64 {
    mariadb_multipliers(cpu).first().map_or(200, |m| m.0)
}

/// [`max_spin_hints`] with MariaDB's M given (ignored by the MySQL families).
pub fn max_spin_hints_with(info: &FamilyInfo, s: &Settings, big_m: u64) -> f64 {
    let d = s.spin_wait_delay as f64;
    let per_round = match info.family {
        Family::MysqlFixed50 => s.spin_wait_delay.saturating_sub(1) as f64 * 50.0,
        Family::MysqlMultiplier => d * s.pause_multiplier.unwrap_or(50) as f64,
        Family::Mariadb103 | Family::Mariadb106 => d * big_m as f64 / 4.0,
    };
    per_round * s.sync_spin_loops as f64
}

/// MariaDB's startup rule (mysys/my_cpu.c): M = 100 if a PAUSE takes more than 30 TSC ticks,
/// else 200; 200 off x86. Unknown ticks give both readings.
pub fn mariadb_multipliers(cpu: &CpuModel) -> Vec<(u64, String)> {
    if cpu.arch != Arch::X86_64 {
        return vec![(200, "non-x86 default".into())];
    }
    match cpu.tsc_ticks_per_hint {
        Some(t) => vec![mariadb_rule(t)],
        None => vec![
            (100, "if startup measured > 30 TSC ticks per PAUSE".into()),
            (200, "if startup measured <= 30 TSC ticks per PAUSE".into()),
        ],
    }
}

/// MariaDB's threshold: a PAUSE slower than this many TSC ticks is "slow" (M = 100).
pub const MARIADB_SLOW_TICKS_PER_PAUSE: f64 = 30.0;

/// The multiplier M MariaDB picks for a measured figure of TSC ticks per PAUSE. The one place
/// the rule lives: `probe` (over its trials), `spin`, `doctor` and the lab all use it.
pub fn mariadb_multiplier_for(ticks_per_pause: f64) -> u32 {
    if ticks_per_pause > MARIADB_SLOW_TICKS_PER_PAUSE {
        100
    } else {
        200
    }
}

/// The rule itself, for one measured figure of TSC ticks per PAUSE.
pub fn mariadb_rule(ticks_per_pause: f64) -> (u64, String) {
    if mariadb_multiplier_for(ticks_per_pause) == 100 {
        (
            100,
            format!("{ticks_per_pause:.0} TSC ticks per PAUSE > 30"),
        )
    } else {
        (
            200,
            format!("{ticks_per_pause:.0} TSC ticks per PAUSE <= 30"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::version::parse_version;
    use super::*;

    fn cpu(ns: f64, ticks: Option<f64>) -> CpuModel {
        CpuModel {
            label: "t".into(),
            arch: Arch::X86_64,
            ns_per_hint: ns,
            tsc_ticks_per_hint: ticks,
            ghz: Some(2.5),
            approximate: false,
            noise_pct: 0.0,
        }
    }

    fn eval(
        ver: &str,
        d: Option<u64>,
        l: Option<u64>,
        m: Option<u64>,
        c: &CpuModel,
    ) -> Vec<Reading> {
        let info = family_for(&parse_version(ver, None).unwrap());
        let s = resolve_settings(&info, d, l, m).unwrap();
        readings(&info, &s, c)
    }

    /// Hand-computed values for every family.
    #[test]
    fn table_of_hand_computed_values() {
        // (version, d, L, m, ns/hint, ticks, reading index, hints min/mean/max, max spin ns)
        #[allow(clippy::type_complexity)]
        let rows: &[(
            &str,
            Option<u64>,
            Option<u64>,
            Option<u64>,
            f64,
            Option<f64>,
            usize,
            (f64, f64, f64),
            f64,
        )] = &[
            // 5.7 defaults: k in {0..5}, 50 hints each: max 250, mean 125; 30 rounds -> 7500 hints.
            (
                "5.7.44",
                None,
                None,
                None,
                10.0,
                Some(10.0),
                0,
                (0.0, 125.0, 250.0),
                75_000.0,
            ),
            // 8.0.40 defaults (the worked example of docs/REFERENCE.md §1): max 300 per round, 9000 per attempt.
            // At 10 cycles and 2.2 GHz: 9000 * 10 / 2.2 = 40909 ns.
            (
                "8.0.40",
                None,
                None,
                None,
                10.0 / 2.2,
                Some(10.0),
                0,
                (0.0, 150.0, 300.0),
                40_909.09,
            ),
            // At 140 cycles and 2.5 GHz: 504 us.
            (
                "8.0.40",
                None,
                None,
                None,
                140.0 / 2.5,
                Some(140.0),
                0,
                (0.0, 150.0, 300.0),
                504_000.0,
            ),
            // 8.0.30: the exclusive reading is second: k in {0..5}, m=50: max 250.
            (
                "8.0.30",
                None,
                None,
                None,
                1.0,
                Some(10.0),
                1,
                (0.0, 125.0, 250.0),
                7_500.0,
            ),
            // m=5 (Meituan), d=6: max 30 per round.
            (
                "8.0.36",
                None,
                Some(10),
                Some(5),
                2.0,
                Some(50.0),
                0,
                (0.0, 15.0, 30.0),
                600.0,
            ),
            // MariaDB 10.6+ on a slow PAUSE (> 30 ticks): M=100 -> 25*d = 100 fixed per round.
            (
                "10.11.19-MariaDB",
                None,
                None,
                None,
                24.6,
                Some(64.0),
                0,
                (100.0, 100.0, 100.0),
                73_800.0,
            ),
            // ... on a fast PAUSE: M=200 -> 50*d = 200 fixed.
            (
                "10.11.19-MariaDB",
                None,
                None,
                None,
                4.5,
                Some(10.0),
                0,
                (200.0, 200.0, 200.0),
                27_000.0,
            ),
            // MariaDB 10.4: k in {0..4} * 25 (M=100): max 100, mean 50.
            (
                "10.4.30-MariaDB",
                None,
                None,
                None,
                1.0,
                Some(64.0),
                0,
                (0.0, 50.0, 100.0),
                3_000.0,
            ),
            // MariaDB 10.2: MySQL 5.7 formula with d=6.
            (
                "10.2.44-MariaDB",
                None,
                None,
                None,
                1.0,
                Some(10.0),
                0,
                (0.0, 125.0, 250.0),
                7_500.0,
            ),
            // d=0 spins not at all.
            (
                "8.0.40",
                Some(0),
                None,
                None,
                10.0,
                Some(10.0),
                0,
                (0.0, 0.0, 0.0),
                0.0,
            ),
            (
                "5.7.44",
                Some(0),
                None,
                None,
                10.0,
                Some(10.0),
                0,
                (0.0, 0.0, 0.0),
                0.0,
            ),
        ];
        for (i, (ver, d, l, m, ns, ticks, idx, (hmin, hmean, hmax), max_ns)) in
            rows.iter().enumerate()
        {
            let r = &eval(ver, *d, *l, *m, &cpu(*ns, *ticks))[*idx];
            assert_eq!(r.hints_per_round.min, *hmin, "row {i} {ver}");
            assert_eq!(r.hints_per_round.mean, *hmean, "row {i} {ver}");
            assert_eq!(r.hints_per_round.max, *hmax, "row {i} {ver}");
            assert!(
                (r.max_spin_ns - max_ns).abs() < 0.01 * max_ns.max(1.0),
                "row {i} {ver}: {} vs {max_ns}",
                r.max_spin_ns
            );
        }
    }

    #[test]
    fn uncertain_versions_show_both_readings_and_certain_ones_one() {
        assert_eq!(eval("8.0.20", None, None, None, &cpu(1.0, None)).len(), 2);
        assert_eq!(eval("8.0.40", None, None, None, &cpu(1.0, None)).len(), 1);
        assert_eq!(eval("8.4.0", None, None, None, &cpu(1.0, None)).len(), 1);
        // MariaDB with unknown TSC ticks: both multipliers.
        let r = eval("10.6.12-MariaDB", None, None, None, &cpu(20.0, None));
        assert_eq!(
            r.iter()
                .map(|r| r.mariadb_multiplier.unwrap())
                .collect::<Vec<_>>(),
            vec![100, 200]
        );
    }

    #[test]
    fn arm_hints_differ_by_server() {
        let mut c = cpu(10.0, None);
        c.arch = Arch::Aarch64;
        assert_eq!(eval("8.0.40", None, None, None, &c)[0].hint, Hint::Isb);
        let r = &eval("10.11.5-MariaDB", None, None, None, &c)[0];
        assert_eq!(r.hint, Hint::None);
        assert_eq!(r.mariadb_multiplier, Some(200));
    }

    #[test]
    fn range_and_multiplier_errors_name_the_flag() {
        let info = family_for(&parse_version("8.0.36", None).unwrap());
        let e = resolve_settings(&info, Some(1001), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--spin-wait-delay 1001") && e.contains("0..=1000"),
            "{e}"
        );
        let e = resolve_settings(&info, None, None, Some(101))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--pause-multiplier 101"), "{e}");
        let maria = family_for(&parse_version("10.11.19-MariaDB", None).unwrap());
        let e = resolve_settings(&maria, None, None, Some(5))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no innodb_spin_wait_pause_multiplier"), "{e}");
        assert!(resolve_settings(&maria, Some(6001), None, None).is_err());
        let old = family_for(&parse_version("8.0.15", None).unwrap());
        assert!(resolve_settings(&old, None, None, Some(5)).is_err());
    }

    #[test]
    fn mariadb_rule_threshold() {
        assert_eq!(mariadb_rule(30.0).0, 200);
        assert_eq!(mariadb_rule(30.5).0, 100);
        assert_eq!(mariadb_rule(64.0).0, 100);
    }
}
