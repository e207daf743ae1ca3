//! The layer table of docs/ARCHITECTURE.md, checked against the imports of `src/`.
//!
//! Every top-level module has a rank; a module may import only modules of a lower rank. No
//! arrow runs upward today (`KNOWN_UPWARD` is empty, issue 26); the test fails on any upward
//! arrow not in that list and on a listed arrow that is gone (so the list only shrinks). It
//! also fails on a cycle between two files, other than those in `KNOWN_FILE_CYCLES`.
//!
//! Imports are read as text: every `crate::a::b` path and every `super::x` path in a file
//! (strings and trailing comments included, which errs on the side of seeing an arrow; comment
//! lines left out), up to a file's first `#[cfg(test)]`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Rank of each top-level module of `src/` (higher may import lower).
const RANKS: &[(&str, u32)] = &[
    // plain data, units, errors, files: below everything
    ("error", 0),
    ("units", 0),
    ("globals", 0),
    // the one secret filter (passwords out of everything printed or saved)
    ("secret", 0),
    // the progress trait engines call (the CLI's `progress` implements it)
    ("meter", 0),
    ("files", 1),
    // the seam around a MySQL session (the journal, the change guard and the engines take it)
    ("session", 1),
    // the MySQL wire protocol (packets, answers, commands), shared by load and rt
    ("proto", 1),
    // pure models and statistics
    ("spin", 2),
    ("analysis", 2),
    // this machine and the journal
    ("cpu", 3),
    ("rt", 3),
    ("profile", 3),
    ("journal", 3),
    ("interrupt", 4),
    // the one change-guard protocol (SET GLOBAL, performance_schema instruments)
    ("change", 4),
    // MySQL access and load
    ("server", 5),
    ("load", 5),
    // engines
    ("doctor", 6),
    ("sweep", 6),
    ("lab", 6),
    ("fleet", 7),
    ("tune", 7),
    ("watch", 7),
    // every `spinscope.*` document type, reachable from one module (today mostly re-exported
    // from the engines that build them: `doc` ranks above them until the types move down)
    ("doc", 8),
    // renderers take typed documents, through `doc` only
    ("report", 9),
    // the CLI and its progress display
    ("cli", 10),
    ("lib", 11),
    ("main", 11),
];

/// Upward arrows still in the tree (from, to): none since issue 26, and none to be added (move
/// the helper down, or hand the engine a trait, instead).
const KNOWN_UPWARD: &[(&str, &str)] = &[];

/// File cycles still in the tree, each as its sorted list of module paths.
const KNOWN_FILE_CYCLES: &[&[&str]] = &[];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/` with its module path (`load::wire::events`).
fn source_files() -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).expect("read src") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = src_dir();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).expect("under src").with_extension("");
            let mut parts: Vec<String> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if parts.len() > 1 && parts.last().map(String::as_str) == Some("mod") {
                parts.pop();
            }
            (parts.join("::"), p)
        })
        .collect()
}

/// The identifiers of each path that follows `prefix` in `text`; a group `a::{b, c::d}` gives
/// one path per member (`a::b`, `a::c::d`).
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        read_path(rest, Vec::new(), &mut out);
    }
    out
}

/// Reads one path (and the members of a `{...}` group after it) from the start of `s`.
fn read_path(mut s: &str, mut segs: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        s = s.trim_start();
        if let Some(group) = s.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            for member in body.split(',') {
                read_path(member, segs.clone(), out);
            }
            return;
        }
        let n = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        if n == 0 {
            break;
        }
        segs.push(s[..n].to_string());
        s = &s[n..];
        match s.strip_prefix("::") {
            Some(t) => s = t,
            None => break,
        }
    }
    if !segs.is_empty() {
        out.push(segs);
    }
}

/// The longest module path among `modules` that prefixes `segs`.
fn resolve(modules: &BTreeSet<String>, segs: &[String]) -> Option<String> {
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| modules.contains(m))
}

/// File-to-file imports (module paths), leaving out a parent's arrows to its own children
/// (`mod x; pub use x::Y;` is structure, not an import).
fn file_edges() -> BTreeMap<String, BTreeSet<String>> {
    let files = source_files();
    let modules: BTreeSet<String> = files.keys().cloned().collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &files {
        let whole = fs::read_to_string(path).expect("read source");
        // Unit tests (an inline `#[cfg(test)]` module, last in a file) are not layering.
        let code = whole.split("#[cfg(test)]").next().unwrap_or(&whole);
        // Comment lines (doc links included) are not imports.
        let text: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.as_str();
        // `super` of `a::b` (a file b.rs or a directory b/mod.rs) is `a`.
        let mut parent: Vec<String> = module.split("::").map(String::from).collect();
        parent.pop();
        let mut targets = Vec::new();
        for segs in paths_after(text, "crate::") {
            targets.push(segs);
        }
        for segs in paths_after(text, "super::") {
            let mut full = parent.clone();
            full.extend(segs.into_iter().filter(|s| s != "super"));
            targets.push(full);
        }
        for segs in targets {
            let Some(to) = resolve(&modules, &segs) else {
                continue;
            };
            let child_of_this = to.starts_with(&format!("{module}::"));
            if to != *module && !child_of_this {
                edges.entry(module.clone()).or_default().insert(to);
            }
        }
    }
    edges
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

