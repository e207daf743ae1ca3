//! Spin budget: the current settings on this CPU against the budget the version's defaults
//! were designed for (the defaults on a Broadwell-class CPU; docs/REFERENCE.md §1, §2).
//!
//! Severity comes from the low end of the design ratio over the CPU figure's noise, so a
//! figure that moves a few percent between runs does not move the severity: below 3x nothing
//! is advised; 3x and more is a warning, 10x and more critical. The fix prefers putting
//! non-default values back (`DEFAULT`) when the defaults bring the ratio under 3x; otherwise,
//! and as the exact alternative, the advisor's settings for the design budget.

use crate::doctor::{ev, Facts, Finding, Severity};
use crate::spin::advice::{current_vs_default, recommend, recommendation_for, Recommendation};
use crate::spin::doc::{fmt_ratio, vs_design};
use crate::spin::model::{default_settings, family_for, settings_from_vars, FamilyInfo};
use crate::units::fmt_ns;

/// Design ratio at which the spin budget is a warning, and where nothing is advised below.
pub const WARN_RATIO: f64 = 3.0;
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
    out.extend(budget(f, &info));
    out
}

fn severity_for(ratio_low: f64) -> Severity {
    if ratio_low >= CRITICAL_RATIO {
        Severity::Critical
    } else if ratio_low >= WARN_RATIO {
        Severity::Warning
    } else {
        Severity::Info
    }
}

fn budget(f: &Facts, info: &FamilyInfo) -> Vec<Finding> {
    // Out-of-range or non-numeric values are reported by `absurd`; the default is priced.
    let (current, _, _) = settings_from_vars(info, |n| f.vars.str(n));
    let d = current.spin_wait_delay;
    let l = current.sync_spin_loops;
    let mut settings_ev = vec![
        ev(info.delay.name, d as f64, ""),
        ev(info.loops.name, l as f64, ""),
    ];
    if let (Some(spec), Some(m)) = (info.multiplier, current.pause_multiplier) {
        settings_ev.push(ev(spec.name, m as f64, ""));
    }
    let Some(cpu) = &f.cpu else {
        return vec![Finding {
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
        }];
    };
    let vs = vs_design(info, &current, cpu);
    let design_ns = vs.design_max_spin_ns;
    let here_ns = vs.here_max_spin_ns;
    let ratio = vs.ratio.unwrap_or(0.0);
    let ratio_low = vs.ratio_low.unwrap_or(0.0);
    let ratio_high = vs.ratio_high.unwrap_or(0.0);
    let severity = severity_for(ratio_low);
    let noisy = cpu.noise_pct > 0.0;
    let ratio_txt = if noisy {
        format!(
            "{} ({}-{} within the CPU figure's +-{:.0}% noise)",
            fmt_ratio(ratio),
            fmt_ratio(ratio_low),
            fmt_ratio(ratio_high),
            cpu.noise_pct
        )
    } else {
        fmt_ratio(ratio)
    };
    let title = format!(
        "design ratio {}: {l} rounds here spin up to {} per latch attempt, against the {} the defaults were designed for",
        fmt_ratio(ratio),
        fmt_ns(here_ns),
        fmt_ns(design_ns)
    );
    let mut evidence = vec![
        ev("max_spin_here", here_ns / 1e3, "us"),
        ev("max_spin_design", design_ns / 1e3, "us"),
        ev("design_ratio", ratio, "x"),
    ];
    if noisy {
        evidence.push(ev("design_ratio_low", ratio_low, "x"));
        evidence.push(ev("design_ratio_high", ratio_high, "x"));
    }
    evidence.push(ev("ns_per_hint", cpu.ns_per_hint, "ns"));
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
                 under {WARN_RATIO:.0}x.",
                info.server
            ),
            what_to_do: format!(
                "No change: the spin budget is within {WARN_RATIO:.0}x of the design budget."
            ),
            statements: vec![],
        }];
    }

    // The fix: DEFAULT where the defaults are back under the warning ratio, else (and as the
    // exact alternative) the settings the advisor finds for the design budget.
    let defaults = default_settings(info);
    let nondefault = current_vs_default(info, &current);
    let exact = recommend(info, &current, cpu, design_ns);
    let back_to_default = (!nondefault.is_empty()).then(|| {
        let dv = vs_design(info, &defaults, cpu);
        (
            recommendation_for(info, &current, cpu, design_ns, defaults),
            dv,
        )
    });
    let (primary, alternative): (Recommendation, Option<Recommendation>) = match back_to_default {
        Some((rec, dv)) if dv.ratio_low.unwrap_or(0.0) < WARN_RATIO => {
            let alt = (exact.reachable && exact.settings != defaults).then_some(exact);
            (rec, alt)
        }
        _ => (exact, None),
    };
    let after = vs_design(info, &primary.settings, cpu);
    evidence.push(ev("after_fix_max_spin", after.here_max_spin_ns / 1e3, "us"));
    evidence.push(ev(
        "after_fix_design_ratio",
        after.ratio.unwrap_or(0.0),
        "x",
    ));

    let mut what = String::new();
    if !nondefault.is_empty() {
        what.push_str(&format!("{}. ", nondefault.join("; ")));
    }
    if primary.changes.iter().all(|c| c.to_default) && !primary.changes.is_empty() {
        what.push_str(&format!(
            "Put the default back: it spins up to {} here, design ratio {} (under {WARN_RATIO:.0}x).",
            fmt_ns(after.here_max_spin_ns),
            fmt_ratio(after.ratio.unwrap_or(0.0))
        ));
        if let Some(alt) = &alternative {
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
    vec![Finding {
        id: "spin-budget".into(),
        severity,
        title,
        evidence,
        why: format!(
            "{model}. A thread that cannot get a latch burns this long before it sleeps; the design ratio is \
             {ratio_txt}. Spinning far longer than designed costs CPU and throughput under contention \
             (docs/REFERENCE.md §8: on a 2-vCPU KVM machine MariaDB 10.11 with innodb_spin_wait_delay=6000 \
             lost 3.4x write TPS at 16 threads)."
        ),
        what_to_do: what,
        statements: primary.set_global.clone(),
        option_file: primary.option_file.clone(),
    }]
}
