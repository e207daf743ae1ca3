//! The scratch schema: sysbench-compatible `sbtest1..N` tables (id, k, c, pad; index on k),
//! loaded with multi-row inserts from parallel connections.
//!
//! Ownership: a marker table records that spinscope created the schema, and a manifest what
//! `prepare` promised (tables, rows) and whether it finished. System schemas are never
//! written. `--force` only lets `prepare` take an empty schema, or re-create spinscope's own
//! tables in its own; `cleanup` drops only spinscope's tables, and the schema only when
//! nothing else is left in it; `run` refuses a schema without the marker, a half-prepared one
//! and one whose tables lost rows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::workload::{c_value, pad_value};
use super::Connector;
use crate::error::{Error, Result};

/// The marker table spinscope creates in its schema.
pub const MARKER: &str = "spinscope_owner";

/// The manifest table: what prepare promised, and whether it finished.
pub const MANIFEST: &str = "spinscope_manifest";

/// Schemas of the server itself: never written, forced or not.
pub const SYSTEM_SCHEMAS: &[&str] = &[
    "mysql",
    "sys",
    "performance_schema",
    "information_schema",
    "ndbinfo",
    "mysql_innodb_cluster_metadata",
];

/// Rows per multi-row INSERT.
const BATCH: u64 = 1000;

/// Check a schema name is a plain identifier (it is put into SQL verbatim, backquoted).
pub fn check_schema_name(s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::bad_input(format!(
            "--schema {s:?}: use letters, digits and '_' only (at most 64), e.g. spinscope"
        )));
    }
    if SYSTEM_SCHEMAS.iter().any(|x| x.eq_ignore_ascii_case(s)) {
        return Err(system_refusal(s));
    }
    Ok(())
}

/// Check `sweep prepare`'s sizes: tables 1..=1000, rows per table 1..=2e9, loading
/// connections 1..=64.
pub fn check_prepare_sizes(tables: u32, table_size: u64, load_threads: u32) -> Result<()> {
    let limits: [(&str, u64, u64); 3] = [
        ("--tables", tables.into(), 1000),
        ("--table-size", table_size, 2_000_000_000),
        ("--load-threads", load_threads.into(), 64),
    ];
    if let Some((flag, v, max)) = limits.iter().find(|(_, v, max)| *v == 0 || v > max) {
        return Err(Error::bad_input(format!("{flag} {v}: use 1..={max}")));
    }
    Ok(())
}

fn system_refusal(s: &str) -> Error {
    Error::bad_input(format!(
        "--schema {s}: a system schema of the server; spinscope never writes there, --force or not. Use a schema of its own, e.g. --schema spinscope"
    ))
}

/// Whether a table name is one spinscope makes.
fn is_ours(name: &str) -> bool {
    name == MARKER
        || name == MANIFEST
        || name == crate::journal::SERVER_TABLE
        || name
            .strip_prefix("sbtest")
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
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
    /// Tables (and views) spinscope did not make.
    pub others: Vec<String>,
    /// The server reports it as a system schema (system views, performance_schema engine).
    pub system: bool,
    /// What the manifest says: (tables, table_size, complete).
    pub manifest: Option<(u32, u64, bool)>,
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
            others: Vec::new(),
            system: false,
            manifest: None,
        });
    }
    let system: Option<u64> = q(
        conn.exec_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND (TABLE_TYPE = 'SYSTEM VIEW' OR ENGINE = 'PERFORMANCE_SCHEMA')",
            (schema,),
        ),
        "reading information_schema.TABLES",
    )?;
    let names: Vec<String> = q(
        conn.exec(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
            (schema,),
        ),
        "reading information_schema.TABLES",
    )?;
    let ours = names.iter().any(|n| n == MARKER);
    let others: Vec<String> = names.iter().filter(|n| !is_ours(n)).cloned().collect();
    let manifest = if names.iter().any(|n| n == MANIFEST) {
        let m: Option<(u32, u64, u8)> = q(
            conn.query_first(format!(
                "SELECT tables, table_size, complete FROM `{schema}`.`{MANIFEST}` LIMIT 1"
            )),
            "reading the manifest",
        )?;
        m.map(|(t, s, c)| (t, s, c == 1))
    } else {
        None
    };
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
        others,
        system: system.unwrap_or(0) > 0,
        manifest,
    })
}

