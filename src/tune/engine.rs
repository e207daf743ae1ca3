//! The real search: candidates measured on a server through the sweep engine's step
//! (`sweep::measure_step`: the driver, validity read around it) and settings guard
//! (`load::guard::SettingsGuard`: every change journaled before it is made, restored at the
//! end, on error and on a signal). The measuring is
//! behind [`Measure`] so the race does not care how one candidate is measured.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::candidates::{changes, generate, Candidate};
use super::doc::{
    curves, model_rank, rows, statements, ModelView, TuneDoc, WaitsUsed, METHOD, SCHEMA,
};
use super::plan::{Plan, StepTime, SHORT_DURATION_S, SHORT_WARMUP_S};
use super::race::{self, Race, RaceConfig, Sample};
use crate::analysis::knee::{find_knee, StepPoint};
use crate::error::{Error, Result};
use crate::load::driver::{ServerProbe, StepConfig};
use crate::load::guard::SettingsGuard;
use crate::load::spec::{Setting, Variant};
use crate::load::workload::{Kind, Mix, Workload};
use crate::load::{self, schema, Connector};
use crate::meter::Meter;
use crate::server::conn::Target;
use crate::spin::model::{default_settings, family_for, settings_from_vars, FamilyInfo, Settings};
use crate::sweep::{connector, measure_step, Bench, Keep, StepSpec, ToMeter};

/// Measure one candidate once at `threads` for the plan's warm-up and duration; None when a
/// stop was requested.
pub trait Measure {
    fn measure(&mut self, cand: &Candidate, threads: u32) -> Result<Option<Sample>>;
}

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct TunePlan {
    pub schema: String,
    pub kind: Kind,
    pub custom: Vec<load::workload::CustomStmt>,
    pub threads: Option<u32>,
    pub budget: Duration,
    /// Warm-up and measured period of each measurement; None: [`DEFAULT_WARMUP_S`] and
    /// [`DEFAULT_DURATION_S`], shortened by the plan when the budget is short.
    pub warmup: Option<Duration>,
    pub duration: Option<Duration>,
    pub max_p99_increase_pct: f64,
    pub max_candidates: usize,
    pub apply: bool,
    pub probe: Option<PathBuf>,
    pub seed: u64,
    /// A saved wait document of this server (`--waits FILE`): only candidates in its direction
    /// race.
    pub waits: Option<WaitsInput>,
}

/// A wait document as given, before it is checked against the server.
#[derive(Debug, Clone)]
pub struct WaitsInput {
    pub file: String,
    pub doc: crate::profile::waits::WaitDoc,
}

/// A measurement's warm-up and measured period when the command line fixes neither.
pub const DEFAULT_WARMUP_S: f64 = 1.0;
pub const DEFAULT_DURATION_S: f64 = 3.0;
/// What a measurement is planned to cost around its warm-up and measured period (setting the
/// candidate, connecting the clients, the validity reads) until the first round measures it.
pub const STEP_OVERHEAD_S: f64 = 0.5;

/// Per-step validity read around it, as the sweep does.
struct ServerMeasure<'a> {
    plan: &'a TunePlan,
    /// The measurement the race plan chose.
    warmup: Duration,
    duration: Duration,
    info: FamilyInfo,
    current: Settings,
    wl: Workload,
    clients: Connector,
    /// The load client of every step (sweep's default: events, one worker per CPU).
    client: load::Client,
    guard: &'a mut SettingsGuard,
    /// The guard's notes of each measurement, shown after it (the meter draws the race).
    said: crate::load::guard::Said,
    probe: ServerProbe,
    stop: Arc<AtomicBool>,
    n: u64,
    /// The client the last measurement ran with.
    used: Option<load::ClientUsed>,
}

fn variant(info: &FamilyInfo, current: &Settings, c: &Candidate) -> Variant {
    Variant {
        name: c.name.clone(),
        settings: changes(info, current, &c.settings)
            .into_iter()
            .map(|(variable, v)| Setting {
                variable,
                value: v.to_string(),
            })
            .collect(),
    }
}

