//! The `spinscope.spin/1` document: everything `spin` computed, as plain values. Pure builder.

use serde::{Deserialize, Serialize};

use super::advice::{max_spin_ns, recommend, Recommendation};
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: Side,
    /// Longest spin here / longest spin on the baseline (first readings); None if the
    /// baseline does not spin at all.
    pub ratio: Option<f64>,
    pub in_words: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub target_description: String,
    pub recommendation: Recommendation,
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
    pub this: Side,
    pub comparison: Comparison,
    pub advice: Option<Advice>,
    pub notes: Vec<String>,
}

/// Words for a ratio of spin times.
pub fn ratio_in_words(ratio: Option<f64>, baseline_label: &str) -> String {
    match ratio {
        None => format!("the baseline ({baseline_label}) does not spin with these settings"),
        Some(0.0) => "these settings do not spin at all".to_string(),
        Some(r) if (0.9..=1.1).contains(&r) => format!("about the same spin time as on the baseline ({baseline_label})"),
        Some(r) if r > 1.0 => format!("{r:.1}x longer than on the baseline ({baseline_label}) these settings were designed for"),
        Some(r) => format!("{:.1}x shorter than on the baseline ({baseline_label})", 1.0 / r),
    }
}

/// Build the whole document from resolved inputs.
pub fn build(
    server: &ServerVersion,
    settings: Settings,
    settings_given: Vec<String>,
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
        Advice {
            target_description,
            recommendation: recommend(&info, &settings, &this.cpu, target_ns),
        }
    });

    let mut notes: Vec<String> = info.notes.iter().map(|s| s.to_string()).collect();
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
        this,
        comparison: Comparison {
            baseline: base_side,
            ratio,
            in_words,
        },
        advice,
        notes,
    }
}
