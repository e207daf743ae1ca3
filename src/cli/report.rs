//! `spinscope report`: flags, then the engine in `report::html`.

use std::path::PathBuf;

use crate::error::{Error, Result, EXIT_OK};
use crate::report::html;

const EXAMPLES: &str = "Examples:
  spinscope report probe.json doctor.json sweep.json profile.json --out report.html
  spinscope report snapshot-dir/ lab.json --format md > report.md";

/// Page format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Md,
}

#[derive(clap::Args, Debug)]
#[command(after_help = EXAMPLES)]
pub struct ReportArgs {
    /// Saved documents (probe, spin, doctor, sweep, profile, lab JSON) or snapshot directories.
    #[arg(required = true, value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
    /// Write the page to FILE (stdout when absent).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// html: one self-contained, offline, printable page; md: Markdown.
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
}

pub fn run(a: ReportArgs) -> Result<i32> {
    // Before anything is read: no FIFO or device among the inputs (reading one can hang), and
    // --out none of them.
    for p in &a.inputs {
        drop(crate::files::open_input_kind(p, "report input", true)?);
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
    let inputs: Vec<html::Input> = a.inputs.iter().map(|p| html::load(p)).collect();
    for i in &inputs {
        if let html::Input::Skipped { source, why } = i {
            eprintln!("spinscope: not included: {source}: {why}");
        }
    }
    let page = match a.format {
        Format::Html => html::html(&inputs),
        Format::Md => html::markdown(&inputs),
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
