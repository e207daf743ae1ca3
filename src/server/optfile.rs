//! MySQL/MariaDB option files (`my.cnf`), read the way the mysql client reads them.
//!
//! Files, in order (later values win): `/etc/my.cnf`, `/etc/mysql/my.cnf`,
//! `--defaults-extra-file`, `~/.my.cnf`; `--defaults-file` reads that one file instead, and
//! `--no-defaults` none. Groups: `[mysql]`, `[mariadb-client]`, `[client]`, `[client-server]`,
//! `[client-mariadb]` and spinscope's own `[spinscope]` (names are case-insensitive).
//! Syntax: `#` and `;` comment lines, `#` inline comments outside quotes, values in matching
//! single or double quotes, the escapes `\b \t \n \r \\ \s \" \'`, option names with `_` or
//! `-` and an optional `loose-` prefix, `!include FILE` and `!includedir DIR` (its `*.cnf`
//! files in name order). Sources: docs/REFERENCE.md ("Option files").
//!
//! Includes are bounded: a file that includes itself (directly or through others) is read
//! once, nesting stops at [`MAX_DEPTH`], at most [`MAX_FILES`] files are read, each at most
//! [`FILE_CAP`] bytes. A missing default file or include is skipped, as the client does; a
//! missing `--defaults-file` / `--defaults-extra-file` is an error.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The groups the MariaDB command-line client reads (`mariadb --help --verbose`), plus
/// spinscope's own.
pub const CLIENT_GROUPS: &[&str] = &[
    "mysql",
    "mariadb-client",
    "client",
    "client-server",
    "client-mariadb",
    "spinscope",
];
/// Deepest `!include` nesting followed.
pub const MAX_DEPTH: usize = 10;
/// Most files read for one command (includes and included directories count).
pub const MAX_FILES: usize = 256;
/// Largest option file read (real ones are a few KiB).
pub const FILE_CAP: u64 = 1 << 20;

/// Which option files to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The default files, with an optional `--defaults-extra-file` before `~/.my.cnf`.
    Standard { extra: Option<PathBuf> },
    /// `--defaults-file`: this file only.
    Only(PathBuf),
    /// `--no-defaults`.
    None,
}

/// One option read from a file.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    /// Normalised name: lower case, `-` for `_`, without `loose-`.
    pub key: String,
    /// `None` for a bare `name` line (a switch, or `password` meaning "prompt").
    pub value: Option<String>,
    pub file: PathBuf,
    pub line: usize,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match (&self.value, self.key.as_str()) {
            (Some(_), k) if crate::secret::is_secret_key(k) => Some(crate::secret::MASK),
            (v, _) => v.as_deref(),
        };
        write!(
            f,
            "{}={:?} ({}:{})",
            self.key,
            v,
            self.file.display(),
            self.line
        )
    }
}

/// The options of the client groups, in reading order, and the files read.
#[derive(Debug, Default, Clone)]
pub struct Options {
    pub entries: Vec<Entry>,
    pub files: Vec<PathBuf>,
}

impl Options {
    /// The last value of an option (later files and lines win). `Some(None)`: given bare.
    pub fn get(&self, key: &str) -> Option<Option<&str>> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| e.value.as_deref())
    }

    /// The last password the files give, under any name the client reads as the password
    /// (`password`, `pass`, ... see [`crate::secret::is_password_alias`]). `Some(None)`: given
    /// bare (prompt).
    pub fn password(&self) -> Option<Option<&str>> {
        self.entries
            .iter()
            .rev()
            .find(|e| crate::secret::is_password_alias(&e.key))
            .map(|e| e.value.as_deref())
    }

    /// The last value as text (a bare option reads as "").
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).map(|v| v.unwrap_or(""))
    }

    /// Where the last value of an option came from, for messages (`FILE:LINE`).
    pub fn origin(&self, key: &str) -> String {
        self.entries
            .iter()
            .rev()
            .find(|e| e.key == key)
            .map(|e| format!("{}:{}", e.file.display(), e.line))
            .unwrap_or_default()
    }
}

/// The default files, in the client's order.
pub fn default_files(home: Option<&Path>, extra: Option<&Path>) -> Vec<PathBuf> {
    let mut v = vec![
        PathBuf::from("/etc/my.cnf"),
        PathBuf::from("/etc/mysql/my.cnf"),
    ];
    v.extend(extra.map(Path::to_path_buf));
    v.extend(home.map(|h| h.join(".my.cnf")));
    v
}

