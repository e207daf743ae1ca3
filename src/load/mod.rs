//! `sweep`'s measuring side: the scratch schema (sysbench-compatible `sbtest` tables), the
//! workloads, the driver threads (one connection per client, closed or open loop, HdrHistogram
//! per step) and the settings guard that restores every `SET GLOBAL` it made.
//!
//! Connections come from a [`Connector`] so the driver does not care how the command line
//! described the server (the shared connection code lives in `server::conn`).

pub mod driver;
pub mod guard;
#[cfg(test)]
mod guard_tests;
pub mod schema;
pub mod spec;
pub mod sql_guard;
pub mod step;
pub mod wire;
pub mod workload;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Opens one new connection to the server under test (called once per client thread, and
/// again to reconnect after the server dropped a connection).
pub type Connector = Arc<dyn Fn() -> crate::Result<mysql::Conn> + Send + Sync>;

/// Opens one connection of the event client (its own protocol code, see [`wire`]).
pub type WireConnector =
    Arc<dyn Fn() -> std::result::Result<wire::WireConn, wire::WireError> + Send + Sync>;

/// The load client a sweep asks for (`--client`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// A few threads, each multiplexing its share of the connections (epoll), over
    /// spinscope's own protocol code; falls back to threads where that code cannot connect.
    #[default]
    Events,
    /// One thread per connection over the mysql crate (blocking calls).
    Threads,
}

/// The client a step ran with, as its JSON records it (`client` in sweep steps and tune):
/// the events client may have fallen back to the thread client, and TLS depends on the
/// server as well as on `--ssl-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ClientUsed {
    pub kind: ClientKind,
    /// The step's connections speak TLS.
    pub tls: bool,
}

/// Whether a thread-client connection speaks TLS (the server's `Ssl_cipher` of the session:
/// the mysql crate does not say, and PREFERRED falls back to plain).
pub fn session_tls(c: &mut mysql::Conn) -> bool {
    use mysql::prelude::Queryable;
    c.query_first::<(String, String), _>("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        .ok()
        .flatten()
        .is_some_and(|(_, v)| !v.is_empty())
}

/// Which load client runs a step.
#[derive(Clone, Default)]
pub enum Client {
    /// One OS thread per connection over the mysql crate, blocking calls.
    #[default]
    Threads,
    /// `workers` OS threads (0: one per CPU), each multiplexing its share of the connections
    /// with epoll, over the client's own protocol code.
    Events {
        connect: WireConnector,
        workers: u32,
    },
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Threads => write!(f, "Threads"),
            Client::Events { workers, .. } => write!(f, "Events {{ workers: {workers} }}"),
        }
    }
}

/// Set by SIGINT/SIGTERM/SIGHUP/SIGQUIT (see `crate::interrupt`): the driver ends the step,
/// the sweep saves what it has, restores the settings and exits 130.
pub fn install_stop_flag() -> crate::Result<Arc<AtomicBool>> {
    crate::interrupt::install()
}

/// Whether a stop was requested.
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}

// Client-error classification lives in `error` (the journal uses it too); re-exported for
// the load modules.
pub use crate::error::{describe_error, is_connection_error};
