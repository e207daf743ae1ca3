//! `spinscope profile`: sample a server with perf (or read a perf-script file), fold, classify
//! spin/latch/kernel-lock frames, and report weighted shares, sample counts, Amdahl bounds
//! (upper bounds) and a flame graph.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::{Error, Result, EXIT_OK};
use crate::files;
use crate::profile::{self, collect, Source};
use crate::report;

/// Arguments of `spinscope profile`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "process", "perf_script", "diff"])))]
#[command(
    after_help = "Examples:\n  spinscope profile --process mariadbd --duration 10s --svg flame.svg\n  \
    spinscope profile --pid 1234 --duration 5s --hz 499 --json\n  \
    spinscope profile --perf-script tests/fixtures/perf/mariadb/mariadbd-cpu-clock-g.perf\n  \
    spinscope profile --diff before.folded after.folded --svg diff.svg\n\n\
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
    /// Also save the perf-script text that was analysed to FILE (live mode), for replay.
    #[arg(long, value_name = "FILE")]
    pub save_script: Option<PathBuf>,
}

/// An output created before any recording (a new temp file next to the path), so a bad path
/// fails at once, and renamed over the path when written: a planted symlink is refused, never
/// followed. 0600 (the stacks name the server's code paths and, with --save-script, its
/// binaries).
fn open_output(flag: &str, path: &Path) -> Result<files::Output> {
    files::Output::create(path, flag, true)
}

fn write_out(flag: &str, path: &Path, mut out: files::Output, bytes: &[u8]) -> Result<()> {
    out.file()
        .write_all(bytes)
        .map_err(|e| Error::runtime(format!("{flag} {}: writing failed ({e})", path.display())))?;
    out.commit()
}

/// A reader that copies what it reads to a file (`--save-script` while streaming).
struct Tee<R, W: Write> {
    inner: R,
    out: BufWriter<W>,
    failed: Option<std::io::Error>,
}

