//! The MySQL classic-protocol state machine of `spinscope rt`: TCP segments of a server's
//! connections in, request/response exchanges out. Pure: no clock of its own (the segments'
//! capture timestamps, and a `now_ns` the caller passes to [`Tracker::flush`]), no I/O.
//!
//! A request is the run of client bytes up to the server's first answering byte; its response
//! is the run of server bytes up to the protocol's end of the answer (OK, ERR, the final EOF or
//! OK of a result set) or, when that cannot be read (TLS, the compressed protocol, a capture
//! that lost bytes), up to the client's next request. Time to first byte (TTFB) runs from the
//! last request segment to the first response segment, time to last byte (TTLB) to the last.
//! The handshake and authentication are not requests; a connection already open when the
//! capture starts is picked up at its next request (the first client run after a server run).
//! Of the compressed protocol the command, the statement and an ERR answer are read from each
//! run's first frame ([`super::compressed`]); its answers end as TLS ones do.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::SocketAddr;

use super::{compressed, sync};
use crate::proto::answer::{Answer, Outcome, Progress};
use crate::proto::packet::{Flow, Packet, PacketReader, MAX_PAYLOAD};
use crate::proto::{caps, com};

/// One TCP connection: the client's and the server's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// Which way a segment travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    ToServer,
    ToClient,
}

/// One captured TCP segment of a server connection.
#[derive(Clone, Debug)]
pub struct Segment<'a> {
    /// Capture timestamp, nanoseconds (any epoch; only differences are used).
    pub ts_ns: u64,
    pub key: ConnKey,
    pub dir: Dir,
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// The captured payload bytes; shorter than `wire_len` when the snap length cut it.
    pub payload: &'a [u8],
    /// The payload's length on the wire.
    pub wire_len: u32,
}

/// The command of a request: its first payload byte when readable, else unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    Known(u8),
    /// Encrypted (TLS), compressed, or not readable from the capture.
    Unknown,
}

pub const COM_QUIT: u8 = com::QUIT;
pub const COM_QUERY: u8 = com::QUERY;
pub const COM_FIELD_LIST: u8 = com::FIELD_LIST;
pub const COM_STATISTICS: u8 = com::STATISTICS;
pub const COM_STMT_PREPARE: u8 = com::STMT_PREPARE;
pub const COM_STMT_EXECUTE: u8 = com::STMT_EXECUTE;
pub const COM_STMT_SEND_LONG_DATA: u8 = com::STMT_SEND_LONG_DATA;
pub const COM_STMT_CLOSE: u8 = com::STMT_CLOSE;
pub const COM_STMT_FETCH: u8 = com::STMT_FETCH;
/// MariaDB's bulk execute.
pub const COM_STMT_BULK_EXECUTE: u8 = com::STMT_BULK_EXECUTE;

const NAMES: [&str; 32] = [
    "COM_SLEEP",
    "COM_QUIT",
    "COM_INIT_DB",
    "COM_QUERY",
    "COM_FIELD_LIST",
    "COM_CREATE_DB",
    "COM_DROP_DB",
    "COM_REFRESH",
    "COM_SHUTDOWN",
    "COM_STATISTICS",
    "COM_PROCESS_INFO",
    "COM_CONNECT",
    "COM_PROCESS_KILL",
    "COM_DEBUG",
    "COM_PING",
    "COM_TIME",
    "COM_DELAYED_INSERT",
    "COM_CHANGE_USER",
    "COM_BINLOG_DUMP",
    "COM_TABLE_DUMP",
    "COM_CONNECT_OUT",
    "COM_REGISTER_SLAVE",
    "COM_STMT_PREPARE",
    "COM_STMT_EXECUTE",
    "COM_STMT_SEND_LONG_DATA",
    "COM_STMT_CLOSE",
    "COM_STMT_RESET",
    "COM_SET_OPTION",
    "COM_STMT_FETCH",
    "COM_DAEMON",
    "COM_BINLOG_DUMP_GTID",
    "COM_RESET_CONNECTION",
];

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Known(b) if (b as usize) < NAMES.len() => NAMES[b as usize],
            Command::Known(COM_STMT_BULK_EXECUTE) => "COM_STMT_BULK_EXECUTE",
            Command::Known(_) => "COM_OTHER",
            Command::Unknown => "unknown",
        }
    }
    fn valid_byte(b: u8) -> bool {
        (b as usize) < NAMES.len() || b == COM_STMT_BULK_EXECUTE
    }
    /// Commands the server never answers.
    fn no_response(b: u8) -> bool {
        matches!(b, COM_QUIT | COM_STMT_SEND_LONG_DATA | COM_STMT_CLOSE)
    }
}

/// One answered request.
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub key: ConnKey,
    pub command: Command,
    /// Timestamp of the request's last segment.
    pub request_end_ns: u64,
    pub ttfb_ns: u64,
    pub ttlb_ns: u64,
    pub response_bytes: u64,
    /// The answer was an ERR packet (only known when readable).
    pub error: bool,
    /// The start of a COM_QUERY's statement text (up to [`QUERY_TEXT_CAP`] bytes).
    pub query: Option<Vec<u8>>,
}