impl Measure for ServerMeasure<'_> {
    fn measure(&mut self, cand: &Candidate, threads: u32) -> Result<Option<Sample>> {
        if load::stopped(&self.stop) {
            return Ok(None);
        }
        let v = variant(&self.info, &self.current, cand);
        self.n += 1;
        let spec = StepSpec {
            config: StepConfig {
                threads,
                warmup: self.warmup,
                duration: self.duration,
                rate: None,
                report_interval: None,
                label: format!("{} #{}", cand.name, self.n),
                seed: self.plan.seed ^ self.n << 8,
                client: self.client.clone(),
            },
            variant: &v,
            repeat: 1,
        };
        let mut bench = Bench {
            workload: &self.wl,
            clients: &self.clients,
            guard: self.guard,
            probe: &mut self.probe,
            stop: &self.stop,
        };
        let (sd, _) = measure_step(&mut bench, &spec, &mut Keep(Arc::clone(&self.said)))?;
        self.used = Some(sd.client);
        if sd.interrupted {
            return Ok(None);
        }
        Ok(Some(Sample {
            windows_tps: sd.windows_tps,
            p99_us: sd.latency_us.p99,
            invalid: sd.invalid,
        }))
    }
}

/// The spin model's advice for the CPU: the settings whose longest spin matches what the
/// version's defaults spin on the CPU they were designed for.
fn model_advice(
    info: &FamilyInfo,
    current: &Settings,
    plan: &TunePlan,
    target: &Target,
    shown: &mut dyn Meter,
) -> Result<(Option<Settings>, Option<String>, String)> {
    let cpu = match &plan.probe {
        Some(p) => {
            let r = crate::cpu::load_probe_file(p)?;
            Some(crate::cpu::cpu_model(
                &r,
                &format!("--probe {}", p.display()),
            ))
        }
        None if target.is_local() => {
            // This host's figure (saved, else a quick probe, `cpu::saved`): the one doctor,
            // spin and watch price with. A host too busy for one costs the spin model's
            // candidate, not the run: the other candidates are measured on the server.
            match crate::cpu::saved::this_host() {
                Ok(fig) => {
                    if let Some(n) = &fig.note {
                        shown.note(n);
                    }
                    Some(crate::cpu::cpu_model(&fig.report, &fig.label))
                }
                Err(e) => return Ok((None, None, format!("no CPU figure: {e}"))),
            }
        }
        None => None,
    };
    let Some(cpu) = cpu else {
        return Ok((
            None,
            None,
            "no CPU figure (the server is remote): pass --probe FILE saved by `spinscope probe --save` on the server's host".into(),
        ));
    };
    let design = crate::spin::doc::vs_design(info, &default_settings(info), &cpu);
    // The design advice every command gives (doctor's fix, `spin --match baseline`).
    let advice = crate::spin::design::design_advice(info, current, &cpu);
    Ok((
        Some(advice.settings(current)),
        Some(cpu.label.clone()),
        format!(
            "longest spin {} like the defaults on {}",
            crate::units::fmt_ns(design.design_max_spin_ns),
            design.design_cpu
        ),
    ))
}

/// The default concurrency: the knee of a quick ladder at the current settings.
fn quick_knee(
    bench: &mut Bench,
    client: &load::Client,
    seed: u64,
    shown: &mut dyn Meter,
) -> Result<(u32, String)> {
    let mut pts = Vec::new();
    let mut steps = Vec::new();
    let current = Variant {
        name: "current".into(),
        settings: Vec::new(),
    };
    for threads in [1u32, 2, 4, 8, 16, 32] {
        if load::stopped(bench.stop) {
            break;
        }
        let spec = StepSpec {
            config: StepConfig {
                threads,
                warmup: Duration::from_millis(500),
                duration: Duration::from_secs(2),
                rate: None,
                report_interval: None,
                label: format!("ladder {threads}"),
                seed,
                client: client.clone(),
            },
            variant: &current,
            repeat: 1,
        };
        let (sd, _) = measure_step(bench, &spec, &mut ToMeter(&mut *shown))?;
        let (tps, p99) = (sd.tps, sd.latency_us.p99);
        shown.note(&format!(
            "ladder: {threads} threads {tps:.0} tps, p99 {:.1} ms",
            p99 / 1000.0
        ));
        steps.push(format!("{threads}:{tps:.0}"));
        pts.push(StepPoint {
            threads: f64::from(threads),
            tps,
            lat_us: p99,
            p99_us: p99,
        });
        if find_knee(&pts, None).saturation_threads.is_some() {
            break;
        }
    }
    let k = find_knee(&pts, None);
    let n = k
        .saturation_threads
        .or_else(|| {
            pts.iter()
                .max_by(|a, b| a.tps.total_cmp(&b.tps))
                .map(|p| p.threads)
        })
        .unwrap_or(1.0) as u32;
    Ok((
        n,
        format!(
            "the knee of a quick ladder at the current settings (threads:tps {}); pass --threads to choose",
            steps.join(" ")
        ),
    ))
}

