//! Reference CPUs: how long one spin hint takes on known microarchitectures, and how to
//! recognise them from CPUID (x86) or MIDR (aarch64). Pure data plus lookups.
//!
//! Cycle counts are per hint at the core clock. Where the figure comes from a vendor manual or
//! a measurement it says so in `source`; `approximate` marks figures that are only indicative,
//! so the tool can say so when it uses them. `probe` on the real machine always beats this table.

use serde::Serialize;

use crate::error::{Error, Result};

/// The spin-hint instruction a server build uses on an architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hint {
    /// x86 `pause` (F3 90).
    Pause,
    /// aarch64 `isb sy` (MySQL's UT_RELAX_CPU, Rust's spin_loop).
    Isb,
    /// aarch64 `yield` (Linux cpu_relax on arm64).
    Yield,
    /// No instruction at all, only a compiler barrier (MariaDB's MY_RELAX_CPU off x86).
    None,
}

impl Hint {
    pub fn name(self) -> &'static str {
        match self {
            Hint::Pause => "pause",
            Hint::Isb => "isb",
            Hint::Yield => "yield",
            Hint::None => "none (compiler barrier)",
        }
    }
}

/// How to recognise a CPU.
#[derive(Debug, Clone, Copy)]
pub enum CpuMatch {
    /// x86: vendor string, family, models, and an inclusive stepping range.
    X86 {
        vendor: &'static str,
        family: u32,
        models: &'static [u32],
        steppings: (u32, u32),
    },
    /// aarch64: MIDR implementer and part number.
    Arm { implementer: u32, part: u32 },
}

/// One reference CPU.
#[derive(Debug, Clone, Serialize)]
pub struct RefCpu {
    /// Lower-case key used on the command line (`--cpu skylake-sp`).
    pub key: &'static str,
    /// Human name of the microarchitecture.
    pub microarch: &'static str,
    pub vendor: &'static str,
    /// The hint instruction servers use there.
    pub hint: Hint,
    /// Core cycles one hint takes.
    pub hint_cycles: f64,
    /// A typical base clock of server parts of that generation, GHz.
    pub typical_ghz: f64,
    /// True when `hint_cycles` is only indicative.
    pub approximate: bool,
    /// Where the figure comes from.
    pub source: &'static str,
    #[serde(skip)]
    pub matches: &'static [CpuMatch],
}

impl RefCpu {
    /// Nanoseconds per hint at the typical clock.
    pub fn ns_per_hint(&self) -> f64 {
        self.hint_cycles / self.typical_ghz
    }
}

const INTEL: &str = "GenuineIntel";
const AMD: &str = "AuthenticAMD";
const HYGON: &str = "HygonGenuine";
const ALL: (u32, u32) = (0, 255);

