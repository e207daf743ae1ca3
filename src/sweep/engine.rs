//! [`run`]: a whole sweep. Checks before any change (the scratch schema, a `--sql` file's
//! statements prepared), then the ladder x repeat x variant loop (variants interleaved A B A B),
//! saving the document after every step; settings restored before it returns, on every path.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::doc::{self as doc_mod, ServerInfo, SweepConfig, SweepDoc};
use super::observe::{Observer, Point};
use super::plan::SweepPlan;
use super::step::{measure_step, Bench, StepSpec};
use super::Connectors;
use crate::analysis::knee::{self, StepPoint};
use crate::error::{Error, Result};
use crate::load::driver::{ServerProbe, StepConfig};
use crate::load::guard::SettingsGuard;
use crate::load::workload::{check_custom, Kind, Mix, Workload};
use crate::load::{self, schema, Client, ClientKind};

/// A finished sweep: the document (complete, stopped early, or interrupted; its settings
/// restored) and the error that ended it early, if one did. The document was saved to the
/// plan's outputs before this returns.
pub struct SweepRun {
    pub doc: SweepDoc,
    /// The failure that stopped the ladder (the first step failing outright, a setting that
    /// could not be changed, ...); `doc.stopped_because` says the same.
    pub error: Option<Error>,
}

impl SweepRun {
    /// The document the text report shows: none when the sweep failed before any step; without
    /// `stopped_because` when an error ended it (that error is said once, on stderr, by the
    /// caller); else the whole document. The files and JSON keep the whole document.
    pub fn shown(&self) -> Option<SweepDoc> {
        match &self.error {
            Some(_) if self.doc.steps.is_empty() => None,
            Some(_) => Some(SweepDoc {
                stopped_because: None,
                ..self.doc.clone()
            }),
            None => Some(self.doc.clone()),
        }
    }
}

/// Run `plan` against the server behind `conns`. `Err` only before any load or change
/// (bad plan, unreachable server, no prepared schema, a refused `--sql` statement); after
/// that every path returns the document. A SIGINT/SIGTERM (the shared `crate::interrupt`
/// flag) ends the sweep after the current step with `doc.interrupted`.
pub fn run(plan: &SweepPlan, conns: &Connectors, observer: &mut dyn Observer) -> Result<SweepRun> {
    plan.validate()?;
    let mut admin = (conns.admin)()?;
    let version: String = crate::server::live_settings::read_on(&mut admin)
        .ok()
        .and_then(|r| r.version)
        .unwrap_or_else(|| "unknown".into());
    // Marker, finished prepare, promised rows: refused before any change.
    let st = schema::verify_for_run(&mut admin, &plan.schema)?;
    drop(admin);
    if plan.kind == Kind::Custom {
        // Before any load or SET GLOBAL: every statement allowed, and prepared (not run).
        let mut c = (conns.clients)()?;
        if let Err((line, text, why)) = check_custom(
            &mut c,
            &plan.custom,
            &plan.schema,
            plan.allow_writes_outside,
        ) {
            return Err(Error::bad_input(format!(
                "--sql {} line {line} `{text}`: {why}",
                plan.sql_file.as_deref().unwrap_or_default()
            )));
        }
    }
    let wl = Workload {
        kind: plan.kind,
        tables: st.tables,
        table_size: st.table_size,
        mix: Mix {
            point_selects: plan.point_selects,
            range_size: plan.range_size,
            ..Mix::default()
        },
        custom: plan.custom.clone(),
    };
    let mut guard = SettingsGuard::new(
        Arc::clone(&conns.admin),
        &conns.endpoint,
        &conns.connect_hint,
    );
    // A copy of the change journal in the scratch schema, for spinscope on other hosts.
    guard.mirror_to_schema(&plan.schema);
    guard.validate(&plan.variants)?;
    if plan.variants.iter().any(|v| !v.settings.is_empty()) {
        // One tune or settings sweep per server at a time (issue 24).
        guard.take_run_lock()?;
    }
    let stop = load::install_stop_flag()?;
    let mut doc = new_doc(plan, version, st.tables, st.table_size);
    let mut probe = ServerProbe::new(Arc::clone(&conns.admin));
    observer.start(plan.steps(), plan.warmup + plan.duration);
    let mut bench = Bench {
        workload: &wl,
        clients: &conns.clients,
        guard: &mut guard,
        probe: &mut probe,
        stop: &stop,
    };
    let client = match plan.client {
        ClientKind::Threads => Client::Threads,
        ClientKind::Events => Client::Events {
            connect: Arc::clone(&conns.wire),
            workers: plan.client_workers,
        },
    };
    let client = load::driver::settle_client(client, &conns.clients);
    let outcome = ladder_loop(plan, &client, &mut bench, &stop, &mut doc, observer);
    // Restore before anything else can fail.
    doc.settings_changed = guard.restore();
    for t in crate::load::guard::take_said(&guard.said()) {
        observer.note(&t);
    }
    let mut error = None;
    if let Err(e) = outcome {
        doc.stopped_because = Some(e.to_string());
        error = Some(e);
    }
    doc.interrupted = load::stopped(&stop);
    if doc.interrupted && doc.stopped_because.is_none() {
        doc.stopped_because = Some("interrupted by a signal".into());
    }
    save(&mut doc, plan)?;
    Ok(SweepRun { doc, error })
}

