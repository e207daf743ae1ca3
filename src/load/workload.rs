//! Workloads modeled on sysbench 1.0's `oltp_*` scripts (`oltp_common.lua`: the same statement
//! texts, counts, range size, value shapes, and one random table per group of statements).
//! Statements are prepared per connection and run over the binary protocol; BEGIN/COMMIT are
//! counted as queries, as sysbench counts them ("other").
//!
//! Differences from sysbench, on purpose (listed in the README): ids are drawn uniformly
//! (sysbench 1.0's default is its "special" distribution, hot spots at the ends); BEGIN and COMMIT
//! are sent as plain queries, not prepared statements; an error rolls the transaction back and
//! is counted (sysbench aborts on most errors and retries deadlocks).

use std::collections::HashMap;

use mysql::prelude::Queryable;
use mysql::{Conn, Statement, Value};
use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

pub use crate::proto::command::Arg;

/// The built-in mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    PointSelect,
    ReadOnly,
    WriteOnly,
    ReadWrite,
    Custom,
}

pub const WORKLOAD_FORM: &str =
    "use one of point-select, read-only, write-only, read-write, or --sql FILE for your own statements";

impl Kind {
    pub fn parse(s: &str) -> Result<Kind, String> {
        Ok(
            match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
                "point-select" => Kind::PointSelect,
                "read-only" => Kind::ReadOnly,
                "write-only" => Kind::WriteOnly,
                "read-write" => Kind::ReadWrite,
                _ => {
                    return Err(format!(
                        "--workload {s:?} is not a workload; {WORKLOAD_FORM}"
                    ))
                }
            },
        )
    }
    pub fn name(self) -> &'static str {
        match self {
            Kind::PointSelect => "point-select",
            Kind::ReadOnly => "read-only",
            Kind::WriteOnly => "write-only",
            Kind::ReadWrite => "read-write",
            Kind::Custom => "custom",
        }
    }
}

/// Statement counts per transaction (sysbench option names in the comments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    /// --point-selects (10)
    pub point_selects: u32,
    /// --simple-ranges, --sum-ranges, --order-ranges, --distinct-ranges (1 each)
    pub ranges: u32,
    /// --range-size (100)
    pub range_size: u64,
    /// --index-updates (1)
    pub index_updates: u32,
    /// --non-index-updates (1)
    pub non_index_updates: u32,
    /// --delete-inserts (1)
    pub delete_inserts: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            point_selects: 10,
            ranges: 1,
            range_size: 100,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
        }
    }
}

/// A placeholder of a custom statement, replaced by a fresh random value per pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Param {
    Id,
    K,
    C,
    Pad,
}

/// One line of a `--sql` file: text with `{table}` substituted per table, and `?` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomStmt {
    pub sql: String,
    pub params: Vec<Param>,
    pub per_table: bool,
    /// Line in the file (1-based) and its text, for messages.
    #[serde(default)]
    pub line: usize,
    #[serde(default)]
    pub text: String,
}

/// Most statements a `--sql` file may hold.
pub const MAX_CUSTOM: usize = 1000;

pub const SQL_FORM: &str = "one statement per line; placeholders {table} (a random sbtestN), {id} (a random existing id), {k} (a random integer), {c} and {pad} (random strings); lines starting with -- or # are comments";

