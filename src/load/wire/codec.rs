//! The bytes of the MySQL client/server protocol the load needs, without I/O: packet framing,
//! the handshake (HandshakeV10 in, HandshakeResponse41 out, auth switch and the
//! caching_sha2_password fast-path replies), the commands (COM_QUERY, COM_STMT_PREPARE,
//! COM_STMT_EXECUTE with binary parameters, COM_STMT_CLOSE) and a resumable reader of their
//! responses (OK, ERR, result sets whose rows are skipped, the prepare answer).
//!
//! Every parser takes untrusted bytes and returns an error instead of panicking.

use std::fmt;

/// Capability flags (the protocol's names).
pub mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const SSL: u32 = 1 << 11;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const PLUGIN_AUTH_LENENC_DATA: u32 = 1 << 21;
    pub const DEPRECATE_EOF: u32 = 1 << 24;
}

/// Status flag: another result follows this one.
pub const MORE_RESULTS_EXIST: u16 = 0x0008;
/// Largest payload of one frame; a frame this long continues in the next one.
pub const MAX_FRAME: usize = 0xff_ffff;

const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_VAR_STRING: u8 = 0xfd;
/// utf8mb4_general_ci
pub const CHARSET: u8 = 45;

/// Bytes that do not follow the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed server packet: {}", self.0)
    }
}

/// An ERR packet: the server's code, SQL state and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub code: u16,
    pub state: String,
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

/// A little-endian reader over a packet's payload.
struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Rd<'a> {
    fn new(b: &'a [u8]) -> Rd<'a> {
        Rd { b, at: 0 }
    }
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Malformed> {
        let end = self.at.checked_add(n).ok_or(Malformed(what))?;
        let s = self.b.get(self.at..end).ok_or(Malformed(what))?;
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, Malformed> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, Malformed> {
        let s = self.take(2, what)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, Malformed> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn lenenc(&mut self, what: &'static str) -> Result<u64, Malformed> {
        let n = match self.u8(what)? {
            x @ 0..=0xfa => return Ok(u64::from(x)),
            0xfc => 2,
            0xfd => 3,
            0xfe => 8,
            _ => return Err(Malformed(what)),
        };
        let s = self.take(n, what)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(s);
        Ok(u64::from_le_bytes(v))
    }
    fn nul_str(&mut self, what: &'static str) -> Result<&'a [u8], Malformed> {
        let rest = &self.b[self.at..];
        let n = rest.iter().position(|&c| c == 0).ok_or(Malformed(what))?;
        self.at += n + 1;
        Ok(&rest[..n])
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.b[self.at..];
        self.at = self.b.len();
        s
    }
}

fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xfa => out.push(v as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// One logical packet found at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Bytes of the buffer it occupies (headers included).
    pub wire_len: usize,
    /// Payload length over all its frames.
    pub len: usize,
    /// Sequence id of its first frame.
    pub seq: u8,
    /// Where its first frame's payload lies in the buffer (the whole payload unless it is
    /// 16 MB or more, which only rows are).
    pub first: std::ops::Range<usize>,
}

/// The complete logical packet at the start of `buf`, or None when more bytes are needed.
pub fn frame(buf: &[u8]) -> Option<Frame> {
    let mut at = 0usize;
    let mut len = 0usize;
    let mut first = None;
    let mut seq = 0;
    loop {
        let h = buf.get(at..at + 4)?;
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        if first.is_none() {
            seq = h[3];
            first = Some(at + 4..at + 4 + n);
        }
        if buf.len() < at + 4 + n {
            return None;
        }
        at += 4 + n;
        len += n;
        if n < MAX_FRAME {
            return Some(Frame {
                wire_len: at,
                len,
                seq,
                first: first.unwrap_or(0..0),
            });
        }
    }
}

/// Append `payload` as packets starting at sequence id `seq` (split at 16 MB); returns the
/// next sequence id.
pub fn put_packet(out: &mut Vec<u8>, mut seq: u8, payload: &[u8]) -> u8 {
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_FRAME);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        if n < MAX_FRAME {
            return seq;
        }
    }
}

/// What a HandshakeV10 packet says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Greeting {
    pub server_version: String,
    pub connection_id: u32,
    pub caps: u32,
    /// The nonce (both parts, without the trailing NUL).
    pub nonce: Vec<u8>,
    pub plugin: String,
}

