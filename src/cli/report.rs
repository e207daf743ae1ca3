//! `spinscope report`: flags, then the engine in `report::html`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result, EXIT_OK};
use crate::report::html;

const EXAMPLES: &str = "Examples:
  spinscope report probe.json doctor.json sweep.json profile.json --out report.html
  spinscope report before.json after.json watch-out/cap-1/ rt.json diff.json --out incident.html
  spinscope report snapshot-dir/ lab.json --format md --out report.md   # charts in report-files/";

/// Page format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
}

#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct ReportArgs {
    /// Saved documents (probe, spin, doctor, doctor-fleet, sweep, tune, lab, profile,
    /// profile-diff, rt JSON or `rt --json` lines), snapshots, watch capture directories and
    /// watch `--out` directories (their watch.log).
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
    /// Write the page to FILE (stdout when absent).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// html: one self-contained, offline, printable page; md: Markdown (with --out, its charts
    /// are written to NAME-files/ beside it).
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
}

pub fn run(a: ReportArgs) -> Result<i32> {
    // Before anything is read: no FIFO or device among the inputs (reading one can hang), and
    // --out none of them. A missing or unreadable input is not fatal: the page lists it.
    for p in &a.inputs {
        crate::files::refuse_special(p, "report input")?;
    }
    if let Some(out) = &a.out {
        crate::files::check_output(out, "--out")?;
        let snap: Vec<PathBuf> = a
            .inputs
            .iter()
            .map(|p| p.join("doctor-snapshot.json"))
            .collect();
        let ins: Vec<(&str, &std::path::Path)> = a
            .inputs
            .iter()
            .chain(snap.iter().filter(|p| p.exists()))
            .map(|p| ("report input", p.as_path()))
            .collect();
        crate::files::refuse_same(&ins, &[("--out", out)])?;
    }
    let inputs = html::load_all(&a.inputs, &diagnose);
    if !inputs
        .iter()
        .any(|i| matches!(i, html::Input::Section { .. }))
    {
        // Nothing to show: an empty page with exit 0 would pass for a report.
        let why: Vec<String> = inputs
            .iter()
            .filter_map(|i| match i {
                html::Input::Skipped { source, why } => Some(format!("{source}: {why}")),
                html::Input::Section { .. } => None,
            })
            .collect();
        return Err(Error::bad_input(format!(
            "report: no input is a spinscope document ({}); give saved documents (--json, --save), snapshots or watch directories",
            why.join("; ").replace('\n', " ")
        )));
    }
    for i in &inputs {
        if let html::Input::Skipped { source, why } = i {
            eprintln!("spinscope: not included: {source}: {why}");
        }
    }
    let page = match a.format {
        Format::Html => html::html(&inputs),
        Format::Md => {
            let dir = a.out.as_deref().map(files_dir);
            let name = dir
                .as_ref()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            let m = html::markdown(&inputs, name.as_deref());
            if let Some(d) = &dir {
                write_files(d, &m.files)?;
            }
            m.text
        }
    };
    match &a.out {
        Some(p) => crate::files::write_atomic(p, page.as_bytes(), "--out", true)?,
        None => {
            use std::io::Write;
            // A closed stdout (`| head`) ends quietly, as for every command.
            match std::io::stdout().write_all(page.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(Error::runtime(format!("writing the page: {e}")))
                }
                _ => {}
            }
        }
    }
    Ok(EXIT_OK)
}

/// A snapshot among the inputs is diagnosed here, as `doctor --snapshot` would, and handed to
/// the report as a doctor document: the renderer runs no engine. Its time is the capture's.
fn diagnose(
    file: &Path,
    source: &str,
) -> std::result::Result<(crate::doctor::DoctorDoc, Option<f64>), String> {
    let snap = crate::server::snapshot::Snapshot::load(file)
        .map_err(|e| format!("snapshot not read: {e}"))?;
    let time = Some(snap.captured_at_unix_s as f64).filter(|t| *t > 0.0);
    let facts = crate::doctor::Facts::from_snapshot(snap);
    Ok((crate::doctor::build_doc(source, &facts), time))
}

/// `report.md` -> `report-files/` beside it.
fn files_dir(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or("report".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}-files"))
}

/// Write the Markdown's charts into `dir` (created; a link or a file there is refused, never
/// followed).
fn write_files(dir: &Path, files: &[(String, String)]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => {
            return Err(Error::bad_input(format!(
                "--out: {} exists and is not a directory; move it or choose another --out",
                dir.display()
            )))
        }
        Err(_) => std::fs::create_dir(dir).map_err(|e| {
            Error::bad_input(format!(
                "--out: cannot create {} ({e}); choose a writable place",
                dir.display()
            ))
        })?,
    }
    for (name, svg) in files {
        crate::files::write_atomic(&dir.join(name), svg.as_bytes(), "--out", false)?;
    }
    Ok(())
}