/// The table. Order matters for lookups: the first match wins, so narrower stepping ranges of a
/// shared model number (0x55: Skylake-SP, Cascade Lake, Cooper Lake) come first.
pub static REFERENCE_CPUS: &[RefCpu] = &[
    RefCpu {
        key: "broadwell",
        microarch: "Broadwell (Xeon E5 v4)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 10.0,
        typical_ghz: 2.2,
        approximate: false,
        source: "Intel optimization manual: PAUSE about 10 cycles before Skylake; the baseline InnoDB defaults were tuned on",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x3D, 0x47, 0x4F, 0x56], steppings: ALL }],
    },
    RefCpu {
        key: "haswell",
        microarch: "Haswell (Xeon E5 v3)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 10.0,
        typical_ghz: 2.3,
        approximate: true,
        source: "pre-Skylake PAUSE, about 10 cycles",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x3C, 0x3F, 0x45, 0x46], steppings: ALL }],
    },
    RefCpu {
        key: "cascade-lake",
        microarch: "Cascade Lake (Xeon Scalable 2nd gen)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 44.0,
        typical_ghz: 2.5,
        approximate: true,
        source: "often quoted as about 44 cycles, not confirmed from a vendor document (docs/REFERENCE.md §2)",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x55], steppings: (5, 7) }],
    },
    RefCpu {
        key: "cooper-lake",
        microarch: "Cooper Lake (Xeon Scalable 3rd gen, 4-8 socket)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 44.0,
        typical_ghz: 2.5,
        approximate: true,
        source: "assumed equal to Cascade Lake (same core); measure with probe",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x55], steppings: (10, 11) }],
    },
    RefCpu {
        key: "skylake-sp",
        microarch: "Skylake-SP (Xeon Scalable 1st gen)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 140.0,
        typical_ghz: 2.5,
        approximate: false,
        source: "Intel 64 and IA-32 Optimization Reference Manual: PAUSE extended to as many as 140 cycles from Skylake (docs/REFERENCE.md §2)",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x55], steppings: (0, 4) }],
    },
    RefCpu {
        key: "skylake",
        microarch: "Skylake client / Kaby Lake / Coffee Lake",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 140.0,
        typical_ghz: 3.0,
        approximate: true,
        source: "same PAUSE change as Skylake-SP",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6], steppings: ALL }],
    },
    RefCpu {
        key: "ice-lake",
        microarch: "Ice Lake-SP (Xeon Scalable 3rd gen)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 40.0,
        typical_ghz: 2.4,
        approximate: true,
        source: "indicative: post-Skylake server cores sit near 40 cycles; measure with probe",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x6A, 0x6C], steppings: ALL }],
    },
    RefCpu {
        key: "sapphire-rapids",
        microarch: "Sapphire Rapids / Emerald Rapids (Xeon Scalable 4th/5th gen)",
        vendor: "Intel",
        hint: Hint::Pause,
        hint_cycles: 40.0,
        typical_ghz: 2.1,
        approximate: true,
        source: "indicative: post-Skylake server cores sit near 40 cycles; measure with probe",
        matches: &[CpuMatch::X86 { vendor: INTEL, family: 6, models: &[0x8F, 0xCF], steppings: ALL }],
    },
    RefCpu {
        key: "zen1",
        microarch: "AMD Zen / Zen+ (EPYC 7001)",
        vendor: "AMD",
        hint: Hint::Pause,
        hint_cycles: 3.0,
        typical_ghz: 2.2,
        approximate: true,
        source: "indicative: PAUSE was a few cycles before Zen 2",
        matches: &[
            CpuMatch::X86 { vendor: AMD, family: 0x17, models: &[0x01, 0x08, 0x11, 0x18, 0x20], steppings: ALL },
            CpuMatch::X86 { vendor: HYGON, family: 0x18, models: &[0x00, 0x01, 0x02], steppings: ALL },
        ],
    },
    RefCpu {
        key: "zen2",
        microarch: "AMD Zen 2 (EPYC 7002)",
        vendor: "AMD",
        hint: Hint::Pause,
        hint_cycles: 64.0,
        typical_ghz: 2.5,
        approximate: true,
        source: "about 64 cycles on Zen 2 and later (dotnet/runtime PR #99991; docs/REFERENCE.md §2)",
        matches: &[CpuMatch::X86 { vendor: AMD, family: 0x17, models: &[0x31, 0x47, 0x60, 0x68, 0x71, 0x90, 0x98, 0xA0], steppings: ALL }],
    },
    RefCpu {
        key: "zen3",
        microarch: "AMD Zen 3 (EPYC 7003)",
        vendor: "AMD",
        hint: Hint::Pause,
        hint_cycles: 64.0,
        typical_ghz: 2.45,
        approximate: true,
        source: "about 64 cycles on Zen 2 and later (dotnet/runtime PR #99991; docs/REFERENCE.md §2)",
        matches: &[CpuMatch::X86 { vendor: AMD, family: 0x19, models: &[0x00, 0x01, 0x08, 0x21, 0x40, 0x44, 0x50], steppings: ALL }],
    },
    RefCpu {
        key: "zen4",
        microarch: "AMD Zen 4 (EPYC 9004)",
        vendor: "AMD",
        hint: Hint::Pause,
        hint_cycles: 64.0,
        typical_ghz: 2.6,
        approximate: false,
        source: "measured by spinscope probe: 64 TSC ticks = 24.6 ns at a 2.596 GHz TSC on an EPYC KVM guest (docs/REFERENCE.md §2)",
        matches: &[CpuMatch::X86 {
            vendor: AMD,
            family: 0x19,
            models: &[0x10, 0x11, 0x18, 0x60, 0x61, 0x70, 0x74, 0x75, 0x78, 0x7C, 0xA0, 0xA1],
            steppings: ALL,
        }],
    },
    RefCpu {
        key: "zen5",
        microarch: "AMD Zen 5 (EPYC 9005)",
        vendor: "AMD",
        hint: Hint::Pause,
        hint_cycles: 64.0,
        typical_ghz: 2.5,
        approximate: true,
        source: "assumed equal to Zen 4; measure with probe",
        matches: &[CpuMatch::X86 { vendor: AMD, family: 0x1A, models: &[0x00, 0x02, 0x10, 0x11, 0x20, 0x24, 0x40, 0x44], steppings: ALL }],
    },
    RefCpu {
        key: "neoverse-n1",
        microarch: "Arm Neoverse N1 (Graviton2, Ampere Altra)",
        vendor: "Arm",
        hint: Hint::Isb,
        hint_cycles: 30.0,
        typical_ghz: 2.5,
        approximate: true,
        source: "indicative: ISB drains the pipeline, tens of cycles; measure with probe",
        matches: &[CpuMatch::Arm { implementer: 0x41, part: 0xD0C }],
    },
    RefCpu {
        key: "neoverse-v1",
        microarch: "Arm Neoverse V1 (Graviton3)",
        vendor: "Arm",
        hint: Hint::Isb,
        hint_cycles: 30.0,
        typical_ghz: 2.6,
        approximate: true,
        source: "indicative; measure with probe",
        matches: &[CpuMatch::Arm { implementer: 0x41, part: 0xD40 }],
    },
    RefCpu {
        key: "neoverse-n2",
        microarch: "Arm Neoverse N2 (Yitian 710, Cobalt 100)",
        vendor: "Arm",
        hint: Hint::Isb,
        hint_cycles: 30.0,
        typical_ghz: 2.75,
        approximate: true,
        source: "indicative; measure with probe",
        matches: &[CpuMatch::Arm { implementer: 0x41, part: 0xD49 }],
    },
    RefCpu {
        key: "neoverse-v2",
        microarch: "Arm Neoverse V2 (Graviton4, Grace)",
        vendor: "Arm",
        hint: Hint::Isb,
        hint_cycles: 30.0,
        typical_ghz: 2.8,
        approximate: true,
        source: "indicative; measure with probe",
        matches: &[CpuMatch::Arm { implementer: 0x41, part: 0xD4F }],
    },
    RefCpu {
        key: "kunpeng-920",
        microarch: "HiSilicon Kunpeng 920 (TaiShan v110)",
        vendor: "HiSilicon",
        hint: Hint::Isb,
        hint_cycles: 30.0,
        typical_ghz: 2.6,
        approximate: true,
        source: "indicative; 128-byte cache lines (docs/REFERENCE.md §7); measure with probe",
        matches: &[CpuMatch::Arm { implementer: 0x48, part: 0xD01 }],
    },
];

