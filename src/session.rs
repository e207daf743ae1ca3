//! The seam around a MySQL session (issue 35 §3): the few things the engines ask of a
//! connection (rows of a statement, a statement run for its effect, a prepared statement with
//! parameters, whether the server still answers), as the [`Session`] trait. The real
//! connection (`mysql::Conn`) implements it, and so does [`Scripted`], a fake that answers
//! from recorded server text, so the change guard, the collector and watch's session logic
//! are tested without a server, as mysqld_exporter tests each collector against recorded
//! output through sqlmock.
//!
//! A module of its own below the journal and the change guard (which take sessions), with
//! no import of spinscope's but its error type; `server::conn` opens real ones.
//!
//! Engines take `&mut dyn Session`; the helpers on `dyn Session` (`query`, `query_first`,
//! `exec_first`, ...) have the names and types of the mysql crate's `Queryable`, so code
//! written against a `Conn` reads the same against a session.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mysql::prelude::{FromRow, Queryable};
use mysql::{Params, Row, Value};

/// One session with a server, as the engines use it.
pub trait Session: Send {
    /// The rows of `sql` (text protocol, first result set).
    fn rows(&mut self, sql: &str) -> mysql::Result<Vec<Row>>;
    /// Run `sql` for its effect, every result dropped.
    fn run(&mut self, sql: &str) -> mysql::Result<()>;
    /// The rows of the prepared statement `sql` with `params`.
    fn exec_rows(&mut self, sql: &str, params: Params) -> mysql::Result<Vec<Row>>;
    /// Whether the server still answers on this session.
    fn alive(&mut self) -> bool;
}

impl Session for mysql::Conn {
    fn rows(&mut self, sql: &str) -> mysql::Result<Vec<Row>> {
        Queryable::query(self, sql)
    }
    fn run(&mut self, sql: &str) -> mysql::Result<()> {
        Queryable::query_drop(self, sql)
    }
    fn exec_rows(&mut self, sql: &str, params: Params) -> mysql::Result<Vec<Row>> {
        Queryable::exec(self, sql, params)
    }
    fn alive(&mut self) -> bool {
        self.ping().is_ok()
    }
}

/// A session from a connection, boxed (what reconnecting code keeps).
pub fn boxed(c: mysql::Conn) -> Box<dyn Session> {
    Box::new(c)
}

fn typed<T: FromRow>(r: Row) -> mysql::Result<T> {
    mysql::from_row_opt(r).map_err(|e| mysql::Error::FromRowError(e.0))
}

impl dyn Session + '_ {
    /// Every row of `sql` as `T`.
    pub fn query<T: FromRow, Q: AsRef<str>>(&mut self, sql: Q) -> mysql::Result<Vec<T>> {
        self.rows(sql.as_ref())?.into_iter().map(typed).collect()
    }
    /// The first row of `sql` as `T`, None when there is none.
    pub fn query_first<T: FromRow, Q: AsRef<str>>(&mut self, sql: Q) -> mysql::Result<Option<T>> {
        self.rows(sql.as_ref())?
            .into_iter()
            .next()
            .map(typed)
            .transpose()
    }
    /// Run `sql` for its effect.
    pub fn query_drop<Q: AsRef<str>>(&mut self, sql: Q) -> mysql::Result<()> {
        self.run(sql.as_ref())
    }
    /// Every row of the prepared `sql` with `params` as `T`.
    pub fn exec<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        sql: S,
        params: P,
    ) -> mysql::Result<Vec<T>> {
        self.exec_rows(sql.as_ref(), params.into())?
            .into_iter()
            .map(typed)
            .collect()
    }
    /// The first row of the prepared `sql` with `params` as `T`.
    pub fn exec_first<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        sql: S,
        params: P,
    ) -> mysql::Result<Option<T>> {
        self.exec_rows(sql.as_ref(), params.into())?
            .into_iter()
            .next()
            .map(typed)
            .transpose()
    }
    /// Run the prepared `sql` with `params` for its effect.
    pub fn exec_drop<S: AsRef<str>, P: Into<Params>>(
        &mut self,
        sql: S,
        params: P,
    ) -> mysql::Result<()> {
        self.exec_rows(sql.as_ref(), params.into()).map(drop)
    }
    /// Whether the server answers a ping (`Conn::ping`'s error as text when it does not).
    pub fn ping(&mut self) -> Result<(), String> {
        if self.alive() {
            Ok(())
        } else {
            Err("no answer to a ping".into())
        }
    }
}