/// What the tracker reports.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Exchange(Exchange),
    /// A command the server does not answer (COM_STMT_CLOSE, COM_QUIT, ...).
    NoResponse(Command),
    /// The connection closed (or was reset) with a request still unanswered.
    Abandoned(Command),
}

/// Statement text kept per COM_QUERY for fingerprints.
pub const QUERY_TEXT_CAP: usize = 1024;
/// Connections tracked at most; beyond, new ones are ignored (counted in `Counters::overflow`).
pub const MAX_CONNECTIONS: usize = 200_000;
/// A connection without a segment for this long is forgotten.
pub const EVICT_NS: u64 = 600_000_000_000;

const CLIENT_COMPRESS: u32 = caps::COMPRESS;
const CLIENT_SSL: u32 = caps::SSL;
const CLIENT_DEPRECATE_EOF: u32 = caps::DEPRECATE_EOF;
/// Bytes of a server packet kept: enough for an OK's status, an ERR's code, a column count.
const SERVER_KEEP: usize = 64;

/// Totals over the tracker's life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub segments: u64,
    pub connections_seen: u64,
    pub handshakes: u64,
    pub encrypted_connections: u64,
    pub compressed_connections: u64,
    /// Connections joined mid-stream whose requests did not read as commands (cut, or a
    /// compressed frame not captured whole): timed by direction, with the command unknown,
    /// until a request reads as one (plain packets or whole compressed frames).
    pub unreadable_connections: u64,
    /// Times a connection's byte stream had a hole (bytes not captured) or could not be read.
    pub resyncs: u64,
    pub overflow: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// Seen from its SYN: greeting, login, maybe TLS.
    Handshake,
    /// TLS negotiated at login: TLS records until the first application-data exchange (the
    /// encrypted login) is over.
    TlsHandshake { auth_run: bool },
    /// Readable MySQL packets.
    Plain,
    /// Encrypted or compressed: boundaries from direction changes only (of a compressed
    /// connection, the command and statement are read from each request's first frame, and
    /// an ERR from the answer's).
    Opaque,
    /// Joined mid-stream: waiting for the first client run after a server run.
    Unsynced,
}

/// One direction of a connection: its packets (read by [`crate::proto::packet`]), until the
/// capture lost bytes of it or its framing stopped making sense.
#[derive(Clone, Debug)]
struct Side {
    packets: PacketReader,
    lost: bool,
}

impl Side {
    fn new(keep: usize) -> Side {
        Side {
            packets: PacketReader::new(keep, MAX_PAYLOAD),
            lost: false,
        }
    }

    fn reset(&mut self) {
        self.packets.reset();
        self.lost = false;
    }

