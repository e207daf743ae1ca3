//! A change a killed or hung-up spinscope left on this server (the change journal's warning,
//! carried in the snapshot's notes by `server::collect`): say what and how to put it back.

use crate::doctor::{Facts, Finding, Severity};

/// The prefix `server::collect` gives the journal's warnings in the notes.
pub const NOTE_PREFIX: &str = "change journal: warning: ";
const BY_HAND: &str = "(or by hand: ";

pub fn check(f: &Facts) -> Vec<Finding> {
    f.snap
        .notes
        .iter()
        .filter_map(|n| n.strip_prefix(NOTE_PREFIX))
        .map(|text| {
            let (what, stmt) = match text.split_once(BY_HAND) {
                Some((w, s)) => (w.trim(), s.trim_end_matches(')').trim().to_string()),
                None => (text, String::new()),
            };
            let subject = what.split(" on ").next().unwrap_or(what);
            Finding {
                id: "spinscope-left-changed".into(),
                severity: Severity::Warning,
                title: format!("{subject} is still as a killed spinscope left it"),
                evidence: vec![],
                why: format!(
                    "{what}. Measurements taken now describe that setting, not the server's own."
                ),
                what_to_do: "Run `spinscope restore` with the same connection flags: it sets the \
                             original back only where the server still holds the value spinscope set."
                    .into(),
                // Only runnable SQL (a long restore is referred to `restore --list`).
                statements: if stmt.starts_with("SET ") || stmt.starts_with("UPDATE ") {
                    vec![stmt]
                } else {
                    vec![]
                },
                option_file: vec![],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::snapshot::Snapshot;

    #[test]
    fn a_journal_warning_becomes_a_finding_with_the_statement() {
        let note = format!(
            "{NOTE_PREFIX}innodb_spin_wait_delay on /s.sock was changed from 7 to 6000 by `spinscope sweep run` (pid 9, u@h) 5 s ago and it was never set back; run `spinscope restore --socket /s.sock -u root` (or by hand: SET GLOBAL innodb_spin_wait_delay = 7)"
        );
        let f = Facts::from_snapshot(Snapshot {
            window_s: 0.0,
            notes: vec![note, "change journal: note: another spinscope".into()],
            ..Snapshot::of_version("10.11.6-MariaDB")
        });
        let v = check(&f);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].severity, Severity::Warning);
        assert!(
            v[0].title.starts_with("innodb_spin_wait_delay is still"),
            "{}",
            v[0].title
        );
        assert_eq!(
            v[0].statements,
            vec!["SET GLOBAL innodb_spin_wait_delay = 7"]
        );
    }
}