/// Parse a custom statement file's text.
pub fn parse_sql_file(text: &str) -> Result<Vec<CustomStmt>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim().trim_end_matches(';').trim();
        if l.is_empty() || l.starts_with("--") || l.starts_with('#') {
            continue;
        }
        if l.contains('?') {
            return Err(format!(
                "--sql line {}: use named placeholders instead of '?'; {SQL_FORM}",
                i + 1
            ));
        }
        let mut sql = String::new();
        let mut params = Vec::new();
        let mut per_table = false;
        let mut rest = l;
        while let Some(open) = rest.find('{') {
            sql.push_str(&rest[..open]);
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("--sql line {}: unclosed '{{'; {SQL_FORM}", i + 1))?;
            let name = &rest[open + 1..open + close];
            match name {
                "table" => {
                    per_table = true;
                    sql.push_str("{table}");
                }
                "id" => params.push(Param::Id),
                "k" => params.push(Param::K),
                "c" => params.push(Param::C),
                "pad" => params.push(Param::Pad),
                other => {
                    return Err(format!(
                        "--sql line {}: unknown placeholder {{{other}}}; {SQL_FORM}",
                        i + 1
                    ))
                }
            }
            if name != "table" {
                sql.push('?');
            }
            rest = &rest[open + close + 1..];
        }
        sql.push_str(rest);
        if out.len() == MAX_CUSTOM {
            return Err(format!(
                "--sql line {}: more than {MAX_CUSTOM} statements; {SQL_FORM}",
                i + 1
            ));
        }
        out.push(CustomStmt {
            sql,
            params,
            per_table,
            line: i + 1,
            text: l.to_string(),
        });
    }
    if out.is_empty() {
        return Err(format!("--sql: the file has no statement; {SQL_FORM}"));
    }
    Ok(out)
}

/// What a `--sql` statement does, judged by its leading keyword (and, for writes, by the
/// schemas it names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StmtClass {
    /// SELECT (not INTO OUTFILE/DUMPFILE), or WITH ... SELECT.
    Read,
    /// INSERT, UPDATE, DELETE, REPLACE (also WITH ... UPDATE/DELETE).
    Write,
    /// BEGIN, START TRANSACTION, COMMIT, ROLLBACK, SAVEPOINT, RELEASE.
    Transaction,
    /// Anything else: DDL (CREATE, DROP, ALTER, TRUNCATE, RENAME), SET, GRANT, CALL, LOAD ...
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Dot,
    Other,
}

/// Identifiers (plain or `quoted`), dots and everything else; string literals and comments
/// are skipped.
fn tokens(sql: &str) -> Vec<Tok> {
    let b: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\'' || c == '"' {
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(Tok::Other);
        } else if c == '`' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != '`' {
                i += 1;
            }
            out.push(Tok::Ident(b[start..i.min(b.len())].iter().collect()));
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '.' {
            out.push(Tok::Dot);
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '$' || c == '{' || c == '}' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || "_${}".contains(b[i])) {
                i += 1;
            }
            out.push(Tok::Ident(b[start..i].iter().collect()));
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Other);
            }
            i += 1;
        }
    }
    out
}

