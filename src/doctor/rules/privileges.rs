//! Queries the server refused: which privilege is missing and what could not be seen.

use crate::doctor::{Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    f.snap
        .refused
        .iter()
        .map(|r| Finding {
            option_file: vec![],
            id: "missing-privilege".into(),
            severity: Severity::Warning,
            title: format!("{} was refused: needs {}", r.what, r.privilege),
            evidence: vec![],
            why: format!(
                "The server said: {}. Doctor carried on without it.",
                r.message
            ),
            what_to_do: format!(
                "Grant {} to the monitoring user, or run as a user that has it.",
                r.privilege
            ),
            statements: vec![format!(
                "GRANT {} ON *.* TO CURRENT_USER;",
                r.privilege
                    .split(" on ")
                    .next()
                    .unwrap_or("PROCESS")
                    .split(' ')
                    .next()
                    .unwrap_or("PROCESS")
            )],
        })
        .collect()
}
