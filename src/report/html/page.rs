//! The page's order, shared by HTML and Markdown: the verdict first (per server its worst
//! finding in words, the numbers behind it, the fix as SQL and option-file lines, what a later
//! document measured after it, and "Fixed" with when and by which document once a later
//! document of the same server no longer shows it), then before/after pairs (each number with
//! its windows' noise and whether the difference is within it), then the details grouped per
//! server in time order under unique headings, then the inputs left out. A server is known by
//! what it reports about itself (the journal's identity), never by the connection string: one
//! server reached by TCP and by the socket is one section that names both ways.

use std::collections::HashSet;
use std::fmt::Write;

use super::{esc, md, Block, Input, Section};
use crate::report::markdown;

/// One heading and what follows it.
pub struct Part {
    pub level: u8,
    pub id: String,
    pub title: String,
    /// The input the part comes from (details only).
    pub source: Option<String>,
    pub blocks: Vec<Block>,
    /// How the part is marked: "critical", "warning", "fixed" (a verdict's state).
    pub class: Option<&'static str>,
}

/// A time as `2026-11-26 08:31:02 UTC`.
pub fn when(unix_s: f64) -> String {
    if !(unix_s.is_finite() && unix_s > 0.0) {
        return "time unknown".into();
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(unix_s);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

struct Doc<'a> {
    source: &'a str,
    s: &'a Section,
}

/// One server's documents: grouped by what the server reported about itself (the journal's
/// identity: `@@server_uuid`, else hostname, port, socket, datadir, server_id), never by the
/// connection string, so TCP and the socket are one server. A document without an identity
/// (an older spinscope's, a log) joins the one identified server it names as its endpoint;
/// otherwise it stands under that endpoint.
struct Group<'a> {
    /// "" for documents about no server.
    key: String,
    identity: Option<crate::journal::DocIdentity>,
    /// How the documents reached it (their targets), in order of appearance.
    endpoints: Vec<String>,
    docs: Vec<Doc<'a>>,
}

impl Group<'_> {
    fn name(&self) -> String {
        match (&self.identity, self.key.is_empty()) {
            (_, true) => "This host and other documents".into(),
            (Some(i), _) => match &i.uuid {
                Some(u) => format!("Server {}:{} (server_uuid {u})", i.hostname, i.port),
                None => format!("Server {}:{} (datadir {})", i.hostname, i.port, i.datadir),
            },
            (None, _) => self.endpoints.first().cloned().unwrap_or_default(),
        }
    }

    /// Which server this is and how it was reached, in one sentence.
    fn intro(&self) -> Option<String> {
        if self.key.is_empty() {
            return None;
        }
        let ways: Vec<String> = self.endpoints.iter().map(|e| reached(e)).collect();
        Some(match &self.identity {
            Some(i) => {
                let facts = match &i.uuid {
                    Some(u) => format!("@@server_uuid {u}"),
                    None => format!(
                        "@@hostname {}, @@port {}, @@socket {}, @@datadir {}, @@server_id {}",
                        i.hostname, i.port, i.socket, i.datadir, i.server_id
                    ),
                };
                format!(
                    "One server, known by what it reports ({facts}); reached {}.",
                    join_and(&ways)
                )
            }
            None => format!(
                "These documents do not record which server answered (an older spinscope): grouped by how it was reached, {}.",
                join_and(&ways)
            ),
        })
    }
}

/// `user@/path/sock` is the Unix socket; `user@host:port` TCP.
fn reached(endpoint: &str) -> String {
    let after = endpoint.rsplit_once('@').map_or(endpoint, |x| x.1);
    if after.starts_with('/') {
        format!("by the socket as {endpoint}")
    } else {
        format!("by TCP as {endpoint}")
    }
}

