//! Progress and notes as an engine reports them (issues 26, 35): the [`Meter`] an engine
//! pushes its events through as its work advances, as ripgrep's searcher pushes to a `Sink`;
//! engines never print. The CLI's `cli::progress` implements it on stderr
//! (`cli::progress::Stderr`); library callers and tests pass [`Silent`]. Engines with richer
//! events have their own observers (`lab::Progress`, `sweep::Observer`), which
//! `cli::progress` implements too.

/// What an engine says about long work: a number of steps, or a fixed period.
pub trait Meter {
    /// Work of `total` steps of `unit` ("runs") under `label` ("tune") begins, expected to take
    /// `est_s` seconds; `what` ("racing 4 candidates ...") says what makes it up.
    fn start(&mut self, label: &str, unit: &'static str, total: u64, est_s: f64, what: &str);
    /// Step `done` of the total finished; `point` says where the work is.
    fn step(&mut self, done: u64, point: &str);
    /// A fixed period of `seconds` with no steps (a sampling window) begins under `label`;
    /// `what` ("sampling") says what it is; `aside`, when not empty, what the announced time
    /// leaves out (work before and after the period). The meter shows it by itself until
    /// [`finish`].
    ///
    /// [`finish`]: Meter::finish
    fn period(&mut self, label: &str, what: &str, seconds: f64, aside: &str);
    /// The work or the period is over (done or stopped).
    fn finish(&mut self);
    /// Something worth saying beside the progress (a CPU figure's age, the concurrency
    /// chosen): the CLI shows it as a `spinscope: TEXT` line; engines never print it.
    fn note(&mut self, text: &str);
}

/// What doctor's announced sampling window leaves out, in the words of the line that closes it
/// ("took 13.2 s in all: the 10.0 s sampling window and 3.2 s of collection around it").
pub const DOCTOR_WINDOW_ASIDE: &str =
    "the sampling window; the collection around it comes on top, said at the end";

/// A meter that shows only its notes, each handed to the function it holds (a worker
/// thread's way to the caller that shows them: fleet doctor sends them over its channel).
pub struct Notes<F: FnMut(&str)>(pub F);

impl<F: FnMut(&str)> Meter for Notes<F> {
    fn start(&mut self, _: &str, _: &'static str, _: u64, _: f64, _: &str) {}
    fn step(&mut self, _: u64, _: &str) {}
    fn period(&mut self, _: &str, _: &str, _: f64, _: &str) {}
    fn finish(&mut self) {}
    fn note(&mut self, text: &str) {
        (self.0)(text)
    }
}

/// A meter that shows nothing.
pub struct Silent;

impl Meter for Silent {
    fn start(&mut self, _: &str, _: &'static str, _: u64, _: f64, _: &str) {}
    fn step(&mut self, _: u64, _: &str) {}
    fn period(&mut self, _: &str, _: &str, _: f64, _: &str) {}
    fn finish(&mut self) {}
    fn note(&mut self, _: &str) {}
}