/// Run `tune` against `target`, telling `shown` the budget spent after each measurement.
/// Returns the document; settings are restored (or the winner left set with `--apply`) before
/// it returns, on every path.
pub fn run(plan: &TunePlan, target: &Target, shown: &mut dyn Meter) -> Result<TuneDoc> {
    let (mut s, load) = setup(plan, target, shown)?;
    let budget_s = (plan.budget.as_secs_f64() - s.started.elapsed().as_secs_f64()).max(0.0);
    let names: Vec<String> = s.cands.iter().map(|c| c.name.clone()).collect();
    let rp = race_plan(plan, budget_s, &names);
    let step_s = rp.step.warmup_s + rp.step.duration_s;
    let cfg = RaceConfig {
        cost_s: rp.step.cost_s(),
        budget_s,
        max_repeats: MAX_REPEATS,
        alpha: 0.05,
        max_p99_increase_pct: plan.max_p99_increase_pct,
        early_looks: rp.early_looks,
        replan: true,
    };
    let said = rp.describe();
    let mut race = Race::new(names, cfg);
    for i in rp.raced..s.cands.len() {
        race.plan_out(
            i,
            format!("not raced: the budget pays {} candidates", rp.raced),
        );
    }
    shown.start(
        "tune",
        "s of the budget",
        race.cfg.budget_s.ceil() as u64,
        race.cfg.budget_s,
        &format!("at {} threads: {said}", s.threads),
    );
    let guard_said = s.guard.said();
    let mut m = ServerMeasure {
        plan,
        warmup: Duration::from_secs_f64(rp.step.warmup_s),
        duration: Duration::from_secs_f64(rp.step.duration_s),
        info: s.info.clone(),
        current: s.current,
        wl: load.wl,
        clients: load.clients,
        client: load.client,
        guard: &mut s.guard,
        said: Arc::clone(&guard_said),
        probe: load.probe,
        stop: Arc::clone(&s.stop),
        n: 0,
        used: None,
    };
    let (cands, threads) = (&s.cands, s.threads);
    let outcome = race::run(
        &mut race,
        |i| {
            let t = Instant::now();
            let s = m.measure(&cands[i], threads)?;
            let wall = t.elapsed().as_secs_f64();
            Ok::<_, Error>(s.map(|s| (s, wall)))
        },
        |r| {
            for t in crate::load::guard::take_said(&guard_said) {
                shown.note(&t);
            }
            progress(shown, r, cands)
        },
    );
    for t in crate::load::guard::take_said(&guard_said) {
        shown.note(&t);
    }
    shown.finish();
    let client_used = m.used;
    drop(m);
    Ok(report(
        plan,
        s,
        &race,
        outcome,
        client_used,
        step_s,
        rp,
        shown,
    ))
}

/// Most rounds of one candidate.
const MAX_REPEATS: usize = 30;