fn rank(module: &str) -> u32 {
    RANKS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, r)| *r)
        .unwrap_or_else(|| {
            panic!("module `{module}` has no rank: add it to RANKS in tests/meta/layers.rs and to docs/ARCHITECTURE.md")
        })
}

#[test]
fn no_new_upward_imports_and_the_known_ones_are_still_there() {
    let mut upward: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in file_edges() {
        for to in tos {
            let (a, b) = (top(&from), top(&to));
            if a != b && rank(a) <= rank(b) {
                upward
                    .entry((a.to_string(), b.to_string()))
                    .or_default()
                    .insert(format!("{from} -> {to}"));
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN_UPWARD
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<String> = upward
        .iter()
        .filter(|(k, _)| !known.contains(*k))
        .map(|((a, b), files)| {
            format!(
                "{a} -> {b} ({})",
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        new.is_empty(),
        "imports that run up the layer table (docs/ARCHITECTURE.md): {new:#?}"
    );
    let gone: Vec<&(String, String)> = known.iter().filter(|k| !upward.contains_key(*k)).collect();
    assert!(
        gone.is_empty(),
        "these upward arrows are gone: take them out of KNOWN_UPWARD: {gone:?}"
    );
}

/// Strongly connected components of more than one file (Tarjan, iterative enough for a tree
/// of a few hundred files).
fn file_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            if let Some(ws) = self.edges.get(v) {
                for w in ws {
                    let w = w.as_str();
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let l = self.low[w].min(self.low[v]);
                        self.low.insert(v, l);
                    } else if self.on.contains(w) {
                        let l = self.index[w].min(self.low[v]);
                        self.low.insert(v, l);
                    }
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v.as_str());
        }
    }
    t.out
}

#[test]
fn no_new_file_cycles() {
    let cycles = file_cycles(&file_edges());
    let known: Vec<Vec<String>> = KNOWN_FILE_CYCLES
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let new: Vec<&Vec<String>> = cycles.iter().filter(|c| !known.contains(c)).collect();
    assert!(new.is_empty(), "files that import each other: {new:?}");
    let gone: Vec<&Vec<String>> = known.iter().filter(|c| !cycles.contains(c)).collect();
    assert!(
        gone.is_empty(),
        "these file cycles are gone: take them out of KNOWN_FILE_CYCLES: {gone:?}"
    );
}

#[test]
fn the_reader_sees_a_planted_upward_arrow() {
    // The check must be able to fail: a path into a higher module is seen and ranked upward.
    let paths = paths_after(
        "use crate::report::table; use crate::a::{b, c::d};",
        "crate::",
    );
    let want = [vec!["report", "table"], vec!["a", "b"], vec!["a", "c", "d"]];
    assert_eq!(
        paths,
        want.map(|p| p.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    assert!(rank("spin") < rank("report"));
    let mut edges = BTreeMap::new();
    edges.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    edges.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        file_cycles(&edges),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
}
