//! The arguments of `spinscope doctor` and their checks, shared by the one-server run
//! ([`super::doctor`]) and the fleet run ([`super::fleet`]).

use std::path::PathBuf;

use clap::{ArgAction, Args};

use crate::doctor::Severity;
use crate::error::{Error, Result};
use crate::server::conn::ConnArgs;

const AFTER: &str = "\
Examples:
  spinscope doctor -S /run/mysqld/mysqld.sock -u root
  spinscope doctor --url mysql://monitor@db1:3306 -p --window 30s --json
  spinscope doctor -h 127.0.0.1 -P 3306 -u root --enable-instruments --save-snapshot db1.json
  spinscope doctor --snapshot db1.json --fail-on warning
  spinscope doctor root@db1:3306 root@db2:3306 root@db3:3306 --window 5s
  spinscope doctor --inventory fleet.txt --parallel 8 --json > fleet.json
  sudo spinscope doctor -h 127.0.0.1 -P 3306 -u root --rt     # response times beside Threads_running

Several servers (positional TARGETs or --inventory, one `[NAME] TARGET` per line) are
diagnosed in parallel and summarized one row each; the connection flags apply to every one.

Needs read privileges plus PROCESS (INNODB STATUS); --enable-instruments also needs UPDATE on
performance_schema and restores the previous state at the end, on error and on Ctrl-C.
--rt captures the server's TCP packets on its host over the window (root or CAP_NET_RAW);
when it cannot, the report says why in one line and the rest of the diagnosis goes on.";

/// Diagnose a live MySQL/MariaDB server (or a snapshot): findings with numbers and fixes.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, after_help = AFTER)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// More servers to diagnose together with the first TARGET (fleet mode).
    #[arg(value_name = "TARGET", conflicts_with = "snapshot")]
    pub more: Vec<String>,
    /// Diagnose every server in FILE (one `[NAME] TARGET` per line; `#` comments).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["snapshot", "save_snapshot"])]
    pub inventory: Option<PathBuf>,
    /// Fleet mode: servers diagnosed at once (one connection each).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub parallel: usize,
    /// Fleet mode: print each server's full report after the summary table.
    #[arg(long)]
    pub details: bool,
    /// Observation window for the burst sampler and the deltas: 10s, 500ms, 2m (a bare
    /// number is seconds; 0: none).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub window: f64,
    /// Burst sampler rate, samples per second: of the server's running threads counted from
    /// /proc on a local server (and of Threads_running etc. from SQL on a remote one).
    #[arg(long, default_value_t = 100.0, value_name = "HZ")]
    pub hz: f64,
    /// Local server: rate of the SQL counters (Threads_running etc.) beside the /proc series
    /// [default: 10, at most --hz]; each costs the server about 0.5 ms of CPU.
    #[arg(long, value_name = "HZ")]
    pub sql_hz: Option<f64>,
    /// Also measure the server's response times from packets over the window (`spinscope rt`
    /// on the server's TCP port; run on the server's host, as root or with CAP_NET_RAW).
    #[arg(long, conflicts_with = "snapshot")]
    pub rt: bool,
    /// Turn the performance_schema wait/synch instruments on for the window, then restore them.
    #[arg(long)]
    pub enable_instruments: bool,
    /// Host facts (a snapshot or host-facts JSON from the server's host) when it is not
    /// local, or for a --snapshot taken without them.
    #[arg(long, value_name = "FILE")]
    pub host_facts: Option<PathBuf>,
    /// Save the raw evidence (no password) to this JSON file, or to
    /// DIR/doctor-snapshot.json when given a directory.
    #[arg(long, visible_alias = "capture", value_name = "FILE|DIR")]
    pub save_snapshot: Option<PathBuf>,
    /// A saved wait document of this server (`spinscope profile --waits --json` on its host):
    /// the spin-budget finding follows its measured direction (spin less / spin more) with its
    /// numbers. Refused when it was recorded from another server (host, port, socket, data
    /// directory) or before the server's last restart.
    #[arg(long, value_name = "FILE", conflicts_with = "inventory")]
    pub waits: Option<PathBuf>,
    /// Diagnose a saved snapshot (FILE, or DIR/doctor-snapshot.json) offline instead of a
    /// live server.
    #[arg(long, visible_alias = "from", value_name = "FILE|DIR", conflicts_with_all = ["save_snapshot", "enable_instruments"])]
    pub snapshot: Option<PathBuf>,
    /// Print the spinscope.doctor/1 JSON document.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the report as Markdown.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<Severity>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

pub(super) fn check(a: &DoctorArgs) -> Result<()> {
    if !(a.window.is_finite() && (0.0..=3600.0).contains(&a.window)) {
        return Err(Error::bad_input(format!(
            "--window {}s: give 0s..=1h",
            a.window
        )));
    }
    if !(a.hz.is_finite() && a.hz > 0.0 && a.hz <= 1000.0) {
        return Err(Error::bad_input(format!(
            "--hz {}: give a rate in (0, 1000]",
            a.hz
        )));
    }
    if let Some(h) = a
        .sql_hz
        .filter(|h| !(h.is_finite() && *h > 0.0 && *h <= 1000.0))
    {
        return Err(Error::bad_input(format!(
            "--sql-hz {h}: give a rate in (0, 1000]"
        )));
    }
    if a.window > 0.0 && a.hz * a.window < 2.0 {
        return Err(Error::bad_input(format!(
            "--hz {} with --window {}: fewer than 2 samples in the window; give --hz of at least {}",
            a.hz,
            a.window,
            crate::report::fmt_num(2.0 / a.window)
        )));
    }
    Ok(())
}

/// The columns the text report is wrapped to: `COLUMNS` when it holds a number (as clap and
/// most tools read it), else the width of the terminal stdout is, else 80 (a pipe or a file).
pub(crate) fn text_width() -> usize {
    width_from(
        std::env::var("COLUMNS").ok().as_deref(),
        terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| w.0 as usize),
    )
}

fn width_from(columns: Option<&str>, tty: Option<usize>) -> usize {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or(tty.filter(|&w| w > 0))
        .unwrap_or(80)
}

/// The report as asked: Markdown, or text wrapped to the terminal.
pub(crate) fn render(doc: &crate::doctor::DoctorDoc, markdown: bool) -> String {
    if markdown {
        crate::report::doctor_md::markdown(doc)
    } else {
        crate::doctor::render::text(doc, text_width())
    }
}

#[cfg(test)]
mod width_tests {
    use super::width_from;

    #[test]
    fn columns_then_the_terminal_then_80() {
        assert_eq!(width_from(Some("120"), Some(100)), 120);
        assert_eq!(width_from(Some(" 60 "), None), 60);
        assert_eq!(width_from(Some("wide"), Some(100)), 100);
        assert_eq!(width_from(Some("0"), None), 80);
        assert_eq!(width_from(None, Some(132)), 132);
        assert_eq!(width_from(None, None), 80);
    }
}
