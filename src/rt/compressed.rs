//! The compressed protocol (CLIENT_COMPRESS) as `rt` reads it: enough of each request to name
//! its command and keep the start of its statement, and enough of the first answer frame to
//! tell an ERR. Each frame is a 7-byte header (compressed length, sequence id, uncompressed
//! length; 0 when the payload is sent as it is, as clients do below 50 bytes) and a payload
//! of ordinary MySQL packets, zlib-compressed when the uncompressed length is not 0.
//!
//! Only the first frame of a run is read, and only as far as the capture holds it: zlib
//! inflates from the start, so a frame cut by the snap length still gives the command byte
//! and the statement's first bytes when the cut falls after the block's Huffman tables. At most `cap` bytes are inflated: a small frame claiming a
//! huge payload costs no more than that. Pure: bytes in, a verdict out.

use flate2::{Decompress, FlushDecompress, Status};

use super::sync;

const HEADER: usize = 7;
/// Largest payload the mid-stream recogniser inflates whole to check a run; a larger frame is
/// not read there (a guess that is not sure is no answer).
const SURE_MAX: usize = 1 << 20;

fn u24(b: &[u8]) -> usize {
    b[0] as usize | (b[1] as usize) << 8 | (b[2] as usize) << 16
}

/// One frame's header and its payload bytes as captured (fewer than `compressed_len` when
/// the capture cut them).
struct Frame<'a> {
    seq: u8,
    compressed_len: usize,
    uncompressed_len: usize,
    body: &'a [u8],
}

fn frame(b: &[u8]) -> Option<Frame<'_>> {
    if b.len() < HEADER {
        return None;
    }
    let compressed_len = u24(b);
    Some(Frame {
        seq: b[3],
        compressed_len,
        uncompressed_len: u24(&b[4..]),
        body: &b[HEADER..b.len().min(HEADER + compressed_len)],
    })
}

/// Up to `cap` bytes of a frame's payload: the body itself when stored, else what zlib
/// inflates from the captured body. None when the body does not inflate (not zlib).
fn payload(f: &Frame<'_>, cap: usize) -> Option<Vec<u8>> {
    if f.uncompressed_len == 0 {
        return Some(f.body[..f.body.len().min(cap)].to_vec());
    }
    let mut out = Vec::with_capacity(cap.min(f.uncompressed_len));
    let mut z = Decompress::new(true);
    z.decompress_vec(f.body, &mut out, FlushDecompress::None)
        .ok()?;
    // An empty result from a non-empty body is a body that is not zlib (or too cut to say).
    (!out.is_empty() || f.body.is_empty()).then_some(out)
}

/// The commands at the start of a client run of the compressed protocol: the command byte
/// and, for COM_QUERY, up to `text_cap` bytes of the statement of each sequence-0 packet in
/// the run's first frame, as far as it was captured. Empty when the run does not start with
/// a frame of sequence 0 whose payload starts with a command packet.
pub fn commands(b: &[u8], text_cap: usize) -> Vec<(u8, Option<Vec<u8>>)> {
    let Some(f) = frame(b) else {
        return Vec::new();
    };
    if f.seq != 0 {
        return Vec::new();
    }
    // Room for a few small packets (COM_STMT_CLOSE before an execute) and one statement.
    let Some(p) = payload(&f, text_cap + 64) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    let mut at = 0;
    while p.len() >= at + 5 {
        let n = u24(&p[at..]);
        if p[at + 3] != 0 || n == 0 {
            break;
        }
        let cmd = p[at + 4];
        let end = (at + 4 + n).min(p.len());
        let query = (cmd == crate::proto::com::QUERY)
            .then(|| p[at + 5..end.min(at + 5 + text_cap)].to_vec());
        v.push((cmd, query));
        at += 4 + n;
    }
    v
}

/// Whether a server run of the compressed protocol starts with an ERR packet: the first
/// frame's first packet, sequence 1, first byte 0xff.
pub fn starts_with_err(b: &[u8]) -> bool {
    let Some(p) = frame(b).and_then(|f| payload(&f, 5)) else {
        return false;
    };
    p.len() >= 5 && p[3] == 1 && p[4] == 0xff
}

