//! `spinscope rt`: flags into an `RtPlan`, the live table or lines, `--json`, `--save`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::rt::capture::Source;
use crate::rt::stats::Breakdown;
use crate::rt::{self, render, RtPlan, MIN_INTERVAL_NS};

const AFTER: &str = "\
Examples:
  sudo spinscope rt                                  # the server on port 3306, 1 s intervals
  sudo spinscope rt --port 3306 --port 3307 --interval 100ms --by-command
  sudo spinscope rt --interval 10ms --duration 5s --json > rt.jsonl
  sudo spinscope rt --top 10 --duration 1m --save rt.json
  spinscope rt --read capture.pcap --port 3306       # a file from tcpdump -w

Time to first byte (ttfb): from the request's last packet to the answer's first; time to last
byte (ttlb): to the answer's last packet. Measured from packets on this host (libpcap, kernel
filter on the ports): the server runs no extra statement. Needs root or CAP_NET_RAW. With TLS or
the compressed protocol the command type is `unknown`; requests are still timed. Connections
already open are picked up at their next request.";

/// Measure the server's response times from packets on its host: live percentiles per interval.
#[derive(Debug, Args)]
#[command(after_help = AFTER)]
pub struct RtArgs {
    /// The server's TCP port (repeatable).
    #[arg(long = "port", short = 'P', value_name = "PORT", default_values_t = [3306u16])]
    pub ports: Vec<u16>,
    /// Interface to capture on [default: the one the port's listening socket is bound to;
    /// `lo` for 127.0.0.1, `any` for a wildcard address].
    #[arg(long, short = 'i', value_name = "IF")]
    pub interface: Option<String>,
    /// Length of each interval (10ms .. 1h; `250ms`, `1s`, `2m`, or seconds).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = super::units::duration_text)]
    pub interval: String,
    /// Stop after this long [default: until Ctrl-C].
    #[arg(long, value_name = "DURATION", value_parser = super::units::duration_text)]
    pub duration: Option<String>,
    /// A row per command type (COM_QUERY, COM_STMT_EXECUTE, ...).
    #[arg(long)]
    pub by_command: bool,
    /// The N statement fingerprints (unencrypted COM_QUERY) that cost the most time.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub top: usize,
    /// One `spinscope.rt/1` JSON document per interval on stdout, and the total last.
    #[arg(long)]
    pub json: bool,
    /// Write the whole run (every interval and the total) as one JSON document.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Read packets from a pcap file instead of an interface.
    #[arg(long, value_name = "FILE")]
    pub read: Option<PathBuf>,
    /// Bytes captured per packet (smaller: cheaper; long answers are then timed by direction).
    #[arg(long, default_value_t = 65535, value_name = "BYTES")]
    pub snaplen: i32,
    /// Kernel capture buffer, MiB.
    #[arg(long, default_value_t = 32, value_name = "MIB")]
    pub buffer_mib: i32,
}

/// `10ms`, `1.5s`, `2m`, `1h`, `250us`, or plain seconds, as nanoseconds.
pub fn parse_duration_ns(flag: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult = match unit.trim() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" => 1e3,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if mult.is_finite() && v.is_finite() && v >= 0.0 => Ok((v * mult) as u64),
        _ => Err(Error::bad_input(format!(
            "{flag} {s:?}: not a duration; write e.g. 10ms, 1s, 2m"
        ))),
    }
}

