//! The event client: a worker OS thread owns a share of the step's connections and drives them
//! all from one `mio` poll (epoll), each connection a small state machine over nonblocking
//! sockets speaking [`crate::proto`]. A worker sleeps once for whichever of its sockets answers first
//! instead of every connection's thread blocking and waking once per query. The requests of one
//! round (after the ready sockets were read) go out in one io_uring submission: each send wakes
//! a server thread, and sent one by one every wake-up preempted the worker on return from
//! `send`; submitted together the worker is preempted once per round. A round of one request,
//! and every request without io_uring (an older kernel, a seccomp filter, `SPINSCOPE_NO_URING`
//! set), is a plain `send`. No send is left queued between rounds: a round is submitted and its
//! completions reaped before the worker does anything else.
//! Over TLS a request is sealed into its records before its first byte is written, so those
//! writes and sends carry ciphertext as they are, and what is read is opened before it is
//! taken (`WireConn::seal`, `WireConn::take_wire`).
//!
//! What a step measures is the thread client's, line for line (see `load::driver`): one
//! outstanding transaction per connection (closed loop) or the same per-client schedule (open
//! loop), the same plans (`Workload::plan_txn`), the statement store with its capacity and
//! LRU eviction (COM_STMT_CLOSE) and late prepares, the retry rule (1213/1205/1020: ROLLBACK
//! and run again, cut off after the end), error classes, reconnects, and the counting through
//! `ClientResult`. A transaction in flight at the end is awaited (up to [`DRAIN`]) and not
//! counted, as the thread client's last one is.

use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::conn::{closed, WireConn, WireError};
use crate::load::step::{ClientResult, Ctx, RETRY_CODES};
use crate::load::workload::{Op, Prepared};
use crate::load::{stopped, WireConnector};
use crate::proto::answer::Outcome;
use crate::proto::{com, command, Malformed};

/// Longest wait for the transactions in flight at the end of a step (shorter when the
/// connections' `--query-timeout` is: a server that stopped answering is not waited for longer
/// than one answer may take).
pub const DRAIN: Duration = Duration::from_secs(10);
/// Pause between reconnect attempts (as the thread client's).
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);
/// Fewest requests of a round sent through io_uring; smaller rounds use plain `send`.
const URING_MIN: usize = 2;
/// Longest sleep in one wait, so the end and the stop flag are seen soon.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// What the rollback after an error leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    /// A retryable error: run the transaction again (a new draw, the same start).
    Retry,
    /// A retryable error after the end: the transaction was cut off, not counted.
    CutOff,
    /// Any other error (already counted).
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between transactions (open loop: until the next intended start; also done).
    Idle,
    /// `plan[at]` was sent (execute, BEGIN or COMMIT).
    Op,
    /// The prepare of `plan[at]`'s statement was sent.
    Prepare,
    /// ROLLBACK was sent after an error.
    Rollback(After),
    /// No connection: reconnect at `retry_at`.
    Down,
}

/// One client of the step: its connection, its statements and the transaction it runs.
struct Session {
    idx: u32,
    conn: Option<WireConn>,
    store: Option<Prepared<u32>>,
    rng: SmallRng,
    result: ClientResult,
    seen_late: u64,
    plan: Vec<Op>,
    at: usize,
    start: Instant,
    state: State,
    /// The request being written, and how much of it is written.
    out: Vec<u8>,
    out_at: usize,
    /// Waiting for the socket to take more bytes.
    want_out: bool,
    next_intended: Option<Instant>,
    retry_at: Instant,
    /// The error a retry or the rollback after it answers to.
    retry_err: Option<WireError>,
    /// How the connection ended while no request was out (the server closed it, or sent an
    /// error unasked): found when the next transaction starts, as a blocking client would.
    lost: Option<WireError>,
    /// Its request waits in the worker's round of sends (`Worker::pending`).
    send_queued: bool,
    /// Bumped with every new connection, so a completion of an old one's send is ignored.
    generation: u32,
    /// The request in `out` is an execute (counted in `result.executes` when it was built).
    out_execute: bool,
}

