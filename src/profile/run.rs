//! What `spinscope profile` runs once its flags are checked: the analysis of a saved `perf
//! script` file, a live recording analysed while perf script streams it (a copy saved on the
//! way with `--save-script`), and the two sides of `--diff` read whatever their format. The CLI
//! opens the output files, shows the progress window and prints; the renderers are
//! `profile::render` and `profile::svg`.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::collect::{self, Mode, Request};
use super::diff::{self, Limits, ProfileDiff, Side};
use super::diff_input::{self, Format};
use super::{analyse_reader, Analysis, Options, Source};
use crate::error::{Error, Result};
use crate::files;

/// The analysis of a saved `perf script` text (`--perf-script FILE`).
pub fn analyse_file(path: &Path, opts: &Options) -> Result<Analysis> {
    // A FIFO, device or directory is refused without blocking.
    let file = files::open_input(path, "--perf-script")?;
    let src = Source::script(Some(path.display().to_string()));
    let name = format!("--perf-script {}", path.display());
    analyse_reader(BufReader::with_capacity(1 << 18, file), &name, src, opts)
}

/// The process a live recording samples: `pid`, else the one process called `process`; with
/// its command name.
pub fn target(pid: Option<u32>, process: Option<&str>) -> Result<(u32, String)> {
    let pid = match (pid, process) {
        (Some(p), _) => p,
        (None, Some(name)) => collect::find_process(name)?,
        (None, None) => {
            return Err(Error::bad_input(
                "give --pid PID, --process NAME or --perf-script FILE",
            ))
        }
    };
    let comm = collect::comm_of(pid)
        .ok_or_else(|| Error::bad_input(format!("--pid {pid}: no such process")))?;
    Ok((pid, comm))
}

/// A live recording of one process.
#[derive(Debug, Clone)]
pub struct Live {
    pub pid: u32,
    pub comm: String,
    pub seconds: f64,
    pub frequency_hz: u32,
    pub mode: Mode,
}

impl Live {
    /// One line for the progress window: what is recorded, how, and what it costs the server.
    pub fn describe(&self) -> String {
        format!(
            "recording {} (pid {}) at {} Hz, {}; expected cost to the server: {}",
            self.comm,
            self.pid,
            self.frequency_hz,
            self.mode.describe(),
            collect::expected_cost(self.mode, self.frequency_hz)
        )
    }
}

/// Record `live` and analyse perf script's text as it streams (an empty recording is an idle
/// server, not an error); with `save`, a copy of the text goes to that output, committed once
/// the analysis is done.
pub fn record(live: &Live, mut opts: Options, save: Option<files::Output>) -> Result<Analysis> {
    let req = Request {
        pid: live.pid,
        seconds: live.seconds,
        frequency_hz: live.frequency_hz,
    };
    let src = Source {
        kind: "perf-record".into(),
        file: None,
        pid: Some(live.pid),
        comm: Some(live.comm.clone()),
        seconds: Some(live.seconds),
        frequency_hz: Some(live.frequency_hz),
        event: None,
        recording: Some(live.mode.describe()),
    };
    opts.empty_is_idle = true;
    let (an, _event) = collect::record_with(&req, live.mode, |r| match save {
        Some(saved) => analyse_saving(r, saved, src, &opts),
        None => analyse_reader(r, "perf script output", src, &opts),
    })?;
    Ok(an)
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

/// Analyse perf script's output while a copy of it goes to `--save-script`.
fn analyse_saving(
    r: &mut dyn BufRead,
    mut saved: files::Output,
    src: Source,
    opts: &Options,
) -> Result<Analysis> {
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
    let an = analyse_reader(&mut tee, "perf script output", src, opts)?;
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

/// Read one input of `--diff` as a side of the comparison, whatever its format: a folded
/// file, a profile JSON or a `perf script` text (folded for `event`, default the first), at
/// most `max_bytes`.
pub fn diff_side(path: &Path, event: Option<&str>, max_bytes: u64) -> Result<Side> {
    let name = path.display().to_string();
    // The input guard every reader uses: a FIFO, device or socket is refused at once (opening
    // a FIFO for reading would block, a device would be read without end).
    let file = files::open_input_kind(path, "--diff", true)?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Error::bad_input(format!(
            "--diff {name}: is a directory; give a folded file, a `perf script` text or a profile \
             JSON (a watch capture's perf-script.txt, for one)"
        )));
    }
    let mut r = BufReader::with_capacity(1 << 18, file.take(max_bytes.saturating_add(1)));
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
            let opts = Options {
                top_stacks: 0,
                event: event.map(str::to_string),
                max_input_bytes: max_bytes,
                empty_is_idle: false,
                ..Options::default()
            };
            let src = Source::script(Some(name.clone()));
            let an = analyse_reader(r, &format!("--diff {name}"), src, &opts)?;
            Ok(diff_input::from_analysis(&name, &an))
        }
    }
}

/// `--diff BEFORE AFTER`: both inputs read (BEFORE first), every function and stack kept (the
/// differential flame graph draws them all); [`shown`] cuts it for the report.
pub fn compare(
    before: &Path,
    after: &Path,
    event: Option<&str>,
    max_bytes: u64,
) -> Result<ProfileDiff> {
    let (b, f) = (
        diff_side(before, event, max_bytes)?,
        diff_side(after, event, max_bytes)?,
    );
    let all = Limits {
        functions: usize::MAX,
        stacks: usize::MAX,
    };
    Ok(diff::build(b, f, all))
}

/// The rows the report and JSON of a diff keep for `--top N`: 6 functions per top stack asked
/// (at least 6), the default number of stacks.
pub fn shown(top: usize) -> Limits {
    Limits {
        functions: top.max(1) * 6,
        ..Default::default()
    }
}
