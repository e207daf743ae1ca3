//! The durable change journal: every change spinscope makes to a server (a `SET GLOBAL` of a
//! sweep variant, doctor's performance_schema instruments) is written here and fsynced
//! **before** the change, and removed only after the value was set back and read back equal.
//! A `kill -9`, a lost terminal or a crash therefore leaves a record that the next spinscope
//! command connecting to that server reports, and that `spinscope restore` replays.
//!
//! Records live in `$XDG_STATE_HOME/spinscope/journal/` (else `~/.local/state/spinscope/journal/`),
//! one JSON file per change, mode 0600. A server is known by facts the server reports, read in
//! one statement ([`identify`]): its start time on its own clock (`UNIX_TIMESTAMP() - Uptime`),
//! and `@@server_uuid` where it has one (MySQL 5.6+), else `@@hostname`, `@@port`, `@@socket`,
//! `@@datadir` and `@@server_id` together. This host's clock and `hostname:port` alone decide
//! nothing: a start time that moved by more than [`RESTART_SLACK_S`] means the server restarted
//! and the change is gone with it.
//!
//! The live holder of a variable also holds the server-side named lock `spinscope:<variable>`
//! (`GET_LOCK`), which other clients on any host see; see `load::guard`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::session::Session;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Seconds of disagreement between two start-time readings still taken as the same start.
/// Both readings are `UNIX_TIMESTAMP() - Uptime` on the server's own clock in one statement
/// (exact on MariaDB, whose Uptime is that very difference); the slack covers a server whose
/// Uptime ticks apart from its clock.
pub const RESTART_SLACK_S: i64 = 2;

/// The identity scheme of records written since the server's own clock decides (records
/// without it were written by older versions: client clock, `hostname:port`).
pub const IDENTITY_SERVER_CLOCK: u32 = 2;

/// Which server a record belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerId {
    /// How we reached it (`host:port` or the socket path), for messages.
    pub endpoint: String,
    /// `@@server_uuid`, else `@@hostname:@@port` with socket, datadir and server_id (older
    /// records: `@@hostname:@@port` alone).
    pub key: String,
    /// The server's start time, unix seconds on the server's clock (older records: this
    /// host's clock minus `Uptime`).
    pub started_unix_s: i64,
    /// Connection flags that reach it again, for the restore hint.
    pub connect_hint: String,
    /// [`IDENTITY_SERVER_CLOCK`] for records whose key and start time came from the server
    /// alone; 0 (absent) for older records.
    #[serde(default)]
    pub identity: u32,
    /// The key an older spinscope gave this server (`@@server_uuid` or `@@hostname:@@port`),
    /// so records it wrote are still found.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub legacy_key: String,
}

impl ServerId {
    /// Whether `rec` (a record's server) is this server. Records from older versions match by
    /// their weaker key.
    pub fn same_as(&self, rec: &ServerId) -> bool {
        if rec.identity >= IDENTITY_SERVER_CLOCK {
            rec.key == self.key
        } else {
            !self.legacy_key.is_empty() && rec.key == self.legacy_key
        }
    }
}

/// The process that made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    /// Start time of the process in clock ticks since boot (tells a reused pid apart).
    pub pid_start: u64,
    pub user: String,
    pub client_host: String,
    pub command: String,
}

/// One change to a server, open until it was set back and read back equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub server: ServerId,
    /// What was changed: a global variable name, or a description.
    pub what: String,
    /// The value before the change, as the server reports it.
    pub original: String,
    /// The value spinscope set, as the server reported it after the change.
    pub set_to: String,
    /// A query returning one value: the current state, compared with `original` / `set_to`.
    pub check_sql: String,
    /// The statements that put the original back.
    pub restore_sql: Vec<String>,
    pub holder: Holder,
    pub opened_unix_s: i64,
    /// The server-side named lock its live holder keeps (`GET_LOCK`), seen from any host.
    #[serde(default)]
    pub lock: Option<String>,
    /// The scratch schema holding a copy of this record on the server (table
    /// [`SERVER_TABLE`]), so spinscope on another client host sees it.
    #[serde(default)]
    pub server_copy: Option<String>,
    /// Other values the server may hold because of spinscope's own statements: while a
    /// statement is in flight (journaled, not yet read back), the value before it, and the
    /// states between the statements of one change. `restore` treats them like `set_to`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_ours: Vec<String>,
    /// While a statement is in flight: every global variable read just before it on the same
    /// connection, to name what may have moved with it if the process died before reading
    /// around it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub around: BTreeMap<String, String>,
}

impl Record {
    /// Whether `current` is a value spinscope's statements put there.
    pub fn ours(&self, current: &str) -> bool {
        same_value(current, &self.set_to) || self.also_ours.iter().any(|v| same_value(current, v))
    }
}

/// Test seam, only in a build with the `test-seams` feature: `SPINSCOPE_FAULT=after-journal[:N]`
/// or `after-statement[:N]` stops this process dead (SIGKILL, as `kill -9`) right after the
/// journal write for, or right after, the N-th change statement it sends (default 1st).
#[cfg(feature = "test-seams")]
pub const FAULT_ENV: &str = "SPINSCOPE_FAULT";