fn join_and(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The sections, grouped per server (servers with a verdict first, worst first), each group in
/// time order; sections about no server last, under "This host and other documents".
fn groups<'a>(inputs: &'a [Input]) -> Vec<Group<'a>> {
    let mut out: Vec<Group<'a>> = Vec::new();
    let secs: Vec<Doc<'a>> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Section { source, section } => Some(Doc { source, s: section }),
            Input::Skipped { .. } => None,
        })
        .collect();
    let mut rest = Vec::new();
    // Identified documents first: their groups are what the others join.
    for d in secs {
        let Some(id) = d.s.identity.clone() else {
            rest.push(d);
            continue;
        };
        let key = format!("id {}", id.key);
        let i = match out.iter().position(|g| g.key == key) {
            Some(i) => i,
            None => {
                out.push(Group {
                    key,
                    identity: Some(id),
                    endpoints: Vec::new(),
                    docs: Vec::new(),
                });
                out.len() - 1
            }
        };
        if let Some(e) = &d.s.server {
            if !out[i].endpoints.contains(e) {
                out[i].endpoints.push(e.clone());
            }
        }
        out[i].docs.push(d);
    }
    for d in rest {
        let ep = d.s.server.clone().unwrap_or_default();
        let named: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].identity.is_some() && out[i].endpoints.contains(&ep))
            .collect();
        let i = match (ep.is_empty(), named.as_slice()) {
            (true, _) => find_or_add(&mut out, String::new()),
            (false, [one]) => *one,
            (false, _) => find_or_add(&mut out, format!("at {ep}")),
        };
        if !ep.is_empty() && !out[i].endpoints.contains(&ep) {
            out[i].endpoints.push(ep);
        }
        out[i].docs.push(d);
    }
    for g in &mut out {
        g.docs.sort_by(|a, b| {
            let t = |d: &Doc| d.s.time_unix_s.unwrap_or(f64::MAX);
            t(a).total_cmp(&t(b))
        });
    }
    let worst = |v: &[Doc]| {
        v.iter()
            .filter_map(|d| d.s.verdict.as_ref().map(|x| x.rank))
            .min()
            .unwrap_or(9)
    };
    out.sort_by_key(|g| (g.key.is_empty(), worst(&g.docs)));
    out
}

fn find_or_add(out: &mut Vec<Group>, key: String) -> usize {
    if let Some(i) = out.iter().position(|g| g.key == key) {
        return i;
    }
    out.push(Group {
        key,
        identity: None,
        endpoints: Vec::new(),
        docs: Vec::new(),
    });
    out.len() - 1
}

/// The whole page as parts.
pub fn plan(inputs: &[Input]) -> Vec<Part> {
    let groups = groups(inputs);
    let mut parts = vec![part(2, "verdict", "Verdict".into())];
    let mut seen_lines: HashSet<String> = HashSet::new();
    let others: &[Doc] = groups
        .iter()
        .find(|g| g.key.is_empty())
        .map_or(&[], |g| g.docs.as_slice());
    for (n, g) in groups.iter().enumerate().filter(|(_, g)| !g.key.is_empty()) {
        if let Some(p) = verdict(n, g, others, &mut seen_lines) {
            for d in others
                .iter()
                .filter(|d| matches!(d.s.kind, "profile-diff" | "rt"))
            {
                seen_lines.extend(d.s.summary.iter().map(|(_, l)| l.clone()));
            }
            parts.push(p);
        }
    }
    // The verdict box is red while a server has a critical finding now, amber for a warning,
    // green when every finding was fixed.
    let states: Vec<&str> = parts[1..].iter().filter_map(|p| p.class).collect();
    parts[0].class = if states.contains(&"critical") {
        Some("critical")
    } else if states.contains(&"warning") {
        Some("warning")
    } else if !states.is_empty() {
        Some("fixed")
    } else {
        None
    };
    let others = also(&groups, &mut seen_lines);
    if parts.len() == 1 {
        let none = if inputs.iter().any(|i| matches!(i, Input::Section { .. })) {
            "No warning or critical finding in these documents."
        } else {
            "No document was included."
        };
        parts[0].blocks.push(Block::Para(none.into()));
    }
    if !others.is_empty() {
        let mut p = part(3, "also", "Also found".into());
        p.blocks.push(Block::List(others));
        parts.push(p);
    }
    let pairs = pairs(&groups);
    if !pairs.is_empty() {
        parts.push(part(2, "before-after", "Before and after".into()));
        parts.extend(pairs);
    }
    details(&groups, &mut parts);
    let skipped: Vec<String> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Skipped { source, why } => Some(format!("{source}: {why}")),
            _ => None,
        })
        .collect();
    if !skipped.is_empty() {
        let mut p = part(2, "not-included", "Not included".into());
        p.blocks.push(Block::List(skipped));
        parts.push(p);
    }
    parts
}

