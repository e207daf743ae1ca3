//! Recommend legal settings whose longest spin (L rounds at the maximum hints per round) comes
//! closest to a target time on a CPU. Pure.

use serde::{Deserialize, Serialize};

use super::model::{readings, CpuModel, FamilyInfo, Settings};

/// How close counts as reaching the target.
pub const REACHED_WITHIN_PCT: f64 = 10.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub variable: String,
    pub from: u64,
    pub to: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub target_max_spin_ns: f64,
    pub settings: Settings,
    pub achieved_max_spin_ns: f64,
    /// (achieved - target) / target * 100.
    pub error_pct: f64,
    /// False when no legal setting comes within REACHED_WITHIN_PCT of the target.
    pub reachable: bool,
    pub changes: Vec<Change>,
    pub set_global: Vec<String>,
    pub my_cnf: String,
    pub explanation: String,
}

/// The longest spin before the OS wait under the model's first reading.
pub fn max_spin_ns(info: &FamilyInfo, s: &Settings, cpu: &CpuModel) -> f64 {
    readings(info, s, cpu)
        .first()
        .map(|r| r.max_spin_ns)
        .unwrap_or(0.0)
}

fn rel_err(achieved: f64, target: f64) -> f64 {
    if target == 0.0 {
        if achieved == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (achieved - target) / target * 100.0
    }
}

