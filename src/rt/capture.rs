//! Packet capture for `spinscope rt` through libpcap (the `pcap` crate): the interface that
//! carries the server's port, a kernel-side BPF filter so only that port's TCP segments reach
//! user space, the kernel's drop counters, and the decoding of link/IP/TCP headers (etherparse)
//! into [`Segment`]s. Also reads pcap files (`--read`, the tests' fixtures).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
use pcap::{Activated, Capture, Linktype, Precision};

use super::proto::{ConnKey, Dir, Segment};
use super::stats::CaptureCounts;
use crate::error::{Error, Result};

/// Where packets come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A live interface (`None`: the one that carries the first port).
    Live {
        interface: Option<String>,
        snaplen: i32,
        buffer_bytes: i32,
    },
    /// A pcap file.
    File(PathBuf),
}

/// An open capture.
pub struct Packets {
    cap: Capture<dyn Activated>,
    linktype: Linktype,
    nanos: bool,
    ports: Vec<u16>,
    live: bool,
    /// Non-blocking live capture: its descriptor, polled up to `timeout_ms` when idle.
    fd: Option<std::os::fd::RawFd>,
    timeout_ms: i32,
    /// The interface (or file) read.
    pub name: String,
    /// Packets read whole so far.
    pub packets: u64,
}

/// One decoded segment with owned bytes.
#[derive(Clone, Debug)]
pub struct OwnedSegment {
    pub ts_ns: u64,
    pub key: ConnKey,
    pub dir: Dir,
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: Vec<u8>,
    pub wire_len: u32,
}

impl OwnedSegment {
    pub fn as_segment(&self) -> Segment<'_> {
        Segment {
            ts_ns: self.ts_ns,
            key: self.key,
            dir: self.dir,
            seq: self.seq,
            syn: self.syn,
            fin: self.fin,
            rst: self.rst,
            payload: &self.payload,
            wire_len: self.wire_len,
        }
    }
}

/// What one read gave.
pub enum Next<'a> {
    Segment(Segment<'a>),
    /// A packet that is not a TCP segment of the ports (or could not be decoded).
    Other,
    /// Nothing within the read timeout (live).
    Timeout,
    /// End of the file.
    End,
    /// A file that ends early or is damaged (tcpdump killed mid-write): libpcap's words. The
    /// packets before it were read whole.
    Truncated(String),
}

/// Link types [`decode`] reads.
pub fn decodable(l: Linktype) -> bool {
    matches!(
        l,
        Linktype::ETHERNET
            | Linktype::LINUX_SLL
            | Linktype::LINUX_SLL2
            | Linktype::NULL
            | Linktype::RAW
            | Linktype(12)
            | Linktype(14)
            | Linktype::IPV4
            | Linktype(229)
    )
}

/// The BPF filter for the ports: `tcp port A or tcp port B ...`, without the segments of
/// the `exclude` client ports.
pub fn filter_for(ports: &[u16], exclude: &[u16]) -> String {
    let any = ports
        .iter()
        .map(|p| format!("tcp port {p}"))
        .collect::<Vec<_>>()
        .join(" or ");
    // Pure ACKs (no payload, no SYN/FIN/RST) carry nothing the state machine reads: the
    // kernel drops them (IPv4; IPv6 segments all pass).
    let data = "(tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst) != 0 or ip6 or \
                (ip[2:2] - ((ip[0] & 0xf) << 2) - ((tcp[12] & 0xf0) >> 2)) != 0)";
    let not = exclude
        .iter()
        .map(|p| format!(" and not tcp port {p}"))
        .collect::<String>();
    format!("({any}) and {data}{not}")
}

