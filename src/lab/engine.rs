//! The lab engine: measure the machine, run every point of a [`LabPlan`] (repeats
//! interleaved), and return the [`LabDoc`]. Progress goes to an observer; Ctrl-C (the
//! shared `crate::interrupt` flag, once installed) ends the run with what was measured.

use super::doc::{compare_rows, LabDoc, Machine, Point, SCHEMA};
use super::harness::{allowed_cpus, run_point};
use super::plan::LabPlan;
use crate::cpu::{arch, calc, measure, timing};
use crate::error::Result;

/// What the engine reports while it runs.
pub enum Progress<'a> {
    /// Before the first run: how many runs, and about how long they take.
    Start { runs: usize, est_s: f64 },
    /// After each run.
    Run {
        done: usize,
        runs: usize,
        point: &'a Point,
        repeat: u32,
    },
    /// Ctrl-C: the run ends with what was measured.
    Interrupted { done: usize, runs: usize },
}

/// Measure the timer and hint facts reported with every lab run.
pub fn machine() -> Machine {
    let hint = arch::primary_hint();
    Machine {
        cpus: allowed_cpus().len(),
        counter: if timing::HAS_COUNTER {
            arch::counter_name().to_string()
        } else {
            "monotonic clock".to_string()
        },
        ticks_per_ns: timing::ticks_per_ns(),
        timer_cost_ns: timing::timer_cost_ns(),
        hint,
        hint_ns: timing::hint_ns(hint),
    }
}

/// MariaDB's M for a pause scale: its startup rule over 31 trials of its own measurement with
/// each PAUSE executed `scale` times (x86); elsewhere MariaDB does not measure and uses 200.
pub fn relax_multiplier_for(scale: u32) -> u32 {
    calc::mariadb_rule(&measure::mariadb_trials(31, scale)).multiplier
}

/// Run the plan. Errors: a worker that could not start or be pinned (runtime).
pub fn run(plan: &LabPlan, observe: &mut dyn FnMut(Progress)) -> Result<LabDoc> {
    plan.validate()?;
    let machine = machine();
    let arch = timing::host_arch();
    let relax: Vec<u32> = plan
        .scales
        .iter()
        .map(|&k| {
            if plan.relax_auto {
                relax_multiplier_for(k)
            } else {
                plan.params.relax_multiplier
            }
        })
        .collect();
    let mut points: Vec<Point> = Vec::new();
    for (si, &k) in plan.scales.iter().enumerate() {
        for &l in &plan.latches {
            for &t in &plan.threads {
                let m = l.uses_relax_multiplier().then_some(relax[si]);
                points.push(Point::new(l, t, k, l.hint(arch), m));
            }
        }
    }
    let runs = points.len() * plan.repeats as usize;
    observe(Progress::Start {
        runs,
        est_s: runs as f64 * plan.duration_ms as f64 / 1e3,
    });
    let mut done = 0usize;
    let mut interrupted = false;
    // Repeats are interleaved (all points once, then again) so drift spreads over every point.
    'outer: for rep in 0..plan.repeats {
        for (i, pt) in points.iter_mut().enumerate() {
            if crate::interrupt::stopped() {
                interrupted = true;
                break 'outer;
            }
            let w = plan.workload(pt.latch, pt.threads, pt.pause_scale, pt.relax_multiplier);
            let m = run_point(&w, (rep as u64) << 32 | i as u64)?;
            if m.interrupted {
                interrupted = true;
                break 'outer;
            }
            pt.runs.push(m);
            done += 1;
            observe(Progress::Run {
                done,
                runs,
                point: pt,
                repeat: rep + 1,
            });
        }
    }
    if interrupted {
        observe(Progress::Interrupted { done, runs });
    }
    for pt in &mut points {
        pt.summarize();
    }
    let compare = compare_rows(&points, &plan.scales);
    Ok(LabDoc {
        schema: SCHEMA.into(),
        machine,
        plan: plan.clone(),
        points,
        compare,
        interrupted,
    })
}