/// Smallest value in [lo, hi] with f(v) >= target (f non-decreasing), and its predecessor:
/// the two candidates closest to the target.
fn bracket(lo: u64, hi: u64, target: f64, f: impl Fn(u64) -> f64) -> Vec<u64> {
    let (mut a, mut b) = (lo, hi);
    if f(b) < target {
        return vec![b];
    }
    while a < b {
        let mid = a + (b - a) / 2;
        if f(mid) >= target {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    if a > lo {
        vec![a - 1, a]
    } else {
        vec![a]
    }
}

fn pick(
    cands: impl IntoIterator<Item = Settings>,
    target: f64,
    eval: &impl Fn(&Settings) -> f64,
) -> Option<(Settings, f64)> {
    cands.into_iter().map(|s| (s, eval(&s))).min_by(|a, b| {
        rel_err(a.1, target)
            .abs()
            .total_cmp(&rel_err(b.1, target).abs())
    })
}

/// Find the legal settings closest to `target_ns` on `cpu`. MySQL 8.0.16+ tunes the multiplier
/// first (the knob designed for this) and the delay only if the multiplier alone cannot get
/// within REACHED_WITHIN_PCT; other versions tune the delay. Spin loops stay as they are.
pub fn recommend(
    info: &FamilyInfo,
    current: &Settings,
    cpu: &CpuModel,
    target_ns: f64,
) -> Recommendation {
    let target_ns = target_ns.max(0.0);
    let eval = |s: &Settings| max_spin_ns(info, s, cpu);
    let with_d = |d: u64| Settings {
        spin_wait_delay: d,
        ..*current
    };
    let d_cands = |base: Settings| {
        bracket(info.delay.min, info.delay.max, target_ns, |d| {
            eval(&Settings {
                spin_wait_delay: d,
                ..base
            })
        })
        .into_iter()
        .map(move |d| Settings {
            spin_wait_delay: d,
            ..base
        })
    };

    let best = match info.multiplier {
        Some(mspec) => {
            let with_m = |m: u64| Settings {
                pause_multiplier: Some(m),
                ..*current
            };
            let m_only = pick(
                bracket(mspec.min, mspec.max, target_ns, |m| eval(&with_m(m)))
                    .into_iter()
                    .map(with_m),
                target_ns,
                &eval,
            );
            match m_only {
                Some((s, t)) if rel_err(t, target_ns).abs() <= REACHED_WITHIN_PCT => (s, t),
                other => {
                    // Joint search: for each multiplier, the best delay.
                    let joint = (mspec.min.max(1)..=mspec.max).flat_map(|m| d_cands(with_m(m)));
                    let j = pick(joint, target_ns, &eval);
                    match (other, j) {
                        (Some(a), Some(b))
                            if rel_err(b.1, target_ns).abs() < rel_err(a.1, target_ns).abs() =>
                        {
                            b
                        }
                        (Some(a), _) => a,
                        (None, Some(b)) => b,
                        (None, None) => (*current, eval(current)),
                    }
                }
            }
        }
        None => pick(d_cands(*current), target_ns, &eval)
            .unwrap_or((with_d(current.spin_wait_delay), eval(current))),
    };
    let (settings, achieved) = best;
    let error_pct = rel_err(achieved, target_ns);
    let reachable = error_pct.abs() <= REACHED_WITHIN_PCT;

    let mut changes = Vec::new();
    if settings.spin_wait_delay != current.spin_wait_delay {
        changes.push(Change {
            variable: info.delay.name.into(),
            from: current.spin_wait_delay,
            to: settings.spin_wait_delay,
        });
    }
    if let (Some(spec), Some(from), Some(to)) = (
        info.multiplier,
        current.pause_multiplier,
        settings.pause_multiplier,
    ) {
        if from != to {
            changes.push(Change {
                variable: spec.name.into(),
                from,
                to,
            });
        }
    }
    let set_global = changes
        .iter()
        .map(|c| format!("SET GLOBAL {} = {};", c.variable, c.to))
        .collect();
    let mut my_cnf = format!(
        "[mysqld]\n{} = {}\n{} = {}\n",
        info.delay.name, settings.spin_wait_delay, info.loops.name, settings.sync_spin_loops
    );
    if let (Some(spec), Some(m)) = (info.multiplier, settings.pause_multiplier) {
        my_cnf.push_str(&format!("{} = {}\n", spec.name, m));
    }
    let explanation = if !reachable {
        format!(
            "no legal setting of {} reaches the target; the closest spins {:.1} us, {:+.0}% off",
            info.server,
            achieved / 1e3,
            error_pct
        )
    } else if changes.is_empty() {
        "the current settings already meet the target".to_string()
    } else {
        format!(
            "these settings spin {:.1} us at most, {:+.1}% from the target",
            achieved / 1e3,
            error_pct
        )
    };
    Recommendation {
        target_max_spin_ns: target_ns,
        settings,
        achieved_max_spin_ns: achieved,
        error_pct,
        reachable,
        changes,
        set_global,
        my_cnf,
        explanation,
    }
}

#[cfg(test)]
mod tests {
    use super::super::cpus::{baseline, lookup};
    use super::super::model::{default_settings, family_for, resolve_settings};
    use super::super::version::parse_version;
    use super::*;

    fn setup(ver: &str) -> (FamilyInfo, Settings) {
        let info = family_for(&parse_version(ver, None).unwrap());
        let s = default_settings(&info);
        (info, s)
    }

    #[test]
    fn mysql80_defaults_moved_from_broadwell_to_skylake_sp_land_near_50_over_14() {
        let (info, s) = setup("8.0.40");
        let base = CpuModel::from_reference(baseline());
        let sky = CpuModel::from_reference(lookup("skylake-sp").unwrap());
        let target = max_spin_ns(&info, &s, &base);
        let r = recommend(&info, &s, &sky, target);
        let m = r.settings.pause_multiplier.unwrap();
        // 50/14 = 3.6 in cycles; with the clocks of the table (2.2 vs 2.5 GHz) 4.06.
        assert!((3..=5).contains(&m), "m = {m}");
        assert_eq!(r.settings.spin_wait_delay, 6, "the delay stays");
        assert!(r.reachable, "{r:?}");
        assert_eq!(
            r.set_global,
            vec![format!(
                "SET GLOBAL innodb_spin_wait_pause_multiplier = {m};"
            )]
        );
        assert!(r
            .my_cnf
            .contains(&format!("innodb_spin_wait_pause_multiplier = {m}")));
    }

    #[test]
    fn mariadb_tunes_the_delay() {
        let (info, s) = setup("10.11.19-MariaDB");
        let zen4 = CpuModel::from_reference(lookup("zen4").unwrap());
        // Target: 10 us max spin. 30 rounds * 25*d hints * 24.6 ns -> d = 10000/(30*25*24.6) = 0.54.
        let r = recommend(&info, &s, &zen4, 10_000.0);
        assert_eq!(r.settings.spin_wait_delay, 1);
        assert!(r.settings.pause_multiplier.is_none());
        // 18.5 us is not within 10% of 10 us; d=0 would be 0: unreachable.
        assert!(!r.reachable);
        assert!(
            r.explanation.contains("no legal setting"),
            "{}",
            r.explanation
        );
    }

    #[test]
    fn unreachable_large_target_uses_the_maximum() {
        let (info, s) = setup("8.0.40");
        let cpu = CpuModel::from_reference(baseline());
        let r = recommend(&info, &s, &cpu, 1e15);
        assert_eq!(r.settings.pause_multiplier, Some(100));
        assert_eq!(r.settings.spin_wait_delay, 1000);
        assert!(!r.reachable);
    }

    #[test]
    fn current_settings_that_meet_the_target_change_nothing() {
        let (info, s) = setup("5.7.44");
        let cpu = CpuModel::from_reference(baseline());
        let r = recommend(&info, &s, &cpu, max_spin_ns(&info, &s, &cpu));
        assert!(
            r.changes.is_empty() && r.reachable && r.error_pct.abs() < 1e-9,
            "{r:?}"
        );
        // A custom loop count is kept.
        let s2 = resolve_settings(&info, Some(20), Some(10), None).unwrap();
        let r = recommend(&info, &s2, &cpu, 1000.0);
        assert_eq!(r.settings.sync_spin_loops, 10);
    }

    #[test]
    fn bracket_finds_neighbours() {
        assert_eq!(bracket(0, 100, 35.0, |v| v as f64 * 10.0), vec![3, 4]);
        assert_eq!(bracket(0, 100, 0.0, |v| v as f64), vec![0]);
        assert_eq!(bracket(0, 100, 1e9, |v| v as f64), vec![100]);
    }
}
