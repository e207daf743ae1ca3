//! The command/response model: which packets answer a command and what they said, read one
//! packet at a time. One reader for a client that agreed on the protocol with the server (the
//! events load client: the EOF mode is known, anything unexpected is an error) and for an
//! observer of someone else's connection (`rt`: the mode may be unknown and is learnt from
//! the packets, and an answer it cannot follow is ended by the next request instead).
//!
//! Answers followed: OK and ERR; result sets (column count, definitions, the EOF after them
//! unless CLIENT_DEPRECATE_EOF, rows, the final EOF or OK), several when the status says more
//! results follow; the prepare answer (statement id, parameter and column definitions);
//! COM_STMT_FETCH rows; COM_FIELD_LIST definitions; COM_STATISTICS' one string.

use super::packet::{read_lenenc, Packet, MAX_FRAME};
use super::{com, parse_err, ServerError, MORE_RESULTS_EXIST};

/// What a complete answer said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// OK, or result set(s): affected rows summed, rows counted (not kept).
    Done {
        affected: u64,
        rows: u64,
    },
    Err(ServerError),
    /// The answer to COM_STMT_PREPARE.
    Prepared {
        id: u32,
        params: u16,
        columns: u16,
    },
}

/// What one more packet did to the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// More packets are due.
    More,
    /// The answer is complete.
    Done(Outcome),
    /// The packet does not fit the answer (or came after its end): from here on the answer
    /// cannot be followed.
    Unreadable(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the first packet of an answer (or of the next result set).
    First,
    /// Column (or prepare parameter/column) definitions, and the EOFs between them, to come.
    Defs(u64),
    /// After the column definitions of a result set.
    AfterColumns,
    Rows,
    /// COM_FIELD_LIST: definitions until an EOF.
    UntilEof,
    Finished,
    Lost(&'static str),
}

/// Reads the answer to one command (see the module doc).
#[derive(Debug, Clone)]
pub struct Answer {
    cmd: u8,
    state: State,
    deprecate_eof: Option<bool>,
    /// Learn the EOF mode from the packets (an observer) instead of holding to it.
    infer: bool,
    affected: u64,
    rows: u64,
    prepared: (u32, u16, u16),
}

impl Answer {
    /// The answer to command byte `cmd` on a connection whose EOF mode was agreed.
    pub fn new(cmd: u8, deprecate_eof: bool) -> Answer {
        Answer::with(cmd, Some(deprecate_eof), false)
    }

    /// The answer to `cmd` seen from outside: the EOF mode as far as known, learnt from the
    /// packets where they show it.
    pub fn observed(cmd: u8, deprecate_eof: Option<bool>) -> Answer {
        Answer::with(cmd, deprecate_eof, true)
    }

    fn with(cmd: u8, deprecate_eof: Option<bool>, infer: bool) -> Answer {
        Answer {
            cmd,
            state: State::First,
            deprecate_eof,
            infer,
            affected: 0,
            rows: 0,
            prepared: (0, 0, 0),
        }
    }

    /// The EOF mode as known now (an observer may have learnt it from this answer).
    pub fn deprecate_eof(&self) -> Option<bool> {
        self.deprecate_eof
    }

    /// Whether the answer is complete.
    pub fn finished(&self) -> bool {
        self.state == State::Finished
    }

    /// Read one more packet of the answer.
    pub fn packet(&mut self, p: &Packet<'_>) -> Progress {
        let head = p.head.first().copied();
        if let State::Lost(why) = self.state {
            return Progress::Unreadable(why);
        }
        if self.state == State::Finished {
            return self.lost("a packet after the end of the answer");
        }
        if head == Some(0xff) && p.len < MAX_FRAME {
            return match parse_err(p.head) {
                Ok(e) => self.finish(Outcome::Err(e)),
                Err(m) => self.lost(m.0),
            };
        }
        let Some(head) = head else {
            return self.lost("an empty packet in an answer");
        };
        // 0xfe starts an EOF or OK ending rows; a row starting with it is 16 MiB or longer.
        let terminator = head == 0xfe && p.len < MAX_FRAME;
        match self.state {
            State::First => self.first(p, head, terminator),
            State::Defs(n) => {
                self.state = match n {
                    0 | 1 if self.cmd == com::STMT_PREPARE => return self.prepared(),
                    0 | 1 => State::AfterColumns,
                    _ => State::Defs(n - 1),
                };
                Progress::More
            }
            State::AfterColumns => self.after_columns(p, terminator),
            State::Rows if terminator => {
                if self.infer && self.deprecate_eof.is_none() && p.len < 9 {
                    self.deprecate_eof = Some(false);
                }
                self.end_of_result(p)
            }
            State::Rows => {
                self.rows += 1;
                Progress::More
            }
            State::UntilEof if terminator => self.done(),
            State::UntilEof => Progress::More,
            State::Finished | State::Lost(_) => unreachable!("handled above"),
        }
    }

    fn first(&mut self, p: &Packet<'_>, head: u8, terminator: bool) -> Progress {
        match (self.cmd, head) {
            (com::STMT_PREPARE, 0x00) => self.prepare_header(p),
            (com::STMT_PREPARE, _) => self.lost("an answer to prepare that is not OK or ERR"),
            (com::STMT_FETCH, _) if terminator => self.done(),
            (com::STMT_FETCH, _) => {
                self.rows += 1;
                self.state = State::Rows;
                Progress::More
            }
            (_, 0x00) => self.end_of_result(p),
            (_, 0xfb) => self.lost("a LOCAL INFILE request"),
            (com::STATISTICS, _) => self.done(),
            (com::FIELD_LIST, _) => {
                self.state = State::UntilEof;
                Progress::More
            }
            (com::QUERY | com::STMT_EXECUTE | com::STMT_BULK_EXECUTE, _) => {
                match read_lenenc(p.head) {
                    Some((n, _)) if n > 0 => {
                        self.state = State::Defs(n);
                        Progress::More
                    }
                    _ => self.lost("no column count at the start of a result set"),
                }
            }
            _ => self.lost("an answer to a command this reader does not follow"),
        }
    }

    fn prepare_header(&mut self, p: &Packet<'_>) -> Progress {
        let u16_at = |i: usize| {
            p.head
                .get(i..i + 2)
                .map(|s| u16::from_le_bytes([s[0], s[1]]))
        };
        let id = p
            .head
            .get(1..5)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        let (Some(id), Some(columns), Some(params)) = (id, u16_at(5), u16_at(7)) else {
            return self.lost("a short answer to prepare");
        };
        let Some(dep) = self.deprecate_eof else {
            return self.lost("the EOF mode of the connection is not known");
        };
        self.prepared = (id, params, columns);
        let eofs = if dep {
            0
        } else {
            u64::from(columns > 0) + u64::from(params > 0)
        };
        match u64::from(columns) + u64::from(params) + eofs {
            0 => self.prepared(),
            k => {
                self.state = State::Defs(k);
                Progress::More
            }
        }
    }

    fn after_columns(&mut self, p: &Packet<'_>, terminator: bool) -> Progress {
        let eof_packet = terminator && p.len < 9;
        match self.deprecate_eof {
            // No EOF after the definitions: a row, or the OK ending an empty result.
            Some(true) if terminator => return self.end_of_result(p),
            Some(true) => {}
            Some(false) | None if eof_packet => {
                // The EOF after the definitions (or, unknowable to an observer, the end of an
                // empty result without EOF packets: then the next request ends it).
                self.state = State::Rows;
                return Progress::More;
            }
            Some(false) if !self.infer => {
                return self.lost("no EOF after the column definitions");
            }
            // A row right after the definitions: no EOF packets on this connection.
            Some(false) | None => self.deprecate_eof = Some(true),
        }
        self.rows += 1;
        self.state = State::Rows;
        Progress::More
    }

    /// An OK (0x00, or 0xfe ending rows) or EOF: the answer ends unless more results follow.
    fn end_of_result(&mut self, p: &Packet<'_>) -> Progress {
        let Some((affected, status)) = ok_fields(p) else {
            return self.lost("a short OK packet");
        };
        self.affected += affected;
        if status & MORE_RESULTS_EXIST != 0 {
            self.state = State::First;
            return Progress::More;
        }
        self.done()
    }

    fn done(&mut self) -> Progress {
        self.finish(Outcome::Done {
            affected: self.affected,
            rows: self.rows,
        })
    }

    fn prepared(&mut self) -> Progress {
        let (id, params, columns) = self.prepared;
        self.finish(Outcome::Prepared {
            id,
            params,
            columns,
        })
    }

    fn finish(&mut self, o: Outcome) -> Progress {
        self.state = State::Finished;
        Progress::Done(o)
    }

    fn lost(&mut self, why: &'static str) -> Progress {
        self.state = State::Lost(why);
        Progress::Unreadable(why)
    }
}

/// Affected rows and status flags of an OK packet (header 0x00 or 0xfe), or the status flags
/// of a 5-byte EOF packet.
fn ok_fields(p: &Packet<'_>) -> Option<(u64, u16)> {
    let b = p.head;
    if b.first() == Some(&0xfe) && p.len == 5 {
        return b.get(3..5).map(|s| (0, u16::from_le_bytes([s[0], s[1]])));
    }
    let (affected, n1) = read_lenenc(b.get(1..)?)?;
    let (_, n2) = read_lenenc(b.get(1 + n1..)?)?;
    let status = b
        .get(1 + n1 + n2..3 + n1 + n2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]));
    Some((affected, status))
}