fn part(level: u8, id: &str, title: String) -> Part {
    Part {
        level,
        id: id.into(),
        title,
        source: None,
        blocks: Vec::new(),
        class: None,
    }
}

fn severity(rank: u8) -> &'static str {
    if rank == 0 {
        "Critical"
    } else {
        "Warning"
    }
}

/// One server's verdict: its worst finding (from the first document with it), the numbers,
/// the fix, and what the documents after the last one reporting it measured. A later document
/// of a kind that reported it (a doctor run, a capture's snapshot) without it marks it fixed:
/// when, by which document, and what that document finds now.
fn verdict(n: usize, g: &Group, others: &[Doc], seen: &mut HashSet<String>) -> Option<Part> {
    let docs = &g.docs;
    let d = docs
        .iter()
        .filter(|d| d.s.verdict.is_some())
        .min_by_key(|d| d.s.verdict.as_ref().map(|v| v.rank))?;
    let v = d.s.verdict.as_ref()?;
    let reports = |x: &Doc| x.s.finding_ids.contains(&v.finding_id);
    let last = docs.iter().rposition(&reports).unwrap_or(0);
    let fixed_at = docs[last].s.time_unix_s.unwrap_or(0.0);
    let kinds: Vec<&str> = docs
        .iter()
        .filter(|x| reports(x))
        .map(|x| x.s.kind)
        .collect();
    let fixer = docs[last + 1..].iter().find(|x| kinds.contains(&x.s.kind));
    let sev = severity(v.rank);
    let name = g.name();
    let mut p = part(3, &format!("verdict-{n}-{}", slug(&name)), name);
    p.blocks.extend(g.intro().map(Block::Para));
    let what = v.what.trim_end_matches('.');
    p.class = Some(if v.rank == 0 { "critical" } else { "warning" });
    if let Some(f) = fixer {
        p.blocks.push(Block::Para(format!(
            "Fixed: {what} ({} until {}; no longer reported by {}).",
            sev.to_lowercase(),
            at(&docs[last]),
            at(f)
        )));
        // How things stand: the latest document of the kind that no longer reports it.
        let latest = docs
            .iter()
            .rev()
            .find(|x| x.s.kind == f.s.kind)
            .unwrap_or(f);
        let now = match &latest.s.verdict {
            Some(w) => {
                p.class = Some(if w.rank == 0 { "critical" } else { "warning" });
                format!("{}: {}", severity(w.rank), w.what.trim_end_matches('.'))
            }
            None => {
                p.class = Some("fixed");
                "nothing at warning or above".into()
            }
        };
        if let Some(w) = &latest.s.verdict {
            seen.extend(
                latest
                    .s
                    .summary
                    .iter()
                    .filter(|(_, l)| l.contains(w.what.trim_end_matches('.')))
                    .map(|(_, l)| l.clone()),
            );
        }
        p.blocks
            .push(Block::Para(format!("Now, by {}: {now}.", at(latest))));
    } else {
        p.blocks.push(Block::Para(format!("{sev}: {what}.")));
    }
    // The first numbers say it; the rest are in the details.
    let mut ev: Vec<String> = v.evidence.iter().take(3).cloned().collect();
    ev.extend(
        v.evidence
            .iter()
            .skip(3)
            .filter(|e| e.starts_with("innodb") || e.starts_with("after fix"))
            .cloned(),
    );
    if !ev.is_empty() {
        if fixer.is_some() {
            p.blocks.push(Block::Para("What it was:".into()));
        }
        p.blocks.push(Block::List(ev));
    }
    if !v.sql.is_empty() {
        p.blocks.push(Block::Para(
            if fixer.is_some() {
                "The fix (SQL), as advised:"
            } else {
                "The fix, now (SQL):"
            }
            .into(),
        ));
        p.blocks.push(Block::Code(v.sql.clone()));
    }
    if !v.option_file.is_empty() {
        p.blocks.push(Block::Para(
            "The fix, kept across restarts (option file, [mysqld] section):".into(),
        ));
        let mut lines = vec!["[mysqld]".to_string()];
        lines.extend(v.option_file.iter().cloned());
        p.blocks.push(Block::Code(lines));
    }
    let by: Vec<String> = docs.iter().filter(|x| reports(x)).map(|x| at(x)).collect();
    p.blocks
        .push(Block::Para(format!("Reported by {}.", by.join(", "))));
    let after = after_fix(v, &docs[last + 1..], others, fixed_at);
    if !after.is_empty() {
        p.blocks.push(Block::Para("Measured after the fix:".into()));
        p.blocks.push(Block::List(after));
    }
    if !v.why.is_empty() {
        p.blocks
            .push(Block::Para(format!("Why it matters: {}", v.why)));
    }
    for x in docs {
        seen.extend(
            x.s.summary
                .iter()
                .filter(|(_, l)| l.contains(&v.what))
                .map(|(_, l)| l.clone()),
        );
    }
    Some(p)
}

