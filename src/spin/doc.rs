//! The `spinscope.spin/1` document: everything `spin` computed, as plain values. Pure builder.

use serde::{Deserialize, Serialize};

pub use super::advice::fmt_factor;
use super::advice::{max_spin_ns, recommend, recommendation_for, Recommendation};
pub use super::design::{fmt_ratio, vs_design, DesignComparison};
use super::model::{default_settings, family_for, readings, CpuModel, Family, Reading, Settings};
use super::version::ServerVersion;

pub const SCHEMA: &str = "spinscope.spin/1";

/// What the recommendation aims at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Target {
    /// `--target-us N`: longest spin before the OS wait, in microseconds.
    MaxSpinUs(f64),
    /// `--match CPU`: spin as long as this version's defaults do on that CPU.
    Match(CpuModel),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub cpu: CpuModel,
    pub readings: Vec<Reading>,
}

/// The CPU ratio: the same settings on another CPU (the CPU's effect alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: Side,
    /// Longest spin here / longest spin of the same settings on the baseline (first readings);
    /// None if the baseline does not spin at all.
    pub ratio: Option<f64>,
    pub in_words: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub target_description: String,
    pub recommendation: Recommendation,
    /// For the design budget (`--match baseline`): the settings that spin it exactly, when the
    /// advice is to put the defaults back (`spin::design`, the advice doctor and tune give).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<Recommendation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpinReport {
    pub schema: String,
    pub server: ServerVersion,
    pub family: Family,
    pub formula: String,
    pub settings: Settings,
    /// Variables the user gave; the rest are the version's defaults.
    pub settings_given: Vec<String>,
    /// Where the settings came from: the version's defaults, the command line, a live server
    /// or a doctor snapshot.
    #[serde(default)]
    pub settings_source: String,
    pub this: Side,
    /// Current settings here against the defaults' design budget.
    pub vs_design: DesignComparison,
    /// The same settings on the baseline CPU.
    pub comparison: Comparison,
    pub advice: Option<Advice>,
    pub notes: Vec<String>,
}

/// Words for a ratio of spin times.
pub fn ratio_in_words(ratio: Option<f64>, baseline_label: &str) -> String {
    match ratio {
        None => format!("CPU ratio: the baseline ({baseline_label}) does not spin with these settings"),
        Some(0.0) => "CPU ratio: these settings do not spin at all".to_string(),
        Some(r) if (0.9..=1.1).contains(&r) => {
            format!("CPU ratio {r:.1}x: about the same spin time as the same settings on {baseline_label}")
        }
        Some(r) if r > 1.0 => {
            format!("CPU ratio {r:.1}x: the same settings spin {r:.1}x longer here than on {baseline_label}")
        }
        Some(r) => format!(
            "CPU ratio {r:.2}x: the same settings spin {:.1}x shorter here than on {baseline_label}",
            1.0 / r
        ),
    }
}

/// Build the whole document from resolved inputs.
pub fn build(
    server: &ServerVersion,
    settings: Settings,
    settings_given: Vec<String>,
    settings_source: String,
    cpu: CpuModel,
    baseline: CpuModel,
    target: Option<Target>,
) -> SpinReport {
    let info = family_for(server);
    let this = Side {
        readings: readings(&info, &settings, &cpu),
        cpu,
    };
    let base_side = Side {
        readings: readings(&info, &settings, &baseline),
        cpu: baseline,
    };
    let here = this.readings.first().map(|r| r.max_spin_ns).unwrap_or(0.0);
    let there = base_side
        .readings
        .first()
        .map(|r| r.max_spin_ns)
        .unwrap_or(0.0);
    let ratio = if there > 0.0 {
        Some(here / there)
    } else {
        None
    };
    let in_words = ratio_in_words(ratio, &base_side.cpu.label);
    let design = vs_design(&info, &settings, &this.cpu);

    let advice = target.map(|t| {
        let (target_ns, target_description) = match &t {
            Target::MaxSpinUs(us) => (
                us * 1e3,
                format!("longest spin before the OS wait = {us} us (--target-us)"),
            ),
            Target::Match(other) => {
                let ns = max_spin_ns(&info, &default_settings(&info), other);
                (
                    ns,
                    format!(
                        "the {:.1} us the defaults of {} spin on {}",
                        ns / 1e3,
                        info.server,
                        other.label
                    ),
                )
            }
        };
        // The design budget is one question with one answer, whichever command asks it.
        let is_design = (target_ns - design.design_max_spin_ns).abs()
            <= 1e-9 * design.design_max_spin_ns.max(1.0);
        if is_design {
            let d = super::design::design_advice(&info, &settings, &this.cpu);
            let recommendation = d.primary.unwrap_or_else(|| {
                recommendation_for(&info, &settings, &this.cpu, target_ns, settings)
            });
            return Advice {
                target_description: format!(
                    "{target_description}: the design budget (changed only at {}x or more; \
                     doctor and tune give the same advice)",
                    super::design::WARN_RATIO
                ),
                recommendation,
                alternative: d.alternative,
            };
        }
        Advice {
            target_description,
            recommendation: recommend(&info, &settings, &this.cpu, target_ns),
            alternative: None,
        }
    });

    let mut notes: Vec<String> = info.notes.iter().map(|s| s.to_string()).collect();
    if settings_given.is_empty() && settings_source.starts_with("defaults") {
        notes.push(format!(
            "these are the defaults of {}, not a live server's settings: pass --from-server \
             (with connection flags) or --snapshot FILE to price what a server runs",
            info.server
        ));
    }
    if this.cpu.noise_pct > 0.0 {
        notes.push(format!(
            "{} is measured: it moves about +-{:.0}% from run to run, so ratios and advice use that interval",
            this.cpu.label, this.cpu.noise_pct
        ));
    }
    if advice.is_some() && this.readings.len() > 1 {
        notes.push(format!(
            "the advice uses the first reading ({})",
            this.readings[0].label
        ));
    }
    if this.cpu.approximate {
        notes.push(format!(
            "{}: the per-hint figure is indicative only; run `spinscope probe` on that machine",
            this.cpu.label
        ));
    }
    if server.flavor_inferred {
        notes.push(format!(
            "flavor {} was inferred from the version string; override with --flavor",
            server.flavor.name()
        ));
    }
    SpinReport {
        schema: SCHEMA.into(),
        server: server.clone(),
        family: info.family,
        formula: info.formula.into(),
        settings,
        settings_given,
        settings_source,
        this,
        vs_design: design,
        comparison: Comparison {
            baseline: base_side,
            ratio,
            in_words,
        },
        advice,
        notes,
    }
}
