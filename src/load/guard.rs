//! The settings guard: every `SET GLOBAL` the sweep and tune make goes through here. Before the
//! first change of a variable the guard checks the change journal (refusing a variable another
//! spinscope holds or left changed) and takes the server-side named lock `spinscope:<variable>`
//! (visible to clients on every host); a run that changes settings also holds
//! [`RUN_LOCK`] for its whole length, so a second tune or sweep on the server refuses to start.
//!
//! Every statement, the first value, later values and the way back between variants, is
//! journaled (old and intended value, fsynced) **before** it is sent; every global variable is
//! read just before and just after it on the same connection, and only what moved between
//! those two reads is a side effect (`innodb_io_capacity` moves `innodb_io_capacity_max`),
//! journaled and restored too. Any other global that moves during the run is someone else's:
//! reported, never reverted; when it is one of the run's own variables the steps it overlapped
//! are invalid and the run stops, leaving their value. `restore` (also called from `Drop`, so
//! on every error path and after a signal) sets back only what still holds spinscope's value,
//! reads it again to prove it, and only then closes the journal record.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use mysql::Value;

use super::spec::{restart_refusal, sql_value, Setting, Variant};
use super::{describe_error, is_connection_error, Connector};
use crate::change::{self, Change, Conflict, SetGlobal};
use crate::error::{Error, Result};
use crate::journal::{self, Record, ServerId};
use crate::session::{self, Session};

/// How the guard opens its admin session (again after a KILL or a restart): a real
/// connection, or a scripted server in tests.
pub type Opener = std::sync::Arc<dyn Fn() -> Result<Box<dyn Session>> + Send + Sync>;

pub use crate::globals::Changed;

/// What the guard has to say (each a `spinscope: TEXT` line's text), kept until the engine
/// running it hands them to its observer or meter; shared, so a caller whose meter is busy
/// while the guard works (tune's race) takes them between measurements.
pub type Said = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Take what `said` holds, oldest first.
pub fn take_said(said: &Said) -> Vec<String> {
    std::mem::take(&mut *said.lock().unwrap_or_else(|e| e.into_inner()))
}

pub struct SettingsGuard {
    connect: Opener,
    /// Notes not yet taken by the engine (see [`Said`]).
    said: Said,
    /// The server `connect` reaches: its endpoint and connection flags, for journal records
    /// (this guard's own, never another connection's).
    endpoint: String,
    connect_hint: String,
    conn: Option<Box<dyn Session>>,
    changed: Vec<Changed>,
    /// Journal record id of each entry of `changed`.
    records: Vec<Option<Record>>,
    /// Named locks held on the admin connection.
    locks: Vec<String>,
    server: Option<ServerId>,
    /// Every global variable before the first change.
    baseline: Option<BTreeMap<String, String>>,
    /// Scratch schema that keeps a server-side copy of the journal records.
    mirror: Option<String>,
    done: bool,
    /// Every global as last read (after our own statements, at step boundaries): what differs
    /// at the next read was changed by someone else.
    known: Option<BTreeMap<String, String>>,
    /// Changes by someone else not yet reported.
    foreign: Vec<Foreign>,
    /// Variables of this run someone else changed: never set again by this run.
    disowned: Vec<Foreign>,
    /// A lock this run held and could not take again after a reconnect.
    lost_lock: Option<String>,
    /// Steps seen so far (for messages).
    steps: usize,
    /// The server restarted during the run: our changes went with it.
    restarted: bool,
    /// The server stopped answering (a read timed out): every later wait is one attempt.
    silent: Option<String>,
}

/// A read or write that ran into the connection's timeout (also inside the packet codec): the
/// server is there but does not answer (stopped, hung), so trying again only waits as long
/// again.
fn timed_out(e: &mysql::Error) -> bool {
    crate::error::is_timeout(e)
}

/// A global variable someone else changed while spinscope ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    pub variable: String,
    pub from: String,
    pub to: String,
}

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} -> {}", self.variable, self.from, self.to)
    }
}

/// The server-side named lock a tune or a sweep that changes settings holds for its whole run.
pub const RUN_LOCK: &str = "spinscope:run";

/// Variables that move on their own; never taken for a side effect.
fn volatile(name: &str) -> bool {
    journal::volatile_global(name)
}

// A value as SHOW VARIABLES prints it, as an SQL literal for SET GLOBAL.
use crate::globals::sql_literal as literal_of_text;

/// The named lock that marks a live holder of a variable.
fn lock_name(var: &str) -> String {
    SetGlobal(var).lock()
}

/// A value read back from the server as an SQL literal that `SET GLOBAL` accepts again.
fn literal(v: &Value) -> String {
    match v {
        Value::Bytes(b) => literal_of_text(&String::from_utf8_lossy(b)),
        other => other.as_sql(false),
    }
}