/// The race's plan for `budget_s`: the measurement the command line fixed, or the default one
/// that the plan may shorten when the budget is short.
fn race_plan(plan: &TunePlan, budget_s: f64, candidates: &[String]) -> Plan {
    let secs = |d: Option<Duration>, default: f64| d.map(|d| d.as_secs_f64()).unwrap_or(default);
    let step = StepTime {
        warmup_s: secs(plan.warmup, DEFAULT_WARMUP_S),
        duration_s: secs(plan.duration, DEFAULT_DURATION_S),
        overhead_s: STEP_OVERHEAD_S,
    };
    let shortest = StepTime {
        warmup_s: secs(plan.warmup, SHORT_WARMUP_S.min(step.warmup_s)),
        duration_s: secs(plan.duration, SHORT_DURATION_S.min(step.duration_s)),
        overhead_s: STEP_OVERHEAD_S,
    };
    super::plan::plan(budget_s, candidates, step, shortest, MAX_REPEATS)
}

/// What tune learned and set up before the race, kept for its report.
struct Setup {
    version: String,
    info: FamilyInfo,
    current: Settings,
    /// The spin model's settings, the CPU it used and what it aimed at (see [`model_advice`]).
    model: Option<Settings>,
    cpu_label: Option<String>,
    model_target: String,
    cands: Vec<Candidate>,
    guard: SettingsGuard,
    stop: Arc<AtomicBool>,
    started: Instant,
    threads: u32,
    threads_source: String,
    /// The wait document the candidates followed.
    waits: Option<WaitsUsed>,
}

/// What runs the load: the workload, its connector and client, and the server probe.
struct Load {
    wl: Workload,
    clients: Connector,
    client: load::Client,
    probe: ServerProbe,
}

/// Everything before the race, in order: the server's version and spin settings, the schema,
/// the load client, the model's advice and the candidates, the settings guard (validated,
/// the run lock taken), the stop flag, and the thread count.
fn setup(plan: &TunePlan, target: &Target, shown: &mut dyn Meter) -> Result<(Setup, Load)> {
    let admin_connect = connector(target, None);
    let (version, info, current, st) = read_server(&admin_connect, plan)?;
    let (clients, client) = load_clients(plan, target)?;
    let wl = Workload {
        kind: plan.kind,
        tables: st.tables,
        table_size: st.table_size,
        mix: Mix::default(),
        custom: plan.custom.clone(),
    };
    let note = match &plan.waits {
        Some(w) => check_waits(&admin_connect, w)?,
        None => None,
    };
    let (model, cpu_label, model_target) = model_advice(&info, &current, plan, target, shown)?;
    let (cands, waits) = candidates(&info, current, model, plan, note)?;
    let variants: Vec<Variant> = cands.iter().map(|c| variant(&info, &current, c)).collect();
    crate::interrupt::set_query_timeout(target.query_timeout);
    let mut guard = SettingsGuard::new(
        Arc::clone(&admin_connect),
        &target.endpoint(),
        &target.flags_hint(),
    );
    guard.mirror_to_schema(&plan.schema);
    guard.validate(&variants)?;
    // One tune or settings sweep per server at a time (issue 24).
    guard.take_run_lock()?;
    let stop = load::install_stop_flag()?;
    let started = Instant::now();
    let mut probe = ServerProbe::new(Arc::clone(&admin_connect));
    let (threads, threads_source) = match plan.threads {
        Some(n) => (n, "--threads".to_string()),
        None => {
            let mut bench = Bench {
                workload: &wl,
                clients: &clients,
                guard: &mut guard,
                probe: &mut probe,
                stop: &stop,
            };
            quick_knee(&mut bench, &client, plan.seed, shown)?
        }
    };
    if plan.threads.is_none() {
        shown.note(&format!("{threads} threads: {threads_source}"));
    }
    let s = Setup {
        version,
        info,
        current,
        model,
        cpu_label,
        model_target,
        cands,
        guard,
        stop,
        started,
        threads,
        threads_source,
        waits,
    };
    let load = Load {
        wl,
        clients,
        client,
        probe,
    };
    Ok((s, load))
}

