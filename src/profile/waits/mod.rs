//! `profile --waits`: where the server's threads wait for latches, spinning on a CPU and
//! sleeping off it, side by side per latch site. Owns the reader of a wait recording's `perf
//! script` text (`script`), function starts of stripped binaries (`functions`), the join of
//! on-CPU samples and switch intervals per site (`join`), the advice (`advice`), the live
//! recording and its cost check (`record`), the terminal report (`render`) and the
//! `spinscope.profile-waits/1` document (here).

pub mod advice;
pub mod functions;
pub mod identity;
pub mod join;
pub mod pprof;
pub mod record;
pub mod render;
pub mod script;

use std::collections::HashMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use advice::{Advice, Direction, Figures};
pub use identity::WaitServer;
use join::{Code, Joined, OffKind};

pub const SCHEMA: &str = "spinscope.profile-waits/1";

/// How many sites the document keeps (by spin CPU plus sleep time).
pub const MAX_SITES: usize = 20;

/// Where the events came from and how off-CPU time was seen.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WaitSource {
    /// "perf-record" (live) or "perf-script" (a saved text).
    pub kind: String,
    pub file: Option<String>,
    pub pid: u32,
    pub comm: Option<String>,
    /// The window: as asked (live), else from the first to the last event of the server.
    pub seconds: f64,
    pub frequency_hz: Option<u32>,
    /// The on-CPU event sampled.
    pub on_cpu_event: Option<String>,
    /// How off-CPU intervals were recorded.
    pub off_cpu_method: String,
}

/// The live recording's cost check: the server's switch rate before recording and the cost
/// it predicts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CostCheck {
    pub switches_per_s: f64,
    /// The host's idle CPUs in the pre-check's least idle part (absent in documents written
    /// before it was measured).
    #[serde(default)]
    pub idle_cpus: f64,
    pub expected_cost_pct: f64,
    pub bound_pct: f64,
    /// What was decided: "recorded" (within the bound) or "recorded above the bound
    /// (--max-cost)".
    pub decision: String,
}

/// Sleep lengths of a site: quantiles and buckets (microseconds).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Lengths {
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Sleeps of at most `le_us` (and longer than the previous bucket's bound); the last
    /// bucket's bound is null (longer than all).
    pub buckets: Vec<Bucket>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bucket {
    pub le_us: Option<f64>,
    pub sleeps: u64,
}

/// One latch site.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Site {
    /// The waiting function (symbol, or `binary+0x...`: its start as a file offset) ...
    pub function: String,
    /// ... and its caller.
    pub caller: Option<String>,
    /// The nearest named function at or above the site, to place it.
    pub context: Option<String>,
    pub spin_samples: u64,
    pub spin_cpu_seconds_per_s: f64,
    pub sleeps: u64,
    pub sleeps_per_s: f64,
    pub sleep_seconds_per_s: f64,
    pub sleep_lengths: Option<Lengths>,
    /// Contended acquisitions seen (runs of spin samples of a thread here, and sleeps here
    /// that no sampled spin preceded) and how many of them slept.
    pub contended_seen: u64,
    pub contended_slept: u64,
    /// contended_slept / contended_seen: an upper bound on the share of contended
    /// acquisitions that slept (spins shorter than the sampling period go unseen).
    pub slept_share_at_most: Option<f64>,
    /// Preemptions of threads while they spun here.
    pub preempted_while_spinning: u64,
    pub advice: Advice,
}

/// Off-CPU time of the server's threads by kind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OffCpu {
    pub kind: String,
    pub intervals: u64,
    pub per_s: f64,
    pub seconds_per_s: f64,
}

/// What to do with one setting.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SettingMove {
    pub variable: String,
    pub what: String,
}