/// The value a server stores for an integer `want` outside its published range: bounded by
/// the maximum, rounded down to the block size, then raised to the minimum (MariaDB's order
/// for integer options). None when `want` is kept as given or any part does not parse.
pub fn clamp_like_server(
    want: &str,
    min: Option<&str>,
    max: Option<&str>,
    block: Option<&str>,
) -> Option<String> {
    let num = |s: Option<&str>| s.and_then(|s| s.trim().parse::<i128>().ok());
    let w = num(Some(want))?;
    let mut v = w;
    if let Some(hi) = num(max) {
        v = v.min(hi);
    }
    if let Some(b) = num(block).filter(|b| *b > 1) {
        v = v.checked_div_euclid(b)?.checked_mul(b)?;
    }
    if let Some(lo) = num(min) {
        v = v.max(lo);
    }
    (v != w).then(|| v.to_string())
}

fn plain(lit: &str) -> String {
    lit.trim_matches('\'').to_string()
}

impl SettingsGuard {
    /// A guard for the server `connect` reaches at `endpoint` (`connect_hint`: the flags that
    /// reach it again, for the restore hint).
    pub fn new(connect: Connector, endpoint: &str, connect_hint: &str) -> SettingsGuard {
        let open: Opener = std::sync::Arc::new(move || connect().map(session::boxed));
        SettingsGuard::on_sessions(open, endpoint, connect_hint)
    }

    /// [`new`](Self::new) with the admin sessions `connect` opens.
    pub fn on_sessions(connect: Opener, endpoint: &str, connect_hint: &str) -> SettingsGuard {
        SettingsGuard {
            connect,
            said: Said::default(),
            endpoint: endpoint.to_string(),
            connect_hint: connect_hint.to_string(),
            conn: None,
            changed: Vec::new(),
            records: Vec::new(),
            locks: Vec::new(),
            server: None,
            baseline: None,
            mirror: None,
            done: false,
            known: None,
            foreign: Vec::new(),
            disowned: Vec::new(),
            lost_lock: None,
            steps: 0,
            restarted: false,
            silent: None,
        }
    }

    /// Where the guard's notes wait to be shown (see [`Said`]).
    pub fn said(&self) -> Said {
        std::sync::Arc::clone(&self.said)
    }

    fn say(&self, text: String) {
        self.said
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }

    /// Keep a copy of every journal record in `schema` (the scratch schema the sweep writes
    /// in anyway), so spinscope on another client host sees what this one changed.
    pub fn mirror_to_schema(&mut self, schema: &str) {
        self.mirror = Some(schema.to_string());
    }

    fn conn(&mut self) -> Result<&mut dyn Session> {
        if self.conn.is_none() {
            let mut c = (self.connect)()?;
            // A new admin connection (after a KILL or a reconnect): take our locks again. One
            // that someone else took meanwhile stops the run at its next change.
            for l in &self.locks {
                let got = change::take_lock(&mut *c, l).unwrap_or(false);
                if !got && self.lost_lock.is_none() {
                    self.lost_lock = Some(l.clone());
                }
            }
            self.conn = Some(c);
        }
        Ok(self.conn.as_deref_mut().expect("set above"))
    }

    /// Run `f` on the admin connection; when the connection is gone (a server restart, a
    /// KILL), open a new one and try once more.
    fn with_conn<T>(
        &mut self,
        what: &str,
        f: impl Fn(&mut dyn Session) -> mysql::Result<T>,
    ) -> Result<T> {
        let t0 = std::time::Instant::now();
        let r = self.with_conn_inner(what, f);
        if r.is_err() && self.silent.is_none() && t0.elapsed() >= std::time::Duration::from_secs(1)
        {
            // A failure that took a wait to arrive: the server is there but not answering.
            let why = format!(
                "{what}: no answer within {:.0} s",
                t0.elapsed().as_secs_f64()
            );
            self.went_silent(why);
        }
        r
    }

    /// The server stopped answering: said at once (the run's end may take one more wait per
    /// connection), and every later wait is one attempt.
    fn went_silent(&mut self, why: String) {
        if self.silent.is_none() {
            self.say(format!(
                "the server stopped answering ({why}); the run stops, puts back what the server still answers for, and keeps the results so far"
            ));
            self.silent = Some(why);
        }
    }

