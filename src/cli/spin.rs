//! `spinscope spin`: arguments, resolution of the CPU source, and output.

use std::path::PathBuf;

use clap::{ArgAction, Args};

use crate::cpu::source::{self, check_float, CpuSource};
use crate::error::{Error, Result, EXIT_OK};
use crate::server::conn::ConnArgs;
use crate::server::live_settings::SettingsSource;
use crate::spin::cpus;
use crate::spin::doc::{self, Target};
use crate::spin::model::{family_for, resolve_settings, settings_from_vars, CpuModel};
use crate::spin::version::{parse_version, server_version, Flavor};

const AFTER_HELP: &str = "\
Examples:
  spinscope spin --server 8.0.36                       # defaults, on this CPU (quick probe)
  spinscope spin --server 8.0.36 --cpu skylake-sp --match baseline
  spinscope spin --server 10.11.19-MariaDB --spin-wait-delay 30 --pause-ns 24.6
  spinscope spin --server 5.7.26-29-log --flavor percona --probe other-host.json --target-us 50
  spinscope spin --from-server -S /run/mysqld/mysqld.sock -u root --match baseline
  spinscope spin --snapshot db1.json                   # settings and CPU from doctor's snapshot

The longest spin is L rounds at the maximum hints per round: the time one acquisition attempt
can burn before the thread sleeps in the OS. Two ratios, labelled:
  design ratio  the current settings on this CPU against the budget the version's defaults
                were designed for (the defaults on a Broadwell-class CPU, 10 cycles per PAUSE);
  CPU ratio     the same settings here against the same settings on --baseline (the CPU's
                effect alone).
Without --from-server, --snapshot or setting flags, the version's defaults are priced.
Advice searches every legal knob (delay, loops, multiplier), prefers the fewest changed
variables, DEFAULT where the default meets the target, and allows for the measured CPU
figure's run-to-run noise (docs/REFERENCE.md §1, §8).";

#[derive(Debug, Args)]
#[command(after_long_help = AFTER_HELP, disable_help_flag = true)]
pub struct SpinArgs {
    /// Server version as SELECT VERSION() prints it, e.g. 8.0.36, 10.11.19-MariaDB-0+deb12u1.
    /// Required except with `--cpu list`, --from-server or --snapshot.
    // Not `required` in clap: its message would name --server alone; run() names all three.
    #[arg(
        long,
        value_name = "VERSION",
        conflicts_with_all = ["from_server", "snapshot"]
    )]
    pub server: Option<String>,
    /// Read the version and the spin settings from a live server (connection flags below);
    /// setting flags given as well override what it reports.
    #[arg(long, conflicts_with = "snapshot")]
    pub from_server: bool,
    /// Read the version, the spin settings and (when it has them) the host CPU from a doctor
    /// snapshot (`doctor --save-snapshot FILE`).
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    #[command(flatten)]
    pub conn: ConnArgs,
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
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

fn cpu_flag_given(a: &SpinArgs) -> bool {
    a.cpu.is_some() || a.pause_ns.is_some() || a.pause_cycles.is_some() || a.probe.is_some()
}

fn conn_flag_given(c: &ConnArgs) -> bool {
    c.url.is_some()
        || c.target.is_some()
        || c.defaults_extra_file.is_some()
        || c.host.is_some()
        || c.port.is_some()
        || c.socket.is_some()
        || c.user.is_some()
        || c.password.is_some()
        || c.defaults_file.is_some()
}

fn source(a: &SpinArgs) -> Result<Option<SettingsSource>> {
    if let Some(p) = &a.snapshot {
        return SettingsSource::snapshot(p).map(Some);
    }
    if a.from_server {
        return SettingsSource::live(&crate::server::conn::resolve(&a.conn)?).map(Some);
    }
    if conn_flag_given(&a.conn) {
        return Err(Error::bad_input(
            "a server or connection flags (TARGET, -h, -P, -S, -u, -p, --url) need --from-server; add it to read a live server's settings",
        ));
    }
    Ok(None)
}

/// The CPU flags as a source; a quick probe of this machine when none is given.
fn cpu_source(a: &SpinArgs) -> CpuSource {
    match (&a.cpu, a.pause_ns, a.pause_cycles, a.ghz, &a.probe) {
        (Some(name), ..) => CpuSource::Reference(name.clone()),
        (_, Some(ns), ..) => CpuSource::PauseNs(ns),
        (_, _, Some(cycles), Some(ghz), _) => CpuSource::PauseCycles { cycles, ghz },
        (.., Some(p)) => CpuSource::ProbeFile(p.clone()),
        _ => {
            eprintln!("spinscope: no CPU given; probing this one (use --cpu, --pause-ns or --probe FILE for another)");
            CpuSource::ThisMachine
        }
    }
}