/// The `spinscope.profile-waits/1` document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WaitDoc {
    pub schema: String,
    pub source: WaitSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostCheck>,
    /// The recorded server process (live recordings; absent from a perf script's document):
    /// what doctor and tune compare with the server before they use the advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<WaitServer>,
    /// The server's on-CPU samples and their CPU seconds per second, of which spinning.
    pub samples: u64,
    pub cpu_seconds_per_s: f64,
    pub spin_samples: u64,
    pub spin_cpu_seconds_per_s: f64,
    /// Latch sleeps of the whole server.
    pub latch_sleeps: u64,
    pub latch_sleeps_per_s: f64,
    pub latch_sleep_seconds_per_s: f64,
    /// Latch sleeps whose call chain ended before the server's code (not in any site).
    pub unplaced_latch_sleeps: u64,
    pub off_cpu: Vec<OffCpu>,
    /// Intervals still open when the window ended (not counted).
    pub open_at_end: u64,
    pub sites: Vec<Site>,
    /// The server-wide direction and its reason (from the server's totals).
    pub advice: Advice,
    pub settings: Vec<SettingMove>,
    pub headline: String,
    pub notes: Vec<String>,
}

/// What the document is built with besides the events.
#[derive(Debug, Clone)]
pub struct Build {
    pub pid: u32,
    pub kind: String,
    pub file: Option<String>,
    pub comm: Option<String>,
    /// The window as recorded; `None`: from the events.
    pub seconds: Option<f64>,
    pub frequency_hz: Option<u32>,
    pub off_cpu_method: String,
    pub cost: Option<CostCheck>,
    /// The recorded process (live recordings).
    pub server: Option<WaitServer>,
    /// Also build the pprof profile of the recording (`--pprof`).
    pub pprof: bool,
}

/// A document and, when asked, its pprof profile.
#[derive(Debug, Clone)]
pub struct Analysed {
    pub doc: WaitDoc,
    pub pprof: Option<crate::profile::pprof::Profile>,
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

const BOUNDS_US: [f64; 5] = [10.0, 100.0, 1000.0, 10_000.0, 100_000.0];

fn lengths(ns: &[u64]) -> Option<Lengths> {
    if ns.is_empty() {
        return None;
    }
    let mut v = ns.to_vec();
    v.sort_unstable();
    let mut buckets: Vec<Bucket> = BOUNDS_US
        .iter()
        .map(|&b| Bucket {
            le_us: Some(b),
            sleeps: 0,
        })
        .collect();
    buckets.push(Bucket {
        le_us: None,
        sleeps: 0,
    });
    for &x in &v {
        let us = x as f64 / 1000.0;
        let i = BOUNDS_US
            .iter()
            .position(|&b| us <= b)
            .unwrap_or(BOUNDS_US.len());
        buckets[i].sleeps += 1;
    }
    Some(Lengths {
        p50_us: quantile(&v, 0.5),
        p90_us: quantile(&v, 0.9),
        p99_us: quantile(&v, 0.99),
        max_us: quantile(&v, 1.0),
        buckets,
    })
}

fn kind_name(k: OffKind) -> &'static str {
    match k {
        OffKind::Latch => "latch sleep (futex from the server's code)",
        OffKind::Pthread => "C-library mutex or condition wait (futex)",
        OffKind::Io => "I/O wait",
        OffKind::Other => "other sleep (network, poll, timers)",
        OffKind::Preempted => "preempted or yielded while runnable",
    }
}

/// Is the weight of the sampled event in nanoseconds (so CPU seconds can be told)?
fn ns_event(name: Option<&str>) -> bool {
    name.is_some_and(|e| e.starts_with("cpu-clock") || e.starts_with("task-clock"))
}

/// The document of a join, and its pprof profile when `b.pprof` asks for one.
pub fn build(mut j: Joined, b: Build) -> Analysed {
    let stacks = std::mem::take(&mut j.stacks);
    let want_pprof = b.pprof;
    let doc = document(j, b);
    let pprof = want_pprof.then(|| pprof::build(&stacks, &doc));
    Analysed { doc, pprof }
}

