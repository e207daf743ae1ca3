//! Progress of long work, on stderr only. On a terminal: an indicatif bar with step k of N,
//! the current point, elapsed and remaining time. Elsewhere (a log, a pipe, CI): plain lines,
//! the first step, then at most one every [`PLAIN_EVERY_S`] seconds, and the last. Work that
//! takes 2 s or more says first how long it will take. A [`Steps`] is updated by its engine
//! between measurements, never during one; a [`Window`] (a fixed period of sampling or
//! recording that has no steps) redraws once a second from its own thread. Engines see them
//! through the [`Meter`](crate::meter::Meter) the CLI passes in ([`Stderr`]) or through their
//! own observers ([`lab`], [`Sweep`]).

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Least seconds between two plain (non-terminal) progress lines.
pub const PLAIN_EVERY_S: f64 = 10.0;

/// Work expected to take at least this long gets a start line with its estimate.
pub const ANNOUNCE_S: f64 = 2.0;

// The duration formatter lives in the pure `units` module (engines print it too).
pub use crate::units::human;

/// Whether stderr is a terminal (a bar) or not (plain lines; always in unit tests, which
/// read what is drawn).
fn tty() -> bool {
    !cfg!(test) && std::io::stderr().is_terminal()
}

/// One line of progress or a note: on stderr; in unit tests into this thread's
/// `tests::DRAWN` buffer instead.
fn emit_line(text: &str) {
    #[cfg(test)]
    tests::DRAWN.with(|d| d.borrow_mut().push(text.to_string()));
    #[cfg(not(test))]
    eprintln!("{text}");
}

/// `eprintln!` through [`emit_line`].
macro_rules! say {
    ($($arg:tt)*) => {
        emit_line(&format!($($arg)*))
    };
}

/// A bar on stderr: "lab [=====>     ] 12/90 runs, 2 s, about 11 s left: POINT".
/// The point is last and cut to the terminal's width, so the bar stays on one line (a line
/// that wraps leaves a copy of itself behind at every redraw).
fn bar(total: u64, label: &str, unit: &str, big: bool) -> ProgressBar {
    let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let timed = unit == "s";
    let (pos, len) = if big {
        ("{human_pos}", "{human_len}")
    } else {
        ("{pos}", "{len}")
    };
    b.set_style(
        ProgressStyle::with_template(&format!(
            "{{prefix}} [{{bar:16}}] {pos}/{len} {unit}, {{spent}}, {{left}}: {{wide_msg}}"
        ))
        .expect("a valid template")
        .with_key(
            "spent",
            |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}", human(st.elapsed().as_secs_f64()));
            },
        )
        // A timed period (unit "s") knows what is left; steps before the first is done do not.
        .with_key(
            "left",
            move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let left = st.len().unwrap_or(0).saturating_sub(st.pos());
                let _ = match st.pos() {
                    _ if timed => write!(w, "about {} left", human(left as f64)),
                    0 => write!(w, "time left not known yet"),
                    _ => write!(w, "about {} left", human(st.eta().as_secs_f64())),
                };
            },
        )
        .progress_chars("=> "),
    );
    b.set_prefix(label.to_string());
    b
}

/// Progress over N known steps (runs, sweep steps, measurements).
pub struct Steps {
    label: String,
    unit: &'static str,
    total: u64,
    show: bool,
    bar: Option<ProgressBar>,
    started: Instant,
    last_line: Option<Instant>,
}

impl Steps {
    /// Work of `total` steps of `unit` ("runs") under `label` ("lab", "sweep run"), expected to
    /// take `est_s` seconds (`what`, e.g. "90 runs of 200 ms", says what makes it up).
    /// Prints the estimate when it is 2 s or more; below that nothing is shown.
    pub fn new(label: &str, unit: &'static str, total: u64, est_s: f64, what: &str) -> Steps {
        let show = est_s >= ANNOUNCE_S;
        if show {
            say!(
                "spinscope {label}: {what}, about {} (Ctrl-C stops with what was measured)",
                human(est_s)
            );
        }
        let bar = (show && tty()).then(|| bar(total, label, unit, false));
        Steps {
            label: label.to_string(),
            unit,
            total,
            show,
            bar,
            started: Instant::now(),
            last_line: None,
        }
    }

