//! The event client's protocol codec on a real server's bytes (fixtures recorded from MariaDB
//! 10.11.19 by `tests/fixtures/wire/capture.py`, with and without CLIENT_DEPRECATE_EOF), fed
//! whole and one byte at a time, and never panicking on arbitrary input.

use std::collections::HashMap;

use proptest::prelude::*;
use spinscope::load::wire::codec::{
    self, caps, frame, parse_auth_reply, parse_err, parse_greeting, AuthReply, Expect, Outcome,
    Reader, Step,
};

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

/// Feed the whole response, then again one byte at a time; both must agree and consume
/// every byte.
fn read(bytes: &[u8], expect: Expect, deprecate_eof: bool) -> Outcome {
    let mut r = Reader::new(expect, deprecate_eof);
    let whole = match r.feed(bytes).unwrap() {
        Step::Done(n, o) => {
            assert_eq!(n, bytes.len(), "bytes left after the response");
            o
        }
        Step::More(_) => panic!("incomplete response"),
    };
    let mut r = Reader::new(expect, deprecate_eof);
    let mut buf = Vec::new();
    let mut got = None;
    for (i, b) in bytes.iter().enumerate() {
        buf.push(*b);
        match r.feed(&buf).unwrap() {
            Step::More(n) => {
                buf.drain(..n);
            }
            Step::Done(n, o) => {
                assert_eq!(i + 1, bytes.len(), "done before the last byte");
                assert_eq!(n, buf.len());
                got = Some(o);
            }
        }
    }
    assert_eq!(got.as_ref(), Some(&whole));
    whole
}

fn check_session(file: &str, deprecate_eof: bool) {
    let f = fixture(file);
    let g = &f["greeting"];
    let fr = frame(g).unwrap();
    assert_eq!((fr.seq, fr.wire_len), (0, g.len()));
    let greet = parse_greeting(&g[fr.first.clone()]).unwrap().unwrap();
    assert_eq!(greet.server_version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
    assert_eq!(greet.plugin, "mysql_native_password");
    assert_eq!(greet.nonce.len(), 20);
    assert!(greet.caps & caps::PROTOCOL_41 != 0 && greet.caps & caps::DEPRECATE_EOF != 0);
    let ok = &f["auth_ok"];
    let fr = frame(ok).unwrap();
    assert_eq!(fr.seq, 2);
    assert_eq!(parse_auth_reply(&ok[fr.first]).unwrap(), AuthReply::Ok);

    let prep = |k: &str| read(&f[k], Expect::Prepare, deprecate_eof);
    let res = |k: &str| read(&f[k], Expect::Result, deprecate_eof);
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
    assert_eq!(res("query_begin"), done(0, 0));
    assert_eq!(res("query_rollback"), done(0, 0));
    match res("query_error") {
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
    // the column definitions is then taken for a row terminator, or the reader waits; it
    // never reports rows the server did not send as a completed count of 1.
    let f = fixture("mariadb-10.11.19-eof.txt");
    let mut r = Reader::new(Expect::Result, true);
    let got = r.feed(&f["execute_range_3"]);
    assert_ne!(
        got,
        Ok(Step::Done(
            f["execute_range_3"].len(),
            Outcome::Done {
                affected: 0,
                rows: 3
            }
        ))
    );
}

proptest! {
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_greeting(&bytes);
        let _ = parse_auth_reply(&bytes);
        let _ = parse_err(&bytes);
        let _ = frame(&bytes);
        for expect in [Expect::Result, Expect::Prepare] {
            for eof in [true, false] {
                let mut r = Reader::new(expect, eof);
                let _ = r.feed(&bytes);
                let _ = r.feed(&bytes);
            }
        }
    }

    #[test]
    fn framed_garbage_never_panics_the_reader(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..12)
    ) {
        let mut buf = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            codec::put_packet(&mut buf, i as u8, p);
        }
        for expect in [Expect::Result, Expect::Prepare] {
            for eof in [true, false] {
                let mut r = Reader::new(expect, eof);
                if let Ok(Step::More(n) | Step::Done(n, _)) = r.feed(&buf) {
                    prop_assert!(n <= buf.len());
                }
            }
        }
    }
}
