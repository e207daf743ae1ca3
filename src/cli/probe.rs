//! `spinscope probe` arguments (stub, replaced by the probe implementation).
use crate::error::Result;

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {}

pub fn run(_a: ProbeArgs) -> Result<i32> {
    Err(crate::Error::runtime("probe is not built yet"))
}
