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

use std::collections::HashMap;
use std::net::SocketAddr;

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

pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub const COM_FIELD_LIST: u8 = 0x04;
pub const COM_STATISTICS: u8 = 0x09;
pub const COM_STMT_PREPARE: u8 = 0x16;
pub const COM_STMT_EXECUTE: u8 = 0x17;
pub const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
pub const COM_STMT_CLOSE: u8 = 0x19;
pub const COM_STMT_FETCH: u8 = 0x1c;
/// MariaDB's bulk execute.
pub const COM_STMT_BULK_EXECUTE: u8 = 0xfa;

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

const CLIENT_COMPRESS: u32 = 0x20;
const CLIENT_SSL: u32 = 0x800;
const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

/// Totals over the tracker's life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counters {
    pub segments: u64,
    pub connections_seen: u64,
    pub handshakes: u64,
    pub encrypted_connections: u64,
    pub compressed_connections: u64,
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
    /// Encrypted or compressed: boundaries from direction changes only.
    Opaque,
    /// Joined mid-stream: waiting for the first client run after a server run.
    Unsynced,
}

/// Reads MySQL packet framing (3-byte length, 1-byte sequence id) from a byte stream and keeps
/// the first bytes of each packet's body.
#[derive(Clone, Debug, Default)]
struct PktReader {
    hdr: [u8; 4],
    hdr_have: usize,
    body_len: usize,
    body_left: usize,
    prefix: Vec<u8>,
    lost: bool,
}

/// One packet read whole: its length, sequence id and first body bytes.
struct Pkt<'p> {
    len: usize,
    seq: u8,
    prefix: &'p [u8],
}

impl PktReader {
    fn reset(&mut self) {
        self.hdr_have = 0;
        self.body_left = 0;
        self.body_len = 0;
        self.prefix.clear();
        self.lost = false;
    }

    /// Feed bytes; `on_pkt` sees each packet completed by them. `keep` is how many body bytes
    /// to keep per packet.
    fn feed(&mut self, mut b: &[u8], keep: usize, on_pkt: &mut dyn FnMut(Pkt<'_>)) {
        if self.lost {
            return;
        }
        while !b.is_empty() {
            if self.hdr_have < 4 {
                let n = (4 - self.hdr_have).min(b.len());
                self.hdr[self.hdr_have..self.hdr_have + n].copy_from_slice(&b[..n]);
                self.hdr_have += n;
                b = &b[n..];
                if self.hdr_have == 4 {
                    self.body_len = u24(&self.hdr);
                    self.body_left = self.body_len;
                    self.prefix.clear();
                    if self.body_len == 0 {
                        self.hdr_have = 0;
                        on_pkt(Pkt {
                            len: 0,
                            seq: self.hdr[3],
                            prefix: &[],
                        });
                    }
                }
                continue;
            }
            let n = self.body_left.min(b.len());
            let want = keep.saturating_sub(self.prefix.len()).min(n);
            self.prefix.extend_from_slice(&b[..want]);
            self.body_left -= n;
            b = &b[n..];
            if self.body_left == 0 {
                self.hdr_have = 0;
                on_pkt(Pkt {
                    len: self.body_len,
                    seq: self.hdr[3],
                    prefix: &self.prefix,
                });
            }
        }
    }
}

fn u24(b: &[u8]) -> usize {
    b[0] as usize | (b[1] as usize) << 8 | (b[2] as usize) << 16
}

/// Length-encoded integer at the start of `b`: (value, bytes used).
fn lenenc(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let (n, skip) = match first {
        0..=0xfa => return Some((first as u64, 1)),
        0xfc => (2, 1),
        0xfd => (3, 1),
        0xfe => (8, 1),
        _ => return None,
    };
    let bytes = b.get(skip..skip + n)?;
    let v = bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &x| (acc << 8) | x as u64);
    Some((v, skip + n))
}

