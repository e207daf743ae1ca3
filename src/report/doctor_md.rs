//! `doctor --markdown`: the facts as a list, then per severity a heading, and per finding a
//! heading with its evidence (a table), why, what to do, and the statements and option-file
//! lines as code blocks, each its own part. Written through the one Markdown writer
//! (`report::markdown`): document text is escaped as on `report --format md`'s page.

use crate::doc::doctor::{DoctorDoc, Severity};
use crate::report::markdown::{self as md, escape, Align};

pub fn markdown(d: &DoctorDoc) -> String {
    let mut s = String::new();
    md::heading(
        &mut s,
        1,
        &escape(&format!("spinscope doctor: {} ({})", d.server, d.target)),
    );
    // The facts: the plain report's lines (unwrapped), one list item each; rt has its section.
    let facts = crate::doctor::render::facts_lines(&DoctorDoc {
        rt: None,
        ..d.clone()
    });
    let facts: Vec<String> = facts
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    md::list(&mut s, &facts);
    if let Some(r) = &d.rt {
        md::heading(&mut s, 2, "Response time (rt)");
        let lines: Vec<String> = crate::doctor::rt::headline(r)
            .iter()
            .map(|l| l.trim().to_string())
            .collect();
        md::list(&mut s, &lines);
        if r.unavailable.is_none() && !r.rows.is_empty() {
            let (head, rows) = crate::doctor::rt::table(r);
            md::table(&mut s, &head, &rows, &vec![Align::Right; head.len()]);
        }
    }
    for sev in [Severity::Critical, Severity::Warning, Severity::Info] {
        let group: Vec<_> = d.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        md::heading(
            &mut s,
            2,
            &format!("{} ({})", sev.name().to_uppercase(), group.len()),
        );
        for f in group {
            md::heading(
                &mut s,
                3,
                &format!("`{}` {}", f.id.replace('`', "'"), escape(&f.title)),
            );
            if !f.evidence.is_empty() {
                md::para_md(&mut s, "**Evidence**");
                let rows: Vec<Vec<String>> = f
                    .evidence
                    .iter()
                    .map(|e| {
                        vec![
                            e.name.clone(),
                            crate::units::fmt_num(e.value),
                            e.unit.clone(),
                        ]
                    })
                    .collect();
                md::table(
                    &mut s,
                    &["measure".into(), "value".into(), "unit".into()],
                    &rows,
                    &[Align::Left, Align::Right, Align::Left],
                );
            }
            md::para_md(&mut s, &format!("**Why.** {}", escape(f.why.trim())));
            md::para_md(&mut s, &format!("**Do.** {}", escape(f.what_to_do.trim())));
            if !f.statements.is_empty() {
                md::para_md(&mut s, "**Run:**");
                md::code(&mut s, "sql", &f.statements);
            }
            if !f.option_file.is_empty() {
                md::para_md(&mut s, "**Option file:**");
                let mut lines = vec!["[mysqld]".to_string()];
                lines.extend(f.option_file.iter().cloned());
                md::code(&mut s, "ini", &lines);
            }
        }
    }
    if d.findings.is_empty() {
        md::para(&mut s, "No findings.");
    }
    s
}
