//! Spin model: server flavors and versions, the spin formulas of each version family,
//! reference CPUs and setting advice. Pure: values in, values out.

pub mod advice;
pub mod cpus;
pub mod design;
pub mod doc;
pub mod model;
pub mod version;
