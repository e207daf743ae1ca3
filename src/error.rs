//! The library's error type and the exit codes of DESIGN.md.
//!
//! Every error says what was wrong and what to do, on one line. Bad input (a flag, a file, a
//! value out of range) exits 2; runtime failures (a server unreachable, perf missing, a
//! syscall refused) exit 3. Exit 1 is reserved for `doctor --fail-on`.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | doctor findings at or above `--fail-on` |
//! | 2 | bad input, or a refusal to act (a schema spinscope does not own, a variable another spinscope holds or left changed) |
//! | 3 | runtime failure (server unreachable, access denied, perf missing, a restore that failed) |
//! | 130 | interrupted (SIGINT, SIGTERM, SIGHUP or SIGQUIT) after putting back what was changed, or at once on a second signal |

use std::fmt;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: doctor findings at or above `--fail-on`.
pub const EXIT_FINDINGS: i32 = 1;
/// Exit code: bad input (usage, file, value out of range).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code: runtime failure (server unreachable, access denied, perf missing).
pub const EXIT_RUNTIME: i32 = 3;
/// Exit code: interrupted by a signal (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user gave something we cannot use; the message names the input and the fix.
    #[error("{0}")]
    BadInput(String),
    /// The environment failed us; the message says what failed and what to try.
    #[error("{0}")]
    Runtime(String),
}

impl Error {
    pub fn bad_input(msg: impl fmt::Display) -> Self {
        Error::BadInput(msg.to_string())
    }
    pub fn runtime(msg: impl fmt::Display) -> Self {
        Error::Runtime(msg.to_string())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) => EXIT_BAD_INPUT,
            Error::Runtime(_) => EXIT_RUNTIME,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// A short, password-free description of a client error, and its MySQL error code if any.
pub fn describe_error(e: &mysql::Error) -> (Option<u16>, String) {
    match e {
        mysql::Error::MySqlError(m) => (Some(m.code), format!("ERROR {}: {}", m.code, m.message)),
        e if is_timeout(e) => (
            None,
            "no answer within the timeout (--query-timeout; the server stopped or hangs?)".into(),
        ),
        other => (None, other.to_string()),
    }
}

/// Whether a client error is a read or write that ran into the socket's timeout: the server
/// is there but does not answer (stopped, hung), so trying again only waits as long again.
pub fn is_timeout(e: &mysql::Error) -> bool {
    use mysql_common::proto::codec::error::PacketCodecError;
    let io = match e {
        mysql::Error::IoError(io) | mysql::Error::CodecError(PacketCodecError::Io(io)) => io,
        _ => return false,
    };
    matches!(
        io.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Whether an error means the connection is gone (reconnect) rather than the statement failed.
pub fn is_connection_error(e: &mysql::Error) -> bool {
    match e {
        // 1053 server shutdown, 1927 connection killed, 4031 idle disconnect.
        mysql::Error::MySqlError(m) => matches!(m.code, 1053 | 1927 | 4031),
        mysql::Error::IoError(_) | mysql::Error::CodecError(_) => true,
        mysql::Error::DriverError(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_timeout_is_told_apart_from_a_broken_connection() {
        use mysql_common::proto::codec::error::PacketCodecError;
        use std::io::{Error as Io, ErrorKind};
        let codec = |k| mysql::Error::CodecError(PacketCodecError::Io(Io::new(k, "x")));
        assert!(is_timeout(&mysql::Error::IoError(Io::new(
            ErrorKind::WouldBlock,
            "x"
        ))));
        assert!(is_timeout(&codec(ErrorKind::WouldBlock)));
        assert!(is_timeout(&codec(ErrorKind::TimedOut)));
        assert!(!is_timeout(&codec(ErrorKind::BrokenPipe)));
        assert!(is_connection_error(&codec(ErrorKind::WouldBlock)));
        let (code, text) = describe_error(&codec(ErrorKind::WouldBlock));
        assert_eq!(code, None);
        assert!(text.contains("no answer within the timeout"), "{text}");
    }
}
