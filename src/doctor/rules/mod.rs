//! One rule per file; each is `fn(&Facts) -> Vec<Finding>`, pure.

use super::{Facts, Finding};

pub mod arm_cache_line;
pub mod innodb_status_cut;
pub mod journal_left_changed;
pub mod long_semaphore_waits;
pub mod pfs_off;
pub mod pfs_waits;
pub mod ppoll_kernel;
pub mod privileges;
pub mod running_bursts;
pub mod semaphores_untrusted;
pub mod spin_budget;
pub mod spin_signature;
pub mod spin_waits;

pub type Rule = fn(&Facts) -> Vec<Finding>;

pub const ALL: &[Rule] = &[
    spin_budget::check,
    pfs_waits::check,
    pfs_off::check,
    semaphores_untrusted::check,
    long_semaphore_waits::check,
    running_bursts::check,
    spin_signature::check,
    ppoll_kernel::check,
    arm_cache_line::check,
    privileges::check,
    innodb_status_cut::check,
    journal_left_changed::check,
];