fn at(d: &Doc) -> String {
    format!("{} ({})", d.source, when(d.s.time_unix_s.unwrap_or(0.0)))
}

/// The noise of one number between two documents, when both kept its windows.
fn noise_of(a: &Doc, b: &Doc, name: &str) -> Option<super::noise::Noise> {
    let wa = a.s.windows.iter().find(|w| w.name == name)?;
    let wb = b.s.windows.iter().find(|w| w.name == name)?;
    Some(super::noise::compare(wa, wb))
}

/// What was measured after the fix: a later doctor run of the server without the finding, a
/// profile diff, and response times from packets before and after (documents about no one
/// server, placed by time around the last document that reported the finding), with their
/// noise.
fn after_fix(v: &super::Verdict, later: &[Doc], others: &[Doc], fixed_at: f64) -> Vec<String> {
    let mut out = Vec::new();
    for d in later.iter().filter(|d| d.s.kind == "doctor") {
        let now =
            d.s.verdict
                .as_ref()
                .map_or("nothing at warning or above".into(), |w| {
                    format!(
                        "{}: {}",
                        if w.rank == 0 { "critical" } else { "warning" },
                        w.what.trim_end_matches('.')
                    )
                });
        if d.s.finding_ids.contains(&v.finding_id) {
            continue;
        }
        out.push(format!(
            "{}: no longer reports {}; its worst finding now: {now}.",
            at(d),
            v.finding_id
        ));
    }
    for d in others.iter().filter(|d| d.s.kind == "profile-diff") {
        out.extend(d.s.summary.iter().map(|(_, l)| l.clone()));
    }
    let t = |d: &&Doc| d.s.time_unix_s.unwrap_or(0.0);
    let rts: Vec<&Doc> = others.iter().filter(|d| d.s.kind == "rt").collect();
    // The fix happened between the last document with the finding and the first later one
    // without it; document times are approximate (a file's time is when its run ended), so
    // the middle of that span divides before from after.
    let split = later
        .iter()
        .find(|d| d.s.kind == "doctor")
        .map_or(fixed_at, |d| (fixed_at + t(&d)) / 2.0);
    let before = rts.iter().rfind(|d| t(d) <= split);
    let after = rts.iter().find(|d| t(d) > split);
    if let (Some(a), Some(b)) = (before, after) {
        let num = |d: &Doc, k: &str| {
            d.s.numbers
                .iter()
                .find(|(n, _)| n == k)
                .map_or("-".into(), |(_, x)| x.clone())
        };
        let noise = |k: &str| {
            noise_of(a, b, k).map_or(" (noise not kept)".into(), |n| {
                format!(": {} {}", n.short, n.ci)
            })
        };
        out.push(format!(
            "Response time from packets: p99 {} before ({}), {} after ({}){}; requests/s {} and {}{}.",
            num(a, "time to last byte p99"),
            a.source,
            num(b, "time to last byte p99"),
            b.source,
            noise("time to last byte p99"),
            num(a, "requests/s"),
            num(b, "requests/s"),
            noise("requests/s")
        ));
    }
    out
}

/// The summary lines not yet on the verdict screen (deduplicated), most severe first, and the
/// headline of documents about no one server (profile diff, tune, rt).
fn also(groups: &[Group], seen: &mut HashSet<String>) -> Vec<String> {
    // The latest document of each kind says how things stand; earlier ones are in the details.
    let mut lines: Vec<(u8, String)> = Vec::new();
    for g in groups {
        let v = &g.docs;
        for (i, d) in v.iter().enumerate() {
            if v[i + 1..].iter().any(|x| x.s.kind == d.s.kind) {
                continue;
            }
            lines.extend(d.s.summary.iter().filter(|(r, _)| *r <= 2).cloned());
        }
    }
    lines.sort_by_key(|l| l.0);
    lines
        .into_iter()
        .filter(|(_, l)| seen.insert(l.clone()))
        .map(|(_, l)| l)
        .collect()
}

