//! The one change-guard protocol (issue 35 §2): every change spinscope makes to a server is a
//! [`Change`] (what the journal names it by, the named lock that marks its live holder, the
//! statement that reads its state, the statements that put it back), and the journal handling
//! around it is done once, here: [`conflict`] (another spinscope holds it or left it changed;
//! records a restart made moot are closed), [`take_lock`], [`record`] (the journal record
//! written, fsynced, before the change is sent) and [`send_journaled`] (the statements, with
//! the journal's fault points around each).
//!
//! Two implementations: [`SetGlobal`] (a `SET GLOBAL` of one variable, `load::guard`'s
//! `SettingsGuard`) and the performance_schema instruments (`server::collect`'s
//! `InstrumentGuard`).

use std::collections::BTreeMap;

use crate::session::Session;

use crate::journal::{self, Record, ServerId, Standing};

/// One kind of change to a server, as the guard protocol sees it.
pub trait Change {
    /// What the journal names this change by (a variable; the instruments' description).
    fn what(&self) -> String;
    /// The server-side named lock that marks a live holder (visible to clients on every host).
    fn lock(&self) -> String;
    /// The statement that reads the changed state as one text value.
    fn check_sql(&self) -> String;
    /// The statements that put back `original` (an SQL literal where the change has one).
    fn restore_sql(&self, original: &str) -> Vec<String>;
}

/// A `SET GLOBAL` of one variable.
#[derive(Debug, Clone, Copy)]
pub struct SetGlobal<'a>(pub &'a str);

impl Change for SetGlobal<'_> {
    fn what(&self) -> String {
        self.0.to_string()
    }
    fn lock(&self) -> String {
        let n = format!("spinscope:{}", self.0.to_ascii_lowercase());
        n.chars().take(64).collect()
    }
    fn check_sql(&self) -> String {
        format!("SELECT @@GLOBAL.{}", self.0)
    }
    fn restore_sql(&self, original: &str) -> Vec<String> {
        vec![format!("SET GLOBAL {} = {original}", self.0)]
    }
}

/// An earlier change of the same thing that stops a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// Another spinscope, still running, holds it.
    Live(Record),
    /// A spinscope that is gone left it changed.
    LeftChanged(Record),
}

/// The first journal record of `change` on the server `now` that stops a new change; records
/// a restart made moot are closed on the way, this process's own are passed over.
pub fn conflict(conn: &mut dyn Session, now: &ServerId, change: &impl Change) -> Option<Conflict> {
    let what = change.what();
    for r in journal::records_for(conn, now) {
        if !r.what.eq_ignore_ascii_case(&what) {
            continue;
        }
        match journal::standing(conn, &r, now) {
            Standing::Mine | Standing::ClosedByRestart => {}
            Standing::Live => return Some(Conflict::Live(r)),
            Standing::LeftChanged => return Some(Conflict::LeftChanged(r)),
        }
    }
    None
}

/// Take the named lock `name` without waiting: false when another session holds it.
pub fn take_lock(conn: &mut dyn Session, name: &str) -> mysql::Result<bool> {
    let got: Option<Option<i64>> = conn.exec_first("SELECT GET_LOCK(?, 0)", (name,))?;
    Ok(got.flatten() == Some(1))
}

/// The journal record of `change` on `server`: from `original` (as the record shows it) to
/// `set_to`, put back by `change.restore_sql(original_sql)`, held by this process.
pub fn record(
    change: &impl Change,
    server: &ServerId,
    original: String,
    set_to: String,
    original_sql: &str,
) -> Record {
    Record {
        id: journal::new_id(),
        server: server.clone(),
        what: change.what(),
        original,
        set_to,
        check_sql: change.check_sql(),
        restore_sql: change.restore_sql(original_sql),
        holder: journal::me(),
        opened_unix_s: journal::now_unix(),
        lock: Some(change.lock()),
        server_copy: None,
        also_ours: Vec::new(),
        around: BTreeMap::new(),
    }
}

/// Send `statements` of a change whose journal record is already durable, with the journal's
/// fault points (issue 24) on each side of every statement.
pub fn send_journaled(conn: &mut dyn Session, statements: &[&str]) -> mysql::Result<()> {
    statements.iter().try_for_each(|sql| {
        journal::fault_point(journal::Fault::AfterJournal);
        conn.query_drop(sql)?;
        journal::fault_point(journal::Fault::AfterStatement);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_global_names_its_lock_check_and_way_back() {
        let c = SetGlobal("innodb_spin_wait_DELAY");
        assert_eq!(c.what(), "innodb_spin_wait_DELAY");
        assert_eq!(c.lock(), "spinscope:innodb_spin_wait_delay");
        assert_eq!(c.check_sql(), "SELECT @@GLOBAL.innodb_spin_wait_DELAY");
        assert_eq!(
            c.restore_sql("'ON'"),
            vec!["SET GLOBAL innodb_spin_wait_DELAY = 'ON'".to_string()]
        );
        // MariaDB refuses lock names over 64 characters.
        assert_eq!(SetGlobal(&"v".repeat(80)).lock().chars().count(), 64);
    }
}
