//! `spinscope rt --read` on captures that begin at every point of a connection's life: the
//! fixtures of tests/fixtures/rt/README.md (one client session each: plain, the compressed
//! protocol with short and with zlib-compressed frames, TLS, and a login with an auth switch)
//! cut by dropping their first k packets, for every k. What rt reports is checked against a
//! decoder of the same packets written plainly here (pcap records, Ethernet, IPv4, TCP, MySQL
//! frames and the compressed protocol's frames by hand, zlib by flate2's reader), not against
//! numbers written down.

use std::io::Read;
use std::path::{Path, PathBuf};

use spinscope::rt::stats::IntervalReport;
use spinscope::rt::RunReport;

use crate::common;

const PORT: u16 = 13399;

/// One pcap record: its bytes as stored, and the TCP segment in it.
struct Record {
    raw: Vec<u8>,
    ts_ns: u64,
    to_server: bool,
    syn: bool,
    payload: Vec<u8>,
}

/// A pcap file by hand: a 24-byte header, then records of 16-byte header and data.
fn read_pcap(path: &Path) -> (Vec<u8>, Vec<Record>) {
    let b = std::fs::read(path).unwrap();
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let nanos = match magic {
        0xa1b2_c3d4 => false,
        0xa1b2_3c4d => true,
        m => panic!("{}: magic {m:#x}", path.display()),
    };
    assert_eq!(
        u32::from_le_bytes(b[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let mut at = 24;
    let mut v = Vec::new();
    while at + 16 <= b.len() {
        let w = |i: usize| u32::from_le_bytes(b[at + i..at + i + 4].try_into().unwrap()) as u64;
        let (sec, frac, incl, orig) = (w(0), w(4), w(8) as usize, w(12) as usize);
        assert_eq!(incl, orig, "the fixtures are not cut by a snap length");
        let data = &b[at + 16..at + 16 + incl];
        let ip = &data[14..];
        assert_eq!(u16::from_be_bytes([data[12], data[13]]), 0x0800, "IPv4");
        let ihl = (ip[0] & 0xf) as usize * 4;
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        let tcp = &ip[ihl..total];
        let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
        let off = (tcp[12] >> 4) as usize * 4;
        v.push(Record {
            raw: b[at..at + 16 + incl].to_vec(),
            ts_ns: sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 },
            to_server: dport == PORT,
            syn: tcp[13] & 0x02 != 0,
            payload: tcp[off..].to_vec(),
        });
        at += 16 + incl;
    }
    (b[..24].to_vec(), v)
}

/// The file without its first `k` records.
fn cut(header: &[u8], recs: &[Record], k: usize, dir: &Path, name: &str) -> PathBuf {
    let mut b = header.to_vec();
    for r in &recs[k..] {
        b.extend_from_slice(&r.raw);
    }
    let p = dir.join(format!("{name}-from-{k}.pcap"));
    std::fs::write(&p, b).unwrap();
    p
}

/// What the plain decoder finds: each request with the record that carries its first byte.
#[derive(Debug, Clone)]
struct Req {
    first_record: usize,
    /// The command byte; None for TLS.
    command: Option<u8>,
    query: Option<String>,
    answered: bool,
    error: bool,
    /// From the request's last record to the answer's last one, before the next request.
    ttlb_ns: u64,
    /// TLS: the encrypted login (the first application data), not a request.
    login: bool,
}

/// The client's byte stream in records, with the record each byte came from; and the server
/// records, for the answers.
fn client_bytes(recs: &[Record]) -> (Vec<u8>, Vec<usize>) {
    let (mut bytes, mut from) = (Vec::new(), Vec::new());
    for (i, r) in recs.iter().enumerate() {
        if r.to_server {
            bytes.extend_from_slice(&r.payload);
            from.extend(std::iter::repeat_n(i, r.payload.len()));
        }
    }
    (bytes, from)
}

/// A compressed-protocol frame's payload: as sent when its uncompressed length is 0, else
/// inflated whole.
fn frame_payload(frame: &[u8]) -> Vec<u8> {
    let clen = frame[0] as usize | (frame[1] as usize) << 8 | (frame[2] as usize) << 16;
    let ulen = frame[4] as usize | (frame[5] as usize) << 8 | (frame[6] as usize) << 16;
    let body = &frame[7..7 + clen];
    if ulen == 0 {
        return body.to_vec();
    }
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out.len(), ulen, "the frame's stated length");
    out
}

/// Plain and compressed: frames by their headers. The login (sequence 1) and anything sent
/// before the server's OK to it is plain; after it, the compressed protocol when the login
/// asked for it (capability bit 5).
fn decode_mysql(recs: &[Record]) -> Vec<Req> {
    let (c, from) = client_bytes(recs);
    let flags = u32::from_le_bytes(c[4..8].try_into().unwrap());
    assert_eq!(c[3], 1, "the login is sequence 1");
    let compressed = flags & (1 << 5) != 0;
    // Client packets as (offset in the client stream, sequence, payload). The login is
    // sequence 1 and any auth data after it 3, 5, ...: plain frames until the first command
    // (sequence 0), where the compressed protocol starts if the login asked for it.
    let mut packets = Vec::new();
    let mut at = 0;
    let mut login_done = false;
    while at < c.len() {
        if !login_done && c[at + 3] != 0 {
            let n = c[at] as usize | (c[at + 1] as usize) << 8 | (c[at + 2] as usize) << 16;
            packets.push((at, c[at + 3], c[at + 4..at + 4 + n].to_vec()));
            at += 4 + n;
            continue;
        }
        login_done = true;
        if compressed {
            let clen = c[at] as usize | (c[at + 1] as usize) << 8 | (c[at + 2] as usize) << 16;
            let inner = frame_payload(&c[at..]);
            // The packets of the frame's payload (one command each here).
            let mut i = 0;
            while i + 4 <= inner.len() {
                let n = inner[i] as usize
                    | (inner[i + 1] as usize) << 8
                    | (inner[i + 2] as usize) << 16;
                packets.push((at, inner[i + 3], inner[i + 4..i + 4 + n].to_vec()));
                i += 4 + n;
            }
            at += 7 + clen;
        } else {
            let n = c[at] as usize | (c[at + 1] as usize) << 8 | (c[at + 2] as usize) << 16;
            packets.push((at, c[at + 3], c[at + 4..at + 4 + n].to_vec()));
            at += 4 + n;
        }
    }
    // Commands: sequence 0 packets after the login.
    let mut reqs: Vec<Req> = packets
        .iter()
        .filter(|(_, seq, body)| *seq == 0 && !body.is_empty())
        .map(|(off, _, body)| Req {
            first_record: from[*off],
            command: Some(body[0]),
            query: (body[0] == 3).then(|| String::from_utf8_lossy(&body[1..]).into_owned()),
            answered: false,
            error: false,
            ttlb_ns: 0,
            login: false,
        })
        .collect();
    answers(recs, &mut reqs, |payload| {
        // The first answer packet's first byte; in the compressed protocol that of the first
        // frame's payload.
        if compressed {
            frame_payload(payload).get(4) == Some(&0xff)
        } else {
            payload.get(4) == Some(&0xff)
        }
    });
    reqs
}

/// The server records between a request and the next one answer it.
fn answers(recs: &[Record], reqs: &mut [Req], is_err: impl Fn(&[u8]) -> bool) {
    for i in 0..reqs.len() {
        let from = reqs[i].first_record;
        let next = reqs.get(i + 1).map_or(recs.len(), |r| r.first_record);
        let last_req = (from..next)
            .take_while(|&j| recs[j].to_server || recs[j].payload.is_empty())
            .filter(|&j| recs[j].to_server && !recs[j].payload.is_empty())
            .last()
            .unwrap();
        let resp: Vec<usize> = (from..next)
            .filter(|&j| !recs[j].to_server && !recs[j].payload.is_empty())
            .collect();
        if let (Some(&a), Some(&z)) = (resp.first(), resp.last()) {
            reqs[i].answered = true;
            reqs[i].error = is_err(&recs[a].payload);
            reqs[i].ttlb_ns = recs[z].ts_ns - recs[last_req].ts_ns;
        }
    }
}

/// TLS: a request is a client run (records until the server sends) that starts with an
/// application-data record (type 23); the first is the encrypted login.
fn decode_tls(recs: &[Record]) -> Vec<Req> {
    let mut reqs = Vec::new();
    let mut prev_server = true;
    for (i, r) in recs.iter().enumerate() {
        if r.payload.is_empty() {
            continue;
        }
        if r.to_server && prev_server && r.payload[0] == 23 {
            reqs.push(Req {
                first_record: i,
                command: None,
                query: None,
                answered: false,
                error: false,
                ttlb_ns: 0,
                login: reqs.is_empty(),
            });
        }
        prev_server = !r.to_server;
    }
    answers(recs, &mut reqs, |_| false);
    reqs
}

fn run_rt(pcap: &Path, save: &Path) -> (IntervalReport, RunReport) {
    let out = std::process::Command::new(common::bin())
        .args(["rt", "--read"])
        .arg(pcap)
        .args(["--port", &PORT.to_string(), "--json", "--by-command"])
        .args(["--top", "10", "--save"])
        .arg(save)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}",
        pcap.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let total: IntervalReport = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let run: RunReport = serde_json::from_slice(&std::fs::read(save).unwrap()).unwrap();
    (total, run)
}

