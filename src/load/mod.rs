//! `sweep`'s measuring side: the scratch schema (sysbench-compatible `sbtest` tables), the
//! workloads, the driver threads (one connection per client, closed or open loop, HdrHistogram
//! per step) and the settings guard that restores every `SET GLOBAL` it made.
//!
//! Connections come from a [`Connector`] so the driver does not care how the command line
//! described the server (the shared connection code lives in `server::conn`).

pub mod driver;
pub mod guard;
pub mod schema;
pub mod spec;
pub mod workload;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Opens one new connection to the server under test (called once per client thread, and
/// again to reconnect after the server dropped a connection).
pub type Connector = Arc<dyn Fn() -> crate::Result<mysql::Conn> + Send + Sync>;

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