/// Check a schema before `sweep run` writes into it: spinscope's marker, a finished prepare,
/// and every table holding the rows prepare promised. Returns the state with the manifest's
/// table count and size.
pub fn verify_for_run(conn: &mut Conn, schema: &str) -> Result<SchemaState> {
    check_schema_name(schema)?;
    let mut st = inspect(conn, schema)?;
    let again = |t: u32, s: u64| {
        format!(
            "run `spinscope sweep prepare --schema {schema} --tables {t} --table-size {s}` again"
        )
    };
    if st.system {
        return Err(system_refusal(schema));
    }
    if !st.exists || (st.ours && st.tables == 0 && st.manifest.is_none()) {
        return Err(Error::bad_input(format!(
            "--schema {schema}: no sbtest tables there; run `spinscope sweep prepare --schema {schema}` first"
        )));
    }
    if !st.ours {
        return Err(Error::bad_input(format!(
            "--schema {schema}: spinscope did not create this schema (no {MARKER} table); sweep run writes into its tables, so it refuses. Use `spinscope sweep prepare --schema NAME` for a schema of its own"
        )));
    }
    let Some((tables, size, complete)) = st.manifest else {
        return Err(Error::bad_input(format!(
            "--schema {schema}: no manifest, so the tables cannot be checked (prepared by an older spinscope, or interrupted); {}",
            again(st.tables.max(1), st.table_size.max(1))
        )));
    };
    if !complete {
        return Err(Error::bad_input(format!(
            "--schema {schema}: prepare did not finish (interrupted or failed); {}",
            again(tables, size)
        )));
    }
    if st.tables < tables {
        return Err(Error::bad_input(format!(
            "--schema {schema}: prepare made {tables} sbtest tables, only {} are there; {}",
            st.tables,
            again(tables, size)
        )));
    }
    for t in 1..=tables {
        let n: Option<u64> = q(
            conn.query_first(format!("SELECT COUNT(*) FROM `{schema}`.sbtest{t}")),
            "counting rows",
        )?;
        let n = n.unwrap_or(0);
        if n < size {
            return Err(Error::bad_input(format!(
                "--schema {schema}: sbtest{t} holds {n} rows, prepare promised {size}; {}",
                again(tables, size)
            )));
        }
    }
    st.tables = tables;
    st.table_size = size;
    Ok(st)
}

/// How far `prepare`'s load is, for a progress observer.
#[derive(Debug, Clone, PartialEq)]
pub struct Loading {
    /// Rows loaded so far, of `total` (tables x table size).
    pub rows: u64,
    pub total: u64,
    /// Per table (`sbtest1` first): rows loaded so far.
    pub per_table: Vec<u64>,
    /// Tables whose rows and index are done.
    pub tables_done: u32,
    pub table_size: u64,
    pub elapsed: Duration,
}

/// What `prepare` reports, from the calling thread only.
#[derive(Debug, Clone, PartialEq)]
pub enum PrepareEvent {
    /// The load starts: `tables` x `table_size` rows over `threads` connections.
    Start {
        tables: u32,
        table_size: u64,
        threads: u32,
    },
    /// About every 250 ms while loading, and once when the last table is done.
    Progress(Loading),
    /// Finished (the manifest says complete).
    Done { elapsed: Duration },
}

/// How often the load's progress is reported.
const REPORT_EVERY: Duration = Duration::from_millis(250);