impl Packets {
    /// Open the source with the kernel filter for `ports`.
    pub fn open(
        source: &Source,
        ports: &[u16],
        exclude: &[u16],
        timeout_ms: i32,
    ) -> Result<Packets> {
        let mut fd = None;
        let (mut cap, name, live, nanos): (Capture<dyn Activated>, String, bool, bool) =
            match source {
                Source::File(path) => {
                    let c = Capture::from_file_with_precision(path, Precision::Nano).map_err(
                        |e| {
                            Error::bad_input(format!(
                                "--read {}: not a readable pcap file ({e}); give a file written by tcpdump -w",
                                path.display()
                            ))
                        },
                    )?;
                    (c.into(), path.display().to_string(), false, true)
                }
                Source::Live {
                    interface,
                    snaplen,
                    buffer_bytes,
                } => {
                    let name = match interface {
                        Some(i) => i.clone(),
                        None => default_interface(ports[0])?,
                    };
                    check_interface(&name)?;
                    let open = |nano: bool| {
                        let mut c = Capture::from_device(name.as_str())?
                            .snaplen(*snaplen)
                            .buffer_size(*buffer_bytes)
                            .timeout(timeout_ms.max(1))
                            .promisc(false);
                        if nano {
                            c = c.precision(Precision::Nano);
                        }
                        c.open()
                    };
                    let (c, nanos) = match open(true) {
                        Ok(c) => (c, true),
                        Err(_) => (open(false).map_err(|e| open_error(&name, e))?, false),
                    };
                    // Non-blocking with our own poll: libpcap's read timeout does not expire
                    // while no packet arrives, and intervals must close on time.
                    let c = c.setnonblock().map_err(|e| open_error(&name, e))?;
                    let raw = std::os::fd::AsRawFd::as_raw_fd(&c);
                    if name == "lo" {
                        ignore_outgoing(raw);
                    }
                    fd = Some(raw);
                    (c.into(), name, true, nanos)
                }
            };
        let linktype = cap.get_datalink();
        if !live && !decodable(linktype) {
            // A capture of another link layer is a wrong input, not a failure (exit 2).
            return Err(Error::bad_input(format!(
                "--read {name}: link type {} ({}) is not one rt decodes; give a capture of \
                 Ethernet, Linux cooked (tcpdump -i any), loopback or raw IP",
                linktype.0,
                linktype.get_name().unwrap_or_else(|_| "unknown".into())
            )));
        }
        cap.filter(&filter_for(ports, exclude), true).map_err(|e| {
            let why = format!("installing the capture filter for {ports:?}: {e}");
            if live {
                Error::runtime(why)
            } else {
                Error::bad_input(format!(
                    "--read {name}: {why}; give a pcap file of TCP traffic"
                ))
            }
        })?;
        Ok(Packets {
            cap,
            linktype,
            nanos,
            ports: ports.to_vec(),
            live,
            fd,
            timeout_ms: timeout_ms.max(1),
            name,
            packets: 0,
        })
    }

    /// Read the next packet.
    pub fn next_packet(&mut self) -> Result<Next<'_>> {
        let p = match self.cap.next_packet() {
            Ok(p) => p,
            Err(pcap::Error::TimeoutExpired) => {
                if let Some(fd) = self.fd {
                    let mut pfd = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: poll(2) on one pollfd we own, for a bounded time.
                    unsafe { libc::poll(&mut pfd, 1, self.timeout_ms) };
                }
                return Ok(Next::Timeout);
            }
            Err(pcap::Error::NoMorePackets) => return Ok(Next::End),
            // A file's last record cut short is how a capture usually ends: what came before
            // stands.
            Err(e) if !self.live => return Ok(Next::Truncated(e.to_string())),
            Err(e) => {
                return Err(Error::runtime(format!(
                    "reading packets from {}: {e}",
                    self.name
                )))
            }
        };
        self.packets += 1;
        let sub = p.header.ts.tv_usec as u64;
        let ts_ns =
            p.header.ts.tv_sec as u64 * 1_000_000_000 + if self.nanos { sub } else { sub * 1000 };
        let cut = p.header.len.saturating_sub(p.header.caplen);
        Ok(
            match decode(self.linktype, p.data, cut, ts_ns, &self.ports) {
                Some(s) => Next::Segment(s),
                None => Next::Other,
            },
        )
    }

    /// The kernel's counters since the capture opened (zeros for a file).
    pub fn counts(&mut self) -> CaptureCounts {
        if !self.live {
            return CaptureCounts::default();
        }
        match self.cap.stats() {
            Ok(s) => CaptureCounts {
                received: s.received as u64,
                dropped: s.dropped as u64,
                if_dropped: s.if_dropped as u64,
            },
            Err(_) => CaptureCounts::default(),
        }
    }
}

