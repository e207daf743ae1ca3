//! The `--inventory` file of `doctor` and `watch`: one server per line, `[NAME] TARGET`, where TARGET is any
//! form `server::conn::parse_target_arg` takes; blank lines and `#` comments are skipped. Pure.

use crate::error::{Error, Result};

/// `[NAME] TARGET` lines; blank lines and `#` comments skipped.
pub fn parse(text: &str, file: &str) -> Result<Vec<(Option<String>, String)>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        // `#` starts a comment at the line's start or after a space (a password may hold one).
        let mut prev_space = true;
        let cut = raw
            .char_indices()
            .find(|&(_, c)| {
                let hit = c == '#' && prev_space;
                prev_space = c.is_whitespace();
                hit
            })
            .map_or(raw.len(), |(i, _)| i);
        let line = raw[..cut].trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (name, target) = match words.as_slice() {
            [t] => (None, *t),
            [n, t] => (Some(n.to_string()), *t),
            _ => {
                return Err(Error::bad_input(format!(
                    "--inventory {file} line {}: expected `[NAME] TARGET`, got {} words",
                    i + 1,
                    words.len()
                )))
            }
        };
        crate::server::conn::parse_target_arg(target)
            .map_err(|e| Error::bad_input(format!("--inventory {file} line {}: {e}", i + 1)))?;
        out.push((name, target.to_string()));
    }
    if out.is_empty() {
        return Err(Error::bad_input(format!(
            "--inventory {file}: no servers in it; write one `[NAME] TARGET` per line"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inventory_lines_with_and_without_names() {
        let v = parse(
            "# fleet\n db1  root@127.0.0.1:3306 \n\nroot@/tmp/x.sock # local\n",
            "f",
        )
        .unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], (Some("db1".into()), "root@127.0.0.1:3306".into()));
        assert_eq!(v[1].0, None);
        let e = parse("a b c\n", "f").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("[NAME] TARGET"), "{e}");
        assert!(parse("# nothing\n", "f").is_err());
        let v = parse("mysql://u:p#w@db:3306\t# a comment\n", "f").unwrap();
        assert_eq!(v[0].1, "mysql://u:p#w@db:3306");
        let v = parse("mysql://u:p#w@db:3306 # a comment\n", "f").unwrap();
        assert_eq!(v[0].1, "mysql://u:p#w@db:3306");
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,200}") {
            let _ = parse(&s, "f");
        }
    }
}
