//! Plain data about server global variables, shared by the engines and the documents: what a
//! sweep variant sets and what the settings guard changed. Pure types only, so `sweep::doc`
//! (the document) and `load` (which applies them) both depend on this module rather than on
//! each other. (The spin model is `spin::model`.)

use serde::{Deserialize, Serialize};

/// One A/B variant: a name and the global settings it applies (empty: the current settings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub name: String,
    pub settings: Vec<Setting>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub variable: String,
    pub value: String,
}

/// One variable the sweep changed, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub variable: String,
    /// The value before the sweep, as an SQL literal.
    pub original: String,
    /// Whether it was set back and read back equal.
    pub restored: bool,
    /// What happened on restore, for the report.
    pub note: String,
    /// The server moved it when another variable was set (not named by a variant).
    #[serde(default)]
    pub side_effect: bool,
}