/// On `lo` the kernel hands a packet socket every segment twice, once as sent and once as
/// received; libpcap keeps only the received copy, but the kernel has already run the filter
/// on the sent one and copied it into the ring. `PACKET_IGNORE_OUTGOING` (Linux 4.20+) makes
/// the kernel skip the sent copies, so the capture does half the work and its received count
/// is one per segment. Only for `lo`: elsewhere the sent copies are the server's answers. An
/// older kernel refuses the option and libpcap's own dedup stays in charge: nothing is lost.
fn ignore_outgoing(fd: std::os::fd::RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a descriptor libpcap owns and keeps open, with a c_int value of
    // the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}

/// Whole records of a pcap file before its end or the first damaged one, any port (0 when
/// the file does not open).
pub fn whole_records(path: &Path) -> u64 {
    let Ok(mut cap) = Capture::from_file(path) else {
        return 0;
    };
    let mut n = 0;
    while cap.next_packet().is_ok() {
        n += 1;
    }
    n
}

fn open_error(name: &str, e: pcap::Error) -> Error {
    let msg = e.to_string();
    if msg.contains("ermission") || msg.contains("not permitted") {
        Error::runtime(format!(
            "capturing on {name}: {msg}; run as root or give the binary CAP_NET_RAW (sudo setcap cap_net_raw,cap_net_admin=eip $(command -v spinscope))"
        ))
    } else {
        Error::runtime(format!("capturing on {name}: {msg}"))
    }
}

/// The TCP ports of a pcap file's segments, the most frequent first (up to `max`), read with
/// no filter: what `--read` says when no segment matched `--port`.
pub fn tcp_ports_in_file(path: &Path, max: usize) -> Vec<(u16, u64)> {
    let Ok(mut cap) = Capture::from_file(path) else {
        return Vec::new();
    };
    let linktype = cap.get_datalink();
    let mut counts: std::collections::HashMap<u16, u64> = std::collections::HashMap::new();
    while let Ok(p) = cap.next_packet() {
        // Decoding with both ports "wanted" yields the segment whatever its ports are.
        let Some(t) = tcp_ports(linktype, p.data) else {
            continue;
        };
        *counts.entry(t.0).or_default() += 1;
        if t.1 != t.0 {
            *counts.entry(t.1).or_default() += 1;
        }
    }
    let mut v: Vec<(u16, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(max);
    v
}

fn tcp_ports(linktype: Linktype, data: &[u8]) -> Option<(u16, u16)> {
    let s = decode(linktype, data, 0, 0, &[])?;
    Some((s.key.client.port(), s.key.server.port()))
}

/// Bad input when the interface does not exist.
fn check_interface(name: &str) -> Result<()> {
    if name == "any" || Path::new("/sys/class/net").join(name).exists() {
        return Ok(());
    }
    if !Path::new("/sys/class/net").exists() {
        return Ok(());
    }
    let known: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    Err(Error::bad_input(format!(
        "--interface {name}: no such interface; choose one of: any, {}",
        known.join(", ")
    )))
}

/// The interface that carries `port`: from the listening socket's address in /proc/net/tcp
/// and tcp6 (127.0.0.1 or ::1: `lo`; a wildcard: `any`; another address: the interface that
/// holds it).
pub fn default_interface(port: u16) -> Result<String> {
    let mut addrs = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(t) = std::fs::read_to_string(f) {
            addrs.extend(listening_addrs(&t, port));
        }
    }
    if addrs.is_empty() {
        return Err(Error::bad_input(format!(
            "--port {port}: no socket listens on it on this host; give the server's --port, or --interface to capture anyway"
        )));
    }
    if addrs.iter().all(|a| a.is_loopback()) {
        return Ok("lo".to_string());
    }
    if addrs.iter().any(|a| a.is_unspecified()) || addrs.len() > 1 {
        return Ok("any".to_string());
    }
    let devs = pcap::Device::list().unwrap_or_default();
    Ok(devs
        .into_iter()
        .find(|d| d.addresses.iter().any(|x| x.addr == addrs[0]))
        .map(|d| d.name)
        .unwrap_or_else(|| "any".to_string()))
}

/// Local addresses of LISTEN sockets on `port` in a /proc/net/tcp{,6} table.
pub fn listening_addrs(table: &str, port: u16) -> Vec<IpAddr> {
    let mut v = Vec::new();
    for l in table.lines().skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 || f[3] != "0A" {
            continue;
        }
        let Some((a, p)) = f[1].split_once(':') else {
            continue;
        };
        if u16::from_str_radix(p, 16).ok() != Some(port) {
            continue;
        }
        if let Some(ip) = proc_addr(a) {
            v.push(ip);
        }
    }
    v
}

