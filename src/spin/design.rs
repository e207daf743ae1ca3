//! The one answer to "what should this server's spin settings be on this CPU?": the advice
//! `doctor`, `spin --match baseline`, `tune`'s model candidate and every other command give,
//! from the same CPU figure. Pure.
//!
//! The budget is what the version's defaults spin on the CPU they were designed for (a
//! Broadwell-class CPU, 10 cycles per PAUSE). Judged over the CPU figure's noise:
//! - within [`WARN_RATIO`] times the budget either way (over the CPU figure's noise interval),
//!   nothing changes;
//! - else, where the current values are not the defaults and the defaults come back under
//!   [`WARN_RATIO`] of the budget, put the defaults back (`DEFAULT`), with the settings that spin the budget
//!   exactly as the alternative;
//! - else the settings that spin the budget (`advice::recommend`).

use serde::{Deserialize, Serialize};

use super::advice::{
    current_vs_default, fmt_factor, max_spin_ns, recommend, recommendation_for, Recommendation,
};
use super::model::{default_settings, CpuModel, FamilyInfo, Settings};

/// The design ratio: the current settings on this CPU against the budget the version's
/// defaults were designed for (the defaults on a Broadwell-class CPU, 10 cycles per PAUSE).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignComparison {
    /// The CPU the defaults were designed on.
    pub design_cpu: String,
    /// Longest spin of the version's defaults on that CPU.
    pub design_max_spin_ns: f64,
    /// Longest spin of the current settings here.
    pub here_max_spin_ns: f64,
    /// here / design; None when the defaults do not spin.
    pub ratio: Option<f64>,
    /// The ratio over the CPU figure's noise interval.
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    pub in_words: String,
}

/// The design comparison of `settings` on `cpu`.
pub fn vs_design(
    info: &super::model::FamilyInfo,
    settings: &Settings,
    cpu: &CpuModel,
) -> DesignComparison {
    let design_cpu = CpuModel::from_reference(super::cpus::baseline());
    let design = max_spin_ns(info, &default_settings(info), &design_cpu);
    let here = max_spin_ns(info, settings, cpu);
    let w = cpu.noise_pct.clamp(0.0, 50.0) / 100.0;
    let ratio = (design > 0.0).then(|| here / design);
    let in_words = match ratio {
        None => format!("the defaults of {} do not spin", info.server),
        Some(r) => format!(
            "design ratio {}: these settings spin up to {} here, against the {} the defaults of {} \
             spin on {} (the budget they were designed for)",
            fmt_ratio(r),
            crate::units::fmt_ns(here),
            crate::units::fmt_ns(design),
            info.server,
            design_cpu.label
        ),
    };
    DesignComparison {
        design_cpu: design_cpu.label,
        design_max_spin_ns: design,
        here_max_spin_ns: here,
        ratio,
        ratio_low: ratio.map(|r| r * (1.0 - w)),
        ratio_high: ratio.map(|r| r * (1.0 + w)),
        in_words,
    }
}

/// "4450x", "2.7x", "0.5x".
pub fn fmt_ratio(r: f64) -> String {
    format!("{}x", fmt_factor(r))
}

/// Design ratio at which the spin budget is a warning, and under which nothing is advised.
pub const WARN_RATIO: f64 = 3.0;

#[derive(Debug, Clone, PartialEq)]
pub struct DesignAdvice {
    /// The longest spin of the version's defaults on the design CPU.
    pub design_max_spin_ns: f64,
    /// What to set; None when the current settings are within [`WARN_RATIO`] of the budget.
    pub primary: Option<Recommendation>,
    /// The settings that spin the budget exactly, when the primary advice puts defaults back
    /// and they differ from the defaults.
    pub alternative: Option<Recommendation>,
}

impl DesignAdvice {
    /// The settings the advice leads to (the current ones when nothing is to change).
    pub fn settings(&self, current: &Settings) -> Settings {
        self.primary.as_ref().map_or(*current, |r| r.settings)
    }
}

/// Settings whose spin lies beyond [`WARN_RATIO`] times the design budget (or under its
/// inverse: a spin far shorter than designed sends threads to sleep early) over the whole noise
/// interval of the CPU figure. A settings that does not spin at all has no ratio and is off
/// budget only when the defaults spin.
pub fn off_budget(d: &DesignComparison) -> bool {
    let over = d.ratio_low.unwrap_or(0.0) >= WARN_RATIO;
    let under = d.ratio_high.is_some_and(|r| r <= 1.0 / WARN_RATIO);
    over || under
}

pub fn design_advice(info: &FamilyInfo, current: &Settings, cpu: &CpuModel) -> DesignAdvice {
    let here = vs_design(info, current, cpu);
    let design_ns = here.design_max_spin_ns;
    if !off_budget(&here) {
        return DesignAdvice {
            design_max_spin_ns: design_ns,
            primary: None,
            alternative: None,
        };
    }
    let defaults = default_settings(info);
    let exact = recommend(info, current, cpu, design_ns);
    let defaults_suffice = !current_vs_default(info, current).is_empty()
        && !off_budget(&vs_design(info, &defaults, cpu));
    let (primary, alternative) = if defaults_suffice {
        let mut back = recommendation_for(info, current, cpu, design_ns, defaults);
        // Whether the band can be met at all is the exact search's finding, not the defaults'.
        back.reachable = exact.reachable;
        let alt = (exact.reachable && exact.settings != defaults).then_some(exact);
        let after = vs_design(info, &defaults, cpu);
        back.explanation = format!(
            "{}: up to {} here, design ratio {} (within {WARN_RATIO}x of the design budget, where nothing needs to change)",
            back.changes
                .iter()
                .map(|c| format!("{} back to its default {}", c.variable, c.to))
                .collect::<Vec<_>>()
                .join(" and "),
            crate::units::fmt_ns(after.here_max_spin_ns),
            fmt_ratio(after.ratio.unwrap_or(0.0))
        );
        (back, alt)
    } else {
        (exact, None)
    };
    DesignAdvice {
        design_max_spin_ns: design_ns,
        primary: Some(primary),
        alternative,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin::model::family_for;
    use crate::spin::version::parse_version;

    fn cpu(ns: f64, noise_pct: f64) -> CpuModel {
        CpuModel {
            label: "test".into(),
            arch: crate::spin::model::Arch::X86_64,
            ns_per_hint: ns,
            tsc_ticks_per_hint: Some(ns * 2.6),
            ghz: Some(2.6),
            approximate: false,
            noise_pct,
        }
    }

    #[test]
    fn defaults_back_from_6000_the_same_at_every_point_of_the_noise() {
        let v = parse_version("10.11.6-MariaDB", None).unwrap();
        let info = family_for(&v);
        let mut cur = default_settings(&info);
        cur.spin_wait_delay = 6000;
        // The Sapphire Rapids figures, 12.6 to 17.35 ns: one answer.
        let answers: Vec<Settings> = [12.6, 13.4, 15.0, 17.35]
            .iter()
            .map(|ns| design_advice(&info, &cur, &cpu(*ns, 8.0)).settings(&cur))
            .collect();
        assert!(
            answers.iter().all(|s| *s == default_settings(&info)),
            "{answers:?}"
        );
        // Defaults on a Broadwell-class CPU: nothing to change.
        let d = design_advice(&info, &default_settings(&info), &cpu(4.5, 8.0));
        assert!(d.primary.is_none());
        assert_eq!(
            d.settings(&default_settings(&info)),
            default_settings(&info)
        );
    }
}
