//! `spinscope profile`: sample a server with perf (or read a perf-script file), fold, classify
//! spin/latch/kernel-lock frames, and report weighted shares, sample counts, Amdahl bounds
//! (upper bounds) and a flame graph.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{Error, Result, EXIT_OK};
use crate::files;
use crate::profile::{self, collect};

/// Arguments of `spinscope profile`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "process", "perf_script", "diff"])))]
#[command(
    after_help = "Examples:\n  spinscope profile --process mariadbd --duration 10s --svg flame.svg\n  \
    spinscope profile --pid 1234 --duration 5s --hz 499 --json\n  \
    spinscope profile --perf-script tests/fixtures/perf/mariadb/mariadbd-cpu-clock-g.perf\n  \
    spinscope profile --diff before.folded after.folded --svg diff.svg\n  \
    spinscope profile --waits --process mariadbd --duration 5s\n\n\
    --diff follows perf diff: BEFORE is the baseline; each input is normalised to shares of its \
    own total (so recordings of different lengths or rates compare); a row's change is the \
    AFTER share minus the BEFORE share, in points of the whole profile; rows are sorted by the \
    size of the change. Classes are by the frame nearest the leaf, functions by self share (the \
    sampled function), as perf diff's Baseline and Delta columns."
)]
pub struct ProfileArgs {
    /// Profile the process with this id (perf record -g -p PID).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Profile the process with this command name, e.g. mariadbd or mysqld (several matching
    /// processes are listed; choose one with --pid).
    #[arg(long)]
    pub process: Option<String>,
    /// Analyse an existing `perf script` text file instead of recording.
    #[arg(long, value_name = "FILE")]
    pub perf_script: Option<PathBuf>,
    /// Compare two profiles (perf diff's baseline/delta, see below): each a folded file
    /// (--folded, inferno-collapse-perf), a `perf script` text or a profile JSON (--json).
    /// --json prints spinscope.profile-diff/1; --svg writes a differential flame graph.
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"])]
    pub diff: Option<Vec<PathBuf>>,
    /// How long to record: 10s, 2m (bare number: seconds).
    #[arg(long = "duration", alias = "seconds", default_value = "10s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub seconds: f64,
    /// Sampling rate, samples per second.
    #[arg(
        long = "hz",
        alias = "frequency",
        default_value_t = 499,
        value_name = "HZ"
    )]
    pub frequency: u32,
    /// How perf attaches: cpu (perf record -a, the server's samples kept; nothing switched at
    /// the server's context switches) or task (perf record -p PID: costs a busy server more).
    #[arg(long, value_enum, default_value = "cpu")]
    pub attach: collect::Attach,
    /// Call chains: fp (frame pointers, -g), dwarf (full chains, much more data) or none.
    #[arg(long, value_enum, default_value = "fp")]
    pub call_graph: collect::CallGraph,
    /// Top stacks to show per class.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Fold this event of a script holding several (e.g. cycles, instructions); default: the
    /// first in the script. Weights of different events are never added.
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    /// Refuse a --perf-script input larger than this many MiB.
    #[arg(long, value_name = "MB", default_value_t = 8192)]
    pub max_input_mb: u64,
    /// Print the spinscope.profile/2 JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the folded stacks (`comm;frame;... weight`, as inferno-collapse-perf) to FILE.
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Write a flame graph (SVG) to FILE, spin and latch classes in their own colours.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the profile as gzipped profile.proto (pprof) to FILE: for `go tool pprof`, Grafana
    /// Pyroscope, Parca. Sample types samples/count and cpu/nanoseconds (cpu-clock; a counted
    /// event gives <event>/count); each sample labelled with spinscope's class and the comm.
    /// With --waits: sample types cpu/nanoseconds and off_cpu/nanoseconds, labels class (the
    /// on-CPU class or the off-CPU kind, e.g. latch_sleep) and site.
    #[arg(long, value_name = "FILE")]
    pub pprof: Option<PathBuf>,
    /// Also save the perf-script text that was analysed to FILE (live mode), for replay.
    #[arg(long, value_name = "FILE")]
    pub save_script: Option<PathBuf>,
    /// The wait view: spin CPU beside latch sleeps per latch site (on-CPU samples and every
    /// context switch of the server's threads, from sched:sched_switch), and which way the
    /// spin settings should move. Live, or from a saved `perf script` of such a recording.
    #[arg(long)]
    pub waits: bool,
    /// With --waits: refuse to record when the expected cost (from the server's context
    /// switches in a 0.5 s pre-check) is above this percentage of its throughput.
    #[arg(long, value_name = "PCT", default_value_t = crate::profile::waits::record::DEFAULT_MAX_COST_PCT)]
    pub max_cost: f64,
}

/// An output created before any recording (a new temp file next to the path), so a bad path
/// fails at once, and renamed over the path when written: a planted symlink is refused, never
/// followed. 0600 (the stacks name the server's code paths and, with --save-script, its
/// binaries).
pub(super) fn open_output(flag: &str, path: &Path) -> Result<files::Output> {
    files::Output::create(path, flag, true)
}

pub(super) fn write_out(
    flag: &str,
    path: &Path,
    mut out: files::Output,
    bytes: &[u8],
) -> Result<()> {
    out.file()
        .write_all(bytes)
        .map_err(|e| Error::runtime(format!("{flag} {}: writing failed ({e})", path.display())))?;
    out.commit()
}

