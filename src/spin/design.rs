//! The one answer to "what should this server's spin settings be on this CPU?": the advice
//! `doctor`, `spin --match baseline`, `tune`'s model candidate and every other command give,
//! from the same CPU figure. Pure.
//!
//! The budget is what the version's defaults spin on the CPU they were designed for (a
//! Broadwell-class CPU, 10 cycles per PAUSE). Judged over the CPU figure's noise:
//! - under [`WARN_RATIO`] times the budget (the low end of the interval), nothing changes;
//! - else, where the current values are not the defaults and the defaults come back under
//!   [`WARN_RATIO`], put the defaults back (`DEFAULT`), with the settings that spin the budget
//!   exactly as the alternative;
//! - else the settings that spin the budget (`advice::recommend`).

use super::advice::{current_vs_default, recommend, recommendation_for, Recommendation};
use super::doc::vs_design;
use super::model::{default_settings, CpuModel, FamilyInfo, Settings};

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

pub fn design_advice(info: &FamilyInfo, current: &Settings, cpu: &CpuModel) -> DesignAdvice {
    let here = vs_design(info, current, cpu);
    let design_ns = here.design_max_spin_ns;
    let no_change = here.ratio_low.unwrap_or(0.0) < WARN_RATIO;
    if no_change {
        return DesignAdvice {
            design_max_spin_ns: design_ns,
            primary: None,
            alternative: None,
        };
    }
    let defaults = default_settings(info);
    let exact = recommend(info, current, cpu, design_ns);
    let defaults_suffice = !current_vs_default(info, current).is_empty()
        && vs_design(info, &defaults, cpu).ratio_low.unwrap_or(0.0) < WARN_RATIO;
    let (primary, alternative) = if defaults_suffice {
        let alt = (exact.reachable && exact.settings != defaults).then_some(exact);
        let mut back = recommendation_for(info, current, cpu, design_ns, defaults);
        let after = vs_design(info, &defaults, cpu);
        back.explanation = format!(
            "{}: up to {} here, design ratio {} (under {WARN_RATIO}x, where nothing needs to change)",
            back.changes
                .iter()
                .map(|c| format!("{} back to its default {}", c.variable, c.to))
                .collect::<Vec<_>>()
                .join(" and "),
            crate::units::fmt_ns(after.here_max_spin_ns),
            super::doc::fmt_ratio(after.ratio.unwrap_or(0.0))
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