    /// Step `done` of N finished; `point` says what it measured ("mcs threads=4 repeat 2").
    pub fn step(&mut self, done: u64, point: &str) {
        if !self.show {
            return;
        }
        if let Some(b) = &self.bar {
            b.set_message(point.to_string());
            b.set_position(done);
            return;
        }
        let now = Instant::now();
        let due = match self.last_line {
            None => true,
            Some(t) => now.duration_since(t).as_secs_f64() >= PLAIN_EVERY_S,
        };
        if due || done >= self.total {
            self.last_line = Some(now);
            let el = self.started.elapsed().as_secs_f64();
            let left = if done > 0 {
                el / done as f64 * self.total.saturating_sub(done) as f64
            } else {
                0.0
            };
            say!(
                "spinscope {}: {done}/{} {}: {point}; {} elapsed, about {} left",
                self.label,
                self.total,
                self.unit,
                human(el),
                human(left)
            );
        }
    }

    /// Show the current point before its step runs (the bar's message; nothing off a terminal).
    pub fn at(&self, point: &str) {
        if let Some(b) = &self.bar {
            b.set_message(point.to_string());
        }
    }

    /// Run `f` (which prints to stderr) with the bar out of the way.
    pub fn suspend<F: FnOnce()>(&self, f: F) {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Done (or stopped): the bar is cleared; the caller says how it ended.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Progress through a fixed period (doctor's sampling window, profile's recording): a bar of
/// seconds redrawn once a second on a terminal, a plain line every 10 s elsewhere.
pub struct Window {
    done: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Window {
    /// Start showing `what` ("sampling the server") for `seconds` under `label` ("doctor").
    /// Periods under 2 s show nothing.
    pub fn start(label: &str, what: &str, seconds: f64) -> Window {
        Window::start_noting(label, what, seconds, "")
    }

    /// [`Window::start`], the announcement followed by `aside` in parentheses when not empty:
    /// what the announced time leaves out.
    pub fn start_noting(label: &str, what: &str, seconds: f64, aside: &str) -> Window {
        if seconds < ANNOUNCE_S {
            return Window {
                done: None,
                thread: None,
            };
        }
        let aside = if aside.is_empty() {
            String::new()
        } else {
            format!(" ({aside})")
        };
        say!("spinscope {label}: {what} for {}{aside}", human(seconds));
        let (tx, rx) = mpsc::channel::<()>();
        let total = seconds.ceil() as u64;
        let on_tty = tty();
        let label = label.to_string();
        let what = what.to_string();
        let thread = std::thread::spawn(move || {
            let b = on_tty.then(|| {
                let b = bar(total, &label, "s", false);
                b.set_message(what.clone());
                b
            });
            let t0 = Instant::now();
            let mut last_plain = 0u64;
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(1))
            {
                let el = t0.elapsed().as_secs().min(total);
                match &b {
                    Some(b) => b.set_position(el),
                    None if el >= last_plain + PLAIN_EVERY_S as u64 && el < total => {
                        last_plain = el;
                        say!(
                            "spinscope {label}: {what}: {el}/{total} s, about {} left",
                            human((total - el) as f64)
                        );
                    }
                    None => {}
                }
            }
            if let Some(b) = b {
                b.finish_and_clear();
            }
        });
        Window {
            done: Some(tx),
            thread: Some(thread),
        }
    }

    /// The period is over (or was cut short): stop showing it.
    pub fn finish(&mut self) {
        self.done.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The [`Meter`](crate::meter::Meter) engines are handed by the CLI: their steps as [`Steps`],
/// their periods as a [`Window`].
#[derive(Default)]
pub struct Stderr {
    steps: Option<Steps>,
    window: Option<Window>,
}

impl crate::meter::Meter for Stderr {
    fn start(&mut self, label: &str, unit: &'static str, total: u64, est_s: f64, what: &str) {
        self.steps = Some(Steps::new(label, unit, total, est_s, what));
    }
    fn step(&mut self, done: u64, point: &str) {
        if let Some(s) = &mut self.steps {
            s.step(done, point);
        }
    }
    fn period(&mut self, label: &str, what: &str, seconds: f64, aside: &str) {
        self.window = Some(Window::start_noting(label, what, seconds, aside));
    }
    fn finish(&mut self) {
        if let Some(s) = &mut self.steps {
            s.finish();
        }
        if let Some(w) = &mut self.window {
            w.finish();
        }
    }
    fn note(&mut self, text: &str) {
        let say = || say!("spinscope: {text}");
        match &self.steps {
            Some(s) => s.suspend(say),
            None => say(),
        }
    }
}

/// `sweep prepare`'s load ([`crate::load::schema::PrepareEvent`]): on a terminal a bar of rows
/// with the tables being loaded; elsewhere the start line, then at most one line every 10 s
/// (only when rows moved), and the end. Once the rate is known (2 s in), one line says how
/// long the rest will take.
pub struct Prepare {
    schema: String,
    /// "4 tables x 100000 rows", once the load started.
    what: String,
    bar: Option<ProgressBar>,
    last_line: Option<Instant>,
    last_rows: u64,
    estimated: bool,
}

impl Prepare {
    pub fn new(schema: &str) -> Prepare {
        Prepare {
            schema: schema.to_string(),
            what: String::new(),
            bar: None,
            last_line: None,
            last_rows: 0,
            estimated: false,
        }
    }

    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| say!("{line}")),
            None => say!("{line}"),
        }
    }

    pub fn event(&mut self, e: crate::load::schema::PrepareEvent) {
        use crate::load::schema::PrepareEvent;
        match e {
            PrepareEvent::Start {
                tables,
                table_size,
                threads,
            } => {
                self.what = format!("{tables} tables x {table_size} rows");
                say!(
                    "spinscope sweep prepare: loading {} ({} rows) over {threads} connections into `{}`",
                    self.what,
                    tables as u64 * table_size,
                    self.schema
                );
                if tty() {
                    let b = bar(tables as u64 * table_size, "sweep prepare", "rows", true);
                    self.bar = Some(b);
                }
            }
            PrepareEvent::Progress(l) => {
                let el = l.elapsed.as_secs_f64();
                let left = if l.rows > 0 {
                    el / l.rows as f64 * l.total.saturating_sub(l.rows) as f64
                } else {
                    0.0
                };
                if el < ANNOUNCE_S || l.rows == 0 || l.rows >= l.total {
                    // The rate is not known yet (or the rows are in): nothing new to say.
                    if let Some(b) = &self.bar {
                        b.set_position(l.rows);
                        b.set_message(tables_line(&l));
                    }
                    return;
                }
                if !self.estimated && self.bar.is_some() {
                    self.estimated = true;
                    self.say(&format!(
                        "spinscope sweep prepare: {} rows/s, about {} left (then the index on k)",
                        crate::report::fmt_num((l.rows as f64 / el).round()),
                        human(left)
                    ));
                }
                if let Some(b) = &self.bar {
                    b.set_position(l.rows);
                    b.set_message(tables_line(&l));
                    return;
                }
                let due = self
                    .last_line
                    .is_none_or(|t| t.elapsed().as_secs_f64() >= PLAIN_EVERY_S);
                if due && l.rows > self.last_rows {
                    self.last_line = Some(Instant::now());
                    self.last_rows = l.rows;
                    say!(
                        "spinscope sweep prepare: {} of {} rows ({}%), {}; {} elapsed, about {} left",
                        l.rows,
                        l.total,
                        l.rows * 100 / l.total.max(1),
                        tables_line(&l),
                        human(el),
                        human(left)
                    );
                }
            }
            PrepareEvent::Done { elapsed } => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
                say!(
                    "spinscope sweep prepare: prepared `{}`: {} in {}",
                    self.schema,
                    self.what,
                    human(elapsed.as_secs_f64())
                );
            }
        }
    }
}

