//! `spinscope watch`: flags into a `WatchPlan`, the signal handler, the final line.

use std::path::PathBuf;

use clap::{ArgAction, Args};

use crate::error::{Error, Result, EXIT_OK};
use crate::server::conn::{resolve, ConnArgs};
use crate::watch::{self, trigger, WatchPlan, Watched};

const AFTER: &str = "\
Examples:
  spinscope watch -S /run/mysqld/mysqld.sock -u monitor --metrics-listen 127.0.0.1:9104
  spinscope watch monitor@db1:3306 monitor@db2:3306 --trigger 'threads_running > 2*cores for 50ms'
  spinscope watch --inventory fleet.txt --out /var/lib/spinscope/watch --min-free-disk 2G
  spinscope doctor --snapshot /var/lib/spinscope/watch/20261123T221530.125Z-db1

Triggers (--trigger, repeatable; default 'threads_running > 2*cores for 50ms', and on a local
server 'running > 2*cores for 50ms' beside it):
  trigger  := series OP value [for DURATION] [cooldown DURATION]
  series   := threads_running | threads_connected | qps | row_lock_waits | rtt_ms | running
            | rt_p50_ms | rt_p95_ms | rt_p99_ms   (response time from packets; also p99, rt.p99)
  OP       := > | >= | < | <=
  value    := NUMBER [us|ms|s] | NUMBER*cores | cores | NUMBER% of DURATION AGG   (AGG: median mean min max)
  DURATION := NUMBER ms | NUMBER s | NUMBER m
  rt_* series: local server, root or CAP_NET_RAW; e.g. sudo spinscope watch root@127.0.0.1:3306 --trigger 'p99 > 5ms for 200ms'

Series and their sources: threads_running, threads_connected, qps (from Questions) and
row_lock_waits come from one SHOW GLOBAL STATUS, rtt_ms is its round trip: at --sql-hz (10) on a
local server, at --hz elsewhere; running (local servers only) is the server's threads in state R
(on a CPU or queued for one) from /proc/PID/task at --hz (100), which costs the server nothing.
A trigger is checked at its series' reads, so 'threads_running > 8 for 50ms' on a local server
needs two reads 100 ms apart; 'running > 2*cores for 50ms' sees CPU pile-ups at --hz. The /proc
series never backs off; the SQL reads slow down only while watch's own statements are the
server's load (its session's share of the server's CPU; remote: no other session running).

Bursts: a burst starts when any trigger's condition has held for its 'for' time and ends 0.5 s
after none holds; each is counted once in spinscope_watch_bursts_total, also while captures
cool down (--cooldown, default 30 s: one capture per series of repeated bursts, the next
series after half a minute) or --max-captures is reached.

Each capture is a directory with doctor-snapshot.json (read by doctor --snapshot DIR), capture.json
(every sample from --history before to --after after the trigger), processlist.tsv,
innodb-status-after.txt, host-facts.json and, when local and perf is permitted, perf-script.txt
(read by profile --perf-script); capture.json also holds this host's /proc statistics each second
of the window and the process list each second of the after window. watch.log gets one JSON line
per capture, one per burst (captured, in a capture's window, or skipped and why) and each
server's burst counts at the end; the final line counts the bursts by outcome. SIGINT/SIGTERM stop
watch after finishing a capture in progress (exit 0). Needs PROCESS for INNODB STATUS and the
full processlist.";

/// Watch servers at 100 Hz: triggers, captures with the seconds before them, Prometheus metrics.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, after_help = AFTER)]
pub struct WatchArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// More servers (same forms as TARGET); the connection flags apply to each.
    #[arg(value_name = "TARGET")]
    pub more: Vec<String>,
    /// A file with one server per line: `[NAME] TARGET`; `#` starts a comment.
    #[arg(long, value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Sampler rate per server, samples per second (the /proc count on a local server, else
    /// the SQL counters).
    #[arg(long, default_value_t = 100.0, value_name = "HZ")]
    pub hz: f64,
    /// SQL counters' rate on a local server, at most --hz; each read costs the server about
    /// 0.5 ms of CPU.
    #[arg(long, default_value_t = 10.0, value_name = "HZ")]
    pub sql_hz: f64,
    /// Samples kept per server and written before a trigger: 30s, 2m (bare number: seconds).
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub history: f64,
    /// Samples written after a trigger (bare number: seconds).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub after: f64,
    /// A trigger expression (repeatable); see the grammar below.
    #[arg(long = "trigger", value_name = "EXPR")]
    pub triggers: Vec<String>,
    /// How long a trigger stays quiet after it fired, unless it says `cooldown` (bare number:
    /// seconds). Bursts are counted in the metrics meanwhile.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub cooldown: f64,
    /// Captures this run writes at most.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_captures: u64,
    /// No capture when less than this is free where they go (500M, 2G, 0).
    #[arg(long, default_value = "1G", value_name = "SIZE")]
    pub min_free_disk: String,
    /// Captures kept in --out (the oldest go first).
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub keep: usize,
    /// Captures older than this are removed: 14d, 36h (bare number: days; at least 1h).
    #[arg(long = "max-age", alias = "max-age-days", default_value = "14d", value_name = "DURATION", value_parser = super::units::days)]
    pub max_age_days: f64,
    /// Where captures and watch.log go.
    #[arg(long, default_value = "spinscope-watch", value_name = "DIR")]
    pub out: PathBuf,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9104).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// perf recording of a local server at each capture (bare number: seconds; 0: none).
    #[arg(long = "profile-duration", alias = "profile-seconds", default_value = "5s", value_name = "DURATION", value_parser = super::units::seconds)]
    pub profile_seconds: f64,
    /// What `cores` means in triggers [default: the server host's CPUs when local].
    #[arg(long, value_name = "N")]
    pub cores: Option<f64>,
    /// Stop after this long (bare number: seconds) [default: run until SIGINT/SIGTERM].
    #[arg(long, value_name = "DURATION", value_parser = super::units::seconds)]
    pub duration: Option<f64>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

