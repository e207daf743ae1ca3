//! One measured step: apply a variant's settings, run the driver for warm-up + window, read
//! Uptime and the settings again, and turn the outcome into a [`StepDoc`] (percentiles,
//! Little's check, open-loop "kept up", validity, the encoded histogram).

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

use super::doc::{HistogramDoc, Latency, OpenLoop, StepDoc, StmtStats, HIST_ENCODING};
use super::observe::Observer;
use crate::analysis::knee::little_check;
use crate::analysis::validity::{invalid_reason, StepHealth};
use crate::error::Result;
use crate::load::driver::{run_step, ServerProbe, StepConfig, StepOutcome};
use crate::load::guard::SettingsGuard;
use crate::load::spec::{Setting, Variant};
use crate::load::workload::Workload;
use crate::load::Connector;

/// How long after its planned end a step that is still waiting for the server says so (its
/// connections' setup, normally well under a second, counts in).
const LATE: Duration = Duration::from_secs(10);

/// What every step of one run shares: the workload, the client connections, the settings
/// guard (journal, restore), the admin probe for Uptime and settings, and the stop flag.
pub struct Bench<'a> {
    pub workload: &'a Workload,
    pub clients: &'a Connector,
    pub guard: &'a mut SettingsGuard,
    pub probe: &'a mut ServerProbe,
    pub stop: &'a AtomicBool,
}

/// One step: the driver's configuration (threads, warm-up, window, rate, label, seed) under
/// `variant`.
pub struct StepSpec<'a> {
    pub config: StepConfig,
    pub variant: &'a Variant,
    /// 1-based repeat (recorded in the document).
    pub repeat: u32,
}

/// Apply the variant (each setting as the server holds it goes to `observer.applied`), run the
/// step, check what happened around it. The outcome is returned beside the document for callers
/// that need the raw histogram. Errors: a setting could not be changed or read, or the driver
/// could not start (runtime).
/// The settings guard's notes so far, to `observer` (as the `spinscope: ...` lines the guard
/// printed itself before).
fn say_guard(bench: &Bench, observer: &mut dyn Observer) {
    for t in crate::load::guard::take_said(&bench.guard.said()) {
        observer.note(&t);
    }
}

pub fn measure_step(
    bench: &mut Bench,
    spec: &StepSpec,
    observer: &mut dyn Observer,
) -> Result<(StepDoc, StepOutcome)> {
    let applied = bench.guard.apply(spec.variant);
    say_guard(bench, observer);
    let applied = applied?;
    for (s, want) in applied.iter().zip(&spec.variant.settings) {
        observer.applied(&spec.variant.name, s, &want.value);
    }
    let cfg = &spec.config;
    // Globals read around the load: what moves is someone else's (spinscope changes nothing
    // during a step); reported, never reverted.
    let before_step = bench.guard.step_start();
    say_guard(bench, observer);
    let before_step = before_step?;
    let n = bench.guard.step_no();
    for f in &before_step {
        observer.note(&format!("changed by someone else before step {n}: {f}"));
    }
    // The last resort against a server that stops answering where no timeout reaches.
    let _deadline = crate::interrupt::Deadline::arm(
        cfg.warmup + cfg.duration + crate::interrupt::step_deadline(),
        format!(
            "the server did not answer within {} s after the end of step {n} (stopped or hung?)",
            crate::interrupt::step_deadline().as_secs()
        ),
    );
    // Said while it lasts: a step still waiting for the server well after its planned end.
    let _late = crate::interrupt::Deadline::note(
        cfg.warmup + cfg.duration + LATE,
        format!(
            "spinscope: step {n} is still waiting for the server {} s after its planned end (stopped or hung?); each read waits up to --query-timeout, and the run gives up at the latest {} s after that end",
            LATE.as_secs(),
            crate::interrupt::step_deadline().as_secs()
        ),
    );
    let before = bench.probe.uptime().ok();
    let t_before = Instant::now();
    let o = run_step(cfg, bench.workload, bench.clients, bench.stop)?;
    let during = bench.guard.step_end();
    say_guard(bench, observer);
    let mut around = Around::default();
    if bench.guard.silent() {
        // The server stopped answering: no more waits here; the run stops at its next change.
        around.unreadable = Some("the server stopped answering".into());
        for s in &applied {
            around.settings_after.push(Setting {
                variable: s.variable.clone(),
                value: "unreadable".into(),
            });
        }
    } else {
        read_around(bench, &applied, before, t_before, &mut around);
    }
    let mut sd = step_doc(
        cfg.threads,
        &spec.variant.name,
        spec.repeat,
        applied,
        &o,
        cfg.rate,
        around,
    );
    match during {
        Ok(moved) => {
            for f in &moved {
                observer.note(&format!("changed by someone else during step {n}: {f}"));
            }
            let ours: Vec<String> = moved
                .iter()
                .filter(|f| {
                    spec.variant
                        .settings
                        .iter()
                        .any(|s| s.variable.eq_ignore_ascii_case(&f.variable))
                })
                .map(|f| f.to_string())
                .collect();
            if !ours.is_empty() {
                // The precise cause first (the settings check says only that it differs).
                let cause = format!(
                    "changed by someone else during the step: {}",
                    ours.join(", ")
                );
                sd.invalid = Some(match sd.invalid.take() {
                    Some(check) => format!("{cause}; {check}"),
                    None => cause,
                });
            }
        }
        Err(e) => {
            if sd.invalid.is_none() {
                sd.invalid = Some(format!(
                    "the server's variables could not be read after the step: {e}"
                ));
            }
        }
    }
    Ok((sd, o))
}

