//! Spin budget: the current settings on this CPU against the budget the version's defaults
//! were designed for (the defaults on a Broadwell-class CPU; docs/REFERENCE.md §1, §2).
//!
//! Severity comes from the design ratio over the CPU figure's noise, so a figure that moves a
//! few percent between runs does not move the severity: within 3x either way nothing is
//! advised; 3x and more (or 1/3 and less: threads sleep early) is a warning, 10x and more
//! critical. The fix is the one design advice every command gives (`spin::design`): the
//! defaults back where they bring the ratio within 3x, with the advisor's settings for the
//! design budget as the exact alternative; otherwise those settings. With a saved wait
//! document (`doctor --waits`), `spin_waits` makes the measured direction decide.

use crate::doctor::{ev, Evidence, Facts, Finding, Severity};
use crate::spin::advice::{current_vs_default, Recommendation};
use crate::spin::design::{design_advice, off_budget};
use crate::spin::doc::{fmt_ratio, vs_design, DesignComparison};
use crate::spin::model::{family_for, settings_from_vars, CpuModel, FamilyInfo, Settings};
use crate::units::fmt_ns;

/// Design ratio at which the spin budget is a warning, and where nothing is advised below.
pub use crate::spin::design::WARN_RATIO;
/// Design ratio at which it is critical.
pub const CRITICAL_RATIO: f64 = 10.0;

/// Values the server reports that are not numbers or lie outside the version's legal range.
fn absurd(f: &Facts, info: &FamilyInfo) -> Vec<Finding> {
    let specs = [Some(info.delay), Some(info.loops), info.multiplier];
    specs
        .into_iter()
        .flatten()
        .filter_map(|spec| {
            let raw = f.vars.str(spec.name)?;
            let ok = raw
                .trim()
                .parse::<u64>()
                .is_ok_and(|v| (spec.min..=spec.max).contains(&v));
            (!ok).then(|| Finding {
                option_file: vec![],
                id: "spin-setting-out-of-range".into(),
                severity: Severity::Warning,
                title: format!(
                    "{} = {raw:?} is not a legal value on {} ({}..={})",
                    spec.name, info.server, spec.min, spec.max
                ),
                evidence: vec![],
                why: "The spin model cannot price this value; the default was assumed instead. A snapshot \
                      edited by hand or a build with other limits can show this."
                    .into(),
                what_to_do: format!("Check the value the server really uses: SELECT @@GLOBAL.{};", spec.name),
                statements: vec![format!("SELECT @@GLOBAL.{};", spec.name)],
            })
        })
        .collect()
}

pub fn check(f: &Facts) -> Vec<Finding> {
    let Some(v) = &f.version else { return vec![] };
    let info = family_for(v);
    let mut out = absurd(f, &info);
    let design = budget(f, &info);
    // With a saved wait document, its measured direction decides (`spin_waits`).
    out.extend(match &f.waits {
        Some(w) => super::spin_waits::follow(f, &info, w, design),
        None => design,
    });
    out
}

fn severity_for(vs: &DesignComparison) -> Severity {
    let ratio_low = vs.ratio_low.unwrap_or(0.0);
    if ratio_low >= CRITICAL_RATIO {
        Severity::Critical
    } else if off_budget(vs) {
        Severity::Warning
    } else {
        Severity::Info
    }
}

fn budget(f: &Facts, info: &FamilyInfo) -> Vec<Finding> {
    // Out-of-range or non-numeric values are reported by `absurd`; the default is priced.
    let (current, _, _) = settings_from_vars(info, |n| f.vars.str(n));
    let l = current.sync_spin_loops;
    let settings_ev = settings_evidence(info, &current);
    let Some(cpu) = &f.cpu else {
        return vec![unknown_cpu(settings_ev)];
    };
    let vs = vs_design(info, &current, cpu);
    let design_ns = vs.design_max_spin_ns;
    let ratio = vs.ratio.unwrap_or(0.0);
    let severity = severity_for(&vs);
    let ratio_txt = ratio_text(&vs, cpu);
    let title = format!(
        "design ratio {}: {l} rounds here spin up to {} per latch attempt, against the {} the defaults were designed for",
        fmt_ratio(ratio),
        fmt_ns(vs.here_max_spin_ns),
        fmt_ns(design_ns)
    );
    let mut evidence = ratio_evidence(&vs, cpu);
    evidence.extend(settings_ev);
    let model = format!(
        "{} ({}), priced with the CPU figure from the {}",
        info.server, info.formula, cpu.label
    );
    if severity == Severity::Info {
        return vec![Finding {
            option_file: vec![],
            id: "spin-budget".into(),
            severity,
            title,
            evidence,
            why: format!(
                "{model}. The design budget is what the defaults of {} spin on a Broadwell-class CPU \
                 (10 cycles per PAUSE), the hardware they were tuned on; the design ratio here is {ratio_txt}, \
                 within {WARN_RATIO:.0}x either way.",
                info.server
            ),
            what_to_do: format!(
                "No change: the spin budget is within {WARN_RATIO:.0}x of the design budget."
            ),
            statements: vec![],
        }];
    }
    let Some(fix) = Fix::new(info, &current, cpu) else {
        return vec![];
    };
    let after = vs_design(info, &fix.primary.settings, cpu);
    evidence.push(ev("after_fix_max_spin", after.here_max_spin_ns / 1e3, "us"));
    evidence.push(ev(
        "after_fix_design_ratio",
        after.ratio.unwrap_or(0.0),
        "x",
    ));
    vec![Finding {
        id: "spin-budget".into(),
        severity,
        title,
        evidence,
        why: if ratio < 1.0 {
            format!(
                "{model}. A thread that cannot get a latch spins only this long before it sleeps; the design \
                 ratio is {ratio_txt}, under 1/{WARN_RATIO:.0}: threads go to an OS wait (and pay a wake-up) \
                 where the designed spin would have got the latch."
            )
        } else {
            format!(
                "{model}. A thread that cannot get a latch burns this long before it sleeps; the design ratio is \
                 {ratio_txt}. Spinning far longer than designed costs CPU and throughput under contention \
                 (docs/REFERENCE.md §8: on a 2-vCPU KVM machine MariaDB 10.11 with innodb_spin_wait_delay=6000 \
                 lost 3.4x write TPS at 16 threads)."
            )
        },
        what_to_do: fix.text(&after)
            + &crate::doctor::origin::fixes_where(&f.snap.var_origins, &fix.primary.changes),
        statements: fix.primary.set_global.clone(),
        option_file: fix.primary.option_file.clone(),
    }]
}

