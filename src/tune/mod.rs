//! `tune`: search the spin settings on the user's workload under noise and recommend only what
//! is proven. Candidates ([`candidates`], pure) are raced ([`race`], pure) by measuring each on
//! the server ([`engine`], I/O, through the sweep's driver and settings guard); the result is
//! the `spinscope.tune/1` document ([`doc`], pure).

pub mod args;
pub mod candidates;
pub mod doc;
pub mod engine;
pub mod plan;
pub mod race;