impl Session {
    fn new(ctx: &Ctx<'_>, idx: u32, mut conn: WireConn) -> Session {
        let mut result = ClientResult::new(ctx.n_windows);
        let store = match prepare_all(ctx, &mut conn) {
            Ok(p) => Some(p),
            Err(e) => {
                result.first_error = Some(format!("preparing statements: {e}"));
                *result.errors.entry(e.key()).or_default() += 1;
                None
            }
        };
        Session {
            idx,
            conn: Some(conn),
            store,
            rng: SmallRng::seed_from_u64(ctx.cfg.seed ^ (u64::from(idx) << 32)),
            result,
            seen_late: 0,
            plan: Vec::new(),
            at: 0,
            start: Instant::now(),
            state: State::Idle,
            out: Vec::with_capacity(256),
            out_at: 0,
            want_out: false,
            next_intended: None,
            retry_at: Instant::now(),
            retry_err: None,
            lost: None,
            send_queued: false,
            generation: 0,
            out_execute: false,
        }
    }

    /// Start a new request for command `cmd`: its bytes go into `out`.
    fn request(&mut self, cmd: u8) -> &mut Vec<u8> {
        self.out.clear();
        self.out_at = 0;
        self.out_execute = false;
        if let Some(conn) = self.conn.as_mut() {
            conn.asked(cmd);
        }
        &mut self.out
    }
}

/// Prepare the workload's statements on a blocking connection (before the step, or after a
/// reconnect).
fn prepare_all(ctx: &Ctx<'_>, conn: &mut WireConn) -> Result<Prepared<u32>, WireError> {
    let mut p = Prepared::new(ctx.cap);
    for (t, w) in ctx.wl.prepare_order(ctx.cap) {
        let (id, _) = conn.prepare(&ctx.wl.sql(t, w))?;
        p.insert_early(t, w, id);
    }
    Ok(p)
}

struct Worker<'a, 'b> {
    ctx: &'a Ctx<'b>,
    connector: &'a WireConnector,
    poll: Poll,
    sessions: Vec<Session>,
    end: Instant,
    /// How long transactions in flight at the end are awaited (see [`DRAIN`]).
    drain: Duration,
    period: Option<Duration>,
    scratch: Vec<u8>,
    /// The round's sends are submitted on it in one system call before the worker waits
    /// (None: a plain `send` per request, also where io_uring is not available).
    ring: Option<io_uring::IoUring>,
    /// Sessions whose request waits for the end of the round.
    pending: Vec<usize>,
}

/// Run a worker's share of the clients for one step; returns their results in share order.
pub(crate) fn worker(
    ctx: &Ctx<'_>,
    connector: &WireConnector,
    share: Vec<(u32, WireConn)>,
) -> Vec<ClientResult> {
    let drain = share
        .iter()
        .map(|(_, c)| c.query_timeout)
        .max()
        .map_or(DRAIN, |q| q.min(DRAIN));
    let mut sessions: Vec<Session> = share
        .into_iter()
        .map(|(idx, conn)| Session::new(ctx, idx, conn))
        .collect();
    let poll = Poll::new();
    // Everyone prepared: the watcher fixes the start time, then all go together.
    let t0 = ctx.start_together();
    let poll = match poll {
        Ok(p) => p,
        Err(e) => {
            for s in &mut sessions {
                s.result.first_error = Some(format!("poll: {e}"));
                *s.result.errors.entry("driver".into()).or_default() += 1;
            }
            return sessions.into_iter().map(|s| s.result).collect();
        }
    };
    let end = t0 + ctx.cfg.warmup + ctx.cfg.duration;
    let n = sessions.len();
    let mut w = Worker {
        ctx,
        connector,
        poll,
        sessions,
        end,
        drain,
        period: ctx.period(),
        scratch: vec![0u8; 65536],
        ring: if std::env::var_os("SPINSCOPE_NO_URING").is_some() {
            None
        } else {
            io_uring::IoUring::new((n * 2).next_power_of_two().clamp(8, 4096) as u32).ok()
        },
        pending: Vec::with_capacity(n),
    };
    w.start(t0);
    w.run();
    let now = Instant::now().min(end);
    w.sessions
        .into_iter()
        .map(|mut s| {
            if let Some(t) = s.next_intended {
                if t < now {
                    s.result.lag_s = (now - t).as_secs_f64();
                }
            }
            s.result
        })
        .collect()
}

