//! The race's plan (pure): from the budget, the candidates (in priority order: the current
//! settings, the spin model's advice, the defaults, then the grid) and the wall time of one
//! measurement, how many candidates race, for how many rounds, with which measurement, and how
//! many early looks the decision may take (docs/REFERENCE.md §12, "Planning").
//!
//! A comparison needs pairs: [`MIN_REPEATS`] rounds before anything is judged, and a paired
//! interval from 3 pairs has 2 degrees of freedom (t = 6.2 at 1 - 0.05/2, 12 at 1 - 0.05/7), so
//! a budget spread over many candidates decides nothing however large the effect. The plan
//! gives every raced candidate [`TARGET_ROUNDS`] rounds: it keeps the first candidates that fit
//! (never fewer than the current settings and one other); when not even the first three fit, it
//! shortens the measurement to the shortest one allowed (when the user did not fix it) before
//! dropping more, and races at most those three then. The candidates left out never race, so they do not count in the correction
//! for the number of candidates.

use serde::{Deserialize, Serialize};

/// Valid repeats a candidate needs before it can be dropped, lead, or be decided on (the A/B
/// minimum; `race::MIN_REPEATS` is this).
pub use crate::analysis::abtest::MIN_REPEATS;

/// Rounds the plan gives every raced candidate: 8 pairs give a paired interval 7 degrees of
/// freedom (t = 2.8 at 1 - 0.05/2 instead of 6.2 at 3 pairs; its half-width t / sqrt(n) is a
/// quarter narrower than at 6 pairs, 3.2 / sqrt(6)).
pub const TARGET_ROUNDS: usize = 8;
/// The candidates the plan keeps before it shortens the measurement: the current settings, the
/// spin model's advice and the defaults.
pub const FIRST_CANDIDATES: usize = 3;
/// The shortest measurement when the user did not fix it: 0.5 s of warm-up and 2 s measured
/// (4 windows of 0.5 s, the least a repeat may have).
pub const SHORT_WARMUP_S: f64 = 0.5;
pub const SHORT_DURATION_S: f64 = 2.0;

/// One measurement's wall time: warm-up, measured period, and what the step costs around them
/// (setting the candidate, connecting the clients, the validity reads).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    pub warmup_s: f64,
    pub duration_s: f64,
    pub overhead_s: f64,
}

impl StepTime {
    pub fn cost_s(&self) -> f64 {
        self.warmup_s + self.duration_s + self.overhead_s
    }
}

/// What the budget allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub budget_s: f64,
    /// Candidates in priority order; the first `raced` race.
    pub candidates: Vec<String>,
    pub raced: usize,
    /// Rounds the budget pays for with all raced candidates (more when some leave early),
    /// at most `max_rounds`.
    pub rounds: usize,
    pub step: StepTime,
    /// The measurement was shortened for the budget.
    pub shortened: bool,
    /// Looks before the last round at which overwhelming evidence may end the race
    /// (rounds [`MIN_REPEATS`] .. rounds - 1).
    pub early_looks: usize,
}

/// Rounds of `k` candidates the budget pays for.
fn rounds_for(budget_s: f64, k: usize, cost_s: f64) -> usize {
    if k == 0 || cost_s.is_nan() || budget_s.is_nan() || cost_s <= 0.0 || budget_s <= 0.0 {
        return 0;
    }
    (budget_s / (k as f64 * cost_s) + 1e-9).floor() as usize
}

/// Candidates that get [`TARGET_ROUNDS`] rounds each.
fn fitting(budget_s: f64, cost_s: f64) -> usize {
    rounds_for(budget_s, TARGET_ROUNDS, cost_s)
}

