//! A connection spoken with [`crate::proto`]: the handshake (TLS included, see
//! [`super::tls`]) and the setup commands are done blocking (with the target's timeouts); the
//! event client then sets the socket nonblocking and drives it itself, sealing each request
//! ([`WireConn::seal`]) and feeding what it reads to [`WireConn::take_wire`].

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use crate::proto::answer::{Answer, Outcome, Progress};
use crate::proto::command::{self, AuthReply};
use crate::proto::packet::{self, Flow, PacketReader, MAX_PAYLOAD};
use crate::proto::{caps, com, Malformed, ServerError};

use super::tls::{self, TlsSession, Verify};

/// Where and as whom to connect (never printed with the password).
#[derive(Clone)]
pub struct Endpoint {
    pub socket: Option<PathBuf>,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub db: Option<String>,
    pub connect_timeout: Duration,
    pub query_timeout: Duration,
    /// Whether TLS is wanted (`--ssl-mode`), as the thread client decides it.
    pub tls: Tls,
    /// How the server's certificate is checked when TLS is used.
    pub verify: Verify,
    /// Ask for CLIENT_DEPRECATE_EOF when the server offers it (result sets end in OK instead
    /// of EOF); off only to test the EOF path.
    pub deprecate_eof: bool,
}

/// The TLS wish of `--ssl-mode`, as far as this client cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// DISABLED, or a Unix socket (the mysql client never uses TLS there).
    No,
    /// PREFERRED: plain only when the server offers no TLS (or the TLS handshake fails, as
    /// the thread client falls back).
    IfOffered,
    /// REQUIRED, VERIFY_CA, VERIFY_IDENTITY.
    Must,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.socket {
            Some(s) => write!(f, "Endpoint({}@{})", self.user, s.display()),
            None => write!(f, "Endpoint({}@{}:{})", self.user, self.host, self.port),
        }
    }
}

/// What can go wrong on a connection of this client.
#[derive(Debug)]
pub enum WireError {
    Server(ServerError),
    Io(io::Error),
    Protocol(Malformed),
    /// Something this client does not speak (an auth plugin, full caching_sha2 auth over
    /// plain TCP).
    Unsupported(String),
    /// TLS could not be set up: the server offers none where `--ssl-mode` requires it, the
    /// handshake failed, or the certificate was rejected.
    Tls(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The same text as the thread client's errors (`describe_error`).
            WireError::Server(e) => write!(f, "ERROR {}: {}", e.code, e.message),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Protocol(m) => write!(f, "{m}"),
            WireError::Unsupported(s) => write!(f, "{s}"),
            WireError::Tls(s) => write!(f, "TLS: {s}"),
        }
    }
}

