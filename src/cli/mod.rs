//! Command-line definitions (clap) and dispatch. One file per command; each turns its
//! arguments into a typed configuration and calls the library.

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::{Result, EXIT_OK};

pub mod doctor;
pub mod doctor_args;
pub mod fleet;
pub mod lab;
pub mod probe;
pub mod profile;
pub mod profile_waits;
pub mod progress;
pub mod report;
pub mod restore;
pub mod rt;
pub mod spin;
pub mod sweep;
pub mod tune;
pub mod units;
pub mod watch;

/// Long help shown under `spinscope --help`.
const ABOUT: &str = "Turn InnoDB spin-wait settings into time on your CPU, and measure the rest.";
const LONG_ABOUT: &str = "\
spinscope measures how long one CPU spin hint (x86 PAUSE, aarch64 ISB) takes on this machine,
translates MySQL / Percona / MariaDB spin settings (innodb_spin_wait_delay,
innodb_sync_spin_loops, innodb_spin_wait_pause_multiplier) into wall-clock time, and recommends
settings that spin for the time the defaults were designed for.

Exit codes: 0 ok; 1 doctor findings at or above --fail-on; 2 bad input or a refusal; 3 runtime
failure; 130 interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT).";

const COMPLETIONS_AFTER: &str = "\
Examples:
  mkdir -p ~/.local/share/bash-completion/completions
  spinscope completions bash > ~/.local/share/bash-completion/completions/spinscope
  mkdir -p ~/.zfunc && spinscope completions zsh > ~/.zfunc/_spinscope   # fpath+=(~/.zfunc) in ~/.zshrc
  mkdir -p ~/.config/fish/completions
  spinscope completions fish > ~/.config/fish/completions/spinscope.fish

New shells pick the script up; in the current one, `source` it.";

const MAN_AFTER: &str = "\
Examples:
  spinscope man | man -l -
  spinscope man --out-dir man      # man/spinscope.1, man/spinscope-doctor.1, ...
  man -l man/spinscope-doctor.1";

#[derive(Debug, Parser)]
#[command(name = "spinscope", version, about = ABOUT, long_about = LONG_ABOUT)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure this CPU: spin-hint latency, TSC rate, topology, cache line, kernel.
    Probe(probe::ProbeArgs),
    /// Translate spin settings into time on a CPU and recommend settings.
    Spin(spin::SpinArgs),
    /// Diagnose a live MySQL/MariaDB server (or a saved snapshot): findings with numbers and fixes.
    Doctor(doctor::DoctorArgs),
    /// Contention laboratory: InnoDB-style and other latches with emulated slow PAUSE.
    Lab(lab::LabArgs),
    /// One self-contained HTML (or Markdown) page from saved documents.
    Report(report::ReportArgs),
    /// Sample a server with perf, fold stacks, name spin/latch frames, draw a flame graph.
    Profile(profile::ProfileArgs),
    /// Drive load at rising concurrency: the knee, the USL fit, and A/B of settings with a verdict.
    Sweep(sweep::SweepArgs),
    /// Search the spin settings on your workload under noise; recommend only what is proven.
    Tune(tune::TuneArgs),
    /// Watch servers at 100 Hz: triggers, captures with the seconds before them, Prometheus metrics.
    Watch(watch::WatchArgs),
    /// The server's own response times from packets on its host: live percentiles per interval.
    Rt(rt::RtArgs),
    /// Put back what spinscope left changed on a server (from its durable change journal).
    Restore(restore::RestoreArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    #[command(after_help = COMPLETIONS_AFTER)]
    Completions {
        /// The shell to generate completions for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the spinscope(1) man page, or write every page into a directory with --out-dir.
    #[command(after_help = MAN_AFTER)]
    Man {
        /// Write spinscope.1 and one page per command into this directory (created if missing)
        /// instead of printing spinscope.1 to stdout.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<std::path::PathBuf>,
    },
}

/// Run a parsed command line; returns the process exit code.
/// Print a JSON document to stdout (pretty, newline-terminated): `--json` of every command.
pub fn print_json<T: serde::Serialize>(doc: &T) -> Result<()> {
    let s = crate::files::to_json(doc)?;
    println!("{s}");
    Ok(())
}

pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Probe(a) => probe::run(a),
        Command::Spin(a) => spin::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Report(a) => report::run(a),
        Command::Profile(a) if a.waits => profile_waits::run(&a),
        Command::Profile(a) => profile::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Watch(a) => watch::run(a),
        Command::Rt(a) => rt::run(a),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            // Into a buffer, then print!: a closed stdout then ends quietly like every print.
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "spinscope", &mut buf);
            print!("{}", String::from_utf8_lossy(&buf));
            Ok(EXIT_OK)
        }
        Command::Man {
            out_dir: Some(out_dir),
        } => {
            write_man_pages(&out_dir)?;
            Ok(EXIT_OK)
        }
        Command::Man { out_dir: None } => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut buf)
                .map_err(|e| crate::Error::runtime(format!("rendering the man page: {e}")))?;
            print!("{}", String::from_utf8_lossy(&buf));
            Ok(EXIT_OK)
        }
    }
}