impl<R: Read, W: Write> Read for Tee<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.failed.is_none() {
            if let Err(e) = self.out.write_all(&buf[..n]) {
                self.failed = Some(e);
            }
        }
        Ok(n)
    }
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
    let opts = profile::Options {
        top_stacks: a.top,
        event: a.event.clone(),
        max_input_bytes: a.max_input_mb.saturating_mul(1 << 20),
        empty_is_idle: false,
    };
    let an = match &a.perf_script {
        Some(path) => from_file(&a, path, &opts)?,
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
    if a.json {
        report::print_json(&an.doc)?;
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

/// The analysis of a saved `perf script` text.
fn from_file(a: &ProfileArgs, path: &Path, opts: &profile::Options) -> Result<profile::Analysis> {
    if a.save_script.is_some() {
        return Err(Error::bad_input(
            "--save-script: only with a live recording (--pid or --process)",
        ));
    }
    // A FIFO, device or directory is refused without blocking.
    let file = files::open_input(path, "--perf-script")?;
    let src = Source {
        kind: "perf-script".into(),
        file: Some(path.display().to_string()),
        pid: None,
        comm: None,
        seconds: None,
        frequency_hz: None,
        event: None,
        recording: None,
    };
    let name = format!("--perf-script {}", path.display());
    profile::analyse_reader(BufReader::with_capacity(1 << 18, file), &name, src, opts)
}

/// A live recording of `--pid` or `--process`, analysed as perf script streams it (and saved
/// with `--save-script`).
fn live(a: &ProfileArgs, mut opts: profile::Options) -> Result<profile::Analysis> {
    let pid = match (&a.pid, &a.process) {
        (Some(p), _) => *p,
        (None, Some(name)) => collect::find_process(name)?,
        (None, None) => unreachable_target()?,
    };
    let comm = collect::comm_of(pid)
        .ok_or_else(|| Error::bad_input(format!("--pid {pid}: no such process")))?;
    let save = a
        .save_script
        .as_deref()
        .map(|p| open_output("--save-script", p))
        .transpose()?;
    let mode = collect::Mode {
        attach: a.attach,
        call_graph: a.call_graph,
    };
    let what = format!(
        "recording {comm} (pid {pid}) at {} Hz, {}; expected cost to the server: {}",
        a.frequency,
        mode.describe(),
        collect::expected_cost(mode, a.frequency)
    );
    let shown = crate::progress::Window::start("profile", &what, a.seconds);
    let req = collect::Request {
        pid,
        seconds: a.seconds,
        frequency_hz: a.frequency,
    };
    let src = Source {
        kind: "perf-record".into(),
        file: None,
        pid: Some(pid),
        comm: Some(comm),
        seconds: Some(a.seconds),
        frequency_hz: Some(a.frequency),
        event: None,
        recording: Some(mode.describe()),
    };
    opts.empty_is_idle = true;
    let (an, _event) = collect::record_with(&req, mode, |r| match save {
        Some(saved) => analyse_saving(r, saved, src, &opts),
        None => profile::analyse_reader(r, "perf script output", src, &opts),
    })?;
    drop(shown);
    Ok(an)
}

/// Analyse perf script's output while a copy of it goes to `--save-script`.
fn analyse_saving(
    r: &mut dyn std::io::BufRead,
    mut saved: files::Output,
    src: Source,
    opts: &profile::Options,
) -> Result<profile::Analysis> {
    // A second handle on the temp file: the Tee owns it, `saved` renames it.
    let file = saved
        .file()
        .try_clone()
        .map_err(|e| Error::runtime(format!("--save-script: writing failed ({e})")))?;
    let mut tee = BufReader::with_capacity(
        1 << 18,
        Tee {
            inner: r,
            out: BufWriter::new(file),
            failed: None,
        },
    );
    let an = profile::analyse_reader(&mut tee, "perf script output", src, opts)?;
    let tee = tee.into_inner();
    let mut out = tee.out;
    if let Some(e) = tee.failed.or_else(|| out.flush().err()) {
        return Err(Error::runtime(format!(
            "--save-script: writing failed ({e})"
        )));
    }
    drop(out);
    saved.commit()?;
    Ok(an)
}

fn unreachable_target() -> Result<u32> {
    Err(Error::bad_input(
        "give --pid PID, --process NAME or --perf-script FILE",
    ))
}

/// Read one input of `--diff` as a side of the comparison, whatever its format.
fn diff_side(path: &Path, a: &ProfileArgs) -> Result<profile::diff::Side> {
    use profile::diff_input::{self, Format};
    use std::io::BufRead;
    let name = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::bad_input(format!("--diff {name}: cannot read it ({e})")))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Error::bad_input(format!(
            "--diff {name}: is a directory; give a folded file, a `perf script` text or a profile \
             JSON (a watch capture's perf-script.txt, for one)"
        )));
    }
    let max = a.max_input_mb.saturating_mul(1 << 20);
    let mut r = BufReader::with_capacity(1 << 18, file.take(max.saturating_add(1)));
    let head = r
        .fill_buf()
        .map_err(|e| Error::bad_input(format!("--diff {name}: reading failed ({e})")))?;
    match diff_input::sniff(head) {
        Format::Folded => Ok(diff_input::from_folded(
            &name,
            diff_input::read_folded(r, &format!("--diff {name}"))?,
        )),
        Format::ProfileJson => {
            let mut text = String::new();
            r.read_to_string(&mut text).map_err(|e| {
                Error::bad_input(format!(
                    "--diff {name}: not UTF-8 text ({e}): give a profile JSON"
                ))
            })?;
            diff_input::from_profile_json(&format!("--diff {name}"), &text).map(|mut s| {
                s.input.name = name.clone();
                s
            })
        }
        Format::PerfScript => {
            let opts = profile::Options {
                top_stacks: 0,
                event: a.event.clone(),
                max_input_bytes: max,
                empty_is_idle: false,
            };
            let src = Source {
                kind: "perf-script".into(),
                file: Some(name.clone()),
                pid: None,
                comm: None,
                seconds: None,
                frequency_hz: None,
                event: None,
                recording: None,
            };
            let an = profile::analyse_reader(r, &format!("--diff {name}"), src, &opts)?;
            Ok(diff_input::from_analysis(&name, &an))
        }
    }
}

/// `profile --diff BEFORE AFTER`.
fn run_diff(a: &ProfileArgs) -> Result<i32> {
    let paths = a.diff.as_deref().unwrap_or_default();
    let [before, after] = paths else {
        return Err(Error::bad_input(
            "--diff: give two inputs, BEFORE and AFTER",
        ));
    };
    if a.folded.is_some() || a.save_script.is_some() {
        return Err(Error::bad_input(
            "--diff: --folded and --save-script belong to one profile; compare with --json or \
             --svg",
        ));
    }
    if a.max_input_mb == 0 {
        return Err(Error::bad_input("--max-input-mb 0: give at least 1"));
    }
    let svg_out = a
        .svg
        .as_deref()
        .map(|p| open_output("--svg", p))
        .transpose()?;
    let (b, f) = (diff_side(before, a)?, diff_side(after, a)?);
    let all = profile::diff::Limits {
        functions: usize::MAX,
        stacks: usize::MAX,
    };
    let mut d = profile::diff::build(b, f, all);
    if let (Some(p), Some(out)) = (&a.svg, svg_out) {
        let svg = profile::svg::differential(&d.stacks, "spinscope profile --diff")?;
        write_out("--svg", p, out, svg.as_bytes())?;
    }
    d.truncate(profile::diff::Limits {
        functions: a.top.max(1) * 6,
        ..Default::default()
    });
    if a.json {
        report::print_json(&d)?;
    } else {
        print!("{}", profile::render::diff_text(&d));
    }
    Ok(EXIT_OK)
}