/// Classify a statement by its keywords.
pub fn classify(sql: &str) -> StmtClass {
    let words: Vec<String> = tokens(sql)
        .into_iter()
        .filter_map(|t| match t {
            Tok::Ident(w) => Some(w.to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    let has = |k: &str| words.iter().any(|w| w == k);
    match words.first().map(String::as_str) {
        Some("SELECT") if has("OUTFILE") || has("DUMPFILE") => StmtClass::Other,
        Some("SELECT") => StmtClass::Read,
        Some("WITH") if has("UPDATE") || has("DELETE") || has("INSERT") || has("REPLACE") => {
            if has("OUTFILE") || has("DUMPFILE") {
                StmtClass::Other
            } else {
                StmtClass::Write
            }
        }
        Some("WITH") if has("OUTFILE") || has("DUMPFILE") => StmtClass::Other,
        Some("WITH") => StmtClass::Read,
        Some("INSERT" | "UPDATE" | "DELETE" | "REPLACE") => StmtClass::Write,
        Some("BEGIN" | "START" | "COMMIT" | "ROLLBACK" | "SAVEPOINT" | "RELEASE") => {
            StmtClass::Transaction
        }
        _ => StmtClass::Other,
    }
}

/// Schemas a statement names as a qualifier (`schema.table`), among `known` (the server's
/// schemas, compared case-insensitively), other than `scratch`.
pub fn foreign_schemas(sql: &str, known: &[String], scratch: &str) -> Vec<String> {
    let t = tokens(sql);
    let mut out: Vec<String> = Vec::new();
    for w in t.windows(3) {
        if let [Tok::Ident(a), Tok::Dot, Tok::Ident(_)] = w {
            if !a.eq_ignore_ascii_case(scratch)
                && known.iter().any(|k| k.eq_ignore_ascii_case(a))
                && !out.iter().any(|o| o.eq_ignore_ascii_case(a))
            {
                out.push(a.clone());
            }
        }
    }
    out
}

/// Why a `--sql` statement may not run without `--allow-writes-outside` (None: it may).
pub fn refuse_custom(st: &CustomStmt, known: &[String], scratch: &str) -> Option<String> {
    match classify(&st.sql) {
        StmtClass::Read | StmtClass::Transaction => None,
        StmtClass::Other => Some(
            "it is not a SELECT, INSERT, UPDATE, DELETE, REPLACE or transaction statement (DDL, SET, GRANT, CALL, LOAD and SELECT ... INTO OUTFILE change the server beyond the scratch schema)".to_string(),
        ),
        StmtClass::Write => {
            let f = foreign_schemas(&st.sql, known, scratch);
            if f.is_empty() {
                None
            } else {
                Some(format!(
                    "it writes and names schema {} outside the scratch schema {scratch}",
                    f.join(", ")
                ))
            }
        }
    }
}

/// Why a `--sql` statement may not run whatever the flags: it would write a system schema
/// (see [`super::sql_guard`]). None: it may. Needs no server, so plans check it first.
pub fn refuse_system(st: &CustomStmt) -> Option<String> {
    super::sql_guard::system_write(&st.sql.replace("{table}", "sbtest1"))
        .map(|why| format!("refused: {why}; --allow-writes-outside covers other user schemas only"))
}

/// The first statement of `custom` that [`refuse_system`] refuses: its line, text and reason.
pub fn first_system_write(custom: &[CustomStmt]) -> Option<(usize, String, String)> {
    custom
        .iter()
        .find_map(|st| refuse_system(st).map(|why| (st.line, st.text.clone(), why)))
}

/// Check a custom workload against the server before any load or change: no statement
/// writes a system schema ([`refuse_system`], whatever the flags), every statement is
/// allowed (see [`refuse_custom`]; skipped with `allow_writes_outside`) and prepares (not
/// executes) without error, with `{table}` as `sbtest1`. `conn` must be in the scratch schema.
/// Returns the offending line, its text and the reason.
pub fn check_custom(
    conn: &mut Conn,
    custom: &[CustomStmt],
    scratch: &str,
    allow_writes_outside: bool,
) -> Result<(), (usize, String, String)> {
    if let Some(refused) = first_system_write(custom) {
        return Err(refused);
    }
    let known: Vec<String> = conn.query("SHOW DATABASES").unwrap_or_default();
    for st in custom {
        // Prepare first (nothing runs): a statement the server cannot parse is reported as the
        // server sees it, before any judgement of what it would do.
        let sql = st.sql.replace("{table}", "sbtest1");
        match conn.prep(&sql) {
            Ok(p) => {
                let _ = conn.close(p);
            }
            Err(e) => {
                return Err((
                    st.line,
                    st.text.clone(),
                    format!(
                        "the server cannot prepare it ({}); fix the statement",
                        super::describe_error(&e).1
                    ),
                ))
            }
        }
        if !allow_writes_outside {
            if let Some(why) = refuse_custom(st, &known, scratch) {
                return Err((
                    st.line,
                    st.text.clone(),
                    format!("refused: {why}; pass --allow-writes-outside to run it anyway"),
                ));
            }
        }
    }
    Ok(())
}

/// What one client runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub kind: Kind,
    pub tables: u32,
    pub table_size: u64,
    pub mix: Mix,
    pub custom: Vec<CustomStmt>,
}

/// One statement of a built-in mix, per table (sysbench's statement names in the comments).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    /// point_selects
    Point,
    /// simple_ranges
    Simple,
    /// sum_ranges
    Sum,
    /// order_ranges
    Order,
    /// distinct_ranges
    Distinct,
    /// index_updates
    IdxUpd,
    /// non_index_updates
    NonIdxUpd,
    /// deletes
    Delete,
    /// inserts
    Insert,
    /// Line `i` of a `--sql` file.
    Custom(u16),
}

/// One operation of a transaction's plan, in the order it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `BEGIN` as a plain query.
    Begin,
    /// `COMMIT` as a plain query.
    Commit,
    /// Execute the prepared statement `which` of table `table` (0: not tied to a table).
    Exec {
        table: u32,
        which: Which,
        args: Vec<Arg>,
    },
}

