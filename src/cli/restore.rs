//! `spinscope restore`: put back what a spinscope command left changed on a server (killed,
//! hung up, crashed), from the durable change journal (`crate::journal`).

use clap::{ArgAction, Args};

use crate::error::{Error, Result, EXIT_BAD_INPUT, EXIT_OK, EXIT_RUNTIME};
use crate::journal::{self, Restored};
use crate::server::conn::{connect_target, resolve, ConnArgs};

const AFTER: &str = "\
Examples:
  spinscope restore --list
  spinscope restore --list -S /run/mysqld/mysqld.sock -u root
  spinscope restore -S /run/mysqld/mysqld.sock -u root
  spinscope restore -h db1 -P 3306 -u admin -p --force

Each open record is set back only where the server still holds the value spinscope set; a
value someone changed since is reported with both values and left alone unless --force. A
record is closed after the original reads back, or when the server restarted since.
Exit codes: 0 all restored (or nothing to do); 2 something was left alone; 3 a restore failed.";

/// Put back what spinscope left changed on a server, from its change journal.
#[derive(Debug, Args)]
#[command(disable_help_flag = true, after_help = AFTER)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// List the open records: of the server the connection flags (or a server URL) name, or,
    /// with none, of every server (connecting to none).
    #[arg(long)]
    pub list: bool,
    /// Set back even values that changed since spinscope set them.
    #[arg(long)]
    pub force: bool,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// Whether the flags name a server (not only a user or option files): `--list` then lists
/// that server's records alone.
fn names_server(c: &ConnArgs) -> bool {
    c.target.is_some()
        || c.url.is_some()
        || c.host.is_some()
        || c.port.is_some()
        || c.socket.is_some()
}

/// The open records of the server the flags reach (as the journal identifies a server:
/// server-side facts, `journal::records_for`, which also reads the copies kept on the
/// server), and how many of this host's records belong to other servers.
fn list_one(c: &ConnArgs) -> Result<i32> {
    let t = resolve(c)?;
    let mut conn = connect_target(&t)?;
    let now = journal::identify(&mut conn, &t.endpoint(), &t.flags_hint())
        .map_err(|e| Error::runtime(format!("identifying the server {}: {e}", t.describe())))?;
    let recs = journal::records_for(&mut conn, &now);
    let others = journal::list()
        .iter()
        .filter(|r| !recs.iter().any(|m| m.id == r.id))
        .count();
    Ok(print_list(&recs, &format!(" for {}", t.endpoint()), others))
}

fn list() -> i32 {
    print_list(&journal::list(), "", 0)
}

/// `recs` listed; `whose` says whose they are (" for ENDPOINT", or empty for all), `others`
/// counts the records of other servers left out.
fn print_list(recs: &[journal::Record], whose: &str, others: usize) -> i32 {
    let place = journal::dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "(no HOME)".into());
    let rest = if others > 0 {
        format!(
            " ({others} more for other servers: `spinscope restore --list` without connection flags lists them)"
        )
    } else {
        String::new()
    };
    if recs.is_empty() {
        println!("no open change records{whose} in {place}{rest}");
        return EXIT_OK;
    }
    println!(
        "{} open change record(s){whose} in {place}{rest}:",
        recs.len()
    );
    for r in recs {
        let state = match journal::holder_state(&r.holder) {
            journal::HolderState::Alive => "its process still runs",
            journal::HolderState::OtherHost => "made on another host",
            _ => "its process is gone",
        };
        println!("- {} ({state})", journal::describe(r));
        println!(
            "  restore: spinscope restore {}   (by hand: {};)",
            r.server.connect_hint,
            r.restore_sql.join("; ")
        );
    }
    EXIT_OK
}

pub fn run(a: RestoreArgs) -> Result<i32> {
    if a.list {
        if names_server(&a.conn) {
            return list_one(&a.conn);
        }
        return Ok(list());
    }
    // A plain connection: restore reports on the journal itself (no warning first).
    let t = resolve(&a.conn)?;
    let mut conn = connect_target(&t)?;
    let now = journal::identify(&mut conn, &t.endpoint(), &t.flags_hint())
        .map_err(|e| Error::runtime(format!("identifying the server {}: {e}", t.describe())))?;
    let recs = journal::records_for(&mut conn, &now);
    if recs.is_empty() {
        eprintln!(
            "spinscope: nothing to restore on {} (no open change records)",
            t.endpoint()
        );
        return Ok(EXIT_OK);
    }
    let mut code = EXIT_OK;
    for r in &recs {
        // A statement in flight when its process died: what moved beside it is named only.
        for (name, before, after) in journal::moved_since_in_flight(&mut conn, r) {
            let lit = crate::globals::sql_literal(&before);
            eprintln!(
                "spinscope: note: {name} is {after} now, {before} just before spinscope's statement on {} that was in flight when its process died; spinscope cannot tell its side effect from someone else's change, so it is left as is (to put it back: SET GLOBAL {name} = {lit};)",
                r.what
            );
        }
        let msg = match journal::restore_record(&mut conn, &now, r, a.force) {
            Restored::Done => format!("restored {} = {} (read back)", r.what, r.original),
            Restored::AlreadyBack => format!(
                "{} is already back at {}; record closed",
                r.what, r.original
            ),
            Restored::Restarted => format!(
                "the server restarted since {} changed {}; nothing to do, record closed",
                r.holder.command, r.what
            ),
            Restored::HolderAlive => {
                code = code.max(EXIT_BAD_INPUT);
                format!(
                    "{} is held by a running spinscope (pid {}, `{}`); it restores it itself when it ends. Left alone",
                    r.what, r.holder.pid, r.holder.command
                )
            }
            Restored::ChangedSince(cur) => {
                code = code.max(EXIT_BAD_INPUT);
                format!(
                    "{} is {cur} now, not the {} spinscope set (original {}): someone changed it since, so it is left alone; pass --force to set it to {} anyway",
                    r.what, r.set_to, r.original, r.original
                )
            }
            Restored::Failed(why) => {
                code = EXIT_RUNTIME;
                format!(
                    "could not restore {} ({why}); run by hand: {};",
                    r.what,
                    r.restore_sql.join("; ")
                )
            }
        };
        eprintln!("spinscope: {msg}");
    }
    Ok(code)
}
