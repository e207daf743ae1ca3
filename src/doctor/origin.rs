//! The fix where it lives: for each setting a finding advises changing, where its current
//! value came from (the server's own account, `server::var_origin`) and the persistent fix
//! for that place. Pure wording; nothing here touches a server.

use std::collections::BTreeMap;

use crate::server::snapshot::{OriginKind, VarOrigin};
use crate::spin::advice::Change;

/// One sentence: where `name = value` came from and how to fix it there.
pub fn fix_where(name: &str, value: u64, o: &VarOrigin) -> String {
    let option = format!("--{}", name.replace('_', "-"));
    match o.kind {
        OriginKind::CommandLine => format!(
            "{name} = {value} came from the server's command line: remove `{option}` from it (the service unit \
             or script that starts mysqld); editing an option file alone would not stop it coming back at the \
             next restart."
        ),
        OriginKind::Config => match &o.path {
            Some(p) => format!(
                "{name} = {value} came from {p}: change it there (the option-file line above), or it comes back \
                 at the next restart."
            ),
            None => format!(
                "{name} = {value} came from an option file ({}): change it there (the option-file line above), \
                 or it comes back at the next restart.",
                o.reported
            ),
        },
        OriginKind::Sql => format!(
            "{name} = {value} was set at runtime with SET GLOBAL: the statement above fixes the running server, \
             the option-file line above keeps the fix across restarts."
        ),
        OriginKind::Persisted => format!(
            "{name} = {value} was stored with SET PERSIST (mysqld-auto.cnf in the data directory), which \
             overrides option files at restart: use SET PERSIST with the new value, or RESET PERSIST {name}."
        ),
        OriginKind::Compiled => format!(
            "{name} = {value} is the compiled-in default: the option-file line above keeps the fix across restarts."
        ),
        OriginKind::Auto => format!(
            "{name} = {value} was sized by the server at startup: the option-file line above keeps the fix across \
             restarts."
        ),
        OriginKind::Environment => format!(
            "{name} = {value} came from the server's environment: remove it from the environment that starts \
             mysqld; an option-file edit alone would not stop it coming back."
        ),
        OriginKind::Other => format!(
            "{name} = {value}: the server reports its origin as {}; fix it there to keep the change across restarts.",
            o.reported
        ),
    }
}

/// The sentences for every change the server reported an origin for, each led by a space;
/// empty when it reported none (MySQL 5.7, an old snapshot).
pub fn fixes_where(origins: &BTreeMap<String, VarOrigin>, changes: &[Change]) -> String {
    changes
        .iter()
        .filter_map(|c| {
            let o = origins.get(&c.variable.to_ascii_lowercase())?;
            Some(format!(" {}", fix_where(&c.variable, c.from, o)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(kind: OriginKind, reported: &str, path: Option<&str>) -> VarOrigin {
        VarOrigin {
            kind,
            reported: reported.into(),
            path: path.map(Into::into),
        }
    }

    #[test]
    fn wording_per_origin() {
        let cl = fix_where(
            "innodb_spin_wait_delay",
            6000,
            &o(OriginKind::CommandLine, "COMMAND-LINE", None),
        );
        assert_eq!(
            cl,
            "innodb_spin_wait_delay = 6000 came from the server's command line: remove `--innodb-spin-wait-delay` \
             from it (the service unit or script that starts mysqld); editing an option file alone would not stop \
             it coming back at the next restart."
        );
        let cf = fix_where(
            "innodb_spin_wait_delay",
            6000,
            &o(
                OriginKind::Config,
                "CONFIG",
                Some("/etc/mysql/mariadb.conf.d/50-server.cnf"),
            ),
        );
        assert!(
            cf.starts_with(
                "innodb_spin_wait_delay = 6000 came from /etc/mysql/mariadb.conf.d/50-server.cnf: change it there"
            ),
            "{cf}"
        );
        let sql = fix_where(
            "innodb_sync_spin_loops",
            500,
            &o(OriginKind::Sql, "SQL", None),
        );
        assert!(sql.contains("set at runtime with SET GLOBAL"), "{sql}");
        assert!(sql.contains("keeps the fix across restarts"), "{sql}");
        let p = fix_where("x", 1, &o(OriginKind::Persisted, "PERSISTED", None));
        assert!(p.contains("RESET PERSIST x"), "{p}");
        let other = fix_where("x", 1, &o(OriginKind::Other, "NEWWORD", None));
        assert!(other.contains("NEWWORD"), "{other}");
    }

    #[test]
    fn only_changes_with_an_origin() {
        let mut origins = BTreeMap::new();
        origins.insert(
            "innodb_spin_wait_delay".to_string(),
            o(OriginKind::CommandLine, "COMMAND-LINE", None),
        );
        let changes = vec![
            Change {
                variable: "innodb_spin_wait_delay".into(),
                from: 6000,
                to: 4,
                to_default: true,
            },
            Change {
                variable: "innodb_sync_spin_loops".into(),
                from: 500,
                to: 30,
                to_default: true,
            },
        ];
        let s = fixes_where(&origins, &changes);
        assert!(s.starts_with(" innodb_spin_wait_delay = 6000 came from the server's command line"));
        assert!(!s.contains("innodb_sync_spin_loops"));
        assert_eq!(fixes_where(&BTreeMap::new(), &changes), "");
    }
}
