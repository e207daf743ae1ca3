//! Password literals out of statement texts that spinscope writes (watch's `processlist.tsv`,
//! INNODB STATUS in captures and doctor snapshots), as the mysql client keeps statements that
//! name a password out of its history. Pure.
//!
//! A quoted literal (`'...'` or `"..."`) is replaced by `'<redacted>'` when a word naming a
//! password came before it in the same statement: `IDENTIFIED` (`IDENTIFIED BY`, `IDENTIFIED
//! WITH plugin BY|AS`, `IDENTIFIED VIA plugin USING`) or any word containing `PASSWORD`
//! (`PASSWORD('...')`, `OLD_PASSWORD`, `SET PASSWORD ... =`, `MASTER_PASSWORD=`,
//! `SOURCE_PASSWORD=`, `PASSWORD=` in `START SLAVE`/`START REPLICA`). The statement ends at `;`,
//! or at the end of a line once such a literal was redacted (one processlist row per line).
//! Backquoted names and the words inside literals are not keywords; an unterminated literal
//! (a text cut short) is redacted to its end. This errs on the side of redacting: a literal
//! compared with a `password` column is redacted too.

use std::borrow::Cow;

/// What a redacted literal becomes (inside its quotes).
pub const REDACTED: &str = "<redacted>";

fn names_a_password(word: &str) -> bool {
    let w = word.to_ascii_uppercase();
    w == "IDENTIFIED" || w.contains("PASSWORD")
}

/// The end (exclusive) of the quoted text starting at `start` (a quote), and whether the
/// closing quote was found. A backslash escapes the next byte; a doubled quote is one quote.
fn quoted_end(b: &[u8], start: usize) -> (usize, bool) {
    let q = b[start];
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if q != b'`' => i += 2,
            c if c == q => {
                if b.get(i + 1) == Some(&q) {
                    i += 2;
                } else {
                    return (i + 1, true);
                }
            }
            _ => i += 1,
        }
    }
    (b.len(), false)
}

/// `text` with password literals replaced (borrowed when there is none).
pub fn redact_sql(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    // Copied to `out` up to here.
    let mut copied = 0;
    let mut armed = false;
    let mut redacted_since_armed = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' | b'`' => {
                let (end, closed) = quoted_end(b, i);
                if armed && c != b'`' {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(&text[copied..i]);
                    let q = c as char;
                    o.push(q);
                    o.push_str(REDACTED);
                    if closed {
                        o.push(q);
                    }
                    copied = end;
                    redacted_since_armed = true;
                }
                i = end;
            }
            b';' => {
                armed = false;
                i += 1;
            }
            b'\n' => {
                if redacted_since_armed {
                    armed = false;
                }
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                if names_a_password(&text[start..i]) {
                    armed = true;
                    redacted_since_armed = false;
                }
            }
            _ => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_literals_are_redacted_and_nothing_else() {
        let r = "'<redacted>'";
        for (input, want) in [
            (
                "CREATE USER 'app'@'%' IDENTIFIED BY 's3cr3t'",
                format!("CREATE USER 'app'@'%' IDENTIFIED BY {r}"),
            ),
            (
                "ALTER USER app IDENTIFIED BY 'it''s \\' hidden'",
                format!("ALTER USER app IDENTIFIED BY {r}"),
            ),
            (
                "GRANT ALL ON *.* TO 'a'@'h' identified by \"pw\"",
                "GRANT ALL ON *.* TO 'a'@'h' identified by \"<redacted>\"".to_string(),
            ),
            (
                "SET PASSWORD FOR 'bob'@'%' = PASSWORD('hunter2')",
                format!("SET PASSWORD FOR {r}@{r} = PASSWORD({r})"),
            ),
            (
                "SET PASSWORD = 'plain'",
                format!("SET PASSWORD = {r}"),
            ),
            (
                "SELECT OLD_PASSWORD('x'), 1",
                format!("SELECT OLD_PASSWORD({r}), 1"),
            ),
            (
                "CHANGE MASTER TO MASTER_HOST='db1', MASTER_USER='repl', MASTER_PASSWORD='replpw', MASTER_PORT=3306",
                format!("CHANGE MASTER TO MASTER_HOST='db1', MASTER_USER='repl', MASTER_PASSWORD={r}, MASTER_PORT=3306"),
            ),
            (
                "CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = 'p2', SOURCE_HOST='h'",
                format!("CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = {r}, SOURCE_HOST={r}"),
            ),
            (
                "START SLAVE USER='repl' PASSWORD='p3'",
                format!("START SLAVE USER='repl' PASSWORD={r}"),
            ),
            (
                "CREATE USER u IDENTIFIED WITH caching_sha2_password BY 'p4'",
                format!("CREATE USER u IDENTIFIED WITH caching_sha2_password BY {r}"),
            ),
            (
                "CREATE USER u IDENTIFIED WITH mysql_native_password AS '*AB12'",
                format!("CREATE USER u IDENTIFIED WITH mysql_native_password AS {r}"),
            ),
            (
                "CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('p5')",
                format!("CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD({r})"),
            ),
            (
                "create user u identified by\n'split'",
                format!("create user u identified by\n{r}"),
            ),
            // Cut short in the middle of the secret (processlist Info is truncated).
            (
                "ALTER USER u IDENTIFIED BY 'trunc",
                "ALTER USER u IDENTIFIED BY '<redacted>".to_string(),
            ),
            // The statement ends: later literals are kept.
            (
                "SET PASSWORD = 'a'; SELECT 'keep'",
                format!("SET PASSWORD = {r}; SELECT 'keep'"),
            ),
            // One processlist row per line: the next row is not redacted.
            (
                "1\troot\tALTER USER x IDENTIFIED BY 'p'\n2\tapp\tSELECT 'visible'",
                format!("1\troot\tALTER USER x IDENTIFIED BY {r}\n2\tapp\tSELECT 'visible'"),
            ),
            // Not keywords: in a literal, in backquotes.
            (
                "SELECT 'password', `identified` FROM t WHERE a = 'b'",
                "SELECT 'password', `identified` FROM t WHERE a = 'b'".to_string(),
            ),
            (
                "UPDATE t SET c = 'x' WHERE id = 1",
                "UPDATE t SET c = 'x' WHERE id = 1".to_string(),
            ),
        ] {
            assert_eq!(redact_sql(input), want, "{input:?}");
            // Redacting twice changes nothing more.
            assert_eq!(redact_sql(&want), want, "{want:?}");
        }
        assert!(matches!(redact_sql("SELECT 1"), Cow::Borrowed(_)));
    }

    #[test]
    fn innodb_status_statements_are_redacted() {
        let status = "---TRANSACTION 421, ACTIVE 3 sec\nMySQL thread id 9, OS thread handle 1, query id 77 localhost root\nGRANT SELECT ON db.* TO 'r'@'%' IDENTIFIED BY 'topsecret'\n---TRANSACTION 422\n";
        let got = redact_sql(status);
        assert!(!got.contains("topsecret"), "{got}");
        assert!(got.contains("---TRANSACTION 422"), "{got}");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,120}") {
            let _ = redact_sql(&s);
        }

        #[test]
        fn never_keeps_a_password_literal(s in "[^'\"`\\\\]{0,80}", secret in "[a-z0-9]{6,12}") {
            let stmt = format!("{s};CREATE USER x IDENTIFIED BY '{secret}'");
            let r = redact_sql(&stmt);
            let tail = r.rsplit(';').next().unwrap_or("");
            proptest::prop_assert!(!tail.contains(&secret), "{}", r);
        }
    }
}