/// Status flags of an OK packet body (`0x00`/`0xfe` header) or an EOF body (5 bytes).
fn status_flags(body: &[u8], len: usize) -> Option<u16> {
    if body.first() == Some(&0xfe) && len == 5 {
        return body.get(3..5).map(|s| u16::from_le_bytes([s[0], s[1]]));
    }
    let (_, a) = lenenc(body.get(1..)?)?;
    let (_, b) = lenenc(body.get(1 + a..)?)?;
    let s = body.get(1 + a + b..3 + a + b)?;
    Some(u16::from_le_bytes([s[0], s[1]]))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Resp {
    /// Waiting for the first packet of an answer (or of the next result set).
    First,
    /// Column (or prepare parameter) definitions still to come.
    Defs(u64),
    /// After the column definitions of a result set.
    AfterColumns,
    Rows,
    /// COM_FIELD_LIST: definitions until an EOF.
    UntilEof,
    /// Cannot follow: the end comes from the direction change.
    Opaque,
    Done,
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
    resp: Resp,
}

#[derive(Clone, Debug)]
struct Conn {
    mode: Mode,
    deprecate_eof: Option<bool>,
    compress: bool,
    next_seq: [Option<u32>; 2],
    last_dir: Option<Dir>,
    req: Option<Req>,
    client: PktReader,
    server: PktReader,
    last_ns: u64,
}

impl Conn {
    fn new(mode: Mode, ts: u64) -> Conn {
        Conn {
            mode,
            deprecate_eof: None,
            compress: false,
            next_seq: [None, None],
            last_dir: None,
            req: None,
            client: PktReader::default(),
            server: PktReader::default(),
            last_ns: ts,
        }
    }
}

/// The per-connection state machine over every connection of the captured ports.
#[derive(Default)]
pub struct Tracker {
    conns: HashMap<ConnKey, Conn>,
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
        if !self.conns.contains_key(&s.key) {
            if s.fin || s.rst || s.wire_len == 0 {
                return;
            }
            if self.conns.len() >= MAX_CONNECTIONS {
                self.counters.overflow += 1;
                return;
            }
            self.counters.connections_seen += 1;
            self.conns.insert(s.key, Conn::new(Mode::Unsynced, s.ts_ns));
        }
        let c = self.conns.get_mut(&s.key).expect("present");
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
            c.client.feed(b, 4, &mut |p| {
                if caps.is_none() && p.seq == 1 && p.prefix.len() >= 4 {
                    caps = Some(u32::from_le_bytes([
                        p.prefix[0],
                        p.prefix[1],
                        p.prefix[2],
                        p.prefix[3],
                    ]));
                    ssl_request = p.len == 32 && caps.unwrap_or(0) & CLIENT_SSL != 0;
                }
            });
            if let Some(f) = caps {
                c.deprecate_eof = Some(f & CLIENT_DEPRECATE_EOF != 0);
                c.compress = f & CLIENT_COMPRESS != 0;
                if ssl_request {
                    counters.encrypted_connections += 1;
                    c.mode = Mode::TlsHandshake { auth_run: false };
                }
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
            if c.last_dir == Some(Dir::ToClient) {
                resync(c, b, counters);
                if c.mode != Mode::Unsynced {
                    client_bytes(key, c, ts, b, hole, counters, out);
                }
            }
        }
        Mode::Plain | Mode::Opaque => {
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
                resp: Resp::First,
            });
            req.end_ns = ts;
            if !plain {
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
            c.client.feed(b, QUERY_TEXT_CAP + 1, &mut |p| {
                let Some(&cmd) = p.prefix.first() else {
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
                    req.query = (cmd == COM_QUERY).then(|| p.prefix[1..].to_vec());
                }
            });
            if hole {
                c.client.lost = true;
            }
            if bad {
                counters.resyncs += 1;
                c.mode = Mode::Opaque;
                req.command = Command::Unknown;
                req.query = None;
            }
        }
    }
}

/// Decide how to read a connection joined mid-stream from the first bytes of a client run.
fn resync(c: &mut Conn, b: &[u8], counters: &mut Counters) {
    if b.len() >= 3 && b[0] == 0x17 && b[1] == 0x03 && (1..=4).contains(&b[2]) {
        counters.encrypted_connections += 1;
        c.mode = Mode::Opaque;
    } else if b.len() >= 5 && b[3] == 0 && Command::valid_byte(b[4]) {
        c.mode = Mode::Plain;
    } else if b.len() >= 7 {
        // Anything else (the compressed protocol's 7-byte header, ...) is read by direction.
        counters.compressed_connections += 1;
        c.mode = Mode::Opaque;
    }
    c.client.reset();
    c.server.reset();
}

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
            c.server.feed(b, 1, &mut |p| {
                if p.seq >= 2 {
                    match p.prefix.first() {
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
        Mode::Unsynced => {}
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
                c.server.reset();
                if matches!(req.command, Command::Unknown | Command::Known(PENDING))
                    || c.client.lost
                {
                    req.resp = Resp::Opaque;
                }
            }
            req.last_resp_ns = ts;
            req.resp_bytes += wire_len as u64;
            if c.mode == Mode::Opaque {
                return;
            }
            let cmd = match req.command {
                Command::Known(x) => x,
                Command::Unknown => 0xff,
            };
            let dep = &mut c.deprecate_eof;
            let mut extra = false;
            c.server.feed(b, 32, &mut |p| {
                if req.resp == Resp::Done {
                    extra = true;
                    return;
                }
                req.resp = next_resp(req.resp, cmd, &p, dep, &mut req.error);
            });
            if hole {
                c.server.lost = true;
                if req.resp != Resp::Done {
                    req.resp = Resp::Opaque;
                }
            }
            if extra {
                counters.resyncs += 1;
            }
            if req.resp == Resp::Done {
                let r = c.req.take().expect("present");
                out.push(Event::Exchange(exchange_of(key, r)));
            }
        }
    }
}