/// What identifies a CPU, as read from /proc/cpuinfo (or saved in a probe file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuIdent {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    /// aarch64 MIDR implementer (0 when unknown or x86).
    pub arm_implementer: u32,
    /// aarch64 MIDR part number (0 when unknown or x86).
    pub arm_part: u32,
}

/// Find the reference entry for an identified CPU, if the table knows it.
pub fn identify(id: &CpuIdent) -> Option<&'static RefCpu> {
    REFERENCE_CPUS.iter().find(|c| {
        c.matches.iter().any(|m| match *m {
            CpuMatch::X86 {
                vendor,
                family,
                models,
                steppings,
            } => {
                id.vendor == vendor
                    && id.family == family
                    && models.contains(&id.model)
                    && (steppings.0..=steppings.1).contains(&id.stepping)
            }
            CpuMatch::Arm { implementer, part } => {
                id.arm_implementer == implementer && id.arm_part == part && implementer != 0
            }
        })
    })
}

/// The keys of the table, for error messages and `--help`.
pub fn known_keys() -> Vec<&'static str> {
    REFERENCE_CPUS.iter().map(|c| c.key).collect()
}

/// Look a reference CPU up by its key (case-insensitive; `_` and spaces count as `-`).
pub fn lookup(name: &str) -> Result<&'static RefCpu> {
    let norm: String = name
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == '_' || c == ' ' { '-' } else { c })
        .collect();
    REFERENCE_CPUS
        .iter()
        .find(|c| c.key == norm)
        .ok_or_else(|| {
            Error::bad_input(format!(
                "--cpu {name:?}: unknown CPU; known: {}",
                known_keys().join(", ")
            ))
        })
}