impl Worker<'_, '_> {
    /// First intended starts, and every prepared connection on the poll.
    fn start(&mut self, t0: Instant) {
        let threads = f64::from(self.ctx.cfg.threads);
        for i in 0..self.sessions.len() {
            let s = &mut self.sessions[i];
            s.next_intended = self
                .period
                .map(|p| t0 + p.mul_f64(f64::from(s.idx) / threads));
            if s.store.is_none() {
                s.conn = None;
                s.state = State::Down;
                s.retry_at = t0;
            } else if let Err(e) = self.register(i) {
                self.sessions[i].result.first_error = Some(format!("poll: {e}"));
                self.down(i);
            }
        }
    }

    fn register(&mut self, i: usize) -> io::Result<()> {
        if let Some(conn) = &self.sessions[i].conn {
            conn.stream.set_nonblocking(true)?;
            let fd = conn.stream.as_raw_fd();
            self.poll
                .registry()
                .register(&mut SourceFd(&fd), Token(i), Interest::READABLE)?;
        }
        Ok(())
    }

    /// Watch session `i`'s socket for writability too (`out`), or no longer.
    fn watch_writable(&mut self, i: usize, out: bool) -> io::Result<()> {
        let Some(conn) = &self.sessions[i].conn else {
            return Ok(());
        };
        let fd = conn.stream.as_raw_fd();
        let interest = if out {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        self.poll
            .registry()
            .reregister(&mut SourceFd(&fd), Token(i), interest)
    }

    /// Whether no new transaction may start.
    fn over(&self, now: Instant) -> bool {
        now >= self.end || self.ctx.over()
    }

    fn run(&mut self) {
        let mut events = Events::with_capacity(self.sessions.len().clamp(1, 256));
        let mut drain_until: Option<Instant> = None;
        loop {
            let now = Instant::now();
            let over = self.over(now);
            if over {
                let busy = self
                    .sessions
                    .iter()
                    .any(|s| !matches!(s.state, State::Idle | State::Down));
                let until = *drain_until.get_or_insert(now + self.drain);
                if !busy || now >= until {
                    return;
                }
            }
            let wake = self.due_timers(now, over);
            self.submit_sends();
            let timeout = wake.saturating_duration_since(Instant::now()).min(MAX_WAIT);
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != ErrorKind::Interrupted {
                    events.clear();
                }
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if i >= self.sessions.len() {
                    continue;
                }
                if ev.is_writable() && self.sessions[i].want_out {
                    self.flush_with(i, false);
                }
                self.readable(i);
            }
        }
    }

    /// Start what is due: intended starts (open loop, and closed-loop sessions between
    /// transactions) and reconnects. Returns when the next timer is due.
    fn due_timers(&mut self, now: Instant, over: bool) -> Instant {
        let mut wake = if over { now + MAX_WAIT } else { self.end };
        if over {
            return wake;
        }
        for i in 0..self.sessions.len() {
            let s = &self.sessions[i];
            match s.state {
                State::Idle => match s.next_intended {
                    Some(t) if t > now => wake = wake.min(t),
                    Some(t) if t >= self.end => {}
                    _ => self.begin(i),
                },
                State::Down => {
                    if s.retry_at <= now {
                        self.reconnect(i);
                    }
                    let s = &self.sessions[i];
                    if s.state == State::Down {
                        wake = wake.min(s.retry_at);
                    } else if s.state == State::Idle {
                        wake = now;
                    }
                }
                _ => {}
            }
        }
        wake
    }

