//! Pure parsers of what a server prints: `SHOW ENGINE INNODB STATUS` (every SEMAPHORES layout
//! of docs/REFERENCE.md §4) and name/value tables (variables, status). No I/O; never panic.

pub mod innodb;
pub mod vars;