/// Parse the server's first packet (an ERR here is the server refusing the connection, e.g.
/// too many connections).
pub fn parse_greeting(p: &[u8]) -> Result<Result<Greeting, ServerError>, Malformed> {
    if p.first() == Some(&0xff) {
        return parse_err(p).map(Err);
    }
    let mut r = Rd::new(p);
    if r.u8("greeting version")? != 10 {
        return Err(Malformed("not protocol version 10"));
    }
    let server_version = String::from_utf8_lossy(r.nul_str("server version")?).into_owned();
    let connection_id = r.u32("connection id")?;
    let mut nonce = r.take(8, "nonce")?.to_vec();
    r.u8("filler")?;
    let lo = u32::from(r.u16("capabilities")?);
    let mut caps = lo;
    let mut plugin = String::new();
    if r.at < p.len() {
        r.u8("charset")?;
        r.u16("status")?;
        caps |= u32::from(r.u16("capabilities")?) << 16;
        let data_len = r.u8("auth data length")?;
        r.take(10, "reserved")?;
        if caps & caps::SECURE_CONNECTION != 0 {
            let n = (usize::from(data_len).saturating_sub(8)).max(13);
            let part = r.take(n, "nonce part 2")?;
            // The last byte is a NUL terminator.
            let part = part.strip_suffix(&[0]).unwrap_or(part);
            nonce.extend_from_slice(part);
        }
        if caps & caps::PLUGIN_AUTH != 0 {
            let rest = r.rest();
            let name = rest.split(|&c| c == 0).next().unwrap_or_default();
            plugin = String::from_utf8_lossy(name).into_owned();
        }
    }
    Ok(Ok(Greeting {
        server_version,
        connection_id,
        caps,
        nonce,
        plugin,
    }))
}

/// The client's HandshakeResponse41 payload.
pub fn handshake_response(
    caps: u32,
    user: &str,
    auth: &[u8],
    db: Option<&str>,
    plugin: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + user.len() + auth.len());
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(16u32 << 20).to_le_bytes());
    out.push(CHARSET);
    out.extend_from_slice(&[0u8; 23]);
    out.extend_from_slice(user.as_bytes());
    out.push(0);
    if caps & caps::PLUGIN_AUTH_LENENC_DATA != 0 {
        put_lenenc(&mut out, auth.len() as u64);
    } else {
        out.push(auth.len().min(255) as u8);
    }
    out.extend_from_slice(auth);
    if let Some(db) = db.filter(|_| caps & caps::CONNECT_WITH_DB != 0) {
        out.extend_from_slice(db.as_bytes());
        out.push(0);
    }
    if caps & caps::PLUGIN_AUTH != 0 {
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    }
    out
}

/// The server's answer during authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthReply {
    Ok,
    Err(ServerError),
    /// Use another plugin with this nonce.
    Switch {
        plugin: String,
        nonce: Vec<u8>,
    },
    /// Plugin-specific data (caching_sha2_password: 3 fast auth done, 4 full auth needed).
    More(Vec<u8>),
}

pub fn parse_auth_reply(p: &[u8]) -> Result<AuthReply, Malformed> {
    match p.first() {
        Some(0x00) => Ok(AuthReply::Ok),
        Some(0xff) => parse_err(p).map(AuthReply::Err),
        Some(0xfe) => {
            let mut r = Rd::new(&p[1..]);
            if p.len() == 1 {
                // The old switch to mysql_old_password: not spoken.
                return Ok(AuthReply::Switch {
                    plugin: "mysql_old_password".into(),
                    nonce: Vec::new(),
                });
            }
            let plugin = String::from_utf8_lossy(r.nul_str("plugin name")?).into_owned();
            let data = r.rest();
            let nonce = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
            Ok(AuthReply::Switch { plugin, nonce })
        }
        Some(0x01) => Ok(AuthReply::More(p[1..].to_vec())),
        _ => Err(Malformed("unexpected packet during authentication")),
    }
}

/// An ERR payload (first byte 0xff).
pub fn parse_err(p: &[u8]) -> Result<ServerError, Malformed> {
    let mut r = Rd::new(p);
    if r.u8("error header")? != 0xff {
        return Err(Malformed("not an error packet"));
    }
    let code = r.u16("error code")?;
    let rest = r.rest();
    let (state, msg) = match rest.strip_prefix(b"#") {
        Some(s) if s.len() >= 5 => (String::from_utf8_lossy(&s[..5]).into_owned(), &s[5..]),
        _ => ("HY000".to_string(), rest),
    };
    Ok(ServerError {
        code,
        state,
        message: String::from_utf8_lossy(msg).into_owned(),
    })
}

