//! The shared protocol module (`spinscope::proto`: packet reader, answer model, handshake
//! parsers) on a real server's bytes (fixtures recorded from MariaDB 10.11.19 by
//! `tests/fixtures/wire/capture.py`, with and without CLIENT_DEPRECATE_EOF), fed whole and one
//! byte at a time, and never panicking on arbitrary input.

use std::collections::HashMap;

use proptest::prelude::*;
use spinscope::proto::answer::{Answer, Outcome, Progress};
use spinscope::proto::command::{parse_auth_reply, parse_greeting, AuthReply};
use spinscope::proto::packet::{put_packet, Flow, PacketReader, MAX_PAYLOAD};
use spinscope::proto::{caps, com, parse_err};

fn fixture(name: &str) -> HashMap<String, Vec<u8>> {
    let path = format!("{}/tests/fixtures/wire/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .map(|l| {
            let (k, hex) = l.split_once(' ').unwrap();
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (k.to_string(), bytes)
        })
        .collect()
}

/// The packets of `bytes` (sequence ids counted on from `first`): (seq, payload).
fn packets(bytes: &[u8], first: u8) -> Vec<(u8, Vec<u8>)> {
    let mut r = PacketReader::new(1 << 16, MAX_PAYLOAD);
    r.expect_seq(Some(first));
    let mut got = Vec::new();
    let used = r
        .feed(bytes, |p| {
            got.push((p.seq, p.head.to_vec()));
            Flow::Go
        })
        .unwrap();
    assert_eq!(used, bytes.len());
    assert!(!r.mid_packet());
    got
}

/// Read the answer in `bytes` as `pieces` decides (whole, or a byte at a time); returns it
/// and the index of the byte that completed it.
fn read_in(bytes: &[u8], cmd: u8, deprecate_eof: bool, piece: usize) -> (Outcome, usize) {
    let mut r = PacketReader::new(1024, MAX_PAYLOAD);
    r.expect_seq(Some(1));
    let mut a = Answer::new(cmd, deprecate_eof);
    let mut got = None;
    for (k, chunk) in bytes.chunks(piece).enumerate() {
        let mut done = None;
        let used = r
            .feed(chunk, |p| {
                match a.packet(&p) {
                    Progress::More => return Flow::Go,
                    Progress::Done(o) => done = Some(o),
                    Progress::Unreadable(why) => panic!("{why}"),
                }
                Flow::Stop
            })
            .unwrap();
        if let Some(o) = done {
            assert!(got.is_none(), "two answers");
            assert_eq!(used, chunk.len(), "bytes left after the answer");
            got = Some((o, k * piece + used));
        }
    }
    got.expect("incomplete answer")
}

/// Feed the whole answer, then again one byte at a time; both must agree and end at the
/// last byte.
fn read(bytes: &[u8], cmd: u8, deprecate_eof: bool) -> Outcome {
    let (whole, end) = read_in(bytes, cmd, deprecate_eof, bytes.len());
    assert_eq!(end, bytes.len());
    let (bytewise, end) = read_in(bytes, cmd, deprecate_eof, 1);
    assert_eq!(end, bytes.len(), "done before the last byte");
    assert_eq!(bytewise, whole);
    whole
}

