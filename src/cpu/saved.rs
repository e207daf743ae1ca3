//! This host's CPU figure, measured once and reused: the one figure with which `spin`,
//! `doctor`, `tune`'s model candidate and `watch` price spin settings on this machine, so the
//! same server on the same host gets the same advice from every command and every run.
//!
//! A valid probe (`spinscope probe`, or the quick probe a command runs when none is saved) is
//! kept in `$XDG_STATE_HOME/spinscope/host-probe.json` (else `~/.local/state/...`) with the
//! CPU it was taken on and the figures of the probes before it. Commands reuse it while the
//! CPU, its count, the kernel and the hypervisor are the same and it is younger than
//! [`MAX_AGE_S`]; a command that cannot measure (a busy host) falls back to an older one of
//! the same CPU, saying so. The file is about this machine, so its age is read on this
//! machine's clock (server facts never are).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ProbeOptions, ProbeReport};
use crate::error::{Error, Result};

pub const SCHEMA: &str = "spinscope.host-probe/1";
const FILE: &str = "host-probe.json";

/// A saved figure older than this (7 days) is measured again: firmware, microcode or the
/// host under a VM can change without the CPU's name changing.
pub const MAX_AGE_S: u64 = 7 * 24 * 3600;

/// Figures of earlier probes kept for the run-to-run spread.
const RUNS_KEPT: usize = 20;

/// What makes two probes comparable: the same CPU, as many of them, the same kernel and
/// hypervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostKey {
    pub vendor: String,
    pub model_name: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    pub arm_implementer: u32,
    pub arm_part: u32,
    pub threads: usize,
    pub kernel_release: Option<String>,
    pub hypervisor: Option<String>,
}

impl HostKey {
    pub fn of(r: &ProbeReport) -> HostKey {
        HostKey {
            vendor: r.cpu.vendor.clone(),
            model_name: r.cpu.model_name.clone(),
            family: r.cpu.family,
            model: r.cpu.model,
            stepping: r.cpu.stepping,
            arm_implementer: r.cpu.arm_implementer,
            arm_part: r.cpu.arm_part,
            threads: r.topology.threads,
            kernel_release: r.host.kernel_release.clone(),
            hypervisor: r.hypervisor.vendor.clone(),
        }
    }

    /// This machine's key, read from /proc and /sys without measuring anything.
    pub fn here() -> HostKey {
        let info = super::cpuinfo::parse_cpuinfo(
            &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        );
        let online = super::topology::read_online_cpus(&info.processors);
        let (entries, _) = super::topology::read_topology(&online, &info.processors);
        let ident = super::identity(&info);
        HostKey {
            vendor: ident.vendor,
            model_name: ident.model_name,
            family: ident.family,
            model: ident.model,
            stepping: ident.stepping,
            arm_implementer: ident.arm_implementer,
            arm_part: ident.arm_part,
            threads: super::topology::summarize(&entries).threads,
            kernel_release: super::measure::host_strings().1,
            hypervisor: super::hypervisor(&info).vendor,
        }
    }

    /// What differs from `other`, in words (empty when nothing does).
    pub fn differences(&self, other: &HostKey) -> Vec<&'static str> {
        let mut d = Vec::new();
        if (
            &self.vendor,
            &self.model_name,
            self.family,
            self.model,
            self.stepping,
            self.arm_implementer,
            self.arm_part,
        ) != (
            &other.vendor,
            &other.model_name,
            other.family,
            other.model,
            other.stepping,
            other.arm_implementer,
            other.arm_part,
        ) {
            d.push("the CPU");
        }
        if self.threads != other.threads {
            d.push("the number of CPUs");
        }
        if self.kernel_release != other.kernel_release {
            d.push("the kernel");
        }
        if self.hypervisor != other.hypervisor {
            d.push("the hypervisor");
        }
        d
    }
}

/// One probe's figure, for the run-to-run spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub at_unix_s: u64,
    pub ns_per_hint: f64,
    pub cycles_per_hint: Option<f64>,
    pub core_ghz: Option<f64>,
}