struct Slot<S> {
    stmt: S,
    last_use: u64,
}

/// A connection's prepared statements for one workload (`S`: the client's statement handle),
/// owned here rather than by the mysql crate's per-connection cache (connections are opened
/// with `stmt_cache_size(0)`): that cache holds 32 statements and closes the least recently
/// used one on the server when a 33rd is prepared, while the workload still holds it
/// (`ERROR 1243: Unknown prepared statement handler`). Here a statement is closed only when
/// this store evicts it, and never while a transaction is about to use it: the clients ask for
/// each statement right before executing it.
///
/// The store's capacity is the client's share of the server's `max_prepared_stmt_count` (a
/// server-wide limit, 16382 by default): with many tables and many clients not every
/// statement of every table fits, and the least recently used ones are closed and prepared
/// again when needed (counted in [`Prepared::late_prepares`]).
pub struct Prepared<S = Statement> {
    cap: usize,
    map: HashMap<(u32, Which), Slot<S>>,
    tick: u64,
    /// Statements prepared after the step started (a table whose statements did not fit the
    /// capacity before the step, or one evicted since).
    pub late_prepares: u64,
    /// Statements closed to stay within the capacity.
    pub evictions: u64,
    /// Executions sent through this store's statements.
    pub executes: u64,
}

impl<S: Clone> Prepared<S> {
    /// An empty store holding at most `cap` statements (at least 1).
    pub fn new(cap: usize) -> Prepared<S> {
        Prepared {
            cap: cap.max(1),
            map: HashMap::new(),
            tick: 0,
            late_prepares: 0,
            evictions: 0,
            executes: 0,
        }
    }
    /// How many statements are prepared on the connection now.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    /// The statement for `w` on table `t` if it is prepared (marked as used now).
    pub fn get(&mut self, t: u32, w: Which) -> Option<S> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(&(t, w)).map(|slot| {
            slot.last_use = tick;
            slot.stmt.clone()
        })
    }
    /// When the store is full: take out the least recently used statement, for the caller to
    /// close on the server before it prepares another.
    pub fn evict_if_full(&mut self) -> Option<S> {
        if self.map.len() < self.cap {
            return None;
        }
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, s)| s.last_use)
            .map(|(k, _)| *k)?;
        let slot = self.map.remove(&oldest)?;
        self.evictions += 1;
        Some(slot.stmt)
    }
    /// Record a statement prepared before the step.
    pub fn insert_early(&mut self, t: u32, w: Which, stmt: S) {
        self.map.insert((t, w), Slot { stmt, last_use: 0 });
    }
    /// Record a statement prepared during the step (counted as a late prepare).
    pub fn insert_late(&mut self, t: u32, w: Which, stmt: S) {
        self.late_prepares += 1;
        let last_use = self.tick;
        self.map.insert((t, w), Slot { stmt, last_use });
    }
}

/// sysbench's c/pad values: groups of 11 digits separated by '-'.
fn digits(rng: &mut SmallRng, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + rng.gen_range(0..10u8)));
        }
    }
    s
}

pub fn c_value(rng: &mut SmallRng) -> String {
    digits(rng, 10)
}
pub fn pad_value(rng: &mut SmallRng) -> String {
    digits(rng, 5)
}

impl Workload {
    /// The statements this workload runs on each table, in the order a transaction uses them.
    fn per_table(&self) -> Vec<Which> {
        let reads = matches!(self.kind, Kind::ReadOnly | Kind::ReadWrite);
        let writes = matches!(self.kind, Kind::WriteOnly | Kind::ReadWrite);
        let m = &self.mix;
        let mut v = Vec::new();
        match self.kind {
            Kind::PointSelect => v.push(Which::Point),
            Kind::Custom => {
                for (i, st) in self.custom.iter().enumerate() {
                    if st.per_table {
                        v.push(Which::Custom(i as u16));
                    }
                }
            }
            _ => {
                if reads && m.point_selects > 0 {
                    v.push(Which::Point);
                }
                if reads && m.ranges > 0 {
                    v.extend([Which::Simple, Which::Sum, Which::Order, Which::Distinct]);
                }
                if writes && m.index_updates > 0 {
                    v.push(Which::IdxUpd);
                }
                if writes && m.non_index_updates > 0 {
                    v.push(Which::NonIdxUpd);
                }
                if writes && m.delete_inserts > 0 {
                    v.extend([Which::Delete, Which::Insert]);
                }
            }
        }
        v
    }