/// A reference CPU named by `flag`.
fn reference(flag: &str, name: &str) -> Result<CpuModel> {
    let c = cpus::lookup(name)
        .map_err(|e| Error::bad_input(e.to_string().replacen("--cpu", flag, 1)))?;
    Ok(CpuModel::from_reference(c))
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
    let src = source(&a)?;
    let server = match (&src, a.server.as_deref()) {
        (Some(s), _) => {
            let what = match &s.file {
                Some(f) => format!("--snapshot {}: field \"version\"", f.display()),
                None => format!("{}: VERSION()", s.label),
            };
            server_version(&s.version, s.comment.as_deref(), a.flavor, &what)?
        }
        (None, Some(v)) => parse_version(v, a.flavor)?,
        (None, None) => {
            return Err(Error::bad_input(
                "spin needs the server to price: --server VERSION (e.g. --server 8.0.36), --from-server with connection flags (e.g. --from-server -S /run/mysqld/mysqld.sock), or --snapshot FILE (a doctor snapshot); only `--cpu list` works without",
            ))
        }
    };
    let info = family_for(&server);
    let mut notes = Vec::new();
    let (mut settings_source, mut given, read) = match &src {
        Some(s) => {
            let (read, names, bad) =
                settings_from_vars(&info, |n| s.vars.get(n).map(String::as_str));
            if let Some(b) = bad.first() {
                return Err(Error::bad_input(format!(
                    "{}: {b}; give the value with the matching flag (e.g. --spin-wait-delay)",
                    s.label
                )));
            }
            (s.label.clone(), names, Some(read))
        }
        None => (format!("defaults of {}", info.server), Vec::new(), None),
    };
    let settings = resolve_settings(
        &info,
        a.spin_wait_delay.or(read.map(|r| r.spin_wait_delay)),
        a.sync_spin_loops.or(read.map(|r| r.sync_spin_loops)),
        a.pause_multiplier.or(read.and_then(|r| r.pause_multiplier)),
    )?;
    if src.is_none()
        && (a.spin_wait_delay.is_some()
            || a.sync_spin_loops.is_some()
            || a.pause_multiplier.is_some())
    {
        settings_source = "command line (other variables: the version's defaults)".into();
    }
    if a.spin_wait_delay.is_some() {
        given.push(info.delay.name.to_string());
    }
    if a.sync_spin_loops.is_some() {
        given.push(info.loops.name.to_string());
    }
    if let (Some(spec), Some(_)) = (info.multiplier, a.pause_multiplier) {
        given.push(spec.name.to_string());
    }
    let baseline = reference("--baseline", &a.baseline)?;
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
        (None, Some(m)) => Some(Target::Match(reference("--match", m)?)),
        (None, None) => None,
    };
    let cpu = match src.as_ref().and_then(|s| s.cpu.clone()) {
        Some(c) if !cpu_flag_given(&a) => c,
        _ => {
            // A snapshot's settings belong to its host: never priced with this host's CPU
            // unless the user says which CPU.
            if let (Some(s), false) = (&src, cpu_flag_given(&a)) {
                if let (Some(f), Some(gap)) = (&s.file, &s.cpu_gap) {
                    return Err(Error::bad_input(format!(
                        "--snapshot {}: {gap}, and its host need not be this one; pass --probe FILE (a probe saved on that host), --cpu NAME or --pause-ns NS",
                        f.display()
                    )));
                }
            }
            if src.as_ref().is_some_and(|s| s.remote) && !cpu_flag_given(&a) {
                notes.push(
                    "the server is not on this machine, but this machine's CPU was priced: pass \
                     --probe FILE (a probe saved on the server's host) or --cpu NAME"
                        .to_string(),
                );
            }
            source::resolve(&cpu_source(&a), &mut super::progress::Stderr::default())?
        }
    };
    given.sort();
    given.dedup();
    let mut report = doc::build(
        &server,
        settings,
        given,
        settings_source,
        cpu,
        baseline,
        target,
    );
    report.notes.extend(notes);
    if a.json {
        crate::cli::print_json(&report)?;
    } else {
        print!("{}", crate::report::spin::render(&report));
    }
    Ok(EXIT_OK)
}