/// The record of the first request the decoder found, and of the client's first packet
/// with a payload (the login, or the SSLRequest).
fn landmarks(recs: &[Record], reqs: &[Req]) -> (usize, usize, usize) {
    let greeting = recs
        .iter()
        .position(|r| !r.to_server && !r.payload.is_empty())
        .unwrap();
    let login = recs
        .iter()
        .position(|r| r.to_server && !r.payload.is_empty())
        .unwrap();
    let second = reqs
        .iter()
        .filter(|r| !r.login)
        .nth(1)
        .unwrap()
        .first_record;
    (greeting, login, second)
}

/// Cut `name` at every record and check rt against the decoder; returns the checks made.
fn check_every_cut(name: &str) -> usize {
    let path = PathBuf::from(format!("tests/fixtures/rt/login-{name}.pcap"));
    let (header, recs) = read_pcap(&path);
    let tls = name == "tls";
    let reqs = if tls {
        decode_tls(&recs)
    } else {
        decode_mysql(&recs)
    };
    let flags = if tls {
        0
    } else {
        u32::from_le_bytes(client_bytes(&recs).0[4..8].try_into().unwrap())
    };
    let compressed = flags & (1 << 5) != 0;
    assert!(
        recs[0].syn && recs[0].to_server,
        "{name}: starts at the SYN"
    );
    let (greeting, login, second) = landmarks(&recs, &reqs);
    // The script every fixture ran: five statements (the last an error), then COM_QUIT.
    let answered_all = reqs.iter().filter(|r| r.answered && !r.login).count();
    assert_eq!(answered_all, 5, "{name}: {reqs:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut checks = 0;
    for k in 0..recs.len() {
        let file = cut(&header, &recs, k, dir.path(), name);
        let (total, run) = run_rt(&file, &dir.path().join(format!("{k}.json")));
        let at = format!("{name} cut at record {k} (greeting {greeting}, login {login}, second request {second})");
        let t = &run.tracker;
        let after: Vec<&Req> = reqs.iter().filter(|r| r.first_record >= k).collect();
        let saw_login = k <= login;
        if tls {
            // Joined after every cleartext and TLS-handshake record of the client, the
            // encrypted login cannot be told from a request.
            let handshake_seen = recs[k..]
                .iter()
                .any(|r| r.to_server && matches!(r.payload.first(), Some(20 | 22)));
            let want = after
                .iter()
                .filter(|r| r.answered && (!r.login || !handshake_seen))
                .count() as u64;
            assert_eq!(total.requests, want, "{at}: requests");
            assert!(total.by_command.iter().all(|g| g.key == "unknown"), "{at}");
            if !after.is_empty() {
                assert_eq!(t.encrypted_connections, 1, "{at}: counted as TLS");
            }
            assert_eq!(t.unreadable_connections, 0, "{at}: TLS is not garbage");
            assert_eq!(t.compressed_connections, 0, "{at}");
        } else {
            let want: Vec<&&Req> = after.iter().filter(|r| r.answered).collect();
            assert_eq!(total.requests, want.len() as u64, "{at}: requests");
            {
                // Command by command, as the decoder read them: plain, or compressed with
                // the login seen or not (whole frames that inflate to commands are sure).
                let mut by: std::collections::BTreeMap<String, u64> = Default::default();
                for r in &want {
                    let name = match r.command {
                        Some(3) => "COM_QUERY",
                        Some(c) => panic!("{at}: command {c} not in the script"),
                        None => unreachable!(),
                    };
                    *by.entry(name.to_string()).or_default() += 1;
                }
                let got: std::collections::BTreeMap<String, u64> = total
                    .by_command
                    .iter()
                    .map(|g| (g.key.clone(), g.requests))
                    .collect();
                assert_eq!(got, by, "{at}: by command");
                let errors = want.iter().filter(|r| r.error).count() as u64;
                assert_eq!(total.errors, errors, "{at}: errors");
                let quit = after.iter().filter(|r| r.command == Some(1)).count() as u64;
                assert_eq!(total.no_response, quit, "{at}: COM_QUIT unanswered");
                let statements: u64 = total.top_statements.iter().map(|g| g.requests).sum();
                assert_eq!(
                    statements,
                    want.iter().filter(|r| r.query.is_some()).count() as u64,
                    "{at}: fingerprints"
                );
                // The slowest answer, as the decoder timed it (HdrHistogram: 3 digits).
                if let Some(max) = want.iter().map(|r| r.ttlb_ns).max() {
                    let rt_max = total.ttlb_us.max_us * 1e3;
                    assert!(
                        (rt_max - max as f64).abs() <= max as f64 * 0.002 + 1000.0,
                        "{at}: max ttlb rt {rt_max} ns, decoder {max} ns"
                    );
                }
                assert_eq!(t.unreadable_connections, 0, "{at}");
                assert_eq!(t.resyncs, 0, "{at}");
            }
            // Compressed when the login said so, or when a request was whole frames;
            // never assumed of a plain connection.
            let command_seen = !after.is_empty();
            let want_compressed = compressed && (saw_login || command_seen);
            assert_eq!(
                t.compressed_connections, want_compressed as u64,
                "{at}: compressed connections"
            );
            assert_eq!(t.encrypted_connections, 0, "{at}");
        }
        if saw_login && (!tls || k <= login) {
            assert_eq!(t.handshakes, 1, "{at}: the login read as a login");
        }
        checks += 1;
    }
    checks
}

#[test]
fn plain_capture_cut_anywhere_reads_like_the_decoder() {
    assert_eq!(check_every_cut("plain"), 22);
}

#[test]
fn auth_switch_capture_cut_anywhere_reads_like_the_decoder() {
    assert_eq!(check_every_cut("authswitch"), 24);
}

#[test]
fn compressed_capture_cut_anywhere_reads_like_the_decoder() {
    assert_eq!(check_every_cut("compressed"), 22);
}

#[test]
fn zlib_compressed_capture_cut_anywhere_reads_like_the_decoder() {
    assert_eq!(check_every_cut("compressed-zlib"), 22);
}

#[test]
fn tls_capture_cut_anywhere_reads_like_the_decoder() {
    assert_eq!(check_every_cut("tls"), 29);
}

/// The fixtures' segments as rt's capture decodes them.
fn segments(name: &str) -> Vec<spinscope::rt::capture::OwnedSegment> {
    let (_, recs) = read_pcap(Path::new(&format!("tests/fixtures/rt/login-{name}.pcap")));
    recs.iter()
        .filter_map(|r| {
            let s = spinscope::rt::capture::decode(
                pcap::Linktype::ETHERNET,
                &r.raw[16..],
                0,
                r.ts_ns,
                &[PORT],
            )?;
            Some(spinscope::rt::capture::OwnedSegment {
                ts_ns: s.ts_ns,
                key: s.key,
                dir: s.dir,
                seq: s.seq,
                syn: s.syn,
                fin: s.fin,
                rst: s.rst,
                payload: s.payload.to_vec(),
                wire_len: s.wire_len,
            })
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Real streams cut anywhere, with segments lost, repeated, cut short by the snap length or
    /// garbled: the tracker never panics, never times an answer before its request, and never
    /// finds more requests than the client sent runs.
    #[test]
    fn cut_lost_and_garbled_streams_never_panic(
        which in 0usize..5,
        k in 0usize..30,
        ops in proptest::collection::vec((0u8..6, 0usize..2000, proptest::num::u8::ANY), 0..40),
    ) {
        use spinscope::rt::proto::{Event, Tracker};
        let name = ["plain", "compressed", "tls", "authswitch", "compressed-zlib"][which];
        let mut segs = segments(name);
        segs.drain(..k.min(segs.len()));
        for (op, at, byte) in &ops {
            if segs.is_empty() {
                break;
            }
            let i = at % segs.len();
            match op {
                0 => { segs.remove(i); }
                1 => { let s = segs[i].clone(); segs.insert(i, s); }
                2 => { let n = segs[i].payload.len(); segs[i].payload.truncate(at % (n + 1)); }
                3 => { let n = segs[i].payload.len(); if n > 0 { segs[i].payload[at % n] = *byte; } }
                4 => { let s = segs.remove(i); let j = (at / 7) % (segs.len() + 1); segs.insert(j, s); }
                _ => { segs[i].payload.extend_from_slice(&[*byte; 9]); segs[i].wire_len += 9; }
            }
        }
        let runs = segs.iter().filter(|s| s.dir == spinscope::rt::proto::Dir::ToServer && s.wire_len > 0).count();
        let mut t = Tracker::new();
        let mut out = Vec::new();
        for s in &segs {
            t.segment(&s.as_segment(), &mut out);
            t.flush(s.ts_ns, 200_000_000, &mut out);
        }
        t.finish(&mut out);
        let mut requests = 0;
        for e in &out {
            if let Event::Exchange(x) = e {
                proptest::prop_assert!(x.ttlb_ns >= x.ttfb_ns);
                requests += 1;
            }
        }
        proptest::prop_assert!(requests <= runs, "{requests} requests from {runs} client segments");
    }
}
