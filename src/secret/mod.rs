//! The one secret filter (issue 38): what decides that a value is a password and hides it,
//! for everything spinscope prints or saves. Pure.
//!
//! - [`is_secret_key`]: every option name the mysql and mariadb clients take a password from
//!   (`password`, its unique prefixes such as `pass`, `passwd`, `password1`..`3`,
//!   `ssl-key-password`, `ssl-passphrase`, any `loose-` form, `_` or `-`), plus other names
//!   that say secret.
//! - [`redact_url`] / [`redact_target`]: a server address with its user info and every
//!   password-carrying query parameter hidden.
//! - [`scrub`]: free text (an error line, a target read from a file) with `KEY=VALUE` of a
//!   secret key, URL user info and SQL password literals ([`redact_sql`]) hidden.
//! - [`scrub_json`]: the same over every string of a JSON document, and the value of every
//!   member whose name is a secret key (documents read from files: snapshots, host facts,
//!   probes, report inputs).
//!
//! It errs on the side of hiding: a value after a key that only looks like a password is
//! hidden too.

mod sql;

pub use sql::{redact_sql, REDACTED};

use serde_json::Value;

/// What a hidden value becomes.
pub const MASK: &str = "***";

/// Whether an option or parameter name carries a password: `password` and the unique
/// prefixes the clients' option parser accepts for it (`pass`, `passw`, ...), `passwd`,
/// `password1`..`3`, `ssl-key-password`, `ssl-passphrase`, `mysql-pwd`, any name containing
/// `secret`; case, `_`/`-` and the `loose-` prefix do not matter.
pub fn is_secret_key(key: &str) -> bool {
    let k = key
        .trim()
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('_', "-");
    let k = k.strip_prefix("loose-").unwrap_or(&k);
    // `pass`, `passw`, ...: the unique prefixes of `password` the option parser accepts.
    k.contains("pass") || k.contains("secret") || k == "pwd" || k.ends_with("-pwd")
}

/// Whether `key` is one of the names the client reads *as the password* of the connection:
/// `password` or a unique prefix of it of four letters or more (`pass`), `loose-` and `_`
/// forms included.
pub fn is_password_alias(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace('_', "-");
    let k = k.strip_prefix("loose-").unwrap_or(&k);
    k.len() >= 4 && "password".starts_with(k)
}

fn key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// The end of a value starting at `i`: a quoted value to its closing quote, else up to
/// whitespace, `&`, `,`, `;` or a quote.
fn value_end(b: &[u8], i: usize) -> usize {
    if let Some(&q) = b.get(i).filter(|&&c| c == b'\'' || c == b'"') {
        return b[i + 1..]
            .iter()
            .position(|&c| c == q)
            .map_or(b.len(), |p| i + 1 + p + 1);
    }
    b[i..]
        .iter()
        .position(|&c| c.is_ascii_whitespace() || matches!(c, b'&' | b',' | b';' | b'\'' | b'"'))
        .map_or(b.len(), |p| i + p)
}