    /// Feed bytes; `on_pkt` sees each packet completed by them. False when the framing broke
    /// (a sequence id out of order, a length past the protocol's): the side is then lost.
    /// Generic, as [`PacketReader::feed`] is: the per-packet work inlines into the reader.
    fn feed(&mut self, b: &[u8], mut on_pkt: impl FnMut(Packet<'_>)) -> bool {
        if self.lost {
            return true;
        }
        let fed = self.packets.feed(b, |p| {
            on_pkt(p);
            Flow::Go
        });
        self.lost = fed.is_err();
        fed.is_ok()
    }
}

fn u24(b: &[u8]) -> usize {
    b[0] as usize | (b[1] as usize) << 8 | (b[2] as usize) << 16
}

#[derive(Clone, Debug)]
struct Req {
    command: Command,
    end_ns: u64,
    query: Option<Vec<u8>>,
    first_resp_ns: Option<u64>,
    last_resp_ns: u64,
    resp_bytes: u64,
    error: bool,
    /// The answer as read so far; None when it cannot be read (its end then comes from the
    /// direction change).
    answer: Option<Answer>,
}

#[derive(Clone, Debug)]
struct Conn {
    mode: Mode,
    deprecate_eof: Option<bool>,
    compress: bool,
    /// Timed by direction because its bytes did not read as commands when joined: try again
    /// at each request.
    retry_sync: bool,
    next_seq: [Option<u32>; 2],
    last_dir: Option<Dir>,
    req: Option<Req>,
    client: Side,
    server: Side,
    last_ns: u64,
}

impl Conn {
    fn new(mode: Mode, ts: u64) -> Conn {
        Conn {
            mode,
            deprecate_eof: None,
            compress: false,
            retry_sync: false,
            next_seq: [None, None],
            last_dir: None,
            req: None,
            client: Side::new(QUERY_TEXT_CAP + 1),
            server: Side::new(SERVER_KEEP),
            last_ns: ts,
        }
    }
}

/// The connections by address. aHash with per-process random keys: every segment looks its
/// connection up, SipHash (std's default) cost about a tenth of rt's CPU, and the random keys
/// still keep crafted client ports from piling into one bucket.
type ConnMap = HashMap<ConnKey, Conn, ahash::RandomState>;

/// The per-connection state machine over every connection of the captured ports.
#[derive(Default)]
pub struct Tracker {
    conns: ConnMap,
    pub counters: Counters,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Connections currently tracked.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Feed one segment; events it completes are pushed to `out`.
    pub fn segment(&mut self, s: &Segment<'_>, out: &mut Vec<Event>) {
        self.counters.segments += 1;
        if s.syn {
            if s.dir == Dir::ToServer || !self.conns.contains_key(&s.key) {
                if let Some(old) = self.conns.remove(&s.key) {
                    close(s.key, old, out);
                }
                if self.conns.len() >= MAX_CONNECTIONS {
                    self.counters.overflow += 1;
                    return;
                }
                self.counters.connections_seen += 1;
                self.conns
                    .insert(s.key, Conn::new(Mode::Handshake, s.ts_ns));
            }
            let c = self.conns.get_mut(&s.key).expect("inserted above");
            c.next_seq[s.dir as usize] = Some(s.seq.wrapping_add(1));
            c.last_ns = s.ts_ns;
            return;
        }
        // One lookup for the common case, a segment of a connection already tracked.
        let tracked = self.conns.len();
        let c = match self.conns.entry(s.key) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => {
                if s.fin || s.rst || s.wire_len == 0 {
                    return;
                }
                if tracked >= MAX_CONNECTIONS {
                    self.counters.overflow += 1;
                    return;
                }
                self.counters.connections_seen += 1;
                v.insert(Conn::new(Mode::Unsynced, s.ts_ns))
            }
        };
        c.last_ns = s.ts_ns;
        let d = s.dir as usize;
        let mut payload = s.payload;
        let mut wire_len = s.wire_len as usize;
        let mut hole = payload.len() < wire_len;
        if let Some(exp) = c.next_seq[d] {
            let ahead = s.seq.wrapping_sub(exp) as i32;
            if ahead < 0 {
                // A retransmission: skip what was seen already.
                let seen = (-(ahead as i64)) as usize;
                if seen >= wire_len {
                    wire_len = 0;
                    payload = &[];
                } else {
                    wire_len -= seen;
                    payload = payload.get(seen..).unwrap_or(&[]);
                    hole |= payload.len() < wire_len;
                }
            } else if ahead > 0 {
                hole = true;
            }
        }
        let end = s.seq.wrapping_add(s.wire_len);
        if c.next_seq[d].is_none_or(|exp| end.wrapping_sub(exp) as i32 > 0) {
            c.next_seq[d] = Some(end);
        }
        if wire_len > 0 {
            let counters = &mut self.counters;
            match s.dir {
                Dir::ToServer => client_bytes(s.key, c, s.ts_ns, payload, hole, counters, out),
                Dir::ToClient => {
                    server_bytes(s.key, c, s.ts_ns, payload, wire_len, hole, counters, out)
                }
            }
            c.last_dir = Some(s.dir);
        }
        if s.fin || s.rst {
            if let Some(c) = self.conns.remove(&s.key) {
                close(s.key, c, out);
            }
        }
    }

    /// Emit answers idle for at least `idle_ns` by `now_ns` (those whose end only the next
    /// request would show) and forget connections silent for [`EVICT_NS`].
    pub fn flush(&mut self, now_ns: u64, idle_ns: u64, out: &mut Vec<Event>) {
        self.conns.retain(|key, c| {
            if let Some(r) = &c.req {
                if r.first_resp_ns.is_some() && r.last_resp_ns.saturating_add(idle_ns) <= now_ns {
                    let r = c.req.take().expect("checked");
                    out.push(Event::Exchange(exchange_of(*key, r)));
                }
            }
            c.last_ns.saturating_add(EVICT_NS) > now_ns
        });
    }

    /// Emit every answer still open (end of a capture).
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        for (key, c) in self.conns.drain() {
            if let Some(r) = c.req {
                if r.first_resp_ns.is_some() {
                    out.push(Event::Exchange(exchange_of(key, r)));
                }
            }
        }
    }
}

fn exchange_of(key: ConnKey, r: Req) -> Exchange {
    let first = r.first_resp_ns.unwrap_or(r.end_ns);
    Exchange {
        key,
        command: r.command,
        request_end_ns: r.end_ns,
        ttfb_ns: first.saturating_sub(r.end_ns),
        ttlb_ns: r.last_resp_ns.max(first).saturating_sub(r.end_ns),
        response_bytes: r.resp_bytes,
        error: r.error,
        query: r.query,
    }
}

fn close(key: ConnKey, c: Conn, out: &mut Vec<Event>) {
    if let Some(r) = c.req {
        if r.first_resp_ns.is_some() {
            out.push(Event::Exchange(exchange_of(key, r)));
        } else if !matches!(r.command, Command::Known(b) if Command::no_response(b) || b == PENDING)
        {
            out.push(Event::Abandoned(r.command));
        }
    }
}

/// The command byte of a request whose first packet is not read yet.
const PENDING: u8 = 0xff;