/// Read the option files of `src` for `groups`.
pub fn load(src: &Source, home: Option<&Path>, groups: &[&str]) -> Result<Options> {
    let mut r = Reader {
        groups,
        out: Options::default(),
        stack: Vec::new(),
    };
    match src {
        Source::None => {}
        Source::Only(f) => r.required(f, "--defaults-file")?,
        Source::Standard { extra } => {
            if let Some(x) = extra {
                // Fail before reading anything when the named file is missing.
                crate::files::refuse_special(x, "--defaults-extra-file")?;
                if !x.is_file() {
                    return Err(Error::bad_input(format!(
                        "--defaults-extra-file {}: no such file; give an existing option file",
                        x.display()
                    )));
                }
            }
            for f in default_files(home, extra.as_deref()) {
                if Some(&f) == extra.as_ref() {
                    r.required(&f, "--defaults-extra-file")?;
                } else if f.is_file() {
                    r.file(&f)?;
                }
            }
        }
    }
    Ok(r.out)
}

/// Parse one option file's text (includes are resolved against the file system).
pub fn parse_text(text: &str, file: &Path, groups: &[&str]) -> Result<Options> {
    let mut r = Reader {
        groups,
        out: Options::default(),
        stack: vec![file.to_path_buf()],
    };
    r.out.files.push(file.to_path_buf());
    r.text(text, file)?;
    Ok(r.out)
}

struct Reader<'a> {
    groups: &'a [&'a str],
    out: Options,
    stack: Vec<PathBuf>,
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl Reader<'_> {
    fn required(&mut self, f: &Path, flag: &str) -> Result<()> {
        // The input guard first: a FIFO or device says so, not "no such file".
        crate::files::refuse_special(f, flag)?;
        if !f.is_file() {
            return Err(Error::bad_input(format!(
                "{flag} {}: no such file; give an existing option file",
                f.display()
            )));
        }
        let text = crate::files::read_capped(f, FILE_CAP, flag)?;
        self.with_text(f, &text)
    }

    fn file(&mut self, f: &Path) -> Result<()> {
        // A default file or include that cannot be read is skipped, as the client does.
        match crate::files::read_capped(f, FILE_CAP, "option file") {
            Ok(text) => self.with_text(f, &text),
            Err(e) if e.to_string().contains("larger than") => Err(e),
            Err(_) => Ok(()),
        }
    }

    fn with_text(&mut self, f: &Path, text: &str) -> Result<()> {
        let c = canonical(f);
        if self.stack.contains(&c) {
            return Ok(()); // an include loop: this file is being read already
        }
        if self.out.files.len() >= MAX_FILES {
            return Err(Error::bad_input(format!(
                "option file {}: more than {MAX_FILES} option files through !include/!includedir; check for a runaway include",
                f.display()
            )));
        }
        self.out.files.push(f.to_path_buf());
        self.stack.push(c);
        let r = self.text(text, f);
        self.stack.pop();
        r
    }

    fn text(&mut self, text: &str, file: &Path) -> Result<()> {
        let at = |n: usize, why: &str| {
            Error::bad_input(format!("option file {} line {n}: {why}", file.display()))
        };
        let mut group: Option<bool> = None; // Some(wanted) once a group started
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(d) = line.strip_prefix('!') {
                self.directive(d, file, n)?;
                continue;
            }
            if let Some(rest) = line.strip_prefix('[') {
                let Some((name, after)) = rest.split_once(']') else {
                    return Err(at(n, "a group header without ']'; write [client]"));
                };
                let after = after.trim();
                if !(after.is_empty() || after.starts_with('#') || after.starts_with(';')) {
                    return Err(at(n, "text after a group header"));
                }
                let name = name.trim().to_ascii_lowercase();
                group = Some(self.groups.iter().any(|g| *g == name));
                continue;
            }
            match group {
                None => return Err(at(n, "an option before any [group]; put it under [client]")),
                Some(false) => continue,
                Some(true) => {}
            }
            let (k, v) = match line.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (strip_comment(line), None),
            };
            let mut key = k.trim().to_ascii_lowercase().replace('_', "-");
            if let Some(s) = key.strip_prefix("loose-") {
                key = s.to_string();
            }
            if key.is_empty() {
                return Err(at(n, "an option without a name"));
            }
            let value = v.map(value_of);
            self.out.entries.push(Entry {
                key,
                value,
                file: file.to_path_buf(),
                line: n,
            });
        }
        Ok(())
    }

    fn directive(&mut self, d: &str, file: &Path, n: usize) -> Result<()> {
        let (word, arg) = d.split_once(char::is_whitespace).unwrap_or((d, ""));
        let arg = Path::new(arg.trim());
        if arg.as_os_str().is_empty() {
            return Ok(());
        }
        let arg = if arg.is_relative() {
            file.parent().unwrap_or(Path::new(".")).join(arg)
        } else {
            arg.to_path_buf()
        };
        if self.stack.len() >= MAX_DEPTH {
            return Err(Error::bad_input(format!(
                "option file {} line {n}: !include nested more than {MAX_DEPTH} deep",
                file.display()
            )));
        }
        match word {
            "include" if arg.is_file() => self.file(&arg)?,
            "include" => {}
            "includedir" => {
                let Ok(rd) = std::fs::read_dir(&arg) else {
                    return Ok(());
                };
                let mut names: Vec<PathBuf> = rd
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "cnf") && p.is_file())
                    .take(MAX_FILES + 1)
                    .collect();
                names.sort();
                for p in names {
                    self.file(&p)?;
                }
            }
            _ => {} // unknown directives are ignored
        }
        Ok(())
    }
}