/// Uptime and the variant's settings read after a step.
fn read_around(
    bench: &mut Bench,
    applied: &[Setting],
    before: Option<u64>,
    t_before: Instant,
    around: &mut Around,
) {
    match bench.probe.uptime() {
        Ok(after) => around.uptime = before.map(|b| (b, after, t_before.elapsed().as_secs_f64())),
        Err(e) => around.unreadable = Some(format!("Uptime: {e}")),
    }
    for s in applied {
        let value = match bench.probe.global(&s.variable) {
            Ok(v) => v,
            Err(e) => {
                around.unreadable = Some(format!("@@GLOBAL.{}: {e}", s.variable));
                "unreadable".into()
            }
        };
        around.settings_after.push(Setting {
            variable: s.variable.clone(),
            value,
        });
    }
}

/// The histogram as HdrHistogram's V2 compressed form, base64 ([`HIST_ENCODING`]).
pub fn encode_hist(h: &hdrhistogram::Histogram<u64>) -> String {
    let mut buf = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut buf) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
        Err(_) => String::new(),
    }
}

/// What was read around a step for its validity.
#[derive(Default)]
pub struct Around {
    /// Uptime before, after, and the seconds between the reads.
    pub uptime: Option<(u64, u64, f64)>,
    pub conn_ids: Option<(u64, u64)>,
    /// A read that failed.
    pub unreadable: Option<String>,
    /// The variant's settings as read after the step.
    pub settings_after: Vec<Setting>,
}

