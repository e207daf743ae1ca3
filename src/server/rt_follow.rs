//! `rt` given connection flags: ask the server where it listens (`@@port`, `@@socket`,
//! `@@skip_networking`) and how many of its clients are on the Unix socket (the process list:
//! `HOST = 'localhost'` is a socket client, a TCP one carries its port), then find its process
//! (the owner of that listening socket, `rt::follow::owner`) for every TCP port it listens on.

use mysql::prelude::Queryable;

use crate::session::Session;

use super::conn::{connect_target, Target};
use crate::error::{Error, Result};
use crate::rt::follow::{self, Followed};

/// Clients on the Unix socket: the process list's `localhost` rows (TCP clients show
/// `host:port`), without this session and the server's own threads.
pub const SOCKET_CLIENTS_SQL: &str = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
     WHERE HOST = 'localhost' AND ID <> CONNECTION_ID() AND COMMAND NOT IN ('Daemon', 'Binlog Dump')";

/// How many clients use the Unix socket now (None when the process list cannot be read).
pub fn socket_clients(conn: &mut dyn Session) -> Option<u64> {
    conn.query_first::<u64, _>(SOCKET_CLIENTS_SQL)
        .ok()
        .flatten()
}

/// Where the server `t` reaches listens, and its Unix-socket clients.
pub fn follow_target(t: &Target) -> Result<Followed> {
    if !t.is_local() {
        return Err(Error::bad_input(format!(
            "rt needs the server's host: {} is not local; run rt on the host that serves it (it captures the packets there)",
            t.describe()
        )));
    }
    let mut conn = connect_target(t)?;
    let (port, socket, skip): (Option<i64>, Option<String>, Option<i64>) = conn
        .query_first("SELECT @@port, @@socket, @@skip_networking")
        .map_err(|e| Error::runtime(format!("asking {} where it listens: {e}", t.describe())))?
        .unwrap_or((None, None, None));
    let clients = socket_clients(&mut conn);
    drop(conn);
    let port = port
        .and_then(|p| u16::try_from(p).ok())
        .filter(|&p| p > 0 && skip != Some(1));
    let socket = socket.filter(|s| !s.is_empty());
    let pid = follow::owner(port, socket.as_deref());
    let mut f = pid.and_then(|p| follow::of_pid(p).ok()).unwrap_or_default();
    f.found_by = t.describe();
    if f.tcp_ports.is_empty() {
        f.tcp_ports = port.into_iter().collect();
    }
    if f.unix_sockets.is_empty() {
        f.unix_sockets = socket.into_iter().collect();
    }
    if clients.is_some() {
        f.unix_socket_clients = clients;
        f.unix_clients_from = Some("processlist".to_string());
    }
    Ok(f)
}
