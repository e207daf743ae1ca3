//! What the first bytes of a connection `rt` did not see open say about it: the recognisers
//! [`super::proto`] uses to pick up a connection mid-handshake or mid-stream. Each looks at the
//! first captured segment of a run (the bytes one side sent before the other answered) and
//! answers only when the bytes frame exactly as that packet would: a guess that is not sure
//! is no answer, and the connection is then timed by direction until a later run is sure.
//! Pure: bytes in, a verdict out.

use crate::proto::caps;

/// A packet's payload length from its 3-byte header.
fn u24(b: &[u8]) -> usize {
    b[0] as usize | (b[1] as usize) << 8 | (b[2] as usize) << 16
}

/// The packets of `b` when `b` is whole packets exactly (no byte left over, none missing):
/// `(sequence id, payload)` each.
fn whole_packets(b: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut v = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let rest = &b[at..];
        if rest.len() < 4 {
            return None;
        }
        let n = u24(rest);
        if n >= 0xff_ffff || rest.len() < 4 + n {
            return None;
        }
        v.push((rest[3], &rest[4..4 + n]));
        at += 4 + n;
    }
    (!v.is_empty()).then_some(v)
}

/// The server's greeting (HandshakeV10): one packet, sequence 0, protocol 10, a printable
/// version string ended by NUL, then a 4-byte connection id and 8 bytes of nonce.
pub fn is_greeting(b: &[u8]) -> bool {
    let Some(p) = whole_packets(b) else {
        return false;
    };
    let [(0, body)] = p.as_slice() else {
        return false;
    };
    if body.first() != Some(&10) {
        return false;
    }
    let Some(nul) = body[1..].iter().position(|&c| c == 0) else {
        return false;
    };
    let version = &body[1..1 + nul];
    !version.is_empty()
        && version.iter().all(|c| c.is_ascii_graphic())
        && version[0].is_ascii_digit()
        && body.len() > 1 + nul + 1 + 4 + 8
}

/// What a client's login packet says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Login {
    /// The client's capability flags.
    pub caps: u32,
    /// An SSLRequest: the 32-byte head of a login, after which the client starts TLS.
    pub ssl_request: bool,
}

/// The client's login (HandshakeResponse41) or SSLRequest: one packet, sequence 1 (2 after
/// TLS, but that one is encrypted), at least 32 bytes: capability flags with PROTOCOL_41,
/// max packet size, character set, then 23 reserved bytes that are zero (MariaDB keeps its
/// extended capabilities in the last 4 of them, so those may be set).
pub fn login(b: &[u8]) -> Option<Login> {
    let p = whole_packets(b)?;
    let [(1, body)] = p.as_slice() else {
        return None;
    };
    if body.len() < 32 {
        return None;
    }
    let flags = u32::from_le_bytes([body[0], body[1], body[2], body[3]]);
    if flags & caps::PROTOCOL_41 == 0 || body[9..28].iter().any(|&c| c != 0) {
        return None;
    }
    Some(Login {
        caps: flags,
        ssl_request: body.len() == 32 && flags & caps::SSL != 0,
    })
}

/// A TLS record header: content type (change cipher spec 20, alert 21, handshake 22,
/// application data 23), version 3.x, a length a record can have.
pub fn tls_record(b: &[u8]) -> Option<u8> {
    if b.len() < 5 || !(20..=23).contains(&b[0]) || b[1] != 3 || b[2] > 4 {
        return None;
    }
    let n = (b[3] as usize) << 8 | b[4] as usize;
    (n > 0 && n <= 18_432).then_some(b[0])
}

