//! The one Markdown writer: escaping, prose filled to 80 columns, headings, lists, tables and
//! code blocks, for every Markdown spinscope writes (`report --format md`, `doctor
//! --markdown`). Text from a document goes through [`escape`], so it renders as itself: no
//! markup, no HTML entity, no raw HTML. Pure.

use std::fmt::Write;

/// Escape text for Markdown (a table cell, list item or paragraph): the characters CommonMark
/// would read as markup get a backslash, so the text renders as itself with no HTML entity and
/// no raw HTML; line breaks become spaces.
pub fn escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut o = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '\\' | '`' | '*' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' => {
                o.push('\\');
                o.push(c);
            }
            // `_` inside a word (innodb_spin_wait_delay) is no emphasis in GFM: left as is.
            '_' if !(word(i.checked_sub(1)) && word(Some(i + 1))) => o.push_str("\\_"),
            '&' => o.push_str("\\&"),
            '\n' | '\r' => o.push(' '),
            _ => o.push(c),
        }
    }
    o
}

/// Columns of a Markdown prose line (a terminal's width; CommonMark reads a line break inside
/// a paragraph or list item as a space).
pub const COLS: usize = 80;

/// Words of `text` filled into lines of [`COLS`], the first after `first`, the rest after
/// `more`. A word that Markdown would read as markup at the start of a line (a list marker, a
/// numbered item, a setext underline) never starts one; a word longer than the line stands
/// alone.
pub fn wrap(text: &str, first: &str, more: &str) -> String {
    let mut out = String::from(first);
    let mut col = first.chars().count();
    let mut empty = true;
    for w in text.split(' ').filter(|w| !w.is_empty()) {
        let n = w.chars().count();
        let marker = w.chars().all(|c| matches!(c, '-' | '+' | '=' | '*' | '_'))
            || (w.len() <= 10
                && w.ends_with(['.', ')'])
                && w[..w.len() - 1].chars().all(|c| c.is_ascii_digit()));
        let safe = !marker;
        if !empty && col + 1 + n > COLS && safe {
            out.push('\n');
            out.push_str(more);
            col = more.chars().count();
            empty = true;
        }
        if !empty {
            out.push(' ');
            col += 1;
        }
        out.push_str(w);
        col += n;
        empty = false;
    }
    out
}

/// A heading of `level` (1 is `#`) whose text is already Markdown (escape document text first).
pub fn heading(out: &mut String, level: usize, markdown: &str) {
    let _ = write!(out, "{} {markdown}\n\n", "#".repeat(level));
}

/// A paragraph of plain text, escaped and filled.
pub fn para(out: &mut String, text: &str) {
    para_md(out, &escape(text));
}

/// A paragraph that is already Markdown (a bold lead-in before escaped text), filled.
pub fn para_md(out: &mut String, markdown: &str) {
    let _ = write!(out, "{}\n\n", wrap(markdown, "", ""));
}

/// A bullet list of plain-text items, each escaped and filled.
pub fn list(out: &mut String, items: &[String]) {
    for it in items {
        let _ = writeln!(out, "{}", wrap(&escape(it), "- ", "  "));
    }
    out.push('\n');
}

/// Lines to copy as they are, in a fenced block (`lang` may be empty); a fence inside the
/// lines cannot end the block.
pub fn code(out: &mut String, lang: &str, lines: &[String]) {
    let body = lines.join("\n").replace("```", "'''");
    let _ = write!(out, "```{lang}\n{body}\n```\n\n");
}

/// A column's alignment in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table of plain-text cells (escaped); rows shorter than the header are padded.
/// `align` gives each column's alignment (a missing one is left: the plain `---`).
pub fn table(out: &mut String, head: &[String], rows: &[Vec<String>], align: &[Align]) {
    let row = |r: &[String]| {
        format!(
            "| {} |",
            r.iter().map(|c| escape(c)).collect::<Vec<_>>().join(" | ")
        )
    };
    let _ = writeln!(out, "{}", row(head));
    let rule: String = (0..head.len())
        .map(|i| match align.get(i) {
            Some(Align::Right) => "---:|",
            _ => "---|",
        })
        .collect();
    let _ = writeln!(out, "|{rule}");
    for r in rows {
        let mut r = r.clone();
        r.resize(head.len(), String::new());
        let _ = writeln!(out, "{}", row(&r));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_text_renders_as_itself() {
        assert_eq!(
            escape("a|b <i>*x*</i> & #1"),
            "a\\|b \\<i\\>\\*x\\*\\</i\\> \\& \\#1"
        );
        assert_eq!(
            escape("innodb_spin_wait_delay _x_"),
            "innodb_spin_wait_delay \\_x\\_"
        );
        let mut s = String::new();
        table(
            &mut s,
            &["name".into(), "value".into()],
            &[vec!["a|b".into()]],
            &[Align::Left, Align::Right],
        );
        assert_eq!(s, "| name | value |\n|---|---:|\n| a\\|b |  |\n\n");
        let mut s = String::new();
        code(&mut s, "sql", &["SELECT 1;".into(), "```".into()]);
        assert_eq!(s, "```sql\nSELECT 1;\n'''\n```\n\n");
    }

    #[test]
    fn prose_is_filled_and_no_line_starts_with_a_marker() {
        let text = format!(
            "{} - {}",
            "word ".repeat(15).trim(),
            "more ".repeat(10).trim()
        );
        let w = wrap(&text, "- ", "  ");
        assert!(w.lines().all(|l| l.chars().count() <= COLS), "{w}");
        assert!(
            w.lines().skip(1).all(|l| !l.trim_start().starts_with("- ")),
            "{w}"
        );
    }
}