/// Create the schema and load `tables` x `table_size` rows with `load_threads` connections.
pub fn prepare(
    connect: &Connector,
    schema: &str,
    tables: u32,
    table_size: u64,
    load_threads: u32,
    force: bool,
    observe: &mut dyn FnMut(PrepareEvent),
) -> Result<()> {
    check_schema_name(schema)?;
    let mut conn = connect()?;
    let st = inspect(&mut conn, schema)?;
    if st.system {
        return Err(system_refusal(schema));
    }
    if st.exists && !st.ours && !st.others.is_empty() {
        return Err(Error::bad_input(format!(
            "--schema {schema}: the schema holds tables spinscope did not make ({}); it never writes there, --force or not. Choose another --schema",
            st.others.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    if st.exists && !st.ours && !force {
        return Err(Error::bad_input(format!(
            "--schema {schema}: the schema exists and was not created by spinscope; choose another --schema, or pass --force to take it over (only an empty schema can be)"
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
    // The manifest says "not finished" until the last table is loaded.
    q(
        conn.query_drop(format!(
            "CREATE TABLE IF NOT EXISTS `{schema}`.`{MANIFEST}` (tables INT UNSIGNED NOT NULL, table_size BIGINT UNSIGNED NOT NULL, complete TINYINT NOT NULL, updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB"
        )),
        "creating the manifest",
    )?;
    q(
        conn.query_drop(format!("DELETE FROM `{schema}`.`{MANIFEST}`")),
        "writing the manifest",
    )?;
    q(
        conn.query_drop(format!(
            "INSERT INTO `{schema}`.`{MANIFEST}` (tables, table_size, complete) VALUES ({tables}, {table_size}, 0)"
        )),
        "writing the manifest",
    )?;
    // Old sbtest tables beyond the new count would confuse `run`'s table detection.
    for t in 1..=st.tables.max(tables) {
        q(
            conn.query_drop(format!("DROP TABLE IF EXISTS `{schema}`.sbtest{t}")),
            "dropping an old table",
        )?;
    }
    let next = Arc::new(AtomicU64::new(1));
    let per_table: Arc<Vec<AtomicU64>> = Arc::new((0..tables).map(|_| AtomicU64::new(0)).collect());
    let tables_done = Arc::new(AtomicU64::new(0));
    let total = tables as u64 * table_size;
    let threads = load_threads.clamp(1, tables.max(1));
    observe(PrepareEvent::Start {
        tables,
        table_size,
        threads,
    });
    let t0 = Instant::now();
    let snapshot = || {
        let rows: Vec<u64> = per_table
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect();
        Loading {
            rows: rows.iter().sum(),
            total,
            per_table: rows,
            tables_done: tables_done.load(Ordering::Relaxed) as u32,
            table_size,
            elapsed: t0.elapsed(),
        }
    };
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let (next, per_table, tables_done, connect) = (
                    Arc::clone(&next),
                    Arc::clone(&per_table),
                    Arc::clone(&tables_done),
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
                        let rows = &per_table[(t - 1) as usize];
                        load_table(&mut conn, schema, t, table_size, &mut rng, rows)?;
                        tables_done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        // This thread reports while the loaders work: the observer never runs on theirs.
        let mut last = Instant::now();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(20));
            if last.elapsed() >= REPORT_EVERY {
                last = Instant::now();
                observe(PrepareEvent::Progress(snapshot()));
            }
        }
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
    observe(PrepareEvent::Progress(snapshot()));
    if crate::interrupt::stopped() {
        return Err(Error::runtime(format!(
            "prepare interrupted; `{schema}` is marked unfinished and `sweep run` refuses it until prepare runs again"
        )));
    }
    q(
        conn.query_drop(format!("UPDATE `{schema}`.`{MANIFEST}` SET complete = 1")),
        "writing the manifest",
    )?;
    observe(PrepareEvent::Done {
        elapsed: t0.elapsed(),
    });
    Ok(())
}

fn load_table(
    conn: &mut Conn,
    schema: &str,
    t: u64,
    size: u64,
    rng: &mut SmallRng,
    rows_done: &AtomicU64,
) -> Result<()> {
    q(
        conn.query_drop(format!(
            "CREATE TABLE `{schema}`.sbtest{t} (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB"
        )),
        "creating a table",
    )?;
    let mut id = 1u64;
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
        rows_done.fetch_add(end - id + 1, Ordering::Relaxed);
        id = end + 1;
    }
    // The secondary index after the load, as sysbench does: faster than maintaining it.
    q(
        conn.query_drop(format!("CREATE INDEX k_{t} ON `{schema}`.sbtest{t}(k)")),
        "creating the index on k",
    )?;
    Ok(())
}

/// Drop spinscope's tables, and the schema when nothing else is left in it. A schema without
/// the marker is refused unless `force`, and even then only when it holds nothing but tables
/// named like spinscope's. System schemas are refused always.
pub fn cleanup(
    connect: &Connector,
    schema: &str,
    force: bool,
    shown: &mut dyn crate::meter::Meter,
) -> Result<bool> {
    check_schema_name(schema)?;
    let mut conn = connect()?;
    let st = inspect(&mut conn, schema)?;
    if st.system {
        return Err(system_refusal(schema));
    }
    if !st.exists {
        shown.note(&format!(
            "schema `{schema}` does not exist; nothing to clean up"
        ));
        return Ok(false);
    }
    if !st.ours && !force {
        return Err(Error::bad_input(format!(
            "--schema {schema}: the schema was not created by spinscope; refusing to drop anything in it"
        )));
    }
    if !st.ours && !st.others.is_empty() {
        return Err(Error::bad_input(format!(
            "--schema {schema}: not created by spinscope and holds other tables ({}); refusing to drop anything, --force or not",
            st.others.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    let names: Vec<String> = q(
        conn.exec(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
            (schema,),
        ),
        "reading information_schema.TABLES",
    )?;
    // Open change records (from any host) are kept: `spinscope restore` needs them.
    let open_records: u64 = if names.iter().any(|n| n == crate::journal::SERVER_TABLE) {
        q(
            conn.query_first(format!(
                "SELECT COUNT(*) FROM `{schema}`.`{}`",
                crate::journal::SERVER_TABLE
            )),
            "reading the server-side journal",
        )?
        .unwrap_or(0)
    } else {
        0
    };
    if open_records > 0 {
        shown.note(&format!(
            "`{schema}` holds {open_records} open change record(s) in {}; kept with the marker. Run `spinscope restore` with the same connection flags, then cleanup again",
            crate::journal::SERVER_TABLE
        ));
    }
    // Marker last: an interrupted cleanup still knows the schema is ours.
    let mut mine: Vec<&String> = names
        .iter()
        .filter(|n| is_ours(n))
        .filter(|n| open_records == 0 || (*n != MARKER && *n != crate::journal::SERVER_TABLE))
        .collect();
    mine.sort_by_key(|n| *n == MARKER);
    for t in &mine {
        q(
            conn.query_drop(format!("DROP TABLE IF EXISTS `{schema}`.`{t}`")),
            "dropping a table",
        )?;
    }
    let left: Option<u64> = q(
        conn.exec_first(
            "SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?) + (SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?) + (SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?)",
            (schema, schema, schema),
        ),
        "reading what is left",
    )?;
    if left.unwrap_or(1) > 0 {
        shown.note(&format!(
            "dropped spinscope's {} table(s) in `{schema}`; kept the schema: it holds other objects ({})",
            mine.len(),
            st.others.join(", ")
        ));
        return Ok(false);
    }
    q(
        conn.query_drop(format!("DROP DATABASE `{schema}`")),
        "dropping the schema",
    )?;
    shown.note(&format!("dropped schema `{schema}`"));
    Ok(true)
}