impl Drop for Prepare {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// "2/8 tables done; sbtest3 45%, sbtest4 12%" (at most four tables named).
fn tables_line(l: &crate::load::schema::Loading) -> String {
    let size = l.table_size.max(1);
    let busy: Vec<String> = l
        .per_table
        .iter()
        .enumerate()
        .filter(|(_, &r)| r > 0 && r < size)
        .map(|(i, &r)| format!("sbtest{} {}%", i + 1, r * 100 / size))
        .collect();
    let mut s = format!("{}/{} tables done", l.tables_done, l.per_table.len());
    let indexing = l.per_table.iter().filter(|&&r| r >= size).count() as u32;
    if indexing > l.tables_done {
        s.push_str(&format!(", {} indexing", indexing - l.tables_done));
    }
    if !busy.is_empty() {
        s.push_str("; ");
        s.push_str(&busy.iter().take(4).cloned().collect::<Vec<_>>().join(", "));
        if busy.len() > 4 {
            s.push_str(&format!(" and {} more", busy.len() - 4));
        }
    }
    s
}

/// Work over N servers (doctor over a fleet): the estimate first (and when a server that
/// does not answer is given up), then on a terminal a bar of servers done that ticks once a
/// second with each server's result printed above it; elsewhere one line per server done with
/// elapsed and remaining time. The time left comes from the servers still running (how long
/// each has run) and those still queued, never from the pace of the first ones alone: a
/// server running past its expected time is named ("waiting for db2: 12 s, given up at 16 s"),
/// on the bar and, elsewhere, in a line when it becomes late and every [`PLAIN_EVERY_S`]
/// seconds after.
pub struct Servers {
    label: String,
    bar: Option<ProgressBar>,
    started: Instant,
    state: std::sync::Arc<std::sync::Mutex<ServersState>>,
}

/// What [`Servers`] knows of the run, shared with the bar's "left" field.
struct ServersState {
    total: u64,
    parallel: u64,
    each_s: f64,
    limit_s: f64,
    done: u64,
    /// Servers in progress: (index, name, start, last "waiting for" line).
    running: Vec<(usize, String, Instant, Option<Instant>)>,
}

impl ServersState {
    /// Late: a server running this much past its expected time.
    const GRACE_S: f64 = 1.0;