impl WireError {
    /// The server's error code, if it was the server's error.
    pub fn code(&self) -> Option<u16> {
        match self {
            WireError::Server(e) => Some(e.code),
            _ => None,
        }
    }
    /// The error class the step counts it under: the code, "io" or "driver".
    pub fn key(&self) -> String {
        match self {
            WireError::Server(e) => e.code.to_string(),
            WireError::Io(_) => "io".into(),
            _ => "driver".into(),
        }
    }
    /// Whether the connection is gone (as `crate::error::is_connection_error`).
    pub fn is_connection_error(&self) -> bool {
        match self {
            WireError::Server(e) => matches!(e.code, 1053 | 1927 | 4031),
            _ => true,
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}
impl From<tls::TlsError> for WireError {
    fn from(e: tls::TlsError) -> Self {
        match e {
            tls::TlsError::Tls(s) => WireError::Tls(s),
            tls::TlsError::Io(e) => WireError::Io(e),
        }
    }
}
impl From<Malformed> for WireError {
    fn from(e: Malformed) -> Self {
        WireError::Protocol(e)
    }
}

/// A Unix or TCP socket.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
    fn set_timeouts(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => {
                s.set_read_timeout(d)?;
                s.set_write_timeout(d)
            }
            Stream::Tcp(s) => {
                s.set_read_timeout(d)?;
                s.set_write_timeout(d)
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(b),
            Stream::Tcp(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(b),
            Stream::Tcp(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Bytes of each answer packet kept: an ERR with its whole message, an OK, a column count,
/// the prepare answer's header (rows are counted, never kept).
const KEEP: usize = 1024;
/// Bytes of a handshake packet kept (a greeting, an auth switch, an RSA public key).
const HANDSHAKE_MAX: usize = 64 * 1024;

/// An authenticated connection.
#[derive(Debug)]
pub struct WireConn {
    pub stream: Stream,
    /// CLIENT_DEPRECATE_EOF was agreed (result sets end in OK, not EOF).
    pub deprecate_eof: bool,
    pub connection_id: u32,
    pub server_version: String,
    /// The `--query-timeout` it was opened with: the longest wait for one answer.
    pub query_timeout: Duration,
    /// The packets read from the server so far (a packet may end in a later read).
    packets: PacketReader,
    /// The answer awaited; None when no request is out.
    answer: Option<Answer>,
    /// An error the server sent unasked (e.g. when the connection was killed); the server
    /// closes the connection after it.
    pub unsolicited: Option<ServerError>,
    /// The TLS session over `stream`, when TLS is on.
    tls: Option<Box<TlsSession>>,
    /// Protocol bytes opened from TLS records, before [`WireConn::take`] reads them.
    plain: Vec<u8>,
}

const WANT: u32 = caps::LONG_PASSWORD
    | caps::LONG_FLAG
    | caps::PROTOCOL_41
    | caps::TRANSACTIONS
    | caps::SECURE_CONNECTION
    | caps::MULTI_RESULTS
    | caps::PS_MULTI_RESULTS
    | caps::PLUGIN_AUTH
    | caps::PLUGIN_AUTH_LENENC_DATA
    | caps::DEPRECATE_EOF;

/// The auth response of `plugin` to `nonce`.
fn scramble(plugin: &str, nonce: &[u8], password: &str) -> Result<Vec<u8>, WireError> {
    use mysql_common::scramble::{scramble_native, scramble_sha256};
    let pw = password.as_bytes();
    match plugin {
        "mysql_native_password" | "" => Ok(scramble_native(nonce, pw)
            .map(|s| s.to_vec())
            .unwrap_or_default()),
        "caching_sha2_password" => Ok(scramble_sha256(nonce, pw)
            .map(|s| s.to_vec())
            .unwrap_or_default()),
        other => Err(WireError::Unsupported(format!(
            "the events client does not speak the auth plugin {other}"
        ))),
    }
}

/// The blocking reads of the handshake: one packet at a time, sequence ids checked.
struct Handshake {
    packets: PacketReader,
    /// Bytes read but not yet framed.
    pending: Vec<u8>,
    /// The TLS session, once the SSLRequest was answered with a TLS handshake.
    tls: Option<Box<TlsSession>>,
    /// The sequence id of the next packet sent: after the last one read, or after the last
    /// one sent (the SSLRequest is followed by the handshake response).
    out_seq: u8,
}

impl Handshake {
    fn new() -> Handshake {
        let mut packets = PacketReader::new(HANDSHAKE_MAX, HANDSHAKE_MAX);
        packets.expect_seq(Some(0));
        Handshake {
            packets,
            pending: Vec::new(),
            tls: None,
            out_seq: 0,
        }
    }

    /// Read the next packet: (its sequence id, its payload).
    fn read(&mut self, s: &mut Stream) -> Result<(u8, Vec<u8>), WireError> {
        loop {
            let mut got = None;
            let used = self.packets.feed(&self.pending, |p| {
                got = Some((p.seq, p.head.to_vec()));
                Flow::Stop
            })?;
            self.pending.drain(..used);
            if let Some(g) = got {
                self.out_seq = self.packets.next_seq();
                return Ok(g);
            }
            match self.tls.as_mut() {
                Some(t) => t.recv_blocking(s, &mut self.pending)?,
                None => fill(s, &mut self.pending)?,
            }
        }
    }

    /// Send `payload` as the packet that follows the last one read.
    fn send(&mut self, s: &mut Stream, payload: &[u8]) -> Result<(), WireError> {
        let mut out = Vec::with_capacity(payload.len() + 4);
        let next = packet::put_packet(&mut out, self.out_seq, payload);
        self.out_seq = next;
        self.packets.expect_seq(Some(next));
        match self.tls.as_mut() {
            Some(t) => t.send_blocking(s, &out)?,
            None => s.write_all(&out)?,
        }
        Ok(())
    }
}

fn fill(s: &mut Stream, buf: &mut Vec<u8>) -> Result<(), WireError> {
    let mut tmp = [0u8; 16384];
    let n = s.read(&mut tmp)?;
    if n == 0 {
        return Err(closed());
    }
    buf.extend_from_slice(&tmp[..n]);
    Ok(())
}

/// The error of a connection the server closed.
pub fn closed() -> WireError {
    WireError::Io(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the server closed the connection",
    ))
}

fn open(ep: &Endpoint) -> Result<Stream, WireError> {
    let stream = match &ep.socket {
        Some(p) => Stream::Unix(UnixStream::connect(p)?),
        None => {
            use std::net::ToSocketAddrs;
            let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
            let mut got = None;
            for a in (ep.host.as_str(), ep.port).to_socket_addrs()? {
                match TcpStream::connect_timeout(&a, ep.connect_timeout) {
                    Ok(s) => {
                        got = Some(s);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            let s = got.ok_or(last)?;
            s.set_nodelay(true)?;
            Stream::Tcp(s)
        }
    };
    stream.set_timeouts(Some(ep.connect_timeout))?;
    Ok(stream)
}

/// Connect, authenticate, and leave the socket blocking with the query timeout. With
/// PREFERRED a failed TLS handshake is followed by a plain connection, as the thread client
/// does.
pub fn connect(ep: &Endpoint) -> Result<WireConn, WireError> {
    match connect_with(ep, ep.tls) {
        Err(WireError::Tls(_)) if ep.tls == Tls::IfOffered => connect_with(ep, Tls::No),
        other => other,
    }
}

fn connect_with(ep: &Endpoint, tls: Tls) -> Result<WireConn, WireError> {
    let mut stream = open(ep)?;
    let mut hs = Handshake::new();
    let (_, p) = hs.read(&mut stream)?;
    let g = command::parse_greeting(&p)?.map_err(WireError::Server)?;
    if g.caps & caps::PROTOCOL_41 == 0 || g.caps & caps::SECURE_CONNECTION == 0 {
        return Err(WireError::Unsupported(
            "the server does not speak protocol 4.1 authentication".into(),
        ));
    }
    let offers_tls = g.caps & caps::SSL != 0;
    let use_tls = match tls {
        Tls::No => false,
        Tls::IfOffered => offers_tls,
        Tls::Must if offers_tls => true,
        Tls::Must => {
            return Err(WireError::Tls(
                "the server does not offer TLS and --ssl-mode requires it".into(),
            ))
        }
    };
    let mut want = WANT;
    if !ep.deprecate_eof {
        want &= !caps::DEPRECATE_EOF;
    }
    if ep.db.is_some() {
        want |= caps::CONNECT_WITH_DB;
    }
    let mut agreed = want & g.caps;
    if use_tls {
        agreed |= caps::SSL;
        let config = tls::config(&ep.verify)?;
        hs.send(&mut stream, &command::ssl_request(agreed))?;
        let session = TlsSession::handshake(&mut stream, config, &ep.host)?;
        hs.tls = Some(Box::new(session));
    }
    authenticate(ep, &mut stream, &mut hs, &g, agreed)?;
    stream.set_timeouts(Some(ep.query_timeout))?;
    let mut c = WireConn {
        stream,
        deprecate_eof: agreed & caps::DEPRECATE_EOF != 0,
        connection_id: g.connection_id,
        server_version: g.server_version,
        query_timeout: ep.query_timeout,
        packets: PacketReader::new(KEEP, MAX_PAYLOAD),
        answer: None,
        unsolicited: None,
        tls: hs.tls.take(),
        plain: Vec::new(),
    };
    // Anything the server sent after its OK was sent unasked.
    if !hs.pending.is_empty() {
        c.take(&hs.pending)?;
    }
    Ok(c)
}

/// The login after the greeting: the handshake response, auth switches and the
/// caching_sha2_password exchange, until the server's OK.
fn authenticate(
    ep: &Endpoint,
    s: &mut Stream,
    hs: &mut Handshake,
    g: &command::Greeting,
    agreed: u32,
) -> Result<(), WireError> {
    let password = ep.password.clone().unwrap_or_default();
    let mut plugin = if g.plugin.is_empty() {
        "mysql_native_password".to_string()
    } else {
        g.plugin.clone()
    };
    // An unknown default plugin: answer as mysql_native_password and let the server switch.
    let auth = match scramble(&plugin, &g.nonce, &password) {
        Ok(a) => a,
        Err(_) => {
            plugin = "mysql_native_password".into();
            scramble(&plugin, &g.nonce, &password)?
        }
    };
    let resp = command::handshake_response(agreed, &ep.user, &auth, ep.db.as_deref(), &plugin);
    hs.send(s, &resp)?;
    loop {
        let (_, p) = hs.read(s)?;
        match command::parse_auth_reply(&p)? {
            AuthReply::Ok => return Ok(()),
            AuthReply::Err(e) => return Err(WireError::Server(e)),
            AuthReply::Switch {
                plugin: name,
                nonce,
            } => {
                let a = scramble(&name, &nonce, &password)?;
                plugin = name;
                hs.send(s, &a)?;
            }
            AuthReply::More(d) if plugin == "caching_sha2_password" => match d.first() {
                Some(3) => {} // fast auth done; the OK follows
                Some(4) if matches!(s, Stream::Unix(_)) || hs.tls.is_some() => {
                    // Full authentication: the password in clear, on a local socket or
                    // inside TLS.
                    let mut pw = password.clone().into_bytes();
                    pw.push(0);
                    hs.send(s, &pw)?;
                }
                _ => {
                    return Err(WireError::Unsupported(
                        "caching_sha2_password full authentication over plain TCP needs TLS (--ssl-mode) or RSA, which the events client does not speak".into(),
                    ))
                }
            },
            AuthReply::More(_) => {
                return Err(WireError::Unsupported(format!(
                    "unexpected data from the auth plugin {plugin}"
                )))
            }
        }
    }
}

impl WireConn {
    /// Whether the connection speaks TLS.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Make the request in `out` ready for the socket: its TLS records when TLS is on
    /// (nothing changes otherwise). Done once per request, before its first byte is written.
    pub fn seal(&mut self, out: &mut Vec<u8>) -> Result<(), WireError> {
        match self.tls.as_mut() {
            Some(t) => Ok(t.seal(out)?),
            None => Ok(()),
        }
    }

    /// [`WireConn::take`] of the bytes a socket read: opened first when TLS is on.
    pub fn take_wire(&mut self, raw: &[u8]) -> Result<Option<Outcome>, WireError> {
        let Some(t) = self.tls.as_mut() else {
            return self.take(raw);
        };
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        let r = match t.open(raw, &mut plain) {
            Ok(()) => self.take(&plain),
            Err(e) => Err(e.into()),
        };
        self.plain = plain;
        r
    }

    /// Write a whole request (blocking), sealed when TLS is on.
    fn send(&mut self, out: &[u8]) -> Result<(), WireError> {
        match self.tls.as_mut() {
            Some(t) => Ok(t.send_blocking(&mut self.stream, out)?),
            None => Ok(self.stream.write_all(out)?),
        }
    }

    /// The request for command `cmd` was (or is about to be) written: its answer is awaited,
    /// starting at sequence id 1.
    pub fn asked(&mut self, cmd: u8) {
        self.answer = Some(Answer::new(cmd, self.deprecate_eof));
        self.packets.expect_seq(Some(1));
    }

    /// Whether an answer is awaited.
    pub fn awaiting(&self) -> bool {
        self.answer.is_some()
    }

    /// Read `bytes` the server sent: the awaited answer, when they complete it. Packets that
    /// come when no answer is awaited were sent unasked: an error is kept in
    /// [`WireConn::unsolicited`] (the server closes the connection after it), anything else
    /// is a protocol error; so bytes after a complete answer are never taken for the next one.
    pub fn take(&mut self, bytes: &[u8]) -> Result<Option<Outcome>, WireError> {
        let mut done = None;
        let mut bad = None;
        let mut at = 0;
        while at < bytes.len() && bad.is_none() {
            let (answer, unsolicited) = (&mut self.answer, &mut self.unsolicited);
            at += self.packets.feed(&bytes[at..], |p| {
                let Some(a) = answer.as_mut() else {
                    match crate::proto::parse_err(p.head) {
                        Ok(e) if p.whole() => *unsolicited = Some(e),
                        _ => {
                            bad = Some(Malformed("a packet the server sent unasked"));
                            return Flow::Stop;
                        }
                    }
                    return Flow::Go;
                };
                match a.packet(&p) {
                    Progress::More => return Flow::Go,
                    Progress::Done(o) => done = Some(o),
                    Progress::Unreadable(why) => bad = Some(Malformed(why)),
                }
                *answer = None;
                Flow::Stop
            })?;
            if self.answer.is_none() {
                // Whatever follows was not asked for: its sequence id is not checked.
                self.packets.expect_seq(None);
            }
        }
        match bad {
            Some(m) => Err(WireError::Protocol(m)),
            None => Ok(done),
        }
    }

    /// Send `out` (a request for `cmd`) and read its answer (blocking).
    pub fn roundtrip(&mut self, out: &[u8], cmd: u8) -> Result<Outcome, WireError> {
        self.asked(cmd);
        self.send(out)?;
        let mut buf = [0u8; 16384];
        loop {
            let n = self.stream.read(&mut buf)?;
            if n == 0 {
                return Err(closed());
            }
            if let Some(o) = self.take_wire(&buf[..n])? {
                return Ok(o);
            }
        }
    }

    /// COM_STMT_PREPARE: the statement id and its parameter count.
    pub fn prepare(&mut self, sql: &str) -> Result<(u32, u16), WireError> {
        let mut out = Vec::with_capacity(sql.len() + 5);
        command::com_prepare(&mut out, sql);
        match self.roundtrip(&out, com::STMT_PREPARE)? {
            Outcome::Prepared { id, params, .. } => Ok((id, params)),
            Outcome::Err(e) => Err(WireError::Server(e)),
            Outcome::Done { .. } => Err(WireError::Protocol(Malformed(
                "no statement id in the answer to prepare",
            ))),
        }
    }

    /// COM_QUERY of a statement without rows of interest: rows affected.
    pub fn query(&mut self, sql: &str) -> Result<u64, WireError> {
        let mut out = Vec::with_capacity(sql.len() + 5);
        command::com_query(&mut out, sql);
        match self.roundtrip(&out, com::QUERY)? {
            Outcome::Done { affected, .. } => Ok(affected),
            Outcome::Err(e) => Err(WireError::Server(e)),
            Outcome::Prepared { .. } => Err(WireError::Protocol(Malformed(
                "a statement id in the answer to a query",
            ))),
        }
    }

    /// COM_STMT_CLOSE (no answer).
    pub fn close(&mut self, id: u32) -> Result<(), WireError> {
        let mut out = Vec::with_capacity(9);
        command::com_close(&mut out, id);
        self.send(&out)
    }
}
