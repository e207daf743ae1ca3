//! The MySQL classic protocol, once, for every part of spinscope that reads or writes it
//! without the mysql crate: the events load client (`load::wire`) and the packet reader of
//! `rt` (`rt::proto`). Pure: no I/O, no clock, and no import from the rest of the crate, and
//! its own crate (`spinscope-proto`), so Cargo keeps it so; spinscope re-exports it as
//! `spinscope::proto`.
//!
//! - [`packet`]: the packet reader (sequence ids checked, payload size capped, payloads over
//!   16 MiB joined) and writer, and the length-encoded integers (mysql_common's).
//! - [`answer`]: the command/response model: which packets answer a command and what they
//!   said (OK, ERR, result set, prepare answer), read packet by packet.
//! - [`command`]: what a client sends (handshake response, COM_QUERY, COM_STMT_*) and the
//!   handshake packets it reads (greeting, auth replies; parsed by mysql_common).
//!
//! Every parser takes untrusted bytes and returns an error instead of panicking.

pub mod answer;
pub mod command;
pub mod packet;

use std::fmt;

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

/// Command bytes (the protocol's names).
pub mod com {
    pub const QUIT: u8 = 0x01;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const STATISTICS: u8 = 0x09;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_FETCH: u8 = 0x1c;
    /// MariaDB's bulk execute.
    pub const STMT_BULK_EXECUTE: u8 = 0xfa;
}

/// Capability flags (the protocol's names).
pub mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const COMPRESS: u32 = 1 << 5;
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

/// Status flag of OK/EOF: another result follows this one.
pub const MORE_RESULTS_EXIST: u16 = 0x0008;

/// An ERR payload (first byte 0xff), read by mysql_common; a message cut short (an observer
/// keeps only a packet's first bytes) is kept as far as it goes.
pub fn parse_err(p: &[u8]) -> Result<ServerError, Malformed> {
    use mysql_common::constants::CapabilityFlags;
    use mysql_common::io::ParseBuf;
    use mysql_common::packets::ErrPacket;
    use mysql_common::proto::MyDeserialize;
    let e = ErrPacket::deserialize(CapabilityFlags::CLIENT_PROTOCOL_41, &mut ParseBuf(p))
        .map_err(|_| Malformed("not an error packet"))?;
    let ErrPacket::Error(e) = e else {
        return Err(Malformed("a progress report where an error was due"));
    };
    Ok(ServerError {
        code: e.error_code(),
        state: e.sql_state_ref().map_or_else(
            || "HY000".to_string(),
            |s| String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        ),
        message: e.message_str().into_owned(),
    })
}