/// A /proc/net/tcp address: 32-bit words in host order, hex.
fn proc_addr(h: &str) -> Option<IpAddr> {
    let words: Option<Vec<u32>> = (0..h.len() / 8)
        .map(|i| u32::from_str_radix(h.get(i * 8..i * 8 + 8)?, 16).ok())
        .collect();
    let words = words?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    match bytes.len() {
        4 => Some(IpAddr::from([bytes[0], bytes[1], bytes[2], bytes[3]])),
        16 => {
            let a: [u8; 16] = bytes.try_into().ok()?;
            let v6 = std::net::Ipv6Addr::from(a);
            Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4))
        }
        _ => None,
    }
}

/// Decode one captured frame into a TCP segment of one of `ports` (`cut`: bytes the snap
/// length removed).
pub fn decode<'a>(
    linktype: Linktype,
    data: &'a [u8],
    cut: u32,
    ts_ns: u64,
    ports: &[u16],
) -> Option<Segment<'a>> {
    let pkt = match linktype {
        Linktype::ETHERNET => LaxSlicedPacket::from_ethernet(data).ok()?,
        Linktype::LINUX_SLL => LaxSlicedPacket::from_ip(data.get(16..)?).ok()?,
        Linktype::LINUX_SLL2 => LaxSlicedPacket::from_ip(data.get(20..)?).ok()?,
        Linktype::NULL => LaxSlicedPacket::from_ip(data.get(4..)?).ok()?,
        Linktype::RAW | Linktype(12) | Linktype(14) | Linktype::IPV4 | Linktype(229) => {
            LaxSlicedPacket::from_ip(data).ok()?
        }
        _ => return None,
    };
    let (src, dst) = match pkt.net.as_ref()? {
        LaxNetSlice::Ipv4(v4) => (
            IpAddr::V4(v4.header().source_addr()),
            IpAddr::V4(v4.header().destination_addr()),
        ),
        LaxNetSlice::Ipv6(v6) => (
            IpAddr::V6(v6.header().source_addr()),
            IpAddr::V6(v6.header().destination_addr()),
        ),
    };
    let Some(TransportSlice::Tcp(tcp)) = pkt.transport.as_ref() else {
        return None;
    };
    let (sp, dp) = (tcp.source_port(), tcp.destination_port());
    // No ports: any segment, as sent to the server (`tcp_ports_in_file`).
    let dir = if ports.is_empty() || ports.contains(&dp) {
        Dir::ToServer
    } else if ports.contains(&sp) {
        Dir::ToClient
    } else {
        return None;
    };
    let (s, d) = (SocketAddr::new(src, sp), SocketAddr::new(dst, dp));
    let key = match dir {
        Dir::ToServer => ConnKey {
            client: s,
            server: d,
        },
        Dir::ToClient => ConnKey {
            client: d,
            server: s,
        },
    };
    let payload = tcp.payload();
    Some(Segment {
        ts_ns,
        key,
        dir,
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload,
        wire_len: payload.len() as u32 + cut,
    })
}
