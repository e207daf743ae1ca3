//! Statement fingerprints: a COM_QUERY's text with literals replaced, so statements that differ
//! only in values group together (the idea of pt-fingerprint). Pure.

/// Longest fingerprint kept (characters).
pub const FINGERPRINT_CAP: usize = 200;

/// Lowercase, comments dropped, strings and numbers as `?`, `IN (?, ?, ...)` and
/// `VALUES (...), (...)` lists folded, runs of white space as one space.
pub fn fingerprint(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(c.len().min(FINGERPRINT_CAP + 8));
    let mut i = 0;
    let push_space = |out: &mut String| {
        if !out.is_empty() && !out.ends_with(' ') {
            out.push(' ');
        }
    };
    while i < c.len() && out.len() < FINGERPRINT_CAP {
        let ch = c[i];
        match ch {
            '\'' | '"' => {
                // A string literal (doubled quotes and backslash escapes inside).
                i += 1;
                while i < c.len() {
                    if c[i] == '\\' {
                        i += 2;
                        continue;
                    }
                    if c[i] == ch {
                        if c.get(i + 1) == Some(&ch) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                out.push('?');
            }
            '`' => {
                let end = c[i + 1..]
                    .iter()
                    .position(|&x| x == '`')
                    .map_or(c.len(), |p| i + 2 + p);
                out.extend(c[i..end.min(c.len())].iter().flat_map(|x| x.to_lowercase()));
                i = end;
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let rest: String = c[i + 2..].iter().collect();
                i = rest
                    .find("*/")
                    .map_or(c.len(), |p| i + 2 + rest[..p].chars().count() + 2);
                push_space(&mut out);
            }
            '#' => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '-' if c.get(i + 1) == Some(&'-') && c.get(i + 2).is_none_or(|x| x.is_whitespace()) => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            x if x.is_ascii_digit()
                && !out
                    .chars()
                    .last()
                    .is_some_and(|p| p.is_alphanumeric() || p == '_') =>
            {
                while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                    i += 1;
                }
                out.push('?');
            }
            x if x.is_whitespace() => {
                push_space(&mut out);
                i += 1;
            }
            x => {
                out.extend(x.to_lowercase());
                i += 1;
            }
        }
    }
    fold_lists(out.trim())
}

/// `(?, ?, ?)` -> `(?+)` and repeated `(?+), (?+)` value lists -> one.
fn fold_lists(s: &str) -> String {
    let mut s = s.replace("( ", "(").replace(" )", ")");
    for pat in ["?, ?", "?,?"] {
        while s.contains(pat) {
            s = s.replace(pat, "?");
        }
    }
    s = s.replace("(?)", "(?+)");
    for pat in ["(?+), (?+)", "(?+),(?+)"] {
        while s.contains(pat) {
            s = s.replace(pat, "(?+)");
        }
    }
    s.chars().take(FINGERPRINT_CAP).collect()
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn literals_lists_comments_and_case() {
        assert_eq!(
            fingerprint(b"SELECT c FROM sbtest1 WHERE id=4711"),
            "select c from sbtest1 where id=?"
        );
        assert_eq!(
            fingerprint(b"select * from t where a in (1, 2,3) and b = 'x''y' /* c */ -- d"),
            "select * from t where a in (?+) and b = ?"
        );
        assert_eq!(
            fingerprint(b"INSERT INTO t2 VALUES (1,'a'),(2,'b')"),
            "insert into t2 values (?+)"
        );
        assert_eq!(fingerprint(b"SELECT  @@version\n"), "select @@version");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let f = fingerprint(&b);
            proptest::prop_assert!(f.chars().count() <= super::FINGERPRINT_CAP);
        }
    }
}