    fn late(&self, at: Instant) -> Vec<(&str, f64)> {
        self.running
            .iter()
            .map(|(_, n, t, _)| (n.as_str(), at.duration_since(*t).as_secs_f64()))
            .filter(|(_, r)| *r > self.each_s + Self::GRACE_S)
            .collect()
    }

    /// Seconds left, (expected, at most): the slowest server in progress, then the rounds
    /// still queued.
    fn left(&self, at: Instant) -> (f64, f64) {
        let queued = self
            .total
            .saturating_sub(self.done)
            .saturating_sub(self.running.len() as u64);
        let rounds = queued.div_ceil(self.parallel.max(1)) as f64;
        let (mut exp, mut most) = (0.0f64, 0.0f64);
        for (_, _, t, _) in &self.running {
            let r = at.duration_since(*t).as_secs_f64();
            exp = exp.max(self.each_s - r);
            most = most.max(self.limit_s - r);
        }
        (
            exp.max(0.0) + rounds * self.each_s,
            most.max(0.0) + rounds * self.limit_s,
        )
    }

    /// "about 3 s left", or with a late server "waiting for db2 (12 s, given up at 16 s), at
    /// most 4 s left".
    fn left_text(&self, at: Instant) -> String {
        let (exp, most) = self.left(at);
        let late = self.late(at);
        match late.first() {
            None => format!("about {} left", human(exp)),
            Some((name, r)) => format!(
                "waiting for {name} ({}, given up at {}){}, at most {} left",
                human(*r),
                human(self.limit_s),
                match late.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                },
                human(most)
            ),
        }
    }
}