/// The document before the first step.
fn new_doc(plan: &SweepPlan, version: String, tables: u32, table_size: u64) -> SweepDoc {
    SweepDoc {
        schema: doc_mod::SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        complete: false,
        interrupted: false,
        stopped_because: None,
        server: ServerInfo { version },
        config: SweepConfig {
            workload: plan.kind.name().into(),
            sql_file: plan.sql_file.clone(),
            schema_name: plan.schema.clone(),
            tables,
            table_size,
            mode: if plan.rate.is_some() {
                "open"
            } else {
                "closed"
            }
            .into(),
            rate_tps: plan.rate,
            warmup_s: plan.warmup.as_secs_f64(),
            duration_s: plan.duration.as_secs_f64(),
            ladder: plan.ladder.clone(),
            repeat: plan.repeat,
            variants: plan.variants.clone(),
            sla: plan.sla,
            stop_after_knee: plan.stop_after_knee,
        },
        steps: Vec::new(),
        analysis: Default::default(),
        settings_changed: Vec::new(),
    }
}

/// Analyse the steps so far and rewrite the plan's outputs.
fn save(doc: &mut SweepDoc, plan: &SweepPlan) -> Result<()> {
    doc.analysis = doc_mod::analyze(&doc.steps, &doc.config.variants, doc.config.sla.as_ref());
    if let Some(p) = &plan.outputs.save {
        let text = crate::files::to_json(doc)? + "\n";
        crate::files::write_atomic(p, text.as_bytes(), "--save", true)?;
    }
    if let Some(p) = &plan.outputs.csv {
        crate::files::write_atomic(p, super::csv::csv(doc).as_bytes(), "--csv", true)?;
    }
    Ok(())
}

fn ladder_loop(
    plan: &SweepPlan,
    client: &Client,
    bench: &mut Bench,
    stop: &AtomicBool,
    doc: &mut SweepDoc,
    observer: &mut dyn Observer,
) -> Result<()> {
    let n = plan.steps();
    let mut k = 0;
    for &threads in &plan.ladder {
        for rep in 1..=plan.repeat {
            for v in &plan.variants {
                if load::stopped(stop) {
                    return Ok(());
                }
                k += 1;
                let at = Point {
                    k,
                    n,
                    threads,
                    variant: &v.name,
                    repeat: rep,
                };
                observer.step_start(at);
                let t0 = Instant::now();
                let spec = StepSpec {
                    config: StepConfig {
                        threads,
                        warmup: plan.warmup,
                        duration: plan.duration,
                        rate: plan.rate,
                        report_interval: plan.report_interval,
                        label: format!("threads {threads} {} #{rep}", v.name),
                        seed: plan.seed ^ u64::from(threads) << 8 ^ u64::from(rep),
                        client: client.clone(),
                    },
                    variant: v,
                    repeat: rep,
                };
                let (sd, o) = measure_step(bench, &spec, observer)?;
                observer.step_done(at, &sd, t0.elapsed());
                let all_failed =
                    doc.steps.is_empty() && o.txns == 0 && !o.errors.is_empty() && !o.interrupted;
                doc.steps.push(sd);
                save(doc, plan)?;
                if all_failed {
                    return Err(Error::runtime(format!(
                        "the first step failed: every transaction failed ({} errors); first error: {}; the sweep stopped",
                        o.errors.values().sum::<u64>(),
                        o.first_error.as_deref().unwrap_or("unknown")
                    )));
                }
            }
        }
        if plan.stop_after_knee && past_knee(doc, &plan.variants[0].name) {
            observer.note("throughput stopped rising and p99 keeps growing: ending the ladder (--stop-after-knee)");
            doc.complete = true;
            return Ok(());
        }
    }
    doc.complete = !load::stopped(stop);
    Ok(())
}

/// The baseline's levels so far are past the knee.
fn past_knee(doc: &SweepDoc, base: &str) -> bool {
    let pts: Vec<StepPoint> = doc_mod::points(&doc.steps, base)
        .iter()
        .map(|p| StepPoint {
            threads: f64::from(p.threads),
            tps: p.tps,
            lat_us: p.p99_us,
            p99_us: p.p99_us,
        })
        .collect();
    knee::past_knee(&pts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved() -> SweepDoc {
        serde_json::from_str(include_str!("../../tests/fixtures/report/sweep.json")).unwrap()
    }

    #[test]
    fn the_text_report_shows_the_whole_document_or_leaves_the_stop_to_stderr() {
        let mut doc = saved();
        doc.stopped_because = Some("the first step failed".into());
        let whole = SweepRun {
            doc: doc.clone(),
            error: None,
        };
        assert_eq!(whole.shown().unwrap().stopped_because, doc.stopped_because);
        let stopped = SweepRun {
            doc: doc.clone(),
            error: Some(Error::runtime("the first step failed")),
        };
        let shown = stopped.shown().unwrap();
        assert_eq!(shown.stopped_because, None);
        assert_eq!(shown.steps.len(), doc.steps.len());
        doc.steps.clear();
        let none_ran = SweepRun {
            doc,
            error: Some(Error::runtime("refused")),
        };
        assert!(none_ran.shown().is_none());
    }
}
