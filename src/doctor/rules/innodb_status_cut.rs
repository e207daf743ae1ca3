//! SHOW ENGINE INNODB STATUS that ends without its END line: the server cut it (1 MB limit on
//! the text) or the capture was damaged, so sections after the cut are missing.

use crate::doctor::{Facts, Finding, Severity};

pub fn check(f: &Facts) -> Vec<Finding> {
    let (Some(st), Some(text)) = (&f.innodb, f.snap.innodb_status.as_deref()) else {
        return vec![];
    };
    if !st.truncated || text.trim().is_empty() {
        return vec![];
    }
    let last = st.sections.last().map_or("none", String::as_str);
    vec![Finding {
        option_file: vec![],
        id: "innodb-status-cut".into(),
        severity: Severity::Info,
        title: format!(
            "SHOW ENGINE INNODB STATUS is cut after {} bytes (last section read: {last}): later \
             sections are missing",
            text.len()
        ),
        evidence: vec![],
        why: "The server limits the status text (about 1 MB) and drops the rest, usually when \
              TRANSACTIONS lists many sessions; the findings above use only what was printed."
            .into(),
        what_to_do: "Read the full monitor output from the error log with innodb_status_output=ON \
                     for one interval, or reduce the sessions listed; SEMAPHORES comes before \
                     TRANSACTIONS, so spin counters are normally intact."
            .into(),
        statements: vec![
            "SET GLOBAL innodb_status_output=ON;".into(),
            "SET GLOBAL innodb_status_output=OFF;  -- after one interval (about 15 s)".into(),
        ],
    }]
}