fn document(j: Joined, b: Build) -> WaitDoc {
    let seconds = b.seconds.unwrap_or_else(|| match (j.first_ns, j.last_ns) {
        (Some(f), Some(l)) if l > f => (l - f) as f64 / 1e9,
        _ => 0.0,
    });
    let per_s = |x: f64| if seconds > 0.0 { x / seconds } else { 0.0 };
    let ns = ns_event(j.event.as_deref());
    let mut notes = Vec::new();
    // CPU seconds per second: periods in ns; else sample counts at the frequency.
    let cpu = |samples: u64, weight: u64| match (ns, b.frequency_hz) {
        (true, _) => per_s(weight as f64 / 1e9),
        (false, Some(hz)) if hz > 0 => per_s(samples as f64 / hz as f64),
        _ => 0.0,
    };
    if !ns && b.frequency_hz.is_none() {
        notes.push(format!(
            "the on-CPU event ({}) has no time unit and no frequency was given: CPU seconds \
             are shown as 0; record with cpu-clock",
            j.event.as_deref().unwrap_or("none")
        ));
    }
    let mut sites: Vec<Site> = j
        .sites
        .iter()
        .map(|((function, caller), t)| {
            let sleep_ns: u64 = t.sleeps_ns.iter().sum();
            let l = lengths(&t.sleeps_ns);
            let spin_cpu = cpu(t.spin_samples, t.spin_weight);
            let fig = Figures {
                spin_samples: t.spin_samples,
                spin_cpu,
                sleeps: t.sleeps_ns.len() as u64,
                sleeps_per_s: per_s(t.sleeps_ns.len() as f64),
                sleep_p50_us: l.as_ref().map(|l| l.p50_us),
            };
            Site {
                function: function.clone(),
                caller: caller.clone(),
                context: t.context.clone(),
                spin_samples: t.spin_samples,
                spin_cpu_seconds_per_s: spin_cpu,
                sleeps: t.sleeps_ns.len() as u64,
                sleeps_per_s: fig.sleeps_per_s,
                sleep_seconds_per_s: per_s(sleep_ns as f64 / 1e9),
                sleep_lengths: l,
                contended_seen: t.episodes,
                contended_slept: t.slept_episodes,
                slept_share_at_most: (t.episodes > 0)
                    .then(|| t.slept_episodes as f64 / t.episodes as f64),
                preempted_while_spinning: t.preempted_spinning,
                advice: advice::advise(&fig),
            }
        })
        .filter(|s| s.spin_samples > 0 || s.sleeps > 0)
        .collect();
    sites.sort_by(|a, b| {
        let w = |s: &Site| s.spin_cpu_seconds_per_s + s.sleep_seconds_per_s;
        w(b).total_cmp(&w(a)).then(a.function.cmp(&b.function))
    });
    if sites.len() > MAX_SITES {
        notes.push(format!(
            "{} sites; the {MAX_SITES} with the most spin and sleep time are kept",
            sites.len()
        ));
        sites.truncate(MAX_SITES);
    }
    let (latch_n, latch_ns) = j.off.get(&OffKind::Latch).copied().unwrap_or_default();
    let mut all_sleeps: Vec<u64> = j.sites.values().flat_map(|t| t.sleeps_ns.clone()).collect();
    all_sleeps.sort_unstable();
    let fig = Figures {
        spin_samples: j.spin_samples,
        spin_cpu: cpu(j.spin_samples, j.spin_weight),
        sleeps: latch_n,
        sleeps_per_s: per_s(latch_n as f64),
        sleep_p50_us: (!all_sleeps.is_empty()).then(|| quantile(&all_sleeps, 0.5)),
    };
    let overall = advice::advise(&fig);
    let off_cpu = j
        .off
        .iter()
        .map(|(k, (n, t))| OffCpu {
            kind: kind_name(*k).to_string(),
            intervals: *n,
            per_s: per_s(*n as f64),
            seconds_per_s: per_s(*t as f64 / 1e9),
        })
        .collect();
    if !j.call_chains && j.samples + j.switches_seen > 0 {
        notes.push(
            "no call chains in the recording (perf record without -g): sites cannot be told; \
             record with -g"
                .into(),
        );
    }
    if j.unplaced_latch_sleeps > 0 {
        notes.push(format!(
            "{} latch sleeps had no server frame on their call chain (it ended in the C \
             library or the kernel) and are counted only in the totals",
            j.unplaced_latch_sleeps
        ));
    }
    if j.switches_seen == 0 {
        notes.push(
            "no scheduler switch events: this is an on-CPU recording only; record with `profile \
             --waits` (or perf record -e sched:sched_switch -g) to see sleeps"
                .into(),
        );
    }
    notes.push(
        "a site is the first server function above the wait machinery (spin loops, InnoDB's \
         spin and wait functions, the C library, the kernel) and its caller; without symbols \
         a function is named by its start in the file (binary+0x...), from the binary's unwind \
         table"
            .into(),
    );
    notes.push(format!(
        "'slept, at most' is sleeps over contended acquisitions seen: runs of one thread's spin \
         samples at a site (spins shorter than the sampling period are missed, so the share is \
         an upper bound) plus sleeps no sampled spin preceded; off-CPU time runs from the \
         switch-out to the next switch-in, so on a busy host it includes waiting for a CPU; a \
         wake-up is priced at {} us of CPU",
        advice::WAKE_CPU_US
    ));
    let settings = advice::settings_for(overall.direction)
        .into_iter()
        .map(|(variable, what)| SettingMove { variable, what })
        .collect();
    let headline = headline(&fig, overall.direction, sites.first());
    WaitDoc {
        schema: SCHEMA.to_string(),
        source: WaitSource {
            kind: b.kind,
            file: b.file,
            pid: b.pid,
            comm: b.comm,
            seconds,
            frequency_hz: b.frequency_hz,
            on_cpu_event: j.event.clone(),
            off_cpu_method: b.off_cpu_method,
        },
        cost: b.cost,
        server: b.server,
        samples: j.samples,
        cpu_seconds_per_s: cpu(j.samples, j.weight),
        spin_samples: j.spin_samples,
        spin_cpu_seconds_per_s: fig.spin_cpu,
        latch_sleeps: latch_n,
        latch_sleeps_per_s: fig.sleeps_per_s,
        latch_sleep_seconds_per_s: per_s(latch_ns as f64 / 1e9),
        unplaced_latch_sleeps: j.unplaced_latch_sleeps,
        off_cpu,
        open_at_end: j.open_at_end,
        sites,
        advice: overall,
        settings,
        headline,
        notes,
    }
}

