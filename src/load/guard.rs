//! The settings guard: every `SET GLOBAL` the sweep makes goes through here. Before the first
//! change of a variable the guard checks the change journal (refusing a variable another
//! spinscope holds or left changed), takes the server-side named lock `spinscope:<variable>`
//! (visible to clients on every host), reads the original value and writes a journal record
//! (fsynced) **before** the `SET GLOBAL`. All global variables are read before each variant's
//! changes and again after them; a variable the server moved as a side effect
//! (`innodb_io_capacity` moves `innodb_io_capacity_max`) is journaled and restored too. `restore` (also called from
//! `Drop`, so on every error path and after a signal) sets everything back, reads it again to
//! prove it, and only then closes the journal record.

use std::collections::BTreeMap;

use mysql::prelude::Queryable;
use mysql::{Conn, Value};

use super::spec::{restart_refusal, sql_value, Setting, Variant};
use super::{describe_error, is_connection_error, Connector};
use crate::error::{Error, Result};
use crate::journal::{self, HolderState, Record, ServerId};

pub use crate::model::Changed;

pub struct SettingsGuard {
    connect: Connector,
    conn: Option<Conn>,
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
}

/// Variables that move on their own; never taken for a side effect.
fn volatile(name: &str) -> bool {
    name.starts_with("gtid_") || name.starts_with("wsrep_") || name == "timestamp"
}

/// A value as SHOW VARIABLES prints it, as an SQL literal for SET GLOBAL.
fn literal_of_text(v: &str) -> String {
    if !v.is_empty() && v.parse::<f64>().is_ok() {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "''"))
    }
}

/// The named lock that marks a live holder of a variable.
fn lock_name(var: &str) -> String {
    let n = format!("spinscope:{}", var.to_ascii_lowercase());
    n.chars().take(64).collect()
}

/// A value read back from the server as an SQL literal that `SET GLOBAL` accepts again.
fn literal(v: &Value) -> String {
    match v {
        Value::Bytes(b) => {
            let s = String::from_utf8_lossy(b);
            if s.parse::<f64>().is_ok() {
                s.into_owned()
            } else {
                v.as_sql(false)
            }
        }
        other => other.as_sql(false),
    }
}

fn plain(lit: &str) -> String {
    lit.trim_matches('\'').to_string()
}

impl SettingsGuard {
    pub fn new(connect: Connector) -> SettingsGuard {
        SettingsGuard {
            connect,
            conn: None,
            changed: Vec::new(),
            records: Vec::new(),
            locks: Vec::new(),
            server: None,
            baseline: None,
            mirror: None,
            done: false,
        }
    }

    /// Keep a copy of every journal record in `schema` (the scratch schema the sweep writes
    /// in anyway), so spinscope on another client host sees what this one changed.
    pub fn mirror_to_schema(&mut self, schema: &str) {
        self.mirror = Some(schema.to_string());
    }

    fn conn(&mut self) -> Result<&mut Conn> {
        if self.conn.is_none() {
            let mut c = (self.connect)()?;
            // A new admin connection (after a KILL or a reconnect): take our locks again.
            for l in &self.locks {
                let _ = c.exec_drop("DO GET_LOCK(?, 0)", (l,));
            }
            self.conn = Some(c);
        }
        Ok(self.conn.as_mut().expect("set above"))
    }