/// The plan for `candidates` (their names, in priority order) within `budget_s`, measured as
/// `step` (its overhead: the measured or expected cost around a measurement) or, when the
/// budget is short and `shortest` is shorter, as `shortest`; at most `max_rounds`.
pub fn plan(
    budget_s: f64,
    candidates: &[String],
    step: StepTime,
    shortest: StepTime,
    max_rounds: usize,
) -> Plan {
    let n = candidates.len();
    let mut s = step;
    let mut k = fitting(budget_s, s.cost_s()).min(n);
    let mut shortened = false;
    if k < n.min(FIRST_CANDIDATES) && shortest.cost_s() < step.cost_s() {
        // Shortened to fit the first candidates, not to race more of them.
        s = shortest;
        shortened = true;
        k = fitting(budget_s, s.cost_s()).min(n).min(FIRST_CANDIDATES);
    }
    let raced = k.max(n.min(2));
    let rounds = rounds_for(budget_s, raced, s.cost_s()).min(max_rounds);
    Plan {
        budget_s,
        candidates: candidates.to_vec(),
        raced,
        rounds,
        step: s,
        shortened,
        early_looks: early_looks(rounds),
    }
}

/// Looks before the last planned round, from round [`MIN_REPEATS`] on.
pub fn early_looks(rounds: usize) -> usize {
    rounds.saturating_sub(MIN_REPEATS)
}

/// After the first round, at the measured cost of a measurement: how many of the `alive`
/// candidates (priority order, the current settings first) keep racing so that each still gets
/// [`TARGET_ROUNDS`] rounds in the budget left, and the early looks those rounds allow (never
/// more than `looks`, fixed before the first look). Never fewer than two candidates.
pub fn replan(
    left_s: f64,
    alive: usize,
    cost_s: f64,
    rounds_done: usize,
    looks: usize,
) -> (usize, usize) {
    let want = TARGET_ROUNDS.saturating_sub(rounds_done).max(1);
    let k = rounds_for(left_s, want, cost_s)
        .min(alive)
        .max(alive.min(2));
    let rounds = rounds_done + rounds_for(left_s, k, cost_s);
    (k, early_looks(rounds).min(looks))
}