/// The answer's reading state after one more server packet.
fn next_resp(
    state: Resp,
    cmd: u8,
    p: &Pkt<'_>,
    deprecate_eof: &mut Option<bool>,
    error: &mut bool,
) -> Resp {
    let b0 = p.prefix.first().copied();
    let more = |p: &Pkt<'_>| {
        status_flags(p.prefix, p.len).is_some_and(|s| s & SERVER_MORE_RESULTS_EXISTS != 0)
    };
    let terminator = b0 == Some(0xfe) && p.len < 0xff_ffff;
    match state {
        Resp::Opaque | Resp::Done => state,
        Resp::First => match b0 {
            Some(0xff) => {
                *error = true;
                Resp::Done
            }
            Some(0x00) if cmd == COM_STMT_PREPARE => {
                let n = |i: usize| {
                    p.prefix
                        .get(i..i + 2)
                        .map(|s| u16::from_le_bytes([s[0], s[1]]) as u64)
                };
                match (n(5), n(7), *deprecate_eof) {
                    (Some(cols), Some(params), Some(dep)) => {
                        let eofs = if dep {
                            0
                        } else {
                            (cols > 0) as u64 + (params > 0) as u64
                        };
                        match cols + params + eofs {
                            0 => Resp::Done,
                            k => Resp::Defs(k),
                        }
                    }
                    _ => Resp::Opaque,
                }
            }
            Some(_) if cmd == COM_STMT_FETCH => {
                if terminator {
                    Resp::Done
                } else {
                    Resp::Rows
                }
            }
            Some(0x00) => {
                if more(p) {
                    Resp::First
                } else {
                    Resp::Done
                }
            }
            Some(0xfb) => Resp::Opaque,
            Some(_) if cmd == COM_STATISTICS => Resp::Done,
            Some(_) if cmd == COM_FIELD_LIST => Resp::UntilEof,
            Some(_) if matches!(cmd, COM_QUERY | COM_STMT_EXECUTE | COM_STMT_BULK_EXECUTE) => {
                match lenenc(p.prefix) {
                    Some((n, _)) if n > 0 => Resp::Defs(n),
                    _ => Resp::Opaque,
                }
            }
            _ => Resp::Opaque,
        },
        Resp::Defs(n) => {
            if n > 1 {
                Resp::Defs(n - 1)
            } else if cmd == COM_STMT_PREPARE {
                Resp::Done
            } else {
                Resp::AfterColumns
            }
        }
        Resp::AfterColumns => {
            if b0 == Some(0xff) {
                *error = true;
                Resp::Done
            } else if terminator && p.len < 9 {
                if *deprecate_eof == Some(true) {
                    if more(p) {
                        Resp::First
                    } else {
                        Resp::Done
                    }
                } else {
                    // The EOF after the definitions (or, unknowable here, the end of an empty
                    // result with CLIENT_DEPRECATE_EOF: then the next request ends it).
                    Resp::Rows
                }
            } else {
                // A row right after the definitions: no EOF packets on this connection.
                *deprecate_eof = Some(true);
                Resp::Rows
            }
        }
        Resp::Rows => {
            if b0 == Some(0xff) {
                *error = true;
                Resp::Done
            } else if terminator {
                if *deprecate_eof != Some(true) && p.len < 9 {
                    *deprecate_eof = Some(false);
                }
                if more(p) {
                    Resp::First
                } else {
                    Resp::Done
                }
            } else {
                Resp::Rows
            }
        }
        Resp::UntilEof => {
            if b0 == Some(0xff) {
                *error = true;
                Resp::Done
            } else if terminator {
                Resp::Done
            } else {
                Resp::UntilEof
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