/// Cut an inline `#` comment that is outside quotes.
fn strip_comment(s: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut esc = false;
    for (i, c) in s.char_indices() {
        if esc {
            esc = false;
            continue;
        }
        match c {
            '\\' => esc = true,
            '"' | '\'' if quote == Some(c) => quote = None,
            '"' | '\'' if quote.is_none() => quote = Some(c),
            '#' if quote.is_none() => return &s[..i],
            _ => {}
        }
    }
    s
}

/// A value: inline comment cut, trimmed, matching outer quotes removed, escapes applied.
fn value_of(raw: &str) -> String {
    let v = strip_comment(raw).trim();
    let b = v.as_bytes();
    let v = if b.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[b.len() - 1] == b[0] {
        &v[1..v.len() - 1]
    } else {
        v
    };
    let mut out = String::with_capacity(v.len());
    let mut it = v.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('b') => out.push('\u{8}'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('s') => out.push(' '),
            Some(c @ ('\\' | '"' | '\'')) => out.push(c),
            Some(c) => {
                out.push('\\');
                out.push(c);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(text: &str) -> Options {
        parse_text(text, Path::new("/nonexistent/t.cnf"), CLIENT_GROUPS).unwrap()
    }

    #[test]
    fn values_like_my_print_defaults() {
        // Expected values as MariaDB 10.11's my_print_defaults prints them for the same lines.
        let o = opts(concat!(
            "  [Client]   # header comment\n",
            "a1 = \"x\\sy\"\n",
            "a2 = \"abc\" def\n",
            "a3 = x\"y#z\"w\n",
            "a4 =\n",
            "a5\n",
            " a6=  spaced value   \n",
            "a_7 = 'it''s'\n",
            "a8 = \"q\\\"q\"\n",
            "host = \"a # b\"  # trailing\n",
            "password = 'p#w' ; semicolon\n",
            "database = x\\sy\\\\z\\t!\\q  # c\n",
            "socket = foo#bar\n",
            "port=3307#c\n",
            "[mysqld]\nport=1\n",
            "[mysql]\nloose-ssl_mode = required\n",
        ));
        let v = |k: &str| o.value(k).unwrap_or("<none>").to_string();
        assert_eq!(v("a1"), "x y");
        assert_eq!(v("a2"), "\"abc\" def");
        assert_eq!(v("a3"), "x\"y#z\"w");
        assert_eq!(v("a4"), "");
        assert_eq!(o.get("a5"), Some(None));
        assert_eq!(v("a6"), "spaced value");
        assert_eq!(v("a-7"), "it''s");
        assert_eq!(v("a8"), "q\"q");
        assert_eq!(v("host"), "a # b");
        assert_eq!(v("password"), "'p#w' ; semicolon");
        assert_eq!(v("database"), "x y\\z\t!\\q");
        assert_eq!(v("socket"), "foo");
        assert_eq!(v("port"), "3307");
        assert_eq!(v("ssl-mode"), "required");
        assert!(!format!("{o:?}").contains("p#w"));
    }

    #[test]
    fn bad_layouts_name_file_and_line() {
        for (t, why) in [
            ("x=1\n[client]\n", "line 1: an option before any [group]"),
            ("[client\nx=1\n", "line 1: a group header without ']'"),
        ] {
            let e = parse_text(t, Path::new("/e/my.cnf"), CLIENT_GROUPS)
                .unwrap_err()
                .to_string();
            assert!(e.contains("/e/my.cnf") && e.contains(why), "{e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(t in "[\\[\\]a-z_=\"'#;!\\\\ \n-]{0,300}") {
            let _ = parse_text(&t, Path::new("/nonexistent/p.cnf"), CLIENT_GROUPS);
        }
    }
}