    /// Statements not tied to a table (custom lines without `{table}`).
    fn global_stmts(&self) -> Vec<Which> {
        self.custom
            .iter()
            .enumerate()
            .filter(|(_, st)| !st.per_table)
            .map(|(i, _)| Which::Custom(i as u16))
            .collect()
    }

    /// How many statements one connection needs to hold every statement of every table.
    pub fn statements_needed(&self) -> usize {
        self.per_table().len() * self.tables.max(1) as usize + self.global_stmts().len()
    }

    /// The text of statement `w` on table `table`.
    pub fn sql(&self, table: u32, w: Which) -> String {
        let t = table;
        match w {
            Which::Point => format!("SELECT c FROM sbtest{t} WHERE id=?"),
            Which::Simple => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Which::Sum => format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Which::Order => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"),
            Which::Distinct => {
                format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Which::IdxUpd => format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"),
            Which::NonIdxUpd => format!("UPDATE sbtest{t} SET c=? WHERE id=?"),
            Which::Delete => format!("DELETE FROM sbtest{t} WHERE id=?"),
            Which::Insert => format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
            Which::Custom(i) => {
                let st = &self.custom[i as usize];
                if st.per_table {
                    st.sql.replace("{table}", &format!("sbtest{t}"))
                } else {
                    st.sql.clone()
                }
            }
        }
    }

    /// The statements prepared before a step, in order (global ones first, then table by
    /// table), up to `cap`; the rest are prepared when first used.
    pub fn prepare_order(&self, cap: usize) -> Vec<(u32, Which)> {
        let per = self.per_table();
        let mut todo: Vec<(u32, Which)> = self.global_stmts().into_iter().map(|w| (0, w)).collect();
        for t in 1..=self.tables.max(1) {
            todo.extend(per.iter().map(|&w| (t, w)));
        }
        todo.truncate(cap.max(1));
        todo
    }

    /// Prepare this workload's statements on a connection, table by table, up to `cap`
    /// statements (at least 1); the rest are prepared when first used. Call it before the step
    /// clock starts.
    pub fn prepare(&self, conn: &mut Conn, cap: usize) -> mysql::Result<Prepared> {
        let mut p = Prepared::new(cap);
        for (t, w) in self.prepare_order(cap) {
            let stmt = conn.prep(self.sql(t, w))?;
            p.insert_early(t, w, stmt);
        }
        Ok(p)
    }

    /// The prepared statement for `w` on table `t`, preparing it now if needed (evicting and
    /// closing the least recently used statement when the store is full).
    fn stmt(
        &self,
        conn: &mut Conn,
        p: &mut Prepared,
        t: u32,
        w: Which,
    ) -> mysql::Result<Statement> {
        if let Some(s) = p.get(t, w) {
            return Ok(s);
        }
        if let Some(old) = p.evict_if_full() {
            conn.close(old)?;
        }
        let stmt = conn.prep(self.sql(t, w))?;
        p.insert_late(t, w, stmt.clone());
        Ok(stmt)
    }

    fn id(&self, rng: &mut SmallRng) -> i64 {
        rng.gen_range(1..=self.table_size.max(1)) as i64
    }

    fn table(&self, rng: &mut SmallRng) -> u32 {
        rng.gen_range(1..=self.tables.max(1))
    }

    /// Draw one transaction (one sysbench "event") as the operations to send, into `out`
    /// (cleared first). Every client runs these plans, so the thread and the event client run
    /// the same statements with the same random draws in the same order. The number of queries
    /// a transaction sends is `out.len()` (BEGIN and COMMIT included).
    pub fn plan_txn(&self, rng: &mut SmallRng, out: &mut Vec<Op>) {
        out.clear();
        let exec = |table: u32, which: Which, args: Vec<Arg>| Op::Exec { table, which, args };
        if self.kind == Kind::Custom {
            // One draw per pass, shared by every placeholder, so DELETE + INSERT of one id works.
            let table = self.table(rng);
            let (id, k, c, pad) = (self.id(rng), self.id(rng), c_value(rng), pad_value(rng));
            for (i, st) in self.custom.iter().enumerate() {
                let t = if st.per_table { table } else { 0 };
                let args = st
                    .params
                    .iter()
                    .map(|x| match x {
                        Param::Id => Arg::Int(id),
                        Param::K => Arg::Int(k),
                        Param::C => Arg::Str(c.clone()),
                        Param::Pad => Arg::Str(pad.clone()),
                    })
                    .collect();
                out.push(exec(t, Which::Custom(i as u16), args));
            }
            return;
        }
        if self.kind == Kind::PointSelect {
            let t = self.table(rng);
            out.push(exec(t, Which::Point, vec![Arg::Int(self.id(rng))]));
            return;
        }
        let m = &self.mix;
        out.push(Op::Begin);
        // As sysbench's oltp_common.lua: one random table per group of statements (the 10
        // point selects share one table, each range kind its own, and so on).
        if matches!(self.kind, Kind::ReadOnly | Kind::ReadWrite) {
            if m.point_selects > 0 {
                let t = self.table(rng);
                for _ in 0..m.point_selects {
                    out.push(exec(t, Which::Point, vec![Arg::Int(self.id(rng))]));
                }
            }
            if m.ranges > 0 {
                for w in [Which::Simple, Which::Sum, Which::Order, Which::Distinct] {
                    let t = self.table(rng);
                    for _ in 0..m.ranges {
                        let lo = self.id(rng);
                        let hi = lo + m.range_size as i64 - 1;
                        out.push(exec(t, w, vec![Arg::Int(lo), Arg::Int(hi)]));
                    }
                }
            }
        }
        if matches!(self.kind, Kind::WriteOnly | Kind::ReadWrite) {
            if m.index_updates > 0 {
                let t = self.table(rng);
                for _ in 0..m.index_updates {
                    out.push(exec(t, Which::IdxUpd, vec![Arg::Int(self.id(rng))]));
                }
            }
            if m.non_index_updates > 0 {
                let t = self.table(rng);
                for _ in 0..m.non_index_updates {
                    let c = c_value(rng);
                    let id = self.id(rng);
                    out.push(exec(t, Which::NonIdxUpd, vec![Arg::Str(c), Arg::Int(id)]));
                }
            }
            if m.delete_inserts > 0 {
                let t = self.table(rng);
                for _ in 0..m.delete_inserts {
                    let id = self.id(rng);
                    let k = self.id(rng);
                    out.push(exec(t, Which::Delete, vec![Arg::Int(id)]));
                    let (c, pad) = (c_value(rng), pad_value(rng));
                    let args = vec![Arg::Int(id), Arg::Int(k), Arg::Str(c), Arg::Str(pad)];
                    out.push(exec(t, Which::Insert, args));
                }
            }
        }
        out.push(Op::Commit);
    }

    /// Run one planned transaction on a mysql crate connection (the thread client); returns
    /// the number of queries it sent. On error the caller rolls back.
    pub fn run_plan(&self, conn: &mut Conn, p: &mut Prepared, ops: &[Op]) -> mysql::Result<u64> {
        for op in ops {
            match op {
                Op::Begin => conn.query_drop("BEGIN")?,
                Op::Commit => conn.query_drop("COMMIT")?,
                Op::Exec { table, which, args } => {
                    let st = self.stmt(conn, p, *table, *which)?;
                    p.executes += 1;
                    if args.is_empty() {
                        conn.exec_drop(&st, ())?;
                    } else {
                        let v: Vec<Value> = args
                            .iter()
                            .map(|a| match a {
                                Arg::Int(i) => Value::Int(*i),
                                Arg::Str(s) => Value::Bytes(s.as_bytes().to_vec()),
                            })
                            .collect();
                        conn.exec_drop(&st, v)?;
                    }
                }
            }
        }
        Ok(ops.len() as u64)
    }

    /// Draw and run one transaction (see [`Workload::plan_txn`], [`Workload::run_plan`]).
    pub fn run_txn(
        &self,
        conn: &mut Conn,
        p: &mut Prepared,
        rng: &mut SmallRng,
    ) -> mysql::Result<u64> {
        let mut ops = Vec::new();
        self.plan_txn(rng, &mut ops);
        self.run_plan(conn, p, &ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse("write-only").unwrap(), Kind::WriteOnly);
        assert_eq!(Kind::parse("oltp_read_write").ok(), None);
        assert_eq!(Kind::parse("POINT_SELECT").unwrap(), Kind::PointSelect);
        assert!(Kind::parse("nope").unwrap_err().contains("point-select"));
    }

    #[test]
    fn custom_sql_parses() {
        let s = parse_sql_file(
            "-- comment\nSELECT c FROM {table} WHERE id={id};\n\nUPDATE {table} SET c={c}, pad={pad} WHERE id={id}\n",
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].sql, "SELECT c FROM {table} WHERE id=?");
        assert_eq!(s[1].params, vec![Param::C, Param::Pad, Param::Id]);
        assert!(s[1].per_table);
        assert!(parse_sql_file("SELECT ?")
            .unwrap_err()
            .contains("placeholders"));
        assert!(parse_sql_file("SELECT {x}")
            .unwrap_err()
            .contains("unknown placeholder {x}"));
        assert!(parse_sql_file("-- only\n")
            .unwrap_err()
            .contains("no statement"));
    }