/// Bytes from the client.
fn client_bytes(
    key: ConnKey,
    c: &mut Conn,
    ts: u64,
    b: &[u8],
    hole: bool,
    counters: &mut Counters,
    out: &mut Vec<Event>,
) {
    let run_start = c.last_dir != Some(Dir::ToServer);
    match c.mode {
        Mode::Handshake => {
            let mut caps = None;
            let mut ssl_request = false;
            c.client.feed(b, |p| {
                if caps.is_none() && p.seq == 1 && p.head.len() >= 4 {
                    caps = Some(u32::from_le_bytes([
                        p.head[0], p.head[1], p.head[2], p.head[3],
                    ]));
                    ssl_request = p.len == 32 && caps.unwrap_or(0) & CLIENT_SSL != 0;
                }
            });
            if let Some(f) = caps {
                logged_in(c, f, ssl_request, counters);
            }
        }
        Mode::TlsHandshake { .. } => {
            // The first client run of application data after the TLS handshake is the
            // encrypted login; TLS handshake records (0x14, 0x15, 0x16) before it are not.
            if run_start && b.first() == Some(&0x17) {
                c.mode = Mode::TlsHandshake { auth_run: true };
            }
        }
        Mode::Unsynced => {
            if let Some(l) = sync::login(b) {
                // Joined at the login: the greeting was missed, the flags are not.
                logged_in(c, l.caps, l.ssl_request, counters);
                return;
            }
            if let Some(kind) = sync::tls_record(b).filter(|_| run_start) {
                counters.encrypted_connections += 1;
                c.client.reset();
                c.server.reset();
                if kind == TLS_APPLICATION_DATA {
                    c.mode = Mode::Opaque;
                    client_bytes(key, c, ts, b, hole, counters, out);
                } else {
                    // The TLS handshake after an SSLRequest we did not see: the encrypted
                    // login comes next and is not a request.
                    c.mode = Mode::TlsHandshake { auth_run: false };
                }
                return;
            }
            if sync::is_auth_data(b) {
                // The rest of a login we joined late (after an auth switch): not a request.
                return;
            }
            if run_start && sync::is_command(b) {
                c.mode = Mode::Plain;
                c.client.reset();
                c.server.reset();
                client_bytes(key, c, ts, b, hole, counters, out);
            } else if run_start && compressed::is_command(b) {
                // Joined after the login of a compressed connection: whole frames that
                // inflate to exactly their stated length and hold a command are sure.
                compressed_from_here(c, counters);
                client_bytes(key, c, ts, b, hole, counters, out);
            } else {
                // A request whose bytes do not read as a command (compressed, cut, ...):
                // timed by direction (its end is what the times start from), and read again
                // at each next request. Compression is assumed only from the login's flag or
                // from whole frames that inflate to a command.
                counters.unreadable_connections += 1;
                c.mode = Mode::Opaque;
                c.retry_sync = true;
                c.client.reset();
                c.server.reset();
                client_bytes(key, c, ts, b, hole, counters, out);
            }
        }
        Mode::Plain | Mode::Opaque => {
            if run_start && c.retry_sync {
                // A connection timed by direction since it was joined reads as commands now.
                if sync::is_command(b) {
                    c.mode = Mode::Plain;
                    c.retry_sync = false;
                } else if compressed::is_command(b) {
                    compressed_from_here(c, counters);
                }
            }
            if run_start {
                if let Some(r) = c.req.take() {
                    if r.first_resp_ns.is_some() {
                        out.push(Event::Exchange(exchange_of(key, r)));
                    } else {
                        c.req = Some(r);
                    }
                }
                if c.req.is_none() {
                    c.client.reset();
                }
            }
            let plain = c.mode == Mode::Plain;
            let fresh = c.req.is_none();
            let req = c.req.get_or_insert(Req {
                command: if plain {
                    Command::Known(PENDING)
                } else {
                    Command::Unknown
                },
                end_ns: ts,
                query: None,
                first_resp_ns: None,
                last_resp_ns: ts,
                resp_bytes: 0,
                error: false,
                answer: None,
            });
            req.end_ns = ts;
            if !plain {
                if run_start && c.compress && !hole {
                    compressed_request(req, b, out);
                }
                return;
            }
            let mut bad = false;
            if fresh {
                // The command from the run's first bytes, even if the capture cut the rest.
                if b.len() >= 5 && b[3] == 0 && Command::valid_byte(b[4]) {
                    req.command = Command::Known(b[4]);
                    if b[4] == COM_QUERY {
                        let end = (u24(b) + 4).min(b.len()).min(QUERY_TEXT_CAP + 5);
                        req.query = Some(b[5..end.max(5)].to_vec());
                    }
                } else {
                    bad = true;
                }
            }
            // Walk the commands of the run: the last answered one is the request; unanswered
            // ones (COM_STMT_CLOSE before the next execute) are counted.
            c.client.feed(b, |p| {
                let Some(&cmd) = p.head.first() else {
                    bad = true;
                    return;
                };
                if p.seq != 0 || !Command::valid_byte(cmd) {
                    // Part of a command over 16 MiB (sequence 1, 2, ...) is fine.
                    if p.seq == 0 {
                        bad = true;
                    }
                    return;
                }
                if Command::no_response(cmd) {
                    out.push(Event::NoResponse(Command::Known(cmd)));
                } else {
                    req.command = Command::Known(cmd);
                    req.query = (cmd == COM_QUERY).then(|| p.head[1..].to_vec());
                }
            });
            if hole {
                c.client.lost = true;
            }
            if bad {
                counters.resyncs += 1;
                c.mode = Mode::Opaque;
                // Timed by direction from here, and read again at the next request: a hole
                // in the capture mid-statement must not leave the connection unreadable.
                c.retry_sync = true;
                req.command = Command::Unknown;
                req.query = None;
            }
        }
    }
}