    /// Run `f` on the admin connection; when the connection is gone (a server restart, a
    /// KILL), open a new one and try once more.
    fn with_conn<T>(&mut self, what: &str, f: impl Fn(&mut Conn) -> mysql::Result<T>) -> Result<T> {
        let first = f(self.conn()?);
        let r = match first {
            Err(e) if is_connection_error(&e) => {
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
        let (endpoint, hint) = journal::last_target();
        let id = self.with_conn("identifying the server", |c| {
            journal::identify(c, &endpoint, &hint)
        })?;
        self.baseline = Some(self.globals()?);
        self.server = Some(id.clone());
        Ok(id)
    }

    /// Refuse a variable another spinscope holds (live) or left changed (dead), then take its
    /// named lock so others see us.
    fn claim(&mut self, var: &str, server: &ServerId) -> Result<()> {
        let recs = self.with_conn("reading the change journal", |c| {
            Ok(journal::records_for(c, server))
        })?;
        for r in recs {
            if !r.what.eq_ignore_ascii_case(var) {
                continue;
            }
            let state = self.with_conn("reading the change journal", |c| {
                Ok(journal::holder_state_on(c, &r))
            })?;
            match state {
                HolderState::Me => {}
                HolderState::Alive => {
                    return Err(Error::bad_input(format!(
                        "{var} is being changed by another spinscope: {}; wait until it ends (its measurements would be disturbed by ours and ours by its)",
                        journal::describe(&r)
                    )))
                }
                _ if journal::restarted_since(&r, server) => {
                    let _ = self.with_conn("closing a journal record", |c| {
                        journal::close_everywhere(c, &r);
                        Ok(())
                    });
                }
                _ => {
                    return Err(Error::bad_input(format!(
                        "{var} was left changed: {}; run `spinscope restore {}` first, so the sweep does not take {} for the original",
                        journal::describe(&r),
                        server.connect_hint,
                        r.set_to
                    )))
                }
            }
        }
        let name = lock_name(var);
        let got: Option<Option<i64>> = self.with_conn("taking the named lock", |c| {
            c.exec_first("SELECT GET_LOCK(?, 0)", (&name,))
        })?;
        if got.flatten() != Some(1) {
            let id: Option<u64> = self
                .with_conn("reading the lock holder", |c| {
                    c.exec_first("SELECT IS_USED_LOCK(?)", (&name,))
                })
                .ok()
                .flatten()
                .flatten();
            let who = match id {
                Some(id) => {
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
                None => "another connection".into(),
            };
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
            id: journal::new_id(),
            server: server.clone(),
            what: var.to_string(),
            original: plain(original),
            set_to: plain(set_to),
            check_sql: format!("SELECT @@GLOBAL.{var}"),
            restore_sql: vec![format!("SET GLOBAL {var} = {original}")],
            holder: journal::me(),
            opened_unix_s: journal::now_unix(),
            lock: Some(lock_name(lock)),
            server_copy: self.mirror.clone(),
        };
        journal::open(&rec)?;
        self.copy_to_server(&rec);
        Ok(rec)
    }

    /// The server-side copy; a failure is reported, the local journal is the durable one.
    fn copy_to_server(&mut self, rec: &Record) {
        if rec.server_copy.is_none() {
            return;
        }
        if let Err(e) = self.with_conn("copying the journal record to the server", |c| {
            journal::write_server_copy(c, rec)
        }) {
            eprintln!("spinscope: note: {e}; the local journal still has the record");
        }
    }

    /// Variables the server moved on its own after our changes: journal them (so they are
    /// restored with the rest) and say so.
    /// `pre` is every global read just before this variant's changes, so a change someone
    /// else made between variants is not mistaken for ours.
    fn catch_side_effects(&mut self, cause: &str, pre: &BTreeMap<String, String>) -> Result<()> {
        let Some(server) = self.server.clone() else {
            return Ok(());
        };
        let now = self.globals()?;
        for (name, before) in pre {
            let Some(after) = now.get(name) else { continue };
            if after == before
                || volatile(name)
                || self
                    .changed
                    .iter()
                    .any(|c| c.variable.eq_ignore_ascii_case(name))
            {
                continue;
            }
            let orig = literal_of_text(before);
            let lock = cause.split(", ").next().unwrap_or(cause).to_string();
            let rec = self.journal_change(&server, name, &orig, &literal_of_text(after), &lock)?;
            eprintln!(
                "spinscope: the server moved {name} from {before} to {after} when {cause} changed; it is restored too"
            );
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
    /// each named variable (MariaDB clamps out-of-range values with a warning).
    pub fn apply(&mut self, variant: &Variant) -> Result<Vec<Setting>> {
        let others: Vec<(String, String)> = self
            .changed
            .iter()
            .filter(|c| !variant.settings.iter().any(|s| s.variable == c.variable))
            .map(|c| (c.variable.clone(), c.original.clone()))
            .collect();
        for (var, orig) in others {
            self.set(&var, &orig)?;
        }
        // Every global just before this variant's changes: what moves beyond the named
        // variables is a side effect of them.
        let pre = if variant.settings.is_empty() {
            BTreeMap::new()
        } else {
            self.ensure_server()?;
            self.globals()?
        };
        let mut now = Vec::new();
        for s in &variant.settings {
            let want = sql_value(&s.value);
            let idx = match self.changed.iter().position(|c| c.variable == s.variable) {
                Some(i) => i,
                None => {
                    let server = self.ensure_server()?;
                    self.claim(&s.variable, &server)?;
                    let original = self.read(&s.variable)?;
                    // Durable record first, then the change.
                    let rec =
                        self.journal_change(&server, &s.variable, &original, &want, &s.variable)?;
                    eprintln!(
                        "spinscope: changing {} (was {}); it is restored at the end, on error and on a signal (journal: {})",
                        s.variable,
                        plain(&original),
                        journal::dir().map(|d| d.display().to_string()).unwrap_or_default()
                    );
                    self.changed.push(Changed {
                        variable: s.variable.clone(),
                        original,
                        restored: false,
                        note: String::new(),
                        side_effect: false,
                    });
                    self.records.push(Some(rec));
                    self.changed.len() - 1
                }
            };
            self.done = false;
            self.set(&s.variable, &want)?;
            let actual = self.read(&s.variable)?;
            // The server may clamp: the record keeps what it really holds.
            if let Some(mut rec) = self.records[idx].clone() {
                if !journal::same_value(&rec.set_to, &actual) {
                    rec.set_to = plain(&actual);
                    journal::open(&rec)?;
                    self.copy_to_server(&rec);
                    self.records[idx] = Some(rec);
                }
            }
            now.push(Setting {
                variable: s.variable.clone(),
                value: plain(&actual),
            });
        }
        let names: Vec<&str> = variant
            .settings
            .iter()
            .map(|s| s.variable.as_str())
            .collect();
        if !names.is_empty() {
            self.catch_side_effects(&names.join(", "), &pre)?;
        }
        Ok(now)
    }

    /// Set every changed variable back and read it again. Prints one line per variable on
    /// stderr; a variable that could not be restored is printed with the statement to run.
    pub fn restore(&mut self) -> Vec<Changed> {
        if self.done {
            return self.changed.clone();
        }
        self.done = true;
        let list: Vec<(String, String)> = self
            .changed
            .iter()
            .map(|c| (c.variable.clone(), c.original.clone()))
            .collect();
        for (i, (var, orig)) in list.into_iter().enumerate() {
            let mut outcome = self.set(&var, &orig).and_then(|_| self.read(&var));
            if outcome.is_err() {
                // One reconnect: the server may have dropped our admin connection.
                self.conn = None;
                outcome = self.set(&var, &orig).and_then(|_| self.read(&var));
            }
            let c = &mut self.changed[i];
            match outcome {
                Ok(v) if journal::same_value(&v, &orig) => {
                    c.restored = true;
                    c.note = format!("restored {var} = {} (read back)", plain(&orig));
                    // Read back equal: only now the journal record closes.
                    if let Some(rec) = self.records.get_mut(i).and_then(Option::take) {
                        journal::close(&rec.id);
                        if let Some(c) = self.conn.as_mut() {
                            journal::delete_server_copy(c, &rec);
                        }
                    }
                }
                Ok(v) => {
                    c.note = format!(
                        "could not restore {var}: it reads {} instead of {}; run SET GLOBAL {var} = {orig}",
                        plain(&v),
                        plain(&orig)
                    );
                }
                Err(e) => {
                    c.note =
                        format!("could not restore {var} ({e}); run SET GLOBAL {var} = {orig}");
                }
            }
            eprintln!("spinscope: {}", c.note);
        }
        self.report_late_moves();
        let locks = std::mem::take(&mut self.locks);
        if let Some(c) = self.conn.as_mut() {
            for l in &locks {
                let _ = c.exec_drop("DO RELEASE_LOCK(?)", (l,));
            }
        }
        self.changed.clone()
    }

    /// After restoring: any global still different from the snapshot is reported (not
    /// touched: it may be someone else's change made meanwhile).
    fn report_late_moves(&mut self) {
        let Some(base) = self.baseline.clone() else {
            return;
        };
        let Ok(now) = self.globals() else { return };
        for (name, before) in &base {
            match now.get(name) {
                Some(after) if after != before && !volatile(name) => eprintln!(
                    "spinscope: note: {name} is {after} now, {before} before the sweep; spinscope did not set it (someone else may have), so it is left as is"
                ),
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
                if let Some(c) = self.conn.as_mut() {
                    journal::delete_server_copy(c, &rec);
                }
            }
            eprintln!("spinscope: {note}");
            self.changed[i].note = note;
        }
        let locks = std::mem::take(&mut self.locks);
        if let Some(c) = self.conn.as_mut() {
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
    fn drop(&mut self) {
        self.restore();
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
}