pub fn run(a: RtArgs) -> Result<i32> {
    let interval_ns = parse_duration_ns("--interval", &a.interval)?;
    if !(MIN_INTERVAL_NS..=3_600_000_000_000).contains(&interval_ns) {
        return Err(Error::bad_input(format!(
            "--interval {}: out of range; give 10ms to 1h",
            a.interval
        )));
    }
    let duration_ns = match &a.duration {
        Some(d) => match parse_duration_ns("--duration", d)? {
            0 => return Err(Error::bad_input("--duration 0: give a positive duration")),
            v => Some(v),
        },
        None => None,
    };
    if a.ports.contains(&0) {
        return Err(Error::bad_input("--port 0: give the server's TCP port"));
    }
    if !(64..=262_144).contains(&a.snaplen) {
        return Err(Error::bad_input(format!(
            "--snaplen {}: give 64 to 262144 bytes",
            a.snaplen
        )));
    }
    if !(1..=2048).contains(&a.buffer_mib) {
        return Err(Error::bad_input(format!(
            "--buffer-mib {}: give 1 to 2048",
            a.buffer_mib
        )));
    }
    if let Some(p) = &a.save {
        crate::files::check_output(p, "--save")?;
    }
    if let Some(f) = &a.read {
        // A FIFO or device is refused at once (reading one could hang); pcap reopens the path.
        drop(crate::files::open_input(f, "--read")?);
        if let Some(p) = &a.save {
            crate::files::refuse_same(&[("--read", f)], &[("--save", p)])?;
        }
    }
    let source = match &a.read {
        Some(f) => Source::File(f.clone()),
        None => Source::Live {
            interface: a.interface.clone(),
            snaplen: a.snaplen,
            buffer_bytes: a.buffer_mib * 1024 * 1024,
        },
    };
    let plan = RtPlan {
        source,
        ports: a.ports.clone(),
        interval_ns,
        duration_ns,
        breakdown: Breakdown {
            by_command: a.by_command,
            top: a.top,
        },
        exclude_client_ports: Vec::new(),
        keep_intervals: true,
        ttlb_bounds_ns: Vec::new(),
    };
    let stop = crate::interrupt::install()?;
    let tty = std::io::stdout().is_terminal() && !a.json;
    let mut drawn = 0usize;
    let json = a.json;
    let mut out = std::io::stdout();
    let report = rt::run(&plan, &stop, &mut |r| {
        if json {
            let _ = writeln!(out, "{}", serde_json::to_string(r).unwrap_or_default());
        } else if tty {
            let lines = render::block(r);
            if drawn > 0 {
                let _ = write!(out, "\x1b[{drawn}A\x1b[J");
            }
            for l in &lines {
                let _ = writeln!(out, "{l}");
            }
            drawn = lines.len();
        } else {
            let _ = writeln!(out, "{}", render::line(r));
        }
        let _ = out.flush();
    })?;
    if let (Some(f), Some(cut)) = (&a.read, &report.truncated) {
        if cut.after_packets == 0 && crate::rt::capture::whole_records(f) == 0 {
            return Err(Error::bad_input(format!(
                "--read {}: no whole packet before the file ends or breaks ({}); give a pcap file tcpdump wrote",
                f.display(),
                cut.why
            )));
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string(&report.total).unwrap_or_default()
        );
    } else {
        println!("total over {:.1}s:", report.total.interval_s);
        for l in render::block(&report.total) {
            println!("{l}");
        }
    }
    if let Some(p) = &a.save {
        let doc = serde_json::to_vec_pretty(&report)
            .map_err(|e| Error::runtime(format!("encoding the run: {e}")))?;
        crate::files::write_atomic(p, &doc, "--save", true)?;
        eprintln!("spinscope: rt run saved to {}", p.display());
    }
    let t = &report.tracker;
    if let (Some(f), 0) = (&a.read, t.segments) {
        let seen = crate::rt::capture::tcp_ports_in_file(f, 5);
        if let Some((top, _)) = seen.first() {
            let list: Vec<String> = seen.iter().map(|(p, n)| format!("{p} ({n})")).collect();
            eprintln!(
                "spinscope: {}: no TCP segment of port {:?}; its TCP ports (segments) are {}: give --port {top} if that is the server",
                f.display(),
                a.ports,
                list.join(", ")
            );
        }
    }
    eprintln!(
        "spinscope: {} from {} (filter '{}'): {} segments, {} connections ({} logins seen, {} encrypted), {} resyncs",
        if a.read.is_some() { "read" } else { "captured" },
        report.source,
        report.filter,
        t.segments,
        t.connections_seen,
        t.handshakes,
        t.encrypted_connections,
        t.resyncs
    );
    if let (Some(f), Some(cut)) = (&a.read, &report.truncated) {
        eprintln!(
            "spinscope: warning: --read {}: the file ends early or breaks after {} whole packets ({}); \
             reported every complete request before it",
            f.display(),
            crate::rt::capture::whole_records(f),
            cut.why
        );
    }
    Ok(if crate::interrupt::stopped() && duration_ns.is_some() {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}