    /// Start session `i`'s next transaction (its start: the intended one, else now).
    fn begin(&mut self, i: usize) {
        let now = Instant::now();
        if self.over(now) {
            return;
        }
        let s = &mut self.sessions[i];
        s.start = s.next_intended.unwrap_or(now);
        self.ctx.wl.plan_txn(&mut s.rng, &mut s.plan);
        s.at = 0;
        if s.conn.is_none() || s.lost.is_some() {
            let e = s.lost.take().unwrap_or_else(closed);
            s.conn = None;
            return self.txn_error(i, e);
        }
        self.send_op(i);
    }

    /// The error the server sent unasked on session `i`'s connection, if it did: nothing
    /// more is sent there.
    fn unsolicited(&mut self, i: usize) -> Option<WireError> {
        let conn = self.sessions[i].conn.as_mut()?;
        conn.unsolicited.take().map(WireError::Server)
    }

    /// Send `plan[at]`, or finish the transaction when the plan is done.
    fn send_op(&mut self, i: usize) {
        let ctx = self.ctx;
        let s = &mut self.sessions[i];
        if s.at >= s.plan.len() {
            let mine = &ctx.shared.clients[s.idx as usize];
            let nq = s.plan.len() as u64;
            s.result.finished(ctx, mine, s.start, Instant::now(), nq);
            return self.end_txn(i, false);
        }
        if let Some(e) = self.unsolicited(i) {
            return self.txn_error(i, e);
        }
        let s = &mut self.sessions[i];
        let Session {
            plan,
            at,
            store,
            out,
            out_at,
            conn,
            result,
            state,
            out_execute,
            ..
        } = s;
        *state = State::Op;
        out.clear();
        *out_at = 0;
        *out_execute = false;
        let mut cmd = com::QUERY;
        match &plan[*at] {
            Op::Begin => command::com_query(out, "BEGIN"),
            Op::Commit => command::com_query(out, "COMMIT"),
            Op::Exec { table, which, args } => {
                let store = store
                    .as_mut()
                    .expect("a running session has its statements");
                match store.get(*table, *which) {
                    Some(id) => {
                        command::com_execute(out, id, args);
                        result.executes += 1;
                        *out_execute = true;
                        cmd = com::STMT_EXECUTE;
                    }
                    None => {
                        if let Some(old) = store.evict_if_full() {
                            command::com_close(out, old);
                        }
                        command::com_prepare(out, &ctx.wl.sql(*table, *which));
                        *state = State::Prepare;
                        cmd = com::STMT_PREPARE;
                    }
                }
            }
        }
        if let Some(conn) = conn.as_mut() {
            conn.asked(cmd);
        }
        self.flush(i);
    }

    fn send_rollback(&mut self, i: usize, after: After) {
        if let Some(e) = self.unsolicited(i) {
            self.sessions[i].state = State::Rollback(after);
            return self.on_error(i, e);
        }
        let s = &mut self.sessions[i];
        command::com_query(s.request(com::QUERY), "ROLLBACK");
        s.state = State::Rollback(after);
        self.flush(i);
    }

    /// Send the request just built in `out`: sealed into TLS records when the connection
    /// speaks TLS, then written (or queued for the round); the rest waits for writability
    /// when the socket is full.
    fn flush(&mut self, i: usize) {
        let s = &mut self.sessions[i];
        if let Some(conn) = s.conn.as_mut() {
            if let Err(e) = conn.seal(&mut s.out) {
                return self.on_error(i, e);
            }
        }
        self.flush_with(i, true);
    }

