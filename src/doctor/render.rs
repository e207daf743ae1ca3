//! The human report: the verdict, then each finding's cause and fix before its evidence,
//! wrapped to the terminal. (The Markdown report is `report::doctor_md`, through the one
//! Markdown writer.)

use super::burst::{BurstStats, ProcStats};
use super::{DoctorDoc, Finding, Severity};
use crate::server::snapshot::HostFacts;

fn num(v: f64) -> String {
    crate::units::fmt_num(v)
}

/// The plain-text report wrapped to `width` columns, in the order a reader acts on it: the
/// verdict, then per finding (worst first) its cause (the title), its fix (what to do, the
/// statements, the option-file lines) and only then why and the evidence; the facts the
/// findings rest on (version, sampler, rt, host, counters, notes) come last. So the worst
/// finding's fix lands on the first screen however long its evidence is.
pub fn text(d: &DoctorDoc, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let mut s = String::new();
    heading(
        &mut s,
        &format!("spinscope doctor: {} ({})", d.server, d.target),
        width,
    );
    wrapped(&mut s, &verdict(d), "", "  ", width);
    s.push('\n');
    for sev in [Severity::Critical, Severity::Warning, Severity::Info] {
        let group: Vec<_> = d.findings.iter().filter(|f| f.severity == sev).collect();
        if group.is_empty() {
            continue;
        }
        heading(
            &mut s,
            &format!("{} ({})", sev.name().to_uppercase(), group.len()),
            width,
        );
        for f in group {
            s.push_str(&finding_text(f, width));
        }
    }
    heading(&mut s, "MEASURED (what the findings rest on)", width);
    for l in facts_lines(d).lines() {
        // The rt interval table keeps its columns (its rows are indented); prose wraps.
        if l.starts_with("  ") {
            s.push_str(l);
            s.push('\n');
        } else {
            wrapped(&mut s, l, "", "  ", width);
        }
    }
    s
}

/// Narrower than this, wrapping would cut the labels themselves.
const MIN_WIDTH: usize = 40;

/// The first line under the title: the worst severity and the count of each, or that nothing
/// was found.
fn verdict(d: &DoctorDoc) -> String {
    let n = |sev: Severity| d.findings.iter().filter(|f| f.severity == sev).count();
    let (c, w, i) = (
        n(Severity::Critical),
        n(Severity::Warning),
        n(Severity::Info),
    );
    let plural = |k: usize, one: &str| {
        if k == 1 || one == "info" {
            format!("{k} {one}")
        } else {
            format!("{k} {one}s")
        }
    };
    let counts = [(c, "critical"), (w, "warning"), (i, "info")]
        .iter()
        .filter(|(k, _)| *k > 0)
        .map(|(k, one)| plural(*k, one))
        .collect::<Vec<_>>()
        .join(", ");
    match d.max_severity {
        None => "verdict: no findings".to_string(),
        Some(Severity::Info) => {
            format!("verdict: nothing to fix ({counts}): notes below, the evidence after them")
        }
        Some(sev) => format!(
            "verdict: {} ({counts}): the fix first, the evidence after it",
            sev.name().to_uppercase()
        ),
    }
}

/// `text` wrapped to `width` columns, its first line led by `first` and the rest by `rest`;
/// words longer than a line are cut so that no line is wider than `width`. Never at a hyphen
/// inside a word: an option (`--innodb-spin-wait-delay`) or a range (`23.16 us-27.19 us`) cut
/// there reads as two words, and a pasted option would be wrong.
fn wrapped(s: &mut String, text: &str, first: &str, rest: &str, width: usize) {
    let o = textwrap::Options::new(width)
        .initial_indent(first)
        .subsequent_indent(rest)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(true);
    for l in textwrap::wrap(text, o) {
        s.push_str(l.trim_end());
        s.push('\n');
    }
}

