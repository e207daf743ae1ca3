//! Pure parsers for `sweep run`'s inputs: the thread ladder, variants (`NAME:var=value,...`),
//! and the settings that cannot be changed without a restart. Every error is one line that
//! shows the correct form.

pub const LADDER_FORM: &str =
    "use a list like 1,2,4,8 or a range like 1..64:x2 (doubling) or 4..32:+4 (adding), values 1..=10000";
pub const VARIANT_FORM: &str =
    "use NAME:variable=value[,variable=value] (e.g. d4:innodb_spin_wait_delay=4) or NAME:default for the current settings";

const MAX_THREADS: u32 = 10_000;

/// Parse a thread ladder: `1,2,4`, `1..256:x2`, `4..32:+4`, `1..8` (step +1). Sorted, unique.
pub fn parse_ladder(s: &str) -> Result<Vec<u32>, String> {
    let bad = |why: &str| format!("--threads {s:?}: {why}; {LADDER_FORM}");
    let num = |t: &str| -> Result<u32, String> {
        let v: u32 = t
            .trim()
            .parse()
            .map_err(|_| bad(&format!("{:?} is not a whole number", t.trim())))?;
        if v == 0 || v > MAX_THREADS {
            return Err(bad(&format!("{v} is out of range")));
        }
        Ok(v)
    };
    let mut out = Vec::new();
    if let Some((from, rest)) = s.split_once("..") {
        let (to, step) = match rest.split_once(':') {
            Some((to, step)) => (to, Some(step.trim())),
            None => (rest, None),
        };
        let (from, to) = (num(from)?, num(to)?);
        if to < from {
            return Err(bad("the range ends below its start"));
        }
        let mut v = from;
        match step {
            None | Some("+1") => out.extend(from..=to),
            Some(st) if st.starts_with('x') => {
                let f: u32 = st[1..].parse().map_err(|_| bad("bad multiplier"))?;
                if f < 2 {
                    return Err(bad("the multiplier must be 2 or more"));
                }
                while v <= to {
                    out.push(v);
                    v = v.saturating_mul(f);
                }
            }
            Some(st) if st.starts_with('+') => {
                let a: u32 = st[1..].parse().map_err(|_| bad("bad increment"))?;
                if a == 0 {
                    return Err(bad("the increment must be 1 or more"));
                }
                while v <= to {
                    out.push(v);
                    v = v.saturating_add(a);
                }
            }
            Some(_) => return Err(bad("the step must be xF or +A")),
        }
    } else {
        for t in s.split(',') {
            out.push(num(t)?);
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.len() > 1000 {
        return Err(bad("more than 1000 steps"));
    }
    Ok(out)
}

// The plain data types live in the pure `model` (the sweep document carries them too).
pub use crate::globals::{Setting, Variant};

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Values are restricted to a safe alphabet so they can be put in `SET GLOBAL` verbatim or
/// quoted without escaping.
fn is_value(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-+/:".contains(c))
}

/// Settings that need a server restart (read-only at run time on MySQL and MariaDB).
pub const NEEDS_RESTART: &[&str] = &[
    "performance_schema",
    "thread_handling",
    "innodb_page_size",
    "innodb_data_file_path",
    "innodb_data_home_dir",
    "innodb_log_group_home_dir",
    "innodb_buffer_pool_instances",
    "innodb_numa_interleave",
    "innodb_use_native_aio",
    "large_pages",
    "lower_case_table_names",
    "datadir",
    "port",
    "socket",
    "bind_address",
    "skip_networking",
    "innodb_doublewrite_files",
];

/// The one-line refusal for a setting that needs a restart.
pub fn restart_refusal(variable: &str) -> String {
    format!(
        "--variant: {variable} cannot be changed while the server runs (it needs a restart); sweep only changes dynamic settings with SET GLOBAL: set it in my.cnf, restart, and run the sweep per configuration"
    )
}

/// Parse one `--variant` value.
pub fn parse_variant(s: &str) -> Result<Variant, String> {
    let bad = |why: &str| format!("--variant {s:?}: {why}; {VARIANT_FORM}");
    let (name, body) = match s.split_once(':') {
        Some((n, b)) => (n.trim(), b.trim()),
        None if s.trim() == "default" => ("default", "default"),
        None => return Err(bad("missing NAME:")),
    };
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        || name.is_empty()
    {
        return Err(bad("the name may use letters, digits, '_', '.', '-'"));
    }
    if body == "default" {
        return Ok(Variant {
            name: name.into(),
            settings: vec![],
        });
    }
    let mut settings: Vec<Setting> = Vec::new();
    for kv in body.split(',') {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(&format!("{kv:?} is not variable=value")))?;
        let (k, v) = (k.trim().to_ascii_lowercase().replace('-', "_"), v.trim());
        if !is_ident(&k) {
            return Err(bad(&format!("{k:?} is not a variable name")));
        }
        if !is_value(v) {
            return Err(bad(&format!(
                "{v:?} is not a plain value (letters, digits, _ . - + / :)"
            )));
        }
        if NEEDS_RESTART.contains(&k.as_str()) {
            return Err(restart_refusal(&k));
        }
        if settings.iter().any(|x| x.variable == k) {
            return Err(bad(&format!("{k} is set twice")));
        }
        settings.push(Setting {
            variable: k,
            value: v.into(),
        });
    }
    Ok(Variant {
        name: name.into(),
        settings,
    })
}

/// Parse every `--variant`; names must be unique. No variant means one implicit `current`.
pub fn parse_variants(list: &[String]) -> Result<Vec<Variant>, String> {
    let mut out: Vec<Variant> = Vec::new();
    for s in list {
        let v = parse_variant(s)?;
        if out.iter().any(|x| x.name == v.name) {
            return Err(format!(
                "--variant {s:?}: the name {} is used twice; {VARIANT_FORM}",
                v.name
            ));
        }
        out.push(v);
    }
    if out.is_empty() {
        out.push(Variant {
            name: "current".into(),
            settings: vec![],
        });
    }
    Ok(out)
}

/// SQL literal for a validated value: numbers as they are, everything else quoted.
pub fn sql_value(v: &str) -> String {
    if v.eq_ignore_ascii_case("default") {
        v.to_string()
    } else {
        crate::globals::sql_literal(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladders() {
        assert_eq!(parse_ladder("1,2,4").unwrap(), vec![1, 2, 4]);
        assert_eq!(parse_ladder("4,1,2,2").unwrap(), vec![1, 2, 4]);
        assert_eq!(
            parse_ladder("1..64:x2").unwrap(),
            vec![1, 2, 4, 8, 16, 32, 64]
        );
        assert_eq!(
            parse_ladder("1..100:x2").unwrap(),
            vec![1, 2, 4, 8, 16, 32, 64]
        );
        assert_eq!(parse_ladder("4..16:+4").unwrap(), vec![4, 8, 12, 16]);
        assert_eq!(parse_ladder("1..3").unwrap(), vec![1, 2, 3]);
        for bad in [
            "", "0", "1,,2", "a", "8..4", "1..8:x1", "1..8:*2", "1..8:+0", "99999", "1.5",
        ] {
            let e = parse_ladder(bad).unwrap_err();
            assert!(e.contains("1..64:x2") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn variants() {
        let v = parse_variant("d4:innodb_spin_wait_delay=4").unwrap();
        assert_eq!(v.name, "d4");
        assert_eq!(v.settings[0].variable, "innodb_spin_wait_delay");
        let v = parse_variant("x:innodb-spin-wait-delay=200, innodb_sync_spin_loops=10").unwrap();
        assert_eq!(v.settings.len(), 2);
        assert!(parse_variant("base:default").unwrap().settings.is_empty());
        assert!(parse_variant("default").unwrap().settings.is_empty());
        for bad in [
            "d4",
            "d4:",
            "d4:x",
            ":a=1",
            "d4:a=1;drop",
            "d 4:a=1",
            "d:a=1,a=2",
            "d:a='1'",
        ] {
            let e = parse_variant(bad).unwrap_err();
            assert!(
                e.contains("NAME:variable=value") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
        let e = parse_variant("p:performance_schema=ON").unwrap_err();
        assert!(e.contains("needs a restart"), "{e}");
        let e = parse_variants(&["a:default".into(), "a:x=1".into()]).unwrap_err();
        assert!(e.contains("twice"));
        assert_eq!(parse_variants(&[]).unwrap()[0].name, "current");
    }

    #[test]
    fn values() {
        assert_eq!(sql_value("4"), "4");
        assert_eq!(sql_value("ON"), "'ON'");
        assert_eq!(sql_value("DEFAULT"), "DEFAULT");
    }
}
