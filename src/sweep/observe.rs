//! Progress of a sweep, reported to an [`Observer`]. Every method has a default that does
//! nothing, so an observer implements only what it shows: a progress bar needs
//! [`Observer::start`] and [`Observer::step_done`]; the CLI's `cli::progress::StderrLog` draws
//! every event as the `spinscope: ...` lines the command always printed.
//!
//! Order of calls: `start` once, then per step `applied` (once per setting, when the variant
//! names any), `step_start`, `step_done`, `notes` for that step; `note` at any time.

use std::time::Duration;

use super::doc::StepDoc;
use crate::load::spec::Setting;

/// Where a step sits in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point<'a> {
    /// 1-based index of the step, counting every planned step.
    pub k: usize,
    /// Steps planned (ladder x repeats x variants); an early stop (knee, signal, failure)
    /// ends before `n`.
    pub n: usize,
    pub threads: u32,
    pub variant: &'a str,
    /// 1-based repeat.
    pub repeat: u32,
}

/// Receives a sweep's progress (engines call it from the thread that runs the sweep).
pub trait Observer {
    /// Before the first step: the steps planned and the planned time per step
    /// (warm-up + measured window; connecting and reading settings come on top).
    fn start(&mut self, _steps: usize, _per_step: Duration) {}
    /// A variant's setting as the server now holds it; `asked` is the value the plan named
    /// (they differ when the server adjusted it).
    fn applied(&mut self, _variant: &str, _now: &Setting, _asked: &str) {}
    /// A step is about to run.
    fn step_start(&mut self, _at: Point) {}
    /// A step ended: its document and its wall time (settings, warm-up, window, checks).
    fn step_done(&mut self, _at: Point, _step: &StepDoc, _wall: Duration) {}
    /// Something worth saying (the knee ended the ladder, ...).
    fn note(&mut self, _text: &str) {}
}

/// Keeps the notes for whoever shows them later (tune's race: its meter draws the race's
/// progress while a step runs), in a queue shared with that caller.
pub struct Keep(pub crate::load::guard::Said);

impl Observer for Keep {
    fn note(&mut self, text: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text.to_string());
    }
}

/// The notes to a [`crate::meter::Meter`] (tune's quick ladder), everything else dropped.
pub struct ToMeter<'a>(pub &'a mut dyn crate::meter::Meter);

impl Observer for ToMeter<'_> {
    fn note(&mut self, text: &str) {
        self.0.note(text);
    }
}

/// Reports nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What the CLI says after a step (without the `spinscope: ` prefix): the rates and p99,
/// errors, an open loop that fell behind, an invalid step, statements prepared late.
pub fn step_lines(at: Point, sd: &StepDoc) -> Vec<String> {
    let name = format!("threads {} {} #{}", at.threads, at.variant, at.repeat);
    let errors: u64 = sd.errors.values().sum();
    let mut v = vec![format!(
        "{name}: {:.0} tps, {:.0} qps, p99 {} ms{}",
        sd.tps,
        sd.qps,
        crate::units::fmt_num(sd.latency_us.p99 / 1000.0),
        match &sd.first_error {
            Some(e) => format!(", errors {errors} (first: {e})"),
            None => String::new(),
        }
    )];
    if let Some(ol) = &sd.open_loop {
        if !ol.kept_up {
            v.push(format!(
                "the server did not keep up with --rate {}: {:.0} tps achieved, {:.2} s behind schedule",
                ol.target_tps, ol.achieved_tps, ol.lag_s
            ));
        }
    }
    if let Some(why) = &sd.invalid {
        v.push(format!(
            "{name} is INVALID and left out of the analysis: {why}"
        ));
    }
    let st = &sd.statements;
    if st.prepared_during_step > 0 {
        v.push(format!(
            "{name}: {} statements prepared during the step ({} of {} fit per client within max_prepared_stmt_count)",
            st.prepared_during_step, st.per_client, st.needed
        ));
    }
    v
}