/// A clap parse error as one line: clap's message, its tips and possible values, and which
/// `--help` to read (`cmd`: the command words, e.g. "sweep run"), with any quoted value that
/// could hold a password (a URL or `user:pw@host`) redacted.
pub fn usage_error_line(e: &clap::Error, cmd: &str) -> String {
    let text = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    let mut in_usage = false;
    for l in text.lines().map(str::trim) {
        if l.starts_with("Usage:") {
            in_usage = true;
            continue;
        }
        if l.is_empty() {
            in_usage = false;
            continue;
        }
        if in_usage || l.starts_with("For more information") {
            continue;
        }
        let l = l
            .trim_start_matches("error:")
            .trim_start_matches("tip:")
            .trim();
        parts.push(l.to_string());
    }
    if parts.is_empty() {
        parts.push("bad command line".to_string());
    }
    // Only words that name real (sub)commands.
    let mut c = Cli::command();
    let mut known = Vec::new();
    for w in cmd.split_whitespace() {
        match c.find_subcommand(w) {
            Some(sc) => {
                known.push(w);
                c = sc.clone();
            }
            None => break,
        }
    }
    let cmd = known.join(" ");
    let help = if cmd.is_empty() {
        "spinscope --help".to_string()
    } else {
        format!("spinscope {cmd} --help")
    };
    crate::secret::scrub(&redact_quoted(&format!(
        "{}; see '{help}'",
        parts.join("; ")
    )))
}

/// Replace each quoted value that looks like a server with a password by its redacted form.
fn redact_quoted(s: &str) -> String {
    let parts: Vec<&str> = s.split('\'').collect();
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 && (p.contains('@') || p.contains("://") || p.starts_with("--password")) {
                if p.starts_with("--password") || p.starts_with("-p") {
                    "--password=***".to_string()
                } else {
                    crate::server::conn::redact_target(p)
                }
            } else {
                p.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("'")
}

/// Every page (the command and each visible subcommand, named as clap_mangen's
/// `generate_to` names them), rendered in memory.
fn man_pages(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        man_pages(sub, out)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let mut page = Vec::new();
    man.render(&mut page)?;
    out.push((man.get_filename(), page));
    Ok(())
}

/// Write the man pages into `dir`, each atomically and never through a planted symlink
/// (clap_mangen's own `generate_to` opens with File::create, which follows links).
fn write_man_pages(dir: &std::path::Path) -> Result<()> {
    use crate::Error;
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    man_pages(cmd, &mut pages).map_err(|e| Error::runtime(format!("rendering man pages: {e}")))?;
    let names = pages.iter().map(|(n, _)| n.clone()).collect();
    let out = crate::files::OutputDir::open(dir, names, "--out-dir", false)?;
    out.write(&pages)?;
    eprintln!("spinscope: man pages written to {}", dir.display());
    Ok(())
}