/// An OK payload (0x00, or 0xfe ending a result set): affected rows and status flags.
fn parse_ok(p: &[u8]) -> Result<(u64, u16), Malformed> {
    let mut r = Rd::new(p);
    r.u8("ok header")?;
    let affected = r.lenenc("affected rows")?;
    r.lenenc("last insert id")?;
    let status = r.u16("status flags").unwrap_or(0);
    Ok((affected, status))
}

/// An EOF payload (0xfe, under 9 bytes): its status flags.
fn parse_eof(p: &[u8]) -> u16 {
    match p {
        [0xfe, _, _, s0, s1, ..] => u16::from_le_bytes([*s0, *s1]),
        _ => 0,
    }
}

/// A command packet: COM_QUERY.
pub fn com_query(out: &mut Vec<u8>, sql: &str) {
    command(out, COM_QUERY, sql.as_bytes());
}

/// COM_STMT_PREPARE.
pub fn com_prepare(out: &mut Vec<u8>, sql: &str) {
    command(out, COM_STMT_PREPARE, sql.as_bytes());
}

/// COM_STMT_CLOSE (the server sends no answer).
pub fn com_close(out: &mut Vec<u8>, id: u32) {
    command(out, COM_STMT_CLOSE, &id.to_le_bytes());
}

fn command(out: &mut Vec<u8>, cmd: u8, body: &[u8]) {
    if body.len() + 1 < MAX_FRAME {
        // The common case without a copy of the body.
        out.extend_from_slice(&((body.len() + 1) as u32).to_le_bytes()[..3]);
        out.push(0);
        out.push(cmd);
        out.extend_from_slice(body);
    } else {
        let mut p = Vec::with_capacity(body.len() + 1);
        p.push(cmd);
        p.extend_from_slice(body);
        put_packet(out, 0, &p);
    }
}

/// A parameter of COM_STMT_EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    Int(i64),
    Str(String),
}

