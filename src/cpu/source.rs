//! Where the spin model's CPU comes from: a reference CPU by name, a figure measured elsewhere
//! (`--pause-ns`, `--pause-cycles` at `--ghz`), a saved probe, or a quick probe of this machine.
//! A probe (saved or live) becomes a model only through [`super::cpu_model`]: the one CPU model
//! per probe that `spin`, `doctor` (`server::host::from_probe`), `tune` and the lab share.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spin::cpus;
use crate::spin::model::{Arch, CpuModel};

/// One CPU source, as the flags name it.
#[derive(Debug, Clone, PartialEq)]
pub enum CpuSource {
    /// A reference CPU by key (`--cpu skylake-sp`).
    Reference(String),
    /// Nanoseconds per spin hint measured elsewhere (`--pause-ns`).
    PauseNs(f64),
    /// Core cycles per hint at a clock (`--pause-cycles C --ghz G`).
    PauseCycles { cycles: f64, ghz: f64 },
    /// A probe saved with `spinscope probe --save FILE`.
    ProbeFile(PathBuf),
    /// This machine's figure: the saved probe of this host, else a quick probe (about 0.5 s),
    /// kept for the next command (`super::saved`).
    ThisMachine,
}

/// `v` within [lo, hi], else bad input naming the flag.
pub fn check_float(flag: &str, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(Error::bad_input(format!(
            "{flag} {v}: out of range; give a number from {lo} to {hi}"
        )));
    }
    Ok(v)
}

/// The architecture this binary runs on.
pub fn host_arch() -> Arch {
    if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    }
}

/// The model for a source. Errors: an unknown reference name, a figure out of range, an
/// unreadable probe file (bad input); a probe that cannot run here (runtime). A note about
/// this host's figure (its age, a quick probe) goes to `shown`.
pub fn resolve(src: &CpuSource, shown: &mut dyn crate::meter::Meter) -> Result<CpuModel> {
    match src {
        CpuSource::Reference(name) => Ok(CpuModel::from_reference(cpus::lookup(name)?)),
        CpuSource::PauseNs(ns) => Ok(CpuModel {
            label: "--pause-ns".into(),
            arch: host_arch(),
            ns_per_hint: check_float("--pause-ns", *ns, 0.01, 1e6)?,
            tsc_ticks_per_hint: None,
            ghz: None,
            approximate: false,
            noise_pct: 0.0,
        }),
        CpuSource::PauseCycles { cycles, ghz } => {
            let cy = check_float("--pause-cycles", *cycles, 0.01, 1e6)?;
            let ghz = check_float("--ghz", *ghz, 0.1, 10.0)?;
            Ok(CpuModel {
                label: format!("--pause-cycles {cy} at {ghz} GHz"),
                arch: host_arch(),
                ns_per_hint: cy / ghz,
                // A server TSC ticks near the nominal clock: ticks per PAUSE ~ cycles.
                tsc_ticks_per_hint: Some(cy),
                ghz: Some(ghz),
                approximate: false,
                noise_pct: 0.0,
            })
        }
        CpuSource::ProbeFile(p) => from_probe_file(p),
        CpuSource::ThisMachine => {
            let fig = super::saved::this_host()?;
            if let Some(n) = &fig.note {
                shown.note(n);
            }
            Ok(super::cpu_model(&fig.report, &fig.label))
        }
    }
}

/// The model of a saved probe, labelled with its CPU and the file.
pub fn from_probe_file(p: &Path) -> Result<CpuModel> {
    let r = super::load_probe_file(p)?;
    Ok(super::cpu_model(
        &r,
        &format!("{} ({})", super::describe(&r), p.display()),
    ))
}
