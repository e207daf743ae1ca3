//! The inputs of `profile --diff`: a folded file (`stack count` lines, as `--folded` and
//! inferno-collapse-perf write them), a `perf script` text (folded here) or a
//! `spinscope.profile/2` JSON document (classes and top stacks only), told apart by their first
//! line, each made into a [`diff::Side`](super::diff::Side).

use std::collections::BTreeMap;
use std::io::BufRead;

use super::diff::{DiffInput, Side};
use super::rules::Class;
use super::{Analysis, ProfileDoc};
use crate::error::{Error, Result};

/// What an input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Folded,
    PerfScript,
    ProfileJson,
}

impl Format {
    pub fn id(self) -> &'static str {
        match self {
            Format::Folded => "folded",
            Format::PerfScript => "perf-script",
            Format::ProfileJson => "profile-json",
        }
    }
}

/// One folded line: `stack count` (the count after the last space).
fn folded_line(line: &str) -> Option<(&str, u64)> {
    let (stack, n) = line.trim_end().rsplit_once(' ')?;
    let n: u64 = n.parse().ok()?;
    let stack = stack.trim_end();
    (!stack.is_empty() && !stack.starts_with(char::is_whitespace)).then_some((stack, n))
}

/// Tell the format from the first line that is not blank or a comment.
pub fn sniff(head: &[u8]) -> Format {
    let text = String::from_utf8_lossy(head);
    let first = text
        .lines()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    if first.trim_start().starts_with('{') {
        Format::ProfileJson
    } else if folded_line(first).is_some() && !first.ends_with(':') {
        Format::Folded
    } else {
        Format::PerfScript
    }
}

/// Read a folded file; a line that is not `stack count` is bad input, named by its number.
pub fn read_folded<R: BufRead>(r: R, name: &str) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for (i, line) in r.split(b'\n').enumerate() {
        let line = line.map_err(|e| Error::bad_input(format!("{name}: reading failed ({e})")))?;
        let line = String::from_utf8_lossy(&line);
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (st, n) = folded_line(&line).ok_or_else(|| {
            let mut end = line.len().min(80);
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            Error::bad_input(format!(
                "{name}: line {} is not a folded stack (`frame;frame;... count`): {:?}; give a \
                 folded file, a `perf script` text or a spinscope profile JSON",
                i + 1,
                &line[..end]
            ))
        })?;
        out.push((st.to_string(), n));
    }
    if out.is_empty() {
        return Err(Error::bad_input(format!(
            "{name}: no folded stacks in it; give a folded file, a `perf script` text or a \
             spinscope profile JSON"
        )));
    }
    Ok(out)
}

/// A side from folded stacks (weights only: samples unknown).
pub fn from_folded(name: &str, stacks: Vec<(String, u64)>) -> Side {
    let weight = stacks.iter().fold(0u64, |a, s| a.saturating_add(s.1));
    let depth = stacks
        .iter()
        .map(|s| s.0.split(';').count())
        .max()
        .unwrap_or(0);
    Side {
        input: DiffInput {
            name: name.to_string(),
            format: Format::Folded.id().into(),
            samples: None,
            weight,
            weight_unit: "folded count".into(),
            event: None,
            stacks: stacks.len() as u64,
            // comm + one frame: recorded without call chains.
            call_chains: depth > 2,
            too_few_samples: false,
        },
        stacks,
        classes: None,
    }
}

/// A side from a profile of a perf script.
pub fn from_analysis(name: &str, an: &Analysis) -> Side {
    Side {
        input: DiffInput {
            name: name.to_string(),
            format: Format::PerfScript.id().into(),
            samples: Some(an.doc.samples),
            weight: an.doc.weight,
            weight_unit: an.doc.weight_unit.clone(),
            event: an.doc.source.event.clone(),
            stacks: an.folded.len() as u64,
            call_chains: an.doc.call_chains,
            too_few_samples: false,
        },
        stacks: an
            .folded
            .iter()
            .map(|(s, t)| (s.clone(), t.weight))
            .collect(),
        classes: None,
    }
}

/// A side from a `spinscope.profile/2` document: its classes are exact; its functions and
/// stacks come from the top stacks it keeps, so they are lower bounds.
pub fn from_profile_json(name: &str, text: &str) -> Result<Side> {
    let doc: ProfileDoc = serde_json::from_str(text).map_err(|e| {
        Error::bad_input(format!(
            "{name}: not a spinscope profile JSON ({e}); give a folded file, a `perf script` \
             text or the output of `spinscope profile --json`"
        ))
    })?;
    if !doc.schema.starts_with("spinscope.profile/") {
        return Err(Error::bad_input(format!(
            "{name}: schema {:?}, not spinscope.profile/2; give `spinscope profile --json` output",
            doc.schema
        )));
    }
    let mut classes = BTreeMap::new();
    let mut stacks = Vec::new();
    for c in &doc.classes {
        let class = Class::ALL.iter().copied().find(|k| k.id() == c.class);
        if let Some(k) = class {
            classes.insert(k, c.self_weight);
        }
        stacks.extend(c.top_stacks.iter().map(|s| (s.stack.clone(), s.weight)));
    }
    Ok(Side {
        input: DiffInput {
            name: name.to_string(),
            format: Format::ProfileJson.id().into(),
            samples: Some(doc.samples),
            weight: doc.weight,
            weight_unit: doc.weight_unit.clone(),
            event: doc.source.event.clone(),
            stacks: 0,
            call_chains: doc.call_chains,
            too_few_samples: false,
        },
        stacks,
        classes: Some(classes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_first_line() {
        assert_eq!(sniff(b"mariadbd;main;do_command 42\n"), Format::Folded);
        assert_eq!(sniff(b"# comment\n\nm;a 1\n"), Format::Folded);
        assert_eq!(
            sniff(b"mariadbd 12/34 [000] 1.5: 1001001 cpu-clock:\n\tffff ut_delay+0x1 (x)\n"),
            Format::PerfScript
        );
        assert_eq!(
            sniff(b"mariadbd  1234 100.5:     250000 cpu-clock: \n"),
            Format::PerfScript
        );
        assert_eq!(sniff(b"  {\"schema\": \"x\"}"), Format::ProfileJson);
    }

    #[test]
    fn folded_lines_and_bad_lines() {
        let v = read_folded(&b"m;a;b 3\nm;a 2\n\n"[..], "x").unwrap();
        assert_eq!(v, vec![("m;a;b".to_string(), 3), ("m;a".to_string(), 2)]);
        let e = read_folded(&b"m;a 3\nnot folded\n"[..], "x.folded").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert!(read_folded(&b"\n"[..], "x").is_err());
    }

    #[test]
    fn profile_json_sides_keep_exact_classes() {
        let e = from_profile_json("p.json", "{\"schema\":\"spinscope.sweep/1\"}");
        assert!(e.is_err());
    }
}