/// The command and statement of a compressed request from the first frame of its run: the
/// commands the server does not answer are counted, the last one it answers is the request's.
fn compressed_request(req: &mut Req, b: &[u8], out: &mut Vec<Event>) {
    for (cmd, query) in compressed::commands(b, QUERY_TEXT_CAP) {
        if Command::no_response(cmd) {
            out.push(Event::NoResponse(Command::Known(cmd)));
            // Named so that a close after it (COM_QUIT) is not an abandoned request; an
            // answered command of the same request keeps its name.
            if !matches!(req.command, Command::Known(k) if !Command::no_response(k)) {
                req.command = Command::Known(cmd);
            }
        } else {
            req.command = Command::Known(cmd);
            req.query = query;
        }
    }
}

/// A connection joined without its login whose requests read as compressed frames.
fn compressed_from_here(c: &mut Conn, counters: &mut Counters) {
    counters.compressed_connections += 1;
    c.compress = true;
    c.retry_sync = false;
    c.mode = Mode::Opaque;
    c.client.reset();
    c.server.reset();
}

/// The login's flags (seen from the SYN, or joined at the login): whether the rest is TLS,
/// and whether the protocol switches to compression after the server's OK.
fn logged_in(c: &mut Conn, flags: u32, ssl_request: bool, counters: &mut Counters) {
    c.deprecate_eof = Some(flags & CLIENT_DEPRECATE_EOF != 0);
    // Under TLS the frames are encrypted: compressed or not, nothing of them is read.
    c.compress = flags & CLIENT_COMPRESS != 0 && !ssl_request;
    if ssl_request {
        counters.encrypted_connections += 1;
        c.mode = Mode::TlsHandshake { auth_run: false };
    } else if c.mode == Mode::Unsynced {
        // Joined at the login: what follows is the server's answer to it.
        c.mode = Mode::Handshake;
        c.client.reset();
        c.server.reset();
    }
}

/// A TLS record of application data (the other kinds are the TLS handshake's).
const TLS_APPLICATION_DATA: u8 = 23;

