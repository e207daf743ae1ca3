//! Pure parsers of what a server prints: `SHOW ENGINE INNODB STATUS` (every format of
//! spin-facts.md §4/§7) and name/value tables (variables, status). No I/O; never panic.

pub mod innodb;
pub mod vars;