    /// [`Worker::flush`], queuing on the io_uring only when `ring` (not after the kernel said
    /// the socket is full: then the bytes wait for the poll's writability).
    fn flush_with(&mut self, i: usize, ring: bool) {
        let s = &mut self.sessions[i];
        let Some(conn) = s.conn.as_mut() else {
            return;
        };
        if ring && self.ring.is_some() && !s.want_out && s.out_at < s.out.len() {
            // Sent at the end of the round, with the others.
            if !s.send_queued {
                s.send_queued = true;
                self.pending.push(i);
            }
            return;
        }
        while s.out_at < s.out.len() {
            match conn.stream.write(&s.out[s.out_at..]) {
                Ok(0) => {
                    let e = io::Error::new(ErrorKind::WriteZero, "the socket took no bytes");
                    return self.failed_io(i, e);
                }
                Ok(n) => s.out_at += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !s.want_out {
                        if let Err(e) = self.watch_writable(i, true) {
                            return self.failed_io(i, e);
                        }
                        self.sessions[i].want_out = true;
                    }
                    return;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return self.failed_io(i, e),
            }
        }
        if s.want_out {
            s.want_out = false;
            if let Err(e) = self.watch_writable(i, false) {
                self.failed_io(i, e);
            }
        }
    }

    fn failed_io(&mut self, i: usize, e: io::Error) {
        self.on_error(i, WireError::Io(e));
    }

    /// Send the round's requests: one alone with a plain `send`, more in one `io_uring_enter`
    /// (each send wakes a server thread; sent one by one, every wake-up can preempt the worker
    /// on its way back from the system call). Completions may start new requests, which are
    /// sent the same way until none is left.
    fn submit_sends(&mut self) {
        let mut done: Vec<(u64, i32)> = Vec::new();
        let mut round: Vec<usize> = Vec::new();
        while !self.pending.is_empty() {
            std::mem::swap(&mut round, &mut self.pending);
            round.retain(|&i| std::mem::replace(&mut self.sessions[i].send_queued, false));
            if round.len() < URING_MIN || self.ring.is_none() {
                for i in round.drain(..) {
                    self.flush_with(i, false);
                }
                continue;
            }
            done.clear();
            self.submit_round(&round, &mut done);
            self.reap_round(&round, &done);
            round.clear();
        }
    }

    /// Submit one send per session of `round` on the io_uring and wait for their completions
    /// (user data: generation and index).
    fn submit_round(&mut self, round: &[usize], done: &mut Vec<(u64, i32)>) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let cap = ring.params().sq_entries() as usize;
        for chunk in round.chunks(cap) {
            let mut pushed = 0;
            for &i in chunk {
                let s = &self.sessions[i];
                let Some(conn) = s.conn.as_ref() else {
                    continue;
                };
                let rest = &s.out[s.out_at..];
                let fd = io_uring::types::Fd(conn.stream.as_raw_fd());
                let sqe = io_uring::opcode::Send::new(fd, rest.as_ptr(), rest.len() as u32)
                    .flags(libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
                    .build()
                    .user_data(u64::from(s.generation) << 32 | i as u64);
                // SAFETY: the buffer and the socket stay as they are until the completions
                // below are reaped: nothing else runs in between, and a nonblocking send
                // completes within the submitting call.
                if unsafe { ring.submission().push(&sqe) }.is_ok() {
                    pushed += 1;
                }
            }
            let mut waited = ring.submit_and_wait(pushed);
            while matches!(&waited, Err(e) if e.kind() == ErrorKind::Interrupted) {
                waited = ring.submit_and_wait(pushed);
            }
            done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        }
    }

    /// Act on the completions of a round's sends.
    fn reap_round(&mut self, round: &[usize], done: &[(u64, i32)]) {
        for &(user_data, res) in done {
            let (generation, i) = ((user_data >> 32) as u32, (user_data & 0xffff_ffff) as usize);
            let Some(s) = self.sessions.get_mut(i) else {
                continue;
            };
            if s.generation != generation {
                continue;
            }
            if res < 0 {
                if -res == libc::EAGAIN {
                    // The socket is full: the plain path waits for writability.
                    self.flush_with(i, false);
                } else {
                    self.failed_io(i, io::Error::from_raw_os_error(-res));
                }
            } else {
                s.out_at += res as usize;
                if s.out_at < s.out.len() {
                    self.flush_with(i, false);
                }
            }
        }
        // Requests whose completion never came (not expected): sent plainly.
        for &i in round {
            let s = &self.sessions[i];
            if s.conn.is_some()
                && s.out_at < s.out.len()
                && !s.want_out
                && !s.send_queued
                && !done.iter().any(|&(ud, _)| (ud & 0xffff_ffff) as usize == i)
            {
                self.flush_with(i, false);
            }
        }
    }

