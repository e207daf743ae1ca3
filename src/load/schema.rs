//! The scratch schema: sysbench-compatible `sbtest1..N` tables (id, k, c, pad; index on k),
//! loaded with multi-row inserts from parallel connections. A marker table records that
//! spinscope created the schema; `prepare` and `cleanup` refuse any other schema unless
//! `--force`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mysql::prelude::Queryable;
use mysql::Conn;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::workload::{c_value, pad_value};
use super::Connector;
use crate::error::{Error, Result};

/// The marker table spinscope creates in its schema.
pub const MARKER: &str = "spinscope_owner";

/// Rows per multi-row INSERT.
const BATCH: u64 = 1000;

/// Check a schema name is a plain identifier (it is put into SQL verbatim, backquoted).
pub fn check_schema_name(s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::bad_input(format!(
            "--schema {s:?}: use letters, digits and '_' only (at most 64), e.g. spinscope"
        )));
    }
    Ok(())
}

fn q<T>(r: mysql::Result<T>, what: &str) -> Result<T> {
    r.map_err(|e| Error::runtime(format!("{what}: {}", super::describe_error(&e).1)))
}

/// What is in a schema now.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaState {
    pub exists: bool,
    pub ours: bool,
    /// Number of consecutive sbtestN tables from 1.
    pub tables: u32,
    /// MAX(id) of sbtest1 (the table size prepare used).
    pub table_size: u64,
}

pub fn inspect(conn: &mut Conn, schema: &str) -> Result<SchemaState> {
    let exists: Option<String> = q(
        conn.exec_first(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (schema,),
        ),
        "reading information_schema.SCHEMATA",
    )?;
    if exists.is_none() {
        return Ok(SchemaState {
            exists: false,
            ours: false,
            tables: 0,
            table_size: 0,
        });
    }
    let names: Vec<String> = q(
        conn.exec(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
            (schema,),
        ),
        "reading information_schema.TABLES",
    )?;
    let ours = names.iter().any(|n| n == MARKER);
    let mut tables = 0;
    while names.iter().any(|n| *n == format!("sbtest{}", tables + 1)) {
        tables += 1;
    }
    let table_size = if tables > 0 {
        let v: Option<Option<u64>> = q(
            conn.query_first(format!("SELECT MAX(id) FROM `{schema}`.sbtest1")),
            "reading the table size",
        )?;
        v.flatten().unwrap_or(0)
    } else {
        0
    };
    Ok(SchemaState {
        exists: true,
        ours,
        tables,
        table_size,
    })
}

/// Create the schema and load `tables` x `table_size` rows with `load_threads` connections.
pub fn prepare(
    connect: &Connector,
    schema: &str,
    tables: u32,
    table_size: u64,
    load_threads: u32,
    force: bool,
) -> Result<()> {
    check_schema_name(schema)?;
    let mut conn = connect()?;
    let st = inspect(&mut conn, schema)?;
    if st.exists && !st.ours && !force {
        return Err(Error::bad_input(format!(
            "--schema {schema}: the schema exists and was not created by spinscope; choose another --schema or pass --force to write into it"
        )));
    }
    q(
        conn.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{schema}`")),
        "creating the schema",
    )?;
    q(
        conn.query_drop(format!(
            "CREATE TABLE IF NOT EXISTS `{schema}`.`{MARKER}` (created_by VARCHAR(64) NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB"
        )),
        "creating the marker table",
    )?;
    q(
        conn.query_drop(format!(
            "INSERT INTO `{schema}`.`{MARKER}` (created_by) SELECT 'spinscope sweep prepare' FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM `{schema}`.`{MARKER}`)"
        )),
        "writing the marker",
    )?;
    // Old sbtest tables beyond the new count would confuse `run`'s table detection.
    for t in 1..=st.tables.max(tables) {
        q(
            conn.query_drop(format!("DROP TABLE IF EXISTS `{schema}`.sbtest{t}")),
            "dropping an old table",
        )?;
    }
    let next = Arc::new(AtomicU64::new(1));
    let rows_done = Arc::new(AtomicU64::new(0));
    let total = tables as u64 * table_size;
    let t0 = std::time::Instant::now();
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..load_threads.clamp(1, tables.max(1)))
            .map(|w| {
                let (next, rows_done, connect) = (
                    Arc::clone(&next),
                    Arc::clone(&rows_done),
                    Arc::clone(connect),
                );
                s.spawn(move || -> Result<()> {
                    let mut conn = connect()?;
                    let mut rng = SmallRng::seed_from_u64(0x5eed + w as u64);
                    loop {
                        let t = next.fetch_add(1, Ordering::Relaxed);
                        if t > tables as u64 {
                            return Ok(());
                        }
                        load_table(
                            &mut conn, schema, t, table_size, &mut rng, &rows_done, total,
                        )?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::runtime("a loader thread panicked")))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    eprintln!(
        "spinscope: prepared `{schema}`: {tables} tables x {table_size} rows in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn load_table(
    conn: &mut Conn,
    schema: &str,
    t: u64,
    size: u64,
    rng: &mut SmallRng,
    rows_done: &AtomicU64,
    total: u64,
) -> Result<()> {
    q(
        conn.query_drop(format!(
            "CREATE TABLE `{schema}`.sbtest{t} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB"
        )),
        "creating a table",
    )?;
    let mut id = 1u64;
    let mut last_pct = 0;
    while id <= size {
        let end = (id + BATCH - 1).min(size);
        let mut sql = format!("INSERT INTO `{schema}`.sbtest{t} (id, k, c, pad) VALUES ");
        for i in id..=end {
            if i > id {
                sql.push(',');
            }
            let k = rng.gen_range(1..=size);
            sql.push_str(&format!(
                "({i},{k},'{}','{}')",
                c_value(rng),
                pad_value(rng)
            ));
        }
        q(conn.query_drop(sql), "loading rows")?;
        let done = rows_done.fetch_add(end - id + 1, Ordering::Relaxed) + end - id + 1;
        let pct = done * 100 / total.max(1);
        if pct / 10 > last_pct / 10 {
            eprintln!("spinscope: prepare: {pct}% ({done} of {total} rows)");
        }
        last_pct = pct;
        id = end + 1;
    }
    // The secondary index after the load, as sysbench does: faster than maintaining it.
    q(
        conn.query_drop(format!("CREATE INDEX k_{t} ON `{schema}`.sbtest{t}(k)")),
        "creating the index on k",
    )?;
    Ok(())
}

/// Drop the schema if spinscope created it (or `force`).
pub fn cleanup(connect: &Connector, schema: &str, force: bool) -> Result<bool> {
    check_schema_name(schema)?;
    let mut conn = connect()?;
    let st = inspect(&mut conn, schema)?;
    if !st.exists {
        eprintln!("spinscope: schema `{schema}` does not exist; nothing to clean up");
        return Ok(false);
    }
    if !st.ours && !force {
        return Err(Error::bad_input(format!(
            "--schema {schema}: the schema was not created by spinscope; refusing to drop it (pass --force if you are sure)"
        )));
    }
    q(
        conn.query_drop(format!("DROP DATABASE `{schema}`")),
        "dropping the schema",
    )?;
    eprintln!("spinscope: dropped schema `{schema}`");
    Ok(true)
}
