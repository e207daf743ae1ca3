//! What a client sends (the handshake response, COM_QUERY, COM_STMT_PREPARE, COM_STMT_EXECUTE
//! with binary parameters, COM_STMT_CLOSE) and the handshake packets it reads: HandshakeV10
//! and the replies during authentication (OK, ERR, auth switch, more data), parsed by
//! mysql_common.

use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthMoreData, AuthSwitchRequest, HandshakePacket};
use mysql_common::proto::MyDeserialize;

use super::packet::{put_lenenc, put_packet, MAX_FRAME};
use super::{caps, com, parse_err, Malformed, ServerError};

const TYPE_LONGLONG: u8 = 0x08;
const TYPE_VAR_STRING: u8 = 0xfd;
/// utf8mb4_general_ci
pub const CHARSET: u8 = 45;

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
    if p.first() != Some(&10) {
        return Err(Malformed("not protocol version 10"));
    }
    let g = HandshakePacket::deserialize((), &mut ParseBuf(p))
        .map_err(|_| Malformed("a short greeting"))?;
    let mut nonce = g.scramble_1_ref().to_vec();
    let part2 = g.scramble_2_ref().unwrap_or_default();
    nonce.extend_from_slice(part2.strip_suffix(&[0]).unwrap_or(part2));
    Ok(Ok(Greeting {
        server_version: g.server_version_str().into_owned(),
        connection_id: g.connection_id(),
        caps: g.capabilities().bits(),
        nonce,
        plugin: g
            .auth_plugin_name_str()
            .map(|s| s.into_owned())
            .unwrap_or_default(),
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
    ssl_request_into(&mut out, caps);
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

/// The SSLRequest payload (the first 32 bytes of a handshake response: capabilities, largest
/// packet, character set, filler); the TLS handshake follows it.
pub fn ssl_request(caps: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    ssl_request_into(&mut out, caps | caps::SSL);
    out
}

fn ssl_request_into(out: &mut Vec<u8>, caps: u32) {
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(16u32 << 20).to_le_bytes());
    out.push(CHARSET);
    out.extend_from_slice(&[0u8; 23]);
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
    /// Plugin-specific data (caching_sha2_password: 3 fast auth done, 4 full auth needed,
    /// or the server's RSA public key).
    More(Vec<u8>),
}

pub fn parse_auth_reply(p: &[u8]) -> Result<AuthReply, Malformed> {
    match p.first() {
        Some(0x00) => Ok(AuthReply::Ok),
        Some(0xff) => parse_err(p).map(AuthReply::Err),
        // The old switch to mysql_old_password: not spoken.
        Some(0xfe) if p.len() == 1 => Ok(AuthReply::Switch {
            plugin: "mysql_old_password".into(),
            nonce: Vec::new(),
        }),
        Some(0xfe) => {
            let s = AuthSwitchRequest::deserialize((), &mut ParseBuf(p))
                .map_err(|_| Malformed("a short auth switch request"))?;
            Ok(AuthReply::Switch {
                plugin: String::from_utf8_lossy(s.auth_plugin().as_bytes()).into_owned(),
                nonce: s.plugin_data().to_vec(),
            })
        }
        Some(0x01) => {
            let m = AuthMoreData::deserialize((), &mut ParseBuf(p))
                .map_err(|_| Malformed("a short auth data packet"))?;
            Ok(AuthReply::More(m.data().to_vec()))
        }
        _ => Err(Malformed("unexpected packet during authentication")),
    }
}

/// COM_QUERY.
pub fn com_query(out: &mut Vec<u8>, sql: &str) {
    command(out, com::QUERY, sql.as_bytes());
}

/// COM_STMT_PREPARE.
pub fn com_prepare(out: &mut Vec<u8>, sql: &str) {
    command(out, com::STMT_PREPARE, sql.as_bytes());
}

/// COM_STMT_CLOSE (the server sends no answer).
pub fn com_close(out: &mut Vec<u8>, id: u32) {
    command(out, com::STMT_CLOSE, &id.to_le_bytes());
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
    p.push(com::STMT_EXECUTE);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_encodes_types_and_values() {
        let mut out = Vec::new();
        com_execute(&mut out, 7, &[Arg::Int(-2), Arg::Str("ab".into())]);
        assert_eq!(
            &out[4..],
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
    fn parsers_never_panic_on_short_input() {
        let g = b"\x0a5.5\0\x01\0\0\0abcdefgh\0\xff\xf7";
        for n in 0..g.len() {
            let _ = parse_greeting(&g[..n]);
        }
        assert!(parse_err(&[0xff, 1]).is_err());
        assert!(parse_auth_reply(&[0xfe, b'x']).is_err());
    }
}