/// Run `spinscope profile`.
pub fn run(a: ProfileArgs) -> Result<i32> {
    if a.diff.is_some() {
        return run_diff(&a);
    }
    check_args(&a)?;
    let folded_out = a
        .folded
        .as_deref()
        .map(|p| open_output("--folded", p))
        .transpose()?;
    let svg_out = a
        .svg
        .as_deref()
        .map(|p| open_output("--svg", p))
        .transpose()?;
    let pprof_out = a
        .pprof
        .as_deref()
        .map(|p| open_output("--pprof", p))
        .transpose()?;
    let opts = profile::Options {
        top_stacks: a.top,
        event: a.event.clone(),
        max_input_bytes: a.max_input_mb.saturating_mul(1 << 20),
        empty_is_idle: false,
        pprof: a.pprof.is_some(),
        ..Default::default()
    };
    let an = match &a.perf_script {
        Some(_) if a.save_script.is_some() => {
            return Err(Error::bad_input(
                "--save-script: only with a live recording (--pid or --process)",
            ))
        }
        Some(path) => profile::run::analyse_file(path, &opts)?,
        None => live(&a, opts)?,
    };
    if let (Some(p), Some(f)) = (&a.folded, folded_out) {
        write_out(
            "--folded",
            p,
            f,
            profile::folded_text(&an.folded).as_bytes(),
        )?;
    }
    if let (Some(p), Some(f)) = (&a.svg, svg_out) {
        let svg = profile::svg::flame_graph(&an.folded, "spinscope profile", &an.doc.weight_unit)?;
        write_out("--svg", p, f, svg.as_bytes())?;
    }
    if let (Some(p), Some(out), Some(pp)) = (&a.pprof, pprof_out, &an.pprof) {
        let bytes = profile::pprof::encode(pp).map_err(|e| {
            Error::runtime(format!("--pprof {}: encoding failed ({e})", p.display()))
        })?;
        write_out("--pprof", p, out, &bytes)?;
    }
    if a.json {
        crate::cli::print_json(&an.doc)?;
    } else {
        print!("{}", profile::render::text(&an.doc));
    }
    Ok(EXIT_OK)
}

/// The flags' ranges, and that no output is the input or another output (before anything is
/// read or written).
fn check_args(a: &ProfileArgs) -> Result<()> {
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Error::bad_input(format!(
            "--duration {}s: give a value in (0s, 1h]",
            a.seconds
        )));
    }
    if !(1..=100_000).contains(&a.frequency) {
        return Err(Error::bad_input(format!(
            "--hz {}: give 1..100000 samples per second",
            a.frequency
        )));
    }
    if a.max_input_mb == 0 {
        return Err(Error::bad_input("--max-input-mb 0: give at least 1"));
    }
    let outs: Vec<(&str, &Path)> = [
        ("--folded", &a.folded),
        ("--svg", &a.svg),
        ("--pprof", &a.pprof),
        ("--save-script", &a.save_script),
    ]
    .into_iter()
    .filter_map(|(f, p)| Some((f, p.as_deref()?)))
    .collect();
    let ins: Vec<(&str, &Path)> = a
        .perf_script
        .iter()
        .map(|p| ("--perf-script", p.as_path()))
        .collect();
    files::refuse_same(&ins, &outs)
}

/// A live recording of `--pid` or `--process`, analysed as perf script streams it (and saved
/// with `--save-script`), under a progress window.
fn live(a: &ProfileArgs, opts: profile::Options) -> Result<profile::Analysis> {
    let (pid, comm) = profile::run::target(a.pid, a.process.as_deref())?;
    let save = a
        .save_script
        .as_deref()
        .map(|p| open_output("--save-script", p))
        .transpose()?;
    let live = profile::run::Live {
        pid,
        comm,
        seconds: a.seconds,
        frequency_hz: a.frequency,
        mode: collect::Mode {
            attach: a.attach,
            call_graph: a.call_graph,
        },
    };
    let shown = crate::cli::progress::Window::start("profile", &live.describe(), a.seconds);
    let an = profile::run::record(&live, opts, save)?;
    drop(shown);
    Ok(an)
}

/// `profile --diff BEFORE AFTER`.
fn run_diff(a: &ProfileArgs) -> Result<i32> {
    let paths = a.diff.as_deref().unwrap_or_default();
    let [before, after] = paths else {
        return Err(Error::bad_input(
            "--diff: give two inputs, BEFORE and AFTER",
        ));
    };
    if a.folded.is_some() || a.save_script.is_some() || a.pprof.is_some() {
        return Err(Error::bad_input(
            "--diff: --folded, --pprof and --save-script belong to one profile; compare with \
             --json or --svg",
        ));
    }
    if a.max_input_mb == 0 {
        return Err(Error::bad_input("--max-input-mb 0: give at least 1"));
    }
    // Both inputs through the input guard before either is read: a FIFO or device as AFTER
    // is refused without first reading all of BEFORE.
    for p in [before, after] {
        drop(crate::files::open_input_kind(p, "--diff", true)?);
    }
    let svg_out = a
        .svg
        .as_deref()
        .map(|p| open_output("--svg", p))
        .transpose()?;
    let max = a.max_input_mb.saturating_mul(1 << 20);
    let mut d = profile::run::compare(before, after, a.event.as_deref(), max)?;
    if let (Some(p), Some(out)) = (&a.svg, svg_out) {
        let svg = profile::svg::differential(&d.stacks, "spinscope profile --diff")?;
        write_out("--svg", p, out, svg.as_bytes())?;
    }
    d.truncate(profile::run::shown(a.top));
    if a.json {
        crate::cli::print_json(&d)?;
    } else {
        print!("{}", profile::render::diff_text(&d));
    }
    Ok(EXIT_OK)
}
