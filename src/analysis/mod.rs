//! Pure statistics over slices: no clocks, no I/O.

pub mod abtest;
pub mod knee;
pub mod lab_stats;
pub mod stats;
pub mod usl;
pub mod validity;
