//! The page's order, shared by HTML and Markdown: the verdict first (per server its worst
//! finding in words, the numbers behind it, the fix as SQL and option-file lines, what a later
//! document measured after it), then before/after pairs, then the details grouped per server in
//! time order under unique headings, then the inputs left out.

use std::collections::HashSet;
use std::fmt::Write;

use super::{esc, md, Block, Input, Section};

/// One heading and what follows it.
pub struct Part {
    pub level: u8,
    pub id: String,
    pub title: String,
    /// The input the part comes from (details only).
    pub source: Option<String>,
    pub blocks: Vec<Block>,
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

/// The sections, grouped per server (servers with a verdict first, worst first), each group in
/// time order; sections about no server last, under "This host and other documents".
fn groups<'a>(inputs: &'a [Input]) -> Vec<(String, Vec<Doc<'a>>)> {
    let mut out: Vec<(String, Vec<Doc<'a>>)> = Vec::new();
    for i in inputs {
        if let Input::Section { source, section } = i {
            let key = section.server.clone().unwrap_or_default();
            let d = Doc { source, s: section };
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some((_, v)) => v.push(d),
                None => out.push((key, vec![d])),
            }
        }
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| {
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
    out.sort_by_key(|(k, v)| (k.is_empty(), worst(v)));
    out
}

fn server_name(key: &str) -> String {
    if key.is_empty() {
        "This host and other documents".into()
    } else {
        key.to_string()
    }
}

/// The whole page as parts.
pub fn plan(inputs: &[Input]) -> Vec<Part> {
    let groups = groups(inputs);
    let mut parts = vec![Part {
        level: 2,
        id: "verdict".into(),
        title: "Verdict".into(),
        source: None,
        blocks: Vec::new(),
    }];
    let mut seen_lines: HashSet<String> = HashSet::new();
    let others: &[Doc] = groups
        .iter()
        .find(|(k, _)| k.is_empty())
        .map_or(&[], |(_, v)| v.as_slice());
    for (key, docs) in groups.iter().filter(|(k, _)| !k.is_empty()) {
        if let Some(p) = verdict(key, docs, others, &mut seen_lines) {
            for d in others
                .iter()
                .filter(|d| matches!(d.s.kind, "profile-diff" | "rt"))
            {
                seen_lines.extend(d.s.summary.iter().map(|(_, l)| l.clone()));
            }
            parts.push(p);
        }
    }
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
    }
}

/// One server's verdict: its worst finding (from the first document with it), the numbers,
/// the fix, and what the documents after the last one reporting it measured.
fn verdict(key: &str, docs: &[Doc], others: &[Doc], seen: &mut HashSet<String>) -> Option<Part> {
    let d = docs
        .iter()
        .filter(|d| d.s.verdict.is_some())
        .min_by_key(|d| d.s.verdict.as_ref().map(|v| v.rank))?;
    let v = d.s.verdict.as_ref()?;
    let reports = |x: &Doc| x.s.finding_ids.contains(&v.finding_id);
    let last = docs.iter().rposition(&reports).unwrap_or(0);
    let fixed_at = docs[last].s.time_unix_s.unwrap_or(0.0);
    let sev = if v.rank == 0 { "Critical" } else { "Warning" };
    let mut p = part(3, &format!("verdict-{}", slug(key)), server_name(key));
    p.blocks.push(Block::Para(format!(
        "{sev}: {}.",
        v.what.trim_end_matches('.')
    )));
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
        p.blocks.push(Block::List(ev));
    }
    if !v.sql.is_empty() {
        p.blocks.push(Block::Para("The fix, now (SQL):".into()));
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

/// What was measured after the fix: a later doctor run of the server without the finding, a
/// profile diff, and response times from packets before and after (documents about no one
/// server, placed by time around the last document that reported the finding).
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
        out.push(format!(
            "Response time from packets: p99 {} before ({}), {} after ({}); requests/s {} and {}.",
            num(a, "time to last byte p99"),
            a.source,
            num(b, "time to last byte p99"),
            b.source,
            num(a, "requests/s"),
            num(b, "requests/s")
        ));
    }
    out
}