    /// Read what the socket has and act on a complete answer, or on what the server sent
    /// unasked.
    fn readable(&mut self, i: usize) {
        loop {
            let s = &mut self.sessions[i];
            let Some(conn) = s.conn.as_mut() else {
                return;
            };
            let n = match conn.stream.read(&mut self.scratch) {
                Ok(0) => return self.ended_by_server(i, closed()),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return self.ended_by_server(i, WireError::Io(e)),
            };
            match conn.take_wire(&self.scratch[..n]) {
                // One request is out at a time: a complete answer means nothing more is due
                // now, so the socket is not read again until the poll says so.
                Ok(Some(o)) => return self.on_response(i, o),
                Ok(None) if !conn.awaiting() => {
                    if let Some(e) = conn.unsolicited.take() {
                        return self.ended_by_server(i, WireError::Server(e));
                    }
                }
                Ok(None) => {}
                Err(e) => return self.on_error(i, e),
            }
        }
    }

    /// The server closed session `i`'s connection, or said it would.
    fn ended_by_server(&mut self, i: usize, e: WireError) {
        let s = &mut self.sessions[i];
        if matches!(s.state, State::Idle | State::Down) {
            s.lost = Some(e);
            self.drop_conn(i);
            return;
        }
        self.on_error(i, e);
    }

    fn on_response(&mut self, i: usize, o: Outcome) {
        let s = &mut self.sessions[i];
        match (s.state, o) {
            (_, Outcome::Err(e)) => self.on_error(i, WireError::Server(e)),
            (State::Op, Outcome::Done { .. }) => {
                s.at += 1;
                self.send_op(i);
            }
            (State::Prepare, Outcome::Prepared { id, .. }) => {
                if let (Some(Op::Exec { table, which, args }), Some(store)) =
                    (s.plan.get(s.at), s.store.as_mut())
                {
                    store.insert_late(*table, *which, id);
                    if let Some(conn) = s.conn.as_mut() {
                        conn.asked(com::STMT_EXECUTE);
                    }
                    s.out.clear();
                    s.out_at = 0;
                    command::com_execute(&mut s.out, id, args);
                    s.result.executes += 1;
                    s.out_execute = true;
                    s.state = State::Op;
                    self.flush(i);
                }
            }
            (State::Rollback(After::Retry), _) => {
                let code = s.retry_err.take().and_then(|e| e.code());
                s.result.retried(self.ctx, code);
                self.ctx.wl.plan_txn(&mut s.rng, &mut s.plan);
                s.at = 0;
                self.send_op(i);
            }
            (State::Rollback(_), _) => self.end_txn(i, false),
            (_, other) => self.on_error(
                i,
                WireError::Protocol(Malformed(match other {
                    Outcome::Prepared { .. } => "a statement id where none was asked for",
                    _ => "an answer where none was asked for",
                })),
            ),
        }
    }

    /// The connection failed with an execute out: one the socket did not take whole never
    /// reached the server and is not counted; one it took may or may not have run (a killed
    /// connection's server thread may run it and die before answering): counted as sent and
    /// as unanswered, so the server's count lies between the two.
    fn count_lost_execute(&mut self, i: usize, e: &WireError) {
        let s = &mut self.sessions[i];
        if !matches!(e, WireError::Io(_)) || s.state != State::Op || !s.out_execute {
            return;
        }
        s.out_execute = false;
        if s.out_at < s.out.len() {
            s.result.executes -= 1;
        } else {
            s.result.executes_unanswered += 1;
        }
    }

