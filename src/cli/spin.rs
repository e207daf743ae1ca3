//! `spinscope spin`: arguments, resolution of the CPU source, and output.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result, EXIT_OK};
use crate::spin::cpus;
use crate::spin::doc::{self, Target};
use crate::spin::model::{family_for, resolve_settings, Arch, CpuModel};
use crate::spin::version::{parse_version, Flavor};

const AFTER_HELP: &str = "\
Examples:
  spinscope spin --server 8.0.36                       # defaults, on this CPU (quick probe)
  spinscope spin --server 8.0.36 --cpu skylake-sp --match baseline
  spinscope spin --server 10.11.19-MariaDB --spin-wait-delay 30 --pause-ns 24.6
  spinscope spin --server 5.7.26-29-log --flavor percona --probe other-host.json --target-us 50

The longest spin is L rounds at the maximum hints per round: the time one acquisition attempt
can burn before the thread sleeps in the OS. The baseline is a Broadwell-class CPU (10 cycles
per PAUSE), the hardware the InnoDB defaults were tuned on.";

#[derive(Debug, Args)]
#[command(after_long_help = AFTER_HELP)]
pub struct SpinArgs {
    /// Server version as SELECT VERSION() prints it, e.g. 8.0.36, 10.11.19-MariaDB-0+deb12u1.
    /// Required except with `--cpu list`.
    #[arg(long, value_name = "VERSION", required_unless_present = "cpu")]
    pub server: Option<String>,
    /// Server flavor; inferred from the version string when absent.
    #[arg(long, value_enum)]
    pub flavor: Option<Flavor>,
    /// innodb_spin_wait_delay (default: the version's default).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub spin_wait_delay: Option<u64>,
    /// innodb_sync_spin_loops: rounds before the OS wait (default: the version's default).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub sync_spin_loops: Option<u64>,
    /// innodb_spin_wait_pause_multiplier (MySQL/Percona 8.0.16+ only).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub pause_multiplier: Option<u64>,

    /// Use a probe saved with `spinscope probe --save FILE` (another machine's CPU).
    #[arg(long, value_name = "FILE", group = "cpu_source")]
    pub probe: Option<PathBuf>,
    /// Nanoseconds per spin hint, measured elsewhere.
    #[arg(
        long,
        value_name = "NS",
        group = "cpu_source",
        allow_negative_numbers = true
    )]
    pub pause_ns: Option<f64>,
    /// Core cycles per spin hint (needs --ghz).
    #[arg(long, value_name = "CYCLES", group = "cpu_source", requires = "ghz")]
    pub pause_cycles: Option<f64>,
    /// Core clock in GHz, with --pause-cycles.
    #[arg(long, value_name = "GHZ", requires = "pause_cycles")]
    pub ghz: Option<f64>,
    /// A reference CPU by name (see `--cpu list`), e.g. skylake-sp, broadwell, zen4.
    #[arg(long, value_name = "NAME", group = "cpu_source")]
    pub cpu: Option<String>,

    /// The CPU to compare with.
    #[arg(long, value_name = "NAME", default_value = "broadwell")]
    pub baseline: String,
    /// Recommend settings whose longest spin is this many microseconds.
    #[arg(
        long,
        value_name = "US",
        conflicts_with = "match_cpu",
        allow_negative_numbers = true
    )]
    pub target_us: Option<f64>,
    /// Recommend settings that spin as long as the version's defaults do on `baseline` or on a
    /// named reference CPU.
    #[arg(long = "match", value_name = "baseline|CPU")]
    pub match_cpu: Option<String>,
    /// Print the spinscope.spin/1 JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

fn check_float(flag: &str, v: f64, lo: f64, hi: f64) -> Result<f64> {
    if !v.is_finite() || v < lo || v > hi {
        return Err(Error::bad_input(format!(
            "{flag} {v}: out of range; give a number from {lo} to {hi}"
        )));
    }
    Ok(v)
}

