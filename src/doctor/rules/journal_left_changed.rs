//! A change a killed or hung-up spinscope left on this server (the change journal's findings,
//! carried as records in the snapshot by `server::collect`): say what and how to put it back.
//! Snapshots of older versions carry them only as text in their notes; those are read as a
//! fallback.

use crate::doctor::{Facts, Finding, Severity};
use crate::journal::{Entry, EntryKind};

/// The prefix older snapshots gave the journal's warnings in the notes.
pub const NOTE_PREFIX: &str = "change journal: warning: ";
const BY_HAND: &str = "(or by hand: ";

pub fn check(f: &Facts) -> Vec<Finding> {
    if f.snap.journal.is_empty() {
        return from_notes(f);
    }
    // Ages as they were when the snapshot was taken (as its notes say them).
    let at = match f.snap.captured_at_unix_s {
        0 => crate::journal::now_unix(),
        t => t as i64,
    };
    f.snap
        .journal
        .iter()
        .filter(|e| e.kind == EntryKind::LeftChanged)
        .map(|e| finding(&e.what, &why_of(e, at), e.by_hand().unwrap_or_default()))
        .collect()
}

/// The warning's first part: the change, and `spinscope restore` with its flags.
fn why_of(e: &Entry, at: i64) -> String {
    format!(
        "{} and it was never set back; run `spinscope restore {}`",
        e.describe_at(at),
        e.connect_hint
    )
}

/// Older snapshots: the warning's text in the notes.
fn from_notes(f: &Facts) -> Vec<Finding> {
    f.snap
        .notes
        .iter()
        .filter_map(|n| n.strip_prefix(NOTE_PREFIX))
        .map(|text| {
            let (what, stmt) = match text.split_once(BY_HAND) {
                Some((w, s)) => (w.trim(), s.trim_end_matches(')').trim()),
                None => (text, ""),
            };
            let subject = what.split(" on ").next().unwrap_or(what);
            finding(subject, what, stmt)
        })
        .collect()
}

fn finding(subject: &str, what: &str, stmt: &str) -> Finding {
    Finding {
        id: "spinscope-left-changed".into(),
        severity: Severity::Warning,
        title: format!("{subject} is still as a killed spinscope left it"),
        evidence: vec![],
        why: format!("{what}. Measurements taken now describe that setting, not the server's own."),
        what_to_do: "Run `spinscope restore` with the same connection flags: it sets the \
                     original back only where the server still holds the value spinscope set."
            .into(),
        // Only runnable SQL (a long restore is referred to `restore --list`).
        statements: if stmt.starts_with("SET ") || stmt.starts_with("UPDATE ") {
            vec![stmt.to_string()]
        } else {
            vec![]
        },
        option_file: vec![],
    }
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

    fn entry(kind: EntryKind, what: &str, restore_sql: &[&str]) -> Entry {
        Entry {
            kind,
            what: what.into(),
            endpoint: "/s.sock".into(),
            original: "7".into(),
            set_to: "6000".into(),
            holder: crate::journal::Holder {
                pid: 9,
                pid_start: 1,
                user: "u".into(),
                client_host: "h".into(),
                command: "spinscope sweep run".into(),
            },
            opened_unix_s: 995,
            connect_hint: "--socket /s.sock -u root".into(),
            restore_sql: restore_sql.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn typed_records_give_the_finding_the_note_gave() {
        let e = entry(
            EntryKind::LeftChanged,
            "innodb_spin_wait_delay",
            &["SET GLOBAL innodb_spin_wait_delay = 7"],
        );
        let note = format!("change journal: {}", e.warning_at(1000));
        let typed = Facts::from_snapshot(Snapshot {
            captured_at_unix_s: 1000,
            notes: vec![note.clone()],
            journal: vec![e, entry(EntryKind::Live, "innodb_sync_spin_loops", &[])],
            ..Snapshot::of_version("10.11.6-MariaDB")
        });
        let old = Facts::from_snapshot(Snapshot {
            notes: vec![note],
            ..Snapshot::of_version("10.11.6-MariaDB")
        });
        let (t, o) = (check(&typed), check(&old));
        assert_eq!(t.len(), 1);
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            serde_json::to_value(&o).unwrap()
        );
        assert!(
            t[0].why.contains(" 5 s ago and it was never set back"),
            "{}",
            t[0].why
        );
    }

    #[test]
    fn the_records_not_the_notes_decide() {
        // A note reworded or absent changes nothing; a long restore has no statement.
        let typed = Facts::from_snapshot(Snapshot {
            captured_at_unix_s: 1000,
            notes: vec![],
            journal: vec![entry(
                EntryKind::LeftChanged,
                "performance_schema wait/synch instruments",
                &["UPDATE a", "UPDATE b"],
            )],
            ..Snapshot::of_version("10.11.6-MariaDB")
        });
        let v = check(&typed);
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].title,
            "performance_schema wait/synch instruments is still as a killed spinscope left it"
        );
        assert!(v[0].statements.is_empty());
        // Only left-changed records are findings.
        let live = Facts::from_snapshot(Snapshot {
            journal: vec![entry(
                EntryKind::ClosedByRestart,
                "x",
                &["SET GLOBAL x = 1"],
            )],
            notes: vec![format!(
                "{NOTE_PREFIX}x on y (or by hand: SET GLOBAL x = 1)"
            )],
            ..Snapshot::of_version("10.11.6-MariaDB")
        });
        assert!(check(&live).is_empty());
    }
}