/// The summary lines not yet on the verdict screen (deduplicated), most severe first, and the
/// headline of documents about no one server (profile diff, tune, rt).
fn also(groups: &[(String, Vec<Doc>)], seen: &mut HashSet<String>) -> Vec<String> {
    // The latest document of each kind says how things stand; earlier ones are in the details.
    let mut lines: Vec<(u8, String)> = Vec::new();
    for (_, v) in groups {
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

/// Per kind and server, the first and the last document in time: their numbers side by side
/// and their pictures next to each other.
fn pairs(groups: &[(String, Vec<Doc>)]) -> Vec<Part> {
    let mut out = Vec::new();
    for (key, docs) in groups {
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
            let (a, b) = (of[0], of[of.len() - 1]);
            let title = if a.s.title == b.s.title {
                format!("Before and after: {}", a.s.title)
            } else {
                format!("Before and after: {} / {}", a.s.title, b.s.title)
            };
            let mut p = part(3, &format!("pair-{}-{k}", slug(key)), title);
            let names: Vec<&String> = a.s.numbers.iter().map(|(n, _)| n).collect();
            let rows: Vec<Vec<String>> = names
                .iter()
                .map(|n| {
                    let get = |d: &Doc| {
                        d.s.numbers
                            .iter()
                            .find(|(m, _)| m == *n)
                            .map_or("-".into(), |(_, x)| x.clone())
                    };
                    vec![n.to_string(), get(a), get(b)]
                })
                .collect();
            let head = vec![
                String::new(),
                format!(
                    "before: {} ({})",
                    a.source,
                    when(a.s.time_unix_s.unwrap_or(0.0))
                ),
                format!(
                    "after: {} ({})",
                    b.source,
                    when(b.s.time_unix_s.unwrap_or(0.0))
                ),
            ];
            if !rows.is_empty() {
                p.blocks.push(Block::Table(head, rows));
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

/// The details: per server a heading, then each document in time order, headings unique.
fn details(groups: &[(String, Vec<Doc>)], parts: &mut Vec<Part>) {
    let mut titles: HashSet<String> = parts.iter().map(|p| p.title.clone()).collect();
    let mut n = 0;
    for (key, docs) in groups {
        let mut head = format!("Details: {}", server_name(key));
        while !titles.insert(head.clone()) {
            head.push('+');
        }
        parts.push(part(2, &format!("details-{}", slug(key)), head));
        for d in docs {
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
            let _ = writeln!(
                s,
                "<section id=\"{}\"><h2>{}</h2>",
                esc(&p.id),
                esc(&p.title)
            );
            open = true;
        } else {
            let class = if p.source.is_some() {
                " class=\"doc\""
            } else {
                ""
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
        let _ = write!(
            m.text,
            "{} {}\n\n",
            "#".repeat(p.level.into()),
            md(&p.title)
        );
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
        Block::Para(t) => {
            let _ = write!(s, "{}\n\n", md(t));
        }
        Block::List(items) => {
            for it in items {
                let _ = writeln!(s, "- {}", md(it));
            }
            s.push('\n');
        }
        Block::Code(lines) => {
            let body = lines.join("\n").replace("```", "'''");
            let _ = write!(s, "```\n{body}\n```\n\n");
        }
        Block::Table(head, rows) => {
            let row = |r: &[String]| {
                format!(
                    "| {} |",
                    r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
                )
            };
            let _ = writeln!(s, "{}", row(head));
            let _ = writeln!(s, "|{}", "---|".repeat(head.len()));
            for r in rows {
                let mut r = r.clone();
                r.resize(head.len(), String::new());
                let _ = writeln!(s, "{}", row(&r));
            }
            s.push('\n');
        }
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
