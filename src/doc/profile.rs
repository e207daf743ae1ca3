//! `spinscope.profile/2` (`profile --json`), `spinscope.profile-diff/1` (`profile --diff
//! --json`) and `spinscope.profile-waits/1` (`profile --waits --json`).

pub use crate::profile::diff::{ClassDiff, FunctionDiff, ProfileDiff, StackDiff, DIFF_SCHEMA};
pub use crate::profile::waits::{WaitDoc, SCHEMA as WAITS_SCHEMA};
pub use crate::profile::{ClassShare, ProfileDoc, Source, StackCount, SCHEMA};