fn headline(f: &Figures, d: Direction, top: Option<&Site>) -> String {
    let at = top
        .map(|s| format!("; the busiest site is {}", site_name(s)))
        .unwrap_or_default();
    format!(
        "{}: {:.2} CPU-s/s spinning and {:.0} latch sleeps/s{at}",
        match d {
            Direction::Less => "spin less",
            Direction::More => "spin more",
            Direction::Keep => "keep the spin settings",
            Direction::Unclear => "too little to say",
        },
        f.spin_cpu,
        f.sleeps_per_s
    )
}

/// A saved `profile --waits --json` document (`flag` names the input in messages): refused in
/// one line when it cannot be read, is not JSON, or is another kind of document.
pub fn load(path: &std::path::Path, flag: &str) -> Result<WaitDoc> {
    let text = crate::files::read_capped(path, crate::files::JSON_INPUT_CAP, flag)?;
    let how = "save one with `spinscope profile --waits --json --pid PID > FILE`";
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::bad_input(format!("{flag} {}: not JSON ({e}): {how}", path.display()))
    })?;
    let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("none");
    if schema != SCHEMA {
        return Err(Error::bad_input(format!(
            "{flag} {}: a document of schema {schema}, not {SCHEMA}: {how}",
            path.display()
        )));
    }
    serde_json::from_value(v).map_err(|e| {
        Error::bad_input(format!(
            "{flag} {}: a {SCHEMA} document with a field spinscope cannot read ({e}): {how}",
            path.display()
        ))
    })
}

/// `function <- caller (in context)`.
pub fn site_name(s: &Site) -> String {
    let mut n = s.function.clone();
    if let Some(c) = &s.caller {
        n.push_str(" <- ");
        n.push_str(c);
    }
    if let Some(c) = s.context.as_ref().filter(|c| **c != s.function) {
        n.push_str(&format!(" (under {c})"));
    }
    n
}

/// The code of the binaries named in a recording, read from the files (ELF program headers,
/// unwind tables, instruction bytes), each opened once.
#[derive(Default)]
pub struct Binaries {
    elf: HashMap<String, Option<crate::profile::elf::Binary>>,
    starts: HashMap<String, Option<functions::Starts>>,
}

impl Binaries {
    fn elf(&mut self, dso: &str) -> Option<&crate::profile::elf::Binary> {
        self.elf
            .entry(dso.to_string())
            .or_insert_with(|| {
                (dso.starts_with('/'))
                    .then(|| crate::profile::elf::Binary::open(std::path::Path::new(dso)))
                    .flatten()
            })
            .as_ref()
    }
}