/// `KEY=VALUE` (and `KEY: VALUE` in JSON-like text) with a secret key: the value hidden.
fn mask_key_values(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' {
            let mut k = i;
            while k > 0 && key_byte(b[k - 1]) {
                k -= 1;
            }
            if k < i && is_secret_key(&s[k..i]) {
                let end = value_end(b, i + 1);
                if end > i + 1 {
                    out.push_str(&s[copied..=i]);
                    out.push_str(MASK);
                    copied = end;
                    i = end;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&s[copied..]);
    out
}

/// A server URL for messages: the whole user info (user and password) becomes `***`, and so
/// does the value of every password-carrying query parameter (`?password=...`). Without an
/// `@`, a non-numeric "port" may be a password typed without a host (`mysql://ceo:pw!`), so
/// everything after the scheme is hidden then.
pub fn redact_url(url: &str) -> String {
    // Query values first: a password there may hold an '@'.
    let url = mask_key_values(url);
    let Some(s) = url.find("://") else {
        return if url.contains('@') || url.contains(':') {
            "(not a mysql:// URL)".to_string()
        } else {
            url
        };
    };
    let (scheme, rest) = (&url[..s + 3], &url[s + 3..]);
    if let Some(at) = rest.rfind('@') {
        return format!("{scheme}{MASK}{}", &rest[at..]);
    }
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let auth = &rest[..auth_end];
    if !auth.starts_with('[') {
        if let Some(c) = auth.find(':') {
            if !auth[c + 1..].chars().all(|ch| ch.is_ascii_digit()) {
                return format!("{scheme}{MASK}");
            }
        }
    }
    url
}

/// A server target for messages (URL, `user:pass@host`, `host:port`): the password part
/// becomes `***`.
pub fn redact_target(s: &str) -> String {
    if s.contains("://") {
        return redact_url(s);
    }
    match s.rfind('@') {
        Some(at) => format!("{MASK}{}", mask_key_values(&s[at..])),
        None if s.contains(':')
            && !s
                .rsplit(':')
                .next()
                .unwrap_or("")
                .chars()
                .all(|c| c.is_ascii_digit()) =>
        {
            "(not a server target)".to_string()
        }
        None => mask_key_values(s),
    }
}

/// A target saved in a document (`user@host:port`, `user@/socket`, a URL) with only its
/// password hidden: the user stays, as reports show it (`u:***@host`).
pub fn target_without_password(s: &str) -> String {
    let url = s.find("://").map(|p| p + 3);
    let (scheme, rest) = s.split_at(url.unwrap_or(0));
    match rest.rfind('@') {
        Some(at) => {
            let auth = &rest[..at];
            let auth = match auth.split_once(':') {
                Some((u, _)) => format!("{u}:{MASK}"),
                None => auth.to_string(),
            };
            format!("{scheme}{auth}{}", mask_key_values(&rest[at..]))
        }
        None if url.is_some() => redact_url(s),
        None => redact_target(s),
    }
}

/// Free text with every secret hidden: URL user info (any `scheme://user:pass@`), values of
/// secret keys (`password=...`, `--ssl-key-password=...`) and SQL password literals. For
/// spinscope's own messages: the placeholder of its hints (`mysql://user:password@host`) stays
/// readable (an input quoted in a message was redacted where it was quoted).
pub fn scrub(text: &str) -> String {
    scrub_with(text, true)
}

fn scrub_with(text: &str, keep_placeholder: bool) -> String {
    let t = mask_key_values(&redact_sql(text));
    if !t.contains("://") {
        return t;
    }
    // Each word holding `://` is a URL: its user info goes.
    let mut out = String::with_capacity(t.len());
    let mut rest = t.as_str();
    while let Some(p) = rest.find("://") {
        let start = rest[..p]
            .rfind(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '(' | '<' | '['))
            .map_or(0, |q| q + 1);
        let end = rest[p..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ')' | '>'))
            .map_or(rest.len(), |q| p + q);
        out.push_str(&rest[..start]);
        let word = &rest[start..end];
        let placeholder = keep_placeholder && word.contains("://user:password@");
        if (word.contains('@') || word.contains('?')) && !placeholder {
            out.push_str(&redact_url(word));
        } else {
            out.push_str(word);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every string of a JSON document [`scrub`]bed (no placeholder kept: this is data), and the
/// value of every member named by a secret key hidden (a string becomes `***`; numbers and
/// `null` stay).
pub fn scrub_json(v: &mut Value) {
    match v {
        Value::String(s) if needs_scrub(s) => *s = scrub_with(s, false),
        Value::Array(a) => a.iter_mut().for_each(scrub_json),
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if is_secret_key(k) {
                    if let Value::String(s) = x {
                        if !s.is_empty() {
                            *s = MASK.to_string();
                        }
                        continue;
                    }
                }
                scrub_json(x);
            }
        }
        _ => {}
    }
}