/// The two sides of a change statement a crash can fall on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    AfterJournal,
    AfterStatement,
}

#[cfg(feature = "test-seams")]
static FAULT_SEEN: [std::sync::atomic::AtomicU64; 2] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// Parse a `SPINSCOPE_FAULT` value: the point and which statement (1-based).
pub fn parse_fault(spec: &str) -> Option<(Fault, u64)> {
    let (name, n) = match spec.trim().split_once(':') {
        Some((a, b)) => (a, b.trim().parse().ok().filter(|n| *n > 0)?),
        None => (spec.trim(), 1),
    };
    let p = match name {
        "after-journal" => Fault::AfterJournal,
        "after-statement" => Fault::AfterStatement,
        _ => return None,
    };
    Some((p, n))
}

/// A point where `SPINSCOPE_FAULT` may stop the process (a build with the `test-seams`
/// feature); called once per change statement on each side.
#[cfg(not(feature = "test-seams"))]
pub fn fault_point(_: Fault) {}

/// A point where [`FAULT_ENV`] may stop the process; called once per change statement on
/// each side.
#[cfg(feature = "test-seams")]
pub fn fault_point(p: Fault) {
    let Some((want, n)) = std::env::var(FAULT_ENV).ok().and_then(|s| parse_fault(&s)) else {
        return;
    };
    if want != p {
        return;
    }
    let seen = FAULT_SEEN[p as usize].fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    if seen == n {
        eprintln!("spinscope: {FAULT_ENV}: dying at {p:?} #{n}");
        // SAFETY: kill(2) on this very process: the test seam's whole purpose.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// The table that keeps the server-side copies of records in a scratch schema.
pub const SERVER_TABLE: &str = "spinscope_journal";

/// Write (or rewrite) the copy of `rec` in its scratch schema on the server.
pub fn write_server_copy(conn: &mut dyn Session, rec: &Record) -> mysql::Result<()> {
    let Some(schema) = &rec.server_copy else {
        return Ok(());
    };
    conn.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS `{schema}`.`{SERVER_TABLE}` (id VARCHAR(100) NOT NULL PRIMARY KEY, record LONGTEXT NOT NULL, opened_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB"
    ))?;
    let text = serde_json::to_string(rec).unwrap_or_default();
    conn.exec_drop(
        format!("REPLACE INTO `{schema}`.`{SERVER_TABLE}` (id, record) VALUES (?, ?)"),
        (&rec.id, text),
    )
}

/// Remove the server-side copy of `rec` (if it has one).
pub fn delete_server_copy(conn: &mut dyn Session, rec: &Record) {
    if let Some(schema) = &rec.server_copy {
        let _ = conn.exec_drop(
            format!("DELETE FROM `{schema}`.`{SERVER_TABLE}` WHERE id = ?"),
            (&rec.id,),
        );
    }
}

/// Every record copied to the server, from every schema that has the journal table.
pub fn server_records(conn: &mut dyn Session) -> Vec<Record> {
    let schemas: Vec<String> = conn
        .exec(
            "SELECT TABLE_SCHEMA FROM information_schema.TABLES WHERE TABLE_NAME = ?",
            (SERVER_TABLE,),
        )
        .unwrap_or_default();
    let mut out = Vec::new();
    for s in schemas {
        let rows: Vec<String> = conn
            .query(format!("SELECT record FROM `{s}`.`{SERVER_TABLE}`"))
            .unwrap_or_default();
        out.extend(
            rows.iter()
                .filter_map(|t| serde_json::from_str::<Record>(t).ok()),
        );
    }
    out
}

/// The records of the server behind `conn`: this host's journal plus the copies on the server
/// made from other hosts.
pub fn records_for(conn: &mut dyn Session, now: &ServerId) -> Vec<Record> {
    let mut recs = for_server(now);
    for r in server_records(conn) {
        if now.same_as(&r.server) && !recs.iter().any(|l| l.id == r.id) {
            recs.push(r);
        }
    }
    recs.sort_by(|a, b| a.id.cmp(&b.id));
    recs
}

/// [`holder_state`], and for a holder on another host, whether it still holds its lock.
pub fn holder_state_on(conn: &mut dyn Session, r: &Record) -> HolderState {
    match holder_state(&r.holder) {
        HolderState::OtherHost => match &r.lock {
            Some(l) => {
                let used: Option<Option<u64>> = conn
                    .exec_first("SELECT IS_USED_LOCK(?)", (l,))
                    .ok()
                    .flatten();
                if used.flatten().is_some() {
                    HolderState::Alive
                } else {
                    HolderState::Gone
                }
            }
            None => HolderState::OtherHost,
        },
        st => st,
    }
}

/// Close a record here and on the server.
pub fn close_everywhere(conn: &mut dyn Session, r: &Record) {
    // The server's copy first: a kill between the two leaves the local (durable) record.
    delete_server_copy(conn, r);
    close(&r.id);
}

/// Where the journal lives; None when neither XDG_STATE_HOME nor HOME is set.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = test_dir() {
        return Some(d);
    }
    Some(crate::files::state_dir()?.join("journal"))
}