/// The spin settings as evidence: delay, loops and, where the version has one, the pause
/// multiplier.
fn settings_evidence(info: &FamilyInfo, current: &Settings) -> Vec<Evidence> {
    let mut settings_ev = vec![
        ev(info.delay.name, current.spin_wait_delay as f64, ""),
        ev(info.loops.name, current.sync_spin_loops as f64, ""),
    ];
    if let (Some(spec), Some(m)) = (info.multiplier, current.pause_multiplier) {
        settings_ev.push(ev(spec.name, m as f64, ""));
    }
    settings_ev
}

fn unknown_cpu(settings_ev: Vec<Evidence>) -> Finding {
    Finding {
        option_file: vec![],
        id: "spin-budget-unknown-cpu".into(),
        severity: Severity::Info,
        title: "spin budget not evaluated: the server's CPU is unknown".into(),
        evidence: settings_ev,
        why: "How long a spin lasts depends on the CPU's spin-hint latency (10 to 140 cycles per PAUSE; \
              docs/REFERENCE.md §2)."
            .into(),
        what_to_do: "Run doctor on the server's host, or pass --host-facts with a snapshot or probe taken there.".into(),
        statements: vec![],
    }
}

/// The design ratio in words, with its range when the CPU figure is noisy.
fn ratio_text(vs: &DesignComparison, cpu: &CpuModel) -> String {
    let ratio = vs.ratio.unwrap_or(0.0);
    if cpu.noise_pct > 0.0 {
        format!(
            "{} ({}-{} within the CPU figure's +-{:.0}% noise)",
            fmt_ratio(ratio),
            fmt_ratio(vs.ratio_low.unwrap_or(0.0)),
            fmt_ratio(vs.ratio_high.unwrap_or(0.0)),
            cpu.noise_pct
        )
    } else {
        fmt_ratio(ratio)
    }
}

/// The longest spins here and by design, the ratio (and its range when the CPU figure is
/// noisy), and the CPU's spin-hint latency.
fn ratio_evidence(vs: &DesignComparison, cpu: &CpuModel) -> Vec<Evidence> {
    let mut evidence = vec![
        ev("max_spin_here", vs.here_max_spin_ns / 1e3, "us"),
        ev("max_spin_design", vs.design_max_spin_ns / 1e3, "us"),
        ev("design_ratio", vs.ratio.unwrap_or(0.0), "x"),
    ];
    if cpu.noise_pct > 0.0 {
        evidence.push(ev("design_ratio_low", vs.ratio_low.unwrap_or(0.0), "x"));
        evidence.push(ev("design_ratio_high", vs.ratio_high.unwrap_or(0.0), "x"));
    }
    evidence.push(ev("ns_per_hint", cpu.ns_per_hint, "ns"));
    evidence
}

/// The fix: the one design advice every command gives (`spin::design`), in doctor's words.
struct Fix {
    /// The values that are not the defaults, in words.
    nondefault: Vec<String>,
    primary: Recommendation,
    alternative: Option<Recommendation>,
}

impl Fix {
    /// None when the advice is to change nothing.
    fn new(info: &FamilyInfo, current: &Settings, cpu: &CpuModel) -> Option<Fix> {
        let d = design_advice(info, current, cpu);
        Some(Fix {
            nondefault: current_vs_default(info, current),
            primary: d.primary?,
            alternative: d.alternative,
        })
    }

    /// What to do, given the comparison of the primary fix's settings (`after`).
    fn text(&self, after: &DesignComparison) -> String {
        let primary = &self.primary;
        let mut what = String::new();
        if !self.nondefault.is_empty() {
            what.push_str(&format!("{}. ", self.nondefault.join("; ")));
        }
        if primary.changes.iter().all(|c| c.to_default) && !primary.changes.is_empty() {
            what.push_str(&format!(
                "Put the default back: it spins up to {} here, design ratio {} (within {WARN_RATIO:.0}x of the design budget).",
                fmt_ns(after.here_max_spin_ns),
                fmt_ratio(after.ratio.unwrap_or(0.0))
            ));
            if let Some(alt) = &self.alternative {
                what.push_str(&format!(
                    " To spin exactly the design budget on this CPU instead: {} ({}).",
                    alt.set_global.join(" "),
                    alt.explanation
                ));
            }
        } else if primary.reachable {
            what.push_str(&format!(
                "Bring the spin back to the design budget: {}.",
                primary.explanation
            ));
        } else {
            what.push_str(&format!(
                "The design budget cannot be met exactly ({}); the closest legal settings are given.",
                primary.explanation
            ));
        }
        what
    }
}