/// Commands a client sends on an open connection (not COM_SLEEP, COM_CONNECT and the other
/// server-internal ones), with the payload length each can have.
fn plausible_command(body: &[u8]) -> bool {
    let Some(&cmd) = body.first() else {
        return false;
    };
    let n = body.len();
    match cmd {
        // COM_QUIT, COM_STATISTICS, COM_PROCESS_INFO, COM_DEBUG, COM_PING, COM_RESET_CONNECTION
        0x01 | 0x09 | 0x0a | 0x0d | 0x0e | 0x1f => n == 1,
        // COM_INIT_DB, COM_QUERY, COM_FIELD_LIST, COM_CREATE_DB, COM_DROP_DB,
        // COM_CHANGE_USER, COM_STMT_PREPARE
        0x02..=0x06 | 0x11 | 0x16 => n >= 2,
        // COM_REFRESH, COM_SHUTDOWN (optional level)
        0x07 | 0x08 => n <= 2,
        // COM_PROCESS_KILL
        0x0c => n == 5,
        // COM_STMT_CLOSE, COM_STMT_RESET
        0x19 | 0x1a => n == 5,
        // COM_SET_OPTION
        0x1b => n == 3,
        // COM_STMT_EXECUTE: id, flags, iteration count
        0x17 => n >= 10,
        // COM_STMT_SEND_LONG_DATA: id, parameter
        0x18 => n >= 7,
        // COM_STMT_FETCH: id, rows
        0x1c => n == 9,
        // COM_BINLOG_DUMP, COM_REGISTER_SLAVE, COM_BINLOG_DUMP_GTID
        0x12 | 0x15 | 0x1e => n >= 4,
        // MariaDB's COM_STMT_BULK_EXECUTE
        0xfa => n >= 7,
        _ => false,
    }
}

/// A client run that starts a request: whole packets, the first a command (sequence 0) a
/// client sends, any more also sequence 0 commands (COM_STMT_CLOSE before an execute).
/// Bytes of the compressed protocol do not pass: their 7-byte header leaves the lengths off
/// by three.
pub fn is_command(b: &[u8]) -> bool {
    match whole_packets(b) {
        Some(p) => p
            .iter()
            .all(|&(seq, body)| seq == 0 && plausible_command(body)),
        None => false,
    }
}

/// Whole packets none of which is sequence 0: a client's auth data after an auth switch
/// (sequence 3, 5, ...), never a request.
pub fn is_auth_data(b: &[u8]) -> bool {
    whole_packets(b).is_some_and(|p| p.iter().all(|&(seq, _)| seq != 0 && seq % 2 == 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seq: u8, body: &[u8]) -> Vec<u8> {
        let n = body.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        v.extend_from_slice(body);
        v
    }

    /// The compressed protocol's frame of `inner` sent uncompressed (uncompressed length 0).
    fn compressed(seq: u8, inner: &[u8]) -> Vec<u8> {
        let n = inner.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq, 0, 0, 0];
        v.extend_from_slice(inner);
        v
    }

    #[test]
    fn greeting_login_and_commands_are_told_apart() {
        let mut g = b"\x0a10.11.19-MariaDB\0".to_vec();
        g.extend_from_slice(&[1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0xfe, 0xf7]);
        assert!(is_greeting(&pkt(0, &g)));
        assert!(!is_greeting(&pkt(1, &g)), "sequence 1");
        assert!(!is_greeting(&pkt(0, b"\x0a\0")), "no version");
        let mut login_body = (caps::PROTOCOL_41 | caps::COMPRESS).to_le_bytes().to_vec();
        login_body.extend_from_slice(&[0, 0, 0, 1, 45]);
        login_body.extend_from_slice(&[0; 23]);
        login_body.extend_from_slice(b"root\0");
        let l = login(&pkt(1, &login_body)).unwrap();
        assert!(!l.ssl_request && l.caps & caps::COMPRESS != 0);
        let ssl = login(&pkt(1, &{
            let mut s = (caps::PROTOCOL_41 | caps::SSL).to_le_bytes().to_vec();
            s.extend_from_slice(&[0; 28]);
            s
        }))
        .unwrap();
        assert!(ssl.ssl_request);
        assert!(
            !is_command(&pkt(1, &login_body)),
            "a login is not a request"
        );
        assert!(
            is_auth_data(&pkt(3, &[])),
            "an empty auth reply after a switch"
        );
        assert!(!is_auth_data(&pkt(0, b"\x03SELECT 1")));
        let q = pkt(0, b"\x03SELECT 1");
        assert!(is_command(&q));
        assert!(login(&q).is_none());
        assert!(!is_command(&compressed(0, &q)), "compressed is not plain");
        assert!(!is_command(&pkt(0, &[0])), "COM_SLEEP");
        assert!(!is_command(&q[..q.len() - 1]), "a cut packet is not sure");
        let mut two = pkt(0, &[0x19, 1, 0, 0, 0]);
        two.extend(pkt(0, &[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
        assert!(is_command(&two));
        assert_eq!(tls_record(&[0x16, 3, 1, 0, 0xf4, 1]), Some(22));
        assert_eq!(tls_record(&q), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = (is_greeting(&b), login(&b), tls_record(&b), is_command(&b));
        }
    }
}