    fn on_error(&mut self, i: usize, e: WireError) {
        self.count_lost_execute(i, &e);
        match self.sessions[i].state {
            State::Op | State::Prepare => self.txn_error(i, e),
            State::Rollback(After::Retry) => {
                // The rollback before a retry failed: the retryable error stands.
                let ctx = self.ctx;
                let s = &mut self.sessions[i];
                let orig = s.retry_err.take().unwrap_or(e);
                let mine = &ctx.shared.clients[s.idx as usize];
                s.result.failed(ctx, mine, orig.key(), || orig.to_string());
                self.end_txn(i, true);
            }
            State::Rollback(After::CutOff) => self.end_txn(i, e.is_connection_error()),
            State::Rollback(After::Failed) => self.end_txn(i, true),
            State::Idle | State::Down => {
                self.drop_conn(i);
                self.sessions[i].lost = Some(e);
            }
        }
    }

    /// An error of the running transaction (a statement, BEGIN/COMMIT, or a late prepare).
    fn txn_error(&mut self, i: usize, e: WireError) {
        let ctx = self.ctx;
        if e.code().is_some_and(|c| RETRY_CODES.contains(&c)) {
            let cut_off = Instant::now() >= self.end || stopped(ctx.stop);
            self.sessions[i].retry_err = Some(e);
            return self.send_rollback(i, if cut_off { After::CutOff } else { After::Retry });
        }
        let s = &mut self.sessions[i];
        let mine = &ctx.shared.clients[s.idx as usize];
        s.result.failed(ctx, mine, e.key(), || e.to_string());
        if e.is_connection_error() || s.conn.is_none() {
            self.end_txn(i, true);
        } else {
            self.send_rollback(i, After::Failed);
        }
    }

    /// The transaction is over (counted or not): late prepares, the next intended start, and
    /// the next transaction or a reconnect.
    fn end_txn(&mut self, i: usize, down: bool) {
        let ctx = self.ctx;
        let period = self.period;
        let s = &mut self.sessions[i];
        if let Some(p) = s.store.as_ref() {
            s.result.late(ctx, p.late_prepares, &mut s.seen_late);
        }
        if let (Some(t), Some(p)) = (s.next_intended.as_mut(), period) {
            *t += p;
        }
        if down {
            return self.down(i);
        }
        s.state = State::Idle;
        if s.next_intended.is_none_or(|t| t <= Instant::now()) {
            self.begin(i);
        }
    }

    fn down(&mut self, i: usize) {
        self.drop_conn(i);
        let s = &mut self.sessions[i];
        s.store = None;
        s.lost = None;
        s.want_out = false;
        s.state = State::Down;
        s.retry_at = Instant::now();
    }

    /// Close session `i`'s connection (a request still waiting for the round is dropped).
    fn drop_conn(&mut self, i: usize) {
        let s = &mut self.sessions[i];

        s.send_queued = false;
        s.generation = s.generation.wrapping_add(1);
        s.conn = None;
    }

    /// Reconnect session `i` (blocking: connect, authenticate, prepare) and go on.
    fn reconnect(&mut self, i: usize) {
        let ctx = self.ctx;
        let attempt = (self.connector)().and_then(|mut conn| {
            let p = prepare_all(ctx, &mut conn)?;
            Ok((conn, p))
        });
        let s = &mut self.sessions[i];
        let Ok((conn, p)) = attempt else {
            s.retry_at = Instant::now() + RECONNECT_PAUSE;
            return;
        };
        s.seen_late = p.late_prepares;
        s.result.late_prepares += p.len() as u64;
        s.result.reconnects += 1;
        s.conn = Some(conn);
        s.store = Some(p);
        s.state = State::Idle;
        if let Err(e) = self.register(i) {
            let s = &mut self.sessions[i];
            s.result.first_error.get_or_insert(format!("poll: {e}"));
            self.down(i);
            self.sessions[i].retry_at = Instant::now() + RECONNECT_PAUSE;
        }
    }
}