impl Run {
    fn of(r: &ProbeReport, at_unix_s: u64) -> Run {
        let m = r
            .measurements
            .iter()
            .find(|m| m.hint == r.summary.hint && m.smt_sibling_busy.is_none());
        Run {
            at_unix_s,
            ns_per_hint: r.summary.ns_per_hint,
            cycles_per_hint: r
                .summary
                .core_cycles_per_hint
                .or_else(|| m.and_then(|m| m.chain_cycles_per_hint)),
            core_ghz: m.and_then(|m| m.core_ghz),
        }
    }
}

/// The spread of this host's probes, as the probe report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpread {
    pub runs: usize,
    pub since_unix_s: u64,
    pub ns_min: f64,
    pub ns_median: f64,
    pub ns_max: f64,
    pub cycles_min: Option<f64>,
    pub cycles_max: Option<f64>,
    pub ghz_min: Option<f64>,
    pub ghz_max: Option<f64>,
}

/// The spread of `runs` (None for fewer than two). Pure.
pub fn spread(runs: &[Run]) -> Option<RunSpread> {
    if runs.len() < 2 {
        return None;
    }
    let ns: Vec<f64> = runs.iter().map(|r| r.ns_per_hint).collect();
    let s = crate::analysis::stats::summarize(&ns)?;
    let range = |v: Vec<f64>| -> (Option<f64>, Option<f64>) {
        if v.len() < 2 {
            return (None, None);
        }
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (Some(lo), Some(hi))
    };
    let (cycles_min, cycles_max) = range(runs.iter().filter_map(|r| r.cycles_per_hint).collect());
    let (ghz_min, ghz_max) = range(runs.iter().filter_map(|r| r.core_ghz).collect());
    Some(RunSpread {
        runs: runs.len(),
        since_unix_s: runs.iter().map(|r| r.at_unix_s).min().unwrap_or(0),
        ns_min: s.min,
        ns_median: s.median,
        ns_max: s.max,
        cycles_min,
        cycles_max,
        ghz_min,
        ghz_max,
    })
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedHost {
    pub schema: String,
    pub key: HostKey,
    pub saved_at_unix_s: u64,
    pub probe: ProbeReport,
    #[serde(default)]
    pub runs: Vec<Run>,
}

/// Where this host's figure is kept; None when neither XDG_STATE_HOME nor HOME is set.
pub fn path() -> Option<PathBuf> {
    Some(crate::files::state_dir()?.join(FILE))
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The saved figure, when there is a readable, valid one (anything else counts as none: it is
/// a cache, measured again when unusable).
pub fn read() -> Option<SavedHost> {
    let p = path()?;
    let text = crate::files::read_capped(&p, crate::files::JSON_INPUT_CAP, "host probe").ok()?;
    let s: SavedHost = serde_json::from_str(&text).ok()?;
    let ok = s.schema == SCHEMA
        && s.probe.valid
        && s.probe.summary.ns_per_hint.is_finite()
        && s.probe.summary.ns_per_hint > 0.0
        && s.probe.summary.ns_per_hint < 1e6;
    ok.then_some(s)
}

/// Keep a valid probe as this host's figure (an invalid one is not a figure: nothing is
/// written). Returns the file and the spread of this host's probes so far, this one included.
pub fn record(r: &ProbeReport) -> Result<(PathBuf, Option<RunSpread>)> {
    let p = path().ok_or_else(|| {
        Error::runtime("no place to keep this host's CPU figure: set HOME or XDG_STATE_HOME")
    })?;
    if !r.valid {
        return Err(Error::runtime(
            "an invalid probe is not kept as this host's figure",
        ));
    }
    let key = HostKey::of(r);
    let now = now_unix_s();
    let mut runs = match read() {
        Some(old) if old.key == key => old.runs,
        _ => Vec::new(),
    };
    runs.push(Run::of(r, now));
    if runs.len() > RUNS_KEPT {
        runs.drain(..runs.len() - RUNS_KEPT);
    }
    let spread = spread(&runs);
    let doc = SavedHost {
        schema: SCHEMA.into(),
        key,
        saved_at_unix_s: now,
        probe: r.clone(),
        runs,
    };
    if let Some(dir) = p.parent() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Error::runtime(format!("cannot create {} ({e})", dir.display())))?;
    }
    let json = crate::files::to_json(&doc)?;
    crate::files::write_atomic(&p, json.as_bytes(), "host probe", false)?;
    Ok((p, spread))
}

/// This host's figure as a command uses it: the probe, a label naming where it came from, and
/// a note for stderr when it is a fallback.
#[derive(Debug, Clone)]
pub struct HostFigure {
    pub report: ProbeReport,
    pub label: String,
    /// The saved figure's age where it is the saved one; None for a probe just taken.
    pub saved_age_s: Option<u64>,
    pub note: Option<String>,
}

/// "3 min", "5 h", "2 days".
pub fn fmt_age(s: u64) -> String {
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// What to do with a saved figure, given this host's key and the time. Pure.
#[derive(Debug, Clone, PartialEq)]
pub enum Use {
    /// Same host, young enough: use it.
    Fresh { age_s: u64 },
    /// Same CPU but old, or another kernel: measure again, fall back to it if that fails.
    Fallback { age_s: u64, why: String },
    /// Another CPU (or none saved): never priced with it.
    No,
}

pub fn judge(saved: Option<&SavedHost>, here: &HostKey, now_unix_s: u64) -> Use {
    let Some(s) = saved else { return Use::No };
    let age_s = now_unix_s.saturating_sub(s.saved_at_unix_s);
    let diff = s.key.differences(here);
    if diff.contains(&"the CPU") || diff.contains(&"the number of CPUs") {
        return Use::No;
    }
    if !diff.is_empty() {
        return Use::Fallback {
            age_s,
            why: format!("{} changed since it was saved", diff.join(" and ")),
        };
    }
    // A saved time in the future (a clock stepped back) is not trusted as young.
    if age_s > MAX_AGE_S || s.saved_at_unix_s > now_unix_s + 300 {
        return Use::Fallback {
            age_s,
            why: format!("it is {} old (kept {})", fmt_age(age_s), fmt_age(MAX_AGE_S)),
        };
    }
    Use::Fresh { age_s }
}

fn saved_label(r: &ProbeReport, age_s: u64) -> String {
    format!(
        "saved probe of this host ({}, {} old)",
        super::describe_cpu(r),
        fmt_age(age_s)
    )
}

/// This host's CPU figure for a command: the saved one while it holds; else a quick probe,
/// kept for the next command; else (the host too busy) the saved one of the same CPU even if
/// old, saying so; else the quick probe's error.
pub fn this_host() -> Result<HostFigure> {
    let saved = read();
    let here = HostKey::here();
    let verdict = judge(saved.as_ref(), &here, now_unix_s());
    if let (Use::Fresh { age_s }, Some(s)) = (&verdict, &saved) {
        return Ok(HostFigure {
            label: saved_label(&s.probe, *age_s),
            report: s.probe.clone(),
            saved_age_s: Some(*age_s),
            note: None,
        });
    }
    let fresh = super::probe(&ProbeOptions::quick(), &mut |_| {});
    match fresh {
        Ok(r) if r.valid => {
            let note = match record(&r) {
                Ok(_) => None,
                Err(e) => Some(format!("this host's figure was not kept ({e})")),
            };
            Ok(HostFigure {
                label: format!("quick probe of this machine ({})", super::describe_cpu(&r)),
                report: r,
                saved_age_s: None,
                note,
            })
        }
        other => {
            let why = match &other {
                Ok(r) => r
                    .invalid_reason
                    .clone()
                    .unwrap_or_else(|| "the host is too busy".into()),
                Err(e) => e.to_string(),
            };
            match (verdict, saved) {
                (Use::Fallback { age_s, why: stale }, Some(s)) => Ok(HostFigure {
                    label: saved_label(&s.probe, age_s),
                    saved_age_s: Some(age_s),
                    note: Some(format!(
                        "the quick probe of this CPU gave no figure ({why}); using this host's \
                         saved figure although {stale}"
                    )),
                    report: s.probe,
                }),
                _ => Err(match other {
                    Err(e) => e,
                    Ok(_) => Error::runtime(format!(
                        "the quick probe of this CPU gave no figure: {why}; retry when the host \
                         is quieter, run `spinscope probe` at a quieter moment (it is kept for \
                         every command), or give --cpu NAME, --pause-ns NS or --probe FILE"
                    )),
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> HostKey {
        HostKey {
            vendor: "GenuineIntel".into(),
            model_name: "Intel(R) Xeon(R) Platinum 8488C".into(),
            family: 6,
            model: 143,
            stepping: 8,
            arm_implementer: 0,
            arm_part: 0,
            threads: 16,
            kernel_release: Some("6.1.0".into()),
            hypervisor: Some("KVMKVMKVM".into()),
        }
    }

    fn saved(k: HostKey, at: u64) -> SavedHost {
        let probe: ProbeReport = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/report/probe_intel_model167_chain.json"
            ))
            .unwrap(),
        )
        .unwrap();
        SavedHost {
            schema: SCHEMA.into(),
            key: k,
            saved_at_unix_s: at,
            probe,
            runs: vec![],
        }
    }

    #[test]
    fn a_saved_figure_is_used_while_the_host_is_the_same_and_young() {
        let now = 1_800_000_000;
        let s = saved(key(), now - 3600);
        assert_eq!(judge(Some(&s), &key(), now), Use::Fresh { age_s: 3600 });
        assert_eq!(judge(None, &key(), now), Use::No);
        // Old, or another kernel: measured again, kept as the fallback.
        let old = saved(key(), now - MAX_AGE_S - 1);
        assert!(matches!(
            judge(Some(&old), &key(), now),
            Use::Fallback { .. }
        ));
        let mut k = key();
        k.kernel_release = Some("6.12.0".into());
        match judge(Some(&s), &k, now) {
            Use::Fallback { why, .. } => assert!(why.contains("kernel"), "{why}"),
            u => panic!("{u:?}"),
        }
        // Another CPU, or another number of them (a resized VM): never.
        let mut k = key();
        k.model = 207;
        assert_eq!(judge(Some(&s), &k, now), Use::No);
        let mut k = key();
        k.threads = 32;
        assert_eq!(judge(Some(&s), &k, now), Use::No);
        // Saved "in the future" (this host's clock stepped back): not trusted as young.
        let future = saved(key(), now + 86_400);
        assert!(matches!(
            judge(Some(&future), &key(), now),
            Use::Fallback { .. }
        ));
    }

    #[test]
    fn the_spread_of_runs() {
        let run = |ns, c, g| Run {
            at_unix_s: 100,
            ns_per_hint: ns,
            cycles_per_hint: Some(c),
            core_ghz: Some(g),
        };
        assert_eq!(spread(&[run(13.4, 40.0, 3.0)]), None);
        let s = spread(&[
            run(13.4, 40.0, 3.0),
            run(17.2, 40.2, 2.34),
            run(13.5, 40.1, 2.98),
        ])
        .unwrap();
        assert_eq!(
            (s.runs, s.ns_min, s.ns_median, s.ns_max),
            (3, 13.4, 13.5, 17.2)
        );
        assert_eq!((s.cycles_min, s.cycles_max), (Some(40.0), Some(40.2)));
        assert_eq!((s.ghz_min, s.ghz_max), (Some(2.34), Some(3.0)));
    }

    #[test]
    fn ages_in_words() {
        assert_eq!(fmt_age(5), "5 s");
        assert_eq!(fmt_age(600), "10 min");
        assert_eq!(fmt_age(5 * 3600), "5 h");
        assert_eq!(fmt_age(3 * 86_400), "3 days");
    }
}