/// The step's document from the driver's outcome (pure).
pub fn step_doc(
    threads: u32,
    variant: &str,
    repeat: u32,
    applied: Vec<Setting>,
    o: &StepOutcome,
    rate: Option<f64>,
    around: Around,
) -> StepDoc {
    let health = StepHealth {
        txns: o.txns,
        errors: o.errors.values().sum(),
        first_error: o.first_error.clone(),
        uptime: around.uptime,
        conn_ids: around.conn_ids,
        unreadable: around.unreadable.clone(),
        settings: applied
            .iter()
            .zip(&around.settings_after)
            .map(|(a, b)| (a.variable.clone(), a.value.clone(), b.value.clone()))
            .collect(),
    };
    let el = o.elapsed_s.max(1e-9);
    let h = &o.hist;
    let q = |p: f64| {
        if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(p) as f64
        }
    };
    let latency_us = Latency {
        mean: if h.is_empty() { 0.0 } else { h.mean() },
        p50: q(0.50),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: if h.is_empty() { 0.0 } else { h.max() as f64 },
    };
    let tps = o.txns as f64 / el;
    let open_loop = rate.map(|r| OpenLoop {
        target_tps: r,
        achieved_tps: tps,
        // Behind schedule by more than 5% of the window, or 5% short of the rate: not kept.
        kept_up: tps >= 0.95 * r && o.schedule_lag_s <= 0.05 * el.max(1.0),
        lag_s: o.schedule_lag_s,
    });
    StepDoc {
        threads,
        variant: variant.into(),
        repeat,
        applied,
        interrupted: o.interrupted,
        disturbed: !o.errors.is_empty() || o.reconnects > 0,
        elapsed_s: o.elapsed_s,
        txns: o.txns,
        queries: o.queries,
        tps,
        qps: o.queries as f64 / el,
        latency_us,
        errors: o.errors.clone(),
        reconnects: o.reconnects,
        first_error: o.first_error.clone(),
        windows_tps: o.windows_tps.clone(),
        little: little_check(f64::from(threads), tps, latency_us.mean),
        open_loop,
        histogram: HistogramDoc {
            encoding: HIST_ENCODING.into(),
            unit: "us".into(),
            significant_digits: 3,
            data: encode_hist(h),
        },
        invalid: invalid_reason(&health),
        window_s: o.window_s,
        setup_s: o.setup_s,
        client: o.client,
        statements: StmtStats {
            needed: o.stmts_needed,
            per_client: o.stmt_capacity,
            prepared_during_step: o.late_prepares,
        },
        uptime_s: around.uptime.map(|(a, b, _)| (a, b)),
        retries: o.retries.clone(),
        settings_after: around.settings_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    fn outcome(values_us: &[u64]) -> StepOutcome {
        let mut hist = crate::load::driver::new_histogram();
        for &v in values_us {
            hist.record(v).unwrap();
        }
        StepOutcome {
            hist,
            txns: values_us.len() as u64,
            queries: 6 * values_us.len() as u64,
            elapsed_s: 2.0,
            errors: Default::default(),
            retries: Default::default(),
            reconnects: 0,
            windows_tps: vec![],
            window_s: 0.5,
            stmt_capacity: 1,
            stmts_needed: 1,
            late_prepares: 0,
            setup_s: 0.0,
            interrupted: false,
            schedule_lag_s: 0.0,
            first_error: None,
            executes: 0,
            executes_unanswered: 0,
            client: Default::default(),
        }
    }

    #[test]
    fn step_percentiles_rates_and_histogram_round_trip() {
        // 1..=1000 us once each: p50 ~ 500, p99 ~ 990, max 1000 (3 significant digits).
        let values: Vec<u64> = (1..=1000).collect();
        let d = step_doc(
            4,
            "a",
            1,
            vec![],
            &outcome(&values),
            None,
            Around::default(),
        );
        assert_eq!((d.tps, d.qps), (500.0, 3000.0));
        assert!(
            (d.latency_us.p50 - 500.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!(
            (d.latency_us.p99 - 990.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!(
            (d.latency_us.p999 - 999.0).abs() <= 1.0,
            "{:?}",
            d.latency_us
        );
        assert!((d.latency_us.max - 1000.0).abs() <= 1.0);
        assert!((d.latency_us.mean - 500.5).abs() < 1.0);
        // Little: 500 tps x 500.5 us = 0.25 busy clients of 4.
        assert!((d.little.implied - 0.25).abs() < 0.01 && !d.little.holds);
        // The histogram decodes with the standard V2 deserializer to the same counts.
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&d.histogram.data)
            .unwrap();
        let h: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(h.len(), 1000);
        assert_eq!(h.value_at_quantile(0.99), d.latency_us.p99 as u64);
    }

    #[test]
    fn open_loop_that_falls_behind_is_reported() {
        let mut o = outcome(&[1000; 100]);
        o.schedule_lag_s = 0.8;
        let d = step_doc(2, "a", 1, vec![], &o, Some(1000.0), Around::default());
        let ol = d.open_loop.unwrap();
        assert_eq!(ol.achieved_tps, 50.0);
        assert!(!ol.kept_up);
        let d = step_doc(
            2,
            "a",
            1,
            vec![],
            &outcome(&[1000; 2000]),
            Some(1000.0),
            Around::default(),
        );
        assert!(d.open_loop.unwrap().kept_up);
    }

    #[test]
    fn empty_step_has_zero_latencies_not_a_panic() {
        let d = step_doc(1, "a", 1, vec![], &outcome(&[]), None, Around::default());
        assert_eq!(d.tps, 0.0);
        assert_eq!(d.latency_us.p99, 0.0);
    }
}