impl Code for Binaries {
    fn function_start(&mut self, dso: &str, ip: u64) -> Option<u64> {
        self.starts
            .entry(dso.to_string())
            .or_insert_with(|| {
                (dso.starts_with('/'))
                    .then(|| functions::read(std::path::Path::new(dso)))
                    .flatten()
            })
            .as_ref()?
            .function_of(ip)
    }
    fn file_offset(&mut self, dso: &str, ip: u64) -> Option<u64> {
        self.elf(dso)?.file_offset(ip)
    }
    fn is_spin_loop(&mut self, dso: &str, ip: u64) -> bool {
        self.elf(dso).is_some_and(|b| b.is_spin_loop(ip))
    }
}

/// Read a wait recording's `perf script` text and build its document, and its pprof profile
/// when `b.pprof` (`input` names it in messages).
pub fn analyse_reader<R: BufRead>(r: R, input: &str, max_bytes: u64, b: Build) -> Result<Analysed> {
    let mut events = script::Events::new(r, max_bytes);
    let mut code = Binaries::default();
    let j = join::join_with(&mut events, b.pid, &mut code, b.pprof);
    match events.error.take() {
        Some(script::ReadError::Io(e)) => {
            return Err(Error::bad_input(format!("{input}: reading failed ({e})")))
        }
        Some(script::ReadError::TooLong { max_bytes }) => {
            return Err(Error::bad_input(format!(
                "{input}: longer than {} MiB, the input cap: record a shorter window, or raise \
                 --max-input-mb",
                max_bytes >> 20
            )))
        }
        Some(script::ReadError::LineTooLong { line }) => {
            return Err(Error::bad_input(format!(
                "{input}: line {line} is longer than 1 MiB: this is not `perf script` text"
            )))
        }
        None => {}
    }
    if events.seen.events == 0 && b.kind == "perf-script" {
        return Err(Error::bad_input(format!(
            "{input}: no perf script events in it ({} lines, {} not recognised): export a \
             recording with `perf script -F comm,pid,tid,time,period,event,trace,ip,sym,symoff,dso`",
            events.seen.lines, events.seen.odd_lines
        )));
    }
    if j.samples == 0 && j.switches_seen == 0 && b.kind == "perf-script" {
        return Err(Error::bad_input(format!(
            "{input}: no event of process {} in it: give the server's pid with --pid",
            b.pid
        )));
    }
    Ok(build(j, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_quantiles_and_buckets() {
        let l = lengths(&[5_000, 50_000, 500_000, 5_000_000, 50_000_000, 500_000_000]).unwrap();
        assert_eq!(
            l.buckets.iter().map(|b| b.sleeps).collect::<Vec<_>>(),
            vec![1, 1, 1, 1, 1, 1]
        );
        assert_eq!(l.max_us, 500_000.0);
        assert!(lengths(&[]).is_none());
    }

    #[test]
    fn the_fixture_reads_into_a_document() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/perf/waits/mariadbd-waits-d4-l1.perf");
        let f = std::fs::File::open(p).unwrap();
        let b = Build {
            pid: 19298,
            kind: "perf-script".into(),
            file: None,
            comm: None,
            seconds: None,
            frequency_hz: None,
            off_cpu_method: "sched:sched_switch".into(),
            cost: None,
            server: None,
            pprof: false,
        };
        let d = analyse_reader(std::io::BufReader::new(f), "fixture", u64::MAX, b)
            .unwrap()
            .doc;
        // Two threads' events over 30 ms: latch sleeps that end inside it, at a site.
        assert!(
            d.latch_sleeps > 0 && d.latch_sleep_seconds_per_s > 0.0,
            "{d:#?}"
        );
        assert!(d
            .sites
            .iter()
            .any(|s| s.sleeps > 0 && s.sleep_lengths.is_some()));
        let other = analyse_reader(
            &b"x 1/2 3.0: 1 cpu-clock:\n"[..],
            "t",
            u64::MAX,
            Build {
                pid: 5,
                kind: "perf-script".into(),
                file: None,
                comm: None,
                seconds: None,
                frequency_hz: None,
                off_cpu_method: String::new(),
                cost: None,
                server: None,
                pprof: false,
            },
        );
        assert!(matches!(other, Err(Error::BadInput(_))));
    }
}