/// Turn the CPU flags into a model; a live quick probe when none is given.
fn resolve_cpu(a: &SpinArgs) -> Result<CpuModel> {
    if let Some(name) = &a.cpu {
        return Ok(CpuModel::from_reference(cpus::lookup(name)?));
    }
    if let Some(ns) = a.pause_ns {
        let ns = check_float("--pause-ns", ns, 0.01, 1e6)?;
        return Ok(CpuModel {
            label: "--pause-ns".into(),
            arch: host_arch(),
            ns_per_hint: ns,
            tsc_ticks_per_hint: None,
            ghz: None,
            approximate: false,
        });
    }
    if let (Some(cy), Some(ghz)) = (a.pause_cycles, a.ghz) {
        let cy = check_float("--pause-cycles", cy, 0.01, 1e6)?;
        let ghz = check_float("--ghz", ghz, 0.1, 10.0)?;
        return Ok(CpuModel {
            label: format!("--pause-cycles {cy} at {ghz} GHz"),
            arch: host_arch(),
            ns_per_hint: cy / ghz,
            // A server TSC ticks near the nominal clock: ticks per PAUSE ~ cycles.
            tsc_ticks_per_hint: Some(cy),
            ghz: Some(ghz),
            approximate: false,
        });
    }
    if let Some(path) = &a.probe {
        return probe_model(Some(path));
    }
    eprintln!("spinscope: no CPU given; probing this one (use --cpu, --pause-ns or --probe FILE for another)");
    probe_model(None)
}

/// A saved probe (`--probe FILE`) or a quick live probe of the current CPU.
fn probe_model(path: Option<&std::path::Path>) -> Result<CpuModel> {
    match path {
        Some(p) => {
            let r = crate::cpu::load_probe_file(p)?;
            Ok(crate::cpu::cpu_model(
                &r,
                &format!("{} ({})", crate::cpu::describe(&r), p.display()),
            ))
        }
        None => {
            let r = crate::cpu::probe_current_cpu_quick()?;
            Ok(crate::cpu::cpu_model(&r, &crate::cpu::describe(&r)))
        }
    }
}

fn host_arch() -> Arch {
    if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    }
}

pub fn run(a: SpinArgs) -> Result<i32> {
    if a.cpu.as_deref() == Some("list") {
        for c in cpus::REFERENCE_CPUS {
            println!(
                "{:<16} {:<58} {:>5} cycles/{} at {} GHz{}",
                c.key,
                c.microarch,
                c.hint_cycles,
                c.hint.name(),
                c.typical_ghz,
                if c.approximate { " (indicative)" } else { "" }
            );
        }
        return Ok(EXIT_OK);
    }
    let Some(version) = a.server.as_deref() else {
        return Err(Error::bad_input(
            "--server VERSION is required (only `--cpu list` works without it); e.g. --server 8.0.36",
        ));
    };
    let server = parse_version(version, a.flavor)?;
    let info = family_for(&server);
    let settings = resolve_settings(
        &info,
        a.spin_wait_delay,
        a.sync_spin_loops,
        a.pause_multiplier,
    )?;
    let mut given = Vec::new();
    if a.spin_wait_delay.is_some() {
        given.push(info.delay.name.to_string());
    }
    if a.sync_spin_loops.is_some() {
        given.push(info.loops.name.to_string());
    }
    if let (Some(spec), Some(_)) = (info.multiplier, a.pause_multiplier) {
        given.push(spec.name.to_string());
    }
    let baseline = CpuModel::from_reference(
        cpus::lookup(&a.baseline)
            .map_err(|e| Error::bad_input(e.to_string().replacen("--cpu", "--baseline", 1)))?,
    );
    let target = match (&a.target_us, &a.match_cpu) {
        (Some(us), _) => Some(Target::MaxSpinUs(check_float(
            "--target-us",
            *us,
            0.0,
            1e9,
        )?)),
        (None, Some(m)) if m.eq_ignore_ascii_case("baseline") => {
            Some(Target::Match(baseline.clone()))
        }
        (None, Some(m)) => Some(Target::Match(CpuModel::from_reference(
            cpus::lookup(m)
                .map_err(|e| Error::bad_input(e.to_string().replacen("--cpu", "--match", 1)))?,
        ))),
        (None, None) => None,
    };
    let cpu = resolve_cpu(&a)?;
    let report = doc::build(&server, settings, given, cpu, baseline, target);
    if a.json {
        crate::report::print_json(&report)?;
    } else {
        print!("{}", crate::report::spin::render(&report));
    }
    Ok(EXIT_OK)
}