    fn with_conn_inner<T>(
        &mut self,
        what: &str,
        f: impl Fn(&mut dyn Session) -> mysql::Result<T>,
    ) -> Result<T> {
        let first = f(self.conn()?);
        let r = match first {
            Err(e) if timed_out(&e) => {
                self.went_silent(format!("{what}: {}", describe_error(&e).1));
                Err(e)
            }
            Err(e) if is_connection_error(&e) && self.silent.is_none() => {
                self.conn = None;
                f(self.conn()?)
            }
            other => other,
        };
        r.map_err(|e| {
            self.conn = None;
            Error::runtime(format!("{what}: {}", describe_error(&e).1))
        })
    }

    fn read(&mut self, var: &str) -> Result<String> {
        let sql = format!("SELECT @@GLOBAL.{var}");
        let v: Option<Value> =
            self.with_conn(&format!("reading @@GLOBAL.{var}"), |c| c.query_first(&sql))?;
        v.map(|v| literal(&v))
            .ok_or_else(|| Error::runtime(format!("reading @@GLOBAL.{var}: no row")))
    }

    /// What the server will hold after `SET GLOBAL var = want` when it clamps an out-of-range
    /// number (MariaDB and MySQL take it with a warning), from the range the server itself
    /// publishes: None when `want` is in range, not a plain integer, or the range is unknown.
    /// Journaled with the intended value, so that a crash between the statement and its
    /// read-back leaves a record `restore` recognises as its own.
    fn clamped_value(&mut self, var: &str, want: &str) -> Option<String> {
        want.trim().parse::<i128>().ok()?;
        let name = var.to_ascii_uppercase();
        let mariadb = "SELECT NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, NUMERIC_BLOCK_SIZE \
                       FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = ?";
        let mysql = "SELECT MIN_VALUE, MAX_VALUE, NULL FROM performance_schema.variables_info \
                     WHERE VARIABLE_NAME = ?";
        type Range = (Option<String>, Option<String>, Option<String>);
        // Straight on the admin connection, not through `with_conn`: the table one flavor lacks
        // is an error that must not drop the connection (and with it the run's named locks).
        let conn = self.conn().ok()?;
        let mut row: Option<Range> = None;
        for sql in [mariadb, mysql] {
            match conn.exec_first(sql, (name.as_str(),)) {
                Ok(Some(r)) => {
                    row = Some(r);
                    break;
                }
                Ok(None) => {}
                Err(e) if timed_out(&e) => {
                    let why = describe_error(&e).1;
                    self.went_silent(format!("reading the range of {var}: {why}"));
                    return None;
                }
                Err(_) => {}
            }
        }
        let (min, max, block) = row?;
        clamp_like_server(want, min.as_deref(), max.as_deref(), block.as_deref())
    }

