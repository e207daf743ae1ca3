//! Server flavor and version: parse what `SELECT VERSION()` or a user prints, infer the flavor.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    Mysql,
    Percona,
    Mariadb,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Mysql => "MySQL",
            Flavor::Percona => "Percona Server",
            Flavor::Mariadb => "MariaDB",
        }
    }
}

/// A parsed server version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerVersion {
    pub flavor: Flavor,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// The string as given.
    pub raw: String,
    /// True when the flavor was inferred from the string rather than given.
    pub flavor_inferred: bool,
}

impl ServerVersion {
    pub fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        (self.major, self.minor, self.patch) >= (major, minor, patch)
    }
    pub fn short(&self) -> String {
        format!(
            "{} {}.{}.{}",
            self.flavor.name(),
            self.major,
            self.minor,
            self.patch
        )
    }
}

/// Parse a version string such as `8.0.36`, `10.11.19-MariaDB-0+deb12u1`,
/// `5.5.5-10.6.12-MariaDB` (the replication prefix MariaDB sends over the protocol), or
/// `5.7.26-29-log` (Percona's build suffix). `flavor` overrides inference.
pub fn parse_version(input: &str, flavor: Option<Flavor>) -> Result<ServerVersion> {
    parse_version_from(input, flavor, "--server")
}

/// [`parse_version`] with errors naming where the version came from (`what`: `--server`, or
/// `--snapshot FILE: field "version"`).
pub fn parse_version_from(
    input: &str,
    flavor: Option<Flavor>,
    what: &str,
) -> Result<ServerVersion> {
    let raw = input.trim();
    let bad = |why: &str| {
        Error::bad_input(format!(
            "{what} {input:?}: {why}; give a version like 8.0.36, 5.7.44-48-log or 10.11.19-MariaDB"
        ))
    };
    if raw.is_empty() {
        return Err(bad("empty version"));
    }
    let lower = raw.to_ascii_lowercase();
    let mut s = raw;
    // MariaDB 10.x/11.x announce themselves as "5.5.5-<real version>" on the wire.
    if let Some(rest) = s.strip_prefix("5.5.5-") {
        if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            s = rest;
        }
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (numbers, suffix) = s.split_at(end);
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() < 2 || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(bad("not of the form MAJOR.MINOR[.PATCH]"));
    }
    let num = |p: &str| {
        p.parse::<u32>()
            .map_err(|_| bad("a version number is too large"))
    };
    let major = num(parts[0])?;
    let minor = num(parts[1])?;
    let patch = if parts.len() == 3 { num(parts[2])? } else { 0 };

    let inferred = if lower.contains("mariadb") || (10..=12).contains(&major) {
        Flavor::Mariadb
    } else if lower.contains("percona") || percona_build_suffix(suffix) {
        Flavor::Percona
    } else {
        Flavor::Mysql
    };
    let (flavor, flavor_inferred) = match flavor {
        Some(f) => (f, false),
        None => (inferred, true),
    };
    let v = ServerVersion {
        flavor,
        major,
        minor,
        patch,
        raw: raw.to_string(),
        flavor_inferred,
    };
    check_supported(&v).map_err(|why| bad(&why))?;
    Ok(v)
}

/// The version of a server from `VERSION()` and `@@version_comment`: a comment naming Percona
/// Server marks a Percona build whose version string looks like MySQL's. `flavor` overrides.
pub fn server_version(
    version: &str,
    comment: Option<&str>,
    flavor: Option<Flavor>,
    what: &str,
) -> Result<ServerVersion> {
    let mut v = parse_version_from(version, flavor, what)?;
    if flavor.is_none()
        && v.flavor == Flavor::Mysql
        && comment.is_some_and(|c| c.contains("Percona"))
    {
        v.flavor = Flavor::Percona;
    }
    Ok(v)
}

/// Percona builds append `-<build number>` (e.g. `5.7.26-29`, `8.0.36-28`).
fn percona_build_suffix(suffix: &str) -> bool {
    let Some(rest) = suffix.strip_prefix('-') else {
        return false;
    };
    let digits = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    digits > 0
        && rest[digits..]
            .chars()
            .next()
            .is_none_or(|c| c == '-' || c == '.')
}

fn check_supported(v: &ServerVersion) -> std::result::Result<(), String> {
    match v.flavor {
        Flavor::Mysql | Flavor::Percona => {
            let ok = (v.major == 5 && (6..=7).contains(&v.minor)) || v.major == 8 || v.major == 9;
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "{} {}.{} is not modelled (supported: 5.6, 5.7, 8.0-8.4, 9.x){}",
                    v.flavor.name(),
                    v.major,
                    v.minor,
                    if (10..=12).contains(&v.major) {
                        "; is this MariaDB? add --flavor mariadb"
                    } else {
                        ""
                    }
                ))
            }
        }
        Flavor::Mariadb => {
            if (10..=12).contains(&v.major) {
                Ok(())
            } else {
                Err(format!(
                    "MariaDB {}.{} is not modelled (supported: 10.x, 11.x, 12.x)",
                    v.major, v.minor
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_infers_flavors() {
        let cases: &[(&str, Flavor, (u32, u32, u32))] = &[
            ("8.0.36", Flavor::Mysql, (8, 0, 36)),
            ("8.4.3", Flavor::Mysql, (8, 4, 3)),
            ("5.7.26-log", Flavor::Mysql, (5, 7, 26)),
            ("5.7.26-29-log", Flavor::Percona, (5, 7, 26)),
            ("8.0.36-28", Flavor::Percona, (8, 0, 36)),
            ("10.11.19-MariaDB-0+deb12u1", Flavor::Mariadb, (10, 11, 19)),
            ("5.5.5-10.6.12-MariaDB-log", Flavor::Mariadb, (10, 6, 12)),
            ("11.4", Flavor::Mariadb, (11, 4, 0)),
            ("9.1.0", Flavor::Mysql, (9, 1, 0)),
        ];
        for (s, f, (a, b, c)) in cases {
            let v = parse_version(s, None).unwrap();
            assert_eq!(
                (v.flavor, v.major, v.minor, v.patch),
                (*f, *a, *b, *c),
                "{s}"
            );
            assert!(v.flavor_inferred);
        }
        let v = parse_version("5.7.26-29-log", Some(Flavor::Percona)).unwrap();
        assert!(!v.flavor_inferred);
    }

    #[test]
    fn rejects_garbage_and_unsupported() {
        for s in [
            "",
            "abc",
            "8",
            "8..1",
            "5.5.62",
            "4.1.22",
            "99999999999.0.1",
            "13.0.1",
        ] {
            let e = parse_version(s, None).unwrap_err();
            assert!(e.to_string().starts_with("--server"), "{s}: {e}");
            assert_eq!(e.exit_code(), 2);
        }
        let e = parse_version("10.11.2", Some(Flavor::Mysql))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--flavor mariadb"), "{e}");
    }
}
