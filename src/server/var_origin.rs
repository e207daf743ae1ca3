//! Where the spin variables' values came from: one scraper, its SQL as named constants.
//! MariaDB 10.1+ reports it in `information_schema.SYSTEM_VARIABLES`, MySQL 8.0 in
//! `performance_schema.variables_info`; a server without the table (MySQL 5.7, MariaDB 10.0)
//! gives nothing, a refusal is recorded like any other.

use std::collections::BTreeMap;

use crate::session::Session;

use super::snapshot::{OriginKind, Refusal, VarOrigin};

/// The variables whose origin is read: the ones the spin-budget finding may advise changing.
pub const SPIN_VARIABLES: [&str; 3] = [
    "innodb_spin_wait_delay",
    "innodb_sync_spin_loops",
    "innodb_spin_wait_pause_multiplier",
];

pub const MARIADB_ORIGIN_SQL: &str =
    "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE_ORIGIN, GLOBAL_VALUE_PATH \
     FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME IN \
     ('INNODB_SPIN_WAIT_DELAY', 'INNODB_SYNC_SPIN_LOOPS', 'INNODB_SPIN_WAIT_PAUSE_MULTIPLIER')";

pub const MYSQL_ORIGIN_SQL: &str = "SELECT LOWER(VARIABLE_NAME), VARIABLE_SOURCE, VARIABLE_PATH \
     FROM performance_schema.variables_info WHERE VARIABLE_NAME IN \
     ('innodb_spin_wait_delay', 'innodb_sync_spin_loops', 'innodb_spin_wait_pause_multiplier')";

/// The server's word for an origin, classified. MySQL's option-file sources (GLOBAL, SERVER,
/// EXPLICIT, EXTRA, USER, LOGIN) are all `Config`.
pub fn classify(reported: &str) -> OriginKind {
    match reported
        .trim()
        .to_ascii_uppercase()
        .replace('_', "-")
        .as_str()
    {
        "COMPILE-TIME" | "COMPILED" => OriginKind::Compiled,
        "COMMAND-LINE" => OriginKind::CommandLine,
        "CONFIG" | "GLOBAL" | "SERVER" | "EXPLICIT" | "EXTRA" | "USER" | "LOGIN" => {
            OriginKind::Config
        }
        "SQL" | "DYNAMIC" => OriginKind::Sql,
        "AUTO" => OriginKind::Auto,
        "ENVIRONMENT" => OriginKind::Environment,
        "PERSISTED" => OriginKind::Persisted,
        _ => OriginKind::Other,
    }
}

/// Rows of either query (name, origin, path) as typed origins; rows without an origin dropped.
pub fn from_rows(
    rows: Vec<(String, Option<String>, Option<String>)>,
) -> BTreeMap<String, VarOrigin> {
    rows.into_iter()
        .filter_map(|(name, reported, path)| {
            let reported = reported.filter(|r| !r.trim().is_empty())?;
            Some((
                name.to_ascii_lowercase(),
                VarOrigin {
                    kind: classify(&reported),
                    path: path.filter(|p| !p.trim().is_empty()),
                    reported,
                },
            ))
        })
        .collect()
}

/// Read the origins on `conn` for a server of `version` (the `VERSION()` text). A missing
/// table or column gives an empty map; a privilege error is pushed to `refused`.
pub fn scrape(
    conn: &mut dyn Session,
    version: &str,
    refused: &mut Vec<Refusal>,
) -> BTreeMap<String, VarOrigin> {
    let (sql, what, privilege) = if version.contains("MariaDB") {
        (
            MARIADB_ORIGIN_SQL,
            "information_schema.SYSTEM_VARIABLES (where the spin settings came from)",
            "none (any user)",
        )
    } else {
        (
            MYSQL_ORIGIN_SQL,
            "performance_schema.variables_info (where the spin settings came from)",
            "SELECT on performance_schema.*",
        )
    };
    match conn.query::<(String, Option<String>, Option<String>), _>(sql) {
        Ok(rows) => from_rows(rows),
        Err(e) => {
            if let Some(r) = super::refusal::refusal(&e, what, privilege) {
                refused.push(r);
            }
            // Anything else (no such table on MySQL 5.7, an old MariaDB): the origin is unknown.
            BTreeMap::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: &str, o: Option<&str>, p: Option<&str>) -> (String, Option<String>, Option<String>) {
        (n.into(), o.map(Into::into), p.map(Into::into))
    }

    #[test]
    fn recorded_mariadb_rows() {
        // As MariaDB 10.11 answered MARIADB_ORIGIN_SQL, started with --innodb-spin-wait-delay=6000
        // and innodb_sync_spin_loops in a --defaults-file.
        let m = from_rows(vec![
            row(
                "innodb_sync_spin_loops",
                Some("CONFIG"),
                Some("/tmp/m/my.cnf"),
            ),
            row("innodb_spin_wait_delay", Some("COMMAND-LINE"), None),
        ]);
        assert_eq!(m["innodb_spin_wait_delay"].kind, OriginKind::CommandLine);
        assert_eq!(m["innodb_spin_wait_delay"].path, None);
        assert_eq!(m["innodb_sync_spin_loops"].kind, OriginKind::Config);
        assert_eq!(
            m["innodb_sync_spin_loops"].path.as_deref(),
            Some("/tmp/m/my.cnf")
        );
    }

    #[test]
    fn recorded_mysql_rows() {
        let m = from_rows(vec![
            row("innodb_spin_wait_delay", Some("DYNAMIC"), Some("")),
            row(
                "innodb_sync_spin_loops",
                Some("EXPLICIT"),
                Some("/etc/my.cnf"),
            ),
            row(
                "innodb_spin_wait_pause_multiplier",
                Some("COMPILED"),
                Some(""),
            ),
            row("x", None, None),
        ]);
        assert_eq!(m.len(), 3);
        assert_eq!(m["innodb_spin_wait_delay"].kind, OriginKind::Sql);
        assert_eq!(m["innodb_spin_wait_delay"].path, None);
        assert_eq!(m["innodb_sync_spin_loops"].kind, OriginKind::Config);
        assert_eq!(
            m["innodb_spin_wait_pause_multiplier"].kind,
            OriginKind::Compiled
        );
        assert_eq!(classify("PERSISTED"), OriginKind::Persisted);
        assert_eq!(classify("COMMAND_LINE"), OriginKind::CommandLine);
        assert_eq!(classify("whatever"), OriginKind::Other);
    }
}