    fn globals(&mut self) -> Result<BTreeMap<String, String>> {
        let rows: Vec<(String, Option<String>)> = self
            .with_conn("reading SHOW GLOBAL VARIABLES", |c| {
                c.query("SHOW GLOBAL VARIABLES")
            })?;
        Ok(rows
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.unwrap_or_default()))
            .collect())
    }

    /// The server's identity and every global variable, once, before the first change.
    fn ensure_server(&mut self) -> Result<ServerId> {
        if let Some(s) = &self.server {
            return Ok(s.clone());
        }
        let (endpoint, hint) = (self.endpoint.clone(), self.connect_hint.clone());
        let id = self.with_conn("identifying the server", |c| {
            journal::identify(c, &endpoint, &hint)
        })?;
        let all = self.globals()?;
        if self.known.is_none() {
            self.known = Some(all.clone());
        }
        self.baseline = Some(all);
        self.server = Some(id.clone());
        Ok(id)
    }

    /// Refuse a variable another spinscope holds (live) or left changed (dead), then take its
    /// named lock so others see us.
    fn claim(&mut self, var: &str, server: &ServerId) -> Result<()> {
        let conflict = self.with_conn("reading the change journal", |c| {
            Ok(change::conflict(c, server, &SetGlobal(var)))
        })?;
        match conflict {
            None => {}
            Some(Conflict::Live(r)) => {
                return Err(Error::bad_input(format!(
                    "{var} is being changed by another spinscope: {}; wait until it ends (its measurements would be disturbed by ours and ours by its)",
                    journal::describe(&r)
                )))
            }
            Some(Conflict::LeftChanged(r)) => {
                return Err(Error::bad_input(format!(
                    "{var} was left changed: {}; run `spinscope restore {}` first, so the sweep does not take {} for the original",
                    journal::describe(&r),
                    server.connect_hint,
                    r.set_to
                )))
            }
        }
        let name = lock_name(var);
        let got = self.with_conn("taking the named lock", |c| change::take_lock(c, &name))?;
        if !got {
            let who = self.lock_holder(&name);
            return Err(Error::bad_input(format!(
                "{var} is being changed by another spinscope: {who} holds the lock {name}; wait until it ends"
            )));
        }
        self.locks.push(name);
        Ok(())
    }

    fn journal_change(
        &mut self,
        server: &ServerId,
        var: &str,
        original: &str,
        set_to: &str,
        lock: &str,
    ) -> Result<Record> {
        let rec = Record {
            lock: Some(lock_name(lock)),
            server_copy: self.mirror.clone(),
            ..change::record(
                &SetGlobal(var),
                server,
                plain(original),
                plain(set_to),
                original,
            )
        };
        journal::open(&rec)?;
        self.copy_to_server(&rec);
        Ok(rec)
    }

    /// Read every global; what differs from the last reading (not by our statements) is
    /// someone else's change, queued for the step to report.
    fn observe(&mut self) -> Result<BTreeMap<String, String>> {
        let now = self.globals()?;
        if let Some(known) = &self.known {
            for (name, to) in &now {
                match known.get(name) {
                    Some(from) if from != to && !volatile(name) => self.foreign.push(Foreign {
                        variable: name.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    }),
                    _ => {}
                }
            }
        }
        self.known = Some(now.clone());
        Ok(now)
    }

    /// Before a step's load: start watching the globals (first step) and hand back what
    /// someone else changed since the last step ended. Foreign changes of the run's own
    /// variables are remembered: the run stops at its next change.
    pub fn step_start(&mut self) -> Result<Vec<Foreign>> {
        self.steps += 1;
        self.check_answering()?;
        self.observe()?;
        Ok(self.take_foreign())
    }

    /// After a step's load: what someone else changed during it.
    pub fn step_end(&mut self) -> Result<Vec<Foreign>> {
        self.check_answering()?;
        self.observe()?;
        Ok(self.take_foreign())
    }

    /// Whether the server stopped answering (a read ran into the query timeout).
    pub fn silent(&self) -> bool {
        self.silent.is_some()
    }

    fn check_answering(&self) -> Result<()> {
        match &self.silent {
            Some(why) => Err(Error::runtime(format!(
                "the server stopped answering ({why}); stopping, putting back what it answers for, and keeping the results so far"
            ))),
            None => Ok(()),
        }
    }

    /// The number of the current step (1-based, as [`step_start`](Self::step_start) counts).
    pub fn step_no(&self) -> usize {
        self.steps
    }

    /// Whether the server restarted since the run identified it (its start time moved): then
    /// every record closes, the changes went with the restart.
    fn check_restart(&mut self) -> bool {
        let Some(server) = self.server.clone() else {
            return false;
        };
        let now = self.with_conn("identifying the server", |c| {
            journal::identify(c, &server.endpoint, &server.connect_hint)
        });
        let Ok(now) = now else { return false };
        if (now.started_unix_s - server.started_unix_s).abs() <= journal::RESTART_SLACK_S {
            return false;
        }
        self.say("the server restarted during the run: spinscope's changes went with it; their journal records are closed and the run stops".into());
        for i in 0..self.changed.len() {
            self.close_record(i);
            self.changed[i].note = format!(
                "{} went with the server restart (it reads what the restarted server set)",
                self.changed[i].variable
            );
        }
        self.restarted = true;
        true
    }

    fn take_foreign(&mut self) -> Vec<Foreign> {
        let out = std::mem::take(&mut self.foreign);
        let hits_ours = out.iter().any(|f| {
            self.changed
                .iter()
                .any(|c| c.variable.eq_ignore_ascii_case(&f.variable))
        });
        if hits_ours && self.check_restart() {
            // The values moved with the restart: nobody else changed them.
            return Vec::new();
        }
        for f in &out {
            if self
                .changed
                .iter()
                .any(|c| c.variable.eq_ignore_ascii_case(&f.variable))
                && !self.disowned.iter().any(|d| d.variable == f.variable)
            {
                self.disowned.push(f.clone());
            }
        }
        out
    }

    /// Send one change statement for `changed[idx]`: the record says old and intended value
    /// (fsynced) before it is sent; the globals read just before and after it on this
    /// connection name its side effects; the record then says what the server holds.
    fn send(&mut self, idx: usize, want: &str) -> Result<String> {
        let var = self.changed[idx].variable.clone();
        let Some(mut rec) = self.records.get(idx).cloned().flatten() else {
            return Err(Error::runtime(format!(
                "{var}: its journal record is closed; not changing it again"
            )));
        };
        let pre = self.observe()?;
        let prev = rec.set_to.clone();
        rec.also_ours = if journal::same_value(&prev, &rec.original) {
            Vec::new()
        } else {
            vec![prev]
        };
        rec.set_to = plain(want);
        if let Some(v) = self.clamped_value(&var, want) {
            rec.also_ours.push(v);
        }
        rec.around = pre
            .iter()
            .filter(|(k, _)| !volatile(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        journal::open(&rec)?;
        self.copy_to_server(&rec);
        self.records[idx] = Some(rec.clone());
        journal::fault_point(journal::Fault::AfterJournal);
        self.set(&var, want)?;
        journal::fault_point(journal::Fault::AfterStatement);
        let post = self.globals()?;
        let actual = self.read(&var)?;
        self.known = Some(post.clone());
        self.catch_side_effects(&var, &pre, &post)?;
        rec.set_to = plain(&actual);
        rec.also_ours.clear();
        rec.around.clear();
        journal::open(&rec)?;
        self.copy_to_server(&rec);
        self.records[idx] = Some(rec);
        Ok(actual)
    }

    /// Take [`RUN_LOCK`] for the whole run (a tune, or a sweep that changes settings): refused
    /// while another spinscope holds it, naming its server connection.
    pub fn take_run_lock(&mut self) -> Result<()> {
        if self.locks.iter().any(|l| l == RUN_LOCK) {
            return Ok(());
        }
        let got = self.with_conn("taking the named lock", |c| change::take_lock(c, RUN_LOCK))?;
        if !got {
            let who = self.lock_holder(RUN_LOCK);
            // Name the holder's changes too, from the journal (this host's or the server's copy).
            let mut what = String::new();
            if let Ok(server) = self.ensure_server() {
                let recs = self
                    .with_conn("reading the change journal", |c| {
                        Ok(journal::records_for(c, &server))
                    })
                    .unwrap_or_default();
                if let Some(r) = recs.first() {
                    what = format!(
                        "; being changed by another spinscope: {}",
                        journal::describe(r)
                    );
                }
            }
            return Err(Error::bad_input(format!(
                "another spinscope is running a tune or a sweep that changes settings on this server: {who} holds the lock {RUN_LOCK}{what}; wait until it ends (both runs would change and measure the same server)"
            )));
        }
        self.locks.push(RUN_LOCK.into());
        Ok(())
    }

    /// Who holds a named lock, for messages.
    fn lock_holder(&mut self, name: &str) -> String {
        let id: Option<u64> = self
            .with_conn("reading the lock holder", |c| {
                c.exec_first("SELECT IS_USED_LOCK(?)", (name,))
            })
            .ok()
            .flatten()
            .flatten();
        let Some(id) = id else {
            return "another connection".into();
        };
        let uh: Option<(String, String)> = self
            .with_conn("reading the lock holder", |c| {
                c.exec_first(
                    "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?",
                    (id,),
                )
            })
            .ok()
            .flatten();
        match uh {
            Some((u, h)) => format!("server connection {id} ({u}@{h})"),
            None => format!("server connection {id}"),
        }
    }

    /// The server-side copy; a failure is reported, the local journal is the durable one.
    fn copy_to_server(&mut self, rec: &Record) {
        if rec.server_copy.is_none() {
            return;
        }
        if let Err(e) = self.with_conn("copying the journal record to the server", |c| {
            journal::write_server_copy(c, rec)
        }) {
            self.say(format!("note: {e}; the local journal still has the record"));
        }
    }

    /// Variables the server moved as a direct consequence of our statement on `cause` (read
    /// just before and just after it on this connection): journal them (restored with the
    /// rest) and say so.
    fn catch_side_effects(
        &mut self,
        cause: &str,
        pre: &BTreeMap<String, String>,
        post: &BTreeMap<String, String>,
    ) -> Result<()> {
        let Some(server) = self.server.clone() else {
            return Ok(());
        };
        for (name, before) in pre {
            let Some(after) = post.get(name) else {
                continue;
            };
            if after == before || volatile(name) || name.eq_ignore_ascii_case(cause) {
                continue;
            }
            if let Some(i) = self
                .changed
                .iter()
                .position(|c| c.variable.eq_ignore_ascii_case(name))
            {
                // Ours already: its record now says the new value.
                if let Some(mut rec) = self.records[i].clone() {
                    rec.set_to = after.clone();
                    journal::open(&rec)?;
                    self.copy_to_server(&rec);
                    self.records[i] = Some(rec);
                }
                continue;
            }
            let orig = literal_of_text(before);
            let rec = self.journal_change(&server, name, &orig, &literal_of_text(after), cause)?;
            self.say(format!(
                "the server moved {name} from {before} to {after} when {cause} changed; it is restored too"
            ));
            self.changed.push(Changed {
                variable: name.clone(),
                original: orig,
                restored: false,
                note: String::new(),
                side_effect: true,
            });
            self.records.push(Some(rec));
            self.done = false;
        }
        Ok(())
    }

    /// Check, before anything runs, that every variable exists and can be set at run time, by
    /// setting each to its own current value (a no-op). Unknown or read-only variables are bad
    /// input; a missing privilege is a runtime failure.
    pub fn validate(&mut self, variants: &[Variant]) -> Result<()> {
        let mut seen: Vec<&str> = Vec::new();
        for s in variants.iter().flat_map(|v| &v.settings) {
            if seen.contains(&s.variable.as_str()) {
                continue;
            }
            seen.push(&s.variable);
            let var = s.variable.clone();
            let r = self
                .conn()?
                .query_drop(format!("SET GLOBAL {var} = @@GLOBAL.{var}"));
            if let Err(e) = r {
                let (code, msg) = describe_error(&e);
                return Err(match code {
                    Some(1193) => Error::bad_input(format!(
                        "--variant: the server has no variable {var} ({msg}); check the name with SHOW GLOBAL VARIABLES LIKE '{var}'"
                    )),
                    Some(1238) => Error::bad_input(restart_refusal(&var)),
                    Some(1228) | Some(1229) => Error::bad_input(format!(
                        "--variant: {var} is not a global variable ({msg}); only global settings can be compared"
                    )),
                    Some(1227) => Error::runtime(format!(
                        "--variant: not allowed to SET GLOBAL {var} ({msg}); connect as a user with SUPER or SYSTEM_VARIABLES_ADMIN"
                    )),
                    _ => Error::runtime(format!("checking {var}: {msg}")),
                });
            }
        }
        Ok(())
    }

    fn set(&mut self, var: &str, lit: &str) -> Result<()> {
        let sql = format!("SET GLOBAL {var} = {lit}");
        self.with_conn(&sql.clone(), |c| c.query_drop(&sql))
    }

    /// Put the server into `variant`'s settings: variables changed earlier and not named by this
    /// variant go back to their original value first. Returns what the server now reports for
    /// each named variable (MariaDB clamps out-of-range values with a warning). Refuses once a
    /// lock was lost or someone else changed one of the run's variables.
    pub fn apply(&mut self, variant: &Variant) -> Result<Vec<Setting>> {
        self.check_answering()?;
        if self.restarted {
            return Err(Error::runtime(
                "the server restarted during the run (its start time moved); stopping with the results so far",
            ));
        }
        if let Some(l) = &self.lost_lock {
            return Err(Error::runtime(format!(
                "the admin connection was lost and another session took the lock {l} meanwhile (another spinscope?); stopping and putting back what is still ours"
            )));
        }
        if let Some(f) = self.disowned.first() {
            return Err(Error::runtime(format!(
                "{} was changed by someone else during the run ({} -> {}); the run stops so as not to overwrite it, and leaves it as they set it",
                f.variable, f.from, f.to
            )));
        }
        let others: Vec<usize> = (0..self.changed.len())
            .filter(|&i| {
                let c = &self.changed[i];
                !variant.settings.iter().any(|s| s.variable == c.variable)
                    && self.records[i]
                        .as_ref()
                        .is_some_and(|r| !journal::same_value(&r.set_to, &c.original))
            })
            .collect();
        for i in others {
            let orig = self.changed[i].original.clone();
            self.send(i, &orig)?;
        }
        let mut now = Vec::new();
        for s in &variant.settings {
            let want = sql_value(&s.value);
            let idx = match self.changed.iter().position(|c| c.variable == s.variable) {
                Some(i) => i,
                None => self.first_change(&s.variable)?,
            };
            self.done = false;
            let actual = self.send(idx, &want)?;
            now.push(Setting {
                variable: s.variable.clone(),
                value: plain(&actual),
            });
        }
        Ok(now)
    }

    /// Claim a variable, read its original value, and keep a record for it (written to the
    /// journal by [`send`](Self::send) before the first statement).
    fn first_change(&mut self, var: &str) -> Result<usize> {
        let server = self.ensure_server()?;
        self.claim(var, &server)?;
        let original = self.read(var)?;
        let rec = Record {
            server_copy: self.mirror.clone(),
            ..change::record(
                &SetGlobal(var),
                &server,
                plain(&original),
                plain(&original),
                &original,
            )
        };
        self.say(format!(
            "changing {var} (was {}); it is restored at the end, on error and on a signal (journal: {})",
            plain(&original),
            journal::dir().map(|d| d.display().to_string()).unwrap_or_default()
        ));
        self.changed.push(Changed {
            variable: var.to_string(),
            original,
            restored: false,
            note: String::new(),
            side_effect: false,
        });
        self.records.push(Some(rec));
        Ok(self.changed.len() - 1)
    }

    /// Set every changed variable back and read it again. A variable that could not be
    /// restored is said on stderr with the statement to run; a success is said there only when
    /// stdout is not a terminal (the report the caller prints lists every restore).
    pub fn restore(&mut self) -> Vec<Changed> {
        self.restore_saying(false)
    }

    /// `always`: say every restore on stderr (the guard is dropped on an error path, so no
    /// report will list them); otherwise a success is said there only when stdout is not a
    /// terminal, as the report printed there lists it.
    fn restore_saying(&mut self, always: bool) -> Vec<Changed> {
        if self.done {
            return self.changed.clone();
        }
        self.done = true;
        // A server that does not answer gets one attempt, not one wait per variable.
        let mut unanswered = false;
        for i in 0..self.changed.len() {
            let note = if unanswered {
                let c = &self.changed[i];
                format!(
                    "could not restore {} (the server does not answer); run SET GLOBAL {} = {}",
                    c.variable, c.variable, c.original
                )
            } else {
                self.restore_one(i)
            };
            unanswered |= self.silent.is_some() && !self.changed[i].restored;
            self.changed[i].note = note;
            // The report on stdout lists every restore; a success is said on stderr too only
            // when stdout goes elsewhere (a file, a pipe), so a terminal does not show it twice.
            // A failure is always said at once.
            if always || !(self.changed[i].restored && std::io::stdout().is_terminal()) {
                self.say(self.changed[i].note.clone());
            }
        }
        if self.silent.is_some() {
            // Nothing more to wait for: the locks go with the connection, the journal keeps
            // what could not be put back.
            self.conn = None;
            self.locks.clear();
            let left = self.changed.iter().filter(|c| !c.restored).count();
            if left > 0 && !self.restarted {
                self.say(format!(
                    "the server does not answer: {left} setting(s) stay changed and their journal records open; `spinscope restore` with the same connection flags puts them back once it answers"
                ));
            }
            return self.changed.clone();
        }
        self.report_late_moves();
        let locks = std::mem::take(&mut self.locks);
        if let Some(c) = self.conn.as_deref_mut() {
            for l in &locks {
                let _ = c.exec_drop("DO RELEASE_LOCK(?)", (l,));
            }
        }
        self.changed.clone()
    }

    /// Put `changed[i]` back if the server still holds a value of ours; a value someone else
    /// set is left and its record closed (it is theirs now). Returns the line to print.
    fn restore_one(&mut self, i: usize) -> String {
        if self.restarted {
            return self.changed[i].note.clone();
        }
        let (var, orig) = (
            self.changed[i].variable.clone(),
            self.changed[i].original.clone(),
        );
        let mut current = self.read(&var);
        if current.is_err() && self.silent.is_none() {
            // One reconnect: the server may have dropped our admin connection.
            self.conn = None;
            current = self.read(&var);
        }
        let current = match current {
            Ok(v) => v,
            Err(e) => {
                return format!("could not restore {var} ({e}); run SET GLOBAL {var} = {orig}")
            }
        };
        let rec = self.records.get(i).cloned().flatten();
        if !journal::same_value(&current, &orig) {
            if let Some(r) = rec.as_ref().filter(|r| !r.ours(&current)) {
                if self.restarted || self.check_restart() {
                    return self.changed[i].note.clone();
                }
                let line = format!(
                    "left {var} = {}: someone else changed it after spinscope set {} (original {}); not reverted",
                    plain(&current),
                    r.set_to,
                    plain(&orig)
                );
                self.close_record(i);
                return line;
            }
            let mut outcome = self.set(&var, &orig).and_then(|_| self.read(&var));
            if outcome.is_err() && self.silent.is_none() {
                self.conn = None;
                outcome = self.set(&var, &orig).and_then(|_| self.read(&var));
            }
            match outcome {
                Ok(v) if journal::same_value(&v, &orig) => {}
                Ok(v) => {
                    return format!(
                        "could not restore {var}: it reads {} instead of {}; run SET GLOBAL {var} = {orig}",
                        plain(&v),
                        plain(&orig)
                    )
                }
                Err(e) => {
                    return format!("could not restore {var} ({e}); run SET GLOBAL {var} = {orig}")
                }
            }
        }
        // Read back equal: only now the journal record closes.
        self.changed[i].restored = true;
        self.close_record(i);
        format!("restored {var} = {} (read back)", plain(&orig))
    }

    fn close_record(&mut self, i: usize) {
        if let Some(rec) = self.records.get_mut(i).and_then(Option::take) {
            // The server's copy first: a kill between the two leaves the local record, which
            // `restore` closes as already back, never a copy that warns other hosts wrongly.
            if let Some(c) = self.conn.as_deref_mut() {
                journal::delete_server_copy(c, &rec);
            }
            journal::close(&rec.id);
        }
    }

    /// After restoring: any global still different from the snapshot is reported (not
    /// touched: it may be someone else's change made meanwhile).
    fn report_late_moves(&mut self) {
        // After a restart the globals read what the restarted server set (said once already).
        if self.restarted {
            return;
        }
        let Some(base) = self.baseline.clone() else {
            return;
        };
        let Ok(now) = self.globals() else { return };
        for (name, before) in &base {
            match now.get(name) {
                Some(after) if after != before && !volatile(name) => self.say(format!(
                    "note: {name} is {after} now, {before} before the sweep; spinscope did not set it (someone else may have), so it is left as is"
                )),
                _ => {}
            }
        }
    }

    /// Leave the values set now on purpose (`tune --apply`): a variable still at its original
    /// value closes like a restore; every other record moves to the journal's log of intended
    /// changes (`journal::mark_intended`) instead of staying open, and nothing is restored on
    /// drop.
    pub fn keep(&mut self) -> Vec<Changed> {
        if self.done {
            return self.changed.clone();
        }
        self.done = true;
        for i in 0..self.changed.len() {
            let (var, orig) = (
                self.changed[i].variable.clone(),
                self.changed[i].original.clone(),
            );
            let now = self.read(&var);
            let Some(rec) = self.records.get_mut(i).and_then(Option::take) else {
                continue;
            };
            let note = match now {
                Ok(v) if journal::same_value(&v, &orig) => {
                    journal::close(&rec.id);
                    self.changed[i].restored = true;
                    format!("{var} = {} (unchanged)", plain(&orig))
                }
                Ok(v) => match journal::mark_intended(&rec) {
                    Ok(path) => format!(
                        "left {var} = {} (was {}; --apply): logged as an intended change in {}",
                        plain(&v),
                        plain(&orig),
                        path.display()
                    ),
                    Err(e) => {
                        self.records[i] = Some(rec.clone());
                        format!(
                            "left {var} = {} but {e}; the journal record stays open",
                            plain(&v)
                        )
                    }
                },
                Err(e) => {
                    self.records[i] = Some(rec.clone());
                    format!("could not read {var} back ({e}); the journal record stays open")
                }
            };
            if self.records[i].is_none() {
                if let Some(c) = self.conn.as_deref_mut() {
                    journal::delete_server_copy(c, &rec);
                }
            }
            self.say(note.clone());
            self.changed[i].note = note;
        }
        let locks = std::mem::take(&mut self.locks);
        if let Some(c) = self.conn.as_deref_mut() {
            for l in &locks {
                let _ = c.exec_drop("DO RELEASE_LOCK(?)", (l,));
            }
        }
        self.changed.clone()
    }

    pub fn changed(&self) -> &[Changed] {
        &self.changed
    }
}

impl Drop for SettingsGuard {
    // An engine takes the notes as it goes and after its own restore; a guard dropped on an
    // error path before that (a refused variable, a lock taken) has nobody to hand its last
    // notes to, and what was restored must still be said: printed here.
    fn drop(&mut self) {
        self.restore_saying(true);
        for t in take_said(&self.said) {
            eprintln!("spinscope: {t}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_round_trip() {
        assert_eq!(literal(&Value::Bytes(b"4".to_vec())), "4");
        assert_eq!(literal(&Value::Int(200)), "200");
        assert_eq!(literal(&Value::Bytes(b"ON".to_vec())), "'ON'");
        assert_eq!(plain("'ON'"), "ON");
    }

    #[test]
    fn out_of_range_values_clamp_as_the_server_does() {
        // innodb_spin_wait_delay on MariaDB 10.11: 0..6000, block 0.
        let d = |w| clamp_like_server(w, Some("0"), Some("6000"), Some("0"));
        assert_eq!(d("7000"), Some("6000".into()));
        assert_eq!(d("-3"), Some("0".into()));
        assert_eq!(d("6000"), None);
        assert_eq!(d("'ON'"), None);
        // A block size rounds down before the minimum applies (e.g. 1024-byte sizes).
        let b = |w| clamp_like_server(w, Some("2048"), Some("65536"), Some("1024"));
        assert_eq!(b("5000"), Some("4096".into()));
        assert_eq!(b("100"), Some("2048".into()));
        assert_eq!(b("100000"), Some("65536".into()));
        // An unknown range keeps the value.
        assert_eq!(clamp_like_server("7", None, None, None), None);
    }

    proptest::proptest! {
        #[test]
        fn clamping_never_panics(w in "-?[0-9]{0,40}|.{0,24}", lo in proptest::option::of("-?[0-9]{0,40}"),
                                 hi in proptest::option::of(".{0,24}"),
                                 b in proptest::option::of("-?[0-9]{0,40}")) {
            let _ = clamp_like_server(&w, lo.as_deref(), hi.as_deref(), b.as_deref());
        }
    }
}