/// `items` joined with ", " and wrapped to `width` between items, so that a name stays with its
/// value and unit; an item too long for a line of its own is wrapped inside.
fn items(s: &mut String, items: &[String], first: &str, rest: &str, width: usize) {
    let w = textwrap::core::display_width;
    // Each line as its lead (indent and label) and its items.
    let mut lines: Vec<(&str, String)> = Vec::new();
    for (k, it) in items.iter().enumerate() {
        let it = if k + 1 < items.len() {
            format!("{it},")
        } else {
            it.clone()
        };
        let fits = lines
            .last()
            .is_some_and(|(lead, body)| w(lead) + w(body) + 1 + w(&it) <= width);
        match lines.last_mut() {
            Some((_, body)) if fits => {
                body.push(' ');
                body.push_str(&it);
            }
            Some(_) => lines.push((rest, it)),
            None => lines.push((first, it)),
        }
    }
    for (lead, body) in lines {
        wrapped(s, &body, lead, rest, width);
    }
}

/// The facts under the title: version, sampler, rt, host, CPU, counters and notes (also the
/// Markdown report's list, `report::doctor_md`).
pub fn facts_lines(d: &DoctorDoc) -> String {
    let mut s = String::new();
    s.push_str(&format!("version {}; source {}\n", d.version, d.source));
    if let Some(sem) = &d.semaphores {
        s.push_str(&format!("SEMAPHORES: {sem}\n"));
    }
    if let Some(b) = &d.burst {
        s.push_str(&sampler_lines(b));
    }
    if let Some(r) = &d.rt {
        s.push_str(&super::rt::text(r));
    }
    if let Some(h) = &d.host {
        s.push_str(&host_line(h));
    }
    if let Some(c) = &d.cpu_model {
        s.push_str(&format!("spin model CPU: {c}\n"));
    }
    if let Some(b) = &d.burst {
        s.push_str(&format!(
            "Questions {}/s (the sampler's own removed), Threads_connected max {:.0}, row-lock waits max {:.0}\n",
            num(b.questions_per_s), b.threads_connected_max, b.row_lock_waits_max
        ));
    }
    if let Some(r) = d.pfs_instruments_restored {
        if !r {
            s.push_str(
                "performance_schema instruments NOT restored: see the statements printed above\n",
            );
        }
    }
    for n in &d.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// A heading wrapped to `width` and underlined to its widest line.
fn heading(s: &mut String, t: &str, width: usize) {
    let mut h = String::new();
    wrapped(&mut h, t, "", "  ", width);
    let under = h
        .lines()
        .map(textwrap::core::display_width)
        .max()
        .unwrap_or(0);
    s.push_str(&h);
    s.push_str(&"=".repeat(under));
    s.push('\n');
}

/// The burst sampler: what it achieved and cost, and the running threads it saw.
fn sampler_lines(b: &BurstStats) -> String {
    let server_cost = match b.sampler_server_measured_pct {
        Some(m) => format!("server {m:.2}% of a core (measured)"),
        None => format!("server <= {:.1}% of a core", b.sampler_server_pct),
    };
    let mut s = match &b.proc_running {
        Some(p) => proc_sampler_lines(b, p, &server_cost),
        None => format!(
            "burst sampler: {} samples over {:.1} s, {:.0} Hz achieved of {:.0}, longest gap {:.1} ms; own cost: client {:.2}% of a core, {server_cost} ({:.0} us per sample query){}\n",
            b.samples,
            b.window_s,
            b.achieved_hz,
            b.target_hz,
            b.longest_gap_ms,
            b.sampler_cpu_pct,
            b.sampler_query_p50_us,
            if b.interrupted { " (cut short)" } else { "" }
        ),
    };
    s.push_str(&format!(
        "Threads_running from SQL (own session excluded): p50 {}, p99 {}, max {}; a 1 s monitor would have seen p50 {}, max {}\n",
        num(b.threads_running.p50), num(b.threads_running.p99), num(b.threads_running.max),
        num(b.monitor_1s.p50), num(b.monitor_1s.max)
    ));
    s
}

/// The sampler lines when running threads were also counted from /proc.
fn proc_sampler_lines(b: &BurstStats, p: &ProcStats, server_cost: &str) -> String {
    let mut s = format!(
        "burst sampler: running threads from /proc {} samples over {:.1} s, {:.0} Hz achieved of {:.0}, longest gap {:.1} ms; \
         Threads_running etc. from SQL {} samples, {:.1} Hz achieved of {:.1}, longest gap {:.1} ms; \
         own cost: client {:.2}% of a core, {server_cost} ({:.0} us per SQL sample){}\n",
        p.samples,
        b.window_s,
        p.achieved_hz,
        p.target_hz,
        p.longest_gap_ms,
        b.samples,
        b.achieved_hz,
        b.sql_target_hz.unwrap_or(b.target_hz),
        b.longest_gap_ms,
        b.sampler_cpu_pct,
        b.sampler_query_p50_us,
        if b.interrupted { " (cut short)" } else { "" }
    );
    s.push_str(&format!(
        "running threads from /proc (server threads in state R, background ones included): p50 {}, p99 {}, max {} of {:.0} threads; \
         above {:.0} cores {} time(s), {:.0}% of the window; a 1 s monitor would have seen p50 {}, max {}\n",
        num(p.running.p50), num(p.running.p99), num(p.running.max), p.threads_max,
        b.burst_threshold, p.bursts, p.time_above_threshold_pct,
        num(p.monitor_1s.p50), num(p.monitor_1s.max)
    ));
    s
}

/// The host line: CPU, kernel and the server process.
fn host_line(h: &HostFacts) -> String {
    format!(
        "host ({}): {} {}, {} CPUs, cache line {} B, kernel {}{}\n",
        h.source,
        h.arch,
        h.cpu_model_name.as_deref().unwrap_or("unknown CPU"),
        h.online_cpus
            .map(|n| n.to_string())
            .unwrap_or_else(|| "?".into()),
        h.cache_line_bytes
            .map(|n| n.to_string())
            .unwrap_or_else(|| "?".into()),
        h.kernel_release.as_deref().unwrap_or("?"),
        match (h.server_pid, &h.server_comm) {
            (Some(p), Some(c)) => format!(", server process {c} pid {p}"),
            _ => String::new(),
        }
    )
}

/// One finding wrapped to `width`: id and title (the cause), what to do, the statements and
/// option-file lines (the fix), then why and the evidence.
fn finding_text(f: &Finding, width: usize) -> String {
    let mut s = String::new();
    wrapped(&mut s, &format!("[{}] {}", f.id, f.title), "", "  ", width);
    wrapped(&mut s, &f.what_to_do, "  do: ", "    ", width);
    for st in &f.statements {
        for (k, l) in st.lines().enumerate() {
            let first = if k == 0 { "  run: " } else { "       " };
            wrapped(&mut s, l, first, "         ", width);
        }
    }
    if !f.option_file.is_empty() {
        s.push_str("  option file [mysqld]:\n");
        for l in &f.option_file {
            wrapped(&mut s, l, "       ", "         ", width);
        }
    }
    wrapped(&mut s, &f.why, "  why: ", "    ", width);
    if !f.evidence.is_empty() {
        let e: Vec<String> = f
            .evidence
            .iter()
            .map(|e| {
                format!(
                    "{} {}{}",
                    e.name,
                    num(e.value),
                    if e.unit.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", e.unit)
                    }
                )
            })
            .collect();
        items(&mut s, &e, "  evidence: ", "    ", width);
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::wrapped;

    #[test]
    fn wrapping_keeps_hyphenated_words_whole() {
        let text = "remove `--innodb-spin-wait-delay` from the server's command line; \
                    up to 25.18 us (23.16 us-27.19 us within the noise)";
        // From the narrowest width the option fits on a line of its own (after the indent).
        for width in 31..=80 {
            let mut s = String::new();
            wrapped(&mut s, text, "  do: ", "    ", width);
            assert!(
                s.lines().any(|l| l.contains("`--innodb-spin-wait-delay`")),
                "width {width}: the option was cut:\n{s}"
            );
            assert!(
                s.lines().any(|l| l.contains("us-27.19")),
                "width {width}: the range was cut:\n{s}"
            );
            assert!(
                s.lines().all(|l| l.chars().count() <= width),
                "width {width}: a line is wider:\n{s}"
            );
        }
        // A word longer than the line is still cut, so no line is wider than the terminal.
        let mut s = String::new();
        wrapped(&mut s, "aaaaaaaaaa-bbbbbbbbbb-cccccccccc", "", "", 12);
        assert!(s.lines().all(|l| l.chars().count() <= 12), "{s}");
    }
}