/// Per kind and server, the first and the last document in time: their numbers side by side,
/// each number kept per window with its noise and whether the difference is within it, and
/// their pictures next to each other.
fn pairs(groups: &[Group]) -> Vec<Part> {
    let mut out = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let docs = &g.docs;
        let mut kinds: Vec<&str> = docs.iter().map(|d| d.s.kind).collect();
        kinds.dedup();
        let mut done = HashSet::new();
        for k in kinds {
            if !done.insert(k) {
                continue;
            }
            let of: Vec<&Doc> = docs.iter().filter(|d| d.s.kind == k).collect();
            if of.len() < 2 {
                continue;
            }
            // The last document, or the last that kept windows when the first did (a
            // snapshot beside two doctor --rt runs keeps none): numbers with their noise.
            let a = of[0];
            let b = of[1..]
                .iter()
                .rev()
                .find(|d| !a.s.windows.is_empty() && !d.s.windows.is_empty())
                .copied()
                .unwrap_or(of[of.len() - 1]);
            let title = if a.s.title == b.s.title {
                format!("Before and after: {}", a.s.title)
            } else {
                format!("Before and after: {} / {}", a.s.title, b.s.title)
            };
            let mut p = part(3, &format!("pair-{gi}-{}-{k}", slug(&g.name())), title);
            p.blocks.push(Block::List(vec![
                format!("before: {}", at(a)),
                format!("after: {}", at(b)),
            ]));
            let names: Vec<&String> = a.s.numbers.iter().map(|(n, _)| n).collect();
            let mut noisy = Vec::new();
            let mut rows: Vec<Vec<String>> = names
                .iter()
                .map(|n| {
                    let get = |d: &Doc| {
                        d.s.numbers
                            .iter()
                            .find(|(m, _)| m == *n)
                            .map_or("-".into(), |(_, x)| x.clone())
                    };
                    let noise = noise_of(a, b, n);
                    let cell = noise.as_ref().map_or(String::new(), |x| x.short.clone());
                    noisy.extend(noise.map(|x| x.long));
                    vec![n.to_string(), get(a), get(b), cell]
                })
                .collect();
            let mut head = vec![String::new(), "before".into(), "after".into()];
            if noisy.is_empty() {
                for r in &mut rows {
                    r.pop();
                }
            } else {
                head.push("difference".into());
            }
            if !rows.is_empty() {
                p.blocks.push(Block::Table(head, rows));
            }
            if !noisy.is_empty() {
                p.blocks.push(Block::Para(
                    "The noise, from each document's windows (Welch's interval on the logarithms, 95%; within the noise when it holds no change):".into(),
                ));
                p.blocks.push(Block::List(noisy));
            }
            if let (Some(x), Some(y)) = (&a.s.picture, &b.s.picture) {
                p.blocks.push(Block::Pair(vec![
                    (format!("before: {}", a.source), x.clone()),
                    (format!("after: {}", b.source), y.clone()),
                ]));
            }
            out.push(p);
        }
    }
    out
}

/// The details: per server a heading (which server, how it was reached), then each document
/// in time order, headings unique.
fn details(groups: &[Group], parts: &mut Vec<Part>) {
    let mut titles: HashSet<String> = parts.iter().map(|p| p.title.clone()).collect();
    let mut n = 0;
    for (gi, g) in groups.iter().enumerate() {
        let mut head = format!("Details: {}", g.name());
        while !titles.insert(head.clone()) {
            head.push('+');
        }
        let mut p = part(2, &format!("details-{gi}-{}", slug(&g.name())), head);
        p.blocks.extend(g.intro().map(Block::Para));
        parts.push(p);
        for d in &g.docs {
            n += 1;
            let mut t = d.s.title.clone();
            if titles.contains(&t) {
                t = format!("{t} ({})", when(d.s.time_unix_s.unwrap_or(0.0)));
            }
            let base = t.clone();
            let mut k = 2;
            while !titles.insert(t.clone()) {
                t = format!("{base} #{k}");
                k += 1;
            }
            parts.push(Part {
                level: 3,
                id: format!("s{n}"),
                title: t,
                source: Some(d.source.to_string()),
                blocks: d.s.blocks.clone(),
                class: None,
            });
        }
    }
}

