//! `spinscope rt`: flags into an `RtPlan`, the live table or lines, `--json`, `--save`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{ArgAction, Args};

use crate::error::{Error, Result, EXIT_INTERRUPTED, EXIT_OK};
use crate::rt::capture::Source;
use crate::rt::follow::{self, Followed};
use crate::rt::stats::Breakdown;
use crate::rt::{self, render, RtPlan, MIN_INTERVAL_NS};
use crate::server::conn::{resolve, ConnArgs};

const AFTER: &str = "\
Examples:
  sudo spinscope rt                                  # the server on port 3306, 1 s intervals
  sudo spinscope rt --pid 1234                       # that server process: every TCP port it listens on
  sudo spinscope rt -S /run/mysqld/mysqld.sock -u root   # ask the server where it listens
  sudo spinscope rt --port 3306 --port 3307 --interval 100ms --by-command
  sudo spinscope rt --interval 10ms --duration 5s --json > rt.jsonl
  sudo spinscope rt --top 10 --duration 1m --save rt.json
  spinscope rt --read capture.pcap --port 3306       # a file from tcpdump -w

Time to first byte (ttfb): from the request's last packet to the answer's first; time to last
byte (ttlb): to the answer's last packet. Measured from packets on this host (libpcap, kernel
filter on the ports): the server runs no extra statement. Needs root or CAP_NET_RAW. With TLS
the command type is `unknown`; requests are still timed. Of the compressed protocol the command
and statement are read from each request's first frame. Connections
already open are picked up at their next request; one caught logging in is read from its greeting
or login on. With --pid or connection flags (-h, -S, -u, -p, option files) rt finds the server's
TCP ports itself and says how many of its clients use the Unix socket: those are not on the wire
and not timed.";

