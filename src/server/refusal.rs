//! A refused query as the snapshot records it: the privilege it needs (shared by the
//! collector and the scrapers beside it).

use super::snapshot::Refusal;

/// The privilege a refused query needs, or None when the error is not a privilege error.
pub fn refusal(e: &mysql::Error, what: &str, privilege: &str) -> Option<Refusal> {
    match e {
        mysql::Error::MySqlError(m)
            if matches!(m.code, 1227 | 1142 | 1143 | 1044 | 1045 | 1370) =>
        {
            Some(Refusal {
                what: what.to_string(),
                privilege: privilege.to_string(),
                message: format!("{} (error {})", m.message, m.code),
            })
        }
        _ => None,
    }
}