fn journal_dir() -> Result<PathBuf> {
    let d = dir().ok_or_else(|| {
        Error::runtime(
            "no place for the change journal: set HOME or XDG_STATE_HOME; spinscope changes nothing on a server without recording it first",
        )
    })?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&d)
        .map_err(|e| {
            Error::runtime(format!(
                "cannot create the change journal {} ({e}); fix its permissions, or set XDG_STATE_HOME to a writable directory",
                d.display()
            ))
        })?;
    Ok(d)
}

use std::os::unix::fs::DirBuilderExt;

/// Test seam, only in a build with the `test-seams` feature: seconds added to this host's
/// clock as spinscope reads it, to prove that a client whose clock is off (or stepped by NTP)
/// decides nothing about a server.
#[cfg(feature = "test-seams")]
pub const CLOCK_SHIFT_ENV: &str = "SPINSCOPE_TEST_CLOCK_SHIFT_S";

#[cfg(feature = "test-seams")]
fn clock_shift_s() -> i64 {
    std::env::var(CLOCK_SHIFT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(not(feature = "test-seams"))]
fn clock_shift_s() -> i64 {
    0
}

/// This host's clock, unix seconds (shifted by `SPINSCOPE_TEST_CLOCK_SHIFT_S` in a build with
/// the `test-seams` feature). Used only for people ("opened 5 min ago"), never for a server's
/// identity.
pub fn now_unix() -> i64 {
    let shift = clock_shift_s();
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
        + shift
}

/// Start time of a running process in clock ticks since boot (`/proc/PID/stat` field 22);
/// None when there is no such process or it is a zombie (killed, not yet reaped).
pub fn process_start(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = s[s.rfind(')')? + 1..].split_whitespace();
    if matches!(f.next()?, "Z" | "X" | "x") {
        return None;
    }
    f.nth(18)?.parse().ok()
}

fn client_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

static COMMAND: Mutex<String> = Mutex::new(String::new());

/// Name the running command for the records (`sweep run`, `doctor`), set once by main.
pub fn set_command(cmd: &str) {
    *COMMAND.lock().unwrap_or_else(|e| e.into_inner()) = cmd.to_string();
}

/// This process as a holder.
pub fn me() -> Holder {
    let pid = std::process::id();
    Holder {
        pid,
        pid_start: process_start(pid).unwrap_or(0),
        user: std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| format!("uid {}", unsafe { libc::getuid() })),
        client_host: client_host(),
        command: {
            let c = COMMAND.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if c.is_empty() {
                "spinscope".into()
            } else {
                format!("spinscope {c}")
            }
        },
    }
}

/// Whether the process that made a change still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HolderState {
    /// This very process.
    Me,
    Alive,
    Gone,
    /// Made on another client host: its liveness is unknown here.
    OtherHost,
}

pub fn holder_state(h: &Holder) -> HolderState {
    if h.client_host != client_host() {
        return HolderState::OtherHost;
    }
    if h.pid == std::process::id() && process_start(h.pid) == Some(h.pid_start) {
        return HolderState::Me;
    }
    match process_start(h.pid) {
        Some(s) if s == h.pid_start => HolderState::Alive,
        _ => HolderState::Gone,
    }
}

/// The statements [`identify`] tries, in order: each reads every fact in one statement (one
/// moment on the server's clock). MySQL 5.7+/8 keep status in performance_schema, MySQL 5.6
/// and MariaDB in information_schema; MariaDB has no `@@server_uuid`.
const IDENTITY_SQL: [&str; 4] = [
    "SELECT @@server_uuid, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'",
    "SELECT @@server_uuid, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'",
    "SELECT NULL, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'",
    "SELECT NULL, CAST(UNIX_TIMESTAMP() - CAST(VARIABLE_VALUE AS UNSIGNED) AS SIGNED), @@hostname, @@port, @@socket, @@datadir, @@server_id FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime'",
];

/// The facts one identity statement returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub uuid: Option<String>,
    pub started_unix_s: i64,
    pub hostname: String,
    pub port: u64,
    pub socket: String,
    pub datadir: String,
    pub server_id: u64,
}

/// Which server a saved document is about, as the server itself reported it (the journal's
/// key and the facts behind it): documents of one server reached by TCP and by the socket
/// carry the same key. Written into doctor documents (`identity`) from the snapshot's
/// variables; `report` groups by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocIdentity {
    /// [`Facts::key`]: `@@server_uuid`, else hostname:port with socket, datadir and server_id.
    pub key: String,
    pub hostname: String,
    pub port: u64,
    pub socket: String,
    pub datadir: String,
    pub server_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