/// A client run that starts a request in the compressed protocol, for a connection joined
/// after its login: whole frames exactly, the first sequence 0, each payload inflating to
/// exactly its stated length, and their packets together [`sync::is_command`]. Plain packets
/// never pass (their 4-byte header leaves the lengths off by three), so this is asked only
/// after the plain recogniser said no.
pub fn is_command(b: &[u8]) -> bool {
    let mut inner = Vec::new();
    let mut at = 0;
    let mut first = true;
    while at < b.len() {
        let Some(f) = frame(&b[at..]) else {
            return false;
        };
        if f.body.len() != f.compressed_len || (first && f.seq != 0) {
            return false;
        }
        if f.uncompressed_len == 0 {
            inner.extend_from_slice(f.body);
        } else {
            if f.uncompressed_len > SURE_MAX {
                return false;
            }
            let mut out = Vec::with_capacity(f.uncompressed_len);
            let mut z = Decompress::new(true);
            match z.decompress_vec(f.body, &mut out, FlushDecompress::Finish) {
                Ok(Status::StreamEnd)
                    if out.len() == f.uncompressed_len && z.total_in() as usize == f.body.len() => {
                }
                _ => return false,
            }
            inner.extend_from_slice(&out);
        }
        at += HEADER + f.compressed_len;
        first = false;
    }
    !inner.is_empty() && sync::is_command(&inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pkt(seq: u8, body: &[u8]) -> Vec<u8> {
        let n = body.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        v.extend_from_slice(body);
        v
    }

    /// A frame of `inner` as a client sends it: stored when short, zlib otherwise.
    fn frame_of(seq: u8, inner: &[u8], zlib: bool) -> Vec<u8> {
        let (body, ulen) = if zlib {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(inner).unwrap();
            (z.finish().unwrap(), inner.len())
        } else {
            (inner.to_vec(), 0)
        };
        let n = body.len();
        let mut v = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
        v.extend_from_slice(&[ulen as u8, (ulen >> 8) as u8, (ulen >> 16) as u8]);
        v.extend_from_slice(&body);
        v
    }

    #[test]
    fn stored_and_zlib_frames_give_the_command_and_statement() {
        let q = format!("SELECT c FROM t.a WHERE c <> '{}'", "x".repeat(200));
        let inner = pkt(0, &[&[0x03][..], q.as_bytes()].concat());
        for zlib in [false, true] {
            let f = frame_of(0, &inner, zlib);
            let got = commands(&f, 1024);
            assert_eq!(
                got,
                vec![(0x03, Some(q.as_bytes().to_vec()))],
                "zlib {zlib}"
            );
            assert!(is_command(&f), "zlib {zlib}");
            // Cut by the snap length: the command and the statement's start still read (zlib
            // decodes from the start, once the block's Huffman tables are in).
            let cut = commands(&f[..f.len() - 4], 1024);
            assert_eq!(cut.len(), 1, "zlib {zlib}");
            assert_eq!(cut[0].0, 0x03);
            let text = cut[0].1.as_deref().unwrap();
            assert!(
                !text.is_empty() && q.as_bytes().starts_with(text),
                "zlib {zlib}"
            );
            assert!(!is_command(&f[..f.len() - 1]), "a cut frame is not sure");
        }
        // The statement kept is capped.
        let f = frame_of(0, &inner, true);
        assert_eq!(commands(&f, 10)[0].1.as_deref(), Some(&q.as_bytes()[..10]));
    }

    #[test]
    fn a_close_before_an_execute_and_quit() {
        let mut two = pkt(0, &[0x19, 1, 0, 0, 0]);
        two.extend(pkt(0, &[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
        let f = frame_of(0, &two, false);
        assert_eq!(commands(&f, 64), vec![(0x19, None), (0x17, None)]);
        assert!(is_command(&f));
        assert_eq!(
            commands(&frame_of(0, &pkt(0, &[1]), false), 64),
            vec![(1, None)]
        );
    }

    #[test]
    fn what_is_not_a_compressed_request() {
        let q = pkt(0, b"\x03SELECT 1");
        assert!(!is_command(&q), "plain is not compressed");
        assert!(
            commands(&frame_of(1, &q, false), 64).is_empty(),
            "frame sequence 1"
        );
        assert!(
            commands(&frame_of(0, &pkt(2, b"\x03SELECT 1"), false), 64).is_empty(),
            "packet sequence 2: the rest of a command"
        );
        // A stated zlib length whose body is not zlib.
        let mut bad = frame_of(0, &q, false);
        bad[4] = 13;
        assert!(commands(&bad, 64).is_empty());
        assert!(!is_command(&bad));
        // The wrong uncompressed length.
        let mut z = frame_of(0, &pkt(0, &[&b"\x03"[..], &[b'y'; 100]].concat()), true);
        z[4] = z[4].wrapping_add(1);
        assert!(!is_command(&z));
        // An answer: sequence 1 in its frame, ERR first.
        let err = frame_of(1, &pkt(1, b"\xff\x1e\x04#42S22Unknown column"), false);
        assert!(starts_with_err(&err));
        // A long message: the server compresses the answer too.
        let mut e = b"\xff\x1e\x04#42S22".to_vec();
        e.extend_from_slice(
            "Unknown column 'nosuchcol' in 'field list' "
                .repeat(3)
                .as_bytes(),
        );
        assert!(starts_with_err(&frame_of(1, &pkt(1, &e), true)));
        assert!(!starts_with_err(&frame_of(
            1,
            &pkt(1, &[0, 0, 0, 2, 0, 0, 0]),
            false
        )));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = (commands(&b, 16), is_command(&b), starts_with_err(&b));
        }
    }
}
