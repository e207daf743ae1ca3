//! Name/value tables from `SHOW GLOBAL VARIABLES` / `SHOW GLOBAL STATUS`, looked up
//! case-insensitively with typed accessors.

use std::collections::BTreeMap;

/// A name/value table with lower-case names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars(pub BTreeMap<String, String>);

impl Vars {
    pub fn from_pairs<I: IntoIterator<Item = (String, String)>>(pairs: I) -> Vars {
        Vars(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
        )
    }
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
    /// An unsigned number; None when missing or not a number (an absurd value stays visible
    /// through `str`).
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.str(name).and_then(|v| v.trim().parse::<u64>().ok())
    }
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.str(name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite())
    }
    /// ON/1/TRUE/YES as true, OFF/0/FALSE/NO as false.
    pub fn on(&self, name: &str) -> Option<bool> {
        match self.str(name)?.trim().to_ascii_uppercase().as_str() {
            "ON" | "1" | "TRUE" | "YES" => Some(true),
            "OFF" | "0" | "FALSE" | "NO" => Some(false),
            _ => None,
        }
    }
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(&name.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lookups() {
        let v = Vars::from_pairs([
            ("Innodb_Spin_Wait_Delay".to_string(), "4".to_string()),
            ("performance_schema".to_string(), "OFF".to_string()),
            ("x".to_string(), "NaN".to_string()),
        ]);
        assert_eq!(v.u64("innodb_spin_wait_delay"), Some(4));
        assert_eq!(v.on("PERFORMANCE_SCHEMA"), Some(false));
        assert_eq!(v.f64("x"), None);
        assert_eq!(v.u64("missing"), None);
    }
}