impl Servers {
    /// `total` servers, `parallel` at a time, each expected to take `each_s` seconds and given
    /// up after `limit_s`.
    pub fn new(
        label: &str,
        total: u64,
        parallel: u64,
        each_s: f64,
        limit_s: f64,
        what: &str,
    ) -> Servers {
        let rounds = total.div_ceil(parallel.max(1));
        let est = rounds as f64 * each_s;
        say!(
            "spinscope {label}: {what}, about {}; a server that does not answer is given up after {} (Ctrl-C stops with what was measured)",
            human(est),
            human(limit_s)
        );
        let state = std::sync::Arc::new(std::sync::Mutex::new(ServersState {
            total,
            parallel,
            each_s,
            limit_s,
            done: 0,
            running: Vec::new(),
        }));
        let bar = tty().then(|| {
            let b = bar(total, label, "servers", false);
            let st = std::sync::Arc::clone(&state);
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:16}] {pos}/{len} servers, {spent}, {left}: {wide_msg}",
                )
                .expect("a valid template")
                .with_key("spent", |p: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", human(p.elapsed().as_secs_f64()));
                })
                .with_key(
                    "left",
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        if let Ok(s) = st.lock() {
                            let _ = write!(w, "{}", s.left_text(Instant::now()));
                        }
                    },
                )
                .progress_chars("=> "),
            );
            b.enable_steady_tick(Duration::from_secs(1));
            b
        });
        Servers {
            label: label.to_string(),
            bar,
            started: Instant::now(),
            state,
        }
    }

    /// Server `i` (`name`) started.
    pub fn started(&self, i: usize, name: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.running.push((i, name.to_string(), Instant::now(), None));
        }
    }

    /// Server `i` finished, the `done`-th of N; `line` says which and how ("db2: warning").
    pub fn done(&self, i: usize, done: u64, line: &str) {
        {
            let Ok(mut s) = self.state.lock() else { return };
            s.running.retain(|r| r.0 != i);
            s.done = done;
        }
        // The bar's "left" field takes the lock when it draws: not held here.
        match &self.bar {
            Some(b) => {
                b.suspend(|| say!("spinscope {}: {line}", self.label));
                b.set_position(done);
                b.set_message(line.to_string());
            }
            None => {
                let Ok(s) = self.state.lock() else { return };
                let now = Instant::now();
                let left = if done >= s.total {
                    "done".to_string()
                } else {
                    s.left_text(now)
                };
                say!(
                    "spinscope {}: [{done}/{}] {line}; {} elapsed, {left}",
                    self.label,
                    s.total,
                    human(now.duration_since(self.started).as_secs_f64()),
                );
            }
        }
    }

    /// A server's note (`spinscope: TEXT`), above the bar on a terminal.
    pub fn note(&self, text: &str) {
        match &self.bar {
            Some(b) => b.suspend(|| say!("spinscope: {text}")),
            None => say!("spinscope: {text}"),
        }
    }

    /// Called while waiting: elsewhere than on a terminal, a server running past its expected
    /// time gets a line then, and again every [`PLAIN_EVERY_S`] seconds.
    pub fn waiting(&self) {
        if self.bar.is_some() {
            return;
        }
        let Ok(mut s) = self.state.lock() else { return };
        let now = Instant::now();
        let (each_s, limit_s) = (s.each_s, s.limit_s);
        for (_, name, t, last) in &mut s.running {
            let r = now.duration_since(*t).as_secs_f64();
            let due = last.is_none_or(|l| now.duration_since(l).as_secs_f64() >= PLAIN_EVERY_S);
            if r > each_s + ServersState::GRACE_S && due {
                *last = Some(now);
                say!(
                    "spinscope {}: waiting for {name}: no result after {} (expected {}); given up at {}",
                    self.label,
                    human(r),
                    human(each_s),
                    human(limit_s)
                );
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The lab engine's observer: its runs as [`Steps`].
pub fn lab() -> impl FnMut(crate::lab::Progress) {
    use crate::lab::Progress;
    let mut steps: Option<Steps> = None;
    move |p| match p {
        Progress::Start { runs, est_s } => {
            let what = format!(
                "{runs} runs of {} ms",
                (est_s * 1e3 / runs.max(1) as f64).round()
            );
            steps = Some(Steps::new("lab", "runs", runs as u64, est_s, &what));
        }
        Progress::Run {
            done,
            point,
            repeat,
            ..
        } => {
            if let Some(s) = &mut steps {
                s.step(
                    done as u64,
                    &format!(
                        "{} threads={} K={} repeat {repeat}",
                        point.latch, point.threads, point.pause_scale
                    ),
                );
            }
        }
        Progress::Interrupted { done, runs } => {
            if let Some(s) = &mut steps {
                s.finish();
            }
            say!(
                "spinscope lab: interrupted after {done} of {runs} runs; printing what was measured"
            );
        }
    }
}

/// The sweep engine's observer: its steps as [`Steps`] (the estimate first, then the bar or
/// the plain lines), each step's result and notes as [`StderrLog`] prints them.
#[derive(Default)]
pub struct Sweep {
    steps: Option<Steps>,
}

impl Sweep {
    fn say<F: FnOnce()>(&self, f: F) {
        match &self.steps {
            Some(s) => s.suspend(f),
            None => f(),
        }
    }
}

fn sweep_point(at: crate::sweep::Point) -> String {
    format!("threads {} {} #{}", at.threads, at.variant, at.repeat)
}

impl crate::sweep::Observer for Sweep {
    fn start(&mut self, steps: usize, per_step: Duration) {
        let per = per_step.as_secs_f64();
        self.steps = Some(Steps::new(
            "sweep run",
            "steps",
            steps as u64,
            steps as f64 * per,
            &format!("{steps} steps of {}", human(per)),
        ));
    }
    fn applied(&mut self, variant: &str, now: &crate::load::spec::Setting, asked: &str) {
        self.say(|| StderrLog.applied(variant, now, asked));
    }
    fn step_start(&mut self, at: crate::sweep::Point) {
        if let Some(s) = &self.steps {
            s.at(&sweep_point(at));
        }
    }
    fn step_done(&mut self, at: crate::sweep::Point, step: &crate::sweep::StepDoc, wall: Duration) {
        self.say(|| StderrLog.step_done(at, step, wall));
        if let Some(s) = &mut self.steps {
            s.step(at.k as u64, &sweep_point(at));
        }
    }
    fn note(&mut self, text: &str) {
        self.say(|| StderrLog.note(text));
    }
}

/// A sweep's events as the `spinscope: ...` lines the command always printed (what
/// [`Sweep`] says between its progress lines).
pub struct StderrLog;

impl crate::sweep::Observer for StderrLog {
    fn applied(&mut self, variant: &str, now: &crate::load::spec::Setting, asked: &str) {
        let same = now.value.eq_ignore_ascii_case(asked)
            || matches!((now.value.parse::<f64>(), asked.parse::<f64>()), (Ok(a), Ok(b)) if a == b);
        say!(
            "spinscope: variant {variant}: {} = {}{}",
            now.variable,
            now.value,
            if same {
                String::new()
            } else {
                format!(" (asked for {asked}: the server adjusted it)")
            }
        );
    }

    fn step_done(&mut self, at: crate::sweep::Point, sd: &crate::sweep::StepDoc, _wall: Duration) {
        for line in crate::sweep::observe::step_lines(at, sd) {
            say!("spinscope: {line}");
        }
    }

    fn note(&mut self, text: &str) {
        say!("spinscope: {text}");
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::meter::Meter;
    use crate::sweep::Observer;

    thread_local! {
        /// What this thread drew, line by line.
        pub(super) static DRAWN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// The lines drawn on this thread since the last call.
    fn drawn() -> Vec<String> {
        DRAWN.with(|d| std::mem::take(&mut *d.borrow_mut()))
    }

    #[test]
    fn steps_say_the_estimate_the_first_and_the_last_step() {
        drawn();
        let mut m = Stderr::default();
        m.start("tune", "runs", 3, 90.0, "racing 4 candidates");
        m.step(1, "current #1");
        m.step(2, "model #1");
        m.step(3, "defaults #1");
        m.note("keeping the current settings");
        m.finish();
        let d = drawn();
        assert_eq!(d.len(), 4, "{d:?}");
        assert_eq!(
            d[0],
            "spinscope tune: racing 4 candidates, about 1 min 30 s (Ctrl-C stops with what was measured)"
        );
        // The middle step comes within 10 s of the first: no line of its own.
        assert!(
            d[1].starts_with("spinscope tune: 1/3 runs: current #1; "),
            "{}",
            d[1]
        );
        assert!(
            d[2].starts_with("spinscope tune: 3/3 runs: defaults #1; "),
            "{}",
            d[2]
        );
        assert!(d[2].ends_with(" left"), "{}", d[2]);
        assert_eq!(d[3], "spinscope: keeping the current settings");
    }

    #[test]
    fn short_work_draws_nothing_but_its_notes() {
        drawn();
        let mut m = Stderr::default();
        m.start("doctor", "reads", 2, 0.5, "reading");
        m.step(1, "a");
        m.step(2, "b");
        m.finish();
        assert!(drawn().is_empty());
        m.note("a note");
        assert_eq!(drawn(), ["spinscope: a note"]);
    }

    #[test]
    fn a_sweep_draws_its_estimate_settings_and_notes() {
        drawn();
        let mut s = Sweep::default();
        s.start(4, Duration::from_secs(30));
        let now = crate::load::spec::Setting {
            variable: "innodb_spin_wait_delay".into(),
            value: "6000".into(),
        };
        s.applied("big", &now, "7000");
        s.applied("big", &now, "6000");
        s.note("the knee ended the ladder");
        assert_eq!(
            drawn(),
            [
                "spinscope sweep run: 4 steps of 30 s, about 2 min (Ctrl-C stops with what was measured)",
                "spinscope: variant big: innodb_spin_wait_delay = 6000 (asked for 7000: the server adjusted it)",
                "spinscope: variant big: innodb_spin_wait_delay = 6000",
                "spinscope: the knee ended the ladder",
            ]
        );
    }

    #[test]
    fn the_lab_observer_draws_its_runs_and_an_interruption() {
        use crate::lab::Progress;
        drawn();
        let mut o = lab();
        o(Progress::Start {
            runs: 10,
            est_s: 20.0,
        });
        o(Progress::Interrupted { done: 3, runs: 10 });
        assert_eq!(
            drawn(),
            [
                "spinscope lab: 10 runs of 2000 ms, about 20 s (Ctrl-C stops with what was measured)",
                "spinscope lab: interrupted after 3 of 10 runs; printing what was measured",
            ]
        );
    }
}
