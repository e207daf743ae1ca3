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

/// A text as an SQL string literal: quoted, with `\\` and `'` escaped (the one quoting of
/// values spinscope sends or shows in statements).
pub fn sql_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// A value as SHOW VARIABLES prints it, as the literal `SET GLOBAL` takes: a number as it is,
/// anything else an [`sql_string`].
pub fn sql_literal(v: &str) -> String {
    if !v.is_empty() && v.parse::<f64>().is_ok() {
        v.to_string()
    } else {
        sql_string(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_quote_what_is_not_a_number() {
        assert_eq!(sql_literal("4"), "4");
        assert_eq!(sql_literal("0.5"), "0.5");
        assert_eq!(sql_literal(""), "''");
        assert_eq!(sql_literal("ON"), "'ON'");
        assert_eq!(sql_literal(r"a'b\c"), r"'a''b\\c'");
        assert_eq!(sql_string("4"), "'4'");
    }
}
