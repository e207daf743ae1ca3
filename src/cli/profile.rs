//! `spinscope profile`: sample a server with perf (or read a perf-script file), fold, classify
//! spin/latch/kernel-lock frames, and report shares, Amdahl bounds and a flame graph.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result, EXIT_OK};
use crate::profile::{self, collect, Source};
use crate::report;

/// Arguments of `spinscope profile`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["pid", "process", "perf_script"])))]
pub struct ProfileArgs {
    /// Profile the process with this id (perf record -g -p PID).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Profile the (lowest-pid) process with this command name, e.g. mariadbd or mysqld.
    #[arg(long)]
    pub process: Option<String>,
    /// Analyse an existing `perf script` text file instead of recording.
    #[arg(long, value_name = "FILE")]
    pub perf_script: Option<PathBuf>,
    /// How long to record, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Sampling frequency in Hz.
    #[arg(long, default_value_t = 999)]
    pub frequency: u32,
    /// Top stacks to show per class.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print the spinscope.profile/1 JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write the folded stacks (`frame;frame;... count`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub folded: Option<PathBuf>,
    /// Write a flame graph (SVG) to FILE, spin and latch classes in their own colours.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Also save the perf-script text that was analysed to FILE (live mode), for replay.
    #[arg(long, value_name = "FILE")]
    pub save_script: Option<PathBuf>,
}

fn write_file(flag: &str, path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| {
        Error::bad_input(format!(
            "{flag} {}: cannot write ({e}); choose a writable path",
            path.display()
        ))
    })
}

/// Run `spinscope profile`.
pub fn run(a: ProfileArgs) -> Result<i32> {
    if !(a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Error::bad_input(format!(
            "--seconds {}: give a value in (0, 3600]",
            a.seconds
        )));
    }
    if !(1..=100_000).contains(&a.frequency) {
        return Err(Error::bad_input(format!(
            "--frequency {}: give 1..100000 Hz",
            a.frequency
        )));
    }
    let (text, source) = if let Some(path) = &a.perf_script {
        let bytes = std::fs::read(path).map_err(|e| {
            Error::bad_input(format!(
                "--perf-script {}: cannot read it ({e})",
                path.display()
            ))
        })?;
        // Valid UTF-8 (the usual case) is taken as is, without a lossy copy.
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let src = Source {
            kind: "perf-script".into(),
            file: Some(path.display().to_string()),
            pid: None,
            comm: None,
            seconds: None,
            frequency_hz: None,
            event: None,
        };
        (text, src)
    } else {
        let pid = match (&a.pid, &a.process) {
            (Some(p), _) => *p,
            (None, Some(name)) => collect::find_process(name)?,
            (None, None) => unreachable_target()?,
        };
        let comm = collect::comm_of(pid)
            .ok_or_else(|| Error::bad_input(format!("--pid {pid}: no such process")))?;
        let dir = std::env::temp_dir().join(format!("spinscope-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::runtime(format!("creating {}: {e}", dir.display())))?;
        eprintln!(
            "spinscope: recording {comm} (pid {pid}) for {} s at {} Hz ...",
            a.seconds, a.frequency
        );
        let req = collect::Request {
            pid,
            seconds: a.seconds,
            frequency_hz: a.frequency,
        };
        let rec = collect::record(&req, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        let rec = rec?;
        if let Some(p) = &a.save_script {
            write_file("--save-script", p, rec.script.as_bytes())?;
        }
        let src = Source {
            kind: "perf-record".into(),
            file: None,
            pid: Some(pid),
            comm: Some(comm),
            seconds: Some(a.seconds),
            frequency_hz: Some(a.frequency),
            event: Some(rec.event),
        };
        (rec.script, src)
    };

    let an = profile::analyse(&text, source, &profile::Options { top_stacks: a.top })?;
    if let Some(p) = &a.folded {
        write_file("--folded", p, profile::folded_text(&an.folded).as_bytes())?;
    }
    if let Some(p) = &a.svg {
        let svg = profile::svg::flame_graph(&an.folded, "spinscope profile")?;
        write_file("--svg", p, svg.as_bytes())?;
    }
    if a.json {
        report::print_json(&an.doc)?;
    } else {
        print_table(&an.doc);
    }
    Ok(EXIT_OK)
}

fn unreachable_target() -> Result<u32> {
    Err(Error::bad_input(
        "give --pid PID, --process NAME or --perf-script FILE",
    ))
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

fn print_table(d: &profile::ProfileDoc) {
    println!(
        "{} samples; {} without a symbol at the sampled IP; {} in spin loops found from instruction bytes",
        d.samples, d.no_symbol_samples, d.spin_loop_samples
    );
    println!();
    let mut t = report::table(&[
        "class",
        "self",
        "inclusive",
        "speedup if halved",
        "if removed",
    ]);
    for c in &d.classes {
        t.add_row(vec![
            c.label.clone(),
            pct(c.self_share),
            pct(c.inclusive_share),
            format!("{}x", report::fmt_num(c.amdahl_speedup_if_halved)),
            format!("{}x", report::fmt_num(c.amdahl_speedup_if_removed)),
        ]);
    }
    println!("{t}");
    if !d.spin_loops.is_empty() {
        println!();
        let mut t = report::table(&["spin loop (no symbol)", "samples", "share"]);
        for l in d.spin_loops.iter().take(10) {
            t.add_row(vec![l.name.clone(), l.samples.to_string(), pct(l.share)]);
        }
        println!("{t}");
    }
    for c in d.classes.iter().filter(|c| c.self_samples > 0) {
        println!();
        println!("top stacks: {} ({})", c.label, pct(c.self_share));
        for s in &c.top_stacks {
            println!("  {:>6}  {}", pct(s.share), abbreviate(&s.stack));
        }
    }
    println!();
    for n in &d.notes {
        println!("note: {n}");
    }
}

/// Keep the leaf end of long stacks readable.
fn abbreviate(stack: &str) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    if frames.len() <= 6 {
        return stack.to_string();
    }
    format!("{};...;{}", frames[0], frames[frames.len() - 5..].join(";"))
}