impl Facts {
    /// The facts from `SHOW GLOBAL VARIABLES` (a snapshot's `variables`, lower-case names);
    /// None when the server's hostname or port is not among them. No start time (0): the
    /// variables do not carry one.
    pub fn from_variables(v: &BTreeMap<String, String>) -> Option<Facts> {
        let get = |k: &str| v.get(k).map(|s| s.trim().to_string());
        let hostname = get("hostname").filter(|h| !h.is_empty())?;
        let port = get("port")?.parse().ok()?;
        Some(Facts {
            uuid: get("server_uuid").filter(|u| !u.is_empty()),
            started_unix_s: 0,
            hostname,
            port,
            socket: get("socket").unwrap_or_default(),
            datadir: get("datadir").unwrap_or_default(),
            server_id: get("server_id").and_then(|s| s.parse().ok()).unwrap_or(0),
        })
    }

    /// The identity key (`@@server_uuid` where there is one, else every other fact together:
    /// two servers sharing `hostname:port`, containers or `--skip-networking`, differ in
    /// socket, datadir or server_id) and the weaker key older versions used.
    pub fn key(&self) -> (String, String) {
        let hp = format!("{}:{}", self.hostname, self.port);
        match self.uuid.as_deref().filter(|u| !u.is_empty()) {
            Some(u) => (u.to_string(), u.to_string()),
            None => (
                format!(
                    "{hp} socket={} datadir={} server_id={}",
                    self.socket, self.datadir, self.server_id
                ),
                hp,
            ),
        }
    }

    /// The identity a document carries.
    pub fn doc_identity(&self) -> DocIdentity {
        DocIdentity {
            key: self.key().0,
            hostname: self.hostname.clone(),
            port: self.port,
            socket: self.socket.clone(),
            datadir: self.datadir.clone(),
            server_id: self.server_id,
            uuid: self.uuid.clone(),
        }
    }

    /// The identity of the server (see [`Facts::key`]).
    pub fn server_id(&self, endpoint: &str, connect_hint: &str) -> ServerId {
        let (key, legacy_key) = self.key();
        ServerId {
            endpoint: endpoint.to_string(),
            key,
            started_unix_s: self.started_unix_s,
            connect_hint: connect_hint.to_string(),
            identity: IDENTITY_SERVER_CLOCK,
            legacy_key,
        }
    }
}

fn text(v: &mysql::Value) -> String {
    match v {
        mysql::Value::NULL => String::new(),
        mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        other => other.as_sql(true).trim_matches('\'').to_string(),
    }
}

/// Read the server's facts in one statement (the first of [`IDENTITY_SQL`] the server accepts).
pub fn read_facts(conn: &mut dyn Session) -> mysql::Result<Facts> {
    let mut last = None;
    for sql in IDENTITY_SQL {
        match conn.query_first::<mysql::Row, _>(sql) {
            Ok(Some(row)) => {
                let v: Vec<String> = row.unwrap().iter().map(text).collect();
                if v.len() < 7 || v[1].is_empty() {
                    continue;
                }
                return Ok(Facts {
                    uuid: Some(v[0].clone()).filter(|u| !u.is_empty()),
                    started_unix_s: v[1].parse().unwrap_or(0),
                    hostname: v[2].clone(),
                    port: v[3].parse().unwrap_or(0),
                    socket: v[4].clone(),
                    datadir: v[5].clone(),
                    server_id: v[6].parse().unwrap_or(0),
                });
            }
            // No Uptime row (performance_schema off): try the next source.
            Ok(None) => continue,
            Err(e @ mysql::Error::MySqlError(_)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        mysql::Error::MySqlError(mysql::MySqlError {
            state: "HY000".into(),
            code: 0,
            message: "the server reported no Uptime".into(),
        })
    }))
}

/// Read the identity of the server behind `conn` from the server alone ([`read_facts`]).
pub fn identify(
    conn: &mut dyn Session,
    endpoint: &str,
    connect_hint: &str,
) -> mysql::Result<ServerId> {
    Ok(read_facts(conn)?.server_id(endpoint, connect_hint))
}

/// The statements of changes this process made and has not yet put back (printed when a
/// second Ctrl-C exits at once).
static PENDING: Mutex<BTreeMap<String, (String, Vec<String>)>> = Mutex::new(BTreeMap::new());

pub fn pending_statements() -> Vec<String> {
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .flat_map(|(_, v)| v.iter().cloned())
        .collect()
}