    #[test]
    fn custom_statements_are_classified_and_foreign_writes_found() {
        assert_eq!(
            classify("SELECT c FROM {table} WHERE id=?"),
            StmtClass::Read
        );
        assert_eq!(classify("  select 1"), StmtClass::Read);
        assert_eq!(
            classify("SELECT * FROM t INTO OUTFILE '/tmp/x'"),
            StmtClass::Other
        );
        assert_eq!(classify("/* hi */ DROP TABLE {table}"), StmtClass::Other);
        assert_eq!(classify("TRUNCATE sbtest1"), StmtClass::Other);
        assert_eq!(classify("SET GLOBAL x=1"), StmtClass::Other);
        assert_eq!(classify("delete from mysql.user"), StmtClass::Write);
        assert_eq!(
            classify("WITH a AS (SELECT 1) DELETE FROM t"),
            StmtClass::Write
        );
        assert_eq!(classify("COMMIT"), StmtClass::Transaction);
        let known = vec!["mysql".to_string(), "appdb".into(), "spinscope".into()];
        assert_eq!(
            foreign_schemas("DELETE FROM `mysql`.user WHERE 1", &known, "spinscope"),
            vec!["mysql"]
        );
        assert!(foreign_schemas(
            "UPDATE spinscope.sbtest1 t SET t.c='appdb.x'",
            &known,
            "spinscope"
        )
        .is_empty());
        let st = |sql: &str| parse_sql_file(sql).unwrap().remove(0);
        assert!(refuse_custom(
            &st("UPDATE {table} SET k=k+1 WHERE id={id}"),
            &known,
            "spinscope"
        )
        .is_none());
        assert!(refuse_custom(&st("SELECT * FROM appdb.orders"), &known, "spinscope").is_none());
        let r = refuse_custom(
            &st("INSERT INTO appdb.t SELECT * FROM {table}"),
            &known,
            "spinscope",
        )
        .unwrap();
        assert!(r.contains("appdb"), "{r}");
        let r = refuse_custom(&st("DROP TABLE {table}"), &known, "spinscope").unwrap();
        assert!(r.contains("DDL"), "{r}");
        assert_eq!(st("  SELECT 1;").line, 1);
    }

    #[test]
    fn values_have_sysbench_shape() {
        let mut r = SmallRng::seed_from_u64(1);
        let c = c_value(&mut r);
        assert_eq!(c.len(), 119);
        assert_eq!(pad_value(&mut r).len(), 59);
    }
}
