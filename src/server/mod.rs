//! MySQL protocol access: connection options (DSN, my.cnf, TLS), evidence collection from a
//! live server, and snapshots (capture to a JSON file, replay offline).

pub mod argv;
pub mod collect;
pub mod conn;
pub mod host;
pub mod inventory;
pub mod live_settings;
pub mod optfile;
pub mod parse;
pub mod proc_threads;
pub mod refusal;
pub mod rt_follow;
pub mod rt_window;
#[cfg(test)]
mod session_tests;
pub mod snapshot;
pub mod taskstats;
pub mod var_origin;