/// Bytes from the server.
#[allow(clippy::too_many_arguments)]
fn server_bytes(
    key: ConnKey,
    c: &mut Conn,
    ts: u64,
    b: &[u8],
    wire_len: usize,
    hole: bool,
    counters: &mut Counters,
    out: &mut Vec<Event>,
) {
    match c.mode {
        Mode::Handshake => {
            let mut end = None;
            c.server.feed(b, |p| {
                if p.seq >= 2 {
                    match p.head.first() {
                        Some(0x00) => end = Some(true),
                        Some(0xff) => end = Some(false),
                        _ => {}
                    }
                }
            });
            if hole {
                c.server.lost = true;
            }
            if let Some(ok) = end {
                if ok {
                    counters.handshakes += 1;
                }
                c.mode = if c.compress {
                    counters.compressed_connections += 1;
                    Mode::Opaque
                } else {
                    Mode::Plain
                };
                c.client.reset();
                c.server.reset();
            }
        }
        Mode::TlsHandshake { auth_run } => {
            if auth_run {
                counters.handshakes += 1;
                c.mode = Mode::Opaque;
            }
        }
        Mode::Unsynced => {
            if sync::is_greeting(b) {
                // Joined at the greeting: the login comes next, read as one.
                c.mode = Mode::Handshake;
                c.client.reset();
                c.server.reset();
            }
        }
        Mode::Plain | Mode::Opaque => {
            let Some(req) = c.req.as_mut() else {
                // An answer without a request: bytes we did not expect; read anew.
                if c.mode == Mode::Plain {
                    counters.resyncs += 1;
                    c.mode = Mode::Unsynced;
                }
                return;
            };
            if req.first_resp_ns.is_none() {
                req.first_resp_ns = Some(ts);
                if c.mode == Mode::Opaque && c.compress && !hole {
                    req.error = compressed::starts_with_err(b);
                }
                c.server.reset();
                req.answer = match req.command {
                    Command::Known(cmd) if cmd != PENDING && !c.client.lost => {
                        // The answer's frames count on from the request's last one.
                        let next = c.client.packets.next_seq();
                        c.server.packets.expect_seq(Some(next));
                        Some(Answer::observed(cmd, c.deprecate_eof))
                    }
                    _ => None,
                };
            }
            req.last_resp_ns = ts;
            req.resp_bytes += wire_len as u64;
            if c.mode == Mode::Opaque {
                return;
            }
            let Some(answer) = req.answer.as_mut() else {
                return;
            };
            let (mut extra, mut finished) = (false, answer.finished());
            let mut unreadable = false;
            let framed = c.server.feed(b, |p| {
                if finished {
                    extra = true;
                    return;
                }
                match answer.packet(&p) {
                    Progress::More => {}
                    Progress::Done(o) => {
                        finished = true;
                        req.error = matches!(o, Outcome::Err(_));
                    }
                    Progress::Unreadable(_) => unreadable = true,
                }
            });
            if answer.deprecate_eof().is_some() {
                c.deprecate_eof = answer.deprecate_eof();
            }
            if !framed {
                counters.resyncs += 1;
            }
            if hole {
                c.server.lost = true;
            }
            if extra {
                counters.resyncs += 1;
            }
            if finished {
                let r = c.req.take().expect("present");
                out.push(Event::Exchange(exchange_of(key, r)));
            } else if unreadable || !framed || hole {
                req.answer = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ConnKey {
        ConnKey {
            client: SocketAddr::from(([127, 0, 0, 1], 40000)),
            server: SocketAddr::from(([127, 0, 0, 1], 3306)),
        }
    }

    fn pkt(seq: u8, body: &[u8]) -> Vec<u8> {
        let n = body.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        v.extend_from_slice(body);
        v
    }

    /// Feeds segments in order, with TCP sequence numbers per direction.
    struct Wire {
        t: Tracker,
        seq: [u32; 2],
        out: Vec<Event>,
    }

    impl Wire {
        fn new() -> Wire {
            Wire {
                t: Tracker::new(),
                seq: [1000, 5000],
                out: Vec::new(),
            }
        }
        fn send(&mut self, ts: u64, dir: Dir, b: &[u8]) {
            let s = Segment {
                ts_ns: ts,
                key: key(),
                dir,
                seq: self.seq[dir as usize],
                syn: false,
                fin: false,
                rst: false,
                payload: b,
                wire_len: b.len() as u32,
            };
            self.seq[dir as usize] = self.seq[dir as usize].wrapping_add(b.len() as u32);
            self.t.segment(&s, &mut self.out);
        }
        fn flag(&mut self, ts: u64, dir: Dir, syn: bool, fin: bool) {
            let s = Segment {
                ts_ns: ts,
                key: key(),
                dir,
                seq: self.seq[dir as usize].wrapping_sub(syn as u32),
                syn,
                fin,
                rst: false,
                payload: &[],
                wire_len: 0,
            };
            self.t.segment(&s, &mut self.out);
        }
        fn exchanges(&self) -> Vec<&Exchange> {
            self.out
                .iter()
                .filter_map(|e| match e {
                    Event::Exchange(x) => Some(x),
                    _ => None,
                })
                .collect()
        }
    }

    fn login(w: &mut Wire, caps: u32) {
        w.flag(1, Dir::ToServer, true, false);
        w.flag(2, Dir::ToClient, true, false);
        w.send(10, Dir::ToClient, &pkt(0, b"\x0a10.11.19-MariaDB\0rest"));
        let mut resp = caps.to_le_bytes().to_vec();
        resp.extend_from_slice(&[0; 40]);
        w.send(20, Dir::ToServer, &pkt(1, &resp));
        w.send(30, Dir::ToClient, &pkt(2, &[0, 0, 0, 2, 0, 0, 0]));
    }

    fn eof() -> Vec<u8> {
        vec![0xfe, 0, 0, 2, 0]
    }

    #[test]
    fn login_is_not_a_request_and_a_result_set_ends_at_its_eof() {
        let mut w = Wire::new();
        login(&mut w, 0x000f_a68f);
        assert!(w.out.is_empty());
        w.send(
            1000,
            Dir::ToServer,
            &pkt(0, b"\x03SELECT c FROM t WHERE id=1"),
        );
        let mut r = pkt(1, &[1]);
        r.extend(pkt(2, b"\x03def\x01t\x01t\x01t\x01c\x01c"));
        r.extend(pkt(3, &eof()));
        w.send(1500, Dir::ToClient, &r);
        assert!(w.exchanges().is_empty(), "rows still to come");
        let mut r = pkt(4, b"\x01x");
        r.extend(pkt(5, &eof()));
        w.send(1700, Dir::ToClient, &r);
        let x = w.exchanges();
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].command, Command::Known(COM_QUERY));
        assert_eq!((x[0].ttfb_ns, x[0].ttlb_ns), (500, 700));
        assert_eq!(
            x[0].query.as_deref(),
            Some(&b"SELECT c FROM t WHERE id=1"[..])
        );
        assert_eq!(w.t.counters.handshakes, 1);
    }

    #[test]
    fn close_before_execute_and_err_and_quit() {
        let mut w = Wire::new();
        login(&mut w, CLIENT_DEPRECATE_EOF | 0x0200);
        let mut req = pkt(0, &[COM_STMT_CLOSE, 1, 0, 0, 0]);
        req.extend(pkt(0, &[COM_STMT_EXECUTE, 2, 0, 0, 0, 0, 1, 0, 0, 0]));
        w.send(100, Dir::ToServer, &req);
        w.send(180, Dir::ToClient, &pkt(1, b"\xff\x15\x04#42000denied"));
        let x = w.exchanges();
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].command, Command::Known(COM_STMT_EXECUTE));
        assert!(x[0].error);
        assert!(w
            .out
            .contains(&Event::NoResponse(Command::Known(COM_STMT_CLOSE))));
        w.send(300, Dir::ToServer, &pkt(0, &[COM_QUIT]));
        w.flag(301, Dir::ToServer, false, true);
        assert!(!w.out.iter().any(|e| matches!(e, Event::Abandoned(_))));
        assert_eq!(w.t.connections(), 0);
    }

    #[test]
    fn a_request_that_does_not_read_is_read_again_at_the_next() {
        let mut w = Wire::new();
        login(&mut w, 0x000f_a68f);
        let ok = pkt(1, &[0, 0, 0, 2, 0, 0, 0]);
        // The capture lost the start of a long statement: its tail is not a command.
        w.seq[0] = w.seq[0].wrapping_add(3000);
        w.send(100, Dir::ToServer, b"rest of a long statement');");
        w.send(150, Dir::ToClient, &ok);
        w.send(1000, Dir::ToServer, &pkt(0, b"\x03SELECT 2"));
        w.send(1100, Dir::ToClient, &ok);
        w.send(2000, Dir::ToServer, &pkt(0, &[COM_QUIT]));
        let x = w.exchanges();
        assert_eq!(x.len(), 2, "{:?}", w.out);
        assert_eq!(x[0].command, Command::Unknown);
        assert_eq!((x[0].ttfb_ns, x[0].ttlb_ns), (50, 50));
        assert_eq!(x[1].command, Command::Known(COM_QUERY));
        assert_eq!(x[1].query.as_deref(), Some(&b"SELECT 2"[..]));
        assert_eq!((x[1].ttfb_ns, x[1].ttlb_ns), (100, 100));
        assert!(w.out.contains(&Event::NoResponse(Command::Known(COM_QUIT))));
        assert_eq!(w.t.counters.resyncs, 1);
    }

    /// A compressed-protocol frame of `inner`: stored, or zlib as clients send 50 bytes and more.
    fn cframe(seq: u8, inner: &[u8], zlib: bool) -> Vec<u8> {
        use std::io::Write;
        let (body, ulen) = if zlib {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(inner).unwrap();
            (z.finish().unwrap(), inner.len())
        } else {
            (inner.to_vec(), 0)
        };
        let n = body.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        v.extend_from_slice(&[ulen as u8, (ulen >> 8) as u8, (ulen >> 16) as u8]);
        v.extend_from_slice(&body);
        v
    }

    /// The requests of one compressed session: a long statement (zlib), a short one
    /// (stored), one answered with ERR, then COM_QUIT and the close.
    fn compressed_session(w: &mut Wire, t0: u64) {
        let long = format!("SELECT c FROM t.a WHERE c <> '{}'", "x".repeat(80));
        let ok = cframe(1, &pkt(1, &[0, 0, 0, 2, 0, 0, 0]), false);
        w.send(
            t0,
            Dir::ToServer,
            &cframe(0, &pkt(0, &[b"\x03", long.as_bytes()].concat()), true),
        );
        w.send(t0 + 400, Dir::ToClient, &ok);
        w.send(
            t0 + 1000,
            Dir::ToServer,
            &cframe(0, &pkt(0, b"\x03DO 1"), false),
        );
        w.send(t0 + 1300, Dir::ToClient, &ok);
        w.send(
            t0 + 2000,
            Dir::ToServer,
            &cframe(0, &pkt(0, b"\x03SELECT nosuchcol"), false),
        );
        let mut e = b"\xff\x1e\x04#42S22".to_vec();
        e.extend_from_slice(
            "Unknown column 'nosuchcol' in 'field list' "
                .repeat(2)
                .as_bytes(),
        );
        w.send(t0 + 2200, Dir::ToClient, &cframe(1, &pkt(1, &e), true));
        w.send(
            t0 + 3000,
            Dir::ToServer,
            &cframe(0, &pkt(0, &[COM_QUIT]), false),
        );
        w.flag(t0 + 3001, Dir::ToServer, false, true);
        let x = w.exchanges();
        assert_eq!(x.len(), 3, "{:?}", w.out);
        assert!(x.iter().all(|x| x.command == Command::Known(COM_QUERY)));
        let q: Vec<&[u8]> = x.iter().map(|x| x.query.as_deref().unwrap()).collect();
        assert_eq!(q, [long.as_bytes(), b"DO 1", b"SELECT nosuchcol"]);
        let e: Vec<bool> = x.iter().map(|x| x.error).collect();
        assert_eq!(e, [false, false, true]);
        let t: Vec<u64> = x.iter().map(|x| x.ttlb_ns).collect();
        assert_eq!(t, [400, 300, 200]);
        assert!(w.out.contains(&Event::NoResponse(Command::Known(COM_QUIT))));
        assert!(
            !w.out.iter().any(|e| matches!(e, Event::Abandoned(_))),
            "COM_QUIT is not an abandoned request"
        );
        assert_eq!(w.t.counters.compressed_connections, 1);
        assert_eq!(w.t.counters.unreadable_connections, 0);
    }

    #[test]
    fn compressed_requests_read_from_their_frames() {
        let mut w = Wire::new();
        login(&mut w, 0x000f_a68f | CLIENT_COMPRESS);
        compressed_session(&mut w, 1000);
        assert_eq!(w.t.counters.handshakes, 1);
    }

    #[test]
    fn compressed_requests_read_when_joined_after_the_login() {
        let mut w = Wire::new();
        // The tail of an answer, then whole frames that inflate to commands.
        w.send(10, Dir::ToClient, &cframe(3, &pkt(3, &eof()), false));
        compressed_session(&mut w, 1000);
        assert_eq!(w.t.counters.handshakes, 0);
    }

    #[test]
    fn compressed_under_tls_is_not_read() {
        let mut w = Wire::new();
        w.flag(1, Dir::ToServer, true, false);
        w.flag(2, Dir::ToClient, true, false);
        w.send(10, Dir::ToClient, &pkt(0, b"\x0a10.11.19-MariaDB\0rest"));
        let mut ssl = (CLIENT_SSL | CLIENT_COMPRESS | 0x0200)
            .to_le_bytes()
            .to_vec();
        ssl.extend_from_slice(&[0; 28]);
        w.send(20, Dir::ToServer, &pkt(1, &ssl));
        let c = w.t.conns.get(&key()).unwrap();
        assert!(!c.compress, "TLS records are never read as frames");
    }

    #[test]
    fn joined_mid_stream_and_killed_mid_query() {
        let mut w = Wire::new();
        // The tail of an answer we never saw the request of, then a fresh request.
        w.send(10, Dir::ToClient, &pkt(7, b"\x01x"));
        w.send(20, Dir::ToServer, &pkt(0, b"\x03SELECT SLEEP(10)"));
        w.flag(5000, Dir::ToClient, false, true);
        assert_eq!(
            w.out,
            vec![Event::Abandoned(Command::Known(COM_QUERY))],
            "a closed connection with a request pending is counted, not timed"
        );
        assert_eq!(w.t.connections(), 0);
    }

    #[test]
    fn tls_is_timed_by_direction_with_the_login_skipped() {
        let mut w = Wire::new();
        login_tls(&mut w);
        let rec = |n: u8| vec![0x17, 3, 3, 0, n, 9, 9, 9, 9];
        w.send(100, Dir::ToServer, &rec(4));
        w.send(160, Dir::ToClient, &rec(4));
        w.send(190, Dir::ToClient, &rec(4));
        w.send(300, Dir::ToServer, &rec(4));
        let x = w.exchanges();
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].command, Command::Unknown);
        assert_eq!((x[0].ttfb_ns, x[0].ttlb_ns), (60, 90));
        let mut out = Vec::new();
        w.t.flush(300 + IDLE, IDLE, &mut out);
        assert!(out.is_empty(), "no answer yet to the last request");
        w.send(400, Dir::ToClient, &rec(4));
        w.t.flush(400 + IDLE, IDLE, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(w.t.counters.encrypted_connections, 1);
    }

    const IDLE: u64 = 1000;

    fn login_tls(w: &mut Wire) {
        w.flag(1, Dir::ToServer, true, false);
        w.flag(2, Dir::ToClient, true, false);
        w.send(10, Dir::ToClient, &pkt(0, b"\x0a10.11.19-MariaDB\0rest"));
        let mut ssl = (CLIENT_SSL | 0x0200).to_le_bytes().to_vec();
        ssl.extend_from_slice(&[0; 28]);
        w.send(20, Dir::ToServer, &pkt(1, &ssl));
        w.send(21, Dir::ToServer, &[0x16, 3, 1, 0, 2, 1, 1]);
        w.send(30, Dir::ToClient, &[0x16, 3, 3, 0, 2, 2, 2]);
        w.send(40, Dir::ToServer, &[0x14, 3, 3, 0, 1, 1]);
        w.send(50, Dir::ToClient, &[0x14, 3, 3, 0, 1, 1]);
        // The encrypted login and its OK.
        w.send(60, Dir::ToServer, &[0x17, 3, 3, 0, 2, 5, 5]);
        w.send(70, Dir::ToClient, &[0x17, 3, 3, 0, 2, 6, 6]);
        assert!(w.out.is_empty());
    }

    proptest::proptest! {
        /// Arbitrary segments (any flags, bytes, order, holes) never panic, and every
        /// exchange's last byte is not before its first.
        #[test]
        fn arbitrary_segments_never_panic(
            segs in proptest::collection::vec(
                (0u64..1_000_000, proptest::bool::ANY, 0u8..8, 0u32..2000,
                 proptest::collection::vec(proptest::num::u8::ANY, 0..80), 0u32..40),
                0..60)
        ) {
            let mut t = Tracker::new();
            let mut out = Vec::new();
            let mut ts = 0;
            for (dt, to_server, flags, seq, payload, cut) in &segs {
                ts += dt;
                let s = Segment {
                    ts_ns: ts,
                    key: key(),
                    dir: if *to_server { Dir::ToServer } else { Dir::ToClient },
                    seq: *seq,
                    syn: flags & 1 != 0,
                    fin: flags & 2 != 0 && flags & 4 != 0,
                    rst: flags == &6,
                    payload,
                    wire_len: payload.len() as u32 + cut,
                };
                t.segment(&s, &mut out);
                t.flush(ts, 500_000, &mut out);
            }
            t.finish(&mut out);
            for e in &out {
                if let Event::Exchange(x) = e {
                    proptest::prop_assert!(x.ttlb_ns >= x.ttfb_ns);
                }
            }
        }
    }
}