fn record_path(d: &Path, id: &str) -> PathBuf {
    d.join(format!("{id}.json"))
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A new record id: time, pid, sequence.
pub fn new_id() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{ns}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Write a record durably (file fsynced, directory fsynced) before the change it describes.
pub fn open(rec: &Record) -> Result<()> {
    save_in(&journal_dir()?, rec)?;
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(rec.id.clone(), (rec.what.clone(), rec.restore_sql.clone()));
    Ok(())
}

/// Write `rec` as an open record into the journal directory `d` (which must exist): what
/// `open` does in the state directory, for a caller that names its own (a test's).
pub fn save_in(d: &Path, rec: &Record) -> Result<()> {
    let text = serde_json::to_vec_pretty(rec)
        .map_err(|e| Error::runtime(format!("serializing a journal record: {e}")))?;
    crate::files::write_atomic_mode(&record_path(d, &rec.id), &text, 0o600).map_err(|e| {
        Error::runtime(format!(
            "cannot write the change journal in {} ({e}); nothing was changed",
            d.display()
        ))
    })
}

/// Close a record: the change was undone and read back (or the server restarted).
pub fn close(id: &str) {
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    if let Some(d) = dir() {
        let _ = std::fs::remove_file(record_path(&d, id));
        if let Ok(f) = std::fs::File::open(&d) {
            let _ = f.sync_all();
        }
    }
}

/// Where changes left set on purpose (`tune --apply`) are logged: `applied/` beside the open
/// records, never read as open changes.
pub fn applied_dir() -> Option<PathBuf> {
    dir().map(|d| d.join("applied"))
}

/// A change left set on purpose: the record (with its original value and the statements that
/// undo it) is written to [`applied_dir`] durably, then closed as an open change.
pub fn mark_intended(rec: &Record) -> Result<PathBuf> {
    let d = journal_dir()?.join("applied");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&d)
        .map_err(|e| Error::runtime(format!("cannot create {} ({e})", d.display())))?;
    let text = serde_json::to_vec_pretty(rec)
        .map_err(|e| Error::runtime(format!("serializing a journal record: {e}")))?;
    let path = record_path(&d, &rec.id);
    crate::files::write_atomic_mode(&path, &text, 0o600)
        .map_err(|e| Error::runtime(format!("cannot write {} ({e})", path.display())))?;
    close(&rec.id);
    Ok(path)
}

/// Every open record on this host (unreadable files are skipped).
pub fn list() -> Vec<Record> {
    let Some(d) = dir() else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(&d) else {
        return Vec::new();
    };
    let mut out: Vec<Record> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let t = crate::files::read_capped(&e.path(), 16 << 20, "journal").ok()?;
            serde_json::from_str(&t).ok()
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// Open records of one server.
pub fn for_server(now: &ServerId) -> Vec<Record> {
    list()
        .into_iter()
        .filter(|r| now.same_as(&r.server))
        .collect()
}

/// Whether the server restarted since the record was made: its start time on its own clock
/// moved. A record from an older version (start time from its client's clock) never counts
/// as restarted: `restore` decides it by the value the server holds.
pub fn restarted_since(rec: &Record, now: &ServerId) -> bool {
    rec.server.identity >= IDENTITY_SERVER_CLOCK
        && (rec.server.started_unix_s - now.started_unix_s).abs() > RESTART_SLACK_S
}

/// Values compared as the server prints them: numbers numerically, words case-insensitively.
pub fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim().trim_matches('\''), b.trim().trim_matches('\''));
    a.eq_ignore_ascii_case(b)
        || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

fn when(unix: i64) -> String {
    ago(now_unix() - unix)
}

/// An age in seconds for people.
fn ago(ago: i64) -> String {
    if ago < 120 {
        format!("{ago} s ago")
    } else if ago < 7200 {
        format!("{} min ago", ago / 60)
    } else {
        format!("{:.1} h ago", ago as f64 / 3600.0)
    }
}

/// One line describing an open record for people.
pub fn describe(r: &Record) -> String {
    format!(
        "{} on {} was changed from {} to {} by `{}` (pid {}, {}@{}) {}",
        r.what,
        r.server.endpoint,
        r.original,
        r.set_to,
        r.holder.command,
        r.holder.pid,
        r.holder.user,
        r.holder.client_host,
        when(r.opened_unix_s)
    )
}

/// What a connecting command learnt from the journal about its server.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Records whose process is gone: the server is still changed.
    pub left_changed: Vec<Record>,
    /// Records closed because the server restarted since.
    pub closed_by_restart: Vec<Record>,
    /// Records of a live spinscope elsewhere.
    pub live: Vec<Record>,
}

/// Where one journal record stands for a process about to work on the server `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// This very process holds it.
    Mine,
    /// Another spinscope, still running, holds it.
    Live,
    /// The server restarted since: the change is gone; the record is closed now.
    ClosedByRestart,
    /// Its holder is gone and the server still holds the change.
    LeftChanged,
}

/// Where `r` stands (the one reading of a record that `examine` and both change guards
/// share); a record a restart made moot is closed here and on the server.
pub fn standing(conn: &mut dyn Session, r: &Record, now: &ServerId) -> Standing {
    match holder_state_on(conn, r) {
        HolderState::Me => Standing::Mine,
        HolderState::Alive => Standing::Live,
        HolderState::Gone | HolderState::OtherHost if restarted_since(r, now) => {
            close_everywhere(conn, r);
            Standing::ClosedByRestart
        }
        HolderState::Gone | HolderState::OtherHost => Standing::LeftChanged,
    }
}

/// Sort the journal's records for `now` into left behind / closed by a restart / live, and
/// close the ones a restart made moot.
pub fn examine(conn: &mut dyn Session, now: &ServerId) -> Findings {
    let mut f = Findings::default();
    for r in records_for(conn, now) {
        match standing(conn, &r, now) {
            Standing::Mine => {}
            Standing::Live => f.live.push(r),
            Standing::ClosedByRestart => f.closed_by_restart.push(r),
            Standing::LeftChanged => f.left_changed.push(r),
        }
    }
    f
}