/// Measure the server's response times from packets on its host: live percentiles per interval.
#[derive(Debug, Args)]
#[command(after_help = AFTER, disable_help_flag = true)]
pub struct RtArgs {
    /// The server's TCP port (repeatable) [default: the ports the server found by --pid or
    /// the connection flags listens on; else 3306].
    #[arg(long = "port", short = 'P', value_name = "PORT")]
    pub ports: Vec<u16>,
    /// Follow this server process: capture every TCP port it listens on (from /proc), count
    /// its clients on the Unix socket.
    #[arg(long, value_name = "PID", conflicts_with_all = ["read", "host", "socket"])]
    pub pid: Option<u32>,
    /// Server host, to ask the server where it listens (it must run on this host).
    #[arg(short = 'h', long)]
    pub host: Option<String>,
    /// Unix socket path of the server, to ask it where it listens.
    #[arg(short = 'S', long)]
    pub socket: Option<PathBuf>,
    /// User name for that question [default: the login name].
    #[arg(short = 'u', long)]
    pub user: Option<String>,
    /// Password (`-pSECRET`, `--password=SECRET`); `-p` alone prompts on the terminal.
    #[arg(short = 'p', long, num_args = 0..=1, require_equals = true, value_name = "PASSWORD")]
    pub password: Option<Option<String>>,
    /// Read connection options from this file only.
    #[arg(long, value_name = "FILE", conflicts_with = "no_defaults")]
    pub defaults_file: Option<PathBuf>,
    /// Read this option file too.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["no_defaults", "defaults_file"])]
    pub defaults_extra_file: Option<PathBuf>,
    /// Read no option file.
    #[arg(long)]
    pub no_defaults: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
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
    let mut followed = follow_server(&a)?;
    let mut default_notes = Vec::new();
    if followed.is_none() && a.ports.is_empty() && a.read.is_none() {
        // No server named: say whose port 3306 is and which other servers this host runs,
        // so a capture of the wrong one (a second instance on 3306) does not pass unseen.
        let (owner, notes) = default_port_owner(3306);
        followed = owner;
        default_notes = notes;
    }
    let ports = capture_ports(&a.ports, followed.as_mut())?;
    if ports.contains(&0) {
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
    if let Some(f) = &followed {
        for l in render::server_lines(f) {
            eprintln!("spinscope: {l}");
        }
    }
    for l in default_notes {
        eprintln!("spinscope: {l}");
    }
    let plan = RtPlan {
        source,
        ports: ports.clone(),
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
    let mut report = rt::run(&plan, &stop, &mut |r| {
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
    report.total.server = followed.clone();
    report.server = followed;
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
        if let Some(f) = &report.server {
            if let Some(n) = f.unix_socket_clients.filter(|&n| n > 0) {
                println!(
                    "{}",
                    render::unix_clients_line(n, f.unix_clients_from.as_deref())
                );
            }
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
                ports,
                list.join(", ")
            );
        }
    }
    eprintln!(
        "spinscope: {} from {} (filter '{}'): {} segments, {} connections ({} logins seen, {} encrypted, {} compressed, {} joined unreadable), {} resyncs",
        if a.read.is_some() { "read" } else { "captured" },
        report.source,
        report.filter,
        t.segments,
        t.connections_seen,
        t.handshakes,
        t.encrypted_connections,
        t.compressed_connections,
        t.unreadable_connections,
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

/// Connection flags given (not `--port` alone, which is the capture's filter).
fn conn_given(a: &RtArgs) -> bool {
    a.host.is_some()
        || a.socket.is_some()
        || a.user.is_some()
        || a.password.is_some()
        || a.defaults_file.is_some()
        || a.defaults_extra_file.is_some()
}

/// The server `--pid` or the connection flags name (None: neither given).
fn follow_server(a: &RtArgs) -> Result<Option<Followed>> {
    if let Some(pid) = a.pid {
        return follow::of_pid(pid).map(Some);
    }
    if !conn_given(a) {
        return Ok(None);
    }
    if a.read.is_some() {
        return Err(Error::bad_input(
            "--read with connection flags: a file is read as it was captured; give --port for its server's port instead",
        ));
    }
    let conn = ConnArgs {
        host: a.host.clone(),
        port: a.ports.first().copied(),
        socket: a.socket.clone(),
        user: a.user.clone(),
        password: a.password.clone(),
        defaults_file: a.defaults_file.clone(),
        defaults_extra_file: a.defaults_extra_file.clone(),
        no_defaults: a.no_defaults,
        connect_timeout: 10,
        query_timeout: 60,
        ..ConnArgs::default()
    };
    let t = resolve(&conn)?;
    crate::server::rt_follow::follow_target(&t).map(Some)
}

/// Command names of MySQL-family servers.
const SERVER_COMMS: [&str; 2] = ["mariadbd", "mysqld"];

/// The server listening on the default `port` (followed as `--pid` would be) and what to say
/// about it: nothing listens there, or other servers run beside it (each with its ports,
/// sockets and data directory, as `profile --process` lists them).
fn default_port_owner(port: u16) -> (Option<Followed>, Vec<String>) {
    let owner = follow::owner(Some(port), None);
    let mut followed = owner.and_then(|pid| follow::of_pid(pid).ok());
    if let Some(f) = followed.as_mut() {
        f.found_by = format!("the default port {port}");
        // Only the default port: the owner's other ports (X protocol, an extra port) were not
        // asked for.
        f.tcp_ports = vec![port];
    }
    let servers = server_pids();
    let others: Vec<u32> = servers.into_iter().filter(|&p| Some(p) != owner).collect();
    let mut notes = Vec::new();
    if owner.is_none() {
        notes.push(if follow::listens(port) {
            format!("TCP port {port}: its process is not readable here (another user's; run as root)")
        } else {
            format!("nothing listens on TCP port {port} here: capturing it anyway (a server may start on it)")
        });
    }
    if !others.is_empty() {
        notes.push(format!(
            "{} other MySQL-family server{} on this host, not captured; give --pid PID or connection flags (-S, -h/-P) for one of them:",
            others.len(),
            if others.len() == 1 { "" } else { "s" }
        ));
        for p in others {
            notes.push(format!(
                "  {}",
                crate::profile::instances::describe(p).line()
            ));
        }
    }
    (followed, notes)
}

/// The pids of running mariadbd and mysqld processes, in order.
fn server_pids() -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<u32> = rd
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| follow::process_name(p).is_some_and(|n| SERVER_COMMS.contains(&n.as_str())))
        .collect();
    v.sort_unstable();
    v
}

/// The ports to capture: `--port` when given (noted in `followed` when the server listens
/// elsewhere), else the followed server's, else 3306.
pub fn capture_ports(given: &[u16], followed: Option<&mut Followed>) -> Result<Vec<u16>> {
    let Some(f) = followed else {
        return Ok(if given.is_empty() {
            vec![3306]
        } else {
            given.to_vec()
        });
    };
    if !given.is_empty() {
        if !f.tcp_ports.is_empty() && given.iter().any(|p| !f.tcp_ports.contains(p)) {
            f.ports_given_differ = given.to_vec();
        }
        return Ok(given.to_vec());
    }
    if f.tcp_ports.is_empty() {
        let clients = f
            .unix_socket_clients
            .map_or(String::new(), |n| format!(" ({n} connected)"));
        let sockets = if f.unix_sockets.is_empty() {
            "its Unix socket".to_string()
        } else {
            f.unix_sockets.join(", ")
        };
        return Err(Error::runtime(format!(
            "{}: the server listens on no TCP port (skip_networking?): its clients use {sockets}{clients}, which is not on the wire; rt times TCP clients only",
            f.found_by
        )));
    }
    Ok(f.tcp_ports.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_from_the_server_unless_given() {
        assert_eq!(capture_ports(&[], None).unwrap(), vec![3306]);
        let mut f = Followed {
            found_by: "--pid 9".into(),
            tcp_ports: vec![3307, 33062],
            ..Followed::default()
        };
        assert_eq!(capture_ports(&[], Some(&mut f)).unwrap(), vec![3307, 33062]);
        assert!(f.ports_given_differ.is_empty());
        assert_eq!(capture_ports(&[3306], Some(&mut f)).unwrap(), vec![3306]);
        assert_eq!(f.ports_given_differ, vec![3306]);
        let mut none = Followed {
            found_by: "--pid 9".into(),
            unix_sockets: vec!["/s.sock".into()],
            unix_socket_clients: Some(4),
            ..Followed::default()
        };
        let e = capture_ports(&[], Some(&mut none)).unwrap_err().to_string();
        assert!(
            e.contains("no TCP port") && e.contains("/s.sock (4 connected)"),
            "{e}"
        );
    }

    #[test]
    fn the_default_port_names_its_owner_or_says_nothing_listens() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (f, notes) = default_port_owner(port);
        let f = f.expect("this process listens there");
        assert_eq!(f.pid, Some(std::process::id()));
        assert_eq!(f.tcp_ports, vec![port]);
        assert_eq!(f.found_by, format!("the default port {port}"));
        assert!(
            !notes.iter().any(|n| n.contains("nothing listens")),
            "{notes:?}"
        );
        // Each other server is listed on a line of its own under the count.
        if let Some(head) = notes.first() {
            assert!(head.contains("other MySQL-family server"), "{notes:?}");
            assert!(
                notes[1..].iter().all(|n| n.starts_with("  pid ")),
                "{notes:?}"
            );
        }
        drop(l);
        let (f, notes) = default_port_owner(port);
        assert!(f.is_none());
        assert!(
            notes[0].starts_with(&format!("nothing listens on TCP port {port} here")),
            "{notes:?}"
        );
    }
}