fn range(flag: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<()> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(Error::bad_input(format!(
            "{flag} {v}: give {lo}..={hi} {unit}"
        )))
    }
}

fn servers(a: &WatchArgs) -> Result<Vec<Watched>> {
    let mut list: Vec<(Option<String>, String)> = a
        .conn
        .target
        .iter()
        .chain(a.more.iter())
        .map(|s| (None, s.clone()))
        .collect();
    if let Some(f) = &a.inventory {
        let text = crate::files::read_capped(f, 1 << 20, "--inventory")?;
        list.extend(crate::server::inventory::parse(
            &text,
            &f.display().to_string(),
        )?);
    }
    if list.is_empty() {
        let t = resolve(&a.conn)?;
        return Ok(vec![Watched {
            name: t.describe(),
            target: t,
        }]);
    }
    let mut out: Vec<Watched> = Vec::new();
    for (name, s) in list {
        let mut c = a.conn.clone();
        c.target = Some(s.clone());
        c.url = None;
        let t = resolve(&c)?;
        let name = name.unwrap_or_else(|| t.describe());
        if out.iter().any(|w| w.name == name) {
            return Err(Error::bad_input(format!(
                "server {name} is given twice; name each server once"
            )));
        }
        out.push(Watched { name, target: t });
    }
    Ok(out)
}

pub fn plan(a: &WatchArgs) -> Result<WatchPlan> {
    range("--hz", a.hz, 1.0, 1000.0, "samples per second")?;
    range("--sql-hz", a.sql_hz, 0.1, 1000.0, "reads per second")?;
    range("--history", a.history, 1.0, 3600.0, "seconds")?;
    range("--after", a.after, 0.0, 600.0, "seconds")?;
    range("--cooldown", a.cooldown, 0.0, 86_400.0, "seconds")?;
    range(
        "--profile-duration",
        a.profile_seconds,
        0.0,
        300.0,
        "seconds",
    )?;
    range("--max-age", a.max_age_days, 0.0, 36_500.0, "days")?;
    if a.max_age_days * 24.0 < 1.0 {
        return Err(Error::bad_input(format!(
            "--max-age {}h: captures would be removed right after they are written; give 1h or more",
            (a.max_age_days * 24.0 * 100.0).round() / 100.0
        )));
    }
    if let Some(c) = a.cores {
        range("--cores", c, 1.0, 65_536.0, "cores")?;
    }
    if let Some(d) = a.duration {
        range("--duration", d, 0.0, 1e9, "seconds")?;
    }
    if a.keep == 0 {
        return Err(Error::bad_input(
            "--keep 0: every capture would be removed right after it is written; keep at least 1",
        ));
    }
    let texts: Vec<String> = if a.triggers.is_empty() {
        vec![
            trigger::DEFAULT_TRIGGER.to_string(),
            trigger::DEFAULT_PROC_TRIGGER.to_string(),
        ]
    } else {
        a.triggers.clone()
    };
    let triggers = texts
        .iter()
        .map(|t| trigger::parse(t))
        .collect::<Result<Vec<_>>>()?;
    Ok(WatchPlan {
        servers: servers(a)?,
        hz: a.hz,
        sql_hz: a.sql_hz,
        history_s: a.history,
        after_s: a.after,
        triggers,
        default_triggers: a.triggers.is_empty(),
        cooldown_s: a.cooldown,
        max_captures: a.max_captures,
        min_free_bytes: watch::capture::parse_bytes(&a.min_free_disk)?,
        keep: a.keep,
        max_age_s: a.max_age_days * 86_400.0,
        out_dir: a.out.clone(),
        profile_seconds: a.profile_seconds,
        cores: a.cores,
        metrics_listen: a.metrics_listen.clone(),
        duration_s: a.duration,
    })
}

pub fn run(a: WatchArgs) -> Result<i32> {
    let p = plan(&a)?;
    // Everything watch and its children (perf's temporary directory included) create holds
    // server data: private whatever the inherited umask.
    // SAFETY: umask has no preconditions.
    unsafe {
        libc::umask(0o077);
    }
    let out = p.out_dir.clone();
    // A link planted at the log watch appends to is refused before the watch starts.
    if out.is_dir() {
        crate::files::check_output(&out.join("watch.log"), "--out")?;
    }
    let stop = crate::interrupt::install()?;
    let s = watch::run(p, stop)?;
    println!(
        "spinscope watch: {}; {} capture(s) in {} ({} trigger firing(s) skipped{}) over {:.0} s",
        s.bursts.line(),
        s.captures,
        out.display(),
        s.skipped,
        if s.failed > 0 {
            format!(", {} failed to write", s.failed)
        } else {
            String::new()
        },
        s.seconds
    );
    Ok(EXIT_OK)
}