/// The wait document checked against the server tune connected to (its identity facts in one
/// statement, as the journal reads them): the note when the document does not say which
/// server it is of; refused in one line when it is of another server or an earlier run.
fn check_waits(admin_connect: &Connector, w: &WaitsInput) -> Result<Option<String>> {
    let mut c = admin_connect()?;
    let f = crate::journal::read_facts(&mut c)
        .map_err(|e| Error::runtime(format!("reading the server's identity: {e}")))?;
    let datadir =
        std::fs::canonicalize(&f.datadir).map_or(f.datadir.clone(), |p| p.display().to_string());
    let against = crate::profile::waits::identity::Against {
        what: "the server tune connected to".into(),
        hostname: Some(f.hostname),
        port: Some(f.port),
        socket: Some(f.socket),
        datadir: Some(datadir),
        started_unix_s: Some(f.started_unix_s),
    };
    crate::profile::waits::identity::check(w.doc.server.as_ref(), &against).map_err(|why| {
        Error::bad_input(format!(
            "--waits {}: {why}: record this server's waits (spinscope profile --waits --json --pid PID on its host) and give that file",
            w.file
        ))
    })
}

/// The candidates to race: every one (current, model, defaults, grid), those moving against the
/// wait document left out, then at most `--max-candidates`.
fn candidates(
    info: &FamilyInfo,
    current: Settings,
    model: Option<Settings>,
    plan: &TunePlan,
    note: Option<String>,
) -> Result<(Vec<Candidate>, Option<WaitsUsed>)> {
    let Some(w) = &plan.waits else {
        return Ok((generate(info, current, model, plan.max_candidates), None));
    };
    let all = generate(info, current, model, usize::MAX);
    let dir = w.doc.advice.direction;
    let step = super::candidates::stepped(info, current, dir);
    let (mut kept, left_out) = super::candidates::follow(all, dir, step);
    if kept.len() < 2 {
        return Err(Error::bad_input(format!(
            "--waits {}: it says {}, and no candidate moves the spin that way from the current settings (d={}, L={}): nothing to race",
            w.file,
            dir.word(),
            current.spin_wait_delay,
            current.sync_spin_loops
        )));
    }
    kept.truncate(plan.max_candidates.max(2));
    let used = WaitsUsed {
        file: w.file.clone(),
        direction: dir,
        reason: w.doc.advice.reason.clone(),
        left_out,
        note,
    };
    Ok((kept, Some(used)))
}

/// Over the admin connection: the version, its spin family, the current settings (refused
/// when one is out of range) and the schema tune runs in.
fn read_server(
    admin_connect: &Connector,
    plan: &TunePlan,
) -> Result<(String, FamilyInfo, Settings, schema::SchemaState)> {
    let mut admin = admin_connect()?;
    let read = crate::server::live_settings::read_on(&mut admin).map_err(|f| {
        Error::runtime(format!(
            "{}: {}",
            f.statement,
            load::describe_error(&f.error).1
        ))
    })?;
    let version = read.version.unwrap_or_default();
    let sv = crate::spin::version::parse_version(&version, None)?;
    let info = family_for(&sv);
    let (current, _, bad) = settings_from_vars(&info, |n| {
        read.variables
            .get(&n.to_ascii_lowercase())
            .map(String::as_str)
    });
    if let Some(b) = bad.first() {
        return Err(Error::bad_input(format!("{b}: fix it before tuning")));
    }
    let st = schema::verify_for_run(&mut admin, &plan.schema)?;
    Ok((version, info, current, st))
}

/// The load's connector and client (sweep's default, the events client, unless it cannot
/// use this server), with a custom workload checked against the schema first.
fn load_clients(plan: &TunePlan, target: &Target) -> Result<(Connector, load::Client)> {
    let clients = connector(target, Some(&plan.schema));
    let client = load::driver::settle_client(
        load::Client::Events {
            connect: crate::sweep::wire_connector(target, &plan.schema),
            workers: 0,
        },
        &clients,
    );
    if plan.kind == Kind::Custom {
        let mut c = clients()?;
        if let Err((line, text, why)) =
            crate::load::workload::check_custom(&mut c, &plan.custom, &plan.schema, false)
        {
            return Err(Error::bad_input(format!(
                "--sql line {line} `{text}`: {why}"
            )));
        }
    }
    Ok((clients, client))
}

