//! The settings guard: every `SET GLOBAL` the sweep makes goes through here. The original value
//! is read and recorded before the first change, and `restore` (also called from `Drop`, so on
//! every error path and after SIGINT/SIGTERM) sets it back and reads it again to prove it.

use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use serde::{Deserialize, Serialize};

use super::spec::{restart_refusal, sql_value, Setting, Variant};
use super::{describe_error, is_connection_error, Connector};
use crate::error::{Error, Result};

/// One variable the sweep changed, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub variable: String,
    /// The value before the sweep, as an SQL literal.
    pub original: String,
    /// Whether it was set back and read back equal.
    pub restored: bool,
    /// What happened on restore, for the report.
    pub note: String,
}

pub struct SettingsGuard {
    connect: Connector,
    conn: Option<Conn>,
    changed: Vec<Changed>,
    done: bool,
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
            done: false,
        }
    }

    fn conn(&mut self) -> Result<&mut Conn> {
        if self.conn.is_none() {
            self.conn = Some((self.connect)()?);
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
        let mut now = Vec::new();
        for s in &variant.settings {
            if !self.changed.iter().any(|c| c.variable == s.variable) {
                let original = self.read(&s.variable)?;
                eprintln!(
                    "spinscope: changing {} (was {}); it is restored at the end, on error and on SIGINT/SIGTERM",
                    s.variable,
                    plain(&original)
                );
                self.changed.push(Changed {
                    variable: s.variable.clone(),
                    original,
                    restored: false,
                    note: String::new(),
                });
                self.done = false;
            }
            self.set(&s.variable, &sql_value(&s.value))?;
            let actual = self.read(&s.variable)?;
            now.push(Setting {
                variable: s.variable.clone(),
                value: plain(&actual),
            });
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
                Ok(v) if plain(&v).eq_ignore_ascii_case(&plain(&orig)) => {
                    c.restored = true;
                    c.note = format!("restored {var} = {}", plain(&orig));
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