/// An id-safe name.
pub fn slug(s: &str) -> String {
    let t: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let t = t.trim_matches('-').to_string();
    let mut o = String::new();
    for c in t.chars() {
        if !(c == '-' && o.ends_with('-')) {
            o.push(c);
        }
    }
    if o.is_empty() {
        "other".into()
    } else {
        o.chars().take(40).collect()
    }
}

const CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 .8em;color:#222;line-height:1.35}
h1{font-size:1.5em}h2{border-top:2px solid #ddd;padding-top:.5em;margin-top:1.4em}h3{margin:1em 0 .3em}
table{border-collapse:collapse;margin:.5em 0;display:block;overflow-x:auto;max-width:100%}th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}pre{background:#f6f6f6;border:1px solid #ddd;padding:.5em;overflow-x:auto;white-space:pre-wrap}
svg{max-width:100%;height:auto}figure{margin:.5em 0}figcaption{font-size:.9em;color:#555}
.pair{display:flex;flex-wrap:wrap;gap:1em}.pair>figure{flex:1 1 420px;min-width:0}
#verdict{border:2px solid #b00;border-radius:6px;padding:.2em 1em .6em;margin-bottom:1em}#verdict h2{border:0;margin-top:.4em}
#verdict.warning{border-color:#c70}#verdict.fixed{border-color:#286}div.critical,div.warning,div.fixed{border-left:5px solid #b00;padding-left:.7em}div.warning{border-color:#c70}div.fixed{border-color:#286}
.source{color:#666;font-size:.9em}
@media print{h3,figure,table{break-inside:avoid-page}a{color:inherit}.pair>figure{flex-basis:45%}}";

/// Records a script error in the page itself (`data-js-error` on `<html>`), so a headless
/// browser's DOM dump shows it; the page loads nothing from outside.
const ERRORS_JS: &str = "window.addEventListener('error',function(e){var d=document.documentElement;d.setAttribute('data-js-error',(d.getAttribute('data-js-error')||'')+String(e.message)+';');});";

/// The HTML page.
pub fn html(inputs: &[Input]) -> String {
    let parts = plan(inputs);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>spinscope report</title>\n<style>{CSS}</style>\n<script>{ERRORS_JS}</script></head><body>\n<h1>spinscope report</h1>\n"
    );
    let mut open = false;
    for p in &parts {
        if p.level == 2 {
            if open {
                s.push_str("</section>\n");
            }
            let class = p.class.map_or(String::new(), |c| format!(" class=\"{c}\""));
            let _ = writeln!(
                s,
                "<section id=\"{}\"{class}><h2>{}</h2>",
                esc(&p.id),
                esc(&p.title)
            );
            open = true;
        } else {
            let class = match (p.source.is_some(), p.class) {
                (true, _) => " class=\"doc\"".to_string(),
                (false, Some(c)) => format!(" class=\"{c}\""),
                (false, None) => String::new(),
            };
            let _ = writeln!(
                s,
                "<div id=\"{}\"{class}><h3>{}</h3>",
                esc(&p.id),
                esc(&p.title)
            );
        }
        if let Some(src) = &p.source {
            let _ = writeln!(s, "<p class=\"source\">From {}</p>", esc(src));
        }
        for b in &p.blocks {
            block_html(&mut s, b);
        }
        if p.level != 2 {
            s.push_str("</div>\n");
        }
    }
    if open {
        s.push_str("</section>\n");
    }
    s.push_str("</body></html>\n");
    s
}

fn block_html(s: &mut String, b: &Block) {
    match b {
        Block::Para(t) => {
            let _ = writeln!(s, "<p>{}</p>", esc(t));
        }
        Block::List(items) => {
            s.push_str("<ul>");
            for it in items {
                let _ = write!(s, "<li>{}</li>", esc(it));
            }
            s.push_str("</ul>\n");
        }
        Block::Code(lines) => {
            let _ = writeln!(s, "<pre><code>{}</code></pre>", esc(&lines.join("\n")));
        }
        Block::Table(head, rows) => {
            s.push_str("<table><thead><tr>");
            for h in head {
                let _ = write!(s, "<th>{}</th>", esc(h));
            }
            s.push_str("</tr></thead><tbody>\n");
            for r in rows {
                s.push_str("<tr>");
                for c in r {
                    let _ = write!(s, "<td>{}</td>", esc(c));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</tbody></table>\n");
        }
        Block::Svg { name, svg } => {
            // Spinscope's own SVG (every document string in it is escaped by its renderer);
            // the XML prolog and doctype are dropped for inline use.
            let body = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
            if svg.contains("<script") {
                // An interactive SVG (inferno's flame graph: click to zoom, search) gets a
                // document of its own: inline, its script would find the page's first <svg>
                // and its ids would clash with a second flame graph's.
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(svg.as_bytes());
                let _ = writeln!(
                    s,
                    "<figure class=\"chart flame\" data-name=\"{}\"><object type=\"image/svg+xml\" data=\"data:image/svg+xml;base64,{data}\" style=\"width:100%;aspect-ratio:{}\" aria-label=\"{}\"></object><figcaption>Click a frame to zoom in, Ctrl-F to search.</figcaption></figure>",
                    esc(name),
                    flame_ratio(svg),
                    esc(name)
                );
            } else {
                let _ = writeln!(
                    s,
                    "<figure class=\"chart\" data-name=\"{}\">{body}</figure>",
                    esc(name)
                );
            }
        }
        Block::Pair(items) => {
            s.push_str("<div class=\"pair\">");
            for (cap, b) in items {
                let _ = write!(s, "<figure><figcaption>{}</figcaption>", esc(cap));
                block_html(s, b);
                s.push_str("</figure>");
            }
            s.push_str("</div>\n");
        }
    }
}

/// An embedded flame graph's aspect ratio (`1200/742`), from its own width and height.
fn flame_ratio(svg: &str) -> String {
    let num = |k: &str| -> Option<u32> {
        let t = &svg[svg.find("<svg")?..];
        let j = t.find(&format!(" {k}=\""))? + k.len() + 3;
        t[j..].split('"').next()?.parse().ok()
    };
    match (num("width"), num("height")) {
        (Some(w), Some(h)) if w > 0 && h > 0 => format!("{w}/{h}"),
        _ => "2/1".into(),
    }
}

/// A Markdown page and the chart files it references.
pub struct Markdown {
    pub text: String,
    /// (file name inside the files directory, SVG).
    pub files: Vec<(String, String)>,
}

/// The Markdown page. `files_dir` is the directory name the images are referenced under
/// (`report-files` beside `report.md`); None (stdout) names the charts without drawing them.
pub fn markdown(inputs: &[Input], files_dir: Option<&str>) -> Markdown {
    let mut m = Markdown {
        text: String::from("# spinscope report\n\n"),
        files: Vec::new(),
    };
    for p in plan(inputs) {
        markdown::heading(&mut m.text, p.level.into(), &md(&p.title));
        if let Some(src) = &p.source {
            let _ = write!(m.text, "From `{}`\n\n", src.replace('`', "'"));
        }
        for b in &p.blocks {
            block_md(&mut m, b, files_dir);
        }
    }
    m
}

fn block_md(m: &mut Markdown, b: &Block, dir: Option<&str>) {
    let s = &mut m.text;
    match b {
        Block::Para(t) => markdown::para(s, t),
        Block::List(items) => markdown::list(s, items),
        Block::Code(lines) => markdown::code(s, "", lines),
        Block::Table(head, rows) => markdown::table(s, head, rows, &[]),
        Block::Svg { name, svg } => match dir {
            Some(d) => {
                let file = format!(
                    "{:02}-{}.svg",
                    m.files.len() + 1,
                    slug(name.trim_end_matches(".svg"))
                );
                let _ = write!(s, "![{}]({d}/{file})\n\n", md(name));
                m.files.push((file, svg.clone()));
            }
            None => {
                let _ = write!(s, "Chart: {} (written as a file with --out).\n\n", md(name));
            }
        },
        Block::Pair(items) => {
            for (cap, b) in items {
                let _ = write!(m.text, "{}\n\n", md(cap));
                block_md(m, b, dir);
            }
        }
    }
}