#[cfg(test)]
mod tests {
    use super::super::packet::{put_packet, Flow, PacketReader, MAX_PAYLOAD};
    use super::*;

    fn feed(a: &mut Answer, payloads: &[&[u8]]) -> Vec<Progress> {
        let mut bytes = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            put_packet(&mut bytes, i as u8 + 1, p);
        }
        let mut r = PacketReader::new(64, MAX_PAYLOAD);
        let mut got = Vec::new();
        r.feed(&bytes, |p| {
            got.push(a.packet(&p));
            Flow::Go
        })
        .unwrap();
        got
    }

    #[test]
    fn multi_results_and_eof_packets() {
        // OK with "more results", then a result set of 2 rows ending in EOF.
        let mut a = Answer::new(com::QUERY, false);
        let got = feed(
            &mut a,
            &[
                &[0, 3, 0, 8, 0, 0, 0],
                &[1],
                b"\x03def",
                &[0xfe, 0, 0, 0, 0],
                &[0, 0, 1],
                &[0, 0, 2],
                &[0xfe, 0, 0, 2, 0],
            ],
        );
        let done = Outcome::Done {
            affected: 3,
            rows: 2,
        };
        assert_eq!(got.last(), Some(&Progress::Done(done)));
        assert!(got[..6].iter().all(|p| *p == Progress::More));
    }

    #[test]
    fn an_observer_learns_the_eof_mode() {
        let mut a = Answer::observed(com::STMT_EXECUTE, None);
        let got = feed(
            &mut a,
            &[&[1], b"\x03def", &[0, 0, 1], &[0xfe, 0, 0, 2, 0, 0, 0]],
        );
        assert!(matches!(
            got[3],
            Progress::Done(Outcome::Done { rows: 1, .. })
        ));
        assert_eq!(a.deprecate_eof(), Some(true));
        // The agreed mode is held to: a row where the EOF should be is an error.
        let mut a = Answer::new(com::STMT_EXECUTE, false);
        let got = feed(&mut a, &[&[1], b"\x03def", &[0, 0, 1]]);
        assert!(matches!(got[2], Progress::Unreadable(_)));
    }

    #[test]
    fn prepare_and_errors() {
        let mut a = Answer::new(com::STMT_PREPARE, true);
        let got = feed(
            &mut a,
            &[
                &[0, 7, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0],
                b"\x03def",
                b"\x03def",
            ],
        );
        let want = Outcome::Prepared {
            id: 7,
            params: 1,
            columns: 1,
        };
        assert_eq!(got[2], Progress::Done(want));
        let mut a = Answer::new(com::QUERY, true);
        let got = feed(&mut a, &[b"\xff\x15\x04#42000denied", b"\x00"]);
        match &got[0] {
            Progress::Done(Outcome::Err(e)) => {
                assert_eq!(
                    (e.code, e.state.as_str(), e.message.as_str()),
                    (1045, "42000", "denied")
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(got[1], Progress::Unreadable(_)), "after the end");
    }
}
