//! Workloads modeled on sysbench 1.0's `oltp_*` scripts (same statements, counts and range
//! size by default), plus a custom statement list from a file. Statements are prepared once per
//! connection and run over the binary protocol; BEGIN/COMMIT are counted as queries, as
//! sysbench counts them ("other").
//!
//! Differences from sysbench, on purpose: ids are drawn uniformly (sysbench's default is its
//! "special" distribution); each statement picks its own random table, as sysbench does.

use mysql::prelude::Queryable;
use mysql::{Conn, Statement, Value};
use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

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
}

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
        out.push(CustomStmt {
            sql,
            params,
            per_table,
        });
    }
    if out.is_empty() {
        return Err(format!("--sql: the file has no statement; {SQL_FORM}"));
    }
    Ok(out)
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

/// Prepared statements of one table (None where the workload does not use them).
struct TableStmts {
    point: Statement,
    simple: Option<Statement>,
    sum: Option<Statement>,
    order: Option<Statement>,
    distinct: Option<Statement>,
    idx_upd: Option<Statement>,
    non_idx_upd: Option<Statement>,
    delete: Option<Statement>,
    insert: Option<Statement>,
}

/// A connection's prepared state for one workload.
pub struct Prepared {
    tables: Vec<TableStmts>,
    /// custom[statement][table] (one entry when the statement has no {table}).
    custom: Vec<Vec<Statement>>,
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
    /// Prepare this workload's statements on a connection.
    pub fn prepare(&self, conn: &mut Conn) -> mysql::Result<Prepared> {
        let reads = matches!(self.kind, Kind::ReadOnly | Kind::ReadWrite);
        let writes = matches!(self.kind, Kind::WriteOnly | Kind::ReadWrite);
        let mut tables = Vec::new();
        if self.kind != Kind::Custom {
            for t in 1..=self.tables {
                let point = conn.prep(format!("SELECT c FROM sbtest{t} WHERE id=?"))?;
                let mut p = |on: bool, sql: String| -> mysql::Result<Option<Statement>> {
                    if on {
                        conn.prep(sql).map(Some)
                    } else {
                        Ok(None)
                    }
                };
                tables.push(TableStmts {
                    point,
                    simple: p(
                        reads,
                        format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
                    )?,
                    sum: p(
                        reads,
                        format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
                    )?,
                    order: p(
                        reads,
                        format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"),
                    )?,
                    distinct: p(
                        reads,
                        format!(
                            "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c"
                        ),
                    )?,
                    idx_upd: p(writes, format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"))?,
                    non_idx_upd: p(writes, format!("UPDATE sbtest{t} SET c=? WHERE id=?"))?,
                    delete: p(writes, format!("DELETE FROM sbtest{t} WHERE id=?"))?,
                    insert: p(
                        writes,
                        format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
                    )?,
                });
            }
        }
        let mut custom = Vec::new();
        for st in &self.custom {
            let mut per = Vec::new();
            if st.per_table {
                for t in 1..=self.tables {
                    per.push(conn.prep(st.sql.replace("{table}", &format!("sbtest{t}")))?);
                }
            } else {
                per.push(conn.prep(&st.sql)?);
            }
            custom.push(per);
        }
        Ok(Prepared { tables, custom })
    }

    fn id(&self, rng: &mut SmallRng) -> i64 {
        rng.gen_range(1..=self.table_size.max(1)) as i64
    }

    /// Run one transaction (one sysbench "event"); returns the number of queries it sent.
    /// On error the caller rolls back.
    pub fn run_txn(&self, conn: &mut Conn, p: &Prepared, rng: &mut SmallRng) -> mysql::Result<u64> {
        if self.kind == Kind::Custom {
            return self.run_custom(conn, p, rng);
        }
        let n_tables = p.tables.len();
        let pick = |rng: &mut SmallRng| &p.tables[rng.gen_range(0..n_tables)];
        if self.kind == Kind::PointSelect {
            let t = pick(rng);
            conn.exec_drop(&t.point, (self.id(rng),))?;
            return Ok(1);
        }
        let m = &self.mix;
        let mut q = 0u64;
        conn.query_drop("BEGIN")?;
        q += 1;
        if matches!(self.kind, Kind::ReadOnly | Kind::ReadWrite) {
            for _ in 0..m.point_selects {
                let t = pick(rng);
                conn.exec_drop(&t.point, (self.id(rng),))?;
                q += 1;
            }
            for _ in 0..m.ranges {
                for which in 0..4 {
                    let t = pick(rng);
                    let st = [&t.simple, &t.sum, &t.order, &t.distinct][which];
                    if let Some(st) = st {
                        let lo = self.id(rng);
                        conn.exec_drop(st, (lo, lo + m.range_size as i64 - 1))?;
                        q += 1;
                    }
                }
            }
        }
        if matches!(self.kind, Kind::WriteOnly | Kind::ReadWrite) {
            for _ in 0..m.index_updates {
                if let Some(st) = &pick(rng).idx_upd {
                    conn.exec_drop(st, (self.id(rng),))?;
                    q += 1;
                }
            }
            for _ in 0..m.non_index_updates {
                if let Some(st) = &pick(rng).non_idx_upd {
                    conn.exec_drop(st, (c_value(rng), self.id(rng)))?;
                    q += 1;
                }
            }
            for _ in 0..m.delete_inserts {
                let t = pick(rng);
                if let (Some(d), Some(i)) = (&t.delete, &t.insert) {
                    let id = self.id(rng);
                    conn.exec_drop(d, (id,))?;
                    let k = self.id(rng);
                    conn.exec_drop(i, (id, k, c_value(rng), pad_value(rng)))?;
                    q += 2;
                }
            }
        }
        conn.query_drop("COMMIT")?;
        Ok(q + 1)
    }

    fn run_custom(&self, conn: &mut Conn, p: &Prepared, rng: &mut SmallRng) -> mysql::Result<u64> {
        // One draw per pass, shared by every placeholder, so DELETE + INSERT of one id works.
        let table = rng.gen_range(0..self.tables.max(1) as usize);
        let (id, k, c, pad) = (self.id(rng), self.id(rng), c_value(rng), pad_value(rng));
        for (st, prepared) in self.custom.iter().zip(&p.custom) {
            let stmt = &prepared[if st.per_table { table } else { 0 }];
            let params: Vec<Value> = st
                .params
                .iter()
                .map(|x| match x {
                    Param::Id => Value::Int(id),
                    Param::K => Value::Int(k),
                    Param::C => Value::Bytes(c.clone().into_bytes()),
                    Param::Pad => Value::Bytes(pad.clone().into_bytes()),
                })
                .collect();
            if params.is_empty() {
                conn.exec_drop(stmt, ())?;
            } else {
                conn.exec_drop(stmt, params)?;
            }
        }
        Ok(self.custom.len() as u64)
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
    fn values_have_sysbench_shape() {
        let mut r = SmallRng::seed_from_u64(1);
        let c = c_value(&mut r);
        assert_eq!(c.len(), 119);
        assert_eq!(pad_value(&mut r).len(), 59);
    }
}