/// The CPU the servers' defaults were designed on: Broadwell-class, 10 cycles per PAUSE.
pub fn baseline() -> &'static RefCpu {
    &REFERENCE_CPUS[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x86(vendor: &str, family: u32, model: u32, stepping: u32) -> CpuIdent {
        CpuIdent {
            vendor: vendor.into(),
            family,
            model,
            stepping,
            ..Default::default()
        }
    }

    #[test]
    fn model_0x55_is_split_by_stepping() {
        assert_eq!(identify(&x86(INTEL, 6, 0x55, 4)).unwrap().key, "skylake-sp");
        assert_eq!(
            identify(&x86(INTEL, 6, 0x55, 7)).unwrap().key,
            "cascade-lake"
        );
        assert_eq!(
            identify(&x86(INTEL, 6, 0x55, 11)).unwrap().key,
            "cooper-lake"
        );
    }

    #[test]
    fn amd_and_arm_are_recognised() {
        assert_eq!(identify(&x86(AMD, 0x19, 0x11, 1)).unwrap().key, "zen4");
        assert_eq!(identify(&x86(AMD, 0x17, 0x31, 0)).unwrap().key, "zen2");
        let kp = CpuIdent {
            arm_implementer: 0x48,
            arm_part: 0xD01,
            ..Default::default()
        };
        assert_eq!(identify(&kp).unwrap().key, "kunpeng-920");
        assert!(identify(&x86(INTEL, 6, 0x01, 0)).is_none());
        assert!(identify(&CpuIdent::default()).is_none());
    }

    #[test]
    fn lookup_normalises_and_lists_known_names_on_error() {
        assert_eq!(lookup("Skylake_SP").unwrap().key, "skylake-sp");
        let e = lookup("pentium").unwrap_err().to_string();
        assert!(
            e.contains("pentium") && e.contains("broadwell") && e.contains("kunpeng-920"),
            "{e}"
        );
    }

    #[test]
    fn the_table_covers_what_the_issue_names_and_keys_are_unique() {
        for k in [
            "broadwell",
            "skylake-sp",
            "cascade-lake",
            "ice-lake",
            "sapphire-rapids",
            "zen1",
            "zen2",
            "zen3",
            "zen4",
            "zen5",
            "neoverse-n1",
            "neoverse-v1",
            "neoverse-n2",
            "neoverse-v2",
            "kunpeng-920",
        ] {
            assert!(lookup(k).is_ok(), "{k}");
        }
        let mut keys = known_keys();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), REFERENCE_CPUS.len());
        assert_eq!(baseline().hint_cycles, 10.0);
        assert!(REFERENCE_CPUS
            .iter()
            .all(|c| c.hint_cycles > 0.0 && c.typical_ghz > 0.0));
    }
}