/// One journal finding about a server, as data: what a snapshot carries and doctor's rule
/// reads (never the warning's English).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// The holder is gone and the server still holds the change.
    LeftChanged,
    /// The server restarted since: the change is gone, the record was closed.
    ClosedByRestart,
    /// Another spinscope holds it now.
    Live,
}

/// A record as a finding: which change, the value before and after, who made it and when,
/// and how to put it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: EntryKind,
    /// The variable, or the description of the instrument change.
    pub what: String,
    /// How the record's maker reached the server (for messages).
    pub endpoint: String,
    pub original: String,
    pub set_to: String,
    pub holder: Holder,
    pub opened_unix_s: i64,
    /// Connection flags for `spinscope restore`.
    pub connect_hint: String,
    /// The statements that put the original back.
    pub restore_sql: Vec<String>,
}

impl Entry {
    fn of(kind: EntryKind, r: &Record) -> Entry {
        Entry {
            kind,
            what: r.what.clone(),
            endpoint: r.server.endpoint.clone(),
            original: r.original.clone(),
            set_to: r.set_to.clone(),
            holder: r.holder.clone(),
            opened_unix_s: r.opened_unix_s,
            connect_hint: r.server.connect_hint.clone(),
            restore_sql: r.restore_sql.clone(),
        }
    }

    /// [`describe`] of the record, its age counted at `now_unix_s`.
    pub fn describe_at(&self, now_unix_s: i64) -> String {
        format!(
            "{} on {} was changed from {} to {} by `{}` (pid {}, {}@{}) {}",
            self.what,
            self.endpoint,
            self.original,
            self.set_to,
            self.holder.command,
            self.holder.pid,
            self.holder.user,
            self.holder.client_host,
            ago(now_unix_s - self.opened_unix_s)
        )
    }

    /// The one statement that restores it by hand, when there is one short enough to show.
    pub fn by_hand(&self) -> Option<&str> {
        match self.restore_sql.as_slice() {
            [one] if one.len() <= 200 => Some(one),
            _ => None,
        }
    }

    /// The message for a command about to work on the server, its age counted at `now_unix_s`.
    pub fn warning_at(&self, now_unix_s: i64) -> String {
        let d = self.describe_at(now_unix_s);
        match self.kind {
            EntryKind::LeftChanged => format!(
                "warning: {d} and it was never set back; run `spinscope restore {}` (or by hand: {})",
                self.connect_hint,
                self.by_hand()
                    .unwrap_or("the statements `spinscope restore --list` prints")
            ),
            EntryKind::ClosedByRestart => format!(
                "the server restarted since {d}; that change is gone, the journal record is closed"
            ),
            EntryKind::Live => format!("note: another spinscope is working on this server: {d}"),
        }
    }
}

impl Findings {
    /// Every finding as data, in the order of [`warnings`].
    pub fn entries(&self) -> Vec<Entry> {
        let kinds = [
            (EntryKind::LeftChanged, &self.left_changed),
            (EntryKind::ClosedByRestart, &self.closed_by_restart),
            (EntryKind::Live, &self.live),
        ];
        kinds
            .into_iter()
            .flat_map(|(k, rs)| rs.iter().map(move |r| Entry::of(k, r)))
            .collect()
    }
}

/// Messages for a command about to work on a server, one per record.
pub fn warnings(f: &Findings) -> Vec<String> {
    let now = now_unix();
    f.entries().iter().map(|e| e.warning_at(now)).collect()
}

/// One server's journal, read on a connection to it: who it is and what was left changed.
/// Each connection's caller keeps its own (several servers share a process in fleet doctor
/// and watch), nothing is kept process-wide.
#[derive(Debug, Clone)]
pub struct Checked {
    pub server: ServerId,
    pub findings: Findings,
}

impl Checked {
    /// The findings as data, for a snapshot.
    pub fn entries(&self) -> Vec<Entry> {
        self.findings.entries()
    }

    /// Say on stderr, before anything else, what was left changed.
    pub fn warn(&self) {
        for w in warnings(&self.findings) {
            eprintln!("spinscope: {w}");
        }
    }
}

/// Read the journal for the server behind `conn` (reached at `endpoint` with the flags
/// `connect_hint`); None when the server cannot say who it is.
pub fn check(conn: &mut dyn Session, endpoint: &str, connect_hint: &str) -> Option<Checked> {
    let server = identify(conn, endpoint, connect_hint).ok()?;
    let findings = examine(conn, &server);
    Some(Checked { server, findings })
}

/// For a record whose statement was in flight when its process died: the globals that differ
/// now from just before that statement (name, before, now). spinscope cannot tell its side
/// effect from someone else's change there, so they are named, never set.
pub fn moved_since_in_flight(conn: &mut dyn Session, r: &Record) -> Vec<(String, String, String)> {
    if r.around.is_empty() {
        return Vec::new();
    }
    let rows: Vec<(String, Option<String>)> =
        conn.query("SHOW GLOBAL VARIABLES").unwrap_or_default();
    let what = r.what.to_ascii_lowercase();
    rows.into_iter()
        .filter_map(|(k, v)| {
            let k = k.to_ascii_lowercase();
            let before = r.around.get(&k)?;
            let v = v.unwrap_or_default();
            (k != what && *before != v && !volatile_global(&k)).then(|| (k, before.clone(), v))
        })
        .collect()
}