/// After the race: the decision, the winner applied (`--apply`, a proven change, a race run
/// to its end) or every setting restored, and the document. (`shown` takes the guard's notes
/// of the restore: the guard is dropped here with `s`.)
#[allow(clippy::too_many_arguments)]
fn report(
    plan: &TunePlan,
    mut s: Setup,
    race: &Race,
    outcome: Result<bool>,
    client_used: Option<load::ClientUsed>,
    step_s: f64,
    rp: Plan,
    shown: &mut dyn Meter,
) -> TuneDoc {
    let (info, current, cands) = (&s.info, &s.current, &s.cands);
    let decision = race.decide();
    let finished = outcome.as_ref().map(|d| *d).unwrap_or(false);
    let interrupted = load::stopped(&s.stop) || (outcome.is_ok() && !finished);
    let winner = &cands[decision.winner];
    let (set_global, my_cnf) = statements(info, current, &winner.settings);
    let (applied, after) = if plan.apply && decision.change && outcome.is_ok() && !interrupted {
        apply_winner(&mut s.guard, &variant(info, current, winner))
    } else {
        (false, notes(s.guard.restore()))
    };
    for t in crate::load::guard::take_said(&s.guard.said()) {
        shown.note(&t);
    }
    // A failure mid-race (the server stopped answering, restarted, a lock was lost) still
    // returns what was measured, settings restored, with the reason.
    let stopped_because = outcome.err().map(|e| e.to_string());
    let interrupted = interrupted || stopped_because.is_some();
    let ranked = rows(race, cands, decision.leader);
    let (rank, vs_best) = model_rank(&ranked, s.model);
    TuneDoc {
        schema: SCHEMA.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        server: s.version,
        workload: plan.kind.name().into(),
        threads: s.threads,
        threads_source: s.threads_source,
        budget_s: plan.budget.as_secs_f64(),
        spent_s: s.started.elapsed().as_secs_f64(),
        step_s,
        max_p99_increase_pct: plan.max_p99_increase_pct,
        rounds: race.rounds,
        measurements: race.measurements,
        method: METHOD.into(),
        curves: curves(info, &ranked),
        candidates: ranked,
        model: ModelView {
            settings: s.model,
            cpu: s.cpu_label,
            target: s.model_target,
            rank,
            vs_best_pct: vs_best,
        },
        set_global: if decision.change {
            set_global
        } else {
            Vec::new()
        },
        my_cnf: if decision.change { my_cnf } else { Vec::new() },
        decision,
        applied,
        interrupted,
        settings_after: after,
        client: client_used,
        stopped_because,
        plan: Some(rp),
        waits: s.waits,
    }
}

/// Leave the winner set (the guard keeps it); when that fails, restore everything. Whether
/// it was applied, and the notes on the settings left.
fn apply_winner(guard: &mut SettingsGuard, winner: &Variant) -> (bool, Vec<String>) {
    match guard.apply(winner) {
        Ok(_) => (true, notes(guard.keep())),
        Err(e) => {
            let mut v = vec![format!("--apply failed ({e}); settings restored")];
            v.extend(notes(guard.restore()));
            (false, v)
        }
    }
}

fn notes(changed: Vec<load::guard::Changed>) -> Vec<String> {
    changed.into_iter().map(|c| c.note).collect()
}

/// After each measurement: the budget spent, the round, and the leader with its interval.
fn progress(shown: &mut dyn Meter, r: &Race, cands: &[Candidate]) {
    let lead = r.leader().map(|i| {
        let t = race::mean_interval(&r.arms[i].valid_tps());
        match t {
            Some(t) => format!(
                "leader {} {:.0} tps (95% CI {:.0} .. {:.0})",
                cands[i].name, t.mean, t.low, t.high
            ),
            None => format!("leader {}", cands[i].name),
        }
    });
    // Sized from the noise of the pairs so far: said as soon as there are enough of them.
    let need = r
        .proof_budget_s()
        .map(|b| format!("; a proof at this noise needs about {b:.0} s"))
        .unwrap_or_default();
    shown.step(
        r.spent_s.min(r.cfg.budget_s).round() as u64,
        &format!(
            "round {} measurement {}, {} in the race; {}{need}",
            r.rounds + 1,
            r.measurements,
            r.alive().len(),
            lead.unwrap_or_else(|| "no leader yet (3 valid repeats needed)".into())
        ),
    );
}
