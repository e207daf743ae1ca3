//! The documents' links resolve: every relative link `[text](path)` or `[text](path#anchor)` in
//! README.md and docs/*.md names a file of the repository, and an anchor names a heading of
//! that Markdown file as GitHub makes anchors of headings (lowercase; letters, digits, `-` and
//! `_` kept, spaces to `-`, the rest dropped; a repeated heading gets `-1`, `-2` ...). The README
//! links into docs/USAGE.md for everything it no longer says itself, so a renamed heading there
//! would otherwise leave the start page pointing nowhere.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown pages checked: the README and every docs/*.md.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    v.extend(docs);
    v
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code blocks).
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut code = false;
    for l in text.lines() {
        if l.starts_with("```") {
            code = !code;
            continue;
        }
        if code || !l.starts_with('#') {
            continue;
        }
        let base = slug(l.trim_start_matches('#'));
        let mut a = base.clone();
        let mut n = 0;
        while seen.contains(&a) {
            n += 1;
            a = format!("{base}-{n}");
        }
        seen.insert(a);
    }
    seen
}

/// The targets of a Markdown text's inline links and images, outside code blocks and code
/// spans: `(target)` right after `]`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut code = false;
    for l in text.lines() {
        if l.starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        // Code spans hold examples, not links.
        let plain: String = l.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug(" The watch service (#29)"), "the-watch-service-29");
    assert_eq!(
        slug("What spinscope changes on a server, and the way back"),
        "what-spinscope-changes-on-a-server-and-the-way-back"
    );
    assert_eq!(slug("`doctor` over a fleet"), "doctor-over-a-fleet");
    let a = anchors("# A\n## B\n```\n# not a heading\n```\n## B\n");
    assert!(
        a.contains("a") && a.contains("b") && a.contains("b-1"),
        "{a:?}"
    );
    assert!(!a.contains("not-a-heading"));
    assert_eq!(
        links("see [x](docs/USAGE.md#rt) and `[y](no)` and ![i](img/a.png)"),
        ["docs/USAGE.md#rt", "img/a.png"]
    );
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                dir.join(path)
            };
            let name = page.strip_prefix(root()).unwrap().display().to_string();
            if !file.exists() {
                bad.push(format!("{name}: ({target}): no file {}", file.display()));
                continue;
            }
            if let Some(a) = anchor {
                let there = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&there).contains(a) {
                    bad.push(format!("{name}: ({target}): no heading with anchor #{a}"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "links that go nowhere:\n  {}",
        bad.join("\n  ")
    );
    // The README's links into the reference alone are more than this.
    assert!(checked >= 20, "only {checked} relative links found");
}
