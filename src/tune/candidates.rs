//! The candidates `tune` races (pure): the current settings (always, and always first), the
//! spin model's advice for the CPU, the version's defaults, and a coarse log-spaced grid over
//! each knob's legal range, one knob moved at a time from the defaults.

use serde::{Deserialize, Serialize};

use crate::spin::model::{default_settings, FamilyInfo, Settings, VarSpec};

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    Current,
    Model,
    Defaults,
    Grid,
    /// One step from the current settings in a wait document's direction (`--waits`).
    Waits,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub name: String,
    pub origin: Origin,
    pub settings: Settings,
}

/// Grid points per knob (before de-duplication).
pub const GRID_POINTS: usize = 5;
/// The grid of `innodb_sync_spin_loops` stops at this multiple of its default (its legal range
/// reaches 2^32-1, where every wait spins for seconds).
pub const LOOPS_GRID_FACTOR: u64 = 10;
/// Upper end of a delay grid whose legal range is unbounded (old MySQL).
pub const DELAY_GRID_CAP: u64 = 10_000;

/// `n` log-spaced values from `lo` (at least 1) to `hi`, rounded to one or two significant
/// digits so the grid is made of round numbers; sorted, without duplicates.
pub fn log_grid(lo: u64, hi: u64, n: usize) -> Vec<u64> {
    let lo = lo.max(1);
    if hi <= lo || n < 2 {
        return vec![lo.min(hi.max(1))];
    }
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    let mut out: Vec<u64> = (0..n)
        .map(|i| {
            if i == n - 1 {
                return hi;
            }
            if i == 0 {
                return lo;
            }
            let x = (a + (b - a) * i as f64 / (n - 1) as f64).exp();
            round_sig(x).clamp(lo, hi)
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// 1 significant digit below 1000, otherwise 2 (7, 40, 700, 1200).
fn round_sig(x: f64) -> u64 {
    if x < 10.0 {
        return x.round().max(1.0) as u64;
    }
    let digits = if x < 1000.0 { 1 } else { 2 };
    let p = 10f64.powi(x.log10().floor() as i32 + 1 - digits);
    ((x / p).round() * p) as u64
}

fn label(info: &FamilyInfo, s: &Settings) -> String {
    let mut parts = vec![format!("d={}", s.spin_wait_delay)];
    parts.push(format!("L={}", s.sync_spin_loops));
    if let (Some(_), Some(m)) = (info.multiplier, s.pause_multiplier) {
        parts.push(format!("m={m}"));
    }
    parts.join(",")
}

fn grid_for(spec: VarSpec, cap: u64) -> Vec<u64> {
    log_grid(spec.min.max(1), spec.max.min(cap), GRID_POINTS)
}

/// Every candidate, current first, then the model's advice, the defaults and the grid, without
/// duplicate settings, at most `max` (at least 2: the current settings and one other).
pub fn generate(
    info: &FamilyInfo,
    current: Settings,
    model: Option<Settings>,
    max: usize,
) -> Vec<Candidate> {
    let defaults = default_settings(info);
    let mut out: Vec<Candidate> = Vec::new();
    let push = |origin: Origin, s: Settings, out: &mut Vec<Candidate>| {
        if out.iter().any(|c| c.settings == s) {
            return;
        }
        let name = match origin {
            Origin::Current => "current".to_string(),
            Origin::Model => "model".to_string(),
            Origin::Defaults => "defaults".to_string(),
            Origin::Grid => label(info, &s),
            Origin::Waits => "waits-step".to_string(),
        };
        out.push(Candidate {
            name,
            origin,
            settings: s,
        });
    };
    push(Origin::Current, current, &mut out);
    if let Some(m) = model {
        push(Origin::Model, m, &mut out);
    }
    push(Origin::Defaults, defaults, &mut out);
    // One knob at a time from the defaults, the knob designed for the job first.
    let mut grid: Vec<Settings> = Vec::new();
    if let Some(spec) = info.multiplier {
        for v in grid_for(spec, spec.max) {
            grid.push(Settings {
                pause_multiplier: Some(v),
                ..defaults
            });
        }
    }
    for v in grid_for(info.delay, DELAY_GRID_CAP) {
        grid.push(Settings {
            spin_wait_delay: v,
            ..defaults
        });
    }
    let lcap = info.loops.default.max(1) * LOOPS_GRID_FACTOR;
    for v in log_grid(info.loops.default / LOOPS_GRID_FACTOR, lcap, 3) {
        grid.push(Settings {
            sync_spin_loops: v,
            ..defaults
        });
    }
    // Interleave the knobs' grids so a small `max` still spans each knob's range.
    let per: Vec<Vec<Settings>> = {
        let mut m: Vec<Settings> = Vec::new();
        let mut d: Vec<Settings> = Vec::new();
        let mut l: Vec<Settings> = Vec::new();
        for s in grid {
            if s.pause_multiplier != defaults.pause_multiplier {
                m.push(s);
            } else if s.spin_wait_delay != defaults.spin_wait_delay {
                d.push(s);
            } else {
                l.push(s);
            }
        }
        // Extremes first within a knob: the ends of the range say the most.
        vec![spread(d), spread(m), spread(l)]
    };
    let longest = per.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for g in &per {
            if let Some(s) = g.get(i) {
                push(Origin::Grid, *s, &mut out);
            }
        }
    }
    out.truncate(max.max(2));
    out
}

/// Reorder a sorted list: lowest, highest, middle, then the rest.
fn spread(v: Vec<Settings>) -> Vec<Settings> {
    if v.len() < 3 {
        return v;
    }
    let mut out = vec![v[0], v[v.len() - 1], v[v.len() / 2]];
    for (i, s) in v.iter().enumerate() {
        if i != 0 && i != v.len() - 1 && i != v.len() / 2 {
            out.push(*s);
        }
    }
    out
}

/// How long a setting spins, as an order between settings: rounds times delay (times the
/// pause multiplier where there is one). Each factor lengthens the longest spin.
pub fn spin_amount(s: &Settings) -> u128 {
    u128::from(s.sync_spin_loops)
        * u128::from(s.spin_wait_delay)
        * u128::from(s.pause_multiplier.unwrap_or(1))
}

/// The candidates that move the spin in a wait document's direction `d`: for spin less those
/// that spin less than the current settings, for spin more those that spin more; all of them
/// for keep or too little data (the race then decides). The current settings always stay,
/// first, and `step` (one step from them in that direction, the one doctor gives) races next,
/// named `waits-step`. Returns the kept candidates, in order, and the names of the others.
pub fn follow(
    cands: Vec<Candidate>,
    d: crate::profile::waits::advice::Direction,
    step: Option<Settings>,
) -> (Vec<Candidate>, Vec<String>) {
    use crate::profile::waits::advice::Direction;
    let Some(cur) = cands
        .iter()
        .find(|c| c.origin == Origin::Current)
        .map(|c| spin_amount(&c.settings))
    else {
        return (cands, Vec::new());
    };
    let (mut kept, mut left) = (Vec::new(), Vec::new());
    for c in cands {
        let a = spin_amount(&c.settings);
        let ok = c.origin == Origin::Current
            || match d {
                Direction::Less => a < cur,
                Direction::More => a > cur,
                Direction::Keep | Direction::Unclear => true,
            };
        if ok {
            kept.push(c);
        } else {
            left.push(c.name);
        }
    }
    if let Some(s) = step {
        if !kept.iter().any(|c| c.settings == s) {
            kept.insert(
                1.min(kept.len()),
                Candidate {
                    name: "waits-step".into(),
                    origin: Origin::Waits,
                    settings: s,
                },
            );
        }
    }
    (kept, left)
}

/// The settings after one `advice::step` from `current` in direction `d`.
pub fn stepped(
    info: &FamilyInfo,
    current: Settings,
    d: crate::profile::waits::advice::Direction,
) -> Option<Settings> {
    let (name, _, to) = crate::profile::waits::advice::step(info, &current, d)?;
    let mut s = current;
    if name == info.delay.name {
        s.spin_wait_delay = to;
    } else {
        s.sync_spin_loops = to;
    }
    Some(s)
}

/// The `SET GLOBAL` assignments that turn `from` into `to` (variable, value).
pub fn changes(info: &FamilyInfo, from: &Settings, to: &Settings) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if let (Some(spec), Some(a), Some(b)) =
        (info.multiplier, from.pause_multiplier, to.pause_multiplier)
    {
        if a != b {
            out.push((spec.name.to_string(), b));
        }
    }
    if from.spin_wait_delay != to.spin_wait_delay {
        out.push((info.delay.name.to_string(), to.spin_wait_delay));
    }
    if from.sync_spin_loops != to.sync_spin_loops {
        out.push((info.loops.name.to_string(), to.sync_spin_loops));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spin::model::family_for;
    use crate::spin::version::parse_version;

    fn info(v: &str) -> FamilyInfo {
        family_for(&parse_version(v, None).unwrap())
    }

    #[test]
    fn log_grid_is_round_sorted_and_spans_the_range() {
        assert_eq!(log_grid(1, 6000, 5), vec![1, 9, 80, 700, 6000]);
        assert_eq!(log_grid(1, 100, 4), vec![1, 5, 20, 100]);
        assert_eq!(log_grid(5, 5, 5), vec![5]);
        let g = log_grid(1, 1000, 7);
        assert!(g.windows(2).all(|w| w[0] < w[1]), "{g:?}");
        assert_eq!((g[0], *g.last().unwrap()), (1, 1000));
    }

    #[test]
    fn mariadb_candidates_start_from_current_and_stay_legal() {
        let i = info("10.11.6-MariaDB");
        let current = Settings {
            spin_wait_delay: 6000,
            sync_spin_loops: 30,
            pause_multiplier: None,
        };
        let model = Settings {
            spin_wait_delay: 5,
            ..current
        };
        let c = generate(&i, current, Some(model), 10);
        assert_eq!(c[0].origin, Origin::Current);
        assert_eq!(c[0].settings, current);
        assert_eq!(c[1].origin, Origin::Model);
        assert_eq!(c[2].origin, Origin::Defaults);
        assert!(c.len() <= 10 && c.len() >= 7, "{c:?}");
        for x in &c {
            assert!(x.settings.pause_multiplier.is_none());
            assert!(x.settings.spin_wait_delay <= 6000);
        }
        // No duplicates: the grid's d=6000 is the current settings already.
        for (a, x) in c.iter().enumerate() {
            for y in &c[a + 1..] {
                assert_ne!(x.settings, y.settings);
            }
        }
        // The grid reaches both ends of the delay range and moves the loops too.
        assert!(c.iter().any(|x| x.settings.spin_wait_delay == 1));
        assert!(c.iter().any(|x| x.settings.sync_spin_loops != 30));
    }

    #[test]
    fn mysql_8_candidates_include_the_multiplier() {
        let i = info("8.0.36");
        let cur = default_settings(&i);
        let c = generate(&i, cur, None, 12);
        assert!(c.iter().any(|x| x.settings.pause_multiplier == Some(1)));
        assert!(c.iter().any(|x| x.settings.pause_multiplier == Some(100)));
        assert!(c.iter().all(|x| x.settings.spin_wait_delay <= 1000));
        // Current = defaults: one candidate, named current.
        assert_eq!(c.iter().filter(|x| x.settings == cur).count(), 1);
        assert!(c.iter().all(|x| x.origin != Origin::Defaults));
        let small = generate(&i, cur, None, 4);
        assert_eq!(small.len(), 4);
    }

    #[test]
    fn a_wait_direction_keeps_only_candidates_that_move_that_way() {
        use crate::profile::waits::advice::Direction;
        let i = info("10.11.6-MariaDB");
        let current = Settings {
            spin_wait_delay: 6000,
            sync_spin_loops: 30,
            pause_multiplier: None,
        };
        let all = generate(&i, current, None, 50);
        let (less, out) = follow(all.clone(), Direction::Less, None);
        assert_eq!(less[0].origin, Origin::Current);
        assert!(less.len() >= 3, "{less:?}");
        assert!(less[1..]
            .iter()
            .all(|c| spin_amount(&c.settings) < spin_amount(&current)));
        assert_eq!(less.len() + out.len(), all.len());
        // At the defaults, spin more keeps only longer spins: the grid's larger delays and
        // rounds, never the defaults themselves.
        let d = default_settings(&i);
        let (more, out) = follow(generate(&i, d, None, 50), Direction::More, None);
        assert!(more.len() >= 3, "{more:?}");
        assert!(more[1..]
            .iter()
            .all(|c| spin_amount(&c.settings) > spin_amount(&d)));
        assert!(out.iter().any(|n| n.contains("d=1")), "{out:?}");
        let (keep, out) = follow(all.clone(), Direction::Keep, None);
        assert_eq!((keep.len(), out.len()), (all.len(), 0));
        // At delay 6000 no grid point spins more (the grid moves one knob from the defaults):
        // the step from the current settings, doubling the rounds, is what races.
        let step = stepped(&i, current, Direction::More);
        assert_eq!(step.map(|s| s.sync_spin_loops), Some(60));
        let (more, out) = follow(all.clone(), Direction::More, step);
        let names: Vec<&str> = more.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["current", "waits-step"]);
        assert_eq!(out.len(), all.len() - 1);
    }

    #[test]
    fn changes_list_only_moved_knobs() {
        let i = info("8.0.36");
        let a = default_settings(&i);
        let b = Settings {
            pause_multiplier: Some(5),
            ..a
        };
        assert_eq!(
            changes(&i, &a, &b),
            vec![("innodb_spin_wait_pause_multiplier".to_string(), 5)]
        );
        assert!(changes(&i, &a, &a).is_empty());
    }
}