/// Variables that move on their own; never taken for a side effect.
pub fn volatile_global(name: &str) -> bool {
    name.starts_with("gtid_") || name.starts_with("wsrep_") || name == "timestamp"
}

/// The outcome of restoring one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// Set back and read back equal; record closed.
    Done,
    /// Already at the original; record closed.
    AlreadyBack,
    /// The server restarted since; record closed.
    Restarted,
    /// Someone changed it since: left alone (current value given).
    ChangedSince(String),
    /// Its process still runs and restores it itself.
    HolderAlive,
    /// The statements failed or the value did not read back equal.
    Failed(String),
}

fn read_scalar(conn: &mut dyn Session, sql: &str) -> mysql::Result<String> {
    let v: Option<mysql::Value> = conn.query_first(sql)?;
    Ok(match v {
        Some(mysql::Value::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
        Some(mysql::Value::NULL) | None => String::new(),
        Some(other) => other.as_sql(true).trim_matches('\'').to_string(),
    })
}

/// Put one record back on the server behind `conn` (whose identity is `now`): only where the
/// current value is still the one spinscope set, unless `force`.
pub fn restore_record(conn: &mut dyn Session, now: &ServerId, r: &Record, force: bool) -> Restored {
    if restarted_since(r, now) {
        close_everywhere(conn, r);
        return Restored::Restarted;
    }
    if matches!(holder_state_on(conn, r), HolderState::Alive) && !force {
        return Restored::HolderAlive;
    }
    let current = match read_scalar(conn, &r.check_sql) {
        Ok(v) => v,
        Err(e) => return Restored::Failed(crate::error::describe_error(&e).1),
    };
    if same_value(&current, &r.original) {
        close_everywhere(conn, r);
        return Restored::AlreadyBack;
    }
    if !r.ours(&current) && !force {
        return Restored::ChangedSince(current);
    }
    for sql in &r.restore_sql {
        if let Err(e) = conn.query_drop(sql) {
            return Restored::Failed(format!("{sql}: {}", crate::error::describe_error(&e).1));
        }
    }
    match read_scalar(conn, &r.check_sql) {
        Ok(v) if same_value(&v, &r.original) => {
            close_everywhere(conn, r);
            Restored::Done
        }
        Ok(v) => Restored::Failed(format!("reads {v} after the restore, not {}", r.original)),
        Err(e) => Restored::Failed(crate::error::describe_error(&e).1),
    }
}

#[cfg(not(test))]
fn test_dir() -> Option<PathBuf> {
    None
}
// A unit test's own journal directory (just before the tests: the layer check reads a file up
// to its first `#[cfg(test)]`). Per thread, so tests running side by side neither share one nor
// change the process's environment; no such thing outside unit tests.
#[cfg(test)]
thread_local! {
    static TEST_DIR: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// Keep this thread's journal in `d` (unit tests only).
#[cfg(test)]
pub fn use_dir_in_this_thread(d: &Path) {
    TEST_DIR.with(|t| *t.borrow_mut() = Some(d.to_path_buf()));
}

#[cfg(test)]
fn test_dir() -> Option<PathBuf> {
    TEST_DIR.with(|d| d.borrow().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(socket: &str) -> Facts {
        Facts {
            uuid: None,
            started_unix_s: 1_700_000_000,
            hostname: "db".into(),
            port: 3306,
            socket: socket.into(),
            datadir: "/var/lib/mysql/".into(),
            server_id: 1,
        }
    }

    #[test]
    fn servers_sharing_hostname_and_port_are_different_servers() {
        let a = facts("/a.sock").server_id("a", "-S /a.sock");
        let b = facts("/b.sock").server_id("b", "-S /b.sock");
        assert!(!a.same_as(&b) && !b.same_as(&a));
        assert!(a.same_as(&a.clone()));
        // With a server_uuid, the uuid alone decides.
        let mut f = facts("/a.sock");
        f.uuid = Some("3e11fa47-71ca-11e1-9e33-c80aa9429562".into());
        let u = f.server_id("a", "");
        f.socket = "/elsewhere.sock".into();
        assert!(u.same_as(&f.server_id("a", "")));
        assert_eq!(u.key, "3e11fa47-71ca-11e1-9e33-c80aa9429562");
    }

    #[test]
    fn restart_is_decided_by_the_servers_start_time_only() {
        let now = facts("/a.sock").server_id("a", "");
        let mut rec = Record {
            id: "1".into(),
            server: now.clone(),
            what: "v".into(),
            original: "1".into(),
            set_to: "2".into(),
            check_sql: String::new(),
            restore_sql: vec![],
            holder: me(),
            opened_unix_s: 0,
            lock: None,
            server_copy: None,
            also_ours: vec![],
            around: BTreeMap::new(),
        };
        rec.server.started_unix_s += RESTART_SLACK_S;
        assert!(!restarted_since(&rec, &now));
        rec.server.started_unix_s += 1;
        assert!(restarted_since(&rec, &now));
    }

    #[test]
    fn findings_as_data_say_what_the_warnings_said() {
        let rec = |what: &str, restore: &[&str]| Record {
            id: "1".into(),
            server: facts("/a.sock").server_id("/a.sock", "--socket /a.sock"),
            what: what.into(),
            original: "4".into(),
            set_to: "77".into(),
            check_sql: String::new(),
            restore_sql: restore.iter().map(|s| s.to_string()).collect(),
            holder: me(),
            opened_unix_s: now_unix() - 30,
            lock: None,
            server_copy: None,
            also_ours: vec![],
            around: BTreeMap::new(),
        };
        let left = rec("v", &["SET GLOBAL v = 4"]);
        let long = rec("w", &["UPDATE a", "UPDATE b"]);
        let f = Findings {
            left_changed: vec![left.clone(), long.clone()],
            closed_by_restart: vec![left.clone()],
            live: vec![long.clone()],
        };
        let kinds: Vec<EntryKind> = f.entries().iter().map(|e| e.kind).collect();
        use EntryKind::*;
        assert_eq!(kinds, [LeftChanged, LeftChanged, ClosedByRestart, Live]);
        // The text of the versions that kept the findings as text (describe() of the record).
        assert_eq!(
            warnings(&f),
            [
                format!("warning: {} and it was never set back; run `spinscope restore --socket /a.sock` (or by hand: SET GLOBAL v = 4)", describe(&left)),
                format!("warning: {} and it was never set back; run `spinscope restore --socket /a.sock` (or by hand: the statements `spinscope restore --list` prints)", describe(&long)),
                format!("the server restarted since {}; that change is gone, the journal record is closed", describe(&left)),
                format!("note: another spinscope is working on this server: {}", describe(&long)),
            ]
        );
        // They travel in snapshots as JSON.
        let e = &f.entries()[0];
        let back: Entry = serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap();
        assert_eq!(&back, e);
        assert!(serde_json::to_string(e)
            .unwrap()
            .contains(r#""kind":"left_changed""#));
    }

    #[test]
    fn records_of_older_versions_still_load_and_match() {
        // A record as spinscope wrote it before the identity came from the server alone.
        let old = r#"{"id":"1-2-0","server":{"endpoint":"/a.sock","key":"db:3306",
            "started_unix_s":1699999000,"connect_hint":"--socket /a.sock"},
            "what":"innodb_spin_wait_delay","original":"4","set_to":"6000",
            "check_sql":"SELECT @@GLOBAL.innodb_spin_wait_delay",
            "restore_sql":["SET GLOBAL innodb_spin_wait_delay = 4"],
            "holder":{"pid":1,"pid_start":1,"user":"u","client_host":"h","command":"spinscope sweep run"},
            "opened_unix_s":1700000000}"#;
        let rec: Record = serde_json::from_str(old).unwrap();
        assert_eq!(rec.server.identity, 0);
        let now = facts("/a.sock").server_id("a", "");
        assert!(now.same_as(&rec.server));
        // Its start time came from a client clock: it is never taken for a restart.
        assert!(!restarted_since(&rec, &now));
        // A new record round-trips with its identity.
        let mut r2 = rec.clone();
        r2.server = now.clone();
        let back: Record = serde_json::from_str(&serde_json::to_string(&r2).unwrap()).unwrap();
        assert_eq!(back, r2);
    }

    #[test]
    fn fault_specs_parse() {
        assert_eq!(parse_fault("after-journal"), Some((Fault::AfterJournal, 1)));
        assert_eq!(
            parse_fault("after-statement:2"),
            Some((Fault::AfterStatement, 2))
        );
        assert_eq!(parse_fault("after-statement:0"), None);
        assert_eq!(parse_fault("before"), None);
    }

    #[test]
    fn values_compare_like_the_server_prints_them() {
        assert!(same_value("6000", "6000.0"));
        assert!(same_value("'ON'", "on"));
        assert!(!same_value("6", "60"));
    }

    #[test]
    fn a_killed_unreaped_child_is_gone() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(process_start(pid).is_some());
        child.kill().unwrap();
        // Not reaped yet: a zombie (state Z, read here on its own), which still has
        // /proc/PID/stat. Waited for: a loaded host can take a while to run the kill.
        let state = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')?
                        .1
                        .split_whitespace()
                        .next()
                        .map(String::from)
                })
        };
        let t0 = std::time::Instant::now();
        while state().as_deref() != Some("Z") {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "never a zombie: {:?}",
                state()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(std::path::Path::new(&format!("/proc/{pid}/stat")).exists());
        assert_eq!(process_start(pid), None);
        child.wait().unwrap();
    }

    #[test]
    fn own_process_is_me_and_a_dead_pid_is_gone() {
        let mut h = me();
        assert_eq!(holder_state(&h), HolderState::Me);
        h.pid_start += 1; // a reused pid: another process with our number
        assert_eq!(holder_state(&h), HolderState::Gone);
        h.client_host = "elsewhere.invalid".into();
        assert_eq!(holder_state(&h), HolderState::OtherHost);
    }
}