/// COM_STMT_EXECUTE of statement `id` with `args` (types sent with every execute).
pub fn com_execute(out: &mut Vec<u8>, id: u32, args: &[Arg]) {
    let mut p = Vec::with_capacity(16 + args.len() * 12);
    p.push(COM_STMT_EXECUTE);
    p.extend_from_slice(&id.to_le_bytes());
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    if !args.is_empty() {
        p.extend(std::iter::repeat_n(0u8, args.len().div_ceil(8)));
        p.push(1); // types follow
        for a in args {
            let t = match a {
                Arg::Int(_) => TYPE_LONGLONG,
                Arg::Str(_) => TYPE_VAR_STRING,
            };
            p.extend_from_slice(&[t, 0]);
        }
        for a in args {
            match a {
                Arg::Int(v) => p.extend_from_slice(&v.to_le_bytes()),
                Arg::Str(s) => {
                    put_lenenc(&mut p, s.len() as u64);
                    p.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    put_packet(out, 0, &p);
}

/// What a command's response said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// OK, or a result set (its rows counted, not kept).
    Done {
        affected: u64,
        rows: u64,
    },
    Err(ServerError),
    /// COM_STMT_PREPARE's answer.
    Prepared {
        id: u32,
        params: u16,
        columns: u16,
    },
}

/// Which response a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// COM_QUERY and COM_STMT_EXECUTE: OK, ERR or result set(s).
    Result,
    /// COM_STMT_PREPARE.
    Prepare,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    First,
    ColDefs(u64),
    ColEof,
    Rows,
    PrepParams(u16, u16),
    PrepParamsEof(u16),
    PrepCols(u16),
    PrepColsEof,
}

/// Reads one command's response packet by packet as bytes arrive, keeping nothing of the
/// rows. Feed it the unread bytes; it says how many it consumed and, once the response is
/// complete, what it said.
#[derive(Debug, Clone)]
pub struct Reader {
    expect: Expect,
    deprecate_eof: bool,
    phase: Phase,
    rows: u64,
    affected: u64,
    prepared: Option<(u32, u16, u16)>,
}

/// Progress of a [`Reader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Consumed this many bytes; the response is not complete yet.
    More(usize),
    /// Consumed this many bytes; the response is complete.
    Done(usize, Outcome),
}

impl Reader {
    pub fn new(expect: Expect, deprecate_eof: bool) -> Reader {
        Reader {
            expect,
            deprecate_eof,
            phase: Phase::First,
            rows: 0,
            affected: 0,
            prepared: None,
        }
    }

    /// Consume complete packets from the start of `buf`.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Step, Malformed> {
        let mut used = 0;
        while let Some(f) = frame(&buf[used..]) {
            let p = &buf[used + f.first.start..used + f.first.end];
            used += f.wire_len;
            if let Some(o) = self.packet(p, f.len)? {
                return Ok(Step::Done(used, o));
            }
        }
        Ok(Step::More(used))
    }

    fn done(&mut self, status: u16) -> Option<Outcome> {
        if status & MORE_RESULTS_EXIST != 0 {
            self.phase = Phase::First;
            return None;
        }
        Some(Outcome::Done {
            affected: self.affected,
            rows: self.rows,
        })
    }

    fn packet(&mut self, p: &[u8], len: usize) -> Result<Option<Outcome>, Malformed> {
        let head = *p.first().ok_or(Malformed("empty packet"))?;
        if head == 0xff && len < MAX_FRAME {
            return parse_err(p).map(|e| Some(Outcome::Err(e)));
        }
        match self.phase {
            Phase::First => match (self.expect, head) {
                (Expect::Result, 0x00) => {
                    let (a, status) = parse_ok(p)?;
                    self.affected += a;
                    Ok(self.done(status))
                }
                (Expect::Result, 0xfb) => Err(Malformed("LOCAL INFILE request")),
                (Expect::Result, _) => {
                    let n = Rd::new(p).lenenc("column count")?;
                    if n == 0 {
                        return Err(Malformed("zero columns"));
                    }
                    self.phase = Phase::ColDefs(n);
                    Ok(None)
                }
                (Expect::Prepare, 0x00) => {
                    let mut r = Rd::new(p);
                    r.u8("prepare header")?;
                    let id = r.u32("statement id")?;
                    let columns = r.u16("column count")?;
                    let params = r.u16("parameter count")?;
                    self.prepared = Some((id, params, columns));
                    self.phase = Phase::PrepParams(params, columns);
                    self.prep_next()
                }
                (Expect::Prepare, _) => Err(Malformed("unexpected answer to prepare")),
            },
            Phase::ColDefs(n) => {
                self.phase = if n > 1 {
                    Phase::ColDefs(n - 1)
                } else if self.deprecate_eof {
                    Phase::Rows
                } else {
                    Phase::ColEof
                };
                Ok(None)
            }
            Phase::ColEof => {
                if head != 0xfe {
                    return Err(Malformed("no EOF after the column definitions"));
                }
                self.phase = Phase::Rows;
                Ok(None)
            }
            Phase::Rows => {
                if head == 0xfe && len < MAX_FRAME && (self.deprecate_eof || len < 9) {
                    let status = if self.deprecate_eof {
                        parse_ok(p)?.1
                    } else {
                        parse_eof(p)
                    };
                    return Ok(self.done(status));
                }
                self.rows += 1;
                Ok(None)
            }
            Phase::PrepParams(n, c) => {
                self.phase = Phase::PrepParams(n.saturating_sub(1), c);
                if n <= 1 {
                    self.phase = if self.deprecate_eof {
                        Phase::PrepCols(c)
                    } else {
                        Phase::PrepParamsEof(c)
                    };
                    if self.deprecate_eof {
                        return self.prep_next();
                    }
                }
                Ok(None)
            }
            Phase::PrepParamsEof(c) => {
                if head != 0xfe {
                    return Err(Malformed("no EOF after the parameter definitions"));
                }
                self.phase = Phase::PrepCols(c);
                self.prep_next()
            }
            Phase::PrepCols(c) => {
                if c <= 1 {
                    if self.deprecate_eof {
                        return Ok(self.prepared_outcome());
                    }
                    self.phase = Phase::PrepColsEof;
                } else {
                    self.phase = Phase::PrepCols(c - 1);
                }
                Ok(None)
            }
            Phase::PrepColsEof => {
                if head != 0xfe {
                    return Err(Malformed("no EOF after the column definitions"));
                }
                Ok(self.prepared_outcome())
            }
        }
    }

    /// After the prepare header or a finished group of definitions: done when nothing more
    /// is due.
    fn prep_next(&mut self) -> Result<Option<Outcome>, Malformed> {
        match self.phase {
            Phase::PrepParams(0, c) => {
                self.phase = Phase::PrepCols(c);
                self.prep_next()
            }
            Phase::PrepCols(0) => Ok(self.prepared_outcome()),
            _ => Ok(None),
        }
    }

    fn prepared_outcome(&mut self) -> Option<Outcome> {
        self.prepared
            .take()
            .map(|(id, params, columns)| Outcome::Prepared {
                id,
                params,
                columns,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        put_packet(&mut v, seq, payload);
        v
    }

    #[test]
    fn frames_split_and_join_at_16mb() {
        let big = vec![7u8; MAX_FRAME + 10];
        let mut v = Vec::new();
        assert_eq!(put_packet(&mut v, 3, &big), 5);
        assert_eq!(v.len(), big.len() + 8);
        let f = frame(&v).unwrap();
        assert_eq!((f.len, f.seq, f.wire_len), (big.len(), 3, v.len()));
        assert_eq!(frame(&v[..v.len() - 1]), None);
        // Exactly 16 MB - 1 needs an empty second frame.
        let mut w = Vec::new();
        assert_eq!(put_packet(&mut w, 0, &vec![1u8; MAX_FRAME]), 2);
        assert_eq!(w.len(), MAX_FRAME + 8);
        assert_eq!(frame(&w).unwrap().len, MAX_FRAME);
    }

    #[test]
    fn lenenc_round_trips() {
        for v in [
            0u64,
            250,
            251,
            65535,
            65536,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_lenenc(&mut out, v);
            assert_eq!(Rd::new(&out).lenenc("x").unwrap(), v);
        }
        assert!(Rd::new(&[0xff]).lenenc("x").is_err());
        assert!(Rd::new(&[0xfc, 1]).lenenc("x").is_err());
    }

    #[test]
    fn execute_encodes_types_and_values() {
        let mut out = Vec::new();
        com_execute(&mut out, 7, &[Arg::Int(-2), Arg::Str("ab".into())]);
        let f = frame(&out).unwrap();
        let p = &out[f.first.clone()];
        assert_eq!(
            p,
            &[
                0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, // id, flags, iterations
                0, 1, // null bitmap, types follow
                0x08, 0, 0xfd, 0, // longlong, var string
                0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, b'a', b'b'
            ][..]
        );
        let mut out = Vec::new();
        com_close(&mut out, 0x01020304);
        assert_eq!(out, [5, 0, 0, 0, 0x19, 4, 3, 2, 1]);
    }

    #[test]
    fn reader_handles_split_input_and_multi_results() {
        // OK with "more results", then a result set of 2 rows ending in EOF (no DEPRECATE_EOF).
        let mut bytes = pkt(1, &[0, 0, 0, 8, 0, 0, 0]);
        bytes.extend(pkt(2, &[1]));
        bytes.extend(pkt(3, b"\x03def"));
        bytes.extend(pkt(4, &[0xfe, 0, 0, 0, 0]));
        bytes.extend(pkt(5, &[0, 0, 1]));
        bytes.extend(pkt(6, &[0, 0, 2]));
        bytes.extend(pkt(7, &[0xfe, 0, 0, 2, 0]));
        for cut in 0..bytes.len() {
            let mut r = Reader::new(Expect::Result, false);
            let mut buf = bytes[..cut].to_vec();
            let Step::More(n) = r.feed(&buf).unwrap() else {
                panic!("done too early at {cut}")
            };
            buf.drain(..n);
            buf.extend_from_slice(&bytes[cut..]);
            assert_eq!(
                r.feed(&buf).unwrap(),
                Step::Done(
                    buf.len(),
                    Outcome::Done {
                        affected: 0,
                        rows: 2
                    }
                )
            );
        }
    }

    #[test]
    fn parsers_never_panic_on_short_input() {
        let g = pkt(0, b"\x0a5.5\0\x01\0\0\0abcdefgh\0\xff\xf7");
        for n in 0..g.len() {
            let _ = parse_greeting(&g[4..4 + n.min(g.len() - 4)]);
        }
        assert!(parse_err(&[0xff, 1]).is_err());
        assert!(parse_auth_reply(&[0xfe, b'x']).is_err());
    }
}