fn check_session(file: &str, deprecate_eof: bool) {
    let f = fixture(file);
    let g = packets(&f["greeting"], 0);
    assert_eq!(g.len(), 1);
    let greet = parse_greeting(&g[0].1).unwrap().unwrap();
    assert_eq!(greet.server_version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
    assert_eq!(greet.plugin, "mysql_native_password");
    assert_eq!(greet.nonce.len(), 20);
    assert!(greet.caps & caps::PROTOCOL_41 != 0 && greet.caps & caps::DEPRECATE_EOF != 0);
    let ok = packets(&f["auth_ok"], 2);
    assert_eq!(parse_auth_reply(&ok[0].1).unwrap(), AuthReply::Ok);

    let prep = |k: &str| read(&f[k], com::STMT_PREPARE, deprecate_eof);
    let res = |k: &str| read(&f[k], com::STMT_EXECUTE, deprecate_eof);
    let query = |k: &str| read(&f[k], com::QUERY, deprecate_eof);
    let done = |affected, rows| Outcome::Done { affected, rows };
    let shape = |o: Outcome| match o {
        Outcome::Prepared {
            params, columns, ..
        } => (params, columns),
        other => panic!("{other:?}"),
    };
    assert_eq!(shape(prep("prepare_point")), (1, 1));
    assert_eq!(shape(prep("prepare_range")), (2, 1));
    assert_eq!(shape(prep("prepare_update")), (1, 0));
    assert_eq!(shape(prep("prepare_no_params")), (0, 1));
    assert_eq!(res("execute_point_row"), done(0, 1));
    assert_eq!(res("execute_point_empty"), done(0, 0));
    assert_eq!(res("execute_range_3"), done(0, 3));
    assert_eq!(res("execute_update"), done(1, 0));
    assert_eq!(res("execute_no_params"), done(0, 1));
    assert_eq!(query("query_begin"), done(0, 0));
    assert_eq!(query("query_rollback"), done(0, 0));
    match query("query_error") {
        Outcome::Err(e) => {
            assert_eq!((e.code, e.state.as_str()), (1064, "42000"));
            assert!(e.message.contains("SQL syntax"), "{}", e.message);
        }
        o => panic!("{o:?}"),
    }
    match prep("prepare_error") {
        Outcome::Err(e) => {
            assert_eq!((e.code, e.state.as_str()), (1054, "42S22"));
            assert_eq!(e.message, "Unknown column 'nope' in 'SELECT'");
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn mariadb_session_with_deprecate_eof() {
    check_session("mariadb-10.11.19-deprecate-eof.txt", true);
}

#[test]
fn mariadb_session_with_eof_packets() {
    check_session("mariadb-10.11.19-eof.txt", false);
}

#[test]
fn a_response_read_with_the_wrong_eof_mode_is_an_error_or_incomplete_never_a_wrong_count() {
    // A result set read as if EOF packets were deprecated when they are not: the EOF after
    // the column definitions is then taken for the end of the rows; it never reports rows the
    // server did not send as a count of 3.
    let f = fixture("mariadb-10.11.19-eof.txt");
    let mut r = PacketReader::new(1024, MAX_PAYLOAD);
    let mut a = Answer::new(com::STMT_EXECUTE, true);
    let mut outcomes = Vec::new();
    let _ = r.feed(&f["execute_range_3"], |p| {
        outcomes.push(a.packet(&p));
        Flow::Go
    });
    let right = Progress::Done(Outcome::Done {
        affected: 0,
        rows: 3,
    });
    assert!(!outcomes.contains(&right), "{outcomes:?}");
}

#[test]
fn an_answer_with_a_sequence_id_out_of_order_is_refused() {
    let f = fixture("mariadb-10.11.19-deprecate-eof.txt");
    let mut r = PacketReader::new(1024, MAX_PAYLOAD);
    // The answer starts at 1; expecting 2 (as after a request of two frames) fails.
    r.expect_seq(Some(2));
    assert!(r.feed(&f["execute_point_row"], |_| Flow::Go).is_err());
}

proptest! {
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_greeting(&bytes);
        let _ = parse_auth_reply(&bytes);
        let _ = parse_err(&bytes);
        for cmd in [com::QUERY, com::STMT_EXECUTE, com::STMT_PREPARE, com::STMT_FETCH, com::FIELD_LIST, 0x0e] {
            for eof in [true, false] {
                let mut r = PacketReader::new(64, 1000);
                let mut a = Answer::new(cmd, eof);
                let mut o = Answer::observed(cmd, None);
                let mut on = |p: spinscope::proto::packet::Packet<'_>| {
                    let _ = a.packet(&p);
                    let _ = o.packet(&p);
                    Flow::Go
                };
                let _ = r.feed(&bytes, &mut on);
                let _ = r.feed(&bytes, &mut on);
            }
        }
    }

    #[test]
    fn framed_garbage_never_panics_the_reader(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..12),
        cut in 0usize..400,
    ) {
        let mut buf = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            put_packet(&mut buf, i as u8 + 1, p);
        }
        let cut = cut.min(buf.len());
        for cmd in [com::QUERY, com::STMT_PREPARE] {
            for eof in [true, false] {
                let mut r = PacketReader::new(64, MAX_PAYLOAD);
                r.expect_seq(Some(1));
                let mut a = Answer::new(cmd, eof);
                let mut seen = 0;
                let mut on = |p: spinscope::proto::packet::Packet<'_>| {
                    seen += 1;
                    let _ = a.packet(&p);
                    Flow::Go
                };
                let first = r.feed(&buf[..cut], &mut on).unwrap();
                let rest = r.feed(&buf[cut..], &mut on).unwrap();
                prop_assert_eq!(first + rest, buf.len());
                prop_assert_eq!(seen, payloads.len());
            }
        }
    }
}