impl Plan {
    /// What the budget allows, said before the race starts.
    pub fn describe(&self) -> String {
        let names = &self.candidates;
        let raced: Vec<&str> = names.iter().take(self.raced).map(String::as_str).collect();
        let left: Vec<&str> = names.iter().skip(self.raced).map(String::as_str).collect();
        let mut t = format!(
            "the {:.0} s of budget left allow {} of {} candidates ({}) x {} round(s) of {:.1} s a measurement ({} s warm-up + {} s measured in 0.5 s windows{})",
            self.budget_s,
            self.raced,
            names.len(),
            raced.join(", "),
            self.rounds,
            self.step.cost_s(),
            self.step.warmup_s,
            self.step.duration_s,
            if self.shortened {
                ", shortened for the budget"
            } else {
                ""
            }
        );
        if !left.is_empty() {
            t.push_str(&format!(
                "; not raced for the short budget: {}",
                left.join(", ")
            ));
        }
        if self.rounds < MIN_REPEATS {
            t.push_str(&format!(
                "; a decision needs {MIN_REPEATS} rounds: this budget cannot decide"
            ));
        } else if self.early_looks > 0 {
            t.push_str(&format!(
                "; overwhelming evidence may end it early ({} early look(s) from round {MIN_REPEATS})",
                self.early_looks
            ));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: StepTime = StepTime {
        warmup_s: 1.0,
        duration_s: 3.0,
        overhead_s: 0.5,
    };
    const SHORT: StepTime = StepTime {
        warmup_s: SHORT_WARMUP_S,
        duration_s: SHORT_DURATION_S,
        overhead_s: 0.5,
    };

    fn names(n: usize) -> Vec<String> {
        [
            "current",
            "model",
            "defaults",
            "d=1,L=30",
            "d=6000,L=30",
            "d=9,L=30",
            "d=700,L=30",
            "d=4,L=3",
        ]
        .iter()
        .take(n)
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn long_budgets_race_every_candidate_as_before() {
        for budget in [288.0, 300.0, 600.0, 3600.0] {
            let p = plan(budget, &names(8), STEP, SHORT, 30);
            assert_eq!((p.raced, p.shortened), (8, false), "{budget}: {p:?}");
            assert_eq!(p.step, STEP);
        }
        let p = plan(600.0, &names(8), STEP, SHORT, 30);
        assert_eq!(p.rounds, 16);
        assert_eq!(p.early_looks, 13);
    }

    #[test]
    fn short_budgets_keep_the_first_candidates() {
        // The 100 s at 64 threads (4.5 s a measurement): 2 fit, so the measurement is
        // shortened and the first 3 race, 11 rounds (4 would fit at 3 s: not raced).
        let p = plan(100.0, &names(8), STEP, SHORT, 30);
        assert_eq!((p.raced, p.rounds, p.shortened), (3, 11, true), "{p:?}");
        assert_eq!(p.early_looks, 8);
        // 2 minutes: 3 candidates x 8 rounds of the full measurement.
        let p = plan(120.0, &names(8), STEP, SHORT, 30);
        assert_eq!((p.raced, p.rounds, p.shortened), (3, 8, false), "{p:?}");
        assert_eq!(p.early_looks, 5);
        // 90 s: shortened, 3 x 10 rounds.
        let p = plan(90.0, &names(8), STEP, SHORT, 30);
        assert_eq!((p.raced, p.rounds, p.shortened), (3, 10, true), "{p:?}");
        // 90 s at a slower step (64 clients connecting: 5.5 s, 4 s shortened): 2 race.
        let slow = StepTime {
            overhead_s: 1.5,
            ..STEP
        };
        let slow_short = StepTime {
            overhead_s: 1.5,
            ..SHORT
        };
        let p = plan(90.0, &names(8), slow, slow_short, 30);
        assert!(p.shortened, "{p:?}");
        assert_eq!((p.raced, p.rounds), (2, 11), "{p:?}");
        assert_eq!(p.step, slow_short);
        let p = plan(60.0, &names(5), STEP, SHORT, 30);
        let t = p.describe();
        assert!(
            t.starts_with("the 60 s of budget left allow 2 of 5 candidates (current, model) x 10 round(s) of 3.0 s a measurement (0.5 s warm-up + 2 s measured in 0.5 s windows, shortened for the budget); not raced for the short budget: defaults, d=1,L=30, d=6000,L=30"),
            "{t}"
        );
    }

    #[test]
    fn a_fixed_measurement_is_never_shortened_and_two_candidates_always_race() {
        let p = plan(30.0, &names(8), STEP, STEP, 30);
        assert!(!p.shortened);
        assert_eq!((p.raced, p.rounds), (2, 3), "{p:?}");
        assert_eq!(p.early_looks, 0);
        let p = plan(10.0, &names(3), STEP, SHORT, 30);
        assert_eq!((p.raced, p.rounds), (2, 1), "{p:?}");
        assert!(p.describe().contains("this budget cannot decide"));
        // Two candidates in all: both race.
        assert_eq!(plan(600.0, &names(2), STEP, SHORT, 30).raced, 2);
        assert_eq!(plan(600.0, &names(2), STEP, SHORT, 30).rounds, 30);
    }

    #[test]
    fn replanning_at_the_measured_cost_drops_the_last_candidates() {
        // 120 s planned at 4.5 s (3 x 8 rounds); the first round cost 7 s a measurement, 21 s
        // of it spent: 92 s left pays 7 more rounds of 2 candidates only.
        let (k, looks) = replan(92.0, 4, 7.0, 1, 3);
        assert_eq!(k, 2);
        assert_eq!(looks, 3, "never more than fixed before the first look");
        // As planned: all stay.
        let (k, looks) = replan(130.0, 4, 4.0, 1, 5);
        assert_eq!((k, looks), (4, 5));
        // Slower still: the looks shrink with the rounds.
        let (k, looks) = replan(40.0, 4, 7.0, 1, 3);
        assert_eq!((k, looks), (2, 0));
    }
}