/// Cheap test whether [`scrub`] could change `s`.
fn needs_scrub(s: &str) -> bool {
    s.contains('=') || s.contains("://") || s.contains('\'') || s.contains('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_password_key_is_secret() {
        for k in [
            "password",
            "pass",
            "passw",
            "passwd",
            "PASSWORD",
            "loose-password",
            "loose_pass",
            "ssl-key-password",
            "ssl_key_password",
            "password1",
            "password3",
            "loose-ssl-passphrase",
            "mysql_pwd",
            "--password",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "user", "host", "port", "socket", "ssl-key", "pas", "database",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
        assert!(is_password_alias("pass") && is_password_alias("loose_password"));
        assert!(!is_password_alias("passwd") && !is_password_alias("pas"));
    }

    #[test]
    fn urls_lose_user_info_and_password_parameters() {
        assert_eq!(
            redact_url("mysql://u:p@host:1/db?password=S3&x=1"),
            "mysql://***@host:1/db?password=***&x=1"
        );
        // A password parameter holding an '@' does not move the user info's end.
        assert_eq!(
            redact_url("mysql://host/db?password=s3cr@t&x=1"),
            "mysql://host/db?password=***&x=1"
        );
        assert_eq!(redact_url("mysql://ceo:pw!"), "mysql://***");
        assert_eq!(redact_url("mysql://h:3306/db"), "mysql://h:3306/db");
        assert_eq!(redact_target("u:p@h:1/db?pass=S3"), "***@h:1/db?pass=***");
        assert_eq!(
            target_without_password("mysql://u:S3@h:1/?password=S3"),
            "mysql://u:***@h:1/?password=***"
        );
        assert_eq!(
            target_without_password("root@/tmp/s.sock"),
            "root@/tmp/s.sock"
        );
        assert_eq!(target_without_password("u:S3@db1:3306"), "u:***@db1:3306");
        assert_eq!(target_without_password("db1:3306"), "db1:3306");
    }

    #[test]
    fn free_text_loses_every_form() {
        let t = "target mysql://root:S3@db1:3306/ and --ssl-key-password=S3 pass='S 3' \
                 IDENTIFIED BY 'S3' (mariadb://x:S3@h)";
        let s = scrub(t);
        assert!(!s.contains("S3") && !s.contains("S 3"), "{s}");
        assert!(s.contains("mysql://***@db1:3306/"), "{s}");
        assert!(s.contains("(mariadb://***@h)"), "{s}");
        assert_eq!(scrub("plain text, a=b"), "plain text, a=b");
        let hint = "expected mysql://user:password@host:port/database";
        assert_eq!(scrub(hint), hint);
        // In data the same words are a password like any other.
        let mut v = serde_json::json!({ "target": "mysql://user:password@host/" });
        scrub_json(&mut v);
        assert_eq!(v["target"], "mysql://***@host/");
    }

    proptest::proptest! {
        /// Any text around a secret in any of its forms: scrub hides it and never panics
        /// (the URL and target redactors neither).
        #[test]
        fn a_planted_secret_is_hidden_in_any_text(
            pre in "[^'\"`]{0,40}",
            post in "[^'\"`]{0,40}",
            m in "[A-Z][a-z0-9]{7,15}",
            f in 0usize..5,
        ) {
            let forms = [
                format!("mysql://u:{m}@h/"),
                format!("password={m}"),
                format!("IDENTIFIED BY '{m}'"),
                format!("mariadb://h/db?x=1&pass={m}"),
                format!("--loose-ssl-key-password=\"{m}\""),
            ];
            let t = format!("{pre} {} {post}", forms[f]);
            let s = scrub(&t);
            proptest::prop_assert!(
                !s.contains(&m) || pre.contains(&m) || post.contains(&m),
                "{t:?} -> {s:?}"
            );
            let _ = (redact_url(&t), redact_target(&t), target_without_password(&t));
        }
    }

    #[test]
    fn json_members_and_strings() {
        let mut v = serde_json::json!({
            "target": "mysql://u:S3@h/",
            "password": "S3",
            "nested": [{"ssl_key_password": "S3", "n": 1}],
            "note": "password=S3"
        });
        scrub_json(&mut v);
        let s = v.to_string();
        assert!(!s.contains("S3"), "{s}");
        assert_eq!(v["nested"][0]["n"], 1);
    }
}