/// What [`Scripted`] answers to one statement: rows under column names, or a server error.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    Error {
        code: u16,
        message: String,
    },
}

impl Reply {
    /// One row of text cells under `columns`.
    pub fn row(columns: &[&str], cells: &[&str]) -> Reply {
        Reply::Rows {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: vec![cells.iter().map(|c| Some(c.to_string())).collect()],
        }
    }

    /// No rows.
    pub fn empty() -> Reply {
        Reply::Rows {
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn to_rows(&self) -> mysql::Result<Vec<Row>> {
        match self {
            Reply::Error { code, message } => Err(mysql::Error::MySqlError(mysql::MySqlError {
                state: "HY000".into(),
                code: *code,
                message: message.clone(),
            })),
            Reply::Rows { columns, rows } => {
                let cols: Arc<[mysql::Column]> = columns
                    .iter()
                    .map(|c| {
                        mysql::Column::new(mysql::consts::ColumnType::MYSQL_TYPE_VAR_STRING)
                            .with_name(c.as_bytes())
                    })
                    .collect();
                Ok(rows
                    .iter()
                    .map(|r| {
                        // Cells as the text protocol carries them: bytes, or NULL.
                        let vals = (0..cols.len())
                            .map(|i| match r.get(i).cloned().flatten() {
                                Some(s) => Value::Bytes(s.into_bytes()),
                                None => Value::NULL,
                            })
                            .collect();
                        mysql_common::row::new_row(vals, cols.clone())
                    })
                    .collect())
            }
        }
    }
}

/// The statement text a fake matches on: whitespace runs as one space, no trailing `;`.
fn normal(sql: &str) -> String {
    sql.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(';')
        .trim()
        .to_string()
}

/// A prepared statement as text, its `?` replaced by the parameters as SQL literals (what a
/// script names it by).
fn inline(sql: &str, params: &Params) -> String {
    let Params::Positional(vals) = params else {
        return sql.to_string();
    };
    let mut vals = vals.iter();
    let mut out = String::with_capacity(sql.len());
    for ch in sql.chars() {
        match (ch, ch == '?') {
            (_, true) => match vals.next() {
                Some(v) => out.push_str(&v.as_sql(false)),
                None => out.push('?'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// Recorded server answers, one per statement, read from the text format of
/// `tests/fixtures/session/` (what `scripts/record-session-fixture.sh` writes): `#` lines
/// are comments (the origin); `> SQL` names a statement; then either `! CODE MESSAGE` (the
/// server's error), or the column names and the rows, tab-separated as `mariadb --batch`
/// prints them (`\n`, `\t`, `\\` escaped, `NULL` for NULL), up to a blank line.
pub fn parse_recorded(text: &str) -> Result<Vec<(String, Reply)>, String> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(sql) = line.strip_prefix("> ") else {
            return Err(format!(
                "line {}: expected `> STATEMENT`, found {line:?}",
                n + 1
            ));
        };
        let mut block: Vec<&str> = Vec::new();
        while let Some((_, l)) = lines.peek() {
            if l.is_empty() {
                break;
            }
            block.push(l);
            lines.next();
        }
        let reply = match block.first() {
            Some(first) if first.starts_with("! ") => {
                let (code, msg) = first[2..].split_once(' ').unwrap_or((&first[2..], ""));
                Reply::Error {
                    code: code
                        .parse()
                        .map_err(|_| format!("line {}: bad error code {code:?}", n + 2))?,
                    message: msg.to_string(),
                }
            }
            Some(header) => Reply::Rows {
                columns: header.split('\t').map(unescape).collect(),
                rows: block[1..]
                    .iter()
                    .map(|r| {
                        r.split('\t')
                            .map(|c| (c != "NULL").then(|| unescape(c)))
                            .collect()
                    })
                    .collect(),
            },
            None => Reply::empty(),
        };
        out.push((normal(sql), reply));
    }
    Ok(out)
}

/// A cell of `mariadb --batch` output as the server sent it.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// A test's look at each statement before it is answered.
type Hook = Box<dyn FnMut(&str) + Send>;

/// What every handle of one [`Scripted`] server shares.
#[derive(Default)]
struct State {
    /// Answers by statement, the latest given first; an answer with a count is used that
    /// many times (before any lasting one), then passed over.
    answers: Vec<(String, Reply, Option<usize>)>,
    /// Global variables (lower-case names) when the script keeps them: `SET GLOBAL`,
    /// `SELECT @@GLOBAL.x` and `SHOW GLOBAL VARIABLES` then read and write them.
    globals: Option<BTreeMap<String, String>>,
    /// Every statement sent, in order, as matched.
    log: Vec<String>,
    /// Called with each statement before it is answered (a test looks at the journal there).
    hook: Option<Hook>,
    /// Sessions refuse everything (the server went away).
    gone: bool,
}

/// A fake server: every clone is another session on it (they share answers, globals and the
/// log). Statements without an answer fail with error 1064 naming them, so a test sees
/// what it did not expect; `SET GLOBAL`, `DO` and the named-lock functions have a default
/// answer where the script keeps globals.
#[derive(Clone, Default)]
pub struct Scripted {
    state: Arc<Mutex<State>>,
}

impl Scripted {
    /// A server answering as recorded in `text` (see [`parse_recorded`]); its `SHOW GLOBAL
    /// VARIABLES`, when recorded, seeds the globals.
    pub fn recorded(text: &str) -> Result<Scripted, String> {
        let s = Scripted::default();
        for (sql, reply) in parse_recorded(text)? {
            if sql.eq_ignore_ascii_case("SHOW GLOBAL VARIABLES") {
                if let Reply::Rows { rows, .. } = &reply {
                    s.lock().globals = Some(
                        rows.iter()
                            .filter_map(|r| {
                                let k = r.first()?.clone()?;
                                Some((
                                    k.to_ascii_lowercase(),
                                    r.get(1)?.clone().unwrap_or_default(),
                                ))
                            })
                            .collect(),
                    );
                    continue;
                }
            }
            s.lock().answers.push((sql, reply, None));
        }
        Ok(s)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answer `sql` with `reply` from now on, before any answer recorded earlier.
    pub fn answer(&self, sql: &str, reply: Reply) -> &Scripted {
        self.lock().answers.insert(0, (normal(sql), reply, None));
        self
    }

    /// Answer `sql` with `reply` the next `times` times only.
    pub fn answer_times(&self, sql: &str, reply: Reply, times: usize) -> &Scripted {
        self.lock()
            .answers
            .insert(0, (normal(sql), reply, Some(times)));
        self
    }

    /// A global variable as the server holds it now (someone else's `SET GLOBAL`).
    pub fn set_global(&self, name: &str, value: &str) {
        self.lock()
            .globals
            .get_or_insert_with(BTreeMap::new)
            .insert(name.to_ascii_lowercase(), value.to_string());
    }

    /// A global variable's value now.
    pub fn global(&self, name: &str) -> Option<String> {
        self.lock()
            .globals
            .as_ref()?
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    /// Every statement sent so far, in order.
    pub fn log(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    /// Call `f` with each statement before it is answered.
    pub fn on_statement(&self, f: impl FnMut(&str) + Send + 'static) {
        self.lock().hook = Some(Box::new(f));
    }

    /// The server goes away (or comes back): every session's statements fail.
    pub fn set_gone(&self, gone: bool) {
        self.lock().gone = gone;
    }

    /// A new session on this server.
    pub fn session(&self) -> Box<dyn Session> {
        Box::new(self.clone())
    }

    /// A new session as connecting opens one: refused while the server is gone.
    pub fn connect(&self) -> crate::Result<Box<dyn Session>> {
        if self.lock().gone {
            return Err(crate::Error::runtime(
                "cannot connect to the scripted server: it is gone",
            ));
        }
        Ok(self.session())
    }

    fn answer_for(&self, sql: &str) -> mysql::Result<Vec<Row>> {
        let sql = normal(sql);
        // The hook runs outside the lock: it may look at this fake too.
        let hook = self.lock().hook.take();
        if let Some(mut h) = hook {
            h(&sql);
            let mut st = self.lock();
            if st.hook.is_none() {
                st.hook = Some(h);
            }
        }
        let mut st = self.lock();
        st.log.push(sql.clone());
        if st.gone {
            return Err(mysql::Error::IoError(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "scripted server gone",
            )));
        }
        // Answers given a number of times go first, then the lasting ones; the latest given
        // first among each.
        let hit = st
            .answers
            .iter()
            .position(|(s, _, n)| s.eq_ignore_ascii_case(&sql) && n.is_some_and(|n| n > 0))
            .or_else(|| {
                st.answers
                    .iter()
                    .position(|(s, _, n)| s.eq_ignore_ascii_case(&sql) && n.is_none())
            });
        if let Some(i) = hit {
            let (_, reply, n) = &mut st.answers[i];
            if let Some(n) = n.as_mut() {
                *n -= 1;
            }
            return reply.to_rows();
        }
        if let Some(r) = model(&mut st, &sql) {
            return r.to_rows();
        }
        Reply::Error {
            code: 1064,
            message: format!("scripted session: no answer for `{sql}`"),
        }
        .to_rows()
    }
}

/// The few statements a fake answers from its globals: `SHOW GLOBAL VARIABLES`, `SELECT
/// @@GLOBAL.x`, `SET GLOBAL x = v`; and `DO ...`, `GET_LOCK`, `IS_USED_LOCK` (a lock is
/// always free, nobody else holds it).
fn model(st: &mut State, sql: &str) -> Option<Reply> {
    let upper = sql.to_ascii_uppercase();
    if upper.starts_with("DO ") {
        return Some(Reply::empty());
    }
    if upper.starts_with("SELECT GET_LOCK(") {
        return Some(Reply::row(&["GET_LOCK"], &["1"]));
    }
    if upper.starts_with("SELECT IS_USED_LOCK(") {
        return Some(Reply::Rows {
            columns: vec!["IS_USED_LOCK".into()],
            rows: vec![vec![None]],
        });
    }
    let globals = st.globals.as_mut()?;
    if upper == "SHOW GLOBAL VARIABLES" {
        return Some(Reply::Rows {
            columns: vec!["Variable_name".into(), "Value".into()],
            rows: globals
                .iter()
                .map(|(k, v)| vec![Some(k.clone()), Some(v.clone())])
                .collect(),
        });
    }
    if let Some(name) = upper.strip_prefix("SELECT @@GLOBAL.") {
        let v = globals.get(&name.to_ascii_lowercase())?;
        return Some(Reply::row(&[&format!("@@GLOBAL.{name}")], &[v]));
    }
    if upper.starts_with("SET GLOBAL ") {
        let (name, value) = sql["SET GLOBAL ".len()..].split_once('=')?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let now = if value.to_ascii_uppercase().starts_with("@@GLOBAL.") {
            globals.get(&value[9..].to_ascii_lowercase())?.clone()
        } else {
            value.trim_matches('\'').to_string()
        };
        if !globals.contains_key(&name) {
            return Some(Reply::Error {
                code: 1193,
                message: format!("Unknown system variable '{name}'"),
            });
        }
        globals.insert(name, now);
        return Some(Reply::empty());
    }
    None
}

impl Session for Scripted {
    fn rows(&mut self, sql: &str) -> mysql::Result<Vec<Row>> {
        self.answer_for(sql)
    }
    fn run(&mut self, sql: &str) -> mysql::Result<()> {
        self.answer_for(sql).map(drop)
    }
    fn exec_rows(&mut self, sql: &str, params: Params) -> mysql::Result<Vec<Row>> {
        self.answer_for(&inline(sql, &params))
    }
    fn alive(&mut self) -> bool {
        !self.lock().gone
    }
}

/// What a throwaway MariaDB 10.11 answered to the statements the collector, the journal check
/// and the settings guard send (the file's first lines say how it was recorded).
#[cfg(test)]
pub const MARIADB_10_11: &str = include_str!("../tests/fixtures/session/mariadb-10.11.txt");

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# origin: written by hand for this test\n\
        > SELECT VERSION(), @@version_comment\n\
        VERSION()\t@@version_comment\n\
        10.11.6-MariaDB\tDebian\\tbuild\n\
        \n\
        > SHOW ENGINE INNODB STATUS\n\
        ! 1227 Access denied; you need (at least one of) the PROCESS privilege(s)\n\
        \n\
        > SHOW GLOBAL VARIABLES\n\
        Variable_name\tValue\n\
        innodb_spin_wait_delay\t4\n\
        socket\tNULL\n";

    #[test]
    fn recorded_text_answers_typed_queries_and_errors() {
        let fake = Scripted::recorded(TEXT).unwrap();
        let mut s = fake.session();
        let v: Option<(String, Option<String>)> = s
            .query_first("SELECT  VERSION(),\n @@version_comment;")
            .unwrap();
        assert_eq!(
            v,
            Some(("10.11.6-MariaDB".into(), Some("Debian\tbuild".into())))
        );
        let e = s
            .query::<(String, String, String), _>("SHOW ENGINE INNODB STATUS")
            .unwrap_err();
        assert!(
            matches!(&e, mysql::Error::MySqlError(m) if m.code == 1227),
            "{e}"
        );
        // The recorded variables are the server's globals: set and read back.
        let d: Option<u32> = s
            .query_first("SELECT @@GLOBAL.innodb_spin_wait_delay")
            .unwrap();
        assert_eq!(d, Some(4));
        s.query_drop("SET GLOBAL innodb_spin_wait_delay = 77")
            .unwrap();
        let all: Vec<(String, Option<String>)> = s.query("SHOW GLOBAL VARIABLES").unwrap();
        assert!(all.contains(&("innodb_spin_wait_delay".into(), Some("77".into()))));
        // A NULL variable reads back empty (as the collector keeps it).
        assert!(all.contains(&("socket".into(), Some(String::new()))));
        // Another session on the same server sees it; an unknown statement is an error.
        assert_eq!(fake.global("INNODB_SPIN_WAIT_DELAY").as_deref(), Some("77"));
        assert!(s.query_drop("SELECT nothing_recorded").is_err());
        assert!(s.query_drop("SET GLOBAL no_such_variable = 1").is_err());
        assert_eq!(fake.log().len(), 7);
    }

    #[test]
    fn prepared_statements_match_with_their_parameters_inlined() {
        let fake = Scripted::default();
        fake.answer(
            // The parameter as the mysql crate writes a literal (a quote escaped by a backslash).
            "SELECT TABLE_SCHEMA FROM t WHERE TABLE_NAME = 'it\\'s'",
            Reply::row(&["TABLE_SCHEMA"], &["s1"]),
        );
        fake.answer_times(
            "SELECT 1",
            Reply::Error {
                code: 2013,
                message: "Lost connection".into(),
            },
            1,
        );
        fake.answer("SELECT 1", Reply::row(&["1"], &["1"]));
        let mut s = fake.session();
        let got: Vec<String> = s
            .exec("SELECT TABLE_SCHEMA FROM t WHERE TABLE_NAME = ?", ("it's",))
            .unwrap();
        assert_eq!(got, ["s1"]);
        // The answer given once is used first, then the lasting one.
        assert!(s.query_first::<u8, _>("SELECT 1").is_err());
        assert_eq!(s.query_first::<u8, _>("SELECT 1").unwrap(), Some(1));
        fake.set_gone(true);
        assert!(s.ping().is_err());
        assert!(s.query_first::<u8, _>("SELECT 1").is_err());
    }

    #[test]
    fn bad_recorded_text_names_its_line() {
        let e = parse_recorded("# x\nSELECT 1\n").err().unwrap();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = parse_recorded("> SELECT 1\n! x y\n").err().unwrap();
        assert!(e.contains("bad error code"), "{e}");
    }
}
